/* v2.c - the Open Inference Protocol (KServe v2) with Triton's binary tensor
 * data extension: /v2 routes, metadata, and the infer request and response
 * codec, parsing into the neutral request (encode_request.h) with the shared
 * options (options.h).
 *
 * Choices where the contract (docs/contract.md section 5) and the protocol
 * documents leave room
 * (docs/api.md, "POST /v2/models/{name}/infer", is the user's
 * version of this list):
 *
 * - One model, one version: "1".  /versions/{v} with any other v is a 404.
 * - Inputs: embeddings FP32 [B, L, D] (rank 3 only) or, for a model with an
 *   embedding module, input_ids [B, L] with optional token_type_ids [B, L]
 *   (INT32 or INT64: INT64 values outside int32 are refused); optional
 *   attention_mask [B, L] (INT32 or INT64, /v1's meaning), lengths INT32
 *   [B] and position_ids INT32 [L] or [B, L]; no others.  The model
 *   metadata lists input_ids and token_type_ids as INT64, what tokenizers
 *   give.  JSON "data" is flat (row-major) or fully nested to the
 *   shape; a partly nested array is refused.  Binary data is little-endian,
 *   row-major, in input order after the JSON header; binary_data_size must
 *   be exactly the shape's byte count, and the sizes must add up to the bytes
 *   after the header: no more, no less.
 * - Request parameters: attention ("heads" | "mean" | "none"), the mask
 *   options of /v1's "mask" object (causal, window, global, key_padding, attn,
 *   same forms and rules; window_left / window_right as scalar alternatives to
 *   {"left", "right"}; a non-scalar option may also be sent as a string
 *   holding its JSON, since the protocol's parameters are scalars), and
 *   binary_data_output.  Anything else is refused, so a typo is an error.
 * - Outputs: "outputs" FP32 [B, L, D] and "attention" FP32 [B, H, L, L]
 *   ("mean": [B, L, L]), the last layer's; padded positions are zero (dense
 *   tensors, not ragged).  No "outputs" list (or an empty one) means both
 *   ("attention" only when the attention parameter is not "none"); asking
 *   for "outputs" alone computes no attention.
 * - Response floats in JSON are printed with 9 significant digits (they
 *   round-trip float32).  The response echoes "id" when the request has one.
 * - An input's "data" array of numbers is read from the body text by
 *   codec/extract.c, as v1.c reads "embeddings"; jansson parses the rest.
 *
 * The request's parsing is v2_request.c; the routes, the metadata and the
 * response are here.
 */
#include "protocol/v2.h"

#include "protocol/protocol.h"

#include "codec/stream.h"
#include "codec/strbuf.h"

#include <jansson.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- routes and metadata ----------------------------------------------------- */

static bool seg_copy(char *dst, size_t size, const char *s, size_t n)
{
    if (n >= size)
        return false;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return true;
}

static bool seg_is(const char *s, size_t n, const char *want)
{
    return strlen(want) == n && memcmp(s, want, n) == 0;
}

v2_route v2_route_parse(const char *url, v2_path *p)
{
    memset(p, 0, sizeof *p);
    if (!url || strncmp(url, "/v2", 3) != 0 || (url[3] != '\0' && url[3] != '/'))
        return V2_ROUTE_NONE;
    const char *rest = url + 3;
    if (!*rest)
        return V2_ROUTE_SERVER;
    if (strcmp(rest, "/health/live") == 0)
        return V2_ROUTE_LIVE;
    if (strcmp(rest, "/health/ready") == 0)
        return V2_ROUTE_READY;
    if (strncmp(rest, "/models/", 8) != 0)
        return V2_ROUTE_UNKNOWN;
    /* name [versions v] [ready | infer] */
    const char *seg[5];
    size_t len[5];
    int n = 0;
    for (const char *s = rest + 8;; n++) {
        if (n == 5)
            return V2_ROUTE_UNKNOWN;
        const char *e = strchr(s, '/');
        seg[n] = s;
        len[n] = e ? (size_t)(e - s) : strlen(s);
        if (len[n] == 0)
            return V2_ROUTE_UNKNOWN;
        if (!e) {
            n++;
            break;
        }
        s = e + 1;
    }
    int k = 1;
    p->too_long = !seg_copy(p->name, sizeof p->name, seg[0], len[0]);
    if (n >= 3 && seg_is(seg[1], len[1], "versions")) {
        p->has_version = true;
        p->too_long |= !seg_copy(p->version, sizeof p->version, seg[2], len[2]);
        k = 3;
    }
    if (k == n)
        return V2_ROUTE_MODEL;
    if (k + 1 == n && seg_is(seg[k], len[k], "ready"))
        return V2_ROUTE_MODEL_READY;
    if (k + 1 == n && seg_is(seg[k], len[k], "infer"))
        return V2_ROUTE_INFER;
    return V2_ROUTE_UNKNOWN;
}

int v2_check_model(const v2_path *p, const char *model_name, api_error *err)
{
    char q[API_SAFE_MAX + 4], m[API_SAFE_MAX + 4];
    if (p->too_long || strcmp(p->name, model_name) != 0)
        return api_error_set(err, API_NOT_FOUND, "unknown model '%s'; this server serves '%s'",
                             api_safe_text(p->name, q), api_safe_text(model_name, m));
    if (p->has_version && strcmp(p->version, V2_MODEL_VERSION) != 0)
        return api_error_set(
            err, API_NOT_FOUND,
            "model '%s' has no version '%s'; its only version is " V2_MODEL_VERSION,
            api_safe_text(model_name, m), api_safe_text(p->version, q));
    return 0;
}

static char *dump(json_t *obj)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    return s;
}

char *v2_server_metadata(const char *version)
{
    return dump(json_pack("{s:s, s:s, s:[s]}", "name", "attnd", "version", version, "extensions",
                          "binary_tensor_data"));
}

char *v2_model_metadata(const char *model_name, const enc_hparams *hp,
                        const enc_embedding_info *emb, bool text)
{
    json_t *meta =
        json_pack("{s:s, s:[s], s:s, s:[{s:s, s:s, s:[i,i,i]}, {s:s, s:s, s:[i]}], "
                  "s:[{s:s, s:s, s:[i,i,i]}, {s:s, s:s, s:[i,i,i,i]}]}",
                  "name", model_name, "versions", V2_MODEL_VERSION, "platform", "attnd", "inputs",
                  "name", "embeddings", "datatype", "FP32", "shape", -1, -1, hp->d_model, "name",
                  "lengths", "datatype", "INT32", "shape", -1, "outputs", "name", "outputs",
                  "datatype", "FP32", "shape", -1, -1, hp->d_model, "name", "attention", "datatype",
                  "FP32", "shape", -1, hp->n_heads, -1, -1);
    json_t *inputs = meta ? json_object_get(meta, "inputs") : NULL;
    /* position_ids: RoPE or ALiBi, or (with input_ids) a position table; [L] or [B, L] */
    const bool table =
        emb && emb->max_positions > 0 && emb->position && strcmp(emb->position, "rope") != 0;
    if (inputs && (hp->position != ENC_POS_NONE || table))
        json_array_append_new(inputs, json_pack("{s:s, s:s, s:[i,i]}", "name", "position_ids",
                                                "datatype", "INT32", "shape", -1, -1));
    /* Token ids in, for a model with an embedding module: INT64 as tokenizers
     * give them (INT32 is taken too); token types only where the model has them. */
    if (inputs && emb) {
        json_array_append_new(inputs, json_pack("{s:s, s:s, s:[i,i]}", "name", "input_ids",
                                                "datatype", "INT64", "shape", -1, -1));
        if (emb->type_vocab_size > 0)
            json_array_append_new(inputs, json_pack("{s:s, s:s, s:[i,i]}", "name", "token_type_ids",
                                                    "datatype", "INT64", "shape", -1, -1));
    }
    if (inputs && text) /* the Open Inference Protocol's string tensor, tokenized here */
        json_array_append_new(inputs, json_pack("{s:s, s:s, s:[i]}", "name", "text", "datatype",
                                                "BYTES", "shape", -1));
    if (inputs) /* any model: transformers' padding mask, as lengths and key padding */
        json_array_append_new(inputs, json_pack("{s:s, s:s, s:[i,i]}", "name", "attention_mask",
                                                "datatype", "INT64", "shape", -1, -1));
    return dump(meta);
}

/* ---- the outputs' names (v2.h) ------------------------------------------------- */

const char *const v2_output_name[V2_N_OUT] = {"outputs", "attention"};

/* ---- the response ------------------------------------------------------------------ */

/* s as a JSON string (quotes, backslashes and control characters escaped;
 * other bytes as they are: the model name and id are valid UTF-8). */
static void put_string(strbuf *sb, const char *s)
{
    strbuf_put(sb, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            strbuf_put(sb, esc, 2);
        } else if (c < 0x20) {
            strbuf_printf(sb, "\\u%04x", c);
        } else {
            strbuf_put(sb, s, 1);
        }
    }
    strbuf_put(sb, "\"", 1);
}

/* One tensor of the response: name, datatype, shape and values (4-byte
 * words: FP32 or INT32), as JSON data or binary after the JSON. */
typedef struct v2_tensor {
    const char *name;
    bool is_int;
    size_t dims[4];
    int rank;
    const void *vals;
    size_t numel;
    bool binary;
} v2_tensor;

/* The last layer's CSR weights as the three tensors of docs/api.md:
 * attention_indptr INT32 [B*L + 1] (row b*L + i; padding rows empty),
 * attention_indices INT32 [nnz], attention_values FP32 [H, nnz] ([nnz] for
 * the mean), nnz over the whole batch.  The arrays are owned by *own (one
 * allocation); returns false when out of memory. */
static bool csr_tensors(const v2_request *req, const enc_hparams *hp, bool binary, v2_tensor t[3],
                        void **own)
{
    const encode_request *e = &req->enc;
    const size_t B = (size_t)e->batch.B, L = (size_t)e->batch.L;
    const size_t heads = (size_t)enc_attn_heads(e->attn_mode, hp->n_heads);
    const int last = e->n_layers - 1, band = enc_layer_local(hp, last) ? hp->local_window : -1;
    size_t nnz = 0;
    for (size_t b = 0; b < B; b++)
        nnz += enc_blockmask_band(e->blockmask, (int)b, band, NULL, NULL, 0, NULL, NULL, 0);
    if (nnz > INT32_MAX)
        return false;
    int32_t *indptr = malloc((B * L + 1 + nnz + heads * nnz + 1) * 4);
    if (!indptr)
        return false;
    int32_t *indices = indptr + B * L + 1;
    float *values = (float *)(indices + nnz);
    const float *src = e->attn[last];
    size_t base = 0;
    for (size_t b = 0; b < B; b++) {
        const size_t len = e->lengths ? (size_t)e->lengths[b] : L;
        /* the sequence's indptr (its entry len is the next row's, written
         * over after) offset by base; (heads, n) of it to [h][base ..] */
        int32_t *ip = indptr + b * L;
        const size_t n = enc_blockmask_band(e->blockmask, (int)b, band, ip, indices + base,
                                            (int)heads, src, values + base, nnz);
        for (size_t i = 0; i < L; i++) /* padding rows empty */
            ip[i] = (int32_t)(base + (i < len ? (size_t)ip[i] : n));
        src += heads * enc_blockmask_nnz(e->blockmask, (int)b);
        base += n;
    }
    indptr[B * L] = (int32_t)nnz;
    *own = indptr;
    t[0] = (v2_tensor){"attention_indptr", true, {B * L + 1}, 1, indptr, B * L + 1, binary};
    t[1] = (v2_tensor){"attention_indices", true, {nnz}, 1, indices, nnz, binary};
    t[2] = (v2_tensor){"attention_values", false, {heads, nnz}, 2, values, heads * nnz, binary};
    if (e->attn_mode != ENC_ATTN_HEADS)
        t[2].dims[0] = nnz, t[2].rank = 1;
    return true;
}

/* An output's tensor (outputs, or dense attention). */
static v2_tensor output_tensor(const v2_request *req, const enc_hparams *hp, v2_output o)
{
    const encode_request *e = &req->enc;
    const size_t B = (size_t)e->batch.B, L = (size_t)e->batch.L;
    v2_tensor t = {.name = v2_output_name[o], .binary = req->binary[o]};
    if (o == V2_OUT_OUTPUTS) {
        t.dims[0] = B, t.dims[1] = L, t.dims[2] = (size_t)hp->d_model;
        t.rank = 3;
        t.vals = e->out;
    } else {
        t.dims[t.rank++] = B;
        if (e->attn_mode == ENC_ATTN_HEADS)
            t.dims[t.rank++] = (size_t)hp->n_heads;
        t.dims[t.rank++] = L;
        t.dims[t.rank++] = L;
        t.vals = e->attn ? e->attn[e->n_layers - 1] : NULL;
    }
    t.numel = 1;
    for (int d = 0; d < t.rank; d++)
        t.numel *= t.dims[d];
    return t;
}

int v2_response_stream(const v2_request *req, const char *model_name, const enc_hparams *hp,
                       uint64_t attention_scores, stream *st, size_t *header_len)
{
    v2_tensor t[V2_N_OUT + 2];
    int n_t = 0;
    void *own = NULL;
    for (int k = 0; k < req->n_out; k++) {
        const v2_output o = req->out[k];
        if (o == V2_OUT_ATTENTION && req->enc.csr) {
            if (!csr_tensors(req, hp, req->binary[o], t + n_t, &own))
                return -1;
            stream_own(st, own); /* the merged CSR arrays live as long as the body */
            n_t += 3;
        } else {
            t[n_t] = output_tensor(req, hp, o);
            if (!t[n_t++].vals)
                return -1;
        }
    }
    bool any_binary = false;
    for (int k = 0; k < n_t; k++)
        any_binary |= t[k].binary;
    /* The JSON first.  With binary outputs after it its length is a header
     * (Inference-Header-Content-Length), so it is written out here, numbers
     * included; without, its numbers are produced as the socket drains. */
    stream *json = any_binary ? stream_new() : st;
    if (!json)
        return -1;
    strbuf sb = {0};
    strbuf_puts(&sb, "{\"model_name\":");
    put_string(&sb, model_name);
    strbuf_puts(&sb, ",\"model_version\":\"" V2_MODEL_VERSION "\"");
    if (req->id) {
        strbuf_puts(&sb, ",\"id\":");
        put_string(&sb, req->id);
    }
    strbuf_printf(&sb, ",\"parameters\":{\"attention_scores\":%" PRIu64 "}", attention_scores);
    strbuf_puts(&sb, ",\"outputs\":[");
    for (int k = 0; k < n_t; k++) {
        strbuf_printf(&sb, "%s{\"name\":\"%s\",\"datatype\":\"%s\",\"shape\":[", k ? "," : "",
                      t[k].name, t[k].is_int ? "INT32" : "FP32");
        for (int d = 0; d < t[k].rank; d++)
            strbuf_printf(&sb, "%s%zu", d ? "," : "", t[k].dims[d]);
        if (t[k].binary) {
            strbuf_printf(&sb, "],\"parameters\":{\"binary_data_size\":%zu}}", t[k].numel * 4);
            continue;
        }
        strbuf_puts(&sb, "],\"data\":");
        stream_text(json, sb.s, sb.len);
        sb.len = 0;
        const stream_view v = {
            t[k].vals, t[k].is_int ? STREAM_INT32 : STREAM_FLOAT32, 1, {t[k].numel}, {1}};
        stream_json(json, &v, 9);
        strbuf_puts(&sb, "}");
    }
    strbuf_puts(&sb, "]}");
    stream_text(json, sb.s, sb.len);
    const bool failed = sb.failed;
    strbuf_free(&sb);
    *header_len = 0;
    if (any_binary) {
        size_t len = 0;
        char *text = stream_failed(json) ? NULL : stream_collect(json, &len);
        stream_free(json);
        if (!text)
            return -1;
        stream_text(st, text, len);
        free(text);
        *header_len = len;
        for (int k = 0; k < n_t; k++)
            if (t[k].binary) {
                const stream_view v = {
                    t[k].vals, t[k].is_int ? STREAM_INT32 : STREAM_FLOAT32, 1, {t[k].numel}, {1}};
                stream_raw(st, &v);
            }
    }
    return failed || stream_failed(st) ? -1 : 0;
}

char *v2_response(const v2_request *req, const char *model_name, const enc_hparams *hp, size_t *len,
                  size_t *header_len, uint64_t attention_scores)
{
    stream *st = stream_new();
    char *text = NULL;
    if (st && v2_response_stream(req, model_name, hp, attention_scores, st, header_len) == 0)
        text = stream_collect(st, len);
    stream_free(st);
    return text;
}

/* ---- the protocol (protocol.h) ---------------------------------------------- */

/* The route ids are v2_route's: NONE (0) is not the protocol's path,
 * UNKNOWN one of its paths without a route. */
static int v2_match(const char *path)
{
    v2_path p;
    const v2_route v = v2_route_parse(path, &p);
    return v == V2_ROUTE_NONE ? 0 : v == V2_ROUTE_UNKNOWN ? -1 : (int)v;
}

static int v2_check_path(const char *path, const char *model_name, api_error *err)
{
    v2_path p;
    v2_route_parse(path, &p);
    return v2_check_model(&p, model_name, err);
}

static encode_request *v2_parse(void *state, const proto_input *in, api_error *err)
{
    v2_request *req = state;
    const char *ihcl = in->header ? in->header(in->cls, "Inference-Header-Content-Length") : NULL;
    if (v2_request_parse(req, in->body, in->len, ihcl, in->model_name, in->hp, in->ctx, err) < 0)
        return NULL;
    return &req->enc;
}

static int v2_render(const void *state, const proto_output *out, stream *st, size_t *header_len)
{
    return v2_response_stream(state, out->model_name, out->hp, out->usage->attention_scores, st,
                              header_len);
}

static void v2_free(void *state)
{
    v2_request_free(state);
}

/* GET /v2 (the server's metadata), /v2/health/live, /v2/health/ready,
 * /v2/models/{name} (the model's metadata, once loaded) and its /ready:
 * the health routes answer 200 with an empty body (the protocol: the
 * status is the answer). */
static int v2_get(int route_id, const proto_server *sv, char **body)
{
    *body = NULL;
    switch (route_id) {
    case V2_ROUTE_SERVER:
        return (*body = v2_server_metadata(sv->version)) ? 200 : -1;
    case V2_ROUTE_LIVE:
        return 200;
    case V2_ROUTE_READY:
    case V2_ROUTE_MODEL_READY:
        return sv->serving ? 200 : PROTO_NOT_READY;
    case V2_ROUTE_MODEL:
        if (!sv->loaded)
            return PROTO_NOT_READY;
        return (*body = v2_model_metadata(sv->model_name, sv->hp, sv->emb, sv->text)) ? 200 : -1;
    default:
        return -1;
    }
}

/* The protocol's error body: {"error": "..."}. */
static char *v2_error_body(api_error_kind kind, const char *message)
{
    (void)kind;
    json_t *body = json_pack("{s:s}", "error", message);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return text;
}

const protocol v2_protocol = {.name = "v2",
                              .match = v2_match,
                              .check_model = v2_check_path,
                              .state_size = sizeof(v2_request),
                              .parse = v2_parse,
                              .render = v2_render,
                              .free = v2_free,
                              .get = v2_get,
                              .error_body = v2_error_body};
