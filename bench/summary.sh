# bench/summary.sh - the end of `make bench`, sourced by bench/run.sh after
# the parts: the machine check (the roofline again, and the CPUs' other load
# over the run), then the summary table - each target, met or not in this
# run, from the figures the parts recorded (R) or why they are missing (WHY)
# - and the figures kept for reference.  Exits with FAILED.
# shellcheck shell=bash
# shellcheck disable=SC2154 # cpu, avx512: set by bench_machine (bench/lib.sh)

# ---- machine check: was anything else competing for the cores? -------------

section "machine check: the roofline again, and the CPUs' other load"
ROOF_START=${R[roofline_gflops]:-}
run_step 120 "$BB"/bench_core roofline --n 2048 --threads "$THREADS" --repeat "$ROOF_REPEAT" \
    --warmup 1 || FAILED=1
ROOF_END=${R[roofline_gflops]:-}
R[roofline_gflops]=$ROOF_START
# Others' share of the CPUs over the whole run: the machine's busy ticks less
# this script's own (the benchmarks, the daemon and its clients).
BUSY_RUN=$(awk -v a="$TICKS_START" -v b="$(ticks_now)" 'BEGIN {
    split(a, x); split(b, y); total = y[2] - x[2]
    other = (y[1] - x[1]) - (y[3] - x[3])
    printf "%.0f", (total > 0 && other > 0 ? 100 * other / total : 0) }')
echo "during the run, other processes used ${BUSY_RUN}% of the CPUs"
NOISY=""
if [ "$BUSY_START" -gt 10 ] || [ "$BUSY_RUN" -gt 5 ]; then
    NOISY="other processes used ${BUSY_START}% of the CPUs just before the run and ${BUSY_RUN}% during it"
fi
if [ -n "$ROOF_START" ] && [ -n "$ROOF_END" ] &&
    holds "$ROOF_END < 0.9 * $ROOF_START || $ROOF_END > 1.1 * $ROOF_START"; then
    NOISY="${NOISY:+$NOISY; }sgemm went from $ROOF_START GFLOP/s at the start to $ROOF_END at the end"
fi

# ---- summary ---------------------------------------------------------------

# row TARGET MEASURED VALUE OP LIMIT [WHY-MISSING]: one summary line; VALUE
# empty means the figure was not measured in this run.
row() {
    local verdict
    if [ -z "$3" ]; then
        verdict="n/a${6:+ ($6)}"
    elif holds "$3 $4 $5"; then
        verdict="met"
    else
        verdict="NOT met"
    fi
    printf '%-50s %-34s %s\n' "$1" "$2" "$verdict"
}

section "summary: the targets for the core, HTTP, memory, long context, positions, start-up, ModernBERT, text, bfloat16, int8, task heads and TEI's routes in this run"
echo "machine: nproc $(nproc), CPU $cpu, AVX-512 $avx512, OpenBLAS core ${R[openblas_corename]:-?}"
echo "other load: ${BUSY_START}% of the CPUs just before the run, ${BUSY_RUN}% during it; sgemm ${ROOF_START:-?} GFLOP/s at the start, ${ROOF_END:-?} at the end"
[ -z "$NOISY" ] || echo "WARNING: the machine was busy ($NOISY): these figures are not reliable; run again when it is idle"
printf '%-50s %-34s %s\n' "target" "measured" "result"
for s in $SHAPES; do
    r=${R[torch_ratio_${s}]:-}
    m="n/a"
    [ -n "$r" ] && m="$(fmt "$r" 2)x (${R[torch_best_${s}]} / ${R[core_${s}_best_ms]} ms)"
    row "core >= 1.2x faster than PyTorch, B=${s%x*} L=${s#*x}" "$m" "$r" ">=" 1.2 "${WHY[torch]:-}"
done
r="" m="n/a"
if [ -n "${R[core_8x128_gflops]:-}" ] && [ -n "${R[roofline_gflops]:-}" ]; then
    r=$(calc "${R[core_8x128_gflops]} / ${R[roofline_gflops]}")
    m="$(fmt "$(calc "100 * $r")" 1)% (${R[core_8x128_gflops]} / ${R[roofline_gflops]} GFLOP/s)"
fi
row "B=8 L=128 >= 80% of the sgemm roofline" "$m" "$r" ">=" 0.8 "${WHY[core]:-${WHY[roofline]:-}}"
r=${R[http_b64_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (${R[http_b64_p50_ms]} / ${R[http_b64_compute_ms]} ms)"
row "base64 HTTP p50 <= 1.15x compute (B=1 L=128)" "$m" "$r" "<=" 1.15 "${WHY[http]:-}"
r=${R[http_json_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (${R[http_json_p50_ms]} / ${R[http_core_median_ms]} ms)"
row "JSON HTTP p50 <= 3x core (B=1 L=128)" "$m" "$r" "<=" 3 "${WHY[http]:-}"
for att_ in heads none; do
    for fmt_ in b64 json; do
        k=http8_${att_}_${fmt_} lim=1.25 name="base64"
        [ "$fmt_" = json ] && lim=3 name="JSON"
        r=${R[${k}_ratio]:-} m="n/a"
        [ -n "$r" ] && m="$(fmt "$r" 2)x (${R[${k}_p50_ms]} / ${R[${k}_compute_ms]} ms)"
        row "B=8 $att_ $name p50 <= ${lim}x compute" "$m" "$r" "<=" "$lim" "${WHY[http]:-}"
        r=${R[${k}_fault_pct]:-} m="n/a"
        [ -n "$r" ] && m="${R[${k}_faults]} faults, $(fmt "$r" 2)% of its pages"
        row "B=8 $att_ $name faults < 1% of the response" "$m" "$r" "<" 1 "${WHY[http]:-}"
    done
done
r=${R[http_tput_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$(calc "100 * $r")" 1)% ($(fmt "${R[http_small_tokens_per_s]}" 0) / $(fmt "${R[http_big_tokens_per_s]}" 0) tok/s)"
row "$CLIENTS clients B=1 L=32 >= 70% of B=32 tokens/s" "$m" "$r" ">=" 0.7 "${WHY[http]:-}"
for k in core_1x${MEM_LEN}_none_peak_rss_mib http_mem_peak_rss_mib; do
    r=${R[$k]:-} m="n/a"
    [ -n "$r" ] && m="$(fmt "$r" 0) MiB peak resident"
    what="core"
    [ "$k" = http_mem_peak_rss_mib ] && what="attnd over HTTP"
    row "L=$MEM_LEN attention none < 1 GiB ($what)" "$m" "$r" "<" 1024 "${WHY[memory]:-}"
done
w=${WHY[long]:-}
r=${R[long_window_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (${R[long_window_best_ms]} / ${R[linears_1x${LONG}_best_ms]} ms)"
row "L=$LONG window 64 <= 1.25x the four Linears" "$m" "$r" "<=" 1.25 "$w"
r=${R[long_window_global_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (${R[long_window_global_best_ms]} / ${R[linears_1x${LONG}_best_ms]} ms)"
row "L=$LONG window 64 + 16 global <= 1.4x Linears" "$m" "$r" "<=" 1.4 "$w"
r=${R[long_scaling]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2) (${R[long_window_32k_best_ms]} / ${R[long_window_2k_best_ms]} ms)"
row "window 64: t(32768) / t(2048) <= 18.4" "$m" "$r" "<=" 18.4 "$w"
r=${R[long_causal_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x of the unmasked attention"
row "causal L=4096 attention part <= 0.6x unmasked" "$m" "$r" "<=" 0.6 "$w"
for p in fixed strided blocks; do
    r=${R[long_${p}_ratio]:-} m="n/a"
    [ -n "$r" ] && m="$(fmt "$r" 2)x (${R[long_${p}_best_ms]} / $(fmt "${R[long_${p}_ideal_ms]}" 1) ms)"
    row "L=$LONG $p within 1.3x of its ideal" "$m" "$r" "<=" 1.3 "$w"
done
r=${R[http_long_csr_peak_rss_mib]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 0) MiB peak resident"
row "L=$MEM_LEN window 64 heads CSR < 1.5 GiB (attnd)" "$m" "$r" "<" 1536 "${WHY[long_memory]:-${WHY[memory]:-}}"
r=${R[long_docs_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (${R[long_docs_4k_best_ms]} / 4 x ${R[long_doc_1k_best_ms]} ms)"
row "4-document attn mask <= 1.15x the documents alone" "$m" "$r" "<=" 1.15 "$w"
for s in 1x512 8x128; do
    for pos in rope alibi relative; do
        lim=1.03
        [ "$pos" != rope ] && lim=1.05
        r=${R[pos_${s}_${pos}_ratio]:-} m="n/a"
        [ -n "$r" ] && m="$(fmt "$(calc "100 * ($r - 1)")" 1)% of the forward ($(fmt "$r" 3)x)"
        row "$pos <= $(fmt "$(calc "100 * ($lim - 1)")" 0)% of a forward, B=${s%x*} L=${s#*x}" "$m" "$r" "<=" "$lim" "${WHY[positions]:-}"
    done
done
for pos in rope alibi relative; do
    a=${R[pos_window_${pos}_scores]:-} b=${R[pos_window_none_scores]:-} r="" m="n/a"
    [ -n "$a" ] && [ -n "$b" ] && r=$(calc "$a / $b") && m="$a / $b scores"
    row "$pos keeps window-64 tile skipping, L=512" "$m" "$r" "<=" 1 "${WHY[positions]:-}"
done
r=${R[startup_dir_extra_s]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "${R[startup_dir_s]}" 2) s, reading $(fmt "${R[startup_read_s]}" 2) s"
row "BERT-base dir start-up <= 1 s + reading it once" "$m" "$r" "<=" 1 "${WHY[startup]:-}"
r=${R[startup_rss_extra_mib]:-} m="n/a"
[ -n "$r" ] && m="${R[startup_dir_rss_mib]} MiB vs ${R[startup_file_rss_mib]} MiB (PyTorch file)"
row "BERT-base dir peak RSS <= the same stack's file" "$m" "$r" "<=" 16 "${WHY[startup]:-}"
r=${R[xlmr_peak_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (max(${R[xlmr_dir_rss_mib]}, ${R[xlmr_daemon_hwm_mib]}) / ${R[xlmr_weights_mib]} MiB)"
row "XLM-R-base dir peak RSS <= 1.1x its file size" "$m" "$r" "<=" 1.1 "${WHY[xlmr]:-}"
r=${R[ids_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 3)x (${R[ids_compute_ms]} / ${R[emb_compute_ms]} ms)"
row "ids in <= 1.02x embeddings in (B=8 L=128)" "$m" "$r" "<=" 1.02 "${WHY[ids]:-}"
r=${R[mb_ideal_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 3)x (${R[mb_full_best_ms]} / $(fmt "${R[mb_ideal_ms]}" 1) ms)"
row "ModernBERT-base L=$MB_LEN within 1.2x of its ideal" "$m" "$r" "<=" 1.2 "${WHY[modernbert]:-}"
r=${R[mb_torch_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 1)x (${R[mb_torch_median_s]} s / ${R[mb_full_best_ms]} ms)"
row "ModernBERT-base L=$MB_LEN >= 3x faster than PyTorch" "$m" "$r" ">=" 3 "${WHY[mbtorch]:-${WHY[modernbert]:-}}"
r=${R[mb_full_peak_rss_mib]:-} m="n/a"
[ -n "$r" ] && m="$r MiB"
row "ModernBERT-base L=$MB_LEN peak RSS < 1.5 GiB" "$m" "$r" "<" 1536 "${WHY[modernbert]:-}"
r=${R[mb_short_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 3)x per Linear-FLOP"
row "ModernBERT-base B=8 L=128 <= BERT block per Linear-FLOP" "$m" "$r" "<=" 1 "${WHY[modernbert]:-}"
for t in $TEXT_TOKS bert-base; do
    k=${t//-/_} r=${R[tok_ratio_${t//-/_}]:-} m="n/a"
    [ -n "$r" ] && m="$(fmt "$r" 2)x ($(fmt "${R[tokc_${k}_tok_per_s]}" 0) / $(fmt "${R[tokhf_${k}_tok_per_s]}" 0) tok/s)"
    row "tokenizer $t, 1 thread >= HF's tokens/s" "$m" "$r" ">=" 1 "${WHY[text]:-${WHY[texthf]:-}}"
done
r=${R[text_tok_share]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$(calc "100 * $r")" 3)% (${R[tokb_median_ms]} / ${R[txt_ids_compute_ms]} ms)"
row "tokenizing B=8 L=128 <= 3% of the forward" "$m" "$r" "<=" 0.03 "${WHY[text]:-}"
# With the ids part's figure from this run: the embedding module's lookups too.
r="" m="n/a"
if [ -n "${R[text_tok_share]:-}" ] && [ -n "${R[ids_ratio]:-}" ]; then
    # ids in below embeddings in is the medians' noise: the lookups count 0
    r=$(calc "${R[text_tok_share]} + (${R[ids_ratio]} > 1 ? ${R[ids_ratio]} - 1 : 0)")
    m="$(fmt "$(calc "100 * $r")" 2)% (ids / embeddings $(fmt "${R[ids_ratio]}" 3)x)"
fi
row "tokenizing + lookups, B=8 L=128 <= 3% of forward" "$m" "$r" "<=" 0.03 "${WHY[text]:-${WHY[ids]:-}}"
r=${R[txt_emb_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 3)x (${R[txt_emb_p50_ms]} / ${R[txt_emb_compute_ms]} ms)"
row "/v1/embeddings B=8 p50 <= 1.15x compute" "$m" "$r" "<=" 1.15 "${WHY[text]:-}"
r=${R[bf_lin_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (float32 / bfloat16 medians)"
row "bf16 Linears >= 1.7x float32, B=8 L=128" "$m" "$r" ">=" 1.7 "${WHY[bf16]:-}"
r=${R[bf_core_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (float32 / bfloat16 medians)"
row "bf16 forward B=8 L=128 heads >= 1.5x float32" "$m" "$r" ">=" 1.5 "${WHY[bf16]:-}"
r=${R[bf_rss_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 3)x ($((${R[bf_rss_bfloat16_kb]:-0} / 1024)) / $((${R[bf_rss_float32_kb]:-0} / 1024)) MiB)"
row "bf16 BERT-base dir peak RSS <= 0.6x float32" "$m" "$r" "<=" 0.6 "${WHY[bf16]:-}"
r=${R[i8_lin_bfloat16_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (bfloat16 / int8 medians)"
row "int8 Linears >= 1.8x bfloat16, B=8 L=128" "$m" "$r" ">=" 1.8 "${WHY[int8]:-}"
r=${R[i8_core_bfloat16_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (bfloat16 / int8 medians)"
row "int8 forward B=8 L=128 heads >= 1.4x bfloat16" "$m" "$r" ">=" 1.4 "${WHY[int8]:-}"
# on a CPU with AMX, also the kernels of the AVX512_VNNI hosts without it
for k in linnoamx:1.8:"int8 Linears" corenoamx:1.4:"int8 forward"; do
    IFS=: read -r key min what <<<"$k"
    r=${R[i8_${key}_bfloat16_ratio]:-}
    [ -n "$r" ] && row "$what >= ${min}x bfloat16, without AMX" \
        "$(fmt "$r" 2)x (avx512_bf16 / avx512_vnni)" "$r" ">=" "$min" ""
done
# attnd's kernels against oneDNN's matmul (the library road), and without AMX
for k in lin: linnoamx:", without AMX"; do
    for dt in int8 bfloat16; do
        r=${R[i8_dnnl${k%%:*}_${dt}_ratio]:-} m="n/a"
        [ -n "$r" ] && m="$(fmt "$r" 2)x (oneDNN's matmul / attnd medians)"
        [ "${k%%:*}" = lin ] || [ -n "$r" ] &&
            row "$dt Linears >= 1x oneDNN's matmul${k#*:}" "$m" "$r" ">=" 1 "${WHY[int8_dnnl]:-${WHY[int8]:-}}"
    done
done
r=${R[i8_ort_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (ONNX Runtime / attnd medians)"
row "int8 forward B=8 L=128 >= 1x ONNX Runtime's int8" "$m" "$r" ">=" 1 "${WHY[int8_ort]:-${WHY[int8]:-}}"
r=${R[i8_http_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (quantize_dynamic / attnd int8)"
row "int8 HTTP ids >= 2x PyTorch quantize_dynamic" "$m" "$r" ">=" 2 "${WHY[int8_http]:-${WHY[int8]:-}}"
r=${R[i8_rss_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 3)x ($((${R[i8_rss_int8_kb]:-0} / 1024)) / $((${R[i8_rss_float32_kb]:-0} / 1024)) MiB)"
row "int8 BERT-base dir RSS after a forward <= 0.3x float32" "$m" "$r" "<=" 0.3 "${WHY[int8]:-}"
r=${R[hd_seq_logits_share]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$(calc "100 * $r")" 2)% (+${R[hd_seq_logits_extra_ms]} of ${R[hd_seq_none_median_ms]} ms)"
row "classification head, B=8 L=128 <= 1% of forward" "$m" "$r" "<=" 0.01 "${WHY[heads]:-}"
r="" m="n/a"
if [ -n "${R[hd_mlm_splade_gflops]:-}" ] && [ -n "${R[hd_mlm_forward_gflops]:-}" ]; then
    r=$(calc "${R[hd_mlm_splade_gflops]} / ${R[hd_mlm_forward_gflops]}")
    m="$(fmt "$(calc "100 * $r")" 1)% (${R[hd_mlm_splade_gflops]} / ${R[hd_mlm_forward_gflops]} GFLOP/s)"
fi
row "SPLADE projection >= 85% of the forward's GFLOP/s" "$m" "$r" ">=" 0.85 "${WHY[heads]:-}"
r="" m="n/a"
if [ -n "${R[hd_xlmr_rss_peak_mb]:-}" ]; then
    r=$(calc "${R[hd_xlmr_rss_peak_mb]} - ${R[hd_xlmr_weights_mb]}")
    m="+$(fmt "$r" 1) MiB (${R[hd_xlmr_rss_peak_mb]} over ${R[hd_xlmr_weights_mb]} MiB)"
fi
row "XLM-R MLM SPLADE L=512 peak RSS <= weights + 64 MiB" "$m" "$r" "<=" 64 "${WHY[heads_rss]:-${WHY[heads]:-}}"
r=${R[page_model_ms]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 1) ms"
row "page model view 12x12 L=128 drawn <= 1 s" "$m" "$r" "<=" 1000 "${WHY[page]:-}"
r=${R[tei_rr_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 3)x (${R[tei_rr_p50_ms]} / ${R[tei_rr_compute_ms]} ms)"
row "TEI /rerank, 32 pairs: p50 <= 1.1x compute" "$m" "$r" "<=" 1.1 "${WHY[tei]:-}"
r=${R[tei_embed_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 3)x (${R[tei_embed_p50_ms]} / ${R[tei_v1_p50_ms]} ms)"
row "TEI /embed B=8 p50 <= 1.02x /v1/embeddings p50" "$m" "$r" "<=" 1.02 "${WHY[tei]:-}"
r=${R[prep_p99_ratio]:-} m="n/a"
[ -n "$r" ] && m="$(fmt "$r" 2)x (${R[prep_busy_p99_ms]} / ${R[prep_alone_p99_ms]} ms)"
row "small requests' p99 beside 1 MB texts <= 1.5x alone" "$m" "$r" "<=" 1.5 "${WHY[bigtext]:-}"
echo
echo "not targets, for reference:"
[ -n "${R[prep_idle_p99_ratio]:-}" ] &&
    echo "  small requests' p99 beside 1 MB texts with --tokenize-idle: $(fmt "${R[prep_idle_p99_ratio]}" 2)x alone (${R[prep_idle_busy_p99_ms]} / ${R[prep_idle_alone_p99_ms]} ms)"
[ -n "${R[starve_big_busy_s]:-}" ] &&
    echo "  a 1 MB text beside $(nproc) busy processes: ${R[starve_big_busy_s]} s (alone ${R[starve_big_alone_s]} s)"
[ -n "${R[lane_p99_ratio]:-}" ] && [ -n "${R[lane_off_p99_ratio]:-}" ] &&
    echo "  small requests' p99 beside batches of 16 texts: $(fmt "${R[lane_p99_ratio]}" 2)x alone run between their phases (compute.short_tokens), $(fmt "${R[lane_off_p99_ratio]}" 2)x in arrival order (${R[lane_busy_p99_ms]} / ${R[lane_off_busy_p99_ms]} ms)"
[ -n "${R[bf_blas_ratio]:-}" ] &&
    echo "  bf16 forward B=8 L=128 heads without AVX-512 (--kernels openblas: widened panels on OpenBLAS): $(fmt "${R[bf_blas_ratio]}" 2)x float32 on OpenBLAS (medians)"
[ -n "${R[i8_lin_float32_ratio]:-}" ] &&
    echo "  int8 Linears B=8 L=128: $(fmt "${R[i8_lin_float32_ratio]}" 2)x float32 (medians)"
[ -n "${R[i8_http_ceiling]:-}" ] &&
    echo "  int8 HTTP ids: PyTorch quantize_dynamic / attnd can be at most $(fmt "${R[i8_http_ceiling]}" 2)x on this CPU (the 12 layers' Linears alone at the vpdpbusd peak: $(fmt "${R[i8_http_floor_ms]}" 1) ms, PyTorch ${R[i8_torch_ms]} ms)"
[ -n "${R[i8_rss_load_ratio]:-}" ] &&
    echo "  int8 BERT-base dir VmRSS once ready: $(fmt "${R[i8_rss_load_ratio]}" 3)x float32 ($((${R[i8_rss_int8_load_kb]:-0} / 1024)) / $((${R[i8_rss_float32_load_kb]:-0} / 1024)) MiB; float32 maps its weights untouched)"
[ -n "${R[bf_long_ratio]:-}" ] &&
    echo "  bf16 forward B=1 L=4096 without weights (attention's products in bfloat16 too): $(fmt "${R[bf_long_ratio]}" 2)x float32 (medians)"
[ -n "${R[batch_ratio]:-}" ] &&
    echo "  mixed lengths, each sent alone (merged by the daemon) / groups of 8 padded to their longest (padding $(fmt "$(calc "100 * ${R[batch_pad_fraction]}")" 1)% of what they compute): $(fmt "${R[batch_ratio]}" 2)x real tokens/s (${R[batch_alone_tps]} / ${R[batch_padded_tps]}); padding the daemon counted (/metrics attnd_tokens_total against the real tokens): merged $(fmt "$(calc "100 * ${R[batch_alone_pad]}")" 1)%, padded $(fmt "$(calc "100 * ${R[batch_padded_pad]}")" 1)%"
for s in $SHAPES; do
    r=${R[ort_ratio_${s}]:-}
    if [ -n "$r" ]; then
        echo "  ONNX Runtime / attnd, B=${s%x*} L=${s#*x}: $(fmt "$r" 2)x (${R[ort_${s}_best_ms]} / ${R[core_${s}_best_ms]} ms)"
    else
        echo "  ONNX Runtime / attnd, B=${s%x*} L=${s#*x}: n/a (${WHY[onnx]:-not measured})"
    fi
done
for s in $SHAPES; do
    [ -n "${R[torch_bestpair_${s}]:-}" ] &&
        echo "  PyTorch's best setting, B=${s%x*} L=${s#*x}: ${R[torch_bestpair_${s}]}"
done
if [ -n "${R[http_b64_p50_ms]:-}" ] && [ -n "${R[http_core_median_ms]:-}" ]; then
    line="  base64 over HTTP, B=1 L=128: p50 - core median = $(fmt "$(calc "${R[http_b64_p50_ms]} - ${R[http_core_median_ms]}")" 3) ms"
    [ -n "${R[http_floor_p50_ms]:-}" ] &&
        line+="; the transport alone (bench/transport_floor.py, same request and response sizes): p50 ${R[http_floor_p50_ms]} ms back to back"
    [ -n "${R[http_floor_busy_ms]:-}" ] &&
        line+=", $(fmt "${R[http_floor_busy_ms]}" 3) ms around a forward as long as the daemon's (--busy-ms): no server that answers after the forward gets p50 / compute below $(fmt "${R[http_floor_ratio]}" 2) here"
    echo "$line"
fi
# The same ratio against the daemon's own compute median for the very
# requests timed (X-Compute-Ms): no window apart, so a check on the ratio
# above when the machine's speed moved between the two.
for fmt_ in b64 json; do
    p50=${R[http_${fmt_}_p50_ms]:-} cm=${R[http_${fmt_}_compute_ms]:-}
    if [ -n "$p50" ] && [ -n "$cm" ] && holds "$cm > 0"; then
        echo "  $fmt_ over HTTP, B=1 L=128: p50 / the daemon's compute median for the same requests = $(fmt "$(calc "$p50 / $cm")" 2)x ($p50 / $cm ms)"
    fi
done
# How close the forward runs to its ceiling, and what 1.2x PyTorch asks of it.
[ -n "${R[peak_gflops]:-}" ] && echo "  FMA peak of $THREADS threads: ${R[peak_gflops]} GFLOP/s"
for s in $SHAPES; do
    lin=${R[linears_${s}_gflops]:-} core=${R[core_${s}_gflops]:-}
    if [ -z "$lin" ] || [ -z "$core" ]; then continue; fi
    line="  B=${s%x*} L=${s#*x}: the four Linears alone $lin GFLOP/s"
    [ -n "${R[peak_gflops]:-}" ] && line+=" ($(fmt "$(calc "100 * $lin / ${R[peak_gflops]}")" 1)% of the FMA peak)"
    line+="; the forward $core GFLOP/s, $(fmt "$(calc "100 * $core / $lin")" 1)% of that"
    if [ -n "${R[torch_best_${s}]:-}" ]; then
        need=$(calc "$core * ${R[core_${s}_best_ms]} * 1.2 / ${R[torch_best_${s}]}")
        line+="; 1.2x PyTorch's ${R[torch_best_${s}]} ms needs $(fmt "$need" 1) GFLOP/s, $(fmt "$(calc "100 * $need / $lin")" 1)% of the Linears' rate"
    fi
    echo "$line"
done
if [ -n "${R[txt_text_ids_ratio]:-}" ]; then
    echo "  /v1/encode B=8 L=128, attention none, base64: p50 with text / with input_ids = $(fmt "${R[txt_text_ids_ratio]}" 3)x (${R[txt_text_p50_ms]} / ${R[txt_ids_p50_ms]} ms; beyond the forward ${R[txt_text_over_ms]} / ${R[txt_ids_over_ms]} ms)"
fi
if [ -n "${R[tei_embed_ratio]:-}" ]; then
    echo "  TEI /embed / /v1/embeddings, B=8 L=128: median of the rounds' ratios $(fmt "${R[tei_embed_paired]}" 3)x; beyond the forward (wall - X-Compute-Ms) ${R[tei_embed_over_ms]} / ${R[tei_v1_over_ms]} ms"
fi
[ -n "${R[tei_rr_over_ms]:-}" ] &&
    echo "  TEI /rerank, 32 pairs of ${R[tei_rr_len]} tokens: beyond the forward (wall - X-Compute-Ms) ${R[tei_rr_over_ms]} ms"
echo "every RESULT line: $BB/results.txt; whole run: $(($(date +%s) - T_START)) s"
exit "$FAILED"
