#!/usr/bin/env bash
# Session 43's second review call, on the machine gT3.sh left warm: the rest of the build, the whole
# suite (ctest -j8), then memcheck on hub_split's tests alone (with CudaExternal it ran past 70 s).
B=build-gpu
timeout 150 ninja -C $B -j18 >/tmp/b2.log 2>&1; echo "build rc $? at ${SECONDS}s"; grep -E "error|FAILED" /tmp/b2.log | head -3
(cd $B && timeout $((470 - SECONDS)) ctest -j8 --timeout 150 -LE "long|mpi" >/tmp/ct.log 2>&1); echo "ctest rc $? at ${SECONDS}s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|SEGFAULT|Total Test" /tmp/ct.log | head
timeout $((520 - SECONDS)) compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/cuda/test_cuda --gtest_filter='CudaSpmm.HubSplit*' >/tmp/mc.log 2>&1
echo "memcheck rc $? at ${SECONDS}s"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " /tmp/mc.log
