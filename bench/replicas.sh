#!/usr/bin/env bash
# bench/replicas.sh - sizing a host (docs/deploy.md, "Sizing"): the
# throughput of one replica with every CPU against one replica per CPU with
# one thread each, on this machine, in one run.
#
#   bash bench/replicas.sh          (make bench-replicas; needs build/attnd)
#
# Model: one BERT-base-sized block (as make bench).  For each shape (B=1
# L=128 and B=8 L=128, base64, per-head attention) and each layout
#   A: 1 replica,  --forward-threads NCPU, CLIENTS clients on it
#   B: NCPU replicas, --forward-threads 1, CLIENTS/NCPU clients on each
# build/bench/http_bench throughput runs for REPLICAS_SECONDS; the layouts
# alternate for REPLICAS_ROUNDS rounds and each one's median tokens/s is
# printed, with the ratio B / A.  Every daemon listens on 127.0.0.1.
#
# Environment: REPLICAS_SECONDS [5], REPLICAS_ROUNDS [3], REPLICAS_CLIENTS [4]
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
SECONDS_=${REPLICAS_SECONDS:-5}
ROUNDS=${REPLICAS_ROUNDS:-3}
CLIENTS=${REPLICAS_CLIENTS:-4}
NCPU=$(nproc)
BB=build/bench
MODEL_FLAGS=(--d-model 768 --n-heads 12 --d-ff 3072 --activation gelu)
[ -x build/attnd ] || { echo "build/attnd is missing: make build/attnd"; exit 1; }
mkdir -p "$BB"
CURL_LIBS=$(pkg-config --libs libcurl 2>/dev/null || echo -lcurl)
if [ ! -x "$BB/http_bench" ] || [ bench/http_bench.c -nt "$BB/http_bench" ]; then
    # shellcheck disable=SC2086
    cc -O2 -std=c11 -D_GNU_SOURCE -Ibench bench/http_bench.c bench/bench_util.c \
        -o "$BB/http_bench" $CURL_LIBS -lm -lpthread || exit 1
fi

PIDS=()
stop_all() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    PIDS=()
}
trap stop_all EXIT
trap 'stop_all; exit 130' INT TERM

# start THREADS LOG: one replica on an ephemeral port; sets PORT (run it in
# this shell, not in $(...): the replica must be this shell's child).
start() {
    build/attnd "${MODEL_FLAGS[@]}" --forward-threads "$1" --host 127.0.0.1 --port 0 \
        --no-access-log 2>"$2" &
    PIDS+=($!)
    local port=""
    for _ in $(seq 150); do
        port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$2" | head -n 1)
        [ -n "$port" ] && grep -q "attnd: ready" "$2" && break
        sleep 0.2
    done
    PORT=$port
}

# layout N THREADS B: N replicas of THREADS threads, CLIENTS in all, B x 128;
# sets RESULT to the tokens/s summed over the replicas.
layout() {
    local n=$1 threads=$2 batch=$3 ports=() i
    for i in $(seq "$n"); do
        start "$threads" "$BB/replica$i.log"
        ports+=("$PORT")
    done
    local per=$((CLIENTS / n)) outs=() clients=()
    for i in $(seq "$n"); do
        outs+=("$BB/replica$i.out")
        "$BB/http_bench" throughput --port "${ports[$((i - 1))]}" --clients "$per" --batch "$batch" \
            --len 128 --format b64 --seconds "$SECONDS_" --name r >"$BB/replica$i.out" 2>&1 &
        clients+=($!)
    done
    wait "${clients[@]}"
    stop_all
    local sum=0 t
    for f in "${outs[@]}"; do
        t=$(sed -n 's/^RESULT r_tokens_per_s=\([0-9.]*\).*/\1/p' "$f")
        [ -n "$t" ] || { echo "ERROR: $(cat "$f")" >&2; t=0; }
        sum=$(awk -v a="$sum" -v b="$t" 'BEGIN { printf "%.1f", a + b }')
    done
    RESULT=$sum
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "== replicas: $NCPU CPUs ($(lscpu | sed -n 's/^Model name: *//p')), $CLIENTS clients, ${SECONDS_} s x $ROUNDS rounds"
echo "   attnd tree: $(git rev-parse --short HEAD 2>/dev/null || echo '?'); model: ${MODEL_FLAGS[*]}"
for batch in 1 8; do
    a=() b=()
    for r in $(seq "$ROUNDS"); do
        layout 1 "$NCPU" "$batch"
        a+=("$RESULT")
        layout "$NCPU" 1 "$batch"
        b+=("$RESULT")
        echo "   B=$batch L=128 round $r: 1 x $NCPU threads ${a[-1]} tokens/s; $NCPU x 1 thread ${b[-1]} tokens/s"
    done
    ma=$(printf '%s\n' "${a[@]}" | median)
    mb=$(printf '%s\n' "${b[@]}" | median)
    echo "B=$batch L=128 base64, heads: 1 replica x $NCPU threads $ma tokens/s; $NCPU replicas x 1 thread" \
         "$mb tokens/s; ratio $(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", b / a }')"
done
