#!/usr/bin/env bash
# bench/parts/bigtext.sh - small /v1/embeddings requests beside 1 MB texts
# (bench/prepare_bench.py): on the built-in model (which has a tokenizer),
# cut to 128 tokens (--max-seq-len 128 --auto-truncate, so that a 1 MB
# text is tokenized whole and its forward stays small), one client's
# one-sentence requests' p50 and p99 alone, then while four clients post
# 1 MB texts back to back; the ratio of the p99s.  The bodies fit
# server.max_body_bytes' default (64 MiB).  Sourced by bench/run.sh, or run
# alone: bash bench/parts/bigtext.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

section "bigtext: small /v1/embeddings requests alone and beside four clients of 1 MB texts"
if skipped bigtext; then
    WHY[bigtext]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    start_daemon --max-seq-len 128 --auto-truncate
    if [ "$ready" != 1 ]; then
        WHY[bigtext]="attnd did not become ready within 30 s (log: $BB/attnd.log)"
        echo "bench: ${WHY[bigtext]}"
        FAILED=1
    else
        echo "(attnd pid $DAEMON_PID, port $PORT)"
        run_step 600 "$PYTHON" bench/prepare_bench.py --port "$PORT" --requests "$BIGTEXT_REQUESTS" ||
            { WHY[bigtext]="bench/prepare_bench.py failed"; FAILED=1; }
    fi
    stop_daemon
fi

bench_part_done
