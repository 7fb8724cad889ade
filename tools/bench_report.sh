#!/bin/sh
# bench_report.sh — turns the benchmark programs' output into the results report.
#
# usage: tools/bench_report.sh LOG [DIR]
#   LOG  the output of bench programs (other lines are ignored), e.g. what make bench ran
#   DIR  where to write (default bench/results): latest.csv, latest.md, latest.svg
#
# Reads the `bench=NAME case=DESC tex_ms=T anchor=NAME anchor_ms=T speedup=X ...` lines
# that bench/common.h prints (fields by name, so extra or missing trailing fields are
# fine) and the `bench=NAME case=DESC error=WHAT` lines of failed cases, and writes:
#   latest.csv  one row per case: bench,case,anchor,tex_ms,anchor_ms,speedup,spread,
#               tex_p10,tex_p90,anchor_p10,anchor_p90,runs,noisy (empty when not printed)
#   latest.md   the same as a Markdown table (bench, case, anchor, tex_ms, anchor_ms,
#               speedup, spread), a case whose spread exceeds 20% flagged "noisy"; then
#               the geometric mean of the speedups per bench and anchor, and the errors
#   latest.svg  a bar chart of the speedups, one bar per case, with a line at 1.0
# and prints latest.md. Exit status 1 when LOG is unreadable or holds no case at all.
# POSIX sh and awk only.
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    sed -n '4,6s/^# \{0,1\}//p' "$0" >&2
    exit 2
fi
log=$1
dir=${2:-bench/results}
[ -r "$log" ] || { echo "bench_report: cannot read $log" >&2; exit 1; }
mkdir -p "$dir"

# The cases as tab-separated fields, in the CSV's column order; errors as "!bench\tcase\twhat".
rows=$(awk '
function field(name,    i) {
    for (i = 1; i <= NF; i++)
        if (index($i, name "=") == 1)
            return substr($i, length(name) + 2)
    return ""
}
/^bench=/ {
    if (field("error") != "") {
        printf "!%s\t%s\t%s\n", field("bench"), field("case"), field("error")
        next
    }
    if (field("speedup") == "")
        next
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", field("bench"),
        field("case"), field("anchor"), field("tex_ms"), field("anchor_ms"), field("speedup"),
        field("spread"), field("tex_p10"), field("tex_p90"), field("anchor_p10"),
        field("anchor_p90"), field("runs"), field("noisy")
}' "$log")

if ! printf '%s\n' "$rows" | grep -q '^[^!]'; then
    echo "bench_report: no benchmark cases in $log" >&2
    exit 1
fi

printf '%s\n' "$rows" | awk -F '\t' '
BEGIN { print "bench,case,anchor,tex_ms,anchor_ms,speedup,spread,tex_p10,tex_p90,anchor_p10,anchor_p90,runs,noisy" }
/^!/ { next }
{
    line = $1
    for (i = 2; i <= 13; i++)
        line = line "," $i
    print line
}' >"$dir/latest.csv"

printf '%s\n' "$rows" | awk -F '\t' '
BEGIN {
    print "# Benchmark results"
    print ""
    print "speedup = anchor_ms / tex_ms (above 1: tex is faster); spread = the larger side'"'"'s"
    print "(p90 - p10) / median; \"noisy\": spread above 20%, the speedup is not to be trusted."
    print ""
    print "| bench | case | anchor | tex_ms | anchor_ms | speedup | spread | |"
    print "|---|---|---|---:|---:|---:|---:|---|"
}
/^!/ { err[++n_err] = "- `" substr($1, 2) "` `" $2 "`: " $3; next }
{
    flag = ($7 != "" && $7 + 0 > 0.2) ? "noisy" : ""
    spread = $7 == "" ? "" : sprintf("%.0f%%", 100 * $7)
    printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, spread, flag
    key = $1 " vs " $3
    if (!(key in cnt))
        order[++n_key] = key
    cnt[key]++
    if ($6 + 0 > 0)
        logsum[key] += log($6)
}
END {
    print ""
    print "| bench vs anchor | cases | geomean speedup |"
    print "|---|---:|---:|"
    for (k = 1; k <= n_key; k++)
        printf "| %s | %d | %.3g |\n", order[k], cnt[order[k]], exp(logsum[order[k]] / cnt[order[k]])
    if (n_err) {
        print ""
        print "Errors:"
        print ""
        for (e = 1; e <= n_err; e++)
            print err[e]
    }
}' >"$dir/latest.md"

# The chart: a bar per case (label on the left, the speedup at the bar's end), the scale
# from 0 to the largest speedup (at least 1.5), a dashed line at 1.0; noisy bars lighter.
printf '%s\n' "$rows" | awk -F '\t' '
function esc(s) {
    gsub(/&/, "\\&amp;", s)
    gsub(/</, "\\&lt;", s)
    gsub(/>/, "\\&gt;", s)
    return s
}
/^!/ { next }
{
    n++
    label[n] = $1 " " $2 " (" $3 ")"
    speed[n] = $6 + 0
    noisy[n] = $7 != "" && $7 + 0 > 0.2
    if (speed[n] > max)
        max = speed[n]
}
END {
    if (max < 1.5)
        max = 1.5
    left = 330; width = 420; bar = 16; gap = 6; top = 30
    height = top + n * (bar + gap) + 30
    x1 = left + width / max
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", left + width + 60, height
    printf "<text x=\"10\" y=\"18\" font-size=\"13\">tex speedup over the anchor (anchor_ms / tex_ms)</text>\n"
    for (i = 1; i <= n; i++) {
        y = top + (i - 1) * (bar + gap)
        w = speed[i] * width / max
        printf "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", left - 6, y + bar - 4, esc(label[i])
        printf "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", left, y, w, bar, noisy[i] ? "#9ecae1" : (speed[i] >= 1 ? "#2b8cbe" : "#e6550d")
        printf "<text x=\"%.1f\" y=\"%d\">%s%s</text>\n", left + w + 4, y + bar - 4, speed[i], noisy[i] ? " (noisy)" : ""
    }
    printf "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\" stroke-dasharray=\"4 3\"/>\n", x1, top - 6, x1, height - 22
    printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">1.0</text>\n", x1, height - 8
    print "</svg>"
}' >"$dir/latest.svg"

cat "$dir/latest.md"
