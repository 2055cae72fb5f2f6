# bench/lib.sh - what every part of `make bench` shares, sourced by bench/run.sh
# and by each bench/parts/*.sh run alone: the settings (the environment
# variables bench/run.sh's header lists), the results every step records (R),
# the reasons a part was skipped or failed (WHY), the exit status (FAILED),
# timing and printing helpers, the daemon's start and stop, the core's rounds
# (which the PyTorch part repeats), and the two sections every run begins
# with: build (the C benchmarks, into build/bench/) and machine.
# shellcheck shell=bash
# shellcheck disable=SC2034 # settings and results read by the parts and the summary
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
LONG=${BENCH_LONG_LEN:-16384}
POS_ROUNDS=${BENCH_POS_ROUNDS:-3}
MB_LEN=${BENCH_MB_LEN:-8192}
MB_ROUNDS=${BENCH_MB_ROUNDS:-5}
TEXT_SENTENCES=${BENCH_TEXT_SENTENCES:-5000}
TEXT_PASSES=${BENCH_TEXT_PASSES:-5}
TEXT_ROUNDS=${BENCH_TEXT_ROUNDS:-5}
BF_ROUNDS=${BENCH_BF16_ROUNDS:-3}
INT8_ROUNDS=${BENCH_INT8_ROUNDS:-3}
IDS_ROUNDS=${BENCH_IDS_ROUNDS:-5}
TEI_ROUNDS=${BENCH_TEI_ROUNDS:-5}
BIGTEXT_REQUESTS=${BENCH_BIGTEXT_REQUESTS:-1000}

BB=build/bench                     # everything the benchmarks write
SHAPES="1x128 8x128 1x512"
MODEL_FLAGS="--d-model 768 --n-heads 12 --d-ff 3072 --activation gelu"
TEXT_TOKS="bert-uncased roberta xlmr"   # tokenizers of tests/fixtures/tokenizers
WARN="-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
      -Wpointer-arith -Wcast-qual -Wundef -Wvla"

declare -A R=()      # RESULT key -> value, from every step
declare -A WHY=()    # part -> why it was skipped or failed
FAILED=0
DAEMON_PID=""
BENCH_ALONE=0        # 1: a part runs alone (bench_alone)
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

# median FILE: the median of the numbers in FILE, one a line.
median() {
    sort -g "$1" |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

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

# core_round: bench_core core for every shape (the core part, and again
# before each later PyTorch round).  From the second round on, each figure
# kept is the best of the rounds (lowest best, lowest median).
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

trap stop_daemon EXIT
trap 'stop_daemon; exit 130' INT TERM

# ---- the sections every run begins with ------------------------------------

# bench_build: checks build/attnd and its libraries, compiles the C
# benchmarks into build/bench/ (exits 1 when it cannot).
bench_build() {
    section "build"
    local f
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
        # The heads' bench loads directories: the core's tokenizer is linked in too.
        # shellcheck disable=SC2086
        run_step 120 $CC -std=c11 -D_GNU_SOURCE -O2 $WARN -Icore -Ibench \
            bench/head_bench.c bench/bench_util.c -o $BB/head_bench build/libattnd_core.a \
            $TOK_LIBS -lm -lpthread || { echo "bench: cannot compile bench/head_bench.c"; exit 1; }
    else
        WHY[text]="pkg-config cannot find libutf8proc or oniguruma (make deps installs them)"
    fi
    # oneDNN's matmul, the int8 part's library peer: only where Debian's
    # libdnnl-dev is installed (apt-get install libdnnl-dev).
    rm -f "$BB/dnnl_bench"
    if [ -f /usr/include/oneapi/dnnl/dnnl.h ]; then
        # shellcheck disable=SC2086
        run_step 120 $CC -std=c11 -D_GNU_SOURCE -O2 $WARN -fopenmp -Ibench bench/dnnl_bench.c \
            bench/bench_util.c -o $BB/dnnl_bench -ldnnl -lm || { echo "bench: cannot compile bench/dnnl_bench.c"; exit 1; }
    else
        WHY[int8_dnnl]="libdnnl-dev is not installed (apt-get install libdnnl-dev)"
    fi
}

# bench_machine: what the figures ran on (cpu, avx512), the CPUs' other load
# before the run (BUSY_START, TICKS_START), and bench_core info (the OpenBLAS
# core, which the ModernBERT part's PyTorch peer checks).
bench_machine() {
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
}

# bench_alone: a part run by itself (bash bench/parts/NAME.sh) begins with
# the build and machine sections, as bench/run.sh does.
bench_alone() {
    BENCH_ALONE=1
    bench_build
    bench_machine
}

# bench_part_done: the end of a part; run alone, it says where the RESULT
# lines are and exits 1 when a measurement failed.
bench_part_done() {
    [ "$BENCH_ALONE" = 1 ] || return 0
    echo
    echo "every RESULT line: $BB/results.txt; whole run: $(($(date +%s) - T_START)) s"
    exit "$FAILED"
}
