#!/usr/bin/env bash
# run_long.sh — make test-long: many random JIT schedules of tests/unit/test_jit_random.c,
# shared among parallel processes.
#
# usage: tests/run_long.sh PROGRAM TRIALS JOBS LOGDIR
#   PROGRAM  the built test_jit_random
#   TRIALS   schedules in all (TEX_JIT_TRIALS)
#   JOBS     processes; process K runs the seeds s with (s - 1) % JOBS == K (TEX_JIT_SHARD)
#   LOGDIR   where each process writes test-long.K.log
#
# Prints each process's failures (reports with seeds, steps and lowered ASTs) and summary,
# then "test-long: N schedules, N failed"; exit status 1 when anything failed, 2 on a
# usage error.
set -u
[ $# -eq 4 ] || { sed -n '5,9s/^# \{0,1\}//p' "$0" >&2; exit 2; }
program=$1 trials=$2 jobs=$3 logdir=$4
mkdir -p "$logdir" || exit 2

pids=()
for ((k = 0; k < jobs; k++)); do
    TEX_JIT_TRIALS=$trials TEX_JIT_SHARD=$k/$jobs "$program" </dev/null \
        >"$logdir/test-long.$k.log" 2>&1 &
    pids+=($!)
done
status=0
for k in "${!pids[@]}"; do
    wait "${pids[$k]}" || status=1
done

tried=0 failed=0
for ((k = 0; k < jobs; k++)); do
    log=$logdir/test-long.$k.log
    echo "=== shard $k/$jobs ($log)"
    grep -v '^PASS ' "$log"
    line=$(grep '^random JIT schedules:' "$log")
    read -r t f < <(sed -E 's/^random JIT schedules: ([0-9]+) tried, ([0-9]+) failed.*/\1 \2/' \
        <<<"${line:-random JIT schedules: 0 tried, 1 failed}")
    tried=$((tried + t)) failed=$((failed + f))
done
echo "test-long: $tried schedules, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
