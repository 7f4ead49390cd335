#!/usr/bin/env bash
# Issue 21: the 16-bit conformance cases on the GPU machine after call 7's fix (named arg variants
# that do not apply are skipped). Run from the root of the tree (a `git archive` of HEAD).
set -u
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="test_conformance" TAIL=1 OUT=$OUT/check bash tests/cuda/gpu_check.sh 230 configure build | tail -1
( cd build-gpu/tests
  timeout 150 ./test_conformance --gtest_filter='*Values16*' >$OUT/conf16.log 2>&1
  echo "test_conformance *Values16*: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $OUT/conf16.log | head -6 )
