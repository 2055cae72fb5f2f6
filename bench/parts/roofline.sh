#!/usr/bin/env bash
# bench/parts/roofline.sh - the OpenBLAS roofline: build/bench/bench_core
# roofline, cblas_sgemm 2048^3 on BENCH_THREADS threads, GFLOP/s.  First of
# the parts, so the core's lines can quote it.  Sourced by bench/run.sh, or
# run alone: bash bench/parts/roofline.sh (after the build and machine
# sections).
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

section "OpenBLAS roofline: cblas_sgemm 2048x2048x2048"
run_step 120 "$BB"/bench_core roofline --n 2048 --threads "$THREADS" --repeat "$ROOF_REPEAT" \
    --warmup 1 || { FAILED=1; WHY[roofline]="bench_core roofline failed"; }

bench_part_done
