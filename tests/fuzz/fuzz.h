/* fuzz.h - the fuzz targets' entry points (tests/fuzz/fuzz_*.c).
 *
 * Each entry runs one input through a decoder and checks what must hold for
 * every input (no crash, no leak, no NaN or infinity in a result the daemon
 * would answer 200 with); a broken property aborts through FUZZ_ASSERT.
 * The same entries are built two ways:
 *
 *   - with clang -fsanitize=fuzzer,address,undefined and -DFUZZ_LIBFUZZER,
 *     each file also defines LLVMFuzzerTestOneInput (make fuzz, build/fuzz/);
 *   - plainly, into the Check runner, where check_fuzz.c replays the seed and
 *     regression corpora (tests/fuzz/seeds/, tests/fuzz/regress/) through
 *     them on every make test (and so under ASan/UBSan and valgrind too).
 *
 * Every entry returns 0, as libFuzzer wants. */
#ifndef ATTND_TESTS_FUZZ_H
#define ATTND_TESTS_FUZZ_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A property that must hold for every input: abort (libFuzzer saves the
 * input as a crash; under Check the test errors) with file, line and why. */
#define FUZZ_ASSERT(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: fuzz property failed: %s: ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The libFuzzer entry of a target whose entry point is fn (make fuzz's
 * builds, -DFUZZ_LIBFUZZER); nothing in the Check runner's build. */
#ifdef FUZZ_LIBFUZZER
#define FUZZ_LIBFUZZER_ENTRY(fn)                                                                   \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                                  \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                   \
    {                                                                                              \
        return fn(data, size);                                                                     \
    }
#else
#define FUZZ_LIBFUZZER_ENTRY(fn)
#endif

/* Whether x's n floats are all finite (a 200's outputs must be). */
static inline bool fuzz_all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return false;
    return true;
}

/* POST /v1/encode bodies: v1_request_parse, then (when it accepts) a
 * forward on a tiny seeded model and v1_response; also the codec's own
 * number reader and float writer against strtod / snprintf. */
int fuzz_encode(const uint8_t *data, size_t size);

/* safetensors files: st_parse and st_tensor_read_f32 over every tensor, then
 * enc_model_load on the same bytes for a tiny model. */
int fuzz_safetensors(const uint8_t *data, size_t size);

/* The configuration: config_load with the input as the JSON config file,
 * plus flags and ATTND_* variables taken from its NUL-separated tail. */
int fuzz_config(const uint8_t *data, size_t size);

/* POST /v2/models/{name}/infer bodies: v2_request_parse (JSON and Triton's
 * binary tensor data; an input "#<Inference-Header-Content-Length>\n<body>"
 * sets that header), then a forward on a tiny model and v2_response. */
int fuzz_v2(const uint8_t *data, size_t size);

/* Text for the tokenizer (core/tokenizer/): the input, valid UTF-8 or not,
 * through six test tokenizers with and without specials and truncation
 * (and, split at its first 0xFF byte, as a pair); invalid text must be
 * refused naming its byte, valid text must give ids in the vocabulary and
 * spans within the text. */
int fuzz_tokenizer(const uint8_t *data, size_t size);

/* Text routes as the HTTP layer runs them (protocol.h): OpenAI's
 * /v1/embeddings, /v1/encode and /v1/predict with text, TEI's forwards
 * (/, /embed, /embed_all, /embed_sparse, /predict, /rerank, /similarity)
 * on Hugging Face fixture directories with their tokenizers and heads,
 * and /v1/tokenize, TEI's /tokenize and /decode; the first byte picks the
 * route (fuzz_text.c), the rest is the body.  A refusal is one of the
 * contract's kinds with a message and a JSON error body; a 200's numbers
 * are finite and its body is JSON. */
int fuzz_text(const uint8_t *data, size_t size);

/* A new target: fuzz_<name>.c defining int fuzz_<name>(const uint8_t *,
 * size_t) and FUZZ_LIBFUZZER_ENTRY(fuzz_<name>) after it; its
 * declaration here, a row in check_fuzz.c's table, <name> in the Makefile's
 * FUZZ_TARGETS, seeds in tests/fuzz/seeds/<name>/ and an empty regression
 * corpus tests/fuzz/regress/<name>/ (docs/reliability.md). */

#endif
