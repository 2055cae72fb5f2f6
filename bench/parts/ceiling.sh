#!/usr/bin/env bash
# bench/parts/ceiling.sh - the ceiling the core works under: bench_core peak
# (the CPUs' float32 FMA peak) and bench_core linears (the block's four
# Linears alone - no attention, norms, activation or copies - on the core's
# own kernel, per shape).  Sourced by bench/run.sh, or run alone:
# bash bench/parts/ceiling.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

section "ceiling: the CPUs' FMA peak, and the block's four Linears alone"
run_step 60 "$BB"/bench_core peak --threads "$THREADS" --repeat 3 ||
    [ $? = 3 ] || { FAILED=1; WHY[peak]="bench_core peak failed"; }
for s in $SHAPES; do
    # shellcheck disable=SC2086
    run_step 120 "$BB"/bench_core linears --batch "${s%x*}" --len "${s#*x}" --threads "$THREADS" \
        --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS ||
        [ $? = 3 ] || { FAILED=1; WHY[linears]="bench_core linears failed"; }
done

bench_part_done
