#!/usr/bin/env bash
# Session 42's last GPU call (about 250 s of device time left): cusparse_start.cu only, lazy and eager
# module loading.
S=benchmarks/results/2026-12-07-s42
nvidia-smi -L
nvcc -O2 -arch=sm_90 $S/cusparse_start.cu -lcusparse -o /tmp/cs && { /tmp/cs; echo "-- eager"; CUDA_MODULE_LOADING=EAGER /tmp/cs; }
echo "done at ${SECONDS}s"
