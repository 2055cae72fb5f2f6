/* suites.h - every Check suite of the test runner, named once: SUITES
 * declares them here and check_main.c runs them, in this order.  A new
 * suite file adds one X(name) line (its function: Suite *name_suite). */
#ifndef ATTND_TESTS_SUITES_H
#define ATTND_TESTS_SUITES_H

#include <check.h>

/* clang-format off */
#define SUITES(X) \
    X(sha256) \
    X(safetensors) \
    X(hparams) \
    X(model) \
    X(attention) \
    X(blockmask) \
    X(naive) \
    X(gemm) \
    X(dtype) \
    X(torch) \
    X(config) \
    X(v1_fixtures) \
    X(v1_requests) \
    X(v1_embeddings) \
    X(http) \
    X(page) \
    X(fuzz) \
    X(edges) \
    X(hostile) \
    X(jsontext) \
    X(fields) \
    X(extract) \
    X(team) \
    X(v2) \
    X(checkpoint) \
    X(modernbert) \
    X(embed) \
    X(tokenizer) \
    X(text) \
    X(pooling) \
    X(csr) \
    X(spin) \
    X(framing) \
    X(stream) \
    X(bufpool) \
    X(base64) \
    X(jsonnum) \
    X(runtime)
/* clang-format on */

#define SUITE_DECLARE(name) Suite *name##_suite(void);
SUITES(SUITE_DECLARE)
#undef SUITE_DECLARE

#endif
