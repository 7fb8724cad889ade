#!/usr/bin/env bash
# install_test.sh — installs tex into a temporary tree and builds a user program against it.
#
# `make install DESTDIR=<tmp> PREFIX=/usr`, then tests/install/prog.c is compiled the way
# a user would (cc prog.c $(pkg-config --cflags --libs tex), with PKG_CONFIG_SYSROOT_DIR
# and PKG_CONFIG_PATH pointing into the staged tree), linked once against libtex.so and
# once statically against libtex.a (pkg-config --static: tex.pc's Libs.private must be
# complete), and run; the auto-scheduling examples (examples/softmax_auto.c, conv2d_auto.c,
# mlp.c) are built the same way and run. Prints PASS/FAIL/SKIP lines like tests/tt.h; run
# by run_tests.sh.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tex-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
cc=${CC:-cc}
strict="-std=c11 -Wall -Wextra -Wpedantic -Werror"
n_fail=0

pass() { echo "PASS $1"; }
fail() {
    echo "  $2"
    [ -z "${3:-}" ] || sed 's/^/    /' "$3"
    echo "FAIL $1"
    n_fail=$((n_fail + 1))
}

# Variables given to the make that runs this script (OPT=..., BUILD=...) reach this make
# through MAKEFLAGS, so nothing is rebuilt with other flags; its jobserver does not.
MAKEFLAGS=$(sed -E 's/(^| )-j[0-9]*( |$)/\1\2/; s/--jobserver-(auth|fds)=[^ ]*//g' \
    <<<"${MAKEFLAGS:-}")
export MAKEFLAGS

test_install() {
    if ! make -C "$root" --no-print-directory install DESTDIR="$stage" PREFIX=/usr \
        >"$tmp/make.log" 2>&1; then
        fail install "make install DESTDIR=$stage PREFIX=/usr failed:" "$tmp/make.log"
        return 1
    fi
    local f missing=""
    for f in include/tex/tex.h lib/libtex.a lib/libtex.so lib/libtex.so.0 lib/pkgconfig/tex.pc; do
        [ -e "$stage/usr/$f" ] || missing="$missing $f"
    done
    for f in lib/libtex.so lib/libtex.so.0; do
        [ -L "$stage/usr/$f" ] || missing="$missing $f(not a symlink)"
    done
    if [ -n "$missing" ]; then
        fail install "not installed under $stage/usr:$missing"
        return 1
    fi
    pass install
}

# pkg-config looking into the staged tree (which is not a system directory: keep its -I and
# -L flags). Only these calls see it: the make above must not (tex's flags would change).
pc() {
    PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_PATH=$stage/usr/lib/pkgconfig \
        PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 pkg-config "$@"
}

test_pkgconfig() {
    local version libs
    version=$(sed -n 's/^#define TEX_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
        "$root/include/tex/tex.h" | paste -sd.)
    if ! pc --exists --print-errors tex >"$tmp/pc.log" 2>&1; then
        fail pkgconfig "pkg-config does not find tex:" "$tmp/pc.log"
        return
    fi
    libs=$(pc --static --libs tex)
    if [ "$(pc --modversion tex)" != "$version" ]; then
        fail pkgconfig "tex.pc has version $(pc --modversion tex), tex.h says $version"
    elif [[ " $libs " != *" -ltex "* || " $libs " != *" -lffi "* || " $libs " != *" -ldl "* ]]; then
        fail pkgconfig "pkg-config --static --libs tex lacks -ltex, -lffi or -ldl: $libs"
    elif [[ "$(pc --cflags tex)" != *"-I$stage/usr/include"* ]]; then
        fail pkgconfig "pkg-config --cflags tex does not point into the staged tree"
    else
        pass pkgconfig
    fi
}

# Links prog.c ($1: shared or static) and runs it; the static build finds only libtex.a.
test_link() {
    local kind=$1 exe=$tmp/prog_$1 out version
    local -a flags
    if [ "$kind" = shared ]; then
        read -r -a flags <<<"$(pc --cflags --libs tex)"
    else
        mkdir -p "$tmp/static" && ln -sf "$stage/usr/lib/libtex.a" "$tmp/static/libtex.a"
        read -r -a flags <<<"-L$tmp/static $(pc --static --cflags --libs tex)"
    fi
    # shellcheck disable=SC2086
    if ! $cc $strict "$root/tests/install/prog.c" -o "$exe" "${flags[@]}" >"$tmp/cc.log" 2>&1; then
        fail "link_$kind" "$cc $strict prog.c ${flags[*]} failed:" "$tmp/cc.log"
        return
    fi
    if [ "$kind" = shared ] && ! readelf -d "$exe" | grep -q 'NEEDED.*\[libtex\.so\.0\]'; then
        fail "link_$kind" "the program does not depend on libtex.so.0 (the soname)"
        return
    fi
    if [ "$kind" = static ] && readelf -d "$exe" | grep -q 'NEEDED.*libtex'; then
        fail "link_$kind" "the static build still depends on libtex.so"
        return
    fi
    if ! out=$(LD_LIBRARY_PATH=$stage/usr/lib "$exe" 2>&1); then
        echo "$out" >"$tmp/run.log"
        fail "link_$kind" "the program failed:" "$tmp/run.log"
        return
    fi
    version=$(pc --modversion tex)
    if [ "$out" != "tex $version" ]; then
        fail "link_$kind" "the program printed '$out', expected 'tex $version'"
        return
    fi
    pass "link_$kind"
}

# Builds the auto-scheduling examples against the installed library, as a user would
# (cc example.c $(pkg-config --cflags --libs tex) -lm), and runs each: it checks its
# kernel against plain C loops and exits with 0.
test_examples() {
    local ex exe
    local -a flags
    read -r -a flags <<<"$(pc --cflags --libs tex)"
    for ex in softmax_auto conv2d_auto mlp; do
        exe=$tmp/example_$ex
        # shellcheck disable=SC2086
        if ! $cc $strict "$root/examples/$ex.c" -o "$exe" "${flags[@]}" -lm >"$tmp/cc.log" 2>&1; then
            fail "example_$ex" "$cc $strict examples/$ex.c ${flags[*]} -lm failed:" "$tmp/cc.log"
            continue
        fi
        if ! LD_LIBRARY_PATH=$stage/usr/lib "$exe" >"$tmp/run.log" 2>&1; then
            fail "example_$ex" "examples/$ex.c built with pkg-config failed:" "$tmp/run.log"
            continue
        fi
        pass "example_$ex"
    done
}

test_uninstall() {
    make -C "$root" --no-print-directory uninstall DESTDIR="$stage" PREFIX=/usr \
        >"$tmp/make.log" 2>&1
    local left
    left=$(find "$stage" -type f -o -type l)
    if [ -n "$left" ]; then
        echo "$left" >"$tmp/left.log"
        fail uninstall "make uninstall left files behind:" "$tmp/left.log"
    else
        pass uninstall
    fi
}

if ! command -v pkg-config >/dev/null; then
    echo "  skip: pkg-config is not installed (make deps installs it)"
    echo "SKIP install"
    exit 77
fi
if test_install; then
    test_pkgconfig
    test_link shared
    test_link static
    test_examples
    test_uninstall
fi
[ "$n_fail" -eq 0 ]
