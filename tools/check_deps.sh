#!/bin/sh
# check_deps.sh — fails when an #include points against tex's layer order.
#
# Dependencies point one way (docs/architecture.md, "Layers"):
#
#     util <- ir <- schedule <- lower <- backend_* <- runtime
#
# Rules checked on every #include "..." / <...> line of src/ and include/:
#   src/util          includes only util (and the public tex/ headers)
#   src/ir            not schedule, lower, backend_*, runtime, ops
#   src/schedule      not lower, backend_*, runtime
#   src/lower         not backend_*, runtime
#   src/backend_X     not another backend_Y
#   include/          nothing from src/ (only its own headers and system headers)
# An include's module is its first path component ("lower/lower.h", "../lower/lower.h",
# "src/lower/lower.h"); a bare name ("arith.h") is the including file's own directory.
# Called by `make check-deps`, which make test runs.
set -eu
cd "$(dirname "$0")/.."

files=$(find src include -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sort)
[ -n "$files" ] || { echo "check-deps: no sources"; exit 0; }

# shellcheck disable=SC2086
awk '
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
function forbidden(from, to) {
    if (to == "" || to == from)
        return 0
    if (from == "util")
        return 1
    if (from == "ir")
        return to ~ /^(schedule|lower|backend_.*|runtime|ops)$/
    if (from == "schedule")
        return to ~ /^(lower|backend_.*|runtime)$/
    if (from == "lower")
        return to ~ /^(backend_.*|runtime)$/
    if (from ~ /^backend_/)
        return to ~ /^backend_/
    return 0
}
BEGIN {
    split("util ir schedule lower runtime ops sparse", m, " ")
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
        printf "check-deps: %d include(s) against the order " \
               "util <- ir <- schedule <- lower <- backend_* <- runtime\n", bad
        exit 1
    }
    printf "check-deps: %d files, every include follows the layer order\n", nfiles
}
' $files
