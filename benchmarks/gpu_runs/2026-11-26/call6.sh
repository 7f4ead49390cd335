#!/usr/bin/env bash
# Review run of the tree: every CUDA and conformance test (CTest), then compute-sanitizer memcheck
# and racecheck on the new attention paths, hub_split's ordered rows and the determinism tests of
# both. Run from the tree's root with OUT set.
set -u
export PATH=$PATH:/usr/local/cuda/bin
BUILD_TARGETS="test_cuda test_conformance" CTEST_REGEX='Cuda|Conformance' \
  SAN_FILTER='CudaAttentionPaths.*:CudaSpmm.HubSplitRowOrderPowerLaw:CudaDeterminism.Attention*:CudaDeterminism.HubSplit*:CudaDeterminism.SpmmEveryDeterministic*' \
  SAN_SHARDS=4 SAN_TIMEOUT=200 bash tests/cuda/gpu_check.sh 580 configure build ctest memcheck racecheck
