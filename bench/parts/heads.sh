#!/usr/bin/env bash
# bench/parts/heads.sh - what a task head costs (bench/head_bench.c): a
# BERT-base-sized BertForSequenceClassification directory (bench/head_dir.py
# over tools/fixtures/make_bert_dir.py's) at B=8 L=128, its head against the forward;
# the BERT-base-sized BertForMaskedLM directory's SPLADE vector at B=8 L=128,
# its projection's GFLOP/s against the forward's (the Linears are 97% of its
# floating-point work at L=128), in the same interleaved runs;
# the XLM-R-base-sized directory's SPLADE vector at B=1 L=512, its peak
# resident memory against its weights.  Sourced by bench/run.sh, or run
# alone: bash bench/parts/heads.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# Each figure is a median over interleaved runs of the same forward without
# a head output and with it (head_bench), so the head's share is what it
# adds to the forward that computes it in this run.
section "heads: a classifier's share of the forward, SPLADE's projection, an XLM-R masked LM's memory"
if skipped heads; then
    WHY[heads]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
elif { [ -f "$BB/bert_base_dir/config.json" ] ||
    run_step 600 "$PYTHON" tools/fixtures/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors"; } &&
    run_step 120 "$PYTHON" bench/head_dir.py "$BB/bert_base_dir" "$BB/bert_seq_dir"; then
    # shellcheck disable=SC2015 # the || catches any step
    run_step 600 "$BB"/head_bench --dir "$BB/bert_seq_dir" --batch 8 --len 128 \
        --threads "$THREADS" --repeat "$REPEAT" --warmup "$WARMUP" --name hd_seq \
        --modes none,logits &&
        run_step 600 "$BB"/head_bench --dir "$BB/bert_base_dir" --batch 8 --len 128 \
            --threads "$THREADS" --repeat "$REPEAT" --warmup "$WARMUP" --name hd_mlm \
            --modes none,splade ||
        { FAILED=1; WHY[heads]="bench/head_bench.c failed: $(step_reason)"; }
    if [ -f "$BB/xlmr_base_dir/config.json" ] ||
        run_step 600 "$PYTHON" tools/fixtures/make_bert_dir.py --xlmr "$BB/xlmr_base_dir"; then
        run_step 600 "$BB"/head_bench --dir "$BB/xlmr_base_dir" --batch 1 --len 512 \
            --threads "$THREADS" --repeat 3 --warmup 1 --name hd_xlmr --modes none,splade ||
            { FAILED=1; WHY[heads_rss]="bench/head_bench.c failed: $(step_reason)"; }
    else
        WHY[heads_rss]="tools/fixtures/make_bert_dir.py --xlmr failed"
        FAILED=1
    fi
else
    WHY[heads]="tools/fixtures/make_bert_dir.py or bench/head_dir.py failed"
    FAILED=1
fi

bench_part_done
