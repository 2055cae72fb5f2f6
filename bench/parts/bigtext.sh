#!/usr/bin/env bash
# bench/parts/bigtext.sh - small /v1/embeddings requests beside long work
# (bench/prepare_bench.py), on the built-in model (which has a tokenizer)
# cut to 128 tokens (--max-seq-len 128 --auto-truncate, so that a 1 MB text
# is tokenized whole and its forward stays small): one client's
# one-sentence requests' p50 and p99 alone, then
#   prep: while four clients post 1 MB texts back to back (tokenization);
#   prep_idle: the same with --tokenize-idle (the tokenizer at SCHED_IDLE);
#   lane: while four clients post batches of 16 texts of 120 words (long
#         forwards; the short requests run between their phases,
#         compute.short_tokens);
#   lane_off: the same with --short-tokens 0 (arrival order), 100 small
#         requests (each waits for a whole long forward).
# The ratio of the p99s each time.  Then starve: a 1 MB text's time alone
# and beside as many busy processes as CPUs (the tokenizer gives way to
# them, but keeps a share).  The bodies fit server.max_body_bytes'
# default (64 MiB).  Sourced by bench/run.sh, or run alone:
# bash bench/parts/bigtext.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# bigtext_run FLAGS -- BENCH_ARGS...: attnd with FLAGS, then prepare_bench.py.
bigtext_run() {
    local flags=()
    while [ "$1" != -- ]; do flags+=("$1"); shift; done
    shift
    start_daemon --max-seq-len 128 --auto-truncate "${flags[@]}"
    if [ "$ready" != 1 ]; then
        WHY[bigtext]="attnd did not become ready within 30 s (log: $BB/attnd.log)"
        echo "bench: ${WHY[bigtext]}"
        FAILED=1
    else
        echo "(attnd pid $DAEMON_PID, port $PORT)"
        run_step 900 "$PYTHON" bench/prepare_bench.py --port "$PORT" "$@" ||
            { WHY[bigtext]="bench/prepare_bench.py $* failed"; FAILED=1; }
    fi
    stop_daemon
}

section "bigtext: small /v1/embeddings requests alone and beside four clients of 1 MB texts or long batches"
if skipped bigtext; then
    WHY[bigtext]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    bigtext_run -- --requests "$BIGTEXT_REQUESTS"
    bigtext_run --tokenize-idle -- --requests "$BIGTEXT_REQUESTS" --tag prep_idle
    bigtext_run -- --requests "$BIGTEXT_REQUESTS" --big-batch 16 --tag lane
    bigtext_run --short-tokens 0 -- --requests 100 --min-big 0 --big-batch 16 --tag lane_off
    bigtext_run -- --beside-busy "$(nproc)" --tag starve
fi

bench_part_done
