/* fuzz_encode.c - fuzz target: the /v1/encode request decoder (JSON, the
 * codec's own number scanner, base64, token ids), a forward on a tiny model
 * and the response writer.  See fuzz.h. */
#include "fuzz.h"
#include "fuzz_forward.h"
#include "codec/jsonnum.h"

#include "protocol/v1.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

/* Two tiny seeded models with the invalid-request fixtures' sizes (D 4, H 2,
 * F 8): a post-norm relu stack of 2 and a pre-norm gelu_tanh block; the
 * input's length picks one.  A body that says "input_ids" goes to a third,
 * the Hugging Face fixture bert_mlm (vocabulary 50, token types 2, 24
 * positions), whose embedding module takes the ids.  Made once, kept for
 * the process. */
static enc_model *models[3];
static enc_workspace *workspaces[3];

static void models_init(void)
{
    if (models[0])
        return;
    enc_set_threads(1);
    for (int i = 0; i < 2; i++) {
        enc_hparams hp;
        enc_hparams_default(&hp);
        hp.d_model = 4;
        hp.n_heads = hp.n_kv_heads = 2;
        hp.d_ff = 8;
        hp.n_layers = i == 0 ? 2 : 1;
        hp.norm_first = i == 1;
        hp.activation = i == 0 ? ENC_ACT_RELU : ENC_ACT_GELU_TANH;
        enc_error err = {0};
        models[i] = enc_model_random(&hp, 7 + (uint64_t)i, &err);
        FUZZ_ASSERT(models[i] != NULL, "%s", err.message);
        workspaces[i] = enc_workspace_new(models[i]);
        FUZZ_ASSERT(workspaces[i] != NULL, "out of memory");
    }
    enc_hf_config c;
    enc_error err = {0};
    const char *dir = TESTS_DIR "/fixtures/hf/bert_mlm";
    FUZZ_ASSERT(enc_hf_config_read(dir, &c, &err) == 0, "%s", err.message);
    models[2] = enc_model_load_dir(dir, &c.hp, &err);
    FUZZ_ASSERT(models[2] != NULL, "%s", err.message);
    FUZZ_ASSERT(enc_model_embedding(models[2]) != NULL, "bert_mlm has no embedding module");
    workspaces[2] = enc_workspace_new(models[2]);
    FUZZ_ASSERT(workspaces[2] != NULL, "out of memory");
}

/* The number scanner against strtod: what it accepts is all one number and
 * reads as strtod reads it. */
static void check_number(const uint8_t *data, size_t size)
{
    char text[64];
    if (size == 0 || size >= sizeof text)
        return;
    double v;
    if (!jsonnum_parse((const char *)data, size, &v))
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    char *end;
    double want = strtod(text, &end);
    FUZZ_ASSERT(end == text + size, "'%s' accepted but strtod stops early", text);
    FUZZ_ASSERT(memcmp(&v, &want, sizeof v) == 0, "'%s' read as %.17g, strtod says %.17g", text, v,
                want);
}

/* The float writer against snprintf("%.*g"), "null" for non-finite. */
static void check_float(const uint8_t *data, size_t size)
{
    if (size < 5)
        return;
    float f;
    memcpy(&f, data, sizeof f);
    int precision = 1 + data[4] % 9;
    char got[JSONNUM_CHARS], want[64];
    size_t n = jsonnum_format(got, f, precision);
    if (isfinite(f))
        snprintf(want, sizeof want, "%.*g", precision, (double)f);
    else
        snprintf(want, sizeof want, "null");
    FUZZ_ASSERT(n == strlen(got) && strcmp(got, want) == 0, "%a at %d digits: '%s', want '%s'",
                (double)f, precision, got, want);
}

int fuzz_encode(const uint8_t *data, size_t size)
{
    models_init();
    check_number(data, size);
    check_float(data, size);

    const int which = memmem(data, size, "input_ids", 9) ? 2 : (int)(size % 2);
    const enc_model *m = models[which];
    const enc_hparams *hp = enc_model_hparams(m);
    const api_ctx limits = {.max_batch = 4,
                            .max_seq_len = 8,
                            .max_batch_tokens = 16,
                            .max_attention_bytes = 1024,
                            .embedding = enc_model_embedding(m)};
    encode_request req;
    api_error err = {0};
    if (v1_request_parse(&req, (const char *)data, size, hp, &limits, &err) < 0) {
        /* Refused: a 400 or 413 with a message (503 only when out of memory). */
        FUZZ_ASSERT(err.kind == API_BAD_REQUEST || err.kind == API_TOO_LARGE ||
                        err.kind == API_UNAVAILABLE,
                    "kind %d", (int)err.kind);
        FUZZ_ASSERT(err.message[0] != '\0', "an error without a message");
        encode_request_free(&req);
        return 0;
    }
    FUZZ_ASSERT(encode_request_alloc_outputs(&req, hp, &err) == 0, "%s", err.message);
    enc_result res;
    if (!fuzz_forward(m, workspaces[which], &req, &limits, &res)) { /* the daemon's 400 */
        encode_request_free(&req);
        return 0;
    }
    encode_usage usage = {.sequences = req.batch.B, .tokens = (long)req.batch.B * req.batch.L};
    size_t len = 0;
    char *body = v1_response(&req, "encoder", hp, &usage, &len);
    FUZZ_ASSERT(body != NULL && strlen(body) == len, "no response body");
    /* The body is JSON, and no number in it was written as null. */
    json_error_t jerr;
    json_t *j = json_loadb(body, len, 0, &jerr);
    FUZZ_ASSERT(j != NULL, "response is not JSON: %s: %.200s", jerr.text, body);
    FUZZ_ASSERT(strstr(body, "null") == NULL, "null in a 200: %.200s", body);
    json_decref(j);
    free(body);
    encode_request_free(&req);
    return 0;
}

FUZZ_LIBFUZZER_ENTRY(fuzz_encode)
