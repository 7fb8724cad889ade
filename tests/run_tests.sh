#!/usr/bin/env bash
# run_tests.sh — runs tex's test programs and adds up their results.
#
# usage: tests/run_tests.sh [-j JOBS] [-t SECONDS] [-w WRAPPER] [ITEM...]
#   ITEM  a test program, a shell script (*.sh: run with bash, never wrapped), or a
#         directory (each executable file in it); default: build/tests and
#         tests/install_test.sh
#   -j    programs run at the same time (default: the number of CPUs)
#   -t    time limit of each program in seconds (default 600)
#   -w    command put before each program, e.g. "valgrind -q --error-exitcode=1"
#
# Each program prints "PASS name", "FAIL name" or "SKIP name" per test (tests/tt.h).
# A program that exits non-zero (failed check, crash, timeout, sanitizer or valgrind
# report) without printing a FAIL line counts as one failure, named with its exit
# status, and so does a program that does not exist (it failed to build); one that exits 77 without results counts as one skip, and one that exits 0
# without results (an example program) as one pass. Programs run in the repository
# root with stdin from /dev/null; each one's output is printed when it ends (its own
# summary line left out). The last line is "N passed, N failed, N skipped"; the exit
# status is 1 when anything failed, 2 on a usage error.
set -u

jobs=$(nproc 2>/dev/null || echo 2)
limit=600
wrapper=""
while getopts "j:t:w:" opt; do
    case $opt in
    j) jobs=$OPTARG ;;
    t) limit=$OPTARG ;;
    w) wrapper=$OPTARG ;;
    *) sed -n '2,10s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))

root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$root/build/tests" "$root/tests/install_test.sh"

items=() # absolute paths
for arg in "$@"; do
    if [ -d "$arg" ]; then
        while IFS= read -r f; do items+=("$(realpath "$f")"); done \
            < <(find "$arg" -maxdepth 1 -type f -perm -u+x | sort)
    elif [ -f "$arg" ]; then
        items+=("$(realpath "$arg")")
    else
        items+=("$(realpath -m "$arg")") # counted as a failure: not built
    fi
done
cd "$root" || exit 2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tex-tests.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
read -r -a wrap <<<"$wrapper"
summary_re='^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'

# Runs item $1 (index $2); writes $tmp/$2.counts ("pass fail skip") and prints a block.
run_one() {
    local item=$1 i=$2 name rc t0 t1 secs pass fail skip note=""
    name=$(basename "$item")
    t0=${EPOCHREALTIME:-0}
    if [ ! -e "$item" ]; then
        echo "$name: $item does not exist (it failed to build?)" >"$tmp/$i.note"
        echo "0 1 0" >"$tmp/$i.counts"
        { flock 9; echo "  $(cat "$tmp/$i.note")"; echo "--- $name: not run"; } 9>"$tmp/lock"
        return
    fi
    # (the outer 2>/dev/null drops bash's own "Aborted"/"Segmentation fault" notices)
    {
        if [[ $item == *.sh ]]; then
            timeout -k 10 "$limit" bash "$item" </dev/null >"$tmp/$i.out" 2>&1
        else
            timeout -k 10 "$limit" "${wrap[@]}" "$item" </dev/null >"$tmp/$i.out" 2>&1
        fi
        rc=$?
    } 2>/dev/null
    t1=${EPOCHREALTIME:-0}
    secs=$(LC_ALL=C awk -v a="${t0/,/.}" -v b="${t1/,/.}" 'BEGIN { printf "%.1f", b - a }')
    pass=$(grep -c '^PASS ' "$tmp/$i.out")
    fail=$(grep -c '^FAIL ' "$tmp/$i.out")
    skip=$(grep -c '^SKIP ' "$tmp/$i.out")
    if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ "$fail" -eq 0 ]; then
        fail=1
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            note="$name: timed out after $limit s (exit status $rc)"
        elif [ $rc -gt 128 ]; then
            note="$name: killed by signal $((rc - 128)) (exit status $rc)"
        else
            note="$name: exit status $rc without a FAIL line"
        fi
    elif [ $((pass + fail + skip)) -eq 0 ]; then
        if [ $rc -eq 77 ]; then skip=1; else pass=1; fi
    fi
    echo "$pass $fail $skip" >"$tmp/$i.counts"
    [ -z "$note" ] || echo "$note" >"$tmp/$i.note"
    {
        flock 9
        grep -Ev "$summary_re" "$tmp/$i.out"
        [ -z "$note" ] || echo "  $note"
        printf -- '--- %s: %d passed, %d failed, %d skipped (%s s)\n' \
            "$name" "$pass" "$fail" "$skip" "$secs"
    } 9>"$tmp/lock"
}

running=0
for i in "${!items[@]}"; do
    run_one "${items[$i]}" "$i" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

total_pass=0 total_fail=0 total_skip=0
for i in "${!items[@]}"; do
    read -r p f s <"$tmp/$i.counts"
    total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_skip=$((total_skip + s))
done
if [ "$total_fail" -gt 0 ]; then
    echo "failed programs:"
    for i in "${!items[@]}"; do
        read -r p f s <"$tmp/$i.counts"
        [ "$f" -eq 0 ] && continue
        if [ -f "$tmp/$i.note" ]; then
            echo "  $(cat "$tmp/$i.note")"
        else
            echo "  $(basename "${items[$i]}"): $f failed"
        fi
    done
fi
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
