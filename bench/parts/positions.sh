#!/usr/bin/env bash
# bench/parts/positions.sh - positions inside attention: RoPE, ALiBi and
# MPNet's relative bias against none, interleaved rounds; window 64 with each:
# the same scores computed.
# Sourced by bench/run.sh, or run alone: bash bench/parts/positions.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# RoPE, ALiBi and MPNet's relative position bias (bench_core --position
# relative) against the same forward without positions, BERT-base sizes,
# per-head weights: the four run in turn, POS_ROUNDS times, and each ratio
# is the median of the rounds' median-to-median ratios, so the machine's
# drift over the minutes does not decide it.  With a window mask at L=512 the
# scores computed must be the same with positions as without (tile skipping
# kept).
section "positions inside attention: RoPE, ALiBi and MPNet's bias against none"
if skipped positions; then
    WHY[positions]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    for s in 1x512 8x128; do
        for r in $(seq "$POS_ROUNDS"); do
            for pos in none rope alibi relative; do
                # shellcheck disable=SC2086
                run_step 300 "$BB"/bench_core core --batch "${s%x*}" --len "${s#*x}" \
                    --threads "$THREADS" --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS \
                    --position "$pos" --name "pos_${s}_${pos}_$r" ||
                    { FAILED=1; WHY[positions]="bench_core --position failed"; }
            done
            for pos in rope alibi relative; do
                a=${R[pos_${s}_${pos}_${r}_median_ms]:-} b=${R[pos_${s}_none_${r}_median_ms]:-}
                [ -n "$a" ] && [ -n "$b" ] && printf '%s\n' "$(calc "$a / $b")" >>"$BB/pos_${s}_${pos}"
            done
        done
        for pos in rope alibi relative; do
            if [ -s "$BB/pos_${s}_${pos}" ]; then
                R[pos_${s}_${pos}_ratio]=$(median "$BB/pos_${s}_${pos}")
                echo "-> B=${s%x*} L=${s#*x}: $pos / none (medians, $POS_ROUNDS rounds) = $(fmt "${R[pos_${s}_${pos}_ratio]}" 3) ($(tr '\n' ' ' <"$BB/pos_${s}_${pos}"))"
            fi
            rm -f "$BB/pos_${s}_${pos}"
        done
    done
    for pos in none rope alibi relative; do
        # shellcheck disable=SC2086
        run_step 300 "$BB"/bench_core core --batch 1 --len 512 --threads "$THREADS" \
            --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS --position "$pos" \
            --mask window=64 --name "pos_window_$pos" ||
            { FAILED=1; WHY[positions]="bench_core --mask failed"; }
    done
    [ -n "${R[pos_window_none_scores]:-}" ] &&
        echo "-> window 64 at L=512: scores computed none ${R[pos_window_none_scores]}, rope ${R[pos_window_rope_scores]:-?}, alibi ${R[pos_window_alibi_scores]:-?}, relative ${R[pos_window_relative_scores]:-?} (of $((12 * 512 * 512)) dense)"
fi

bench_part_done
