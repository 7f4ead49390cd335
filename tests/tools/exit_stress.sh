#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Many short processes on one GPU, each exiting right after its work: the exit-crash regression run
# (issue 34). Runs COMMAND (a test program with its arguments) RUNS times, PARALLEL at a time, each
# under the crash_trace preload (tests/tools/crash_trace.c, built here into $WORK), and counts the
# exit statuses; the log of every process that did not exit 0 is kept in $WORK/fail-<n>.log and the
# first trace of each is printed. An argument @RUN@ is replaced by the run's number (a seed).
# Exits 1 when any run failed.
# Freed memory is filled with a pattern and glibc's per-thread cache of freed blocks is off
# (MALLOC_PERTURB_, GLIBC_TUNABLES), so that a call through freed memory faults at once instead of
# only when the block happens to be reused; PERTURB=0 runs the processes as they come.
# DURATION=S runs for S seconds instead of RUNS times (no new process starts after that).
#   [RUNS=200 | DURATION=S] [PARALLEL=8] [WORK=/tmp/exit-stress] [PERTURB=1] tests/tools/exit_stress.sh COMMAND [ARGS...]
set -u
RUNS=${RUNS:-200}
DEADLINE=0
if [ -n "${DURATION:-}" ]; then
  DEADLINE=$(($(date +%s) + DURATION))
fi
PARALLEL=${PARALLEL:-8}
WORK=${WORK:-/tmp/exit-stress}
if [ "${PERTURB:-1}" != 0 ]; then export MALLOC_PERTURB_=165 GLIBC_TUNABLES=glibc.malloc.tcache_count=0; fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"
rm -f "$WORK"/fail-*.log "$WORK"/rc-*
cc -shared -fPIC -O1 -o "$WORK/libcrash_trace.so" "$here/crash_trace.c" || exit 2
one() {
  local i=$1
  shift
  LD_PRELOAD="$WORK/libcrash_trace.so" "${@//@RUN@/$i}" >"$WORK/run-$i.log" 2>&1
  local rc=$?
  echo "$rc" >"$WORK/rc-$i"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then mv "$WORK/run-$i.log" "$WORK/fail-$i.log"; else rm -f "$WORK/run-$i.log"; fi
}
# At most PARALLEL at a time; no new run starts after the deadline.
i=0
while :; do
  if [ "$DEADLINE" -gt 0 ]; then [ "$(date +%s)" -ge "$DEADLINE" ] && break; else [ "$i" -ge "$RUNS" ] && break; fi
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n; done
  i=$((i + 1))
  one "$i" "$@" &
done
wait
RUNS=$(ls "$WORK" | grep -c "^rc-")  # the runs made
ok=$(cat "$WORK"/rc-* | grep -c '^0$')
skipped=$(cat "$WORK"/rc-* | grep -c '^77$')
ok=$((ok + skipped))
bad=$((RUNS - ok))
echo "exit_stress: $RUNS runs of '$*', $PARALLEL at a time: $ok exited 0 or skipped ($skipped), $bad did not ($(cat "$WORK"/rc-* | grep -v '^0$' | grep -v '^77$' | sort | uniq -c | tr '\n' ' '))"
for f in $(ls "$WORK"/fail-*.log 2>/dev/null | head -n "${SHOW:-3}"); do
  echo "---- $f"
  grep -A 40 "crash_trace: signal" "$f" | grep -v "^[0-9a-f]*-[0-9a-f]* r-xp .*\(libc\.so\|ld-linux\|libstdc\|libm\.so\|libgcc\)" | head -n 60
  grep -q "crash_trace: signal" "$f" || tail -n 15 "$f"
done
[ "$bad" -eq 0 ]
