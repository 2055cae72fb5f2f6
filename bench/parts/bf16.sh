#!/usr/bin/env bash
# bench/parts/bf16.sh - model.dtype bfloat16 against float32, interleaved
# rounds: bench_core linears and core with --dtype bfloat16 and float32,
# medians' ratios; the widening kernel's (bfloat16-wide) for reference; the
# BERT-base-sized directory's --check-config peak resident memory both ways.
# Sourced by bench/run.sh, or run alone: bash bench/parts/bf16.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# model.dtype bfloat16 against float32 in interleaved rounds: the four
# Linears alone and the block (B=8 L=128, attention per head), each round's
# median float32 / bfloat16, and the block again with the AVX-512 forms off
# (--kernels openblas: what a CPU without AVX-512F runs) and at B=1 L=4096
# without weights (where attention's products, in bfloat16 too, weigh as
# much as the Linears); then the BERT-base-sized directory's peak
# resident memory at load (--check-config, /usr/bin/time's maximum RSS),
# bfloat16 / float32.
section "bfloat16: model.dtype bfloat16 against float32"
if skipped bf16; then
    WHY[bf16]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    for r in $(seq "$BF_ROUNDS"); do
        for dt in float32 bfloat16; do
            # shellcheck disable=SC2086,SC2015 # flag lists split; the || catches any step
            run_step 300 "$BB"/bench_core linears --batch 8 --len 128 --threads "$THREADS" \
                --repeat "$REPEAT" --warmup "$WARMUP" --dtype "$dt" --name "bf_lin_${dt}_$r" &&
                run_step 300 "$BB"/bench_core core --batch 8 --len 128 --threads "$THREADS" \
                    --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS --dtype "$dt" \
                    --name "bf_core_${dt}_$r" &&
                run_step 300 "$BB"/bench_core core --batch 8 --len 128 --threads "$THREADS" \
                    --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS --dtype "$dt" \
                    --kernels openblas --name "bf_blas_${dt}_$r" &&
                run_step 300 "$BB"/bench_core core --batch 1 --len 4096 --threads "$THREADS" \
                    --repeat 3 --warmup 1 $MODEL_FLAGS --attention none --dtype "$dt" \
                    --name "bf_long_${dt}_$r" ||
                { FAILED=1; WHY[bf16]="bench_core --dtype $dt failed: $(step_reason)"; }
        done
        for k in lin core blas long; do
            a=${R[bf_${k}_float32_${r}_median_ms]:-} b=${R[bf_${k}_bfloat16_${r}_median_ms]:-}
            [ -n "$a" ] && [ -n "$b" ] && printf '%s\n' "$(calc "$a / $b")" >>"$BB/bf_$k"
        done
    done
    for k in lin core blas long; do
        if [ -s "$BB/bf_$k" ]; then
            R[bf_${k}_ratio]=$(median "$BB/bf_$k")
            echo "-> $k: float32 / bfloat16 (medians, $BF_ROUNDS rounds) = $(fmt "${R[bf_${k}_ratio]}" 3) ($(tr '\n' ' ' <"$BB/bf_$k"))"
        fi
        rm -f "$BB/bf_$k"
    done
    # shellcheck disable=SC2086
    run_step 300 "$BB"/bench_core linears --batch 8 --len 128 --threads "$THREADS" \
        --repeat "$REPEAT" --warmup "$WARMUP" --dtype bfloat16-wide --name bf_lin_wide ||
        FAILED=1
    if [ ! -f "$BB/bert_base_dir/model.safetensors" ]; then
        run_step 600 "$PYTHON" tools/fixtures/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors" ||
            WHY[bf16]="tools/fixtures/make_bert_dir.py failed"
    fi
    if [ -f "$BB/bert_base_dir/model.safetensors" ]; then
        for dt in float32 bfloat16 float32 bfloat16; do
            run_step 120 /usr/bin/time -f "RESULT bf_rss_${dt}_kb=%M" build/attnd --check-config \
                --model-dir "$BB/bert_base_dir" --dtype "$dt" || FAILED=1
        done
        if [ -n "${R[bf_rss_float32_kb]:-}" ] && [ -n "${R[bf_rss_bfloat16_kb]:-}" ]; then
            R[bf_rss_ratio]=$(calc "${R[bf_rss_bfloat16_kb]} / ${R[bf_rss_float32_kb]}")
            echo "-> BERT-base dir peak RSS at load: bfloat16 $((R[bf_rss_bfloat16_kb] / 1024)) MiB / float32 $((R[bf_rss_float32_kb] / 1024)) MiB = $(fmt "${R[bf_rss_ratio]}" 3)"
        fi
    fi
fi

bench_part_done
