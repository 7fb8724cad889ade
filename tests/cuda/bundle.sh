#!/bin/sh
# Builds every GPU check into one folder that runs on a GPU machine without
# tex's build dependencies (the C compiler is still needed there: "cpu"
# kernels and the GPU-on-CPU paths compile C at run time):
#
#   tests/cuda/bundle.sh [DIR]        (default build/gpu-bundle)
#
# DIR/bin holds build/cuda/gpu_run (tests/cuda/run_on_gpu.sh's runner), the
# CUDA examples (softmax_gpu, b2b_gemm), bench/gpu_gemm (against cuBLAS) and
# the unit tests that use a GPU when there is one; DIR/lib the shared
# libraries they need beyond the C library (libffi); DIR/run.sh runs them all
# there, each under a time limit, and writes one log per program into its
# argument (default DIR/logs):
#
#   DIR/run.sh [LOGDIR]      (environment: GPU_RUN_REPS as for gpu_run,
#                             TEX_BENCH_TUNE_SECONDS, default 8 here)
#
# Copy DIR to the GPU machine (or the whole tree, and run it from there).
# Exit status: 0, or 2 when a build step fails.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
dir=${1:-build/gpu-bundle}
tests="test_array test_cuda_emit test_cuda_runtime test_kernel_call test_auto_schedule_cuda"
tests="$tests test_tensorize_cuda test_sparse_cuda"
examples="softmax_gpu b2b_gemm"
targets="build/bench/gpu_gemm"
for t in $tests; do targets="$targets build/tests/$t"; done
for e in $examples; do targets="$targets build/examples/$e"; done
# shellcheck disable=SC2086 # $targets is a list of make targets
if ! make -j"$(nproc 2>/dev/null || echo 2)" $targets >/dev/null ||
    ! GPU_RUN_BUILD_ONLY=1 tests/cuda/run_on_gpu.sh >/dev/null; then
    echo "bundle.sh: the build failed (make $targets, or gpu_run)"
    exit 2
fi
rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" || exit 2
# shellcheck disable=SC2086
cp build/cuda/gpu_run $targets "$dir/bin/" || exit 2
ldd build/cuda/gpu_run | awk '/libffi/ { print $3 }' | while read -r lib; do
    cp "$lib" "$dir/lib/"
done
cat >"$dir/run.sh" <<EOF
#!/bin/sh
# Runs the GPU checks bundled by tests/cuda/bundle.sh; logs into \${1:-\$here/logs}.
here=\$(cd "\$(dirname "\$0")" && pwd)
logs=\${1:-\$here/logs}
mkdir -p "\$logs"
export LD_LIBRARY_PATH="\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export TEX_BENCH_TUNE_SECONDS="\${TEX_BENCH_TUNE_SECONDS:-8}"
run() { # run LIMIT NAME ARGS...: one program, its last lines and exit status
    limit=\$1 name=\$2
    shift 2
    start=\$(date +%s)
    timeout "\$limit" "\$here/bin/\$name" "\$@" >"\$logs/\$name.log" 2>&1
    rc=\$?
    echo "== \$name: exit \$rc, \$((\$(date +%s) - start)) s"
    tail -n 40 "\$logs/\$name.log" | grep -E "^case=|^bench=|passed|FAIL|error|ok|skipped" | tail -n 40
}
command -v nvidia-smi >/dev/null && nvidia-smi -L
run 300 gpu_run
for e in $examples; do run 60 \$e; done
run 300 gpu_gemm
for t in $tests; do run 300 \$t; done
EOF
chmod +x "$dir/run.sh"
echo "bundle.sh: $(du -sh "$dir" | cut -f1) in $dir; run $dir/run.sh on the GPU machine"
