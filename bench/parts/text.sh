#!/usr/bin/env bash
# bench/parts/text.sh - text in: build/bench/tok_bench (attnd's C tokenizer)
# against Hugging Face's tokenizers (bench/tok_hf.mjs, the npm Node binding;
# optional, BENCH_SKIP name texthf), one thread, tokens/s on the same corpus
# (bench/text_corpus.py) with bert-uncased (WordPiece), roberta (byte-level
# BPE), xlmr (Unigram) of tests/fixtures/tokenizers and the BERT-base-sized
# directory's 30,522-token WordPiece, the same token count and ids hash
# checked; then 8 texts of 126 tokens: the C tokenizer's time for them
# against the daemon's compute median for the same batch as input_ids, and
# (bench/text_bench.py, interleaved rounds) /v1/encode's p50 with "text"
# against "input_ids", /v1/embeddings' p50 against its compute median; mixed
# lengths (bench/batch_bench.py): each sequence alone, merged by the daemon,
# against groups of 8 padded to their longest.  Sourced by bench/run.sh, or
# run alone: bash bench/parts/text.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# Tokenizer throughput on one thread: build/bench/tok_bench (attnd's C
# tokenizer) and bench/tok_hf.mjs (Hugging Face's tokenizers through its Node
# binding, one text encoded at a time, RAYON_NUM_THREADS=1,
# TOKENIZERS_PARALLELISM=false) on the same tokenizer.json files and the same
# corpus bytes; each prints its tokens and an FNV-1a hash of every id, which
# must agree.  Then the BERT-base-sized directory with a tokenizer.json
# (build/bench/bert_text_dir: bert_base_dir's config.json and weights
# linked, so the start-up part's figures keep the directory they had): 8
# texts of exactly 126 tokens (128 with [CLS] and [SEP], no padding), the C
# tokenizer's time for them against the daemon's compute median for the same
# ids, and the requests' end-to-end p50s in interleaved rounds.
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
        ! run_step 600 "$PYTHON" tools/fixtures/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors"; then
        text_fail "tools/fixtures/make_bert_dir.py failed"
    else
        mkdir -p "$TD"
        ln -sfn ../bert_base_dir/config.json "$TD/config.json"
        ln -sfn ../bert_base_dir/model.safetensors "$TD/model.safetensors"
        run_step 120 "$PYTHON" tools/fixtures/make_bert_dir.py --tokenizer "$TD" ||
            text_fail "tools/fixtures/make_bert_dir.py --tokenizer failed"
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
            run_step 300 "$BB"/tok_bench throughput --tokenizer "$f" --corpus "$BB/text_corpus.txt" \
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
        run_step 120 "$BB"/tok_bench batch --tokenizer "$TD/tokenizer.json" \
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

bench_part_done
