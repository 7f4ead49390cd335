#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fuzz campaign: the five fuzz targets side by side, each with WORKERS processes, for SECONDS.
#
#   tests/fuzz/campaign.sh SECONDS WORKERS OUTDIR [BINDIR [CORPUSDIR]]
#
#   BINDIR     the built fuzz binaries (default: $SPARSEPORT_FUZZ_BIN, else build/fuzz/tests/fuzz of
#              this checkout); they are self-contained: no compiler, CMake or libsparseport.so needed
#   CORPUSDIR  the seed corpora, one folder per target (default: corpus/ next to this script);
#              dict/ next to this script is used when present
#   MODE=fork  (environment) one libFuzzer -fork=WORKERS process per target that keeps going after a
#              crash, instead of the default -workers=WORKERS -jobs=WORKERS (independent jobs sharing
#              a corpus; a job that crashes stops, the others go on)
#
# Each target works in OUTDIR/<target>/: corpus/ (a copy of the seeds, then grown; the seeds are
# never written), crashes/ (crash-*, leak-*, timeout-*, oom-* inputs), logs/. At the end it prints,
# per target, every job's final "#N DONE cov: ... ft: ... corp: ... exec/s" line, the totals, the
# coverage of the final corpus (one replay), and the crash files; OUTDIR/summary.txt holds the same.
# Replay a crash with: BINDIR/<target> OUTDIR/<target>/crashes/<file>
set -euo pipefail

if [[ $# -lt 3 ]]; then
  sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
seconds=$1
workers=$2
out=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bindir=${4:-${SPARSEPORT_FUZZ_BIN:-$here/../../build/fuzz/tests/fuzz}}
seeds=${5:-$here/corpus}
mode=${MODE:-jobs}
targets=(fuzz_matrix_market fuzz_validate fuzz_generator_spec fuzz_cache_line fuzz_cli_args)

[[ $seconds =~ ^[0-9]+$ && $workers =~ ^[0-9]+$ && $workers -ge 1 ]] || { echo "SECONDS and WORKERS must be whole numbers (WORKERS >= 1)" >&2; exit 2; }
for t in "${targets[@]}"; do
  [[ -x $bindir/$t ]] || { echo "$bindir/$t: no such fuzz binary (build with: cmake --preset fuzz && cmake --build --preset fuzz)" >&2; exit 2; }
  [[ -d $seeds/$t ]] || { echo "$seeds/$t: no seed corpus" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
bindir=$(cd "$bindir" && pwd)
seeds=$(cd "$seeds" && pwd)

echo "campaign: ${#targets[@]} targets x $workers workers ($mode), ${seconds} s, $(nproc) cores; output in $out"
pids=()
for t in "${targets[@]}"; do
  d=$out/$t
  mkdir -p "$d/corpus" "$d/crashes" "$d/logs"
  cp -n "$seeds/$t"/* "$d/corpus/" 2>/dev/null || true
  args=(-max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -use_value_profile=1 -print_final_stats=1
        -artifact_prefix="$d/crashes/")
  [[ -f $here/dict/$t.dict ]] && args+=(-dict="$here/dict/$t.dict")
  if [[ $mode == fork ]]; then
    args+=(-fork="$workers" -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
  else
    args+=(-workers="$workers" -jobs="$workers")
  fi
  # -jobs writes fuzz-<job>.log into the current folder.
  (cd "$d/logs" && exec "$bindir/$t" "${args[@]}" "$d/corpus" >"$d/logs/main.log" 2>&1) &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done

summary=$out/summary.txt
{
  echo "campaign: ${#targets[@]} targets x $workers workers ($mode), ${seconds} s, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  for t in "${targets[@]}"; do
    d=$out/$t
    echo
    echo "== $t"
    execs=0
    shopt -s nullglob
    logs=("$d"/logs/fuzz-*.log)
    [[ $mode == fork ]] && logs=("$d/logs/main.log")
    for l in "${logs[@]}"; do
      done_line=$(grep -a -E '^#[0-9]+[[:space:]]+DONE' "$l" | tail -n 1 || true)
      if [[ -n $done_line ]]; then
        echo "  $(basename "$l"): $done_line"
        n=${done_line%%[[:space:]]*}
        execs=$((execs + ${n#\#}))
      else
        # fork mode prints no DONE line; in jobs mode a job that stopped on a crash has none either
        last=$(grep -a -E '^#[0-9]+' "$l" | tail -n 1 || true)
        if [[ $mode == fork ]]; then
          echo "  $(basename "$l") (fork mode, last status): ${last:-none}"
        else
          echo "  $(basename "$l"): no DONE line (the job stopped early); last: ${last:-none}"
        fi
        if [[ $last =~ ^#([0-9]+) ]]; then execs=$((execs + BASH_REMATCH[1])); fi
      fi
    done
    echo "  total executions: $execs; corpus: $(find "$d/corpus" -type f | wc -l) files, $(du -sh "$d/corpus" | cut -f1)"
    inited=$("$bindir/$t" -runs=0 "$d/corpus" 2>&1 | grep -a -E 'INITED' | tail -n 1 || true)
    echo "  final corpus replayed: ${inited:-?}"
    crashes=("$d"/crashes/*)
    if [[ ${#crashes[@]} -eq 0 ]]; then
      echo "  crash files: none"
    else
      touch "$out/.found"
      echo "  crash files (${#crashes[@]}):"
      for c in "${crashes[@]}"; do echo "    $c"; done
    fi
  done
} | tee "$summary"
# Non-zero when a target crashed, leaked, hung or ran out of memory.
if [[ -e $out/.found ]]; then rm -f "$out/.found"; exit 1; fi
exit $status
