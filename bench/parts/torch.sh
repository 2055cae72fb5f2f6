#!/usr/bin/env bash
# bench/parts/torch.sh - PyTorch running the same block (bench/torch_bench.py):
# outputs + per-head weights, eval, no_grad, one process per (torch threads,
# OpenBLAS threads) pair of BENCH_TORCH_GRID, BENCH_TORCH_ROUNDS rounds with
# the core timed again before each later one (core_round, bench/lib.sh); the
# best pair per shape and its ratio to the core's best.  Optional: skipped
# with the reason when PyTorch cannot run here.  Sourced by bench/run.sh, or
# run alone: bash bench/parts/torch.sh (the core then has only the rounds
# this part runs).
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

section "PyTorch: the same block, outputs + per-head weights, eval, no_grad"
if skipped torch; then
    WHY[torch]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    # PyTorch's times swing more from one process to the next than the core's
    # (OpenBLAS's thread start-up, OpenMP), so the grid runs BENCH_TORCH_ROUNDS
    # times, each pair in its own process, and the best of all counts.  The
    # machine's own speed swings too (a VM: other guests share its caches and
    # memory bandwidth, and the same binary runs 5-10% slower for minutes at
    # a time), so the core is timed again before each later round and its
    # figures are the best of its rounds: both sides get as many windows.
    declare -A TBEST=() TPAIR=()
    for round in $(seq "$TORCH_ROUNDS"); do
        echo "(round $round of $TORCH_ROUNDS)"
        if [ "$round" -gt 1 ]; then
            echo "(the core again, round $round)"
            core_round
        fi
        for pair in $TORCH_GRID; do
            tt=${pair%:*} bt=${pair#*:}
            run_step 300 env -u OMP_NUM_THREADS OPENBLAS_NUM_THREADS="$bt" "$PYTHON" \
                bench/torch_bench.py time --threads "$tt" --shapes "${SHAPES// /,}" \
                --repeat "$REPEAT" --warmup "$WARMUP"
            rc=$?
            if [ "$rc" != 0 ]; then
                WHY[torch]=$(step_reason)
                [ "$rc" = 3 ] || FAILED=1
                break 2
            fi
            for s in $SHAPES; do
                v=${R[torch_${tt}_${bt}_${s}_best_ms]:-}
                if [ -n "$v" ] && { [ -z "${TBEST[$s]:-}" ] || holds "$v < ${TBEST[$s]}"; }; then
                    TBEST[$s]=$v TPAIR[$s]=$pair
                fi
            done
        done
    done
    # The best pair for each shape, and the ratio to the core.
    for s in $SHAPES; do
        best=${TBEST[$s]:-} bestpair=${TPAIR[$s]:-}
        [ -n "$best" ] || continue
        R[torch_best_${s}]=$best
        R[torch_bestpair_${s}]="set_num_threads(${bestpair%:*}), OpenBLAS ${bestpair#*:}"
        line="B=${s%x*} L=${s#*x}: best ${best} ms with torch.set_num_threads(${bestpair%:*}), OpenBLAS threads ${bestpair#*:}"
        if [ -n "${R[core_${s}_best_ms]:-}" ]; then
            R[torch_ratio_${s}]=$(calc "$best / ${R[core_${s}_best_ms]}")
            line+="; PyTorch_best / attnd = $(fmt "${R[torch_ratio_${s}]}" 2) (attnd best ${R[core_${s}_best_ms]} ms, $CORE_ROUNDS rounds)"
        fi
        echo "-> $line"
    done
fi

bench_part_done
