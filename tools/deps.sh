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
# benchmarks' reference point.
packages="gcc pkg-config libffi-dev libdlpack-dev libopenblas-openmp-dev"

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps: not a Debian system (no dpkg-query); please make sure these are installed:"
    echo "deps:   a C11 compiler, pkg-config, libffi (with its headers), dlpack.h, OpenBLAS"
    exit 0
fi

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
