/* fuzz_v2.c - fuzz target: the KServe v2 infer request decoder (server/protocol/v2.c,
 * JSON header plus Triton's binary tensor data), a forward on a tiny model
 * and the response writer.  An input that starts with '#' carries the
 * Inference-Header-Content-Length value up to its first newline ("#32\n"),
 * and the body after it; any other input is the body alone.  See fuzz.h. */
#include "fuzz.h"
#include "fuzz_forward.h"

#include "protocol/v2.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

/* A tiny seeded model with check_v2.c's sizes: D 4, H 2, F 8, 2 layers;
 * and for a body that says "input_ids", the Hugging Face fixture bert_mlm,
 * whose embedding module takes them. */
static enc_model *models[2];
static enc_workspace *workspaces[2];

int fuzz_v2(const uint8_t *data, size_t size)
{
    if (!models[0]) {
        enc_set_threads(1);
        enc_hparams hp;
        enc_hparams_default(&hp);
        hp.d_model = 4;
        hp.n_heads = hp.n_kv_heads = 2;
        hp.d_ff = 8;
        hp.n_layers = 2;
        enc_error err = {0};
        models[0] = enc_model_random(&hp, 5, &err);
        FUZZ_ASSERT(models[0] != NULL, "%s", err.message);
        enc_hf_config c;
        const char *dir = TESTS_DIR "/fixtures/hf/bert_mlm";
        FUZZ_ASSERT(enc_hf_config_read(dir, &c, &err) == 0, "%s", err.message);
        models[1] = enc_model_load_dir(dir, &c.hp, &err);
        FUZZ_ASSERT(models[1] != NULL, "%s", err.message);
        for (int i = 0; i < 2; i++) {
            workspaces[i] = enc_workspace_new(models[i]);
            FUZZ_ASSERT(workspaces[i] != NULL, "out of memory");
        }
    }
    const int which = memmem(data, size, "input_ids", 9) ? 1 : 0;
    const enc_model *model = models[which];
    enc_workspace *workspace = workspaces[which];
    const enc_hparams *hp = enc_model_hparams(model);

    /* The optional "#<header length>\n" prefix. */
    char header[32], *header_length = NULL;
    const char *body = (const char *)data;
    size_t len = size;
    if (size > 0 && data[0] == '#') {
        const uint8_t *nl = memchr(data, '\n', size < sizeof header ? size : sizeof header);
        if (nl) {
            size_t n = (size_t)(nl - data) - 1;
            memcpy(header, data + 1, n);
            header[n] = '\0';
            header_length = header;
            body = (const char *)nl + 1;
            len = size - (size_t)(nl + 1 - data);
        }
    }
    /* The body in an allocation of exactly its size, so ASan sees overreads. */
    char *copy = malloc(len ? len : 1);
    FUZZ_ASSERT(copy != NULL, "out of memory");
    memcpy(copy, body, len);

    const api_ctx limits = {.max_batch = 4,
                            .max_seq_len = 8,
                            .max_batch_tokens = 16,
                            .max_attention_bytes = 1024,
                            .embedding = enc_model_embedding(model)};
    v2_request req;
    api_error err = {0};
    if (v2_request_parse(&req, copy, len, header_length, "encoder", hp, &limits, &err) < 0) {
        FUZZ_ASSERT(err.kind == API_BAD_REQUEST || err.kind == API_TOO_LARGE ||
                        err.kind == API_NOT_FOUND || err.kind == API_UNAVAILABLE,
                    "kind %d: %s", (int)err.kind, err.message);
        FUZZ_ASSERT(err.message[0] != '\0', "an error without a message");
        v2_request_free(&req);
        free(copy);
        return 0;
    }
    encode_request *e = &req.enc;
    FUZZ_ASSERT(encode_request_alloc_outputs(e, hp, &err) == 0, "%s", err.message);
    enc_result res;
    if (fuzz_forward(model, workspace, e, &limits, &res)) {
        size_t out_len = 0, header_len = 0;
        char *out = v2_response(&req, "encoder", hp, &out_len, &header_len, res.scores);
        FUZZ_ASSERT(out != NULL, "no response body");
        FUZZ_ASSERT(header_len <= out_len, "header %zu of %zu bytes", header_len, out_len);
        json_error_t jerr;
        json_t *j = json_loadb(out, header_len ? header_len : out_len, 0, &jerr);
        FUZZ_ASSERT(j != NULL, "response is not JSON: %s", jerr.text);
        json_decref(j);
        free(out);
    }
    v2_request_free(&req);
    free(copy);
    return 0;
}

FUZZ_LIBFUZZER_ENTRY(fuzz_v2)
