#!/usr/bin/env bash
# bench_report_test.sh — tools/bench_report.sh on a saved sample of benchmark output.
#
# tests/bench_report/sample.log holds bench lines of every kind: full ones (quiet and
# noisy), one with only the six fixed fields, an error line, and other program output.
# The report must have one CSV row per case with the fields in their columns, a Markdown
# table flagging the noisy case, the geometric mean per bench and anchor and the error,
# and an SVG with one bar per case and the 1.0 line; a log without cases must fail.
# Prints PASS/FAIL lines like tests/tt.h; run by run_tests.sh.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tex-bench-report.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n_fail=0

# check NAME COMMAND...: PASS NAME when the command succeeds, else FAIL NAME.
check() {
    local name=$1
    shift
    if "$@"; then
        echo "PASS $name"
    else
        echo "FAIL $name"
        n_fail=$((n_fail + 1))
    fi
}

# has FILE TEXT: FILE contains the line fragment TEXT (fixed string).
has() { grep -qF -- "$2" "$1" || { echo "  $1 lacks: $2"; return 1; }; }

# count FILE TEXT N: TEXT occurs on exactly N lines of FILE.
count() {
    local n
    n=$(grep -cF -- "$2" "$1")
    [ "$n" -eq "$3" ] || { echo "  $1: $n lines with '$2', want $3"; return 1; }
}

run_report() { sh "$root/tools/bench_report.sh" "$root/tests/bench_report/sample.log" "$tmp/out" >"$tmp/printed"; }

csv_ok() {
    local c=$tmp/out/latest.csv
    count "$c" "," 6 &&
        has "$c" "bench,case,anchor,tex_ms,anchor_ms,speedup,spread,tex_p10,tex_p90,anchor_p10,anchor_p90,runs,noisy" &&
        has "$c" "gemm,1024x1024x64/t2,openblas,16.311,7.055,0.433,1.297,1.252,20.997,1.833,10.985,40,1" &&
        has "$c" "jit,gemm/first,cc,812.5,790.1,0.972,,,,,,," &&
        ! grep -q "c512h7w7k512r3" "$c"
}

md_ok() {
    local m=$tmp/out/latest.md
    has "$m" "| bench | case | anchor | tex_ms | anchor_ms | speedup | spread |" &&
        has "$m" "| gemm | 1024x1024x64/t2 | openblas | 16.311 | 7.055 | 0.433 | 130% | noisy |" &&
        has "$m" "| gemm | 1024x1024x64/t1 | openblas | 2.247 | 2.842 | 1.26 | 14% |  |" &&
        count "$m" "noisy |" 1 &&
        has "$m" "| gemm vs openblas | 3 | 0.887 |" &&
        has "$m" "| conv2d vs onednn | 1 | 1.05 |" &&
        has "$m" '- `conv2d` `c512h7w7k512r3/t1`: call_failed' &&
        cmp -s "$m" "$tmp/printed"
}

svg_ok() {
    local s=$tmp/out/latest.svg
    count "$s" "<rect " 5 &&
        has "$s" 'stroke-dasharray' &&
        has "$s" '>1.0</text>' &&
        has "$s" '>0.433 (noisy)</text>' &&
        tail -n 1 "$s" | grep -qx '</svg>' &&
        { ! command -v python3 >/dev/null ||
            python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$s"; }
}

no_cases_fails() {
    echo "nothing here" >"$tmp/empty.log"
    ! sh "$root/tools/bench_report.sh" "$tmp/empty.log" "$tmp/empty" 2>/dev/null
}

check report run_report
check csv csv_ok
check markdown md_ok
check svg svg_ok
check no_cases no_cases_fails
[ "$n_fail" -eq 0 ]
