#!/bin/sh
# Runs the GPU cases of tests/support/gpu_cases.h on a real GPU: builds the
# static library (make lib/libtex.a), compiles tests/cuda/gpu_run.c against it
# and runs it; one line per case: case=NAME status=ok|FAIL max_rel_err=E ms=T.
#
#   tests/cuda/run_on_gpu.sh [CASE...]      (from anywhere; cases: matmul transpose
#                                            softmax layernorm conv2d sum vectile
#                                            stencil b2b b2b_unfused auto_matmul
#                                            auto_softmax auto_layernorm auto_conv2d
#                                            b2b_tc b2b_tc_unfused b2b_regs;
#                                            default all)
#
# The auto_ cases are scheduled by tex_auto_schedule(..., "cuda"); compare
# their ms with the hand-scheduled case of the same name.
#
# b2b (back-to-back GEMM, D0 kept in shared memory) and b2b_unfused (D0 through
# global memory) run the same computation: compare their ms.
# Likewise b2b_tc (tensor cores, D0 in shared memory), b2b_regs (D0 in
# registers) and b2b_tc_unfused (D0 through global memory).
#
# Each case is checked against the oracle (tex_eval_reference) at its large
# sizes, on TEX_NUM_THREADS threads (default: every processor); with 16 cores
# the whole run takes about two minutes, most of it the oracle.
#
# Environment: GPU_RUN_REPS (timed runs per case, default 10), GPU_RUN_TARGET=cpu
# and GPU_RUN_SMALL=1 (a check of the runner without a GPU), GPU_RUN_BUILD_ONLY=1
# (build build/cuda/gpu_run, run nothing) and GPU_RUN_PREBUILT=1 (run it
# without building), CC, and what
# the library reads (CUDA_HOME for NVRTC). Exit status: gpu_run's (0 all
# passed, 1 a case failed), 77 when there is no GPU or driver (skipped),
# 2 when the build fails.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2

# A quick look before building: no device node and no nvidia-smi listing a GPU
# means no GPU (gpu_run itself skips too when the driver cannot be used).
# GPU_RUN_TARGET=cpu (gpu_run's self-check on the CPU backend) skips the look.
if [ "${GPU_RUN_TARGET:-}" = cpu ] || [ "${GPU_RUN_BUILD_ONLY:-}" = 1 ]; then
    :
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null; then
    :
elif ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    echo "run_on_gpu.sh: no GPU found (no /dev/nvidia*, nvidia-smi lists none): skipped"
    exit 77
fi

# GPU_RUN_PREBUILT=1 runs build/cuda/gpu_run as it is: for a GPU machine
# without tex's build dependencies (make deps: the DLPack header, libffi's),
# build it elsewhere with GPU_RUN_BUILD_ONLY=1 and copy the tree; or bundle
# every GPU check (this runner, the CUDA examples, bench/gpu_gemm, the unit
# tests with GPU paths) with tests/cuda/bundle.sh and run its run.sh there.
if [ "${GPU_RUN_PREBUILT:-}" = 1 ] && [ -x build/cuda/gpu_run ]; then
    exec build/cuda/gpu_run "$@"
fi
make -j"$(nproc 2>/dev/null || echo 2)" lib/libtex.a ||
    { echo "run_on_gpu.sh: make failed (missing build dependencies? see GPU_RUN_PREBUILT above)"; exit 2; }
mkdir -p build/cuda
ffi_libs=$(pkg-config --libs libffi 2>/dev/null || echo -lffi)
# shellcheck disable=SC2086 # $ffi_libs is a list of flags
${CC:-cc} -std=c11 -O2 -g -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
    -Iinclude -Itests tests/cuda/gpu_run.c -o build/cuda/gpu_run lib/libtex.a \
    $ffi_libs -lm -ldl -lpthread || { echo "run_on_gpu.sh: compiling gpu_run.c failed"; exit 2; }

[ "${GPU_RUN_BUILD_ONLY:-}" = 1 ] && exit 0
build/cuda/gpu_run "$@"
