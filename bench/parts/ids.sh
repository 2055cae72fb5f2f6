#!/usr/bin/env bash
# bench/parts/ids.sh - token ids in against embeddings in: the daemon's
# compute median for each, B=8 L=128, interleaved rounds, on the
# BERT-base-sized directory (bench/ids_bench.py).  Sourced by bench/run.sh,
# or run alone: bash bench/parts/ids.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# Token ids in against embeddings in: the daemon serving the
# BERT-base-sized directory, B=8 L=128, attention none, base64 out; its own
# compute median (X-Compute-Ms) for each, in interleaved rounds.  The ids'
# lookups are inside that time; parsing either body is not.
section "ids: token ids in against embeddings in, B=8 L=128 (BERT-base-sized directory)"
if skipped ids; then
    WHY[ids]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
elif [ ! -f "$BB/bert_base_dir/config.json" ] &&
    ! run_step 600 "$PYTHON" tools/fixtures/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors"; then
    WHY[ids]="tools/fixtures/make_bert_dir.py failed"
    FAILED=1
else
    start_daemon --model-dir "$BB/bert_base_dir"
    if [ "$ready" != 1 ]; then
        WHY[ids]="attnd did not become ready within 30 s (log: $BB/attnd.log)"
        FAILED=1
    else
        echo "(attnd pid $DAEMON_PID, port $PORT)"
        run_step 900 "$PYTHON" bench/ids_bench.py --port "$PORT" --dir "$BB/bert_base_dir" \
            --batch 8 --len 128 --rounds "$IDS_ROUNDS" --per-round 3 ||
            { FAILED=1; WHY[ids]="bench/ids_bench.py failed"; }
    fi
    stop_daemon
fi

bench_part_done
