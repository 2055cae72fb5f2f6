#!/usr/bin/env bash
# bench/parts/int8.sh - model.dtype int8 against bfloat16 and float32,
# interleaved rounds: bench_core linears (int8, bfloat16, float32) and core
# (int8, bfloat16), medians' ratios; the BERT-base-sized directory served by
# attnd in float32 and in int8, its resident memory at load and after a
# forward; attnd int8 over HTTP (token ids in) against PyTorch's
# quantize_dynamic on the same weights and threads (bench/int8_bench.py).
# Sourced by bench/run.sh, or run alone: bash bench/parts/int8.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# model.dtype int8 in interleaved rounds: the four Linears alone (B=8
# L=128) in int8, bfloat16 and float32, and the block (B=8 L=128, attention
# per head) in int8 and bfloat16, each as the forward runs it on this CPU
# (int8: AVX512_VNNI, else AVX2, else portable C; without AVX-512F
# bfloat16 runs on OpenBLAS over widened panels and float32 on
# cblas_sgemm); each round's median bfloat16 / int8 (and float32 / int8 for
# the Linears).  Then the BERT-base-sized directory (12 layers, a masked
# LM) served by build/attnd in float32, then in int8 (--forward-threads
# BENCH_THREADS): VmRSS once ready, and after two B=8 L=128 requests of
# token ids (every weight used by a forward; bench/int8_bench.py warm),
# int8 / float32 both ways.  While int8 is up: bench/int8_bench.py http,
# INT8_ROUNDS interleaved rounds of 3 requests against 3 forwards of
# PyTorch's quantize_dynamic (torch.set_num_threads BENCH_THREADS,
# OPENBLAS_NUM_THREADS 1: its faster setting, and no threads beyond
# BENCH_THREADS), the medians' ratio PyTorch / attnd.  On a CPU with AMX
# each round also runs the Linears and the block with --amx off (int8 on
# avx512_vnni, bfloat16 on avx512_bf16): the kernels of an AVX512_VNNI host
# without AMX (Zen 4 and 5, Ice Lake), the targets' own hosts.  bench_core
# peak times the int8 and bfloat16 dot products' peaks (vpdpbusd,
# vdpbf16ps, AVX-512): the Linears' share of each, and the HTTP ratio's
# ceiling on this CPU (PyTorch's time against the 12 layers' Linears alone
# at the vpdpbusd peak).  Where
# libdnnl-dev is installed each round also times oneDNN's matmul on the same
# Linears in int8 and bfloat16 (bench/dnnl_bench.c), the medians' ratios
# oneDNN / attnd per dtype: the library road to AMX and VNNI.  Where the
# onnx part's export and onnxruntime-node are there and Debian's python3-onnx
# is installed, each round also times ONNX Runtime's own int8 of that block
# (bench/ort_quant.py: the graph onnxruntime.quantization.quantize_dynamic
# writes, per-tensor scales; its kernels are MLAS's, AMX where the CPU has
# it) at B=8 L=128 (bench/ort_bench.js --int8), the medians' ratio ONNX
# Runtime / attnd's int8 block.
section "int8: model.dtype int8 against bfloat16 and float32"
if skipped int8; then
    WHY[int8]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    echo "other processes use $(busy_pct)% of the CPUs now (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    # the parts a round runs: "lin core", and on AMX also "linnoamx corenoamx"
    parts="lin core" ratios="lin:bfloat16 lin:float32 core:bfloat16"
    if grep -qw amx_int8 /proc/cpuinfo && grep -qw avx512_vnni /proc/cpuinfo &&
        grep -qw avx512_bf16 /proc/cpuinfo; then
        parts="$parts linnoamx corenoamx"
        ratios="$ratios linnoamx:bfloat16 corenoamx:bfloat16"
    fi
    # ONNX Runtime's int8 of the onnx part's block (its check against
    # PyTorch's float32 outputs in the first round)
    ort_i8=0 ort_check=(--check-dir "$BB/onnx_check")
    rm -f "$BB/i8_ort" "$BB/i8_ort.ms"
    if skipped int8_ort; then
        WHY[int8_ort]="BENCH_SKIP"
    elif [ ! -f "$BB/block.onnx" ] || [ ! -f "$BB/node_modules/onnxruntime-node/package.json" ]; then
        WHY[int8_ort]="the onnx part's block.onnx and onnxruntime-node are not in $BB (${WHY[onnx]:-the onnx part makes them})"
    else
        run_step 300 "$PYTHON" bench/ort_quant.py "$BB/block.onnx" "$BB/block_int8.onnx"
        case $? in
        0) ort_i8=1 ;;
        3) WHY[int8_ort]=$(step_reason) ;;
        *) FAILED=1 WHY[int8_ort]="bench/ort_quant.py failed: $(step_reason)" ;;
        esac
    fi
    # the dot products' peaks (vpdpbusd, vdpbf16ps) the Linears run under
    for dt in int8 bfloat16; do
        run_step 60 "$BB"/bench_core peak --threads "$THREADS" --repeat 3 --dtype "$dt" ||
            [ $? = 3 ] || { FAILED=1; WHY[int8]="bench_core peak --dtype $dt failed"; }
    done
    for r in $(seq "$INT8_ROUNDS"); do
        for part in $parts; do
            mode=linears dts="int8 bfloat16 float32" flags=()
            case $part in
            core*) mode=core dts="int8 bfloat16" && read -ra flags <<<"$MODEL_FLAGS" ;;&
            *noamx) dts="int8 bfloat16" flags+=(--amx off) ;;
            esac
            for dt in $dts; do
                run_step 300 "$BB"/bench_core "$mode" --batch 8 --len 128 --threads "$THREADS" \
                    --repeat "$REPEAT" --warmup "$WARMUP" "${flags[@]}" --dtype "$dt" \
                    --name "i8_${part}_${dt}_$r" ||
                    { FAILED=1; WHY[int8]="bench_core $mode --dtype $dt ${flags[*]} failed: $(step_reason)"; }
            done
        done
        if [ "$ort_i8" = 1 ]; then
            if run_step 300 env NODE_PATH="$BB/node_modules" node bench/ort_bench.js \
                "$BB/block_int8.onnx" --int8 --threads "$THREADS" --shapes 8x128 \
                --repeat "$REPEAT" --warmup "$WARMUP" "${ort_check[@]}"; then
                a=${R[ort_i8_8x128_median_ms]:-} b=${R[i8_core_int8_${r}_median_ms]:-}
                [ -n "$a" ] && [ -n "$b" ] && printf '%s\n' "$(calc "$a / $b")" >>"$BB/i8_ort"
                [ -n "$a" ] && echo "$a" >>"$BB/i8_ort.ms"
            else
                ort_i8=0 FAILED=1 WHY[int8_ort]="bench/ort_bench.js --int8 failed: $(step_reason)"
            fi
            ort_check=()
        fi
        for k in $ratios; do
            a=${R[i8_${k%:*}_${k#*:}_${r}_median_ms]:-} b=${R[i8_${k%:*}_int8_${r}_median_ms]:-}
            [ -n "$a" ] && [ -n "$b" ] && printf '%s\n' "$(calc "$a / $b")" >>"$BB/i8_${k%:*}_${k#*:}"
        done
        # the library road: oneDNN's matmul on the same Linears, each dtype
        # against attnd's of this round (bench/dnnl_bench.c); on AMX also
        # both without it (oneDNN's ISA capped by ONEDNN_MAX_CPU_ISA)
        lins=lin && [[ $parts == *linnoamx* ]] && lins="lin linnoamx"
        for lin in $lins; do
            isa=() && [ "$lin" = linnoamx ] && isa=(env ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16)
            for dt in int8 bfloat16; do
                [ -x "$BB/dnnl_bench" ] || break 2
                run_step 300 "${isa[@]}" "$BB"/dnnl_bench --dtype "$dt" --batch 8 --len 128 \
                    --threads "$THREADS" --repeat "$REPEAT" --warmup "$WARMUP" --name "i8_dnnl${lin}_${dt}_$r" ||
                    { FAILED=1; WHY[int8_dnnl]="bench/dnnl_bench.c --dtype $dt failed: $(step_reason)"; continue; }
                a=${R[i8_dnnl${lin}_${dt}_${r}_median_ms]:-} b=${R[i8_${lin}_${dt}_${r}_median_ms]:-}
                [ -n "$a" ] && [ -n "$b" ] && printf '%s\n' "$(calc "$a / $b")" >>"$BB/i8_dnnl${lin}_$dt"
            done
        done
    done
    for f in "$BB"/i8_dnnllin*_int8 "$BB"/i8_dnnllin*_bfloat16; do
        [ -s "$f" ] || continue
        k=${f##*/i8_} how=""
        [[ $k == *noamx* ]] && how=" without AMX"
        R[i8_${k}_ratio]=$(median "$f")
        echo "-> Linears ${k#*_}$how: oneDNN's matmul / attnd (medians, $INT8_ROUNDS rounds) = $(fmt "${R[i8_${k}_ratio]}" 3) ($(tr '\n' ' ' <"$f"))"
        rm -f "$f"
    done
    if [ -s "$BB/i8_ort" ]; then
        R[i8_ort_ratio]=$(median "$BB/i8_ort") R[i8_ort_median_ms]=$(median "$BB/i8_ort.ms")
        echo "-> block B=8 L=128: ONNX Runtime's int8 / attnd int8 (medians, $INT8_ROUNDS rounds) = $(fmt "${R[i8_ort_ratio]}" 3) ($(tr '\n' ' ' <"$BB/i8_ort")); ONNX Runtime's median of medians $(fmt "${R[i8_ort_median_ms]}" 1) ms"
    fi
    rm -f "$BB/i8_ort" "$BB/i8_ort.ms"
    for k in ${ratios//:/_}; do
        if [ -s "$BB/i8_$k" ]; then
            R[i8_${k}_ratio]=$(median "$BB/i8_$k")
            for dt in int8 bfloat16 float32; do
                [ -f "$BB/i8_${k%_*}_$dt.ms" ] && continue
                for r in $(seq "$INT8_ROUNDS"); do
                    v=${R[i8_${k%_*}_${dt}_${r}_median_ms]:-}
                    [ -n "$v" ] && echo "$v" >>"$BB/i8_${k%_*}_$dt.ms"
                done
            done
            echo "-> ${k%_*}: ${k#*_} / int8 (medians, $INT8_ROUNDS rounds) = $(fmt "${R[i8_${k}_ratio]}" 3) ($(tr '\n' ' ' <"$BB/i8_$k"))"
        fi
        rm -f "$BB/i8_$k"
    done
    for f in "$BB"/i8_*.ms; do
        [ -f "$f" ] || continue
        n=${f##*/} n=${n%.ms}
        R[${n}_median_ms]=$(median "$f")
        echo "   ${n#i8_}: median of the rounds' medians $(fmt "${R[${n}_median_ms]}" 1) ms"
        rm -f "$f"
    done
    # the four Linears' operations (bench_core's GFLOP/s times its best ms),
    # and their share of the dot product's peak
    g=${R[i8_lin_int8_1_gflops]:-} b=${R[i8_lin_int8_1_best_ms]:-} lin_gop=""
    [ -n "$g" ] && [ -n "$b" ] && lin_gop=$(calc "$g * $b / 1000")
    for k in int8:int8 bfloat16:bf16; do
        p=${R[peak_${k#*:}_gflops]:-} ms=${R[i8_lin_${k%:*}_median_ms]:-}
        [ -n "$lin_gop" ] && [ -n "$p" ] && [ -n "$ms" ] &&
            echo "-> Linears ${k%:*}: $(fmt "$(calc "$lin_gop / $ms * 1000")" 0) GOP/s, $(fmt "$(calc "100 * $lin_gop / $ms * 1000 / $p")" 0)% of the ${k%:*} dot product's peak ($(fmt "$p" 0) GOP/s)"
    done
    if [ ! -f "$BB/bert_base_dir/model.safetensors" ]; then
        run_step 600 "$PYTHON" tools/fixtures/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors" ||
            WHY[int8]="tools/fixtures/make_bert_dir.py failed"
    fi
    if [ -f "$BB/bert_base_dir/model.safetensors" ]; then
        for dt in float32 int8; do
            start_daemon --model-dir "$BB/bert_base_dir" --dtype "$dt" --forward-threads "$THREADS"
            if [ "$ready" != 1 ]; then
                FAILED=1 WHY[int8]="attnd --dtype $dt did not become ready within 30 s (log: $BB/attnd.log)"
                stop_daemon
                continue
            fi
            load_kb=$(vm_kib "$DAEMON_PID" VmRSS)
            R[i8_rss_${dt}_load_kb]=$load_kb
            if run_step 600 "$PYTHON" bench/int8_bench.py warm --port "$PORT" \
                --dir "$BB/bert_base_dir"; then
                after_kb=$(vm_kib "$DAEMON_PID" VmRSS) peak_kb=$(vm_kib "$DAEMON_PID" VmHWM)
                R[i8_rss_${dt}_kb]=$after_kb
                parts=$(awk '$1 == "RssAnon:" || $1 == "RssFile:" { printf " %s %d MiB", $1, $2 / 1024 }' \
                    "/proc/$DAEMON_PID/status")
                echo "   $dt: VmRSS $((load_kb / 1024)) MiB once ready, $((after_kb / 1024)) MiB after a forward (of it$parts), peak $((peak_kb / 1024)) MiB"
            else
                FAILED=1 WHY[int8]="bench/int8_bench.py warm ($dt) failed: $(step_reason)"
            fi
            if [ "$dt" = int8 ]; then
                if skipped int8_http; then
                    WHY[int8_http]="BENCH_SKIP"
                else
                    OPENBLAS_NUM_THREADS=1 run_step 1800 "$PYTHON" bench/int8_bench.py http \
                        --port "$PORT" --dir "$BB/bert_base_dir" --threads "$THREADS" \
                        --rounds "$INT8_ROUNDS" --per-round 3
                    case $? in
                    0) ;;
                    3) WHY[int8_http]=$(step_reason) ;;
                    *) FAILED=1 WHY[int8_http]="bench/int8_bench.py http failed: $(step_reason)" ;;
                    esac
                fi
            fi
            stop_daemon
        done
        if [ -n "${R[i8_rss_float32_kb]:-}" ] && [ -n "${R[i8_rss_int8_kb]:-}" ]; then
            R[i8_rss_load_ratio]=$(calc "${R[i8_rss_int8_load_kb]} / ${R[i8_rss_float32_load_kb]}")
            R[i8_rss_ratio]=$(calc "${R[i8_rss_int8_kb]} / ${R[i8_rss_float32_kb]}")
            echo "-> BERT-base dir VmRSS once ready: int8 $((R[i8_rss_int8_load_kb] / 1024)) MiB / float32 $((R[i8_rss_float32_load_kb] / 1024)) MiB = $(fmt "${R[i8_rss_load_ratio]}" 3); after a forward: int8 $((R[i8_rss_int8_kb] / 1024)) MiB / float32 $((R[i8_rss_float32_kb] / 1024)) MiB = $(fmt "${R[i8_rss_ratio]}" 3)"
        fi
        [ -n "${R[i8_http_ratio]:-}" ] &&
            echo "-> B=8 L=128 token ids, $THREADS threads: PyTorch quantize_dynamic ${R[i8_torch_ms]} ms / attnd int8 over HTTP ${R[i8_http_ms]} ms = $(fmt "${R[i8_http_ratio]}" 3) (median of the rounds' ratios ${R[i8_http_paired]})"
        # the ratio's ceiling on this CPU: the 12 layers' Linears alone at
        # the vpdpbusd peak, nothing else, against PyTorch's time
        if [ -n "${R[i8_http_ratio]:-}" ] && [ -n "${R[peak_int8_gflops]:-}" ] && [ -n "$lin_gop" ]; then
            R[i8_http_floor_ms]=$(calc "12 * $lin_gop / ${R[peak_int8_gflops]} * 1000")
            R[i8_http_ceiling]=$(calc "${R[i8_torch_ms]} / ${R[i8_http_floor_ms]}")
            echo "   its ceiling here: the 12 layers' Linears alone at the vpdpbusd peak take $(fmt "${R[i8_http_floor_ms]}" 1) ms, so PyTorch / attnd <= $(fmt "${R[i8_http_ceiling]}" 2)"
        fi
    fi
    echo "after the part, other processes use $(busy_pct)% of the CPUs (load average $(cut -d' ' -f1-3 /proc/loadavg))"
fi

bench_part_done
