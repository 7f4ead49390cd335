#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CTest driver of the exit regression (issue 34): PROGRAM (exit_after_op) runs FAMILY on BACKEND
# once with every ending, with freed memory filled with a pattern and glibc's per-thread cache of
# freed blocks off, so that a call through memory freed during exit faults every time rather than
# in 1-2 % of runs (as the GPU tests did before the fix). Exit status 77 (backend not usable here)
# from the first ending makes the whole test skip. Each run starts with an empty decision cache, so
# that its decisions are cold (the model is consulted: the fork ending's child must not wait on a
# lock the parent's model thread held at the fork).
#   tests/core/exit_endings.sh PROGRAM BACKEND FAMILY
set -u
export MALLOC_PERTURB_=165 GLIBC_TUNABLES=glibc.malloc.tcache_count=0
failed=0
for ending in return leak static exit thread early fork; do
  cache=$(mktemp -d)
  SPARSEPORT_CACHE_DIR=$cache timeout 120 "$1" "$2" "$3" "$ending"
  rc=$?
  rm -rf "$cache"
  if [ "$rc" -eq 77 ]; then exit 77; fi
  if [ "$rc" -ne 0 ]; then
    echo "FAILED: $2 $3 $ending exited $rc"
    failed=1
  fi
done
exit "$failed"
