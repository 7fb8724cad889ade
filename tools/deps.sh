#!/bin/sh
# deps.sh — makes sure the Debian packages tex builds and tests with are installed.
#
# Checks with dpkg-query (a fast no-op when all are present). Missing packages are
# installed with apt-get when running as root; otherwise the exact command is printed
# and the script fails. On a system without dpkg it only says what is needed.
# Called by `make deps` (and so by make test, make demo, ...).
# shellcheck disable=SC2086 # the package lists are split into words on purpose
set -eu

# gcc: compiles tex and, later, the JIT's generated C. libffi-dev: the CPU backend calls
# kernels through libffi. libdlpack-dev: <dlpack/dlpack.h>, included by <tex/tex.h>.
# pkg-config: tex.pc and the install test. libopenblas-openmp-dev: the demo's and the
# benchmarks' reference point. libdnnl-dev: oneDNN, bench/conv2d's reference point.
# librsb-dev: librsb's sparse x dense product, bench/spmm's library reference point
# (optional at build time: bench/spmm builds without it).
packages="gcc pkg-config libffi-dev libdlpack-dev libopenblas-openmp-dev libdnnl-dev librsb-dev"

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps: not a Debian system (no dpkg-query); please make sure these are installed:"
    echo "deps:   a C11 compiler, pkg-config, libffi (with its headers), dlpack.h, OpenBLAS,"
    echo "deps:   oneDNN (for bench/conv2d)"
    exit 0
fi

# cuobjdump (optional): the CUDA tests read the SASS of the tensor-core kernels with it
# (HMMA instructions); it needs nvdisasm. A CUDA toolkit installed from NVIDIA's PyPI
# wheels may lack both; then their own wheels are fetched from PyPI into build/tools.
# Without them the tests check the PTX instead, so any failure here is only a note.
fetch_sass_tools() {
    cuda=${CUDA_HOME:-/usr/local/cuda}
    tools=$(cd "$(dirname "$0")/.." && pwd)/build/tools
    [ -x "$cuda/bin/ptxas" ] || return 0
    [ -x "$cuda/bin/cuobjdump" ] && [ -x "$cuda/bin/nvdisasm" ] && return 0
    [ -x "$tools/cuobjdump" ] && [ -x "$tools/nvdisasm" ] && return 0
    command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 || {
        echo "deps: note: no pip; the CUDA tests will check PTX instead of SASS"
        return 0
    }
    tmp=$(mktemp -d)
    if python3 -m pip download --no-deps -q -d "$tmp" nvidia-cuda-cuobjdump \
        nvidia-cuda-nvdisasm >/dev/null 2>&1 && mkdir -p "$tools" &&
        python3 - "$tmp" "$tools" <<'PY'
import glob, os, sys, zipfile
for wheel in glob.glob(os.path.join(sys.argv[1], "*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            tool = os.path.basename(name)
            if os.path.dirname(name).endswith("/bin") and tool in ("cuobjdump", "nvdisasm"):
                path = os.path.join(sys.argv[2], tool)
                with open(path, "wb") as out:
                    out.write(z.read(name))
                os.chmod(path, 0o755)
PY
    then
        echo "deps: cuobjdump and nvdisasm from PyPI (nvidia-cuda-*) in build/tools"
    else
        echo "deps: note: could not fetch cuobjdump; the CUDA tests will check PTX instead of SASS"
    fi
    rm -rf "$tmp"
}
fetch_sass_tools

installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' $packages 2>/dev/null || true)
missing=""
for p in $packages; do
    if ! printf '%s\n' "$installed" | grep -qx "$p installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
    echo "deps: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update && apt-get install -y $missing
else
    echo "deps: missing Debian packages:$missing"
    echo "deps: install them with:"
    echo "    sudo apt-get install -y$missing"
    exit 1
fi
