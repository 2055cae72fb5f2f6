/* check_torch.c - the core against PyTorch: every case under
 * tests/fixtures/torch/ (made by tools/fixtures/make_fixtures.py from
 * nn.TransformerEncoderLayer, nn.TransformerEncoder, nn.MultiheadAttention or
 * torch's functional ops) through the fast path and the naive reference. */
#include "encoder.h"
#include "kernels/mask.h"
#include "model/model.h"
#include "kernels/simd.h"
#include "load/safetensors.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"

#include <jansson.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL       1e-4
#define MIN_CASES 31

/* One fixture case, read. */
typedef struct torch_case {
    char name[256];
    enc_hparams hp;
    enc_model *model;
    st_file file; /* case.safetensors */
    enc_batch in;
    float *x;     /* (B, L, D) */
    int *lengths; /* (B) or NULL */
    int *global;
    uint8_t *key_padding; /* (B, L) or NULL */
    uint8_t *attn_bool;
    float *attn_add;
    int32_t *positions; /* (B, L) or NULL */
} torch_case;

static void case_load(torch_case *c, const char *name)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    torch_case_open(&c->file, name);
    torch_hparams(&c->file, &c->hp);
    c->model = torch_model(name, &c->hp);
    json_error_t jerr;
    const char *mask_s = st_metadata(&c->file, "mask");
    ck_assert_msg(mask_s != NULL, "%s: metadata lacks mask", name);
    json_t *mask = json_loads(mask_s, 0, &jerr);
    ck_assert_msg(mask != NULL, "%s: mask metadata: %s", name, jerr.text);

    const st_tensor *tx = st_find(&c->file, "x");
    ck_assert_msg(tx && tx->ndim == 3, "%s: x must be [B, L, D]", name);
    c->x = torch_floats(&c->file, "x", NULL);
    c->in = batch_plain(c->x, (int)tx->shape[0], (int)tx->shape[1], NULL);
    ck_assert_int_eq(tx->shape[2], c->hp.d_model);
    const int B = c->in.B, L = c->in.L;

    size_t n;
    float *v = torch_floats(&c->file, "lengths", &n);
    if (v) {
        ck_assert_uint_eq(n, (size_t)B);
        c->lengths = xcalloc(n, sizeof *c->lengths);
        for (size_t i = 0; i < n; i++)
            c->lengths[i] = (int)v[i];
        c->in.lengths = c->lengths;
        free(v);
    }
    enc_mask *mk = &c->in.mask;
    mk->causal = json_is_true(json_object_get(mask, "causal"));
    json_t *win = json_object_get(mask, "window");
    if (json_is_object(win)) {
        mk->window_left = (int)json_integer_value(json_object_get(win, "left"));
        mk->window_right = (int)json_integer_value(json_object_get(win, "right"));
    }
    json_t *glob = json_object_get(mask, "global");
    mk->n_global = json_array_size(glob);
    c->global = xcalloc(mk->n_global + 1, sizeof *c->global);
    for (size_t k = 0; k < mk->n_global; k++)
        c->global[k] = (int)json_integer_value(json_array_get(glob, k));
    mk->global = c->global;
    /* the sparse patterns (docs/model.md) */
    json_t *o;
    if ((o = json_object_get(mask, "strided")))
        mk->stride = (int)json_integer_value(json_object_get(o, "stride"));
    if ((o = json_object_get(mask, "fixed"))) {
        mk->fixed_block = (int)json_integer_value(json_object_get(o, "block"));
        mk->fixed_summary = (int)json_integer_value(json_object_get(o, "summary"));
    }
    if ((o = json_object_get(mask, "blocks")))
        mk->blocks = (enc_blocks_pattern){(int)json_integer_value(json_object_get(o, "size")),
                                          (int)json_integer_value(json_object_get(o, "window")),
                                          (int)json_integer_value(json_object_get(o, "global")),
                                          (int)json_integer_value(json_object_get(o, "random")),
                                          (uint64_t)json_integer_value(json_object_get(o, "seed"))};
    if ((v = torch_floats(&c->file, "position_ids", &n))) {
        ck_assert_uint_eq(n, (size_t)B * L);
        c->positions = xcalloc(n, sizeof *c->positions);
        for (size_t i = 0; i < n; i++)
            c->positions[i] = (int32_t)v[i];
        c->in.positions = c->positions;
        free(v);
    }
    if ((v = torch_floats(&c->file, "key_padding", &n))) {
        ck_assert_uint_eq(n, (size_t)B * L);
        c->key_padding = xcalloc(n, 1);
        for (size_t i = 0; i < n; i++)
            c->key_padding[i] = v[i] != 0.0f;
        mk->key_padding = c->key_padding;
        free(v);
    }
    if ((v = torch_floats(&c->file, "attn_bool", &n))) {
        c->attn_bool = xcalloc(n, 1);
        for (size_t i = 0; i < n; i++)
            c->attn_bool[i] = v[i] != 0.0f;
        mk->attn_kind = ENC_MASK_BOOL;
        mk->attn_bool = c->attn_bool;
        mk->attn_per_sequence = n == (size_t)B * L * L && n != (size_t)L * L;
        ck_assert(n == (size_t)L * L || n == (size_t)B * L * L);
        free(v);
    }
    if ((c->attn_add = torch_floats(&c->file, "attn_add", &n))) {
        ck_assert_msg(mk->attn_kind == ENC_MASK_NONE, "%s: both mask kinds", name);
        mk->attn_kind = ENC_MASK_ADD;
        mk->attn_add = c->attn_add;
        mk->attn_per_sequence = n == (size_t)B * L * L && n != (size_t)L * L;
        ck_assert(n == (size_t)L * L || n == (size_t)B * L * L);
    }
    json_decref(mask);
}

static void case_free(torch_case *c)
{
    enc_model_free(c->model);
    st_close(&c->file);
    free(c->x);
    free(c->lengths);
    free(c->global);
    free(c->key_padding);
    free(c->positions);
    free(c->attn_bool);
    free(c->attn_add);
}

typedef int (*forward_fn)(const enc_model *, enc_workspace *, const enc_batch *, enc_result *,
                          enc_error *);

static int run_naive(const enc_model *m, enc_workspace *ws, const enc_batch *in, enc_result *res,
                     enc_error *err)
{
    (void)ws;
    return enc_forward_naive(m, in, res, err);
}

/* Dynamic batching: the case runs as the second of two jobs in one
 * enc_forward_many, after a job of the same batch (so its tokens sit past
 * another batch's in every packed matrix); its result is checked. */
static int run_batched(const enc_model *m, enc_workspace *ws, const enc_batch *in, enc_result *res,
                       enc_error *err)
{
    const int NL = m->hp.n_layers;
    const size_t n_out = (size_t)in->B * in->L * m->hp.d_model;
    const size_t n_attn = (size_t)in->B * m->hp.n_heads * in->L * in->L;
    float *out0 = xcalloc(n_out, sizeof(float)), *attn0[ENC_MAX_LAYERS] = {0};
    for (int l = 0; l < NL; l++)
        attn0[l] = xcalloc(n_attn, sizeof(float));
    enc_result res0 = {.out = out0, .attn_mode = ENC_ATTN_HEADS, .attn = attn0};
    enc_job jobs[2] = {{.in = in, .res = &res0}, {.in = in, .res = res}};
    const int failed = enc_forward_many(m, ws, jobs, 2);
    ck_assert_msg(jobs[0].rc == 0, "first job: %s", jobs[0].err.message);
    if (err)
        *err = jobs[1].err;
    for (int l = 0; l < NL; l++)
        free(attn0[l]);
    free(out0);
    return failed ? jobs[1].rc : 0;
}

/* n floats of NaN: an entry the forward leaves unwritten then differs from
 * PyTorch's by infinity (max_abs_diff), padding included. */
static float *poisoned(size_t n)
{
    float *f = xcalloc(n, sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = NAN;
    return f;
}

/* Runs one path in one attention mode and compares everything it returns,
 * into outputs that start as NaN (the daemon does not zero them). */
static void check_case(torch_case *c, forward_fn fwd, enc_attn_mode mode, const char *path)
{
    const enc_hparams *hp = &c->hp;
    const int B = c->in.B, L = c->in.L, H = hp->n_heads;
    const size_t n_out = (size_t)B * L * hp->d_model;
    const size_t n_attn = (size_t)B * enc_attn_heads(mode, H) * L * L;
    float *out = poisoned(n_out);
    float *attn[ENC_MAX_LAYERS] = {0};
    for (int l = 0; l < hp->n_layers; l++)
        attn[l] = poisoned(n_attn);
    enc_result res = {.out = out, .attn_mode = mode, .attn = attn};
    enc_workspace *ws = enc_workspace_new(c->model);
    enc_error err = {0};
    ck_assert_msg(fwd(c->model, ws, &c->in, &res, &err) == 0, "%s %s: %s", c->name, path,
                  err.message);

    size_t n;
    float *want = torch_floats(&c->file, "out", &n);
    ck_assert_msg(want && n == n_out, "%s: expected out missing or misshaped", c->name);
    double d = max_abs_diff(out, want, n_out);
    ck_assert_msg(d <= TOL, "%s %s: outputs differ from PyTorch by %g", c->name, path, d);
    free(want);

    for (int l = 0; l < hp->n_layers && mode != ENC_ATTN_NONE; l++) {
        char key[32];
        snprintf(key, sizeof key, "%s.%d", mode == ENC_ATTN_HEADS ? "attn" : "attn_mean", l);
        want = torch_floats(&c->file, key, &n);
        ck_assert_msg(want && n == n_attn, "%s: %s missing or misshaped", c->name, key);
        d = max_abs_diff(attn[l], want, n_attn);
        ck_assert_msg(d <= TOL, "%s %s: %s differs from PyTorch by %g", c->name, path, key, d);
        free(want);
    }
    enc_workspace_free(ws);
    for (int l = 0; l < hp->n_layers; l++)
        free(attn[l]);
    free(out);
}

/* The sparse cases: the CSR lists equal the allowed pairs the fixture
 * script worked out from the definitions, the CSR weights equal PyTorch's
 * at those pairs (both kernels), and BigBird's random blocks equal the
 * script's own generator's. */
static void check_csr(torch_case *c)
{
    size_t n;
    float *allowed = torch_floats(&c->file, "allowed", &n);
    if (!allowed)
        return;
    const enc_hparams *hp = &c->hp;
    const int B = c->in.B, L = c->in.L, H = hp->n_heads;
    ck_assert_uint_eq(n, (size_t)B * L * L);
    enc_error err = {0};
    enc_blockmask *bm = enc_blockmask_new(&c->in, true, &err);
    ck_assert_msg(bm != NULL, "%s: %s", c->name, err.message);
    size_t total = 0;
    for (int b = 0; b < B; b++) {
        const int len = c->in.lengths ? c->in.lengths[b] : L;
        const int32_t *ip = enc_blockmask_indptr(bm, b), *ix = enc_blockmask_indices(bm, b);
        int32_t k = 0;
        for (int i = 0; i < len; i++) {
            EXPECT(ip[i] == k, "%s: sequence %d row %d: indptr %d, want %d", c->name, b, i, ip[i],
                   k);
            for (int j = 0; j < L; j++)
                if (allowed[((size_t)b * L + i) * L + j] != 0.0f) {
                    EXPECT(ix[k] == j, "%s: sequence %d row %d: index %d is %d, want %d", c->name,
                           b, i, k, ix[k], j);
                    k++;
                }
        }
        ck_assert_int_eq(ip[len], k);
        total += (size_t)k;
    }
    float *vals[ENC_MAX_LAYERS] = {0};
    for (int l = 0; l < hp->n_layers; l++)
        vals[l] = xcalloc((size_t)H * total + 1, sizeof(float));
    float *out = xcalloc((size_t)B * L * hp->d_model, sizeof(float));
    for (int simd = 1; simd >= 0; simd--) {
        simd_set_enabled(simd);
        enc_batch in = c->in;
        in.blockmask = bm;
        enc_result res = {
            .out = out, .attn_mode = ENC_ATTN_HEADS, .attn_format = ENC_FORMAT_CSR, .attn = vals};
        enc_workspace *ws = enc_workspace_new(c->model);
        ck_assert_msg(enc_forward(c->model, ws, &in, &res, &err) == 0, "%s: %s", c->name,
                      err.message);
        enc_workspace_free(ws);
        for (int l = 0; l < hp->n_layers; l++) {
            char key[32];
            snprintf(key, sizeof key, "attn.%d", l);
            float *want = torch_floats(&c->file, key, NULL);
            size_t off = 0;
            for (int b = 0; b < B; b++) {
                const int len = c->in.lengths ? c->in.lengths[b] : L;
                const int32_t *ip = enc_blockmask_indptr(bm, b), *ix = enc_blockmask_indices(bm, b);
                const size_t nnz = enc_blockmask_nnz(bm, b);
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < len; i++)
                        for (int32_t k = ip[i]; k < ip[i + 1]; k++) {
                            const float w = want[(((size_t)b * H + h) * L + i) * L + ix[k]];
                            const float g = vals[l][off + (size_t)h * nnz + (size_t)k];
                            EXPECT(fabsf(g - w) <= TOL,
                                   "%s layer %d: CSR weight (%d, %d) head %d is %g, PyTorch %g",
                                   c->name, l, i, ix[k], h, (double)g, (double)w);
                        }
                off += (size_t)H * nnz;
            }
            free(want);
        }
    }
    simd_set_enabled(true);
    float *table = torch_floats(&c->file, "random_blocks", &n);
    if (table) { /* sequence 0's random blocks, [n_blocks, random] */
        const enc_blocks_pattern *p = &c->in.mask.blocks;
        const int len = c->in.lengths ? c->in.lengths[0] : L;
        const int nb = (len + p->size - 1) / p->size;
        ck_assert_uint_eq(n, (size_t)nb * p->random);
        int *cand = xcalloc((size_t)nb, sizeof *cand),
            *got = xcalloc((size_t)p->random + 1, sizeof *got);
        for (int qb = 0; qb < nb; qb++) {
            const int k = mask_blocks_random(p, nb, qb, cand, got);
            for (int r = 0; r < p->random; r++)
                ck_assert_msg((r < k ? got[r] : -1) == (int)table[(size_t)qb * p->random + r],
                              "%s: query block %d random block %d: %d, the script's %d", c->name,
                              qb, r, r < k ? got[r] : -1, (int)table[(size_t)qb * p->random + r]);
        }
        free(cand);
        free(got);
        free(table);
    }
    for (int l = 0; l < hp->n_layers; l++)
        free(vals[l]);
    free(out);
    free(allowed);
    enc_blockmask_free(bm);
}

START_TEST(test_enough_cases)
{
    ck_assert_msg(torch_case_count() >= MIN_CASES, "only %d fixture cases under %s",
                  torch_case_count(), TORCH_DIR);
}
END_TEST

START_TEST(test_torch_case)
{
    torch_case c;
    case_load(&c, torch_case_name(_i));
    /* Where the CPU has AVX-512 the loaded model's Linears are prepacked
     * (gemm.h): the fast path then runs once on them and once on cblas_sgemm. */
    ck_assert_msg(!simd_supported() || c.model->layers[0].pk_qkv,
                  "%s: AVX-512 CPU but the weights were not packed", c.name);
    check_case(&c, enc_forward, ENC_ATTN_HEADS, "fast");
    check_case(&c, enc_forward, ENC_ATTN_MEAN, "fast");
    check_case(&c, enc_forward, ENC_ATTN_NONE, "fast");
    check_case(&c, run_batched, ENC_ATTN_HEADS, "fast, batched with another job");
    check_case(&c, run_batched, ENC_ATTN_MEAN, "fast, batched with another job");
    simd_set_enabled(false);
    check_case(&c, enc_forward, ENC_ATTN_HEADS, "fast, cblas_sgemm");
    check_case(&c, enc_forward, ENC_ATTN_NONE, "fast, cblas_sgemm");
    simd_set_enabled(true);
    check_case(&c, run_naive, ENC_ATTN_HEADS, "naive");
    check_case(&c, run_naive, ENC_ATTN_MEAN, "naive");
    check_csr(&c);
    case_free(&c);
}
END_TEST

Suite *torch_suite(void)
{
    Suite *s = timed_suite("torch");
    TCase *tc = timed_case(s, "fixtures", 60);
    tcase_add_test(tc, test_enough_cases);
    tcase_add_loop_test(tc, test_torch_case, 0, torch_case_count()); /* one per case */
    return s;
}
