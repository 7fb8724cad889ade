#!/bin/sh
# check_deps.sh — fails when an #include, or a symbol an object uses, points
# against tex's layer order.
#
# Dependencies point one way (docs/architecture.md, "Layers"):
#
#     util <- ir <- schedule <- lower <- autosched <- rt <- codegen_c <- backend_* <- runtime <- interp
#
# (rt: the kernel object, the backend interface, argument binding and launch
# sizes. codegen_c: the C-family printer both backends print with. interp, the interpreter of lowered functions that tests use as an
# oracle, checks its arguments with rt and runs intrinsics on host arrays of
# the runtime, so it sits on top: no library code calls it.)
#
# Rules checked on every #include "..." / <...> line of src/ and include/:
#   a module includes only its own layer and the layers below it; a backend_X
#   includes no backend_Y; src/util includes only util (and the public tex/
#   headers); ops, sparse and tune sit beside runtime;
#   include/          nothing from src/ (only its own headers and system headers)
# An include's module is its first path component ("lower/lower.h", "../lower/lower.h",
# "src/lower/lower.h"); a bare name ("arith.h") is the including file's own directory.
#
# With an object directory (check_deps.sh BUILD, after the library's objects
# are built), the same rule holds for symbols: `nm` lists what every object
# of BUILD/src/<module>/ uses, and a symbol defined by another module's
# object must come from an allowed one (this catches calls that include no
# header of the module they reach, e.g. a declaration in tex.h).
# Called by `make check-deps`, which make test runs.
set -eu
cd "$(dirname "$0")/.."

# The layer order, shared by both checks (awk functions).
layers='
function rank(m) {
    if (m == "util") return 0
    if (m == "ir") return 1
    if (m == "schedule") return 2
    if (m == "autosched") return 3.5
    if (m == "lower") return 3
    if (m == "rt") return 4
    if (m == "codegen_c") return 5
    if (m ~ /^backend_/) return 6
    if (m == "interp") return 8
    return 7 # runtime, ops, sparse, tune
}
function forbidden(from, to) {
    if (to == "" || to == from)
        return 0
    if (from == "util" || to == "ops")
        return 1
    if (from == "ops")
        return to != "util"
    return rank(to) > rank(from) || (rank(to) == 6 && rank(from) == 6) # backend_X, backend_Y
}
BEGIN { ORDER = "util <- ir <- schedule <- lower <- autosched <- rt <- codegen_c <- backend_* <- runtime <- interp" }
'

files=$(find src include -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sort)
[ -n "$files" ] || { echo "check-deps: no sources"; exit 0; }

# shellcheck disable=SC2086
awk "$layers"'
function exists(path,   line, r) {
    r = (getline line < path) >= 0
    close(path)
    return r
}
function dir_of(path) {
    sub(/\/[^\/]*$/, "", path)
    return path
}
# The module an include names: first component after any ./ ../ src/ prefix;
# "" when it names no module of src/ (system and public headers).
function target_of(path, quoted, from,   n, parts) {
    while (path ~ /^\.\.?\//)
        sub(/^\.\.?\//, "", path)
    sub(/^src\//, "", path)
    if (path !~ /\//)
        return quoted ? from : ""
    n = split(path, parts, "/")
    return parts[1] in modules || parts[1] ~ /^backend_/ ? parts[1] : ""
}
BEGIN {
    split("util ir schedule autosched lower rt codegen_c interp runtime ops sparse tune", m, " ")
    for (i in m)
        modules[m[i]] = 1
    bad = 0
}
FNR == 1 {
    n = split(FILENAME, parts, "/")
    from = parts[1] == "src" ? parts[2] : "include"
    nfiles++
}
/^[ \t]*#[ \t]*include[ \t]*["<]/ {
    if (!match($0, /["<][^">]+[">]/))
        next
    quoted = substr($0, RSTART, 1) == "\""
    path = substr($0, RSTART + 1, RLENGTH - 2)
    if (from == "include") {
        to = target_of(path, 0, from)
        if (path ~ /(^|\/)src\// || to != "" ||
            (quoted && !exists(dir_of(FILENAME) "/" path) && !exists("include/" path))) {
            printf "%s:%d: #include %s: include/ must not include headers from src/\n",
                   FILENAME, FNR, substr($0, RSTART, RLENGTH)
            bad++
        }
        next
    }
    to = target_of(path, quoted, from)
    if (forbidden(from, to)) {
        printf "%s:%d: #include %s: %s must not depend on %s\n",
               FILENAME, FNR, substr($0, RSTART, RLENGTH), from, to
        bad++
    }
}
END {
    if (bad) {
        printf "check-deps: %d include(s) against the order %s\n", bad, ORDER
        exit 1
    }
    printf "check-deps: %d files, every include follows the layer order\n", nfiles
}
' $files

[ $# -ge 1 ] || exit 0
# The objects of the current sources only (a moved file's stale object stays behind).
objs=$(for c in src/*/*.c; do o="$1/${c%.c}.o"; [ -f "$o" ] && echo "$o"; done)
[ -n "$objs" ] || { echo "check-deps: no objects under $1/src (build the library first)"; exit 1; }

# nm -A lines: "OBJ: U sym" (used) or "OBJ:ADDR T sym" (defined; globals only).
# shellcheck disable=SC2086
nm -A $objs | awk -v root="$1/src/" "$layers"'
function module_of(obj,   rest) {
    rest = substr(obj, length(root) + 1)
    sub(/\/.*/, "", rest)
    return rest
}
{
    colon = index($0, ":")
    obj = substr($0, 1, colon - 1)
    n = split(substr($0, colon + 1), f, " ")
    if (n == 2 && f[1] == "U") {
        nuse++
        use_obj[nuse] = obj
        use_sym[nuse] = f[2]
    } else if (n == 3 && f[2] ~ /^[A-TV-Z]$/) {
        def[f[3]] = obj
    }
}
END {
    bad = 0
    for (i = 1; i <= nuse; i++) {
        s = use_sym[i]
        if (!(s in def))
            continue
        from = module_of(use_obj[i])
        to = module_of(def[s])
        if (from == "ops" && s ~ /^tex_/)
            continue # the public API
        if (forbidden(from, to)) {
            printf "%s: uses %s (defined in %s): %s must not depend on %s\n",
                   use_obj[i], s, def[s], from, to
            bad++
        }
    }
    if (bad) {
        printf "check-deps: %d symbol use(s) against the order %s\n", bad, ORDER
        exit 1
    }
    printf "check-deps: %d symbol uses, every one follows the layer order\n", nuse
}
'
