/* fuzz_text.c - fuzz target: the routes that take text and answer with a
 * model's pooling or head, as the HTTP layer runs them (protocol.h): OpenAI's
 * /v1/embeddings, /v1/encode with text, /v1/predict, TEI's POST /, /embed,
 * /embed_all, /embed_sparse, /predict, /rerank and /similarity, each parsed,
 * made ready, run through a forward on a Hugging Face fixture directory
 * (tokenizer, sentence-transformers files, task head) and rendered; and
 * the routes answered from the body (/v1/tokenize, TEI's /tokenize and
 * /decode).  The input's first byte picks the route: 'a' + its index in
 * ROUTES (modulo their count), server.auto_truncate on from 'a' + the
 * count; the rest is the body ("d{\"inputs\": \"hi\"}": TEI's /embed).
 * See fuzz.h. */
#include "fuzz.h"
#include "fuzz_forward.h"

#include "base/file.h"
#include "load/sentence.h"
#include "protocol/openai.h"
#include "protocol/protocol.h"
#include "protocol/tei.h"
#include "protocol/text.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

/* The fixture directories, each loaded once and kept for the process: a
 * sentence-transformers embedder and transformers' task models. */
enum { EMBEDDER, TEXT_CLS, RERANKER, FILL_MASK, NER, N_MODELS };
static const char *const dirs[N_MODELS] = {
    TESTS_DIR "/fixtures/hf/bert_text", TESTS_DIR "/fixtures/pipelines/bert_text_cls",
    TESTS_DIR "/fixtures/pipelines/bert_rerank", TESTS_DIR "/fixtures/pipelines/bert_fill_mask",
    TESTS_DIR "/fixtures/pipelines/bert_ner"};

typedef struct served {
    enc_model *model;
    enc_workspace *ws;
    tok_tokenizer *tok;
    enc_st_text sentence;
} served;
static served models[N_MODELS];

/* A route: a forward's (proto's parse and render) or one answered from
 * the body (answer; proto, or NULL for attnd's own, gives its errors'
 * shape). */
typedef struct text_route {
    int model;
    const protocol *proto;
    int route; /* proto_route */
    json_t *(*answer)(const char *body, size_t len, const api_ctx *ctx, api_error *err);
} text_route;

static const text_route ROUTES[] = {
    {EMBEDDER, &openai_protocol, OPENAI_ROUTE_EMBEDDINGS, NULL},
    {EMBEDDER, &v1_protocol, 0, NULL},
    {EMBEDDER, &tei_protocol, TEI_ROUTE_ROOT, NULL},
    {EMBEDDER, &tei_protocol, TEI_ROUTE_EMBED, NULL},
    {EMBEDDER, &tei_protocol, TEI_ROUTE_EMBED_ALL, NULL},
    {EMBEDDER, &tei_protocol, TEI_ROUTE_SIMILARITY, NULL},
    {TEXT_CLS, &tei_protocol, TEI_ROUTE_PREDICT, NULL},
    {TEXT_CLS, &predict_protocol, 0, NULL},
    {RERANKER, &tei_protocol, TEI_ROUTE_RERANK, NULL},
    {RERANKER, &tei_protocol, TEI_ROUTE_ROOT, NULL},
    {FILL_MASK, &tei_protocol, TEI_ROUTE_EMBED_SPARSE, NULL},
    {FILL_MASK, &predict_protocol, 0, NULL},
    {NER, &predict_protocol, 0, NULL},
    {NER, &tei_protocol, TEI_ROUTE_PREDICT, NULL},
    {EMBEDDER, NULL, 0, text_tokenize_request},
    {EMBEDDER, &tei_protocol, 0, tei_tokenize},
    {FILL_MASK, &tei_protocol, 0, tei_decode},
};
#define N_ROUTES ((int)(sizeof ROUTES / sizeof *ROUTES))

/* As server/main.c serves a directory: its model, tokenizer.json with the
 * roles of tokenizer_config.json, and sentence-transformers' text
 * settings. */
static void load(served *s, const char *dir)
{
    enc_hf_config c;
    enc_error err = {0};
    FUZZ_ASSERT(enc_hf_config_read(dir, &c, &err) == 0, "%s: %s", dir, err.message);
    s->model = enc_model_load_dir(dir, &c.hp, &err);
    FUZZ_ASSERT(s->model != NULL, "%s: %s", dir, err.message);
    s->ws = enc_workspace_new(s->model);
    FUZZ_ASSERT(s->ws != NULL, "out of memory");
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    s->tok = tok_load(path, &err);
    FUZZ_ASSERT(s->tok != NULL, "%s: %s", path, err.message);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    size_t len = 0;
    char *text = file_read_whole(path, &len, &err);
    if (text) {
        FUZZ_ASSERT(tok_read_config(s->tok, text, len, &err) == 0, "%s: %s", path, err.message);
        free(text);
    }
    FUZZ_ASSERT(enc_st_text_read(dir, &s->sentence, &err) == 0, "%s: %s", dir, err.message);
}

static const char *no_header(void *cls, const char *name)
{
    (void)cls;
    (void)name;
    return NULL;
}

/* A refusal: one of the contract's kinds with a message, and the
 * protocol's error body is JSON. */
static void check_refusal(const protocol *p, const api_error *err)
{
    FUZZ_ASSERT(err->kind == API_BAD_REQUEST || err->kind == API_TOO_LARGE ||
                    err->kind == API_NOT_FOUND || err->kind == API_NOT_IMPLEMENTED ||
                    err->kind == API_UNAVAILABLE,
                "kind %d: %s", (int)err->kind, err->message);
    FUZZ_ASSERT(err->message[0] != '\0', "an error without a message");
    char *body = p && p->error_body ? p->error_body(err->kind, err->message)
                                    : api_error_body(err->kind, err->message);
    FUZZ_ASSERT(body != NULL, "no error body");
    json_error_t jerr;
    json_t *j = json_loads(body, 0, &jerr);
    FUZZ_ASSERT(j != NULL, "the error body is not JSON: %s: %.200s", jerr.text, body);
    json_decref(j);
    free(body);
}

/* A forward's route: parse, ready, forward, render; a 200's outputs and
 * head's scores are finite, and its body is JSON. */
static void run_forward(const text_route *rt, const served *s, const api_ctx *ctx, const char *body,
                        size_t len)
{
    const protocol *p = rt->proto;
    const enc_hparams *hp = enc_model_hparams(s->model);
    const enc_embedder pooling = {.mode = ENC_POOL_MEAN, .normalize = true};
    const proto_input in = {.body = len ? body : NULL,
                            .len = len,
                            .header = no_header,
                            .model_name = "encoder",
                            .hp = hp,
                            .ctx = ctx,
                            .route = rt->route,
                            .pooling = &pooling};
    void *state = calloc(1, p->state_size);
    FUZZ_ASSERT(state != NULL, "out of memory");
    api_error err = {0};
    encode_request *e = p->parse(state, &in, &err);
    if (e && encode_request_ready(e, ctx, &err) < 0)
        e = NULL;
    if (!e) {
        check_refusal(p, &err);
    } else {
        enc_result res;
        if (fuzz_forward(s->model, s->ws, e, ctx, &res)) {
            const encode_usage usage = {.sequences = e->batch.B,
                                        .tokens = (long)e->batch.B * e->batch.L};
            const proto_output out = {
                .model_name = "encoder", .hp = hp, .usage = &usage, .pooling = &pooling};
            stream *st = stream_new();
            FUZZ_ASSERT(st != NULL, "out of memory");
            size_t header_len = 0;
            FUZZ_ASSERT(p->render(state, &out, st, &header_len) == 0 && !stream_failed(st),
                        "render failed");
            size_t n = 0;
            char *text = stream_collect(st, &n);
            FUZZ_ASSERT(text != NULL, "out of memory");
            json_error_t jerr;
            json_t *j = json_loadb(text, n, 0, &jerr);
            FUZZ_ASSERT(j != NULL, "response is not JSON: %s: %.200s", jerr.text, text);
            json_decref(j);
            free(text);
            stream_free(st);
        }
    }
    p->free(state);
    free(state);
}

int fuzz_text(const uint8_t *data, size_t size)
{
    if (!models[0].model) {
        enc_set_threads(1);
        for (int i = 0; i < N_MODELS; i++)
            load(&models[i], dirs[i]);
    }
    if (size < 1)
        return 0;
    const unsigned pick = (unsigned char)(data[0] - 'a');
    const text_route *rt = &ROUTES[pick % N_ROUTES];
    const served *s = &models[rt->model];
    const api_ctx ctx = {.max_batch = 4,
                         .max_seq_len = 24,
                         .max_batch_tokens = 48,
                         .max_attention_bytes = 4096,
                         .max_logits_bytes = 1 << 16,
                         .model = s->model,
                         .embedding = enc_model_embedding(s->model),
                         .tokenizer = s->tok,
                         .sentence = &s->sentence,
                         .auto_truncate = pick / N_ROUTES % 2 == 1};
    /* the body, NUL-terminated as the HTTP layer hands it over */
    char *body = malloc(size);
    FUZZ_ASSERT(body != NULL, "out of memory");
    memcpy(body, data + 1, size - 1);
    body[size - 1] = '\0';
    if (rt->answer) {
        api_error err = {0};
        json_t *j = rt->answer(body, size - 1, &ctx, &err);
        if (!j) {
            check_refusal(rt->proto, &err);
        } else {
            char *text = json_dumps(j, JSON_COMPACT);
            FUZZ_ASSERT(text != NULL, "the answer does not dump");
            free(text);
            json_decref(j);
        }
    } else {
        run_forward(rt, s, &ctx, body, size - 1);
    }
    free(body);
    return 0;
}

FUZZ_LIBFUZZER_ENTRY(fuzz_text)
