#!/usr/bin/env bash
# bench/parts/long.sh - long context: bench_core core with sparse masks
# (--mask), attention none, against the four Linears alone and the dense
# forward at the same L: window 64 (+16 global positions) at
# L=BENCH_LONG_LEN, its scaling from L=2048 to 32768, causal at L=4096,
# fixed / strided / BigBird blocks against their ideal by allowed pairs, an
# explicit block-diagonal attn mask against its documents alone.  Sourced by
# bench/run.sh, or run alone: bash bench/parts/long.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# long_core NAME LEN [MASK]: one forward of B=1 L=LEN, attention none, best of
# 5 up to L=4096, of 2 above (of 1 without a mask: the dense forward at
# L=16384 takes seconds).
long_reps() { if [ "$1" -le 4096 ]; then echo 5; else echo 2; fi; }
long_core() {
    local reps
    reps=$(long_reps "$2")
    [ -z "${3:-}" ] && [ "$2" -gt 8192 ] && reps=1
    # shellcheck disable=SC2086
    run_step 900 "$BB"/bench_core core --batch 1 --len "$2" --threads "$THREADS" --repeat "$reps" \
        --warmup 1 --attention none $MODEL_FLAGS ${3:+--mask "$3"} --name "$1" ||
        { FAILED=1; WHY[long]="bench_core core --mask failed"; }
}
section "long context: sparse patterns at L=$LONG, attention none"
if skipped long; then
    WHY[long]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    for n in "$LONG" 4096 1024; do
        run_step 300 "$BB"/bench_core linears --batch 1 --len "$n" --threads "$THREADS" \
            --repeat "$(long_reps "$n")" \
            --warmup 1 || [ $? = 3 ] || { FAILED=1; WHY[long]="bench_core linears failed"; }
    done
    long_core long_dense "$LONG"
    long_core long_window "$LONG" window=64
    long_core long_window_global "$LONG" window=64,global=16
    long_core long_fixed "$LONG" fixed=128:8
    long_core long_strided "$LONG" strided=128
    long_core long_blocks "$LONG" blocks=64:1:1:3
    long_core long_window_2k 2048 window=64
    long_core long_window_32k 32768 window=64
    long_core long_dense_4k 4096
    long_core long_causal_4k 4096 causal
    long_core long_docs_4k 4096 docs=4
    long_core long_doc_1k 1024
    lin=${R[linears_1x${LONG}_best_ms]:-} dense=${R[long_dense_best_ms]:-}
    # a pattern's ideal: the Linears plus its share, by allowed pairs, of the
    # dense forward's attention
    for p in fixed strided blocks; do
        t=${R[long_${p}_best_ms]:-} nnz=${R[long_${p}_nnz]:-}
        if [ -n "$t" ] && [ -n "$lin" ] && [ -n "$dense" ] && [ -n "$nnz" ]; then
            ideal=$(calc "$lin + ($dense - $lin) * $nnz / ($LONG * $LONG)")
            R[long_${p}_ideal_ms]=$ideal
            R[long_${p}_ratio]=$(calc "$t / $ideal")
            echo "-> $p: $t ms, ideal $(fmt "$ideal" 1) ms (Linears $lin + (dense $dense - Linears) x $nnz / L^2): $(fmt "${R[long_${p}_ratio]}" 2)x"
        fi
    done
    for p in window window_global; do
        t=${R[long_${p}_best_ms]:-}
        [ -n "$t" ] && [ -n "$lin" ] && R[long_${p}_ratio]=$(calc "$t / $lin") &&
            echo "-> $p: $t ms / the four Linears $lin ms = $(fmt "${R[long_${p}_ratio]}" 2)x"
    done
    a=${R[long_window_2k_best_ms]:-} b=${R[long_window_32k_best_ms]:-}
    [ -n "$a" ] && [ -n "$b" ] && R[long_scaling]=$(calc "$b / $a") &&
        echo "-> window 64: t(L=32768) / t(L=2048) = $b / $a = $(fmt "${R[long_scaling]}" 2) (linear: 16)"
    l4=${R[linears_1x4096_best_ms]:-} d4=${R[long_dense_4k_best_ms]:-} c4=${R[long_causal_4k_best_ms]:-}
    [ -n "$l4" ] && [ -n "$d4" ] && [ -n "$c4" ] &&
        R[long_causal_ratio]=$(calc "($c4 - $l4) / ($d4 - $l4)") &&
        echo "-> causal, L=4096: attention part $(fmt "$(calc "$c4 - $l4")" 1) ms / unmasked $(fmt "$(calc "$d4 - $l4")" 1) ms = $(fmt "${R[long_causal_ratio]}" 2)"
    dd=${R[long_docs_4k_best_ms]:-} d1=${R[long_doc_1k_best_ms]:-}
    [ -n "$dd" ] && [ -n "$d1" ] && R[long_docs_ratio]=$(calc "$dd / (4 * $d1)") &&
        echo "-> 4 documents in one L=4096 attn mask: $dd ms / 4 x $d1 ms alone = $(fmt "${R[long_docs_ratio]}" 2)x"
fi

bench_part_done
