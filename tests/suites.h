/* suites.h - every Check suite of the test runner, named once with its
 * tier: SUITES declares them here and check_main.c runs them, tier by tier
 * in this order.  A new suite file adds one X(name, TIER) line (its
 * function: Suite *name_suite).
 *
 * The tiers, by the most a suite starts:
 *   UNIT    a module in-process: the core, the tokenizer, the codecs'
 *           pieces, the runtime (no daemon, no HTTP);
 *   CODEC   whole requests through the protocols' codecs and a model,
 *           in-process (no daemon);
 *   DAEMON  build/attnd started on a 127.0.0.1 port (tests/daemon_fixture.c)
 *           and talked to over HTTP; a suite here may hold unit cases too.
 * ATTND_TEST_TIERS=unit,codec (check_main.c) runs only those tiers: make
 * test-unit. */
#ifndef ATTND_TESTS_SUITES_H
#define ATTND_TESTS_SUITES_H

#include <check.h>

/* clang-format off */
#define SUITES(X) \
    X(sha256, UNIT) \
    X(safetensors, UNIT) \
    X(hparams, UNIT) \
    X(model, UNIT) \
    X(attention, UNIT) \
    X(blockmask, UNIT) \
    X(naive, UNIT) \
    X(gemm, UNIT) \
    X(gemm_int8, UNIT) \
    X(dtype, UNIT) \
    X(torch, UNIT) \
    X(embed, UNIT) \
    X(pooling, UNIT) \
    X(rollout, UNIT) \
    X(tokenizer, UNIT) \
    X(tokenizer_decode, UNIT) \
    X(config, UNIT) \
    X(jsontext, UNIT) \
    X(extract, UNIT) \
    X(jsonnum, UNIT) \
    X(base64, UNIT) \
    X(stream, UNIT) \
    X(bufpool, UNIT) \
    X(team, UNIT) \
    X(spin, UNIT) \
    X(runtime, UNIT) \
    X(fields, UNIT) \
    X(checkpoint, UNIT) \
    X(timing, UNIT) \
    X(v1_fixtures, CODEC) \
    X(v1_requests, CODEC) \
    X(v1_embeddings, CODEC) \
    X(v2_codec, CODEC) \
    X(edges, CODEC) \
    X(fuzz, CODEC) \
    X(checkpoint_daemon, DAEMON) \
    X(modernbert, DAEMON) \
    X(mpnet, DAEMON) \
    X(nomic, DAEMON) \
    X(jina, DAEMON) \
    X(gte, DAEMON) \
    X(deberta, DAEMON) \
    X(qwen2, DAEMON) \
    X(qwen3, DAEMON) \
    X(qwen3_embedders, DAEMON) \
    X(mistral, DAEMON) \
    X(reranker, DAEMON) \
    X(gemma3, DAEMON) \
    X(heads, DAEMON) \
    X(predict, DAEMON) \
    X(tei, DAEMON) \
    X(v2, DAEMON) \
    X(csr, DAEMON) \
    X(text, DAEMON) \
    X(text_limits, DAEMON) \
    X(prepare, DAEMON) \
    X(http, DAEMON) \
    X(lifecycle, DAEMON) \
    X(page, DAEMON) \
    X(framing, DAEMON) \
    X(hostile, DAEMON)
/* clang-format on */

#define SUITE_DECLARE(name, tier) Suite *name##_suite(void);
SUITES(SUITE_DECLARE)
#undef SUITE_DECLARE

#endif
