#!/bin/bash
# big_host.sh - the targets only a big host can measure (16 threads, AMX), in one run of about 8 minutes
# (16 threads): what the lent 16-core machine measures (DEVELOPERS.md, "The lent
# machine").  Needs a bundle of the built binaries (bundle.sh, below) and, for
# the peers, PyTorch and transformers; a peer that cannot run is said and
# skipped.
#
#   bash bench/big_host.sh CARRY_DIR [THREADS]      # THREADS: every CPU
#
# CARRY_DIR holds bin/bench_core, bin/attnd and lib/ (their shared libraries).  In one run,
# each a median, the figures each target needs:
#   1. bench_core peak: the float32 FMA peak of THREADS threads;
#   2. bench_core linears, BERT-base's four Linears at B=8 L=128, float32 and
#      bfloat16: GFLOP/s, float32's as a share of the peak (target >= 70%);
#   3. bench_core core, the block at B=8 L=128 with attention weights per head,
#      float32 and bfloat16, against bench/torch_bench.py's PyTorch block in
#      float32 and under bfloat16 autocast (target: attnd bfloat16 faster than
#      PyTorch's autocast);
#   4. ModernBERT-base at L=8192, attention none, all 22 layers: bench_core
#      core --block modernbert in bfloat16 against transformers' ModernBertModel
#      in bfloat16 (bench/modernbert_hf.py; target: attnd faster);
#   5. model.dtype int8: steps 2 and 3's bench_core runs in int8 (its kernel on
#      this CPU: amx_int8 where AMX is); the four Linears in PyTorch, bfloat16
#      autocast and quantize_dynamic (oneDNN's kernels: bench/torch_bench.py
#      linears; target: attnd's own kernels faster); CARRY_DIR/bin/attnd --dtype int8
#      serving a BERT-base-sized directory (tools/fixtures/make_bert_dir.py)
#      over HTTP, token ids in, against PyTorch's quantize_dynamic of the
#      same weights on THREADS threads (bench/int8_bench.py; target: attnd
#      faster); Debian's oneDNN matmul on the same Linears, int8 and
#      bfloat16, where CARRY_DIR/bin/dnnl_bench is (bench/dnnl_bench.c;
#      libdnnl's 40 MB and attnd's libraries pass the 64 MiB the lent
#      machine's carry holds, and there PyTorch's linears step stands for
#      oneDNN).
# Each step prints its command first.  Ends with a summary of the ratios.
set -u
CARRY=${1:?usage: bench/big_host.sh CARRY_DIR [THREADS]}
THREADS=${2:-$(nproc)}
PY=${PYTHON:-python3}
export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BC="$CARRY/bin/bench_core"
[ -x "$BC" ] || { echo "big_host: no $BC (bundle.sh copies it)"; exit 1; }
declare -A R

# Runs a command, echoing it and its output; keeps its RESULT key=value pairs.
step() {
    echo "+ $*"
    local out
    out=$("$@" 2>&1)
    local rc=$?
    echo "$out"
    local kv
    for kv in $(echo "$out" | sed -n 's/^RESULT //p'); do
        R[${kv%%=*}]=${kv#*=}
    done
    return $rc
}

calc() { awk "BEGIN { printf \"%.4g\", $1 }"; }

echo "big_host: $(nproc) CPUs, $THREADS threads; $(grep -m1 'model name' /proc/cpuinfo)"
step "$BC" info
step "$BC" peak --threads "$THREADS" --repeat 5
for dt in float32 bfloat16 int8; do
    step "$BC" linears --batch 8 --len 128 --threads "$THREADS" --repeat 20 --warmup 3 \
        --dtype "$dt" --name "lin_$dt"
    step "$BC" core --batch 8 --len 128 --threads "$THREADS" --repeat 20 --warmup 3 \
        --dtype "$dt" --name "core_$dt"
done
step env OPENBLAS_NUM_THREADS=1 "$PY" bench/torch_bench.py time --threads "$THREADS" \
    --shapes 8x128 --repeat 20 --warmup 3
step env OPENBLAS_NUM_THREADS=1 "$PY" bench/torch_bench.py time --threads "$THREADS" \
    --shapes 8x128 --repeat 20 --warmup 3 --autocast
step env OPENBLAS_NUM_THREADS=1 "$PY" bench/torch_bench.py linears --threads "$THREADS" \
    --repeat 20 --warmup 3
# Debian's oneDNN matmul (bench/dnnl_bench.c), where the carry holds it and libdnnl
if [ -x "$CARRY/bin/dnnl_bench" ]; then
    for dt in int8 bfloat16; do
        step "$CARRY/bin/dnnl_bench" --dtype "$dt" --batch 8 --len 128 --threads "$THREADS" \
            --repeat 20 --warmup 3 --name "dnnl_$dt"
    done
else
    echo "big_host: no $CARRY/bin/dnnl_bench: oneDNN's matmul skipped"
fi
step "$BC" core --block modernbert --batch 1 --len 8192 --attention none --threads "$THREADS" \
    --repeat 2 --warmup 1 --dtype bfloat16 --name mb_bf16
step "$PY" bench/modernbert_hf.py --seq-len 8192 --runs 2 --threads "$THREADS" --dtype bfloat16

# int8 over HTTP: attnd int8 against PyTorch's quantize_dynamic, one BERT-base-sized directory.
BERT=$(mktemp -d /tmp/big_host_bert-XXXXXX)
trap 'rm -rf "$BERT"' EXIT
if step "$PY" tools/fixtures/make_bert_dir.py "$BERT/dir" "$BERT/stack.safetensors" &&
    [ -x "$CARRY/bin/attnd" ]; then
    echo "+ $CARRY/bin/attnd --model-dir $BERT/dir --dtype int8 --forward-threads $THREADS --port 0 &"
    "$CARRY/bin/attnd" --model-dir "$BERT/dir" --dtype int8 --forward-threads "$THREADS" \
        --host 127.0.0.1 --port 0 --no-access-log 2>"$BERT/attnd.log" &
    pid=$! port=""
    for _ in $(seq 300); do
        port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$BERT/attnd.log" | head -n 1)
        [ -n "$port" ] && grep -q 'attnd: ready' "$BERT/attnd.log" && break
        sleep 0.2
    done
    if grep -q 'attnd: ready' "$BERT/attnd.log"; then
        grep 'attnd: ready' "$BERT/attnd.log"
        step "$PY" bench/int8_bench.py warm --port "$port" --dir "$BERT/dir" &&
            step env OPENBLAS_NUM_THREADS=1 "$PY" bench/int8_bench.py http --port "$port" \
                --dir "$BERT/dir" --threads "$THREADS" --rounds 3 --per-round 3
    else
        echo "big_host: attnd --dtype int8 did not become ready:"
        cat "$BERT/attnd.log"
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
else
    echo "big_host: no BERT directory or no $CARRY/bin/attnd: int8 over HTTP skipped"
fi

echo
echo "summary ($THREADS threads):"
peak=${R[peak_gflops]:-}
lin=${R[lin_float32_gflops]:-}
[ -n "$peak" ] && [ -n "$lin" ] &&
    echo "  float32 Linears: $lin GFLOP/s = $(calc "100 * $lin / $peak")% of the FMA peak $peak (target >= 70%)"
a=${R[lin_float32_median_ms]:-} b=${R[lin_bfloat16_median_ms]:-}
[ -n "$a" ] && [ -n "$b" ] && echo "  Linears float32 / bfloat16: $(calc "$a / $b")x ($a / $b ms)"
pt=""
for k in "${!R[@]}"; do
    case $k in torch_bf16_*_8x128_median_ms) pt=${R[$k]} ;; esac
done
c=${R[core_bfloat16_median_ms]:-}
[ -n "$c" ] && [ -n "$pt" ] &&
    echo "  block B=8 L=128 heads: PyTorch autocast / attnd bfloat16 = $(calc "$pt / $c")x ($pt / $c ms; target > 1)"
m=${R[mb_bf16_median_ms]:-} h=${R[mb_hf_bfloat16_median_s]:-}
[ -n "$m" ] && [ -n "$h" ] &&
    echo "  ModernBERT L=8192: transformers bf16 / attnd bf16 = $(calc "1000 * $h / $m")x ($h s / $(calc "$m / 1000") s; target > 1)"
for dt in bf16:bfloat16 i8:int8; do
    a=${R[torch_lin_${dt%:*}_median_ms]:-} b=${R[lin_${dt#*:}_median_ms]:-}
    [ -n "$a" ] && [ -n "$b" ] &&
        echo "  Linears ${dt#*:}: PyTorch (oneDNN) / attnd = $(calc "$a / $b")x ($a / $b ms; target > 1)"
done
for dt in int8 bfloat16; do
    a=${R[dnnl_${dt}_median_ms]:-} b=${R[lin_${dt}_median_ms]:-}
    [ -n "$a" ] && [ -n "$b" ] &&
        echo "  Linears $dt: oneDNN's matmul / attnd = $(calc "$a / $b")x ($a / $b ms; keep what wins)"
done
for k in lin core; do
    a=${R[${k}_bfloat16_median_ms]:-} b=${R[${k}_int8_median_ms]:-}
    [ -n "$a" ] && [ -n "$b" ] &&
        echo "  $k bfloat16 / int8: $(calc "$a / $b")x ($a / $b ms)"
done
[ -n "${R[i8_http_ratio]:-}" ] &&
    echo "  BERT-base B=8 L=128 over HTTP: PyTorch quantize_dynamic / attnd int8 = ${R[i8_http_ratio]}x (${R[i8_torch_ms]} / ${R[i8_http_ms]} ms; target > 1)"
exit 0
