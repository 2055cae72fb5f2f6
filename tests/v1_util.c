/* v1_util.c - the /v1/encode suites' shared helpers (v1_util.h). */
#include "v1_util.h"

#include "codec/base64.h"
#include "test_util.h"
#include "torch_fixture.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tol TORCH_TOL = {false, TOL, 0.0};
const tol EXACT = {true, 0.0, 0.0};

bool value_ok(double got, float want, const tol *t)
{
    if (t->exact)
        return (float)got == want;
    return fabs(got - (double)want) <= t->abs + t->rel * fabs((double)want);
}

/* ---- layouts: what a response's arrays are compared with --------------------- */

size_t lay_len(const layout *y, int b)
{
    return y->lengths ? (size_t)y->lengths[b] : (size_t)y->L;
}

float want_at(const layout *y, const float *want, int kind, int b, size_t h, size_t i, size_t j)
{
    const size_t L = (size_t)y->L, D = (size_t)y->D, H = (size_t)y->H;
    switch (kind) {
    case T_OUT:
        return want[((size_t)b * L + i) * D + j];
    case T_HEADS:
        return want[(((size_t)b * H + h) * L + i) * L + j];
    default:
        return want[((size_t)b * L + i) * L + j];
    }
}

/* Sequence b of a nested JSON response value: [len][D], [H][len][len] or
 * [len][len], exactly (ragged: no padding rows). */
int cmp_json_seq(chk *k, const json_t *node, const layout *y, const float *want, int kind, int b,
                 const tol *t, const char *what)
{
    const size_t len = lay_len(y, b), cols = kind == T_OUT ? (size_t)y->D : len;
    const size_t nh = kind == T_HEADS ? (size_t)y->H : 1;
    if (kind == T_HEADS && !(json_is_array(node) && json_array_size(node) == nh))
        return chk_fail(k, "%s[%d]: expected %zu heads, got %zu", what, b, nh,
                        json_array_size(node));
    for (size_t h = 0; h < nh; h++) {
        const json_t *mat = kind == T_HEADS ? json_array_get(node, h) : node;
        if (!json_is_array(mat) || json_array_size(mat) != len)
            return chk_fail(k, "%s[%d]: expected %zu rows, got %zu", what, b, len,
                            json_array_size(mat));
        for (size_t i = 0; i < len; i++) {
            const json_t *row = json_array_get(mat, i);
            if (!json_is_array(row) || json_array_size(row) != cols)
                return chk_fail(k, "%s[%d] row %zu: expected %zu numbers, got %zu", what, b, i,
                                cols, json_array_size(row));
            for (size_t j = 0; j < cols; j++) {
                const json_t *v = json_array_get(row, j);
                const float w = want_at(y, want, kind, b, h, i, j);
                if (!json_is_number(v))
                    return chk_fail(k, "%s[%d] (%zu, %zu, %zu) is not a number", what, b, h, i, j);
                if (!value_ok(json_number_value(v), w, t))
                    return chk_fail(k, "%s[%d] (h %zu, %zu, %zu): got %.9g, want %.9g", what, b, h,
                                    i, j, json_number_value(v), (double)w);
            }
        }
    }
    return 0;
}

/* A nested JSON response value: [B]... (seq < 0) or sequence seq alone. */
void check_json(const json_t *node, const layout *y, const float *want, int kind, int seq,
                const tol *t, const char *what)
{
    chk k = {0};
    if (seq >= 0) {
        cmp_json_seq(&k, node, y, want, kind, seq, t, what);
    } else if (!json_is_array(node) || json_array_size(node) != (size_t)y->B) {
        chk_fail(&k, "%s: expected %d sequences, got %zu", what, y->B, json_array_size(node));
    } else {
        for (int b = 0; b < y->B; b++)
            cmp_json_seq(&k, json_array_get(node, (size_t)b), y, want, kind, b, t, what);
    }
    ck_assert_msg(!k.failed, "%s", k.msg);
}

/* The floats of a base64 string (owned), decoded here from little-endian. */
float *b64_floats(const json_t *s, size_t *n)
{
    ck_assert_msg(json_is_string(s), "expected a base64 string");
    size_t nbytes;
    unsigned char *bytes = base64_decode(json_string_value(s), json_string_length(s), &nbytes);
    ck_assert_msg(bytes != NULL, "not valid base64");
    ck_assert_uint_eq(nbytes % 4, 0);
    *n = nbytes / 4;
    float *f = xcalloc(*n, sizeof *f);
    for (size_t k = 0; k < *n; k++) {
        const unsigned char *p = bytes + 4 * k;
        uint32_t u =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        memcpy(&f[k], &u, sizeof u);
    }
    free(bytes);
    return f;
}

int check_dims(chk *k, const json_t *shape, const size_t *dims, size_t nd, const char *what)
{
    if (!json_is_array(shape) || json_array_size(shape) != nd)
        return chk_fail(k, "%s: shape has %zu dims, want %zu", what, json_array_size(shape), nd);
    for (size_t d = 0; d < nd; d++)
        if (json_integer_value(json_array_get(shape, d)) != (json_int_t)dims[d])
            return chk_fail(k, "%s: shape[%zu] = %lld, want %zu", what, d,
                            (long long)json_integer_value(json_array_get(shape, d)), dims[d]);
    return 0;
}

/* A base64 response value and its shape: one string for the batch (no
 * lengths) or the single sequence seq; with lengths and seq < 0, one string
 * and one shape per sequence. */
void check_b64(const json_t *node, const json_t *shape, const layout *y, const float *want,
               int kind, int seq, const tol *t, const char *what)
{
    chk k = {0};
    const bool ragged = y->lengths && seq < 0;
    const int b0 = seq < 0 ? 0 : seq, nb = seq < 0 ? y->B : 1;
    if (ragged)
        ck_assert_msg(json_array_size(node) == (size_t)y->B &&
                          json_array_size(shape) == (size_t)y->B,
                      "%s: ragged base64 needs %d strings and shapes", what, y->B);
    float *got = NULL;
    size_t n_got = 0, at = 0;
    for (int s = 0; s < nb && !k.failed; s++) {
        const int b = b0 + s;
        const size_t len = lay_len(y, b);
        if (ragged || s == 0) {
            free(got);
            got = b64_floats(ragged ? json_array_get(node, (size_t)s) : node, &n_got);
            at = 0;
            size_t dims[4], nd = 0;
            if (!ragged && seq < 0)
                dims[nd++] = (size_t)y->B;
            if (kind == T_HEADS)
                dims[nd++] = (size_t)y->H;
            dims[nd++] = len;
            dims[nd++] = kind == T_OUT ? (size_t)y->D : len;
            check_dims(&k, ragged ? json_array_get(shape, (size_t)s) : shape, dims, nd, what);
        }
        const size_t nh = kind == T_HEADS ? (size_t)y->H : 1;
        const size_t cols = kind == T_OUT ? (size_t)y->D : len;
        for (size_t h = 0; h < nh; h++)
            for (size_t i = 0; i < len; i++)
                for (size_t j = 0; j < cols; j++) {
                    const float w = want_at(y, want, kind, b, h, i, j);
                    if (at >= n_got) {
                        chk_fail(&k, "%s: base64 holds only %zu floats", what, n_got);
                        break;
                    }
                    if (!value_ok((double)got[at], w, t))
                        chk_fail(&k, "%s[%d] (h %zu, %zu, %zu): got %.9g, want %.9g", what, b, h, i,
                                 j, (double)got[at], (double)w);
                    at++;
                }
        if ((ragged || s == nb - 1) && at != n_got)
            chk_fail(&k, "%s: base64 holds %zu floats, expected %zu", what, n_got, at);
    }
    free(got);
    ck_assert_msg(!k.failed, "%s", k.msg);
}

/* ---- the printed number tokens ------------------------------------------------ */

/* The number tokens of the array that follows "key": in text, in order. */
tokens scan_numbers(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    ck_assert_msg(p != NULL, "response lacks %s", pat);
    p += strlen(pat);
    tokens t = {0};
    size_t cap = 0;
    int depth = 0;
    do {
        if (*p == '[') {
            depth++;
            p++;
        } else if (*p == ']') {
            depth--;
            p++;
        } else if (*p == ',' || *p == ' ' || *p == '\n') {
            p++;
        } else {
            EXPECT(*p != '\0' && depth > 0, "unterminated array after %s", pat);
            size_t n = strcspn(p, ",]");
            if (t.n == cap) {
                cap = cap ? 2 * cap : 256;
                t.start = realloc(t.start, cap * sizeof *t.start);
                t.len = realloc(t.len, cap * sizeof *t.len);
                EXPECT(t.start && t.len, "out of memory");
            }
            t.start[t.n] = p;
            t.len[t.n++] = n;
            p += n;
        }
    } while (depth > 0);
    return t;
}

void tokens_free(tokens *t)
{
    free(t->start);
    free(t->len);
}

/* Significant digits of a printed number: mantissa digits after leading zeros. */
int sig_digits(const char *s, size_t n)
{
    int count = 0;
    bool started = false;
    for (size_t i = 0; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] < '0' || s[i] > '9' || (s[i] == '0' && !started))
            continue;
        started = true;
        count++;
    }
    return count;
}

/* Every token of the outputs (kind T_OUT) or attention array, in order, is
 * the float want holds there when read with strtof. */
void check_tokens_exact(const tokens *t, const layout *y, const float *want, int kind,
                        const char *what)
{
    chk k = {0};
    size_t at = 0;
    for (int b = 0; b < y->B && !k.failed; b++) {
        const size_t len = lay_len(y, b), cols = kind == T_OUT ? (size_t)y->D : len;
        const size_t nh = kind == T_HEADS ? (size_t)y->H : 1;
        for (size_t h = 0; h < nh; h++)
            for (size_t i = 0; i < len; i++)
                for (size_t j = 0; j < cols && at < t->n; j++, at++) {
                    char buf[64];
                    snprintf(buf, sizeof buf, "%.*s", (int)t->len[at], t->start[at]);
                    const float w = want_at(y, want, kind, b, h, i, j);
                    char *end;
                    const float got = strtof(buf, &end);
                    if (*end != '\0' || got != w)
                        chk_fail(&k, "%s token %zu '%s' is not %.9g", what, at, buf, (double)w);
                }
    }
    if (!k.failed && at != t->n)
        chk_fail(&k, "%s: %zu tokens, expected %zu", what, t->n, at);
    ck_assert_msg(!k.failed, "%s", k.msg);
}

/* ---- PyTorch fixture cases -------------------------------------------------- */

/* A fixture tensor as floats (owned), or NULL if absent. */
float *fx_floats(const fx *c, const char *name, size_t *numel)
{
    return torch_floats(&c->file, name, numel);
}

/* Fixture tensor "name" (layer < 0) or "name.layer"; must exist. */
float *fx_want(const fx *c, const char *name, int layer)
{
    char key[64];
    if (layer < 0)
        snprintf(key, sizeof key, "%s", name);
    else
        snprintf(key, sizeof key, "%s.%d", name, layer);
    float *v = fx_floats(c, key, NULL);
    ck_assert_msg(v != NULL, "%s: fixture lacks %s", c->name, key);
    return v;
}

/* An integer of a metadata object, or -1 (an unbounded window side) if absent. */
int meta_int(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : -1;
}

void fx_load(fx *c, const char *name)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    torch_case_open(&c->file, name);
    torch_hparams(&c->file, &c->hp);
    c->model = torch_model(name, &c->hp);
    json_error_t jerr;
    json_t *mask = json_loads(st_metadata(&c->file, "mask"), 0, &jerr);
    ck_assert_msg(mask != NULL, "%s: metadata: %s", name, jerr.text);

    const st_tensor *tx = st_find(&c->file, "x");
    ck_assert_msg(tx && tx->ndim == 3, "%s: x must be [B, L, D]", name);
    c->y = (layout){(int)tx->shape[0], (int)tx->shape[1], (int)tx->shape[2], c->hp.n_heads, NULL};
    const size_t B = (size_t)c->y.B, L = (size_t)c->y.L;
    c->x = fx_floats(c, "x", NULL);

    size_t n;
    float *v;
    if ((v = fx_floats(c, "lengths", &n))) {
        c->lengths = xcalloc(B, sizeof *c->lengths);
        for (size_t i = 0; i < n && i < B; i++)
            c->lengths[i] = (int)v[i];
        c->y.lengths = c->lengths;
        free(v);
    }
    if ((v = fx_floats(c, "position_ids", &n))) {
        ck_assert_uint_eq(n, B * L);
        c->positions = xcalloc(n, sizeof *c->positions);
        for (size_t i = 0; i < n; i++)
            c->positions[i] = (int32_t)v[i];
        free(v);
    }
    if ((v = fx_floats(c, "key_padding", &n))) {
        ck_assert_uint_eq(n, B * L);
        c->key_padding = xcalloc(n, 1);
        for (size_t i = 0; i < n; i++)
            c->key_padding[i] = v[i] != 0.0f;
        free(v);
    }
    if ((c->attn = fx_floats(c, "attn_bool", &n)))
        c->attn_is_bool = true;
    else
        c->attn = fx_floats(c, "attn_add", &n);
    if (c->attn)
        c->attn_per_seq = n == B * L * L && n != L * L;
    c->causal = json_is_true(json_object_get(mask, "causal"));
    json_t *win = json_object_get(mask, "window");
    c->win_left = meta_int(win, "left");
    c->win_right = meta_int(win, "right");
    json_t *glob = json_object_get(mask, "global");
    for (size_t k = 0; k < json_array_size(glob) && k < 16; k++)
        c->global[c->n_global++] = (int)json_integer_value(json_array_get(glob, k));
    static const char *const patterns[] = {"strided", "fixed", "blocks"};
    for (int k = 0; k < 3; k++) {
        json_t *o = json_object_get(mask, patterns[k]);
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (text) {
            const size_t used = strlen(c->patterns);
            snprintf(c->patterns + used, sizeof c->patterns - used, ", \"%s\": %s", patterns[k],
                     text);
        }
        free(text);
    }
    json_decref(mask);
}

void fx_free(fx *c)
{
    enc_model_free(c->model);
    st_close(&c->file);
    free(c->x);
    free(c->lengths);
    free(c->key_padding);
    free(c->attn);
    free(c->positions);
}

/* ---- request bodies, written here (not by the code under test) ---------------- */

void put_float(FILE *f, float v)
{
    if (isinf(v))
        fputs(v < 0 ? "-1e39" : "1e39", f); /* JSON has no infinity */
    else
        fprintf(f, "%.9g", (double)v);
}

void put_matrix(FILE *f, const float *m, size_t rows, size_t cols)
{
    fputc('[', f);
    for (size_t i = 0; i < rows; i++) {
        fputs(i ? ", [" : "[", f);
        for (size_t j = 0; j < cols; j++) {
            if (j)
                fputs(", ", f);
            put_float(f, m[i * cols + j]);
        }
        fputc(']', f);
    }
    fputc(']', f);
}

/* "embeddings": x[b0 .. b0+nb) nested ([B][L][D], or [L][D] when unbatched),
 * or "embeddings_b64" + "shape" with base64_encode of little-endian bytes. */
void put_embeddings(FILE *f, const float *x, int nb, int L, int D, bool batched, bool b64)
{
    const size_t n = (size_t)nb * L * D;
    if (b64) {
        unsigned char *bytes = xcalloc(n, 4);
        for (size_t k = 0; k < n; k++) {
            uint32_t u;
            memcpy(&u, &x[k], sizeof u);
            for (int s = 0; s < 4; s++)
                bytes[4 * k + (size_t)s] = (unsigned char)(u >> (8 * s));
        }
        char *t = base64_encode(bytes, 4 * n, NULL);
        ck_assert_ptr_nonnull(t);
        fprintf(f, "\"embeddings_b64\": \"%s\", \"shape\": ", t);
        if (batched)
            fprintf(f, "[%d, %d, %d]", nb, L, D);
        else
            fprintf(f, "[%d, %d]", L, D);
        free(t);
        free(bytes);
        return;
    }
    fputs("\"embeddings\": ", f);
    if (batched)
        fputc('[', f);
    for (int b = 0; b < nb; b++) {
        if (b)
            fputs(", ", f);
        put_matrix(f, x + (size_t)b * L * D, (size_t)L, (size_t)D);
    }
    if (batched)
        fputc(']', f);
}

/* The body for fixture c: the whole batch (seq < 0) or sequence seq alone in
 * the unbatched [L][D] form; extra: more top-level fields, or NULL. */
char *fx_body(const fx *c, int seq, bool b64, const char *extra)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    ck_assert_ptr_nonnull(f);
    const int B = c->y.B, L = c->y.L, D = c->y.D, b0 = seq < 0 ? 0 : seq, nb = seq < 0 ? B : 1;
    fputc('{', f);
    put_embeddings(f, c->x + (size_t)b0 * L * D, nb, L, D, seq < 0, b64);
    if (c->lengths) {
        fputs(", \"lengths\": [", f);
        for (int b = b0; b < b0 + nb; b++)
            fprintf(f, b > b0 ? ", %d" : "%d", c->lengths[b]);
        fputc(']', f);
    }
    if (c->positions) { /* the unbatched form takes int[L]; the batched one int[B][L] */
        fputs(", \"position_ids\": ", f);
        if (seq < 0)
            fputc('[', f);
        for (int b = b0; b < b0 + nb; b++) {
            fputs(b > b0 ? ", [" : "[", f);
            for (int j = 0; j < L; j++)
                fprintf(f, j ? ", %d" : "%d", (int)c->positions[(size_t)b * L + (size_t)j]);
            fputc(']', f);
        }
        if (seq < 0)
            fputc(']', f);
    }
    fprintf(f, ", \"mask\": {\"causal\": %s", c->causal ? "true" : "false");
    if (c->win_left >= 0 && c->win_left == c->win_right) {
        fprintf(f, ", \"window\": %d", c->win_left); /* the integer form */
    } else if (c->win_left >= 0 || c->win_right >= 0) {
        fputs(", \"window\": {", f);
        if (c->win_left >= 0)
            fprintf(f, "\"left\": %d%s", c->win_left, c->win_right >= 0 ? ", " : "");
        if (c->win_right >= 0)
            fprintf(f, "\"right\": %d", c->win_right);
        fputc('}', f);
    }
    if (c->n_global) {
        fputs(", \"global\": [", f);
        for (size_t k = 0; k < c->n_global; k++)
            fprintf(f, k ? ", %d" : "%d", c->global[k]);
        fputc(']', f);
    }
    fputs(c->patterns, f);
    if (c->key_padding) {
        /* The unbatched form takes bool[L] (even seq) or bool[1][L] (odd). */
        const bool flat = seq >= 0 && seq % 2 == 0;
        fputs(", \"key_padding\": ", f);
        if (!flat)
            fputc('[', f);
        for (int b = b0; b < b0 + nb; b++) {
            fputs(b > b0 ? ", [" : "[", f);
            for (int j = 0; j < L; j++)
                fprintf(f, "%s%s", j ? ", " : "",
                        c->key_padding[(size_t)b * L + (size_t)j] ? "true" : "false");
            fputc(']', f);
        }
        if (!flat)
            fputc(']', f);
    }
    if (c->attn) {
        const size_t LL = (size_t)L * L;
        const int m0 = c->attn_per_seq ? b0 : 0, nm = c->attn_per_seq ? nb : 1;
        const bool nest = c->attn_per_seq && seq < 0;
        fputs(", \"attn\": ", f);
        if (nest)
            fputc('[', f);
        for (int m = m0; m < m0 + nm; m++) {
            if (m > m0)
                fputs(", ", f);
            if (!c->attn_is_bool) {
                put_matrix(f, c->attn + (size_t)m * LL, (size_t)L, (size_t)L);
                continue;
            }
            fputc('[', f);
            for (int i = 0; i < L; i++) {
                fputs(i ? ", [" : "[", f);
                for (int j = 0; j < L; j++)
                    fprintf(f, "%s%s", j ? ", " : "",
                            c->attn[(size_t)m * LL + (size_t)i * L + (size_t)j] != 0.0f ? "true"
                                                                                        : "false");
                fputc(']', f);
            }
            fputc(']', f);
        }
        if (nest)
            fputc(']', f);
    }
    fputc('}', f);
    if (extra)
        fprintf(f, ", %s", extra);
    fputc('}', f);
    fclose(f);
    return buf;
}

/* ---- one request, end to end -------------------------------------------------- */

const api_ctx ROOMY = {.max_batch = 64,
                       .max_seq_len = 4096,
                       .max_batch_tokens = 65536,
                       .max_attention_bytes = (size_t)1 << 28,
                       .max_logits_bytes = (size_t)1 << 28};

const char *const FAKE_TENSORS[] = {"embeddings.word_embeddings.weight"};
const enc_embedding_info FAKE_BERT = {.vocab_size = 50,
                                      .type_vocab_size = 2,
                                      .max_positions = 24,
                                      .padding_idx = -1,
                                      .position = "absolute",
                                      .dtype = "F32",
                                      .n_tensors = 1,
                                      .tensors = FAKE_TENSORS};

/* parse -> alloc outputs -> enc_forward -> v1_response -> json_loads. */
void run_body(run *r, const enc_model *m, const enc_hparams *hp, const char *body, const char *what)
{
    memset(r, 0, sizeof *r);
    api_error err = {0};
    api_ctx lim = ROOMY;
    lim.embedding = enc_model_embedding(m); /* token ids for a Hugging Face directory */
    ck_assert_msg(v1_request_parse(&r->req, body, strlen(body), hp, &lim, &err) == 0, "%s: %s",
                  what, err.message);
    ck_assert_int_eq(encode_request_alloc_outputs(&r->req, hp, &err), 0);
    enc_result res = encode_request_result(&r->req);
    enc_workspace *ws = enc_workspace_new(m);
    enc_error e = {0};
    ck_assert_msg(enc_forward(m, ws, &r->req.batch, &res, &e) == 0, "%s: %s", what, e.message);
    enc_workspace_free(ws);
    long n_tokens = 0;
    for (int b = 0; b < r->req.batch.B; b++)
        n_tokens += r->req.lengths ? r->req.lengths[b] : r->req.batch.L;
    encode_usage u = {
        .sequences = r->req.batch.B, .tokens = n_tokens, .queue_ms = 0.25, .compute_ms = 1.5};
    r->text = v1_response(&r->req, "encoder", hp, &u, &r->len);
    ck_assert_ptr_nonnull(r->text);
    ck_assert_uint_eq(strlen(r->text), r->len);
    json_error_t je;
    r->resp = json_loads(r->text, 0, &je);
    ck_assert_msg(r->resp != NULL, "%s: response is not JSON (%s): %.200s", what, je.text, r->text);
    /* Numbers as text (base64 strings may hold any letters): none is nan or
     * inf, which would also have made the body invalid JSON above. */
    ck_assert_msg(r->req.base64_out ||
                      (strstr(r->text, "nan") == NULL && strstr(r->text, "inf") == NULL),
                  "%s: response has nan or inf", what);
}

void run_free(run *r)
{
    encode_request_free(&r->req);
    free(r->text);
    json_decref(r->resp);
}

void check_shape(const json_t *shape, const size_t *dims, size_t nd)
{
    chk k = {0};
    check_dims(&k, shape, dims, nd, "shape");
    ck_assert_msg(!k.failed, "%s", k.msg);
}

void check_usage(const json_t *resp, const layout *y, int seq)
{
    const json_t *u = json_object_get(resp, "usage");
    long n_tokens = 0;
    for (int b = seq < 0 ? 0 : seq; b < (seq < 0 ? y->B : seq + 1); b++)
        n_tokens += (long)lay_len(y, b);
    ck_assert_int_eq(json_integer_value(json_object_get(u, "sequences")), seq < 0 ? y->B : 1);
    ck_assert_int_eq(json_integer_value(json_object_get(u, "tokens")), n_tokens);
    ck_assert(fabs(json_number_value(json_object_get(u, "queue_ms")) - 0.25) < 1e-9);
    ck_assert(fabs(json_number_value(json_object_get(u, "compute_ms")) - 1.5) < 1e-9);
}

/* ---- token ids: the Hugging Face fixtures' ids.safetensors ------------------- */

#define IDS_MAX_DIRS 48
static char ids_dirs[IDS_MAX_DIRS][512];
static int n_ids_dirs = -1;

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void ids_find(void)
{
    if (n_ids_dirs >= 0)
        return;
    n_ids_dirs = 0;
    static const char *const roots[] = {
        TESTS_DIR "/fixtures/hf", TESTS_DIR "/fixtures/hf5", TESTS_DIR "/fixtures/modernbert",
        TESTS_DIR "/fixtures/modernbert5", TESTS_DIR "/fixtures/mpnet"};
    for (size_t r = 0; r < sizeof roots / sizeof *roots; r++) {
        DIR *d = opendir(roots[r]);
        if (!d)
            continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            char path[1024];
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "%s/%s/ids.safetensors", roots[r], e->d_name);
            FILE *f = fopen(path, "rb");
            if (!f)
                continue;
            fclose(f);
            if (n_ids_dirs == IDS_MAX_DIRS) { /* found while the suites are built: no ck_assert */
                fprintf(stderr, "more than %d fixture directories: raise IDS_MAX_DIRS\n",
                        IDS_MAX_DIRS);
                abort();
            }
            snprintf(ids_dirs[n_ids_dirs++], sizeof ids_dirs[0], "%s/%s", roots[r], e->d_name);
        }
        closedir(d);
    }
    qsort(ids_dirs, (size_t)n_ids_dirs, sizeof ids_dirs[0], cmp_str);
}

int ids_fx_count(void)
{
    ids_find();
    return n_ids_dirs;
}

const char *ids_fx_dir(int i)
{
    ids_find();
    ck_assert_int_lt(i, n_ids_dirs);
    return ids_dirs[i];
}

/* An integer tensor (I64, I32) as int32 (owned), or NULL if absent. */
static int32_t *st_ints(const st_file *f, const char *name, size_t *numel)
{
    const st_tensor *t = st_find(f, name);
    if (!t)
        return NULL;
    ck_assert_msg(t->dtype == ST_I64 || t->dtype == ST_I32, "%s: %s is %s, not I64 or I32", name,
                  name, st_dtype_name(t->dtype));
    int32_t *v = xcalloc(t->numel ? t->numel : 1, sizeof *v);
    for (size_t k = 0; k < t->numel; k++) {
        if (t->dtype == ST_I64) {
            int64_t x;
            memcpy(&x, t->data + 8 * k, 8);
            ck_assert(x >= INT32_MIN && x <= INT32_MAX);
            v[k] = (int32_t)x;
        } else {
            memcpy(&v[k], t->data + 4 * k, 4);
        }
    }
    if (numel)
        *numel = t->numel;
    return v;
}

void ids_fx_load(ids_fx *c, const char *dir)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    /* "hf/bert_base": the fixture root and the case */
    const char *slash = strrchr(dir, '/'), *root = slash;
    while (root && root > dir && root[-1] != '/')
        root--;
    snprintf(c->name, sizeof c->name, "%s", root ? root : dir);
    char path[1024];
    snprintf(path, sizeof path, "%s/ids.safetensors", dir);
    enc_error err = {0};
    ck_assert_msg(st_open(&c->file, path, &err) == 0, "%s: %s", path, err.message);
    const st_tensor *ids = st_find(&c->file, "input_ids"), *out = st_find(&c->file, "out"),
                    *a0 = st_find(&c->file, "attn.0");
    ck_assert_msg(ids && out && a0 && ids->ndim == 2 && out->ndim == 3 && a0->ndim == 4,
                  "%s: input_ids [B, L], out [B, L, D], attn.0 [B, H, L, L] expected", path);
    c->B = (int)ids->shape[0];
    c->L = (int)ids->shape[1];
    c->D = (int)out->shape[2];
    c->H = (int)a0->shape[1];
    while (true) {
        char key[32];
        snprintf(key, sizeof key, "attn.%d", c->n_layers);
        if (!st_find(&c->file, key))
            break;
        c->n_layers++;
    }
    c->input_ids = st_ints(&c->file, "input_ids", NULL);
    c->token_type_ids = st_ints(&c->file, "token_type_ids", NULL);
    c->position_ids = st_ints(&c->file, "position_ids", NULL);
    size_t n = 0;
    int32_t *len = st_ints(&c->file, "lengths", &n);
    c->lengths = xcalloc((size_t)c->B, sizeof *c->lengths);
    for (int b = 0; b < c->B; b++)
        c->lengths[b] = len ? len[b] : c->L;
    free(len);
    c->y = (layout){c->B, c->L, c->D, c->H, c->lengths};
    const char *meta = st_metadata(&c->file, "embedding");
    json_error_t je;
    c->embedding = meta ? json_loads(meta, 0, &je) : NULL;
}

void ids_fx_free(ids_fx *c)
{
    st_close(&c->file);
    free(c->input_ids);
    free(c->token_type_ids);
    free(c->position_ids);
    free(c->lengths);
    json_decref(c->embedding);
    memset(c, 0, sizeof *c);
}

float *ids_fx_want(const ids_fx *c, int layer)
{
    char key[32];
    if (layer < 0)
        snprintf(key, sizeof key, "out");
    else
        snprintf(key, sizeof key, "attn.%d", layer);
    float *v = torch_floats(&c->file, key, NULL);
    ck_assert_msg(v != NULL, "%s: ids.safetensors lacks %s", c->name, key);
    return v;
}

enc_model *ids_fx_model(const ids_fx *c)
{
    enc_hf_config cfg;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(c->dir, &cfg, &err) == 0, "%s: %s", c->name, err.message);
    enc_model *m = enc_model_load_dir(c->dir, &cfg.hp, &err);
    ck_assert_msg(m != NULL, "%s: %s", c->name, err.message);
    return m;
}

/* "name": rows b0 .. b0+nb of v (B, L), each cut to cut[b] (or L); unbatched
 * (one row, no outer brackets) when one. */
static void put_int_rows(FILE *f, const char *name, const int32_t *v, const ids_fx *c, int b0,
                         int nb, bool one, bool ragged)
{
    fprintf(f, ", \"%s\": ", name);
    if (!one)
        fputc('[', f);
    for (int b = b0; b < b0 + nb; b++) {
        const int n = ragged ? c->lengths[b] : c->L;
        fputs(b > b0 ? ", [" : "[", f);
        for (int i = 0; i < n; i++)
            fprintf(f, i ? ", %d" : "%d", (int)v[(size_t)b * c->L + i]);
        fputc(']', f);
    }
    if (!one)
        fputc(']', f);
}

char *ids_body(const ids_fx *c, ids_form form, int seq, const char *extra)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    const bool one = form == IDS_ONE, ragged = form == IDS_RAGGED || one;
    const int b0 = one ? seq : 0, nb = one ? 1 : c->B;
    fputs("{\"attention\": \"heads\"", f);
    put_int_rows(f, "input_ids", c->input_ids, c, b0, nb, one, ragged);
    if (c->token_type_ids)
        put_int_rows(f, "token_type_ids", c->token_type_ids, c, b0, nb, one, ragged);
    if (c->position_ids)
        put_int_rows(f, "position_ids", c->position_ids, c, b0, nb, one, ragged);
    if (form == IDS_PADDED) {
        fputs(", \"lengths\": [", f);
        for (int b = 0; b < c->B; b++)
            fprintf(f, b ? ", %d" : "%d", c->lengths[b]);
        fputc(']', f);
    } else if (form == IDS_MASK) {
        fputs(", \"attention_mask\": [", f);
        for (int b = 0; b < c->B; b++) {
            fputs(b ? ", [" : "[", f);
            for (int i = 0; i < c->L; i++)
                fprintf(f, i ? ", %d" : "%d", i < c->lengths[b]);
            fputc(']', f);
        }
        fputc(']', f);
    }
    if (extra)
        fprintf(f, ", %s", extra);
    fputc('}', f);
    fclose(f);
    return buf;
}

/* ---- the invalid request directory ------------------------------------------------- */

char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = xcalloc((size_t)n + 1, 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* The model and limits of expected.json's "_config". */
void invalid_config(const json_t *cfg, enc_hparams *hp, api_ctx *lim)
{
    ck_assert_msg(json_is_object(cfg), "expected.json lacks _config");
    enc_hparams_default(hp);
    hp->d_model = meta_int(cfg, "d_model");
    hp->n_heads = meta_int(cfg, "n_heads");
    hp->n_kv_heads = hp->n_heads;
    hp->n_layers = meta_int(cfg, "n_layers");
    hp->d_ff = meta_int(cfg, "d_ff");
    enc_error e = {0};
    ck_assert_msg(enc_hparams_validate(hp, &e) == 0, "_config: %s", e.message);
    *lim = (api_ctx){.bufs = NULL}; /* malloc'd buffers */
    lim->max_batch = meta_int(cfg, "max_batch");
    lim->max_seq_len = meta_int(cfg, "max_seq_len");
    lim->max_batch_tokens = meta_int(cfg, "max_batch_tokens");
    lim->max_attention_bytes = (size_t)meta_int(cfg, "max_attention_bytes");
    ck_assert(lim->max_batch > 0 && lim->max_seq_len > 0 && lim->max_batch_tokens > 0 &&
              lim->max_attention_bytes > 0);
}

bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

/* ---- options and choices where the contract is silent ------------------------- */

void small_load(small *s)
{
    json_error_t je;
    json_t *expect = json_load_file(INVALID_DIR "/expected.json", 0, &je);
    ck_assert_msg(expect != NULL, "expected.json: %s", je.text);
    invalid_config(json_object_get(expect, "_config"), &s->hp, &s->lim);
    json_decref(expect);
    enc_error e = {0};
    s->model = enc_model_random(&s->hp, 7, &e);
    ck_assert_msg(s->model != NULL, "%s", e.message);
}

int parse_small(const small *s, const char *body, encode_request *req, api_error *err)
{
    memset(err, 0, sizeof *err);
    return v1_request_parse(req, body, strlen(body), &s->hp, &s->lim, err);
}

/* Scores: within 1e-4 of the pipeline's relative to their size, and 1e-6
 * absolute (fill-mask's probabilities are about 1e-3). */
#define SCORE_REL 1e-4
#define SCORE_ABS 1e-6

/* got against want: numbers within SCORE_ABS + SCORE_REL of their size, everything else equal, the
 * same keys and lengths.  Returns NULL, or where they differ (owned). */
char *json_near(const json_t *got, json_t *want, const char *path)
{
    char *msg = NULL;
    if (json_is_number(want)) {
        if (!json_is_number(got) ||
            fabs(json_number_value(got) - json_number_value(want)) >
                SCORE_ABS + SCORE_REL * fabs(json_number_value(want)) ||
            json_is_integer(want) != json_is_integer(got))
            msg = strdup(path);
        return msg;
    }
    if (json_typeof(got) != json_typeof(want))
        return strdup(path);
    char sub[512];
    if (json_is_array(want)) {
        if (json_array_size(got) != json_array_size(want))
            return strdup(path);
        for (size_t i = 0; i < json_array_size(want) && !msg; i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            msg = json_near(json_array_get(got, i), json_array_get(want, i), sub);
        }
        return msg;
    }
    if (json_is_object(want)) {
        if (json_object_size(got) != json_object_size(want))
            return strdup(path);
        const char *key;
        json_t *v;
        json_object_foreach(want, key, v)
        {
            snprintf(sub, sizeof sub, "%s.%s", path, key);
            if ((msg = json_near(json_object_get(got, key), v, sub)))
                break;
        }
        return msg;
    }
    return json_equal(got, want) ? NULL : strdup(path);
}
