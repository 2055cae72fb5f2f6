#!/usr/bin/env bash
# bench/run.sh - `make bench`: attnd's performance against its targets, every
# figure measured in this one run and printed under the command that made it,
# then a summary table.  Needs build/attnd, build/libattnd_core.a and
# build/libattnd_app.a (the Makefile's bench target builds them first);
# compiles the C benchmarks into build/bench/ itself.  See
# docs/performance.md for what each figure means.
#
# Model everywhere: one BERT-base-sized block - d_model 768, 12 heads, d_ff
# 3072, gelu, post-norm, 1 layer - with per-head attention weights computed.
#
# This driver runs the build and machine sections (bench/lib.sh, which holds
# what the parts share), then one script per part, in this order, each
# described in its own header, then bench/summary.sh (the machine check and
# the summary).  Each part also runs alone, after the build and machine
# sections: bash bench/parts/NAME.sh (the same environment variables).
#
#   roofline    bench/parts/roofline.sh    cblas_sgemm 2048^3, GFLOP/s
#   ceiling     bench/parts/ceiling.sh     the CPUs' FMA peak; the block's four
#                                          Linears alone on attnd's kernel
#   core        bench/parts/core.sh        enc_forward at B=1 L=128, B=8 L=128,
#                                          B=1 L=512
#   torch       bench/parts/torch.sh       PyTorch, the same block   [optional]
#   onnx        bench/parts/onnx.sh        ONNX Runtime (onnxruntime-node)
#                                                                    [optional]
#   http        bench/parts/http.sh        build/attnd over HTTP: latency,
#                                          throughput, the transport alone
#   memory      bench/parts/memory.sh      one long sequence's peak resident
#                                          memory, core and daemon
#   long        bench/parts/long.sh        long context: sparse masks against
#                                          their ideal
#   positions   bench/parts/positions.sh   RoPE and ALiBi against none
#   startup     bench/parts/startup.sh     start-up from BERT-base- and
#                                          XLM-R-base-sized directories
#   ids         bench/parts/ids.sh         token ids in against embeddings in
#   modernbert  bench/parts/modernbert.sh  ModernBERT-base at L=8192, and at
#                                          B=8 L=128    [PyTorch peer optional]
#   text        bench/parts/text.sh        attnd's tokenizer against Hugging
#                                          Face's; text in over HTTP
#                                                           [HF peer optional]
#   bf16        bench/parts/bf16.sh        model.dtype bfloat16 against float32
#   int8        bench/parts/int8.sh        model.dtype int8 against bfloat16 and
#                                          float32: the Linears, the block, the
#                                          daemon's memory at load and after a
#                                          forward; over HTTP against PyTorch's
#                                          quantize_dynamic      [peer optional]
#   heads       bench/parts/heads.sh       task heads: a classifier's share of the
#                                          forward, SPLADE's projection, an XLM-R
#                                          masked LM's peak memory
#   tei         bench/parts/tei.sh         TEI's routes: /rerank of 32 pairs
#                                          against its compute, /embed against
#                                          /v1/embeddings
#   page        bench/parts/page.sh        the page's model view, 12 x 12 at L=128:
#                                          the response to drawn (Chromium)
#   bigtext     bench/parts/bigtext.sh     small /v1/embeddings requests alone
#                                          and beside four clients of 1 MB texts,
#                                          or of batches of 16 texts
#   summary     bench/summary.sh           each target: met or not in this run
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
#                               bf16 int8 int8_http int8_ort heads tei page bigtext"
#                               (mbtorch: the ModernBERT part's PyTorch peer, about 6
#                               minutes; ids: token ids against embeddings, about 2
#                               minutes; texthf: the text part's Hugging Face peer;
#                               int8_http: the int8 part's PyTorch peer; int8_ort:
#                               its ONNX Runtime peer)
#   BENCH_IDS_ROUNDS [5]        rounds of ids / embeddings in the ids part (3 requests
#                               of each per round)
#   BENCH_BF16_ROUNDS [3]       rounds of the bf16 part (each: float32, bfloat16)
#   BENCH_INT8_ROUNDS [3]       rounds of the int8 part (each: int8, bfloat16, float32;
#                               over HTTP: 3 requests and 3 PyTorch forwards)
#   BENCH_TEXT_SENTENCES [5000] sentences in the text part's corpus
#   BENCH_TEXT_PASSES [5]       timed passes over it per tokenizer (each side)
#   BENCH_TEXT_ROUNDS [5]       rounds of text / ids / embeddings requests in the text
#                               part (2 requests of each per round)
#   BENCH_PAGE_ROUNDS [5]       times the page part draws the model view (median)
#   BENCH_TEI_ROUNDS [5]        rounds of the tei part: one /rerank request each; 2
#                               /embed and 2 /v1/embeddings requests each
#   BENCH_BIGTEXT_REQUESTS [1000] small requests per phase of the bigtext part (at least)
#   BENCH_MB_LEN [8192]         the ModernBERT part's sequence length
#   BENCH_MB_ROUNDS [5]         rounds of ModernBERT / BERT at B=8 L=128
#   BENCH_POS_ROUNDS [3]        rounds of none / rope / alibi / relative (positions)
#   BENCH_LONG_LEN [16384]      sequence length of the long-context patterns
#   BENCH_MEMORY_LEN [16384]    sequence length of the memory test
#   BENCH_ORT_VERSION [1.30.0]  onnxruntime-node version npm installs
#   BENCH_NPM_TIMEOUT [180]     seconds npm install may take
#   PYTHON [/usr/bin/python3]   CC [cc]
#
# Exit status: 0 when every part that could run did run (targets not met do
# not fail it; optional parts that cannot run here are skipped with the
# reason); 1 when a measurement failed or build/attnd is missing.

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_build
bench_machine
# The parts, in the order of the list above (roofline first: the core's
# lines can then quote it).
for part in roofline ceiling core torch onnx http memory long positions startup ids \
    modernbert text bf16 int8 heads tei page bigtext; do
    # shellcheck source=/dev/null
    . "bench/parts/$part.sh"
done
# shellcheck source=bench/summary.sh
. bench/summary.sh
