#!/usr/bin/env bash
# bench/parts/startup.sh - start-up from a Hugging Face directory
# (bench/startup.py): a BERT-base-sized one (tools/fixtures/make_bert_dir.py), attnd
# --model-dir --check-config against reading it once, and against the same
# stack from a PyTorch-named file; the daemon's ready time and peak resident
# memory after one request; the same for an XLM-R-base-sized directory
# (250,002 x 768 word table), its peak against its file's size.  Sourced by
# bench/run.sh, or run alone: bash bench/parts/startup.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

# A BERT-base-sized directory (bert-base-uncased's tensors, F32, random
# values, made once under build/bench by tools/fixtures/make_bert_dir.py): attnd
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
    if ! run_step 600 "$PYTHON" tools/fixtures/make_bert_dir.py "$BB/bert_base_dir" "$BB/bert_base.safetensors"; then
        WHY[startup]="tools/fixtures/make_bert_dir.py failed"
        FAILED=1
    else
        run_step 300 "$PYTHON" bench/startup.py --dir "$BB/bert_base_dir" \
            --weights "$BB/bert_base.safetensors" --runs 5 ||
            { FAILED=1; WHY[startup]="bench/startup.py failed"; }
    fi
    if ! run_step 600 "$PYTHON" tools/fixtures/make_bert_dir.py --xlmr "$BB/xlmr_base_dir"; then
        WHY[xlmr]="tools/fixtures/make_bert_dir.py --xlmr failed"
        FAILED=1
    else
        run_step 300 "$PYTHON" bench/startup.py --dir "$BB/xlmr_base_dir" --name xlmr --runs 3 ||
            { FAILED=1; WHY[xlmr]="bench/startup.py failed"; }
    fi
fi

bench_part_done
