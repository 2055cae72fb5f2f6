/* predict.c - POST /v1/predict: the served checkpoint's own answer for text,
 * in the shapes of transformers' pipelines (answer.h): a sequence head's
 * labels and scores (text-classification, a text or a pair; a reranker's
 * one score), a token head's entities (token-classification), a masked
 * LM's tokens for each mask (fill-mask); with "explain", each token's
 * attention-rollout relevance beside its offsets.  One forward for the
 * request's texts, as /v1/encode. */
#include "protocol/predict.h"

#include "protocol/answer.h"
#include "protocol/fields.h"
#include "protocol/protocol.h"
#include "protocol/schemas.h"
#include "protocol/text.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...) api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)

const char *predict_task(enc_head_kind kind)
{
    return kind == ENC_HEAD_SEQUENCE    ? "text-classification"
           : kind == ENC_HEAD_TOKEN     ? "token-classification"
           : kind == ENC_HEAD_MASKED_LM ? "fill-mask"
                                        : "none";
}

/* fill-mask's default top_k (FillMaskPipeline's). */
#define FILL_TOP_K 5

static const char *const STRATEGIES[] = {"simple", "none", NULL};
static const field_spec BODY_FIELDS[] = {
    {.name = "inputs",
     .type = FIELD_JSON,
     .required = true,
     .form = "a string, a list of strings, or a list of [text, text_pair] pairs"},
    {.name = "top_k", .type = FIELD_INT, .min = 1, .max = INT_MAX},
    {.name = "aggregation_strategy", .type = FIELD_CHOICE, .choices = STRATEGIES},
    {.name = "raw_scores", .type = FIELD_BOOL},
    TEXT_FIELD_TRUNCATE,
    TEXT_FIELD_DIRECTION,
    TEXT_FIELD_PROMPT_NAME,
    {.name = "explain", .type = FIELD_BOOL},
    {.name = "explain_from", .type = FIELD_INT, .min = 0, .max = INT_MAX},
    {.name = "model", .type = FIELD_STRING},
};
const field_table predict_fields = FIELD_TABLE("field", BODY_FIELDS);

/* The model's head, or NULL with err naming what the model has. */
const enc_head_info *predict_head(const api_ctx *ctx, api_error *err)
{
    const enc_model *m = ctx ? ctx->model : NULL;
    const enc_head_info *h = enc_model_head(m);
    if (h)
        return h;
    const char *unsupported = enc_model_head_unsupported(m), *note = enc_model_head_note(m);
    const char *klass = m ? enc_model_class(m) : "";
    if (unsupported)
        BAD("this model's head (%s) is not %s%s: /v1/predict needs a sequence-classification, "
            "token-classification or masked-LM head; /v1/encode and /v1/embeddings serve its "
            "encoder",
            unsupported, note[0] ? "computed: " : "one attnd computes", note);
    else
        BAD("this model has no task head (%s): /v1/predict needs a sequence-classification, "
            "token-classification or masked-LM head; /v1/encode and /v1/embeddings serve its "
            "encoder",
            klass[0] ? klass : "no config.json architectures");
    return NULL;
}

/* The options each task takes, the others refused naming the task. */
static int parse_options(predict_request *p, const json_t *root, api_error *err)
{
    const enc_head_kind kind = p->head->kind;
    const char *task = predict_task(kind);
    if (kind == ENC_HEAD_TOKEN && fields_get(root, "top_k"))
        return BAD("top_k is not used by %s: every token's entity is returned", task);
    if (kind != ENC_HEAD_TOKEN && fields_get(root, "aggregation_strategy"))
        return BAD("aggregation_strategy is only used by token-classification; this model "
                   "answers %s",
                   task);
    if (kind != ENC_HEAD_SEQUENCE && fields_get(root, "raw_scores"))
        return BAD("raw_scores is only used by text-classification; this model answers %s", task);
    p->top_k = (int)fields_int(root, "top_k", kind == ENC_HEAD_MASKED_LM ? FILL_TOP_K : 0);
    p->aggregate = fields_choice(&predict_fields, root, "aggregation_strategy", 0) == 0;
    p->fn = fields_bool(root, "raw_scores", false) ? ENC_HEAD_FN_NONE : p->head->function;
    return encode_want_explain(&p->enc, fields_bool(root, "explain", false),
                               fields_get(root, "explain_from"), err);
}

/* A pair is text-classification's alone (the pipelines' {"text", "text_pair"}). */
static int check_pairs(const predict_request *p, const json_t *inputs, api_error *err)
{
    size_t i;
    const json_t *v;
    json_array_foreach(inputs, i, v)
    {
        if (json_is_array(v) && p->head->kind != ENC_HEAD_SEQUENCE)
            return BAD("inputs[%zu] is a pair; %s takes one text per sequence", i,
                       predict_task(p->head->kind));
    }
    return 0;
}

/* fill-mask: every mask token of every text, as the head's rows. */
static int mask_rows(predict_request *p, api_error *err)
{
    encode_request *req = &p->enc;
    const int32_t mask = tok_role_id(p->tok, TOK_ROLE_MASK);
    if (mask < 0)
        return BAD("inputs: fill-mask needs the tokenizer's mask token, and it has none "
                   "(tokenizer_config.json's mask_token)");
    const char *spelled = tok_token_text(p->tok, mask);
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    if (!(req->head_rows = encode_zalloc(B * L, sizeof *req->head_rows)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (size_t b = 0; b < B; b++) {
        const int before = req->n_head_rows;
        for (size_t i = 0; i < encode_seq_len(req, b); i++)
            if (req->input_ids[b * L + i] == mask)
                req->head_rows[req->n_head_rows++] = (int32_t)(b * L + i);
        if (req->n_head_rows == before) {
            char at[40] = "inputs";
            if (req->batched)
                snprintf(at, sizeof at, "inputs[%zu]", b);
            return BAD("%s has no mask token (%s)", at, spelled ? spelled : "?");
        }
    }
    req->head = ENC_HEAD_OUT_ROWS;
    req->head_outputs = (size_t)p->head->n_outputs;
    return 0;
}

/* The decoder an answer runs (an entity group's word, fill-mask's text):
 * one the tokenizer cannot run is 501 before the forward. */
static int check_decoder(const predict_request *p, api_error *err)
{
    if (p->head->kind == ENC_HEAD_SEQUENCE)
        return 0;
    char *s = NULL;
    size_t len = 0;
    enc_error e = {0};
    const int rc = tok_decode(p->tok, NULL, 0, false, &s, &len, &e);
    free(s);
    if (rc < 0)
        return api_error_set(err, rc == ENC_ENOMEM ? API_UNAVAILABLE : API_NOT_IMPLEMENTED,
                             "%s needs the tokenizer's decoder: %s", predict_task(p->head->kind),
                             e.message);
    return 0;
}

int predict_init(predict_request *p, const proto_input *in, api_error *err)
{
    encode_request *req = &p->enc;
    if (encode_request_init(req, in->hp, in->ctx, err) < 0)
        return -1;
    req->attn_mode = ENC_ATTN_NONE;
    return 0;
}

int predict_prepare(predict_request *p, json_t *inputs, const char *field, const text_options *o,
                    const proto_input *in, api_error *err)
{
    encode_request *req = &p->enc;
    const api_ctx *ctx = in->ctx;
    if (check_pairs(p, inputs, err) < 0 ||
        encode_set_text(req, inputs, field, o, in->hp, ctx, err) < 0 ||
        encode_text_lengths(req, err) < 0)
        return -1;
    p->tok = ctx->tokenizer;
    p->inputs = json_incref(inputs);
    for (size_t b = 0; req->explain && b < (size_t)req->batch.B; b++)
        if ((size_t)req->explain_from >= encode_seq_len(req, b))
            return BAD("explain_from = %d is outside sequence %zu's tokens 0..%zu",
                       req->explain_from, b, encode_seq_len(req, b) - 1);
    if (check_decoder(p, err) < 0)
        return -1;
    if (p->head->kind == ENC_HEAD_MASKED_LM) {
        if (mask_rows(p, err) < 0)
            return -1;
        const size_t bytes = (size_t)req->n_head_rows * req->head_outputs * 4;
        if (bytes > ctx->max_logits_bytes)
            return api_error_set(err, API_TOO_LARGE,
                                 "inputs: %d mask tokens x %zu logits (float32) is over "
                                 "limits.max_logits_bytes (%zu)",
                                 req->n_head_rows, req->head_outputs, ctx->max_logits_bytes);
        return 0;
    }
    return encode_want_logits(req, ctx, err);
}

static int parse_body(predict_request *p, json_t *root, const proto_input *in, api_error *err)
{
    if (!json_is_object(root))
        return BAD("the request body must be a JSON object, not %s", fields_kind(root));
    if (fields_check(&predict_fields, root, "", err) < 0)
        return -1;
    const json_t *model = fields_get(root, "model");
    if (model && strcmp(json_string_value(model), in->model_name) != 0) {
        char s[API_SAFE_MAX + 4];
        return api_error_set(err, API_NOT_FOUND,
                             "model '%s' does not exist: this server serves '%s'",
                             api_safe_text(json_string_value(model), s), in->model_name);
    }
    if (!(p->head = predict_head(in->ctx, err)) || parse_options(p, root, err) < 0)
        return -1;
    text_options o;
    if (text_read_options(root, in->ctx, TEXT_OPT_AUTO | TEXT_OPT_SCORE, &o, err) < 0)
        return -1;
    o.flags |= TEXT_SPECIALS;
    return predict_prepare(p, fields_get(root, "inputs"), "inputs", &o, in, err);
}

static encode_request *predict_parse(void *state, const proto_input *in, api_error *err)
{
    predict_request *p = state;
    if (predict_init(p, in, err) < 0)
        return NULL;
    json_t *root = fields_load(in->body, in->len, "inputs", err);
    if (!root)
        return NULL;
    const int rc = parse_body(p, root, in, err);
    json_decref(root);
    return rc < 0 ? NULL : &p->enc;
}

/* ---- the response ------------------------------------------------------------ */

/* Text b of the inputs: the string, or a pair's first (entities take no
 * pairs). */
static const char *text_of(const predict_request *p, size_t b, size_t *len)
{
    const json_t *v = p->enc.batched ? json_array_get(p->inputs, b) : p->inputs;
    if (json_is_array(v))
        v = json_array_get(v, 0);
    *len = json_string_length(v);
    return json_string_value(v);
}

/* Sequence b's answer (new reference), or NULL with err. */
json_t *predict_answer(const predict_request *p, size_t b, int *row, api_error *err)
{
    const encode_request *req = &p->enc;
    const tok_encoding *e = &req->texts->enc[b];
    const size_t L = (size_t)req->batch.L, C = req->head_outputs;
    switch (p->head->kind) {
    case ENC_HEAD_SEQUENCE:
        return answer_labels(p->head, req->logits + b * C, p->top_k, p->fn);
    case ENC_HEAD_TOKEN: {
        size_t len;
        const char *text = text_of(p, b, &len);
        return answer_entities(p->tok, p->head, e, text, len, req->logits + b * L * C, p->aggregate,
                               err);
    }
    case ENC_HEAD_MASKED_LM: {
        const int first = *row;
        while (*row < req->n_head_rows && (size_t)req->head_rows[*row] < (b + 1) * L)
            (*row)++;
        const int n = *row - first; /* at least one: predict_prepare asked for it */
        int32_t *at = malloc((size_t)(n > 0 ? n : 1) * sizeof *at);
        if (!at) {
            api_error_set(err, API_UNAVAILABLE, "out of memory for the answer");
            return NULL;
        }
        for (int k = 0; k < n; k++)
            at[k] = (int32_t)(req->head_rows[first + k] - (int32_t)(b * L));
        json_t *out = answer_fill_mask(p->tok, e->ids, e->n, at, n, req->logits + (size_t)first * C,
                                       (int)C, p->top_k, err);
        free(at);
        return out;
    }
    case ENC_HEAD_NONE:
        break;
    }
    return NULL;
}

/* Sequence b's explanation: its tokens (text_tokens_json) each with its
 * "relevance". */
json_t *predict_explain(const predict_request *p, const enc_hparams *hp, size_t b, double *rel)
{
    const encode_request *req = &p->enc;
    json_t *toks = text_tokens_json(p->tok, &req->texts->enc[b]);
    if (!toks || encode_explain(req, hp, b, rel) < 0) {
        json_decref(toks);
        return NULL;
    }
    size_t i;
    json_t *t;
    json_array_foreach(toks, i, t)
    {
        if (json_object_set_new(t, "relevance", json_real(rel[i])) < 0) {
            json_decref(toks);
            return NULL;
        }
    }
    return toks;
}

/* The body as a JSON object (new reference), or NULL. */
static json_t *response(const predict_request *p, const proto_output *out, api_error *err)
{
    const encode_request *req = &p->enc;
    const size_t B = (size_t)req->batch.B;
    json_t *preds = json_array(), *expl = req->explain ? json_array() : NULL;
    double *rel = req->explain ? malloc((size_t)req->batch.L * sizeof *rel) : NULL;
    json_t *body = NULL;
    int row = 0;
    if (!preds || (req->explain && (!expl || !rel)))
        goto done;
    for (size_t b = 0; b < B; b++) {
        if (json_array_append_new(preds, predict_answer(p, b, &row, err)) < 0)
            goto done;
        if (expl && json_array_append_new(expl, predict_explain(p, out->hp, b, rel)) < 0)
            goto done;
    }
    const encode_usage *u = out->usage;
    body = json_pack("{s:s,s:s,s:O,s:{s:i,s:I,s:f,s:f}}", "model", out->model_name, "task",
                     predict_task(p->head->kind), "predictions",
                     req->batched ? preds : json_array_get(preds, 0), "usage", "sequences",
                     u ? u->sequences : req->batch.B, "tokens", (json_int_t)(u ? u->tokens : 0),
                     "queue_ms", u && isfinite(u->queue_ms) ? u->queue_ms : 0.0, "compute_ms",
                     u && isfinite(u->compute_ms) ? u->compute_ms : 0.0);
    if (body && expl &&
        json_object_set(body, "explain", req->batched ? expl : json_array_get(expl, 0)) < 0) {
        json_decref(body);
        body = NULL;
    }
done:
    json_decref(preds);
    json_decref(expl);
    free(rel);
    return body;
}

static int predict_render(const void *state, const proto_output *out, stream *st,
                          size_t *header_len)
{
    const predict_request *p = state;
    *header_len = 0;
    api_error err = {0};
    json_t *body = response(p, out, &err);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return -1;
    stream_text(st, text, strlen(text));
    free(text);
    return stream_failed(st) ? -1 : 0;
}

void predict_request_free(predict_request *p)
{
    encode_request_free(&p->enc);
    json_decref(p->inputs);
    p->inputs = NULL;
}

static void predict_free(void *state)
{
    predict_request_free(state);
}

const protocol predict_protocol = {.name = "predict",
                                   .state_size = sizeof(predict_request),
                                   .parse = predict_parse,
                                   .render = predict_render,
                                   .free = predict_free,
                                   .error_body = api_error_body};
