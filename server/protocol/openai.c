/* openai.c - POST /v1/embeddings, OpenAI's embeddings API: input (text or
 * token ids), model, encoding_format, dimensions, user, and beside them
 * truncate, truncation_direction and prompt_name (text.h); the sentence
 * embeddings pooled from the forward's outputs (core/model/pooling.c). */
#include "protocol/openai.h"

#include "protocol/protocol.h"
#include "protocol/text.h"
#include "protocol/fields.h"
#include "protocol/schemas.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...)       api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)
#define TOO_LARGE(...) api_error_set(err, API_TOO_LARGE, __VA_ARGS__)

static const char INPUT_FORM[] =
    "a string, a list of strings, a list of token ids, or a list of lists of token ids";

/* What an input list holds: its first entry decides. */
typedef enum input_kind { IN_TEXTS, IN_IDS, IN_ID_ROWS } input_kind;

/* An entry as messages name it: "a string", "a token id" (an integer), "a
 * list", "a number that is not an integer", "an object", ... */
static const char *entry_kind(const json_t *v)
{
    return json_is_integer(v) ? "a token id"
           : json_is_array(v) ? "a list"
           : json_is_real(v)  ? "a number that is not an integer"
                              : fields_kind(v);
}

/* The kind of list a (not empty), from its first entry; every other entry
 * must be of that kind, and a row of ids, integers alone.  0, or -1 with
 * err naming the first entry that is not. */
static int kind_of(const json_t *a, input_kind *kind, api_error *err)
{
    const json_t *first = json_array_get(a, 0);
    if (json_is_string(first))
        *kind = IN_TEXTS;
    else if (json_is_integer(first))
        *kind = IN_IDS;
    else if (json_is_array(first))
        *kind = IN_ID_ROWS;
    else
        return BAD("input[0] is %s; input must be %s", entry_kind(first), INPUT_FORM);
    static const char *const LIST[] = {"a list of texts holds strings alone",
                                       "a list of token ids holds integers alone",
                                       "a list of lists holds lists of token ids alone"};
    size_t i, j;
    json_t *v, *id;
    json_array_foreach(a, i, v)
    {
        const bool fits = *kind == IN_TEXTS ? json_is_string(v)
                          : *kind == IN_IDS ? json_is_integer(v)
                                            : json_is_array(v);
        if (!fits)
            return BAD("input[%zu] is %s, but input[0] is %s: %s", i, entry_kind(v),
                       entry_kind(first), LIST[*kind]);
        if (*kind != IN_ID_ROWS)
            continue;
        json_array_foreach(v, j, id)
        {
            if (!json_is_integer(id))
                return BAD("input[%zu][%zu] is %s; %s", i, j, entry_kind(id), LIST[IN_IDS]);
        }
    }
    return 0;
}

/* B rows of ids (row b: rows[b], an int list, or for the text form enc[b])
 * into req's batch: B, L, input_ids, lengths when ragged.  req->batched
 * says how a row is named: input[b] (a list of rows), else input. */
static int fill_rows(encode_request *req, size_t B, const json_t *const *rows,
                     const tok_encoding *enc, const enc_hparams *hp, const api_ctx *ctx,
                     long *tokens, api_error *err)
{
    const char *from;
    const size_t max = text_max_tokens(ctx, &from);
    size_t L = 0;
    bool ragged = false;
    for (size_t b = 0; b < B; b++) {
        const size_t n = rows ? json_array_size(rows[b]) : enc[b].n;
        char at[48];
        snprintf(at, sizeof at, req->batched ? "input[%zu]" : "input", b);
        if (n == 0)
            return BAD("%s is empty; a sequence needs at least one token", at);
        if (n > max) /* token ids are taken as given: never cut */
            return TOO_LARGE("%s has %zu tokens; the model takes at most %zu (%s)", at, n, max,
                             from);
        ragged |= b > 0 && n != L;
        L = n > L ? n : L;
        *tokens += (long)n;
    }
    if (encode_check_limits(req, B, L, hp, ctx, err) < 0)
        return -1;
    req->batch.B = (int)B;
    req->batch.L = (int)L;
    if (encode_alloc_ids(req, false, "input", err) < 0)
        return -1;
    if (ragged || (rows == NULL && B > 0)) {
        if (!(req->lengths = encode_zalloc(B, sizeof *req->lengths)))
            return api_error_set(err, API_UNAVAILABLE, "out of memory");
        req->batch.lengths = req->lengths;
    }
    for (size_t b = 0; b < B; b++) {
        const size_t n = rows ? json_array_size(rows[b]) : enc[b].n;
        for (size_t i = 0; i < n; i++) {
            long long id = rows ? json_integer_value(json_array_get(rows[b], i)) : enc[b].ids[i];
            char at[48];
            if (id < INT32_MIN || id > INT32_MAX)
                return BAD("input%s = %lld is outside the int32 range",
                           encode_index_text(req, b, i, at), id);
            req->input_ids[b * L + i] = (int32_t)id;
        }
        if (req->lengths)
            req->lengths[b] = (int)n;
    }
    return 0;
}

/* The fields that say how text is tokenized (text.h), refused with token
 * ids. */
static const char *const TEXT_ONLY[] = {"truncate", "truncation_direction", "prompt_name"};

static int parse_input(encode_request *req, const json_t *v, const json_t *root,
                       const enc_hparams *hp, const api_ctx *ctx, long *tokens, api_error *err)
{
    if (!v)
        return BAD("input is required: %s", INPUT_FORM);
    input_kind kind = IN_TEXTS;
    if (json_is_array(v)) {
        if (json_array_size(v) == 0)
            return BAD("input is an empty list; expected %s", INPUT_FORM);
        if (kind_of(v, &kind, err) < 0)
            return -1;
    } else if (!json_is_string(v)) {
        return BAD("input must be %s, not %s", INPUT_FORM, fields_kind(v));
    }
    const size_t B = kind == IN_IDS || !json_is_array(v) ? 1 : json_array_size(v);
    if (B > (size_t)ctx->max_batch)
        return TOO_LARGE("input has %zu entries; /v1/embeddings takes at most %d", B,
                         ctx->max_batch);
    if (encode_ids_allowed(req, "input", err) < 0)
        return -1;
    if (kind == IN_IDS || kind == IN_ID_ROWS) {
        for (size_t i = 0; i < sizeof TEXT_ONLY / sizeof *TEXT_ONLY; i++)
            if (fields_get(root, TEXT_ONLY[i]))
                return BAD("%s is only used with text input; token ids are taken as given",
                           TEXT_ONLY[i]);
        const json_t **rows = encode_zalloc(B, sizeof *rows);
        if (!rows)
            return api_error_set(err, API_UNAVAILABLE, "out of memory");
        for (size_t b = 0; b < B; b++)
            rows[b] = kind == IN_IDS ? v : json_array_get(v, b);
        req->batched = kind == IN_ID_ROWS;
        int rc = fill_rows(req, B, rows, NULL, hp, ctx, tokens, err);
        free(rows);
        return rc;
    }
    text_options o;
    if (text_read_options(root, ctx, TEXT_OPT_AUTO | TEXT_OPT_PROMPT, &o, err) < 0)
        return -1;
    o.flags |= TEXT_SPECIALS;
    text_batch tb;
    if (text_tokenize(v, "input", ctx, &o, &tb, err) < 0)
        return -1;
    req->batched = tb.batched;
    int rc = fill_rows(req, tb.B, NULL, tb.enc, hp, ctx, tokens, err);
    text_batch_free(&tb);
    return rc;
}

/* The body's fields (input is parse_input's to require: its message says
 * the forms). */
static const char *const ENCODING_FORMATS[] = {"float", "base64", NULL};
static const field_spec BODY_FIELDS[] = {
    {.name = "input", .type = FIELD_JSON},
    {.name = "model", .type = FIELD_STRING},
    {.name = "encoding_format", .type = FIELD_CHOICE, .choices = ENCODING_FORMATS},
    {.name = "dimensions", .type = FIELD_INT, .min = 1, .max = INT_MAX},
    {.name = "user", .type = FIELD_STRING},
    TEXT_FIELD_TRUNCATE, /* attnd's, beside OpenAI's: text.h */
    TEXT_FIELD_DIRECTION,
    TEXT_FIELD_PROMPT_NAME,
};
const field_table openai_embeddings_fields = FIELD_TABLE("field", BODY_FIELDS);

int openai_parse(encode_request *req, openai_request *o, const char *body, size_t len,
                 const char *model_name, const enc_hparams *hp, int width, const api_ctx *ctx,
                 api_error *err)
{
    memset(o, 0, sizeof *o);
    if (encode_request_init(req, hp, ctx, err) < 0)
        return -1;
    req->attn_mode = ENC_ATTN_NONE; /* the outputs alone: no attention weights */
    json_t *root = fields_load(body, len, "input", err);
    if (!root)
        return -1;
    int rc = -1;
    json_t *v;
    if (!json_is_object(root)) {
        BAD("the request body must be a JSON object, not %s", fields_kind(root));
        goto done;
    }
    if (fields_check(&openai_embeddings_fields, root, "", err) < 0)
        goto done;
    if ((v = fields_get(root, "model")) && strcmp(json_string_value(v), model_name) != 0) {
        char s[API_SAFE_MAX + 4];
        api_error_set(err, API_NOT_FOUND, "model '%s' does not exist: this server serves '%s'",
                      api_safe_text(json_string_value(v), s), model_name);
        goto done;
    }
    o->base64 = fields_choice(&openai_embeddings_fields, root, "encoding_format", 0) == 1;
    if ((v = fields_get(root, "dimensions"))) {
        if (json_integer_value(v) > width) {
            BAD("dimensions = %lld is more than the model's %d", (long long)json_integer_value(v),
                width);
            goto done;
        }
        o->dimensions = (int)json_integer_value(v);
    }
    /* Up to OPENAI_MAX_INPUTS inputs, or limits.max_batch when that is
     * more: the forward's cost is bounded by its tokens (max_seq_len,
     * max_batch_tokens), and OpenAI's clients send up to 2,048 at once. */
    api_ctx wide = *ctx;
    if (wide.max_batch < OPENAI_MAX_INPUTS)
        wide.max_batch = OPENAI_MAX_INPUTS;
    if (parse_input(req, fields_get(root, "input"), root, hp, &wide, &o->tokens, err) < 0 ||
        encode_check_ids(req, "input", "input", err) < 0)
        goto done;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

int openai_render(const encode_request *req, const openai_request *o, const char *model_name,
                  int d_model, const enc_embedder *e, stream *st)
{
    const int B = req->batch.B;
    const int dims = o->dimensions ? o->dimensions : enc_embed_width(e, d_model);
    float *pooled = enc_embed(e, req->out, B, req->batch.L, d_model, req->lengths, dims);
    if (!pooled)
        return -1;
    stream_own(st, pooled); /* read as the body is sent */
    json_t *name = json_string(model_name);
    char *quoted = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    json_decref(name);
    stream_puts(st, "{\"object\":\"list\",\"data\":[");
    for (int b = 0; b < B; b++) {
        const stream_view v = {pooled + (size_t)b * dims, STREAM_FLOAT32, 1, {(size_t)dims}, {1}};
        stream_printf(st, "%s{\"object\":\"embedding\",\"index\":%d,\"embedding\":", b ? "," : "",
                      b);
        if (o->base64) {
            stream_puts(st, "\"");
            stream_base64(st, &v);
            stream_puts(st, "\"}");
        } else {
            stream_json(st, &v, 9);
            stream_puts(st, "}");
        }
    }
    stream_printf(st, "],\"model\":%s,\"usage\":{\"prompt_tokens\":%ld,\"total_tokens\":%ld}}",
                  quoted ? quoted : "\"\"", o->tokens, o->tokens);
    free(quoted);
    return stream_failed(st) ? -1 : 0;
}

/* ---- GET /v1/models, /v1/models/{model} ------------------------------------------ */

/* The model as OpenAI's model object (new reference). */
static json_t *model_object(const char *name, long long created)
{
    return json_pack("{s:s, s:s, s:I, s:s}", "id", name, "object", "model", "created",
                     (json_int_t)created, "owned_by", "attnd");
}

char *openai_models_json(const char *model_name, long long created, bool list)
{
    json_t *m = model_object(model_name, created);
    json_t *body = list && m ? json_pack("{s:s, s:[o]}", "object", "list", "data", m) : m;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return text;
}

/* ---- errors in OpenAI's shape ------------------------------------------------------ */

/* The body's fields an error's param names: the message's first word when
 * it is one of them ("input[2] is empty" is input's), else none. */
static const char *param_of(const char *message)
{
    size_t n = strspn(message, "abcdefghijklmnopqrstuvwxyz_");
    for (size_t i = 0; i < sizeof BODY_FIELDS / sizeof *BODY_FIELDS; i++)
        if (n > 0 && strlen(BODY_FIELDS[i].name) == n &&
            strncmp(BODY_FIELDS[i].name, message, n) == 0)
            return BODY_FIELDS[i].name;
    return NULL;
}

char *openai_error_body(api_error_kind kind, const char *message)
{
    const int status = api_error_status(kind);
    const char *type = "invalid_request_error", *code = NULL, *param = param_of(message);
    if (kind == API_UNAUTHORIZED)
        code = "invalid_api_key";
    else if (kind == API_NOT_FOUND && param && strcmp(param, "model") == 0)
        code = "model_not_found";
    else if (kind == API_QUEUE_FULL)
        type = "requests", code = "rate_limit_exceeded"; /* OpenAI's rate limit's own */
    else if (status >= 500 && kind != API_NOT_IMPLEMENTED)
        type = "server_error";
    json_t *body = json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error", "message", message, "type",
                             type, "param", param, "code", code);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return text;
}

/* ---- the protocol (protocol.h) ---------------------------------------------- */

/* A /v1/embeddings request's state: its forward and its own options. */
typedef struct openai_state {
    encode_request enc;
    openai_request o;
} openai_state;

static encode_request *openai_proto_parse(void *state, const proto_input *in, api_error *err)
{
    openai_state *st = state;
    if (openai_parse(&st->enc, &st->o, in->body, in->len, in->model_name, in->hp,
                     enc_embed_width(in->pooling, in->hp->d_model), in->ctx, err) < 0)
        return NULL;
    return &st->enc;
}

static int openai_proto_render(const void *state, const proto_output *out, stream *st,
                               size_t *header_len)
{
    const openai_state *s = state;
    *header_len = 0;
    return openai_render(&s->enc, &s->o, out->model_name, out->hp->d_model, out->pooling, st);
}

static void openai_proto_free(void *state)
{
    encode_request_free(&((openai_state *)state)->enc);
}

#define MODELS_PATH "/v1/models"

int openai_route_of(const char *path)
{
    const size_t n = strlen(MODELS_PATH);
    if (strcmp(path, "/v1/embeddings") == 0)
        return OPENAI_ROUTE_EMBEDDINGS;
    if (strncmp(path, MODELS_PATH, n) != 0)
        return OPENAI_ROUTE_NONE;
    if (path[n] == '\0')
        return OPENAI_ROUTE_MODELS;
    /* /v1/models/{model}: the rest of the path is the id, slashes and all */
    return path[n] == '/' && path[n + 1] ? OPENAI_ROUTE_MODEL : OPENAI_ROUTE_NONE;
}

static int openai_check_path(const char *path, const char *model_name, api_error *err)
{
    const char *id = path + strlen(MODELS_PATH "/");
    if (strcmp(id, model_name) == 0)
        return 0;
    char s[API_SAFE_MAX + 4];
    return api_error_set(err, API_NOT_FOUND, "model '%s' does not exist: this server serves '%s'",
                         api_safe_text(id, s), model_name);
}

/* GET /v1/models and /v1/models/{model} (check_model has matched the
 * name): the served model, once loaded. */
static int openai_get(int route_id, const proto_server *sv, char **body)
{
    *body = NULL;
    if (route_id != OPENAI_ROUTE_MODELS && route_id != OPENAI_ROUTE_MODEL)
        return -1;
    if (!sv->loaded)
        return PROTO_NOT_READY;
    *body = openai_models_json(sv->model_name, sv->started, route_id == OPENAI_ROUTE_MODELS);
    return *body ? 200 : -1;
}

const protocol openai_protocol = {.name = "openai",
                                  .match = openai_route_of,
                                  .check_model = openai_check_path,
                                  .state_size = sizeof(openai_state),
                                  .parse = openai_proto_parse,
                                  .render = openai_proto_render,
                                  .free = openai_proto_free,
                                  .get = openai_get,
                                  .error_body = openai_error_body};
