/* tei.c - Hugging Face's text-embeddings-inference API (tei.h), written
 * after TEI 1.9's router (router/src/http/server.rs, types.rs) and
 * core/src/infer.rs: its routes' bodies, shapes, scores and errors.  The
 * forwards are attnd's own: embeddings pooled as /v1/embeddings pools them
 * (openai.h's pooling), a head's answers as /v1/predict gives them
 * (predict.h).  Where TEI ignores a field it does not know, so do these
 * routes. */
#include "protocol/tei.h"

#include "model/pooling.h"
#include "protocol/answer.h"
#include "protocol/fields.h"
#include "protocol/openai.h"
#include "protocol/predict.h"
#include "protocol/protocol.h"
#include "protocol/text.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TEI's Validation (422) and, for a route the model's kind cannot answer,
 * its Backend error (424). */
#define INVALID(...)     api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)
#define WRONG_MODEL(...) api_error_set(err, API_NOT_IMPLEMENTED, "Backend error: " __VA_ARGS__)
#define NOMEM()          api_error_set(err, API_UNAVAILABLE, "out of memory")

/* What TEI calls an empty input (400, error_type Empty). */
#define EMPTY_WORDS "cannot be empty"

/* ---- errors ------------------------------------------------------------------ */

static const char *error_type(api_error_kind kind, const char *message)
{
    switch (kind) {
    case API_BAD_REQUEST:
        return strstr(message, EMPTY_WORDS) ? "Empty" : "Validation";
    case API_NOT_IMPLEMENTED:
    case API_INTERNAL:
        return "Backend";
    case API_QUEUE_FULL:
        return "Overloaded";
    case API_UNAVAILABLE:
        return "Unhealthy";
    case API_UNAUTHORIZED:
        return "Unauthorized";
    default:
        return "Validation";
    }
}

static int tei_error_status(api_error_kind kind, const char *message)
{
    switch (kind) {
    case API_BAD_REQUEST:
        return strstr(message, EMPTY_WORDS) ? 400 : 422;
    case API_TOO_LARGE:
        return 422;
    case API_NOT_IMPLEMENTED:
        return 424;
    default:
        return api_error_status(kind);
    }
}

static char *tei_error_body(api_error_kind kind, const char *message)
{
    json_t *j = json_pack("{s:s,s:s}", "error", message, "error_type", error_type(kind, message));
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

/* ---- the body's fields --------------------------------------------------------- */

static json_t *load_body(const char *body, size_t len, api_error *err)
{
    json_t *root = fields_load(body, len, "inputs", err);
    if (root && !json_is_object(root)) {
        INVALID("the request body must be a JSON object, not %s", fields_kind(root));
        json_decref(root);
        return NULL;
    }
    return root;
}

static int get_bool(const json_t *o, const char *key, bool def, bool *out, api_error *err)
{
    const json_t *v = fields_get(o, key);
    *out = v ? json_is_true(v) : def;
    return !v || json_is_boolean(v)
               ? 0
               : INVALID("`%s` must be true or false, not %s", key, fields_kind(v));
}

/* truncate (default server.auto_truncate), truncation_direction (TEI's
 * "Right", "right", "Left", "left") and, with TEXT_OPT_PROMPT in what,
 * prompt_name (default: the model's default prompt), their types checked
 * here as TEI's framework does: the tokenizing options (text.h), with the
 * special tokens.  TEXT_OPT_SCORE: a CrossEncoder's default prompt. */
static int text_opts(const json_t *o, const proto_input *in, unsigned what, text_options *opts,
                     api_error *err)
{
    const bool prompts = what & TEXT_OPT_PROMPT;
    bool truncate;
    if (get_bool(o, "truncate", false, &truncate, err) < 0)
        return -1;
    const json_t *dir = fields_get(o, "truncation_direction");
    bool known = !dir;
    for (size_t k = 0; dir && TEXT_DIRECTIONS[k]; k++)
        known |= json_is_string(dir) && strcmp(json_string_value(dir), TEXT_DIRECTIONS[k]) == 0;
    if (!known)
        return INVALID("`truncation_direction` must be \"Right\" or \"Left\"");
    const json_t *prompt = fields_get(o, "prompt_name");
    if (prompt && !json_is_string(prompt))
        return INVALID("`prompt_name` must be a string, not %s", fields_kind(prompt));
    if (prompt && !prompts)
        return INVALID("`prompt_name` is not taken by this route");
    if (text_read_options(o, in->ctx, TEXT_OPT_AUTO | what, opts, err) < 0)
        return -1;
    opts->flags |= TEXT_SPECIALS;
    return 0;
}

/* TEI's empty-input check on field what (a string or a list): "" or [],
 * and in a list an entry "" or []. */
static int check_empty(const json_t *v, const char *what, api_error *err)
{
    if ((json_is_string(v) && json_string_length(v) == 0) ||
        (json_is_array(v) && json_array_size(v) == 0))
        return INVALID("Input validation error: `%s` " EMPTY_WORDS, what);
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x)
    {
        if ((json_is_string(x) && json_string_length(x) == 0) ||
            (json_is_array(x) && json_array_size(x) == 0))
            return INVALID("Input validation error: `%s[%zu]` " EMPTY_WORDS, what, i);
    }
    return 0;
}

/* ---- the model's kind, as TEI's /info names it ------------------------------------ */

typedef enum tei_kind {
    KIND_EMBEDDING,
    KIND_CLASSIFIER,
    KIND_RERANKER,
    KIND_TOKEN,
    KIND_MASKED_LM
} tei_kind;

static tei_kind kind_of(const api_ctx *ctx)
{
    const enc_head_info *h = enc_model_head(ctx ? ctx->model : NULL);
    if (!h)
        return KIND_EMBEDDING;
    return h->kind == ENC_HEAD_TOKEN       ? KIND_TOKEN
           : h->kind == ENC_HEAD_MASKED_LM ? KIND_MASKED_LM
           : h->n_outputs == 1             ? KIND_RERANKER
                                           : KIND_CLASSIFIER;
}

/* ---- a request ---------------------------------------------------------------- */

/* The routes a request may be answered by: the table's, and POST / on a
 * head answering as transformers' pipeline for it (Inference Endpoints'
 * shapes: @huggingface/inference's textClassification, tokenClassification,
 * fillMask). */
enum { ROUTE_PIPELINE = 100 };

typedef struct tei_state {
    predict_request p; /* the forward (p.enc) and a head's answer */
    int route;         /* the route answering */
    bool single;       /* one input, not a list: the answer itself */
    bool normalize;    /* /embed */
    int dimensions;    /* /embed: 0 all */
    bool return_text;  /* /rerank */
    long chars;        /* the input's characters (a token id counts one): x-compute-characters */
} tei_state;

/* Field what: a string or a list of strings (token ids are /embed's). */
static int texts_only(const json_t *v, const char *what, api_error *err)
{
    if (!v)
        return INVALID("`%s` is required", what);
    if (json_is_string(v))
        return 0;
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x)
    {
        if (!json_is_string(x))
            return INVALID("`%s[%zu]` must be a string, not %s%s", what, i, fields_kind(x),
                           json_is_integer(x) || json_is_array(x)
                               ? " (token ids are taken by /embed and /v1/embeddings)"
                               : "");
    }
    return json_is_array(v) ? 0
                            : INVALID("`%s` must be a string or a list of strings, not %s", what,
                                      fields_kind(v));
}

/* TEI's Input: a string, a list of token ids, or a list of strings and
 * lists of token ids (each id's range is text_tokenize's to check). */
static int embed_form(const json_t *v, api_error *err)
{
    static const char FORM[] = "a string, a list of token ids, or a list of strings and lists "
                               "of token ids";
    if (!v)
        return INVALID("`inputs` is required: %s", FORM);
    if (json_is_string(v))
        return 0;
    if (!json_is_array(v))
        return INVALID("`inputs` must be %s, not %s", FORM, fields_kind(v));
    const bool ids = json_is_integer(json_array_get(v, 0));
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x)
    {
        const bool fits = ids ? json_is_integer(x) : json_is_string(x) || text_is_ids(x);
        if (!fits && ids)
            return INVALID("`inputs[%zu]` must be a token id (an integer), not %s: `inputs` "
                           "must be %s",
                           i, fields_kind(x), FORM);
        if (!fits)
            return INVALID("`inputs[%zu]` is %s: `inputs` must be %s", i,
                           json_is_array(x) ? "a list that is not of token ids" : fields_kind(x),
                           FORM);
    }
    return 0;
}

/* /embed, /embed_all, /embed_sparse. */
static int parse_embed(tei_state *t, const json_t *root, const proto_input *in, api_error *err)
{
    encode_request *req = &t->p.enc;
    const tei_kind kind = kind_of(in->ctx);
    if (t->route == TEI_ROUTE_EMBED_SPARSE && kind != KIND_MASKED_LM)
        return WRONG_MODEL("Model is not an embedding model with SPLADE pooling (a masked LM)");
    if (t->route != TEI_ROUTE_EMBED_SPARSE && kind != KIND_EMBEDDING)
        return WRONG_MODEL("Model is not an embedding model");
    const json_t *inputs = fields_get(root, "inputs");
    text_options opts;
    if (embed_form(inputs, err) < 0 || check_empty(inputs, "inputs", err) < 0 ||
        text_opts(root, in, TEXT_OPT_PROMPT, &opts, err) < 0)
        return -1;
    opts.flags |= TEXT_IDS;
    if (t->route == TEI_ROUTE_EMBED) {
        const json_t *dims = fields_get(root, "dimensions");
        if (get_bool(root, "normalize", true, &t->normalize, err) < 0)
            return -1;
        if (dims && (!json_is_integer(dims) || json_integer_value(dims) < 1))
            return INVALID("Input validation error: `dimensions` should be positive");
        const int width = enc_embed_width(in->pooling, in->hp->d_model);
        if (dims && json_integer_value(dims) > width)
            return INVALID("Input validation error: `dimensions` should be smaller than the "
                           "maximum embedding dimension (%d)",
                           width);
        t->dimensions = dims ? (int)json_integer_value(dims) : 0;
    }
    t->single = json_is_string(inputs) || json_is_integer(json_array_get(inputs, 0));
    if (encode_set_text(req, inputs, "inputs", &opts, in->hp, in->ctx, err) < 0 ||
        encode_text_lengths(req, err) < 0 || encode_check_ids(req, "inputs", "inputs", err) < 0)
        return -1;
    if (t->route != TEI_ROUTE_EMBED_SPARSE)
        return 0;
    const size_t V = (size_t)enc_model_head(in->ctx->model)->n_outputs;
    if ((size_t)req->batch.B * V * 4 > in->ctx->max_logits_bytes)
        return api_error_set(err, API_TOO_LARGE,
                             "%d sparse vectors of %zu float32 are over limits.max_logits_bytes "
                             "(%zu)",
                             req->batch.B, V, in->ctx->max_logits_bytes);
    req->head = ENC_HEAD_OUT_SPLADE;
    req->head_outputs = V;
    req->head_per_token = false;
    return 0;
}

/* TEI's PredictInput: "s" and ["s"] one text, ["a", "b"] one pair, [["a"],
 * ["b", "c"], ...] a batch; into attnd's text form (predict.h), new
 * reference, *single for the one-input forms. */
static json_t *predict_inputs(const json_t *v, bool *single, api_error *err)
{
    static const char FORM[] = "a string, a pair of strings [string, string] or a batch of mixed "
                               "strings and pairs [[string], [string, string], ...]";
    *single = true;
    if (json_is_string(v))
        return json_string_length(v) ? json_incref((json_t *)(uintptr_t)v) : NULL;
    const size_t n = json_array_size(v);
    if (!json_is_array(v) || n == 0) {
        INVALID("`inputs` must be %s", FORM);
        return NULL;
    }
    if (json_is_string(json_array_get(v, 0))) {
        if (n > 2 || !json_is_string(json_array_get(v, n - 1))) {
            INVALID("`inputs` must be %s", FORM);
            return NULL;
        }
        return n == 1 ? json_incref(json_array_get(v, 0)) : json_pack("[O]", v);
    }
    *single = false;
    json_t *out = json_array();
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x)
    {
        const size_t k = json_array_size(x);
        const bool ok = json_is_array(x) && k >= 1 && k <= 2 &&
                        json_is_string(json_array_get(x, 0)) &&
                        json_is_string(json_array_get(x, k - 1));
        if (!ok) {
            INVALID("`inputs[%zu]` must be [string] or [string, string]: `inputs` must be %s", i,
                    FORM);
            json_decref(out);
            return NULL;
        }
        json_array_append(out, k == 1 ? json_array_get(x, 0) : (json_t *)(uintptr_t)x);
    }
    return out;
}

/* attnd's extension of /predict and /rerank: "explain" and "explain_from". */
static int explain_option(tei_state *t, const json_t *root, api_error *err)
{
    bool explain;
    const json_t *from = fields_get(root, "explain_from");
    if (get_bool(root, "explain", false, &explain, err) < 0)
        return -1;
    if (from && !json_is_integer(from))
        return INVALID("`explain_from` must be an integer, not %s", fields_kind(from));
    return encode_want_explain(&t->p.enc, explain, from, err);
}

/* A head's scores as TEI gives them: softmax over more than one label,
 * sigmoid of one (a reranker), the logits with raw_scores. */
static int tei_scores(tei_state *t, const json_t *root, api_error *err)
{
    bool raw;
    if (get_bool(root, "raw_scores", false, &raw, err) < 0)
        return -1;
    t->p.fn = raw                         ? ENC_HEAD_FN_NONE
              : t->p.head->n_outputs == 1 ? ENC_HEAD_FN_SIGMOID
                                          : ENC_HEAD_FN_SOFTMAX;
    return 0;
}

static int parse_predict(tei_state *t, const json_t *root, const proto_input *in, api_error *err)
{
    const tei_kind kind = kind_of(in->ctx);
    if (kind != KIND_CLASSIFIER && kind != KIND_RERANKER)
        return WRONG_MODEL("Model is not a classifier model");
    t->p.head = enc_model_head(in->ctx->model);
    text_options opts;
    if (text_opts(root, in, TEXT_OPT_SCORE, &opts, err) < 0 || tei_scores(t, root, err) < 0 ||
        explain_option(t, root, err) < 0)
        return -1;
    const json_t *v = fields_get(root, "inputs");
    json_t *inputs = v ? predict_inputs(v, &t->single, err) : NULL;
    if (!inputs)
        return err->kind ? -1 : INVALID("Input validation error: `inputs` " EMPTY_WORDS);
    const int rc = predict_prepare(&t->p, inputs, "inputs", &opts, in, err);
    json_decref(inputs);
    return rc;
}

static int parse_rerank(tei_state *t, const json_t *root, const proto_input *in, api_error *err)
{
    const json_t *query = fields_get(root, "query"), *texts = fields_get(root, "texts");
    if (!json_is_string(query))
        return INVALID("`query` must be a string%s", query ? "" : " and is required");
    if (!json_is_array(texts))
        return INVALID("`texts` must be a list of strings%s", texts ? "" : " and is required");
    if (json_array_size(texts) == 0)
        return INVALID("`texts` " EMPTY_WORDS);
    if (kind_of(in->ctx) != KIND_RERANKER)
        return WRONG_MODEL("model is not a re-ranker model");
    t->p.head = enc_model_head(in->ctx->model);
    text_options opts;
    if (text_opts(root, in, TEXT_OPT_SCORE, &opts, err) < 0 || tei_scores(t, root, err) < 0 ||
        explain_option(t, root, err) < 0 ||
        get_bool(root, "return_text", false, &t->return_text, err) < 0)
        return -1;
    json_t *pairs = json_array();
    size_t i;
    const json_t *x;
    json_array_foreach(texts, i, x)
    {
        if (!json_is_string(x)) {
            json_decref(pairs);
            return INVALID("`texts[%zu]` must be a string, not %s", i, fields_kind(x));
        }
        json_array_append_new(pairs, json_pack("[O,O]", query, x));
    }
    t->single = false;
    const int rc = predict_prepare(&t->p, pairs, "texts", &opts, in, err);
    json_decref(pairs);
    return rc;
}

static int parse_similarity(tei_state *t, const json_t *root, const proto_input *in, api_error *err)
{
    const json_t *inputs = fields_get(root, "inputs");
    const json_t *source = json_object_get(inputs, "source_sentence");
    const json_t *sentences = json_object_get(inputs, "sentences");
    const json_t *params = fields_get(root, "parameters");
    if (!json_is_object(inputs))
        return INVALID("`inputs` must be {\"source_sentence\": string, \"sentences\": [string]}");
    if (!json_is_string(source) || !json_is_array(sentences))
        return INVALID("`inputs.%s` must be %s",
                       json_is_string(source) ? "sentences" : "source_sentence",
                       json_is_string(source) ? "a list of strings" : "a string");
    if (json_array_size(sentences) == 0)
        return INVALID("`inputs.sentences` " EMPTY_WORDS);
    if (params && !json_is_object(params))
        return INVALID("`parameters` must be an object, not %s", fields_kind(params));
    if (kind_of(in->ctx) != KIND_EMBEDDING)
        return WRONG_MODEL("Model is not an embedding model");
    text_options opts;
    if (text_opts(params ? params : root, in, TEXT_OPT_PROMPT, &opts, err) < 0)
        return -1;
    json_t *all = json_pack("[O]", source);
    json_array_extend(all, (json_t *)(uintptr_t)sentences);
    int rc = texts_only(sentences, "inputs.sentences", err) < 0 ||
                     check_empty(source, "inputs.source_sentence", err) < 0 ||
                     check_empty(sentences, "inputs.sentences", err) < 0
                 ? -1
                 : 0;
    encode_request *req = &t->p.enc;
    if (rc == 0)
        rc = encode_set_text(req, all, "inputs", &opts, in->hp, in->ctx, err) < 0 ||
                     encode_text_lengths(req, err) < 0
                 ? -1
                 : 0;
    json_decref(all);
    return rc;
}

/* POST / on a head: transformers' pipeline for it, its parameters as
 * Inference Endpoints take them ({"inputs", "parameters": {"top_k",
 * "function_to_apply", "aggregation_strategy"}}). */
static int parse_pipeline(tei_state *t, const json_t *root, const proto_input *in, api_error *err)
{
    static const char *const FUNCTIONS[] = {"softmax", "sigmoid", "none"};
    predict_request *p = &t->p;
    p->head = enc_model_head(in->ctx->model);
    const json_t *params = fields_get(root, "parameters");
    const json_t *inputs = fields_get(root, "inputs");
    if (params && !json_is_object(params))
        return INVALID("`parameters` must be an object, not %s", fields_kind(params));
    const json_t *top_k = json_object_get(params, "top_k");
    const json_t *fn = json_object_get(params, "function_to_apply");
    const json_t *agg = json_object_get(params, "aggregation_strategy");
    if (top_k && (!json_is_integer(top_k) || json_integer_value(top_k) < 1))
        return INVALID("`parameters.top_k` must be an integer of at least 1");
    p->top_k = top_k ? (int)json_integer_value(top_k) : p->head->kind == ENC_HEAD_MASKED_LM ? 5 : 0;
    int k = 0; /* FUNCTIONS in enc_head_function's order */
    while (fn && k < 3 && !(json_is_string(fn) && strcmp(json_string_value(fn), FUNCTIONS[k]) == 0))
        k++;
    if (k == 3)
        return INVALID("`parameters.function_to_apply` must be \"softmax\", \"sigmoid\" or "
                       "\"none\"");
    p->fn = fn ? (enc_head_function)k : p->head->function;
    const char *a = json_string_value(agg);
    if (agg && (!a || (strcmp(a, "simple") != 0 && strcmp(a, "none") != 0)))
        return INVALID("`parameters.aggregation_strategy` must be \"simple\" or \"none\"");
    p->aggregate = !a || strcmp(a, "simple") == 0;
    text_options opts;
    if (texts_only(inputs, "inputs", err) < 0 || check_empty(inputs, "inputs", err) < 0 ||
        text_opts(params ? params : root, in, TEXT_OPT_SCORE, &opts, err) < 0)
        return -1;
    t->single = json_is_string(inputs);
    return predict_prepare(p, (json_t *)(uintptr_t)inputs, "inputs", &opts, in, err);
}

/* POST /: the route of the model's kind and the body's form. */
static int root_route(const json_t *root, const api_ctx *ctx)
{
    switch (kind_of(ctx)) {
    case KIND_EMBEDDING:
        return json_is_object(fields_get(root, "inputs")) ? TEI_ROUTE_SIMILARITY : TEI_ROUTE_EMBED;
    case KIND_RERANKER:
        return fields_get(root, "query") ? TEI_ROUTE_RERANK : ROUTE_PIPELINE;
    default:
        return ROUTE_PIPELINE;
    }
}

/* The characters (code points) of v's strings, a token id counting one, as
 * TEI's x-compute-characters counts an input. */
static long chars_of(const json_t *v)
{
    if (json_is_string(v))
        return (long)text_chars(json_string_value(v), json_string_length(v));
    if (json_is_integer(v))
        return 1;
    long n = 0;
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
        n += chars_of(json_array_get(v, i));
    const char *key;
    const json_t *x;
    if (json_is_object(v))
        json_object_foreach((json_t *)(uintptr_t)v, key, x) n += chars_of(x);
    return n;
}

static encode_request *tei_parse(void *state, const proto_input *in, api_error *err)
{
    tei_state *t = state;
    if (predict_init(&t->p, in, err) < 0)
        return NULL;
    json_t *root = load_body(in->body, in->len, err);
    if (!root)
        return NULL;
    t->route = in->route == TEI_ROUTE_ROOT ? root_route(root, in->ctx) : in->route;
    int rc;
    switch (t->route) {
    case TEI_ROUTE_PREDICT:
        rc = parse_predict(t, root, in, err);
        break;
    case TEI_ROUTE_RERANK:
        rc = parse_rerank(t, root, in, err);
        break;
    case TEI_ROUTE_SIMILARITY:
        rc = parse_similarity(t, root, in, err);
        break;
    case ROUTE_PIPELINE:
        rc = parse_pipeline(t, root, in, err);
        break;
    default:
        rc = parse_embed(t, root, in, err);
        break;
    }
    if (rc == 0 && t->route == TEI_ROUTE_RERANK)
        t->chars =
            chars_of(fields_get(root, "texts")) +
            chars_of(fields_get(root, "query")) * (long)json_array_size(fields_get(root, "texts"));
    else if (rc == 0)
        t->chars = chars_of(fields_get(root, "inputs"));
    json_decref(root);
    return rc < 0 ? NULL : &t->p.enc;
}

/* ---- responses --------------------------------------------------------------- */

/* The embeddings (B, dims; 0: all) of the batch as the served model makes
 * them, normalized or not (owned; NULL when out of memory). */
static float *pooled(const tei_state *t, const proto_output *out, bool normalize, int dims)
{
    const encode_request *req = &t->p.enc;
    enc_embedder e = *out->pooling;
    e.normalize = normalize;
    return enc_embed(&e, req->out, req->batch.B, req->batch.L, out->hp->d_model, req->lengths,
                     dims);
}

static int render_embed(const tei_state *t, const proto_output *out, stream *st)
{
    const int B = t->p.enc.batch.B;
    const int dims =
        t->dimensions ? t->dimensions : enc_embed_width(out->pooling, out->hp->d_model);
    float *x = pooled(t, out, t->normalize, dims);
    if (!x)
        return -1;
    stream_own(st, x);
    stream_puts(st, "[");
    for (int b = 0; b < B; b++) {
        const stream_view v = {x + (size_t)b * dims, STREAM_FLOAT32, 1, {(size_t)dims}, {1}};
        stream_puts(st, b ? "," : "");
        stream_json(st, &v, 9);
    }
    stream_puts(st, "]");
    return 0;
}

/* Each sequence's token states: the outputs, or, for a model with its own
 * projection (voyage-4-nano's), the outputs through it, as TEI's. */
static int render_embed_all(const tei_state *t, const proto_output *out, stream *st)
{
    const encode_request *req = &t->p.enc;
    const enc_embedder *e = out->pooling;
    const size_t L = (size_t)req->batch.L, D = (size_t)out->hp->d_model;
    const float *x = req->out;
    size_t row = L * D, W = D; /* sequence b's first state at x + b * row */
    if (e->project) {
        float *y =
            enc_project_tokens(e, req->out, req->batch.B, req->batch.L, (int)D, req->lengths);
        if (!y)
            return -1;
        stream_own(st, y);
        x = y;
        row = 0;
        W = (size_t)e->project->out;
    }
    stream_puts(st, "[");
    for (int b = 0; b < req->batch.B; b++) {
        const size_t len = encode_seq_len(req, (size_t)b);
        const stream_view v = {x, STREAM_FLOAT32, 2, {len, W}, {W, 1}};
        stream_puts(st, b ? "," : "");
        stream_json(st, &v, 9);
        x += row ? row : len * W; /* the projected rows are packed */
    }
    stream_puts(st, "]");
    return 0;
}

static int render_sparse(const tei_state *t, stream *st)
{
    const encode_request *req = &t->p.enc;
    const size_t V = req->head_outputs;
    stream_puts(st, "[");
    for (int b = 0; b < req->batch.B; b++) {
        const float *w = req->logits + (size_t)b * V;
        stream_puts(st, b ? ",[" : "[");
        for (size_t i = 0, n = 0; i < V; i++)
            if (w[i] != 0.0f)
                stream_printf(st, "%s{\"index\":%zu,\"value\":%.9g}", n++ ? "," : "", i,
                              (double)w[i]);
        stream_puts(st, "]");
    }
    stream_puts(st, "]");
    return 0;
}

static int render_similarity(const tei_state *t, const proto_output *out, stream *st)
{
    const int B = t->p.enc.batch.B, D = enc_embed_width(out->pooling, out->hp->d_model);
    float *x = pooled(t, out, false, 0);
    if (!x)
        return -1;
    double ss = 0.0;
    for (int j = 0; j < D; j++)
        ss += (double)x[j] * x[j];
    stream_puts(st, "[");
    for (int b = 1; b < B; b++) {
        const float *y = x + (size_t)b * D;
        double dot = 0.0, yy = 0.0;
        for (int j = 0; j < D; j++) {
            dot += (double)x[j] * y[j];
            yy += (double)y[j] * y[j];
        }
        const double den = sqrt(ss) * sqrt(yy);
        char num[32]; /* a float as TEI's serde writes it: 1.0, not 1 */
        const int n = snprintf(num, sizeof num, "%.9g", den > 0.0 ? dot / den : 0.0);
        stream_printf(st, "%s%s%s", b > 1 ? "," : "", num,
                      strpbrk(num, ".en") || n < 0 ? "" : ".0");
    }
    stream_puts(st, "]");
    free(x);
    return 0;
}

/* A JSON value into the stream (stolen); -1 for NULL. */
static int put_json(stream *st, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (!s)
        return -1;
    stream_text(st, s, strlen(s));
    free(s);
    return 0;
}

/* Each sequence's answer: the answer itself for one input, else a list;
 * with explain, {"predictions", "explain"} (attnd's extension). */
static json_t *answers(const tei_state *t, const proto_output *out, bool nest_single,
                       api_error *err)
{
    const predict_request *p = &t->p;
    const size_t B = (size_t)p->enc.batch.B;
    json_t *list = json_array(), *expl = p->enc.explain ? json_array() : NULL;
    double *rel = p->enc.explain ? malloc((size_t)p->enc.batch.L * sizeof *rel) : NULL;
    int row = 0;
    json_t *body = NULL;
    for (size_t b = 0; b < B; b++) {
        if (json_array_append_new(list, predict_answer(p, b, &row, err)) < 0)
            goto done;
        if (expl && (!rel || json_array_append_new(expl, predict_explain(p, out->hp, b, rel)) < 0))
            goto done;
    }
    body = t->single && !nest_single ? json_incref(json_array_get(list, 0)) : json_incref(list);
    if (expl)
        body = json_pack("{s:o,s:O}", "predictions", body, "explain",
                         t->single ? json_array_get(expl, 0) : expl);
done:
    json_decref(list);
    json_decref(expl);
    free(rel);
    return body;
}

typedef struct ranked {
    size_t index;
    double score;
} ranked;

/* TEI's order: by score, highest first; of equal scores the later text
 * first (a stable ascending sort, reversed). */
static int by_rank(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return x->index < y->index ? 1 : -1;
}

static json_t *reranked(const tei_state *t, const proto_output *out, api_error *err)
{
    const predict_request *p = &t->p;
    const size_t B = (size_t)p->enc.batch.B;
    ranked *r = malloc(B * sizeof *r);
    double *rel = p->enc.explain ? malloc((size_t)p->enc.batch.L * sizeof *rel) : NULL;
    json_t *list = json_array();
    for (size_t b = 0; r && b < B; b++) {
        const float x = p->enc.logits[b];
        r[b] = (ranked){b, p->fn == ENC_HEAD_FN_NONE ? (double)x : 1.0 / (1.0 + exp(-(double)x))};
    }
    if (!r || !list || (p->enc.explain && !rel)) {
        NOMEM();
        goto fail;
    }
    qsort(r, B, sizeof *r, by_rank);
    for (size_t k = 0; k < B; k++) {
        json_t *o = json_pack("{s:I}", "index", (json_int_t)r[k].index);
        if (o && t->return_text)
            json_object_set(o, "text", json_array_get(json_array_get(p->inputs, r[k].index), 1));
        if (o)
            json_object_set_new(o, "score", json_real(r[k].score));
        if (o && rel)
            json_object_set_new(o, "explain", predict_explain(p, out->hp, r[k].index, rel));
        if (json_array_append_new(list, o) < 0)
            goto fail;
    }
    free(r);
    free(rel);
    return list;
fail:
    free(r);
    free(rel);
    json_decref(list);
    return NULL;
}

static int tei_render(const void *state, const proto_output *out, stream *st, size_t *header_len)
{
    const tei_state *t = state;
    api_error e = {0}, *err = &e;
    *header_len = 0;
    int rc;
    switch (t->route) {
    case TEI_ROUTE_EMBED:
        rc = render_embed(t, out, st);
        break;
    case TEI_ROUTE_EMBED_ALL:
        rc = render_embed_all(t, out, st);
        break;
    case TEI_ROUTE_EMBED_SPARSE:
        rc = render_sparse(t, st);
        break;
    case TEI_ROUTE_SIMILARITY:
        rc = render_similarity(t, out, st);
        break;
    case TEI_ROUTE_RERANK:
        rc = put_json(st, reranked(t, out, err));
        break;
    default: /* /predict; POST / on a head: text-classification nests one text's labels */
        rc = put_json(
            st, answers(t, out, t->route == ROUTE_PIPELINE && t->p.head->kind == ENC_HEAD_SEQUENCE,
                        err));
        break;
    }
    return rc < 0 || stream_failed(st) ? -1 : 0;
}

static void tei_free(void *state)
{
    predict_request_free(&((tei_state *)state)->p);
}

/* ---- /tokenize and /decode ------------------------------------------------------ */

/* One text's tokens in TEI's form: byte offsets into the text as it was
 * tokenized, the prompt (or NULL) before it. */
static json_t *tei_tokens(const tok_tokenizer *tok, const tok_encoding *e, const json_t *text,
                          const char *prompt)
{
    const size_t pl = prompt ? strlen(prompt) : 0, tl = json_string_length(text), len = pl + tl;
    char *s = malloc(len + 1);
    json_t *list = s ? json_array() : NULL;
    if (s) {
        memcpy(s, prompt ? prompt : "", pl);
        memcpy(s + pl, json_string_value(text), tl);
        s[len] = '\0';
    }
    for (size_t i = 0; list && i < e->n; i++) {
        json_t *o;
        if (e->special[i]) {
            const char *vocab = tok_token_text(tok, e->ids[i]);
            o = json_pack("{s:i,s:s,s:b,s:n,s:n}", "id", (int)e->ids[i], "text", vocab ? vocab : "",
                          "special", 1, "start", "stop");
        } else {
            const size_t a = text_byte_of(s, len, e->start[i]),
                         b = text_byte_of(s, len, e->stop[i]);
            o = json_pack("{s:i,s:s%,s:b,s:I,s:I}", "id", (int)e->ids[i], "text", s + a,
                          b > a ? b - a : 0, "special", 0, "start", (json_int_t)a, "stop",
                          (json_int_t)b);
        }
        if (json_array_append_new(list, o) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    free(s);
    return list;
}

json_t *tei_tokenize(const char *body, size_t len, const api_ctx *ctx, api_error *err)
{
    json_t *root = load_body(body, len, err), *out = NULL;
    if (!root)
        return NULL;
    const json_t *inputs = fields_get(root, "inputs"), *prompt = fields_get(root, "prompt_name");
    bool special;
    text_batch tb = {0};
    text_options o; /* the prompt (default: the model's); no limit: counting is what it is for */
    if (texts_only(inputs, "inputs", err) < 0 || check_empty(inputs, "inputs", err) < 0 ||
        get_bool(root, "add_special_tokens", true, &special, err) < 0 ||
        (prompt && !json_is_string(prompt) &&
         INVALID("`prompt_name` must be a string, not %s", fields_kind(prompt))) ||
        text_read_options(root, ctx, TEXT_OPT_PROMPT, &o, err) < 0)
        goto done;
    o.flags = (special ? TEXT_SPECIALS : 0) | TEXT_ALLOW_EMPTY | TEXT_NO_LIMIT;
    if (text_tokenize(inputs, "inputs", ctx, &o, &tb, err) < 0 || !(out = json_array()))
        goto done;
    for (size_t b = 0; b < tb.B; b++) {
        const json_t *text = json_is_string(inputs) ? inputs : json_array_get(inputs, b);
        if (json_array_append_new(out, tei_tokens(ctx->tokenizer, &tb.enc[b], text, o.prompt)) <
            0) {
            json_decref(out);
            out = NULL;
            NOMEM();
            break;
        }
    }
done:
    text_batch_free(&tb);
    json_decref(root);
    return out;
}

/* One list of ids of /decode (what names it), into ids (its length). */
static int read_ids(const json_t *v, const char *what, int32_t *ids, api_error *err)
{
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x)
    {
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
            return INVALID("`%s[%zu]` must be a token id (an integer from 0), not %s", what, i,
                           fields_kind(x));
        ids[i] = (int32_t)json_integer_value(x);
    }
    return json_array_size(v) ? 0 : INVALID("Input validation error: `input_ids` " EMPTY_WORDS);
}

json_t *tei_decode(const char *body, size_t len, const api_ctx *ctx, api_error *err)
{
    json_t *root = load_body(body, len, err), *out = NULL;
    if (!root)
        return NULL;
    const json_t *ids = fields_get(root, "ids");
    bool skip;
    if (!ctx->tokenizer) {
        INVALID("the served model has no tokenizer");
        goto done;
    }
    if (!json_is_array(ids)) {
        INVALID("`ids` must be a list of token ids or a list of lists of them%s",
                ids ? "" : ", and is required");
        goto done;
    }
    if (get_bool(root, "skip_special_tokens", true, &skip, err) < 0)
        goto done;
    const bool nested = json_is_array(json_array_get(ids, 0));
    const size_t n = nested ? json_array_size(ids) : 1;
    if (ctx->max_batch > 0 && n > (size_t)ctx->max_batch) {
        api_error_set(err, API_TOO_LARGE, "batch size %zu > maximum allowed batch size %d", n,
                      ctx->max_batch);
        goto done;
    }
    out = json_array();
    for (size_t b = 0; out && b < n; b++) {
        const json_t *row = nested ? json_array_get(ids, b) : ids;
        char what[32] = "ids";
        if (nested)
            snprintf(what, sizeof what, "ids[%zu]", b);
        int32_t *v = malloc((json_array_size(row) + 1) * sizeof *v);
        char *s = NULL;
        size_t slen = 0;
        enc_error e = {0};
        int rc = !v                    ? NOMEM()
                 : !json_is_array(row) ? INVALID("`%s` must be a list of token ids", what)
                                       : read_ids(row, what, v, err);
        if (rc == 0 &&
            (rc = tok_decode(ctx->tokenizer, v, json_array_size(row), skip, &s, &slen, &e)) < 0)
            api_error_set(err, rc == ENC_ENOMEM ? API_UNAVAILABLE : API_BAD_REQUEST,
                          "tokenizer error: %s: %s", what, e.message);
        free(v);
        if (rc < 0 || json_array_append_new(out, json_stringn(s, slen)) < 0) {
            free(s);
            json_decref(out);
            out = NULL;
            if (!err->kind)
                NOMEM();
            break;
        }
        free(s);
    }
done:
    json_decref(root);
    return out;
}

/* ---- GET /info ------------------------------------------------------------------ */

/* {"id2label": {"0": ...}, "label2id": {...: 0}} of the head. */
static json_t *labels_of(const enc_head_info *h)
{
    json_t *id2label = json_object(), *label2id = json_object();
    for (int i = 0; h->labels && i < h->n_outputs; i++) {
        char k[16];
        snprintf(k, sizeof k, "%d", i);
        json_object_set_new(id2label, k, json_string(h->labels[i]));
        json_object_set_new(label2id, h->labels[i], json_integer(i));
    }
    return json_pack("{s:o,s:o}", "id2label", id2label, "label2id", label2id);
}

static json_t *model_type(const proto_server *sv)
{
    const api_ctx *ctx = sv->ctx;
    const enc_head_info *h = enc_model_head(ctx->model);
    switch (kind_of(ctx)) {
    case KIND_EMBEDDING: /* TEI's Pool as it prints it: last_token, not attnd's "last" */
        return json_pack("{s:{s:s}}", "embedding", "pooling",
                         sv->pooling->mode == ENC_POOL_LAST ? "last_token"
                                                            : enc_pooling_name(sv->pooling->mode));
    case KIND_CLASSIFIER:
        return json_pack("{s:o}", "classifier", labels_of(h));
    case KIND_RERANKER:
        return json_pack("{s:o}", "reranker", labels_of(h));
    case KIND_TOKEN: /* attnd's: TEI serves neither */
        return json_pack("{s:o}", "token_classification", labels_of(h));
    case KIND_MASKED_LM:
        return json_pack("{s:{s:s}}", "masked_lm", "pooling", "splade");
    }
    return NULL;
}

static int tei_get(int route, const proto_server *sv, char **body)
{
    if (route != TEI_ROUTE_INFO)
        return -1;
    if (!sv->loaded)
        return PROTO_NOT_READY;
    const api_ctx *ctx = sv->ctx;
    json_t *j = json_pack(
        "{s:s,s:n,s:s,s:s,s:o,s:n,s:I,s:I,s:n,s:i,s:b,s:n,s:s,s:n,s:n}", "model_id", sv->model_name,
        "model_sha", "model_dtype", sv->dtype, "served_model_name", sv->model_name, "model_type",
        model_type(sv), "max_concurrent_requests", "max_input_length",
        (json_int_t)(ctx->tokenizer ? text_max_tokens(ctx, NULL) : (size_t)ctx->max_seq_len),
        "max_batch_tokens", (json_int_t)ctx->max_batch_tokens, "max_batch_requests",
        "max_client_batch_size", ctx->max_batch, "auto_truncate", ctx->auto_truncate,
        "tokenization_workers", "version", sv->version, "sha", "docker_label");
    *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return *body ? 200 : -1;
}

/* TEI's timing headers of an answer (integer milliseconds, for the whole
 * request): x-compute-time is the tokenization, the queue and the
 * inference together. */
static int tei_headers(const void *state, const proto_output *out, proto_header *h)
{
    const tei_state *t = state;
    const encode_usage *u = out->usage;
    const struct {
        const char *name;
        double v;
    } ms[] = {{"x-compute-time", out->parse_ms + u->queue_ms + u->compute_ms},
              {"x-total-time", out->total_ms},
              {"x-tokenization-time", out->parse_ms},
              {"x-queue-time", u->queue_ms},
              {"x-inference-time", u->compute_ms}};
    int n = 0;
    h[n] = (proto_header){.name = "x-compute-type", .value = "cpu"};
    n++;
    h[n].name = "x-compute-characters";
    snprintf(h[n++].value, sizeof h->value, "%ld", t->chars);
    h[n].name = "x-compute-tokens";
    snprintf(h[n++].value, sizeof h->value, "%ld", u->tokens);
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
        h[n].name = ms[i].name;
        snprintf(h[n++].value, sizeof h->value, "%lld", (long long)ms[i].v);
    }
    return n;
}

const protocol tei_protocol = {.name = "tei",
                               .state_size = sizeof(tei_state),
                               .parse = tei_parse,
                               .render = tei_render,
                               .free = tei_free,
                               .get = tei_get,
                               .error_body = tei_error_body,
                               .error_status = tei_error_status,
                               .headers = tei_headers};
