#!/bin/bash
# big_host.sh - the targets only a big host can measure (16 threads, AMX), in one run of about 6 minutes
# (16 threads): what the lent 16-core machine measures (DEVELOPERS.md, "The lent
# machine").  Needs a bundle of the built binaries (bundle.sh, below) and, for
# the peers, PyTorch and transformers; a peer that cannot run is said and
# skipped.
#
#   bash bench/big_host.sh CARRY_DIR [THREADS]      # THREADS: every CPU
#
# CARRY_DIR holds bin/bench_core and lib/ (its shared libraries).  In one run,
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
#      in bfloat16 (bench/modernbert_hf.py; target: attnd faster).
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
for dt in float32 bfloat16; do
    step "$BC" linears --batch 8 --len 128 --threads "$THREADS" --repeat 20 --warmup 3 \
        --dtype "$dt" --name "lin_$dt"
    step "$BC" core --batch 8 --len 128 --threads "$THREADS" --repeat 20 --warmup 3 \
        --dtype "$dt" --name "core_$dt"
done
step env OPENBLAS_NUM_THREADS=1 "$PY" bench/torch_bench.py time --threads "$THREADS" \
    --shapes 8x128 --repeat 20 --warmup 3
step env OPENBLAS_NUM_THREADS=1 "$PY" bench/torch_bench.py time --threads "$THREADS" \
    --shapes 8x128 --repeat 20 --warmup 3 --autocast
step "$BC" core --block modernbert --batch 1 --len 8192 --attention none --threads "$THREADS" \
    --repeat 2 --warmup 1 --dtype bfloat16 --name mb_bf16
step "$PY" bench/modernbert_hf.py --seq-len 8192 --runs 2 --threads "$THREADS" --dtype bfloat16

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
exit 0
