#!/usr/bin/env bash
# bench/run.sh - `make bench`: attnd's performance against the issue-4 targets,
# every figure measured in this one run and printed under the command that
# made it, then a summary table.  Needs build/attnd, build/libattnd_core.a and
# build/libattnd_app.a (the Makefile's bench target builds them first); compiles the C benchmarks
# into build/bench/ itself.  See docs/performance.md for what each figure means.
#
# Model everywhere: one BERT-base-sized block - d_model 768, 12 heads, d_ff
# 3072, gelu, post-norm, 1 layer - with per-head attention weights computed.
#
#   1. core       build/bench/bench_core core: enc_forward, best and median ms,
#                 GFLOP/s, at B=1 L=128, B=8 L=128, B=1 L=512; timed again
#                 before each later PyTorch round, each figure the best of
#                 the rounds
#   2. roofline   build/bench/bench_core roofline: cblas_sgemm 2048^3, GFLOP/s;
#                 and the ceiling: bench_core peak (the CPUs' float32 FMA
#                 peak) and bench_core linears (the block's four Linears
#                 alone on attnd's kernel, per shape)
#   3. torch      bench/torch_bench.py: PyTorch, one process per (torch threads,
#                 OpenBLAS threads) pair, best per shape           [optional]
#   4. onnx       bench/torch_bench.py export + bench/ort_bench.js: ONNX Runtime
#                 through onnxruntime-node (npm, into build/bench)  [optional]
#   5. http       build/bench/wake_latency (a thread woken on an idle CPU, and
#                 on one attnd's spinners keep busy), the core again at B=1
#                 L=128 (the HTTP ratios' denominator), then build/attnd on
#                 127.0.0.1 + build/bench/http_bench: latency p50/p99 (base64,
#                 JSON) at B=1, and at B=8 L=128 with attention heads and none
#                 (against the daemon's compute median, with its page faults
#                 per request), throughput (32 clients); then the transport alone
#                 (bench/transport_floor.py), for reference
#   6. memory     one sequence of L=16384 with attention "none": the core's peak
#                 resident memory (bench_core), and the daemon's after serving
#                 it over HTTP in base64 (VmHWM); then the daemon's after serving
#                 per-head weights of a window 64 as CSR (bench/long_memory.py)
#   7. long       long context (issue 18): bench_core core with sparse masks
#                 (--mask), attention none, against the four Linears alone
#                 and the dense forward at the same L: window 64 (+16 global
#                 positions) at L=16384, its scaling from L=2048 to 32768,
#                 causal at L=4096, fixed / strided / BigBird blocks against
#                 their ideal by allowed pairs, an explicit block-diagonal
#                 attn mask against its documents alone
#   8. positions  RoPE and ALiBi against none (issue 22), interleaved rounds;
#                 window 64 with each: the same scores computed
#   9. startup    a BERT-base-sized Hugging Face directory (tools/make_bert_dir.py):
#                 attnd --model-dir --check-config against reading it once, and
#                 against the same stack from a PyTorch-named file; the daemon's
#                 ready time and peak resident memory after one request; the same
#                 for an XLM-R-base-sized directory (250,002 x 768 word table),
#                 its peak against its file's size (bench/startup.py, issue 31);
#                 then (ids) the daemon's compute median with token ids in
#                 against embeddings in, B=8 L=128, interleaved rounds, on the
#                 BERT-base-sized directory (bench/ids_bench.py, issue 31)
#  10. modernbert ModernBERT-base (issue 23; bench_core --block modernbert: D 768,
#                 12 heads, F 1152 GeGLU, 22 layers, every 3rd global, window
#                 64) at B=1 L=8192, attention none: the forward against its
#                 ideal (the four Linears alone and one global layer, scaled by
#                 each layer's pairs), its peak resident memory, and PyTorch
#                 running the same stack as transformers does on a CPU
#                 (bench/modernbert_torch.py: dense scores with a sliding-window
#                 mask)                                         [PyTorch optional];
#                 B=8 L=128 per Linear-FLOP against the BERT block, interleaved
#  11. text       text in (issue 32): build/bench/tok_bench (attnd's C tokenizer)
#                 against Hugging Face's tokenizers (bench/tok_hf.mjs, the npm
#                 Node binding), one thread, tokens/s on the same corpus
#                 (bench/text_corpus.py: 5,000 sentences from the word list)
#                 with bert-uncased (WordPiece), roberta (byte-level BPE), xlmr
#                 (Unigram) of tests/fixtures/tokenizers and the BERT-base-sized
#                 directory's 30,522-token WordPiece (tools/make_bert_dir.py
#                 --tokenizer), the same token count and ids hash checked; then
#                 8 texts of 126 tokens: the C tokenizer's time for them against
#                 the daemon's compute median for the same batch as input_ids,
#                 and (bench/text_bench.py, interleaved rounds) /v1/encode's p50
#                 with "text" against "input_ids", /v1/embeddings' p50 against
#                 its compute median; mixed lengths (bench/batch_bench.py): each
#                 sequence alone, merged by the daemon, against groups of 8 padded
#                 to their longest                            [HF peer optional]
#  12. bf16       model.dtype bfloat16 against float32 (issue 33), interleaved
#                 rounds: bench_core linears (BERT-base's four Linears, B=8
#                 L=128) and bench_core core (the block, B=8 L=128, weights
#                 per head; and B=1 L=4096 without) with --dtype bfloat16 and
#                 float32, medians' ratios;
#                 the widening kernel's (bfloat16-wide) for reference, the
#                 block with --kernels openblas (no AVX-512) both ways; and the
#                 BERT-base-sized directory's --check-config peak resident
#                 memory with --dtype bfloat16 against float32
#  13. summary    each target of issues 4, 18, 19, 22, 23, 31, 32 and 33: met or not in this run
#
# Environment (defaults in brackets):
#   BENCH_REPEAT [20]           timed runs per figure (core, PyTorch, ONNX Runtime)
#   BENCH_WARMUP [3]            untimed runs before them
#   BENCH_ROOFLINE_REPEAT [5]   timed sgemm calls
#   BENCH_THREADS [2]           enc_set_threads for the core; OpenBLAS threads for
#                               the roofline; intra_op threads for ONNX Runtime
#   BENCH_TORCH_GRID ["1:1 1:2 2:1 2:2"]
#                               torch.set_num_threads : OpenBLAS threads pairs tried
#   BENCH_TORCH_ROUNDS [2]      times the whole grid runs (best of all counts);
#                               the core runs as many rounds
#   BENCH_HTTP_SECONDS [5]      length of each HTTP measurement
#   BENCH_HTTP_MAX_REQUESTS [400] latency measurements stop after this many requests
#   BENCH_CLIENTS [32]          concurrent clients in the throughput test
#   BENCH_SKIP [""]             parts to leave out: any of "torch onnx http memory long
#                               positions startup ids modernbert mbtorch text texthf
#                               bf16"
#                               (mbtorch: the ModernBERT part's PyTorch peer, about 6
#                               minutes; ids: token ids against embeddings, about 2
#                               minutes; texthf: the text part's Hugging Face peer)
#   BENCH_IDS_ROUNDS [5]        rounds of ids / embeddings in the ids part (3 requests
#                               of each per round)
#   BENCH_BF16_ROUNDS [3]       rounds of the bf16 part (each: float32, bfloat16)
#   BENCH_TEXT_SENTENCES [5000] sentences in the text part's corpus
#   BENCH_TEXT_PASSES [5]       timed passes over it per tokenizer (each side)
#   BENCH_TEXT_ROUNDS [5]       rounds of text / ids / embeddings requests in the text
#                               part (2 requests of each per round)
#   BENCH_MB_LEN [8192]         the ModernBERT part's sequence length
#   BENCH_MB_ROUNDS [5]         rounds of ModernBERT / BERT at B=8 L=128
#   BENCH_POS_ROUNDS [3]        rounds of none / rope / alibi in the positions part
#   BENCH_LONG_LEN [16384]      sequence length of the long-context patterns
#   BENCH_MEMORY_LEN [16384]    sequence length of the memory test
#   BENCH_ORT_VERSION [1.30.0]  onnxruntime-node version npm installs
#   BENCH_NPM_TIMEOUT [180]     seconds npm install may take
#   PYTHON [/usr/bin/python3]   CC [cc]
#
# Exit status: 0 when every part that could run did run (targets not met do
# not fail it; optional parts that cannot run here are skipped with the
# reason); 1 when a measurement failed or build/attnd is missing.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

REPEAT=${BENCH_REPEAT:-20}
WARMUP=${BENCH_WARMUP:-3}
ROOF_REPEAT=${BENCH_ROOFLINE_REPEAT:-5}
THREADS=${BENCH_THREADS:-2}
TORCH_GRID=${BENCH_TORCH_GRID:-"1:1 1:2 2:1 2:2"}
TORCH_ROUNDS=${BENCH_TORCH_ROUNDS:-2}
HTTP_SECONDS=${BENCH_HTTP_SECONDS:-5}
HTTP_MAX=${BENCH_HTTP_MAX_REQUESTS:-400}
CLIENTS=${BENCH_CLIENTS:-32}
MEM_LEN=${BENCH_MEMORY_LEN:-16384}
SKIP=" ${BENCH_SKIP:-} "
ORT_VERSION=${BENCH_ORT_VERSION:-1.30.0}
NPM_TIMEOUT=${BENCH_NPM_TIMEOUT:-180}
PYTHON=${PYTHON:-/usr/bin/python3}
CC=${CC:-cc}

BB=build/bench                     # everything this script writes
SHAPES="1x128 8x128 1x512"
MODEL_FLAGS="--d-model 768 --n-heads 12 --d-ff 3072 --activation gelu"
WARN="-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
      -Wpointer-arith -Wcast-qual -Wundef -Wvla"

declare -A R=()      # RESULT key -> value, from every step
declare -A WHY=()    # part -> why it was skipped or failed
FAILED=0
DAEMON_PID=""
T_START=$(date +%s)

# ---- helpers ---------------------------------------------------------------

section() { printf '\n== %s ==\n' "$*"; }

skipped() { [[ $SKIP == *" $1 "* ]]; }

# calc EXPR: awk arithmetic on numbers this script measured.
calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }

# holds EXPR: true when the awk comparison holds.
holds() { awk "BEGIN { exit !($1) }"; }

# fmt N DIGITS: a number rounded for printing.
fmt() { awk -v v="$1" -v d="$2" 'BEGIN { printf "%.*f", d, v }'; }

# run_step SECONDS CMD...: prints "$ CMD", runs it for at most SECONDS, prints
# its output (indented) and records its "RESULT key=value" lines in R.
# Returns the command's status (3 = cannot run here, 124 = out of time).
run_step() {
    local limit=$1 out=$BB/step.out rc line kv
    shift
    printf '$ %s\n' "$*"
    timeout --kill-after=5 "$limit" "$@" >"$out" 2>&1
    rc=$?
    while IFS= read -r line; do
        if [[ $line == RESULT\ * ]]; then
            for kv in ${line#RESULT }; do R[${kv%%=*}]=${kv#*=}; done
            echo "$line" >>"$BB/results.txt"
        else
            printf '    %s\n' "$line"
        fi
    done <"$out"
    [ "$rc" = 124 ] && printf '    (stopped: over %s s)\n' "$limit"
    return "$rc"
}

# The reason a step printed after "SKIP: ", or its last line.
step_reason() {
    local r
    r=$(sed -n 's/^SKIP: //p' "$BB/step.out" | head -n 1)
    [ -n "$r" ] || r=$(tail -n 1 "$BB/step.out")
    printf '%s' "$r"
}

# busy_pct: the share of all CPUs (in %) that other processes use, sampled for
# one second while this script does nothing (from /proc/stat).
busy_pct() {
    local a b
    a=$(head -n 1 /proc/stat)
    sleep 1
    b=$(head -n 1 /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN {
        n = split(a, x); split(b, y); total = 0; idle = 0
        for (i = 2; i <= 9 && i <= n; i++) total += y[i] - x[i]   # not guest time: it is in user
        idle = (y[5] - x[5]) + (y[6] - x[6])   # idle + iowait
        printf "%.0f", (total > 0 ? 100 * (total - idle) / total : 0) }'
}

# ticks_now: "BUSY TOTAL OWN" - the machine's busy and total CPU ticks (all
# CPUs, /proc/stat) and the CPU ticks this script and its finished children
# have used (/proc/self/stat utime stime cutime cstime), all in USER_HZ.
ticks_now() {
    local own
    own=$(sed 's/.*) //' "/proc/$$/stat" | awk '{ print $12 + $13 + $14 + $15 }')
    head -n 1 /proc/stat | awk -v own="$own" '{
        t = 0; for (i = 2; i <= 9; i++) t += $i
        print t - $5 - $6, t, own }'
}

# health PORT: the status line of GET /health (bash's /dev/tcp; no curl needed).
health() {
    # shellcheck disable=SC2016 # $1 is expanded by the inner bash
    timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" &&
        printf "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3 && head -n 1 <&3' _ "$1" \
        2>/dev/null
}

stop_daemon() {
    [ -n "$DAEMON_PID" ] || return 0
    kill -TERM "$DAEMON_PID" 2>/dev/null
    for _ in $(seq 50); do
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        sleep 0.2
    done
    kill -KILL "$DAEMON_PID" 2>/dev/null
    wait "$DAEMON_PID" 2>/dev/null
    DAEMON_PID=""
}
# start_daemon FLAGS...: starts build/attnd on 127.0.0.1 with FLAGS, sets
# DAEMON_PID, PORT (from "listening on http://127.0.0.1:PORT") and ready=1
# once GET /health answers 200 (within 30 s).
start_daemon() {
    printf '$ build/attnd %s --host 127.0.0.1 --port 0 --no-access-log 2>%s/attnd.log &\n' \
        "$*" "$BB"
    build/attnd "$@" --host 127.0.0.1 --port 0 --no-access-log 2>"$BB/attnd.log" &
    DAEMON_PID=$!
    PORT="" ready=0
    for _ in $(seq 150); do
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        [ -n "$PORT" ] || PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' \
            "$BB/attnd.log" | head -n 1)
        if [ -n "$PORT" ] && [[ $(health "$PORT") == *" 200"* ]]; then
            ready=1
            break
        fi
        sleep 0.2
    done
    sed 's/^/    /' "$BB/attnd.log"
}

# start_floor [ARGS]: bench/transport_floor.py on a free port, in the
# background: FLOOR_PID, and FLOOR_PORT once it listens ("" if it did not).
start_floor() {
    printf '$ %s bench/transport_floor.py --port 0 %s >%s/floor.log &\n' "$PYTHON" "$*" "$BB"
    "$PYTHON" bench/transport_floor.py --port 0 "$@" >"$BB/floor.log" 2>&1 &
    FLOOR_PID=$!
    FLOOR_PORT=""
    for _ in $(seq 50); do
        FLOOR_PORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$BB/floor.log")
        [ -n "$FLOOR_PORT" ] && break
        kill -0 "$FLOOR_PID" 2>/dev/null || break
        sleep 0.1
    done
}

# vm_kib PID FIELD: a /proc/PID/status field (VmRSS, VmHWM) in KiB.
vm_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null; }

trap stop_daemon EXIT
trap 'stop_daemon; exit 130' INT TERM

# ---- build -----------------------------------------------------------------

section "build"
for f in build/attnd build/libattnd_core.a build/libattnd_app.a; do
    if [ ! -f "$f" ]; then
        echo "bench: $f is missing; run 'make bench'"
        exit 1
    fi
done
mkdir -p "$BB"
: >"$BB/results.txt"
if ! CORE_LIBS=$(pkg-config --cflags --libs openblas jansson nettle) ||
    ! CURL_LIBS=$(pkg-config --cflags --libs libcurl); then
    echo "bench: pkg-config cannot find openblas, jansson or libcurl (make deps installs them)"
    exit 1
fi
# shellcheck disable=SC2086 # word splitting of flag lists is intended
{
    run_step 120 $CC -std=c11 -D_GNU_SOURCE -O2 $WARN -Icore -Ibench \
        bench/bench_core.c bench/bench_util.c -o $BB/bench_core build/libattnd_core.a \
        $CORE_LIBS -lm -lpthread &&
    run_step 120 $CC -std=c11 -D_GNU_SOURCE -O2 $WARN -Ibench \
        bench/http_bench.c bench/bench_util.c -o $BB/http_bench $CURL_LIBS -lm -lpthread &&
    run_step 120 $CC -std=c11 -D_GNU_SOURCE -O2 $WARN -Ibench -Iserver \
        bench/wake_latency.c bench/bench_util.c -o $BB/wake_latency build/libattnd_app.a -lm -lpthread
} || { echo "bench: cannot compile the benchmarks"; exit 1; }
# The tokenizer's bench links the core's tokenizer: utf8proc and Oniguruma too.
if TOK_LIBS=$(pkg-config --cflags --libs openblas jansson nettle libutf8proc oniguruma); then
    # shellcheck disable=SC2086
    run_step 120 $CC -std=c11 -D_GNU_SOURCE -O2 $WARN -Icore -Ibench \
        bench/tok_bench.c bench/bench_util.c -o $BB/tok_bench build/libattnd_core.a \
        $TOK_LIBS -lm -lpthread || { echo "bench: cannot compile bench/tok_bench.c"; exit 1; }
else
    WHY[text]="pkg-config cannot find libutf8proc or oniguruma (make deps installs them)"
fi

# ---- machine ---------------------------------------------------------------

section "machine"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
avx512=no
grep -qw avx512f /proc/cpuinfo && avx512=yes
echo "nproc $(nproc); CPU: ${cpu:-unknown}; AVX-512: $avx512; $(uname -sr)"
echo "attnd tree: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(
    [ -n "$(git status --porcelain -- core server config 2>/dev/null)" ] && echo ' + uncommitted changes')"
BUSY_START=$(busy_pct)
TICKS_START=$(ticks_now)
echo "before the run, other processes use ${BUSY_START}% of the CPUs (load average $(cut -d' ' -f1-3 /proc/loadavg)); anything else running skews every figure"
run_step 30 $BB/bench_core info || FAILED=1

# ---- 2. OpenBLAS roofline (first: the core's lines can then quote it) --------

section "OpenBLAS roofline: cblas_sgemm 2048x2048x2048"
run_step 120 $BB/bench_core roofline --n 2048 --threads "$THREADS" --repeat "$ROOF_REPEAT" \
    --warmup 1 || { FAILED=1; WHY[roofline]="bench_core roofline failed"; }

# The ceiling the core works under: the FMA units' peak, and the four Linears
# alone (no attention, norms, activation or copies) on the core's own kernel.
section "ceiling: the CPUs' FMA peak, and the block's four Linears alone"
run_step 60 $BB/bench_core peak --threads "$THREADS" --repeat 3 ||
    [ $? = 3 ] || { FAILED=1; WHY[peak]="bench_core peak failed"; }
for s in $SHAPES; do
    # shellcheck disable=SC2086
    run_step 120 $BB/bench_core linears --batch "${s%x*}" --len "${s#*x}" --threads "$THREADS" \
        --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS ||
        [ $? = 3 ] || { FAILED=1; WHY[linears]="bench_core linears failed"; }
done

# ---- 1. the core -----------------------------------------------------------

# core_round: bench_core core for every shape.  From the second round on,
# each figure kept is the best of the rounds (lowest best, lowest median).
CORE_ROUNDS=0
core_round() {
    local s prev_best prev_med prev_gf
    CORE_ROUNDS=$((CORE_ROUNDS + 1))
    for s in $SHAPES; do
        prev_best=${R[core_${s}_best_ms]:-} prev_med=${R[core_${s}_median_ms]:-}
        prev_gf=${R[core_${s}_gflops]:-}
        # shellcheck disable=SC2086
        run_step 180 $BB/bench_core core --batch "${s%x*}" --len "${s#*x}" --threads "$THREADS" \
            --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS ||
            { FAILED=1; WHY[core]="bench_core core failed"; continue; }
        if [ -n "$prev_best" ] && holds "$prev_best < ${R[core_${s}_best_ms]}"; then
            R[core_${s}_best_ms]=$prev_best R[core_${s}_gflops]=$prev_gf
        fi
        if [ -n "$prev_med" ] && holds "$prev_med < ${R[core_${s}_median_ms]}"; then
            R[core_${s}_median_ms]=$prev_med
        fi
        if [ "$CORE_ROUNDS" -gt 1 ]; then
            echo "    -> best of $CORE_ROUNDS rounds: ${R[core_${s}_best_ms]} ms, median ${R[core_${s}_median_ms]} ms"
        elif [ -n "${R[roofline_gflops]:-}" ]; then
            echo "    -> $(fmt "$(calc "100 * ${R[core_${s}_gflops]} / ${R[roofline_gflops]}")" 1)% of the sgemm roofline (${R[roofline_gflops]} GFLOP/s)"
        fi
    done
}

section "core: enc_forward with ENC_ATTN_HEADS, enc_set_threads($THREADS)"
core_round

# ---- 3. PyTorch ------------------------------------------------------------

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

# ---- 4. ONNX Runtime -------------------------------------------------------

section "ONNX Runtime (onnxruntime-node), intra_op threads $THREADS"
onnx_skip() { WHY[onnx]=$1; echo "skipped: $1"; }
if skipped onnx; then
    onnx_skip "BENCH_SKIP"
elif [ -n "${WHY[torch]:-}" ]; then
    onnx_skip "the export needs PyTorch, which did not run (${WHY[torch]})"
elif ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    onnx_skip "node and npm are not installed"
else
    ok=1
    if [ ! -f "$BB/node_modules/onnxruntime-node/package.json" ]; then
        # The package bundles its CPU binaries; its install script only fetches
        # CUDA ones (from api.nuget.org), which ONNXRUNTIME_NODE_INSTALL=skip
        # turns off.  npm's own chatter goes to build/bench/npm.log.
        printf '$ (cd %s && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-save --no-audit --no-fund --no-package-lock onnxruntime-node@%s)\n' "$BB" "$ORT_VERSION"
        if ! (cd "$BB" && ONNXRUNTIME_NODE_INSTALL=skip timeout "$NPM_TIMEOUT" npm install \
            --no-save --no-audit --no-fund --no-package-lock "onnxruntime-node@$ORT_VERSION") \
            >"$BB/npm.log" 2>&1; then
            ok=0
            onnx_skip "npm install onnxruntime-node@$ORT_VERSION failed: $(grep -m1 -E 'npm (error|ERR!) (code|[A-Z])' "$BB/npm.log" || tail -n 1 "$BB/npm.log") (full log: $BB/npm.log)"
        fi
    else
        echo "(onnxruntime-node already installed in $BB/node_modules)"
    fi
    if [ "$ok" = 1 ]; then
        mkdir -p "$BB/onnx_check"
        run_step 300 "$PYTHON" bench/torch_bench.py export "$BB/block.onnx" \
            --check-dir "$BB/onnx_check"
        rc=$?
        if [ "$rc" != 0 ]; then
            ok=0
            onnx_skip "$(step_reason)"
            [ "$rc" = 3 ] || FAILED=1
        fi
    fi
    if [ "$ok" = 1 ]; then
        run_step 300 env NODE_PATH="$BB/node_modules" node bench/ort_bench.js "$BB/block.onnx" \
            --threads "$THREADS" --shapes "${SHAPES// /,}" --repeat "$REPEAT" --warmup "$WARMUP" \
            --check-dir "$BB/onnx_check"
        rc=$?
        if [ "$rc" != 0 ]; then
            onnx_skip "$(step_reason)"
            [ "$rc" = 3 ] || FAILED=1
        fi
        for s in $SHAPES; do
            v=${R[ort_${s}_best_ms]:-}
            if [ -z "$v" ] || [ -z "${R[core_${s}_best_ms]:-}" ]; then
                continue
            fi
            R[ort_ratio_${s}]=$(calc "$v / ${R[core_${s}_best_ms]}")
            echo "-> B=${s%x*} L=${s#*x}: ONNX Runtime / attnd = $(fmt "${R[ort_ratio_${s}]}" 2) (${v} ms vs ${R[core_${s}_best_ms]} ms, best of each)"
        done
    fi
fi

# ---- 5. HTTP ---------------------------------------------------------------

section "HTTP: build/attnd on 127.0.0.1, keep-alive clients"
http_fail() { WHY[http]=$1; echo "bench: $1"; FAILED=1; }
if skipped http; then
    WHY[http]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    # What compute.spin_us is for: a wake-up on a CPU left idle, and on one
    # the spinners keep busy.
    run_step 60 $BB/wake_latency --gap-us 1000 --rounds 300 --window-us 2000 ||
        echo "(the wake-up latency could not be measured)"
    # The core's own time for the request timed below, measured just before
    # it: the machine's speed changes from one minute to the next (part 1).
    # Part 1's median is the fallback.
    # shellcheck disable=SC2086
    run_step 180 $BB/bench_core core --batch 1 --len 128 --threads "$THREADS" --repeat "$REPEAT" \
        --warmup "$WARMUP" --name core_http $MODEL_FLAGS ||
        echo "(the core could not be timed again; part 1's median is used)"
    R[http_core_median_ms]=${R[core_http_median_ms]:-${R[core_1x128_median_ms]:-}}
    start_daemon $MODEL_FLAGS
    if [ "$ready" != 1 ]; then
        http_fail "attnd did not become ready within 30 s (log: $BB/attnd.log)"
    else
        echo "(attnd pid $DAEMON_PID, port $PORT)"
        core_med=${R[http_core_median_ms]:-}
        for fmt_ in b64 json; do
            run_step $((HTTP_SECONDS + 60)) $BB/http_bench latency --port "$PORT" --format "$fmt_" \
                --batch 1 --len 128 --seconds "$HTTP_SECONDS" --max-requests "$HTTP_MAX" \
                --warmup 3 --name "http_$fmt_" || { http_fail "http_bench latency $fmt_ failed"; continue; }
            if [ "$fmt_" = b64 ]; then
                # base64: against the daemon's own compute median (issue 19)
                R[http_b64_ratio]=$(calc "${R[http_b64_p50_ms]} / ${R[http_b64_compute_ms]}")
                echo "-> p50 / the daemon's compute median (B=1 L=128) = $(fmt "${R[http_b64_ratio]}" 2)"
            elif [ -n "$core_med" ]; then
                R[http_${fmt_}_ratio]=$(calc "${R[http_${fmt_}_p50_ms]} / $core_med")
                echo "-> p50 / core median for the same request (B=1 L=128, $core_med ms) = $(fmt "${R[http_${fmt_}_ratio]}" 2)"
            fi
        done
        # Issue 19: a batch's large responses, streamed from reused buffers:
        # wall p50 against the daemon's own compute median for the same
        # requests (X-Compute-Ms), and its minor page faults per request.
        for att_ in heads none; do
            for fmt_ in b64 json; do
                k=http8_${att_}_${fmt_}
                run_step $((HTTP_SECONDS + 60)) $BB/http_bench latency --port "$PORT" \
                    --format "$fmt_" --batch 8 --len 128 --attention "$att_" --pid "$DAEMON_PID" \
                    --seconds "$HTTP_SECONDS" --max-requests "$HTTP_MAX" --warmup 3 --name "$k" ||
                    { http_fail "http_bench latency B=8 $att_ $fmt_ failed"; continue; }
                R[${k}_ratio]=$(calc "${R[${k}_p50_ms]} / ${R[${k}_compute_ms]}")
                echo "-> p50 / the daemon's compute median = $(fmt "${R[${k}_ratio]}" 2)"
            done
        done
        run_step $((HTTP_SECONDS + 60)) $BB/http_bench throughput --port "$PORT" \
            --clients "$CLIENTS" --batch 1 --len 32 --seconds "$HTTP_SECONDS" --name http_small ||
            http_fail "http_bench throughput ($CLIENTS clients) failed"
        run_step $((HTTP_SECONDS + 60)) $BB/http_bench throughput --port "$PORT" \
            --clients 1 --batch 32 --len 32 --seconds "$HTTP_SECONDS" --name http_big ||
            http_fail "http_bench throughput (B=32) failed"
        if [ -n "${R[http_small_tokens_per_s]:-}" ] && [ -n "${R[http_big_tokens_per_s]:-}" ]; then
            R[http_tput_ratio]=$(calc "${R[http_small_tokens_per_s]} / ${R[http_big_tokens_per_s]}")
            echo "-> $CLIENTS clients x B=1 L=32 / one client x B=32 L=32 (tokens/s) = $(fmt "$(calc "100 * ${R[http_tput_ratio]}")" 1)%"
        fi
    fi
    stop_daemon
    echo "(attnd stopped)"
    # The transport alone, for reference: a server that answers the same
    # request with a body of the same size and does nothing else.
    start_floor
    if [ -n "$FLOOR_PORT" ]; then
        run_step $((HTTP_SECONDS + 60)) $BB/http_bench latency --port "$FLOOR_PORT" --format b64 \
            --batch 1 --len 128 --seconds "$HTTP_SECONDS" --max-requests "$HTTP_MAX" --warmup 3 \
            --name http_floor || echo "(the transport floor could not be measured)"
    else
        echo "(the transport floor server did not start: $(tail -n 1 "$BB/floor.log"))"
    fi
    kill "$FLOOR_PID" 2>/dev/null
    wait "$FLOOR_PID" 2>/dev/null
    # The same with a CPU kept busy between request and answer for as long
    # as the daemon's forward took: the floor under attnd's p50 - compute,
    # the bytes moved around a forward as attnd moves them.
    busy=${R[http_b64_compute_ms]:-}
    if [ -n "$busy" ] && holds "$busy > 0"; then
        start_floor --busy-ms "$busy"
        if [ -n "$FLOOR_PORT" ] &&
            run_step $((HTTP_SECONDS + 60)) $BB/http_bench latency --port "$FLOOR_PORT" --format b64 \
                --batch 1 --len 128 --seconds "$HTTP_SECONDS" --max-requests "$HTTP_MAX" --warmup 3 \
                --name http_floor_busy; then
            R[http_floor_busy_ms]=$(calc "${R[http_floor_busy_p50_ms]} - $busy")
            R[http_floor_ratio]=$(calc "${R[http_floor_busy_p50_ms]} / $busy")
            echo "-> the transport around a forward: p50 - busy = $(fmt "${R[http_floor_busy_ms]}" 3) ms; a server answering after a $busy ms forward: p50 / compute >= $(fmt "${R[http_floor_ratio]}" 2)"
        else
            echo "(the transport floor around a forward could not be measured)"
        fi
        kill "$FLOOR_PID" 2>/dev/null
        wait "$FLOOR_PID" 2>/dev/null
    fi
fi

# ---- 6. memory: one long sequence without attention weights ------------------

section "memory: B=1 L=$MEM_LEN, attention none"
if skipped memory; then
    WHY[memory]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    # shellcheck disable=SC2086
    run_step 600 $BB/bench_core core --batch 1 --len "$MEM_LEN" --threads "$THREADS" --repeat 1 \
        --warmup 0 --attention none $MODEL_FLAGS || { FAILED=1; WHY[memory]="bench_core failed"; }
    mem_body=$((MEM_LEN * 768 * 4 * 4 / 3 + 1024))
    # shellcheck disable=SC2086
    start_daemon $MODEL_FLAGS --max-seq-len "$MEM_LEN" --max-batch-tokens "$MEM_LEN" \
        --max-body-bytes $((mem_body * 2)) --connection-timeout 600
    if [ "$ready" != 1 ]; then
        WHY[memory]="attnd did not start (log: $BB/attnd.log)"
        FAILED=1
    else
        idle=$(vm_kib "$DAEMON_PID" VmRSS)
        run_step 600 $BB/http_bench latency --port "$PORT" --format b64 --batch 1 \
            --len "$MEM_LEN" --attention none --seconds 1 --max-requests 1 --warmup 0 \
            --name http_mem || { FAILED=1; WHY[memory]="http_bench failed"; }
        peak=$(vm_kib "$DAEMON_PID" VmHWM)
        if [ -n "$peak" ]; then
            R[http_mem_peak_rss_mib]=$(calc "$peak / 1024")
            echo "-> attnd resident: $(fmt "$(calc "$idle / 1024")" 0) MiB idle, peak $(fmt "${R[http_mem_peak_rss_mib]}" 0) MiB (VmHWM) serving one B=1 L=$MEM_LEN base64 request"
        fi
        # issue 18: the same daemon, per-head weights of a window 64 as CSR
        run_step 600 "$PYTHON" bench/long_memory.py --port "$PORT" --pid "$DAEMON_PID" \
            --len "$MEM_LEN" --window 64 ||
            { FAILED=1; WHY[long_memory]="bench/long_memory.py failed"; }
    fi
    stop_daemon
fi

# ---- 7. long context: sparse patterns, attention none (issue 18) ------------

LONG=${BENCH_LONG_LEN:-16384}
# long_core NAME LEN [MASK]: one forward of B=1 L=LEN, attention none, best of
# 5 up to L=4096, of 2 above (of 1 without a mask: the dense forward at
# L=16384 takes seconds).
long_reps() { if [ "$1" -le 4096 ]; then echo 5; else echo 2; fi; }
long_core() {
    local reps
    reps=$(long_reps "$2")
    [ -z "${3:-}" ] && [ "$2" -gt 8192 ] && reps=1
    # shellcheck disable=SC2086
    run_step 900 $BB/bench_core core --batch 1 --len "$2" --threads "$THREADS" --repeat "$reps" \
        --warmup 1 --attention none $MODEL_FLAGS ${3:+--mask "$3"} --name "$1" ||
        { FAILED=1; WHY[long]="bench_core core --mask failed"; }
}
section "long context: sparse patterns at L=$LONG, attention none"
if skipped long; then
    WHY[long]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    for n in "$LONG" 4096 1024; do
        run_step 300 $BB/bench_core linears --batch 1 --len "$n" --threads "$THREADS" \
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

# ---- 8. positions inside attention (issue 22) --------------------------------

# RoPE and ALiBi against the same forward without positions, BERT-base sizes,
# per-head weights: the three run in turn, POS_ROUNDS times, and each ratio
# is the median of the rounds' median-to-median ratios, so the machine's
# drift over the minutes does not decide it.  With a window mask at L=512 the
# scores computed must be the same with positions as without (tile skipping
# kept).
POS_ROUNDS=${BENCH_POS_ROUNDS:-3}
section "positions inside attention: RoPE and ALiBi against none"
if skipped positions; then
    WHY[positions]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    for s in 1x512 8x128; do
        for r in $(seq "$POS_ROUNDS"); do
            for pos in none rope alibi; do
                # shellcheck disable=SC2086
                run_step 300 $BB/bench_core core --batch "${s%x*}" --len "${s#*x}" \
                    --threads "$THREADS" --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS \
                    --position "$pos" --name "pos_${s}_${pos}_$r" ||
                    { FAILED=1; WHY[positions]="bench_core --position failed"; }
            done
            for pos in rope alibi; do
                a=${R[pos_${s}_${pos}_${r}_median_ms]:-} b=${R[pos_${s}_none_${r}_median_ms]:-}
                [ -n "$a" ] && [ -n "$b" ] && echo "$(calc "$a / $b")" >>"$BB/pos_${s}_${pos}"
            done
        done
        for pos in rope alibi; do
            if [ -s "$BB/pos_${s}_${pos}" ]; then
                R[pos_${s}_${pos}_ratio]=$(sort -g "$BB/pos_${s}_${pos}" |
                    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
                echo "-> B=${s%x*} L=${s#*x}: $pos / none (medians, $POS_ROUNDS rounds) = $(fmt "${R[pos_${s}_${pos}_ratio]}" 3) ($(tr '\n' ' ' <"$BB/pos_${s}_${pos}"))"
            fi
            rm -f "$BB/pos_${s}_${pos}"
        done
    done
    for pos in none rope alibi; do
        # shellcheck disable=SC2086
        run_step 300 $BB/bench_core core --batch 1 --len 512 --threads "$THREADS" \
            --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS --position "$pos" \
            --mask window=64 --name "pos_window_$pos" ||
            { FAILED=1; WHY[positions]="bench_core --mask failed"; }
    done
    [ -n "${R[pos_window_none_scores]:-}" ] &&
        echo "-> window 64 at L=512: scores computed none ${R[pos_window_none_scores]}, rope ${R[pos_window_rope_scores]:-?}, alibi ${R[pos_window_alibi_scores]:-?} (of $((12 * 512 * 512)) dense)"
fi

# ---- 9. start-up from a Hugging Face directory (issues 22, 31) ----------------

# A BERT-base-sized directory (bert-base-uncased's tensors, F32, random
# values, made once under build/bench by tools/make_bert_dir.py): attnd
# --check-config's wall time and peak resident memory against reading the
# files once (cat, the page cache warm for both), and against the same
# encoder stack from a PyTorch-named file; the daemon's time to ready and
# its peak resident memory after one request of token ids.  Then an
# XLM-R-base-sized directory (XLMRobertaForMaskedLM's tensors, 1.1 GB, the
# word table 768 MB of it): the same, its peak against its file's size.
section "start-up: a BERT-base-sized and an XLM-R-base-sized Hugging Face directory"
if skipped startup; then
    WHY[startup]="BENCH_SKIP"
    WHY[xlmr]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    if ! run_step 600 "$PYTHON" tools/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors"; then
        WHY[startup]="tools/make_bert_dir.py failed"
        FAILED=1
    else
        run_step 300 "$PYTHON" bench/startup.py --dir "$BB/bert_base_dir" \
            --weights "$BB/bert_base.safetensors" --runs 5 ||
            { FAILED=1; WHY[startup]="bench/startup.py failed"; }
    fi
    if ! run_step 600 "$PYTHON" tools/make_bert_dir.py --xlmr "$BB/xlmr_base_dir"; then
        WHY[xlmr]="tools/make_bert_dir.py --xlmr failed"
        FAILED=1
    else
        run_step 300 "$PYTHON" bench/startup.py --dir "$BB/xlmr_base_dir" --name xlmr --runs 3 ||
            { FAILED=1; WHY[xlmr]="bench/startup.py failed"; }
    fi
fi

# Token ids in against embeddings in (issue 31): the daemon serving the
# BERT-base-sized directory, B=8 L=128, attention none, base64 out; its own
# compute median (X-Compute-Ms) for each, in interleaved rounds.  The ids'
# lookups are inside that time; parsing either body is not.
section "ids: token ids in against embeddings in, B=8 L=128 (BERT-base-sized directory)"
if skipped ids; then
    WHY[ids]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
elif [ ! -f "$BB/bert_base_dir/config.json" ] &&
    ! run_step 600 "$PYTHON" tools/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors"; then
    WHY[ids]="tools/make_bert_dir.py failed"
    FAILED=1
else
    start_daemon --model-dir "$BB/bert_base_dir"
    if [ "$ready" != 1 ]; then
        WHY[ids]="attnd did not become ready within 30 s (log: $BB/attnd.log)"
        FAILED=1
    else
        echo "(attnd pid $DAEMON_PID, port $PORT)"
        run_step 900 "$PYTHON" bench/ids_bench.py --port "$PORT" --dir "$BB/bert_base_dir" \
            --batch 8 --len 128 --rounds "${BENCH_IDS_ROUNDS:-5}" --per-round 3 ||
            { FAILED=1; WHY[ids]="bench/ids_bench.py failed"; }
    fi
    stop_daemon
fi

# ---- 10. ModernBERT-base at 8,192 tokens (issue 23) ----------------------------

# The forward's ideal at the kernel's measured rates: 22 x the four Linears
# alone (bench_core linears, GeGLU's 2F rows) plus, per layer, what one
# global layer costs beyond its Linears (bench_core core --n-layers 1) times
# the layer's share of the L^2 pairs: 1 on the 8 global layers, (L (2W + 1)
# - W (W + 1)) / L^2 on the 14 local ones.
MB_LEN=${BENCH_MB_LEN:-8192}
MB_ROUNDS=${BENCH_MB_ROUNDS:-5}
section "ModernBERT-base: B=1 L=$MB_LEN, attention none; B=8 L=128 against the BERT block"
if skipped modernbert; then
    WHY[modernbert]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    MB="--block modernbert --threads $THREADS"
    # shellcheck disable=SC2086
    { run_step 300 $BB/bench_core linears --batch 1 --len "$MB_LEN" $MB --repeat 3 --warmup 1 \
        --name mb_lin &&
      run_step 600 $BB/bench_core core --batch 1 --len "$MB_LEN" $MB --n-layers 1 \
        --attention none --repeat 3 --warmup 1 --name mb_dense1 &&
      run_step 1200 $BB/bench_core core --batch 1 --len "$MB_LEN" $MB --attention none \
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
        { run_step 300 $BB/bench_core core --batch 8 --len 128 $MB --attention none \
            --repeat "$REPEAT" --warmup "$WARMUP" --name "mb_short_$r" &&
          run_step 300 $BB/bench_core core --batch 8 --len 128 --threads "$THREADS" $MODEL_FLAGS \
            --attention none --repeat "$((15 * REPEAT))" --warmup "$WARMUP" --name "mb_bert_$r"; } ||
            { FAILED=1; WHY[modernbert]="bench_core at B=8 L=128 failed"; break; }
        echo "$(calc "(${R[mb_short_${r}_median_ms]} / $mb_lf) / (${R[mb_bert_${r}_median_ms]} / $bert_lf)")" >>"$BB/mb_short"
    done
    if [ -s "$BB/mb_short" ]; then
        R[mb_short_ratio]=$(sort -g "$BB/mb_short" |
            awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
        echo "-> B=8 L=128: ms per Linear-GFLOP, ModernBERT-base ($mb_lf GFLOP) / BERT block ($bert_lf GFLOP), medians, $MB_ROUNDS rounds = $(fmt "${R[mb_short_ratio]}" 3) ($(tr '\n' ' ' <"$BB/mb_short"))"
    fi
    rm -f "$BB/mb_short"
fi

# ---- 11. text in (issue 32) ---------------------------------------------------

# Tokenizer throughput on one thread: build/bench/tok_bench (attnd's C
# tokenizer) and bench/tok_hf.mjs (Hugging Face's tokenizers through its Node
# binding, one text encoded at a time, RAYON_NUM_THREADS=1,
# TOKENIZERS_PARALLELISM=false) on the same tokenizer.json files and the same
# corpus bytes; each prints its tokens and an FNV-1a hash of every id, which
# must agree.  Then the BERT-base-sized directory with a tokenizer.json
# (build/bench/bert_text_dir: bert_base_dir's config.json and weights linked,
# so part 9's figures keep the directory they had): 8 texts of exactly 126
# tokens (128 with [CLS] and [SEP], no padding), the C tokenizer's time for
# them against the daemon's compute median for the same ids, and the
# requests' end-to-end p50s in interleaved rounds.
TEXT_SENTENCES=${BENCH_TEXT_SENTENCES:-5000}
TEXT_PASSES=${BENCH_TEXT_PASSES:-5}
TEXT_ROUNDS=${BENCH_TEXT_ROUNDS:-5}
TEXT_TOKS="bert-uncased roberta xlmr"
section "text: attnd's tokenizer against Hugging Face's tokenizers (one thread); text in at B=8 L=128"
if skipped text; then
    WHY[text]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
elif [ -n "${WHY[text]:-}" ]; then
    echo "skipped: ${WHY[text]}"
else
    text_fail() { WHY[text]=$1; echo "bench: $1"; FAILED=1; }
    if ! run_step 60 "$PYTHON" bench/text_corpus.py "$BB/text_corpus.txt" --sentences "$TEXT_SENTENCES"; then
        text_fail "bench/text_corpus.py failed"
    fi
    TD=$BB/bert_text_dir
    if [ ! -f "$BB/bert_base_dir/config.json" ] &&
        ! run_step 600 "$PYTHON" tools/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors"; then
        text_fail "tools/make_bert_dir.py failed"
    else
        mkdir -p "$TD"
        ln -sfn ../bert_base_dir/config.json "$TD/config.json"
        ln -sfn ../bert_base_dir/model.safetensors "$TD/model.safetensors"
        run_step 120 "$PYTHON" tools/make_bert_dir.py --tokenizer "$TD" ||
            text_fail "tools/make_bert_dir.py --tokenizer failed"
    fi
    if [ -z "${WHY[text]:-}" ]; then
        # key:tokenizer.json pairs (keys are RESULT names)
        pairs=""
        for t in $TEXT_TOKS; do pairs+=" ${t//-/_}:tests/fixtures/tokenizers/$t/tokenizer.json"; done
        pairs+=" bert_base:$TD/tokenizer.json"
        hf=1
        if skipped texthf; then
            hf=0 WHY[texthf]="BENCH_SKIP"
            echo "(Hugging Face's tokenizers skipped: BENCH_SKIP)"
        elif ! command -v node >/dev/null; then
            hf=0 WHY[texthf]="node is not installed"
            echo "(Hugging Face's tokenizers skipped: node is not installed)"
        fi
        for p in $pairs; do
            k=${p%%:*} f=${p#*:}
            run_step 300 $BB/tok_bench throughput --tokenizer "$f" --corpus "$BB/text_corpus.txt" \
                --repeat "$TEXT_PASSES" --warmup 1 --name "tokc_$k" ||
                { text_fail "tok_bench throughput $f failed"; continue; }
            [ "$hf" = 1 ] || continue
            run_step 300 env RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false UV_THREADPOOL_SIZE=1 \
                node bench/tok_hf.mjs --tokenizer "$f" --corpus "$BB/text_corpus.txt" \
                --repeat "$TEXT_PASSES" --warmup 1 --batch --name "tokhf_$k"
            rc=$?
            if [ "$rc" != 0 ]; then
                hf=0 WHY[texthf]=$(step_reason)
                [ "$rc" = 3 ] || FAILED=1
                continue
            fi
            c=${R[tokc_${k}_tok_per_s]:-} h=${R[tokhf_${k}_tok_per_s]:-}
            if [ "${R[tokc_${k}_tokens]:-}" != "${R[tokhf_${k}_tokens]:-}" ] ||
                [ "${R[tokc_${k}_hash]:-}" != "${R[tokhf_${k}_hash]:-}" ]; then
                text_fail "$k: attnd gave ${R[tokc_${k}_tokens]:-?} tokens (ids hash ${R[tokc_${k}_hash]:-?}), Hugging Face ${R[tokhf_${k}_tokens]:-?} (${R[tokhf_${k}_hash]:-?})"
            elif [ -n "$c" ] && [ -n "$h" ]; then
                R[tok_ratio_$k]=$(calc "$c / $h")
                line="-> $k: the same ${R[tokc_${k}_tokens]} tokens (ids hash ${R[tokc_${k}_hash]}); attnd $c tokens/s / Hugging Face $h tokens/s = $(fmt "${R[tok_ratio_$k]}" 2)x"
                b=${R[tokhf_${k}_batch_tok_per_s]:-}
                [ -n "$b" ] && line+=" (against one sequential encodeBatch of the corpus, $b tokens/s: $(fmt "$(calc "$c / $b")" 2)x)"
                echo "$line"
            fi
        done
    fi
    if [ -z "${WHY[text]:-}" ]; then
        run_step 120 $BB/tok_bench batch --tokenizer "$TD/tokenizer.json" \
            --corpus "$BB/text_corpus.txt" --out "$BB/text_b8.txt" --batch 8 --tokens 126 \
            --name tokb || text_fail "tok_bench batch failed"
    fi
    if [ -z "${WHY[text]:-}" ]; then
        start_daemon --model-dir "$TD"
        if [ "$ready" != 1 ]; then
            text_fail "attnd did not become ready within 30 s (log: $BB/attnd.log)"
        else
            echo "(attnd pid $DAEMON_PID, port $PORT)"
            run_step 900 "$PYTHON" bench/text_bench.py --port "$PORT" --texts "$BB/text_b8.txt" \
                --rounds "$TEXT_ROUNDS" --per-round 2 || text_fail "bench/text_bench.py failed"
        fi
        stop_daemon
        tk=${R[tokb_median_ms]:-} ic=${R[txt_ids_compute_ms]:-}
        if [ -n "$tk" ] && [ -n "$ic" ]; then
            R[text_tok_share]=$(calc "$tk / $ic")
            echo "-> tokenizing the 8 texts (C, one thread, median) $tk ms / the daemon's compute median for the same batch as input_ids $ic ms = $(fmt "$(calc "100 * ${R[text_tok_share]}")" 3)%"
        fi
        [ -n "${R[txt_emb_ratio]:-}" ] &&
            echo "-> /v1/embeddings p50 ${R[txt_emb_p50_ms]} ms / its compute median ${R[txt_emb_compute_ms]} ms = $(fmt "${R[txt_emb_ratio]}" 3)x"
        [ -n "${R[txt_text_ids_ratio]:-}" ] &&
            echo "-> /v1/encode p50: text ${R[txt_text_p50_ms]} ms / input_ids ${R[txt_ids_p50_ms]} ms = $(fmt "${R[txt_text_ids_ratio]}" 3)x (median of the rounds' ratios ${R[txt_text_ids_paired]}); beyond the forward (wall - X-Compute-Ms): text ${R[txt_text_over_ms]} ms, input_ids ${R[txt_ids_over_ms]} ms"
        # Mixed lengths: each sequence its own request, merged by the pool
        # (the forward runs real tokens only), against groups of 8 padded to
        # their longest, as a server that pads computes them.
        start_daemon --model-dir "$BB/bert_base_dir" --max-seq-len 512
        if [ "$ready" != 1 ]; then
            text_fail "attnd did not become ready within 30 s (log: $BB/attnd.log)"
        else
            run_step 900 "$PYTHON" bench/batch_bench.py --port "$PORT" --rounds 3 ||
                text_fail "bench/batch_bench.py failed"
        fi
        stop_daemon
    fi
fi

# ---- 12. bfloat16 (issue 33) ------------------------------------------------

# model.dtype bfloat16 against float32 in interleaved rounds: the four
# Linears alone and the block (B=8 L=128, attention per head), each round's
# median float32 / bfloat16, and the block again with the AVX-512 forms off
# (--kernels openblas: what a CPU without AVX-512F runs) and at B=1 L=4096
# without weights (where attention's products, in bfloat16 too, weigh as
# much as the Linears); then the BERT-base-sized directory's peak
# resident memory at load (--check-config, /usr/bin/time's maximum RSS),
# bfloat16 / float32.
BF_ROUNDS=${BENCH_BF16_ROUNDS:-3}
section "bfloat16: model.dtype bfloat16 against float32"
if skipped bf16; then
    WHY[bf16]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    for r in $(seq "$BF_ROUNDS"); do
        for dt in float32 bfloat16; do
            # shellcheck disable=SC2086
            run_step 300 $BB/bench_core linears --batch 8 --len 128 --threads "$THREADS" \
                --repeat "$REPEAT" --warmup "$WARMUP" --dtype "$dt" --name "bf_lin_${dt}_$r" &&
                run_step 300 $BB/bench_core core --batch 8 --len 128 --threads "$THREADS" \
                    --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS --dtype "$dt" \
                    --name "bf_core_${dt}_$r" &&
                run_step 300 $BB/bench_core core --batch 8 --len 128 --threads "$THREADS" \
                    --repeat "$REPEAT" --warmup "$WARMUP" $MODEL_FLAGS --dtype "$dt" \
                    --kernels openblas --name "bf_blas_${dt}_$r" &&
                run_step 300 $BB/bench_core core --batch 1 --len 4096 --threads "$THREADS" \
                    --repeat 3 --warmup 1 $MODEL_FLAGS --attention none --dtype "$dt" \
                    --name "bf_long_${dt}_$r" ||
                { FAILED=1; WHY[bf16]="bench_core --dtype $dt failed: $(step_reason)"; }
        done
        for k in lin core blas long; do
            a=${R[bf_${k}_float32_${r}_median_ms]:-} b=${R[bf_${k}_bfloat16_${r}_median_ms]:-}
            [ -n "$a" ] && [ -n "$b" ] && echo "$(calc "$a / $b")" >>"$BB/bf_$k"
        done
    done
    for k in lin core blas long; do
        if [ -s "$BB/bf_$k" ]; then
            R[bf_${k}_ratio]=$(sort -g "$BB/bf_$k" |
                awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
            echo "-> $k: float32 / bfloat16 (medians, $BF_ROUNDS rounds) = $(fmt "${R[bf_${k}_ratio]}" 3) ($(tr '\n' ' ' <"$BB/bf_$k"))"
        fi
        rm -f "$BB/bf_$k"
    done
    # shellcheck disable=SC2086
    run_step 300 $BB/bench_core linears --batch 8 --len 128 --threads "$THREADS" \
        --repeat "$REPEAT" --warmup "$WARMUP" --dtype bfloat16-wide --name bf_lin_wide ||
        FAILED=1
    if [ ! -f "$BB/bert_base_dir/model.safetensors" ]; then
        run_step 600 "$PYTHON" tools/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors" ||
            WHY[bf16]="tools/make_bert_dir.py failed"
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

# ---- machine check: was anything else competing for the cores? -------------

section "machine check: the roofline again, and the CPUs' other load"
ROOF_START=${R[roofline_gflops]:-}
run_step 120 $BB/bench_core roofline --n 2048 --threads "$THREADS" --repeat "$ROOF_REPEAT" \
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

# ---- 11. summary -----------------------------------------------------------

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

section "summary: issue 4, 18, 19, 22, 23, 31, 32 and 33 targets in this run"
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
    for pos in rope alibi; do
        lim=1.03
        [ "$pos" = alibi ] && lim=1.05
        r=${R[pos_${s}_${pos}_ratio]:-} m="n/a"
        [ -n "$r" ] && m="$(fmt "$(calc "100 * ($r - 1)")" 1)% of the forward ($(fmt "$r" 3)x)"
        row "$pos <= $(fmt "$(calc "100 * ($lim - 1)")" 0)% of a forward, B=${s%x*} L=${s#*x}" "$m" "$r" "<=" "$lim" "${WHY[positions]:-}"
    done
done
for pos in rope alibi; do
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
# With part 9's ids figure from this run: the embedding module's lookups too.
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
echo
echo "not targets, for reference:"
[ -n "${R[bf_blas_ratio]:-}" ] &&
    echo "  bf16 forward B=8 L=128 heads without AVX-512 (--kernels openblas: widened panels on OpenBLAS): $(fmt "${R[bf_blas_ratio]}" 2)x float32 on OpenBLAS (medians)"
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
echo "every RESULT line: $BB/results.txt; whole run: $(($(date +%s) - T_START)) s"
exit "$FAILED"
