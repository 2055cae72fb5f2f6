#!/usr/bin/env bash
# bench/parts/modernbert.sh - ModernBERT-base (bench_core --block modernbert:
# D 768, 12 heads, F 1152 GeGLU, 22 layers, every 3rd global, window 64) at
# B=1 L=BENCH_MB_LEN, attention none: the forward against its ideal (the four
# Linears alone and one global layer, scaled by each layer's pairs), its peak
# resident memory, and PyTorch running the same stack as transformers does on
# a CPU (bench/modernbert_torch.py: dense scores with a sliding-window mask;
# optional, BENCH_SKIP name mbtorch); B=8 L=128 per Linear-FLOP against the
# BERT block, interleaved.  Sourced by bench/run.sh, or run alone:
# bash bench/parts/modernbert.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# The forward's ideal at the kernel's measured rates: 22 x the four Linears
# alone (bench_core linears, GeGLU's 2F rows) plus, per layer, what one
# global layer costs beyond its Linears (bench_core core --n-layers 1) times
# the layer's share of the L^2 pairs: 1 on the 8 global layers, (L (2W + 1)
# - W (W + 1)) / L^2 on the 14 local ones.
section "ModernBERT-base: B=1 L=$MB_LEN, attention none; B=8 L=128 against the BERT block"
if skipped modernbert; then
    WHY[modernbert]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    MB="--block modernbert --threads $THREADS"
    # shellcheck disable=SC2086
    { run_step 300 "$BB"/bench_core linears --batch 1 --len "$MB_LEN" $MB --repeat 3 --warmup 1 \
        --name mb_lin &&
      run_step 600 "$BB"/bench_core core --batch 1 --len "$MB_LEN" $MB --n-layers 1 \
        --attention none --repeat 3 --warmup 1 --name mb_dense1 &&
      run_step 1200 "$BB"/bench_core core --batch 1 --len "$MB_LEN" $MB --attention none \
        --repeat 2 --warmup 1 --name mb_full; } ||
        { FAILED=1; WHY[modernbert]="bench_core --block modernbert failed"; }
    lin=${R[mb_lin_best_ms]:-} dense=${R[mb_dense1_best_ms]:-} full=${R[mb_full_best_ms]:-}
    if [ -n "$lin" ] && [ -n "$dense" ] && [ -n "$full" ]; then
        share=$(calc "($MB_LEN * 129 - 64 * 65) / ($MB_LEN * $MB_LEN)")
        R[mb_ideal_ms]=$(calc "22 * $lin + ($dense - $lin) * (8 + 14 * $share)")
        R[mb_ideal_ratio]=$(calc "$full / ${R[mb_ideal_ms]}")
        echo "-> 22 layers: $full ms, ideal $(fmt "${R[mb_ideal_ms]}" 1) ms (22 x Linears $lin + (one global layer $dense - Linears) x (8 + 14 x $share)): $(fmt "${R[mb_ideal_ratio]}" 3)x; peak resident ${R[mb_full_peak_rss_mib]:-?} MiB; scores ${R[mb_full_scores]:-?} of $((22 * 12 * MB_LEN * MB_LEN)) dense"
    fi
    # PyTorch as transformers runs ModernBERT on a CPU.  Debian's OpenBLAS
    # 0.3.21 takes the newest Xeons for Prescott: the peer then gets the
    # kernels of the CPU it runs on (and prints which ran).
    if skipped mbtorch; then
        WHY[mbtorch]="BENCH_SKIP"
        echo "PyTorch peer skipped (BENCH_SKIP)"
    else
        coretype=()
        if [ "$avx512" = yes ] && [[ ${R[openblas_corename]:-} == [Pp]rescott ]]; then
            coretype=(OPENBLAS_CORETYPE=SkylakeX)
        fi
        run_step 1800 env "${coretype[@]}" "$PYTHON" bench/modernbert_torch.py \
            --seq-len "$MB_LEN" --layers 22 --runs 1 --threads "$THREADS"
        rc=$?
        if [ "$rc" != 0 ]; then
            WHY[mbtorch]=$(step_reason)
            [ "$rc" = 3 ] || FAILED=1
        elif [ -n "${R[mb_torch_median_s]:-}" ] && [ -n "$full" ]; then
            R[mb_torch_ratio]=$(calc "1000 * ${R[mb_torch_median_s]} / $full")
            echo "-> PyTorch ${R[mb_torch_median_s]} s (OpenBLAS ${R[mb_torch_blas_core]:-?}, peak ${R[mb_torch_peak_rss_mib]:-?} MiB) / attnd $full ms = $(fmt "${R[mb_torch_ratio]}" 1)x"
        fi
    fi
    # Short inputs: ms per Linear-GFLOP of the 22 layers against the BERT-base
    # block's (one layer, D 768, F 3072), attention none, in interleaved rounds;
    # the block runs 15 times as often, so both sides' medians span as long.
    mb_lf=$(calc "22 * 2 * 1024 * 768 * (3 * 768 + 768 + 2 * 1152 + 1152) / 1e9")
    bert_lf=$(calc "2 * 1024 * 768 * (3 * 768 + 768 + 2 * 3072) / 1e9")
    : >"$BB/mb_short"
    for r in $(seq "$MB_ROUNDS"); do
        # shellcheck disable=SC2086
        { run_step 300 "$BB"/bench_core core --batch 8 --len 128 $MB --attention none \
            --repeat "$REPEAT" --warmup "$WARMUP" --name "mb_short_$r" &&
          run_step 300 "$BB"/bench_core core --batch 8 --len 128 --threads "$THREADS" $MODEL_FLAGS \
            --attention none --repeat "$((15 * REPEAT))" --warmup "$WARMUP" --name "mb_bert_$r"; } ||
            { FAILED=1; WHY[modernbert]="bench_core at B=8 L=128 failed"; break; }
        printf '%s\n' "$(calc "(${R[mb_short_${r}_median_ms]} / $mb_lf) / (${R[mb_bert_${r}_median_ms]} / $bert_lf)")" >>"$BB/mb_short"
    done
    if [ -s "$BB/mb_short" ]; then
        R[mb_short_ratio]=$(median "$BB/mb_short")
        echo "-> B=8 L=128: ms per Linear-GFLOP, ModernBERT-base ($mb_lf GFLOP) / BERT block ($bert_lf GFLOP), medians, $MB_ROUNDS rounds = $(fmt "${R[mb_short_ratio]}" 3) ($(tr '\n' ' ' <"$BB/mb_short"))"
    fi
    rm -f "$BB/mb_short"
fi

bench_part_done
