#!/usr/bin/env bash
# bench/parts/tei.sh - Hugging Face TEI's routes (bench/tei_bench.py): POST
# /rerank of one query against 32 passages of 100 tokens on a
# BERT-base-sized reranker (bench/head_dir.py --reranker: one label, the
# text part's tokenizer.json), its p50 against the daemon's compute for
# those 32 pairs; POST /embed against /v1/embeddings for the same 8 texts of
# 126 tokens the text part sends, on the same weights as a BertModel
# (bench/head_dir.py --base), interleaved rounds, the p50s' ratio.  Sourced
# by bench/run.sh, or run alone: bash bench/parts/tei.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# What it serves, made here when the text part has not made it in this
# tree: the corpus (bench/text_corpus.py) and the BERT-base-sized directory
# with a tokenizer.json (build/bench/bert_text_dir).  Then, each run: the 8
# texts of 126 tokens (build/bench/text_b8.txt, as the text part writes
# them) and 32 passages of exactly 100 tokens (build/bench/tei_passages.txt)
# from the same corpus (tok_bench batch); build/bench/bert_rerank_dir: the
# BERT-base-sized weights linked, a pooler and a one-label classifier beside
# them; build/bench/bert_embed_dir: the same weights as a BertModel, no head
# (bert_text_dir is a masked LM, which TEI's routes serve through
# /embed_sparse, not /embed); both with bert_text_dir's tokenizer linked.
section "tei: TEI's /rerank against its compute (32 pairs); /embed against /v1/embeddings (B=8 L=128)"
if skipped tei; then
    WHY[tei]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
elif [ ! -x "$BB/tok_bench" ] || [[ ${WHY[text]:-} == pkg-config* ]]; then
    WHY[tei]=${WHY[text]:-"$BB/tok_bench is missing"}
    echo "skipped: ${WHY[tei]}"
else
    tei_fail() { WHY[tei]=$1; echo "bench: $1"; FAILED=1; }
    TD=$BB/bert_text_dir RD=$BB/bert_rerank_dir ED=$BB/bert_embed_dir
    if [ ! -s "$BB/text_corpus.txt" ] &&
        ! run_step 60 "$PYTHON" bench/text_corpus.py "$BB/text_corpus.txt" --sentences "$TEXT_SENTENCES"; then
        tei_fail "bench/text_corpus.py failed"
    elif [ ! -f "$BB/bert_base_dir/config.json" ] &&
        ! run_step 600 "$PYTHON" tools/fixtures/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors"; then
        tei_fail "tools/fixtures/make_bert_dir.py failed"
    elif [ ! -f "$TD/tokenizer.json" ] &&
        ! { mkdir -p "$TD" &&
            ln -sfn ../bert_base_dir/config.json "$TD/config.json" &&
            ln -sfn ../bert_base_dir/model.safetensors "$TD/model.safetensors" &&
            run_step 120 "$PYTHON" tools/fixtures/make_bert_dir.py --tokenizer "$TD"; }; then
        tei_fail "tools/fixtures/make_bert_dir.py --tokenizer failed"
    elif ! run_step 120 "$BB"/tok_bench batch --tokenizer "$TD/tokenizer.json" \
        --corpus "$BB/text_corpus.txt" --out "$BB/text_b8.txt" --batch 8 --tokens 126 \
        --repeat 20 --warmup 2 --name tei_tokb; then
        tei_fail "tok_bench batch (the 8 texts) failed"
    elif ! run_step 120 "$BB"/tok_bench batch --tokenizer "$TD/tokenizer.json" \
        --corpus "$BB/text_corpus.txt" --out "$BB/tei_passages.txt" --batch 32 --tokens 100 \
        --repeat 20 --warmup 2 --name tei_tokp; then
        tei_fail "tok_bench batch (the 32 passages) failed"
    elif ! run_step 120 "$PYTHON" bench/head_dir.py --reranker --tokenizer "$TD" \
        "$BB/bert_base_dir" "$RD"; then
        tei_fail "bench/head_dir.py --reranker failed"
    elif ! run_step 120 "$PYTHON" bench/head_dir.py --base --tokenizer "$TD" \
        "$BB/bert_base_dir" "$ED"; then
        tei_fail "bench/head_dir.py --base failed"
    fi
    if [ -z "${WHY[tei]:-}" ]; then
        start_daemon --model-dir "$RD"
        if [ "$ready" != 1 ]; then
            tei_fail "attnd did not become ready within 30 s (log: $BB/attnd.log)"
        else
            echo "(attnd pid $DAEMON_PID, port $PORT)"
            info=$("$PYTHON" -c 'import json, sys, urllib.request
print(json.dumps(json.load(urllib.request.urlopen(
    "http://127.0.0.1:%s/info" % sys.argv[1], timeout=10))["model_type"]))' "$PORT")
            echo "GET /info: model_type $info"
            if [[ $info != '{"reranker":'* ]]; then
                tei_fail "$RD is not served as a reranker (model_type $info)"
            else
                run_step 900 "$PYTHON" bench/tei_bench.py rerank --port "$PORT" \
                    --passages "$BB/tei_passages.txt" --rounds "$TEI_ROUNDS" ||
                    tei_fail "bench/tei_bench.py rerank failed"
            fi
        fi
        stop_daemon
        [ -n "${R[tei_rr_ratio]:-}" ] &&
            echo "-> /rerank, 1 query x ${R[tei_rr_pairs]} passages (pairs of up to ${R[tei_rr_len]} tokens): p50 ${R[tei_rr_p50_ms]} ms / its compute median ${R[tei_rr_compute_ms]} ms = $(fmt "${R[tei_rr_ratio]}" 3)x (median of the requests' ratios ${R[tei_rr_paired]}); beyond the forward ${R[tei_rr_over_ms]} ms"
        start_daemon --model-dir "$ED"
        if [ "$ready" != 1 ]; then
            tei_fail "attnd did not become ready within 30 s (log: $BB/attnd.log)"
        else
            echo "(attnd pid $DAEMON_PID, port $PORT)"
            run_step 900 "$PYTHON" bench/tei_bench.py embed --port "$PORT" --texts "$BB/text_b8.txt" \
                --rounds "$TEI_ROUNDS" --per-round 2 || tei_fail "bench/tei_bench.py embed failed"
        fi
        stop_daemon
        [ -n "${R[tei_embed_ratio]:-}" ] &&
            echo "-> /embed p50 ${R[tei_embed_p50_ms]} ms / /v1/embeddings p50 ${R[tei_v1_p50_ms]} ms = $(fmt "${R[tei_embed_ratio]}" 4)x (median of the rounds' ratios ${R[tei_embed_paired]}); beyond the forward: /embed ${R[tei_embed_over_ms]} ms, /v1/embeddings ${R[tei_v1_over_ms]} ms"
    fi
fi

bench_part_done
