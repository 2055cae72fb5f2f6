/* check_embed.c - the embedding module (core/model/embed.c): token ids to the
 * stack's input.  The fixture directories' ids.safetensors
 * (tools/fixtures/make_hf_fixtures.py, make_modernbert_fixtures.py, make_mpnet_fixtures.py:
 * transformers' embedding modules written out in torch) from input_ids
 * through the fast forward and the naive reference; the fast module against
 * the naive one on random ids, tables and shapes; the batch checks and their
 * messages; the word table kept as the file stores it (F16 widened per
 * lookup, F32 mapped from the file, not copied); the directories the binding
 * refuses or loads without a module. */
#include "hf_util.h"
#include "model/embed.h"
#include "model/model.h"
#include "load/safetensors.h"
#include "kernels/simd.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"
#include "torch_fixture.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HF_DIR TESTS_DIR "/fixtures/hf"
#define MB_DIR TESTS_DIR "/fixtures/modernbert"
#define TOL    1e-4
#define TOL_X  1e-5 /* the embedding module's own output */

/* ---- random modules against the naive reference -------------------------- */

/* A stack and an embedding module to bolt onto it. */
typedef struct emb_shape {
    enc_hparams hp;
    embed_config cfg;
    embed_dtype dtype;
} emb_shape;

#define MODERN_HP(D, H, F, LAYERS)                                                                 \
    HP_BASE(D, H, H, F, LAYERS, ENC_ACT_GELU, true, 1e-5f, false),                                 \
        .ffn = ENC_FFN_GEGLU, .norm = ENC_NORM_LAYERNORM_NOBIAS, .final_norm = true,               \
        .first_norm_identity = true, .position = ENC_POS_ROPE, .rope_theta = 160000.0,             \
        .rope_theta_local = 10000.0, .global_every = 2, .local_window = 3

static const emb_shape SHAPES[] = {
    /* BERT: word + type + absolute position, LayerNorm */
    {{HP_BASE(16, 4, 4, 32, 2, ENC_ACT_GELU, false, 1e-12f, true)},
     {97, 2, 40, 0, 16, EMBED_POS_ABSOLUTE, 1e-12f, true, false, 0.0f},
     EMBED_F32},
    /* RoBERTa: positions from padding_idx + 1 over the non-pad ids */
    {{HP_BASE(16, 4, 4, 32, 1, ENC_ACT_GELU, false, 1e-5f, true)},
     {50, 1, 30, 1, 16, EMBED_POS_ROBERTA, 1e-5f, true, false, 0.0f},
     EMBED_F32},
    /* ELECTRA: tables at E = 8, then embeddings_project to D = 16; F16 table */
    {{HP_BASE(16, 2, 2, 24, 2, ENC_ACT_GELU_TANH, false, 1e-12f, true)},
     {61, 2, 33, 0, 8, EMBED_POS_ABSOLUTE, 1e-12f, true, false, 0.0f},
     EMBED_F16},
    /* DistilBERT, sinusoidal, no token types; BF16 table */
    {{HP_BASE(12, 3, 3, 20, 2, ENC_ACT_GELU, false, 1e-12f, true)},
     {40, 0, 45, 0, 12, EMBED_POS_SINUSOIDAL, 1e-12f, true, false, 0.0f},
     EMBED_BF16},
    /* ModernBERT: tok_embeddings, a norm without bias, RoPE inside; F16 */
    {{MODERN_HP(16, 4, 24, 3)},
     {70, 0, 0, 3, 16, EMBED_POS_NONE, 1e-5f, false, false, 0.0f},
     EMBED_F16},
    /* Qwen3: embed_tokens alone, no norm; BF16 */
    {{MODERN_HP(16, 4, 24, 3)},
     {90, 0, 0, 0, 16, EMBED_POS_NONE, 1e-6f, false, true, 0.0f},
     EMBED_BF16},
    /* Gemma 3: embed_tokens times sqrt(D) (here 4), no norm; F32 */
    {{MODERN_HP(16, 4, 24, 3)},
     {90, 0, 0, 0, 16, EMBED_POS_NONE, 1e-6f, false, true, 4.0f},
     EMBED_F32},
    /* a projection down (E 20 > D 12) */
    {{HP_BASE(12, 2, 2, 16, 1, ENC_ACT_RELU, false, 1e-5f, true)},
     {33, 3, 20, 2, 20, EMBED_POS_ROBERTA, 1e-5f, true, false, 0.0f},
     EMBED_F32},
    /* widths of whole GEMM panels: the packed projection (32 -> 64), BF16 */
    {{HP_BASE(64, 4, 4, 64, 1, ENC_ACT_GELU, false, 1e-12f, true)},
     {300, 2, 70, 0, 32, EMBED_POS_ABSOLUTE, 1e-12f, true, false, 0.0f},
     EMBED_BF16},
};
#define N_SHAPES ((int)(sizeof SHAPES / sizeof *SHAPES))

/* A random float16 of magnitude 2^-4 .. 2^3 (a normal, so exact in every form). */
static uint16_t random_f16(uint64_t *st)
{
    const uint64_t r = splitmix(st);
    return (uint16_t)((r & 1) << 15 | (11 + (r >> 1) % 7) << 10 | (r >> 8) % 1024);
}

/* A model of s's stack with s's module, its tables random (the sinusoidal
 * one computed); *word (owned by the caller, freed after the model) holds
 * the word table in s's dtype. */
static enc_model *embed_model(const emb_shape *s, uint64_t seed, void **word)
{
    enc_error err = {0};
    enc_model *m = enc_model_random(&s->hp, seed, &err);
    ck_assert_msg(m != NULL, "%s", err.message);
    embed_module *e = embed_new(&s->cfg, s->hp.d_model, &err);
    ck_assert_msg(e != NULL, "%s", err.message);
    uint64_t st = seed * 7 + 1;
    fill_random(e->params, e->n_params, &st, 0.3f);
    for (int k = 0; e->ln_w && k < s->cfg.embedding_size; k++)
        e->ln_w[k] += 1.0f;
    if (s->cfg.pos == EMBED_POS_SINUSOIDAL)
        embed_sinusoidal(e);
    const size_t n = (size_t)s->cfg.vocab_size * s->cfg.embedding_size;
    if (s->dtype == EMBED_F32) {
        float *w = xcalloc(n, sizeof *w);
        fill_random(w, n, &st, 1.0f);
        *word = w;
    } else {
        uint16_t *w = xcalloc(n, sizeof *w);
        for (size_t i = 0; i < n; i++) {
            float f;
            fill_random(&f, 1, &st, 1.0f);
            uint32_t u;
            memcpy(&u, &f, sizeof u);
            w[i] = s->dtype == EMBED_F16 ? random_f16(&st) : (uint16_t)(u >> 16);
        }
        *word = w;
    }
    ck_assert_int_eq(embed_set_word(e, *word, s->dtype, "word", &err), 0);
    embed_finish(e, &m->hp);
    m->embed = e;
    model_pack(m); /* the projection too */
    return m;
}

/* A random ids batch for m's module: B sequences up to Lmax long (within
 * its positions), some padded; token types when it has them (or zeros, or
 * none); positions given in some variants; RoBERTa's pad id among the real
 * tokens now and then.  The arrays are owned by the caller (free_ids). */
typedef struct ids_batch {
    enc_batch in;
    enc_ids ids;
    int32_t *input_ids, *types, *positions;
    int *lengths;
} ids_batch;

static void make_ids(ids_batch *b, const enc_model *m, int B, int variant, uint64_t *st)
{
    const embed_config *cfg = &m->embed->cfg;
    int Lmax = 40;
    if (cfg->pos != EMBED_POS_NONE)
        Lmax = cfg->max_positions - (cfg->pos == EMBED_POS_ROBERTA ? cfg->pad_token_id + 1 : 0);
    Lmax = Lmax < 40 ? Lmax : 40;
    const int L = rand_int(st, 1, Lmax);
    memset(b, 0, sizeof *b);
    b->input_ids = xcalloc((size_t)B * L, sizeof *b->input_ids);
    b->lengths = xcalloc((size_t)B, sizeof *b->lengths);
    for (int s = 0; s < B; s++) {
        b->lengths[s] = s == 0 ? L : rand_int(st, 1, L);
        for (int i = 0; i < L; i++) {
            int32_t id = rand_int(st, 0, cfg->vocab_size - 1);
            if (i >= b->lengths[s])
                id = cfg->pad_token_id; /* never looked up */
            else if (rand_int(st, 0, 9) == 0)
                id = cfg->pad_token_id; /* a pad token among the real ones */
            b->input_ids[(size_t)s * L + i] = id;
        }
    }
    if (cfg->type_vocab_size > 0 && variant % 3 != 2) {
        b->types = xcalloc((size_t)B * L, sizeof *b->types);
        for (size_t t = 0; t < (size_t)B * L; t++)
            b->types[t] = rand_int(st, 0, cfg->type_vocab_size - 1);
    } else if (variant % 3 == 1) {
        b->types = xcalloc((size_t)B * L, sizeof *b->types); /* zeros: always allowed */
    }
    if (variant % 2 == 1) {
        const int P = cfg->pos == EMBED_POS_NONE ? 200 : cfg->max_positions;
        b->positions = xcalloc((size_t)B * L, sizeof *b->positions);
        for (size_t t = 0; t < (size_t)B * L; t++)
            b->positions[t] = rand_int(st, 0, P - 1);
    }
    b->ids = (enc_ids){.input_ids = b->input_ids, .token_type_ids = b->types};
    b->in = batch_plain(NULL, B, L, b->lengths);
    b->in.ids = &b->ids;
    b->in.positions = b->positions;
}

static void free_ids(ids_batch *b)
{
    free(b->input_ids);
    free(b->types);
    free(b->positions);
    free(b->lengths);
}

/* Runs in through the fast forward and the naive reference (per-head
 * weights of every layer) and compares. */
static void fast_vs_naive(const enc_model *m, const enc_batch *in, const char *what)
{
    const enc_hparams *hp = &m->hp;
    const int B = in->B, L = in->L, D = hp->d_model, H = hp->n_heads;
    const size_t n_out = (size_t)B * L * D, n_attn = (size_t)B * H * L * L;
    float *out = xcalloc(n_out, sizeof *out), *ref = xcalloc(n_out, sizeof *ref);
    float *attn[ENC_MAX_LAYERS] = {0}, *rattn[ENC_MAX_LAYERS] = {0};
    for (int l = 0; l < hp->n_layers; l++) {
        attn[l] = xcalloc(n_attn, sizeof(float));
        rattn[l] = xcalloc(n_attn, sizeof(float));
    }
    enc_result res = {.out = out, .attn_mode = ENC_ATTN_HEADS, .attn = attn};
    enc_result rres = {.out = ref, .attn_mode = ENC_ATTN_HEADS, .attn = rattn};
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    ck_assert_msg(enc_forward(m, ws, in, &res, &err) == 0, "%s: %s", what, err.message);
    ck_assert_msg(enc_forward_naive(m, in, &rres, &err) == 0, "%s: %s", what, err.message);
    double d = max_abs_diff(out, ref, n_out);
    ck_assert_msg(d <= TOL, "%s: outputs differ from the naive reference by %g", what, d);
    for (int l = 0; l < hp->n_layers; l++) {
        d = max_abs_diff(attn[l], rattn[l], n_attn);
        ck_assert_msg(d <= TOL, "%s: layer %d's weights differ by %g", what, l, d);
        free(attn[l]);
        free(rattn[l]);
    }
    enc_workspace_free(ws);
    free(out);
    free(ref);
}

/* Random ids, every module kind and table dtype, with and without token
 * types and positions, on the AVX-512 forms and the portable ones. */
START_TEST(test_random_fast_vs_naive)
{
    const emb_shape *s = &SHAPES[_i % N_SHAPES];
    const int variant = _i / N_SHAPES;
    void *word = NULL;
    enc_model *m = embed_model(s, 100 + (uint64_t)_i, &word);
    uint64_t st = 1000 + (uint64_t)_i;
    for (int rep = 0; rep < 3; rep++) {
        ids_batch b;
        make_ids(&b, m, rep + 1, variant + rep, &st);
        char what[96];
        snprintf(what, sizeof what, "shape %d variant %d rep %d (L %d)", _i % N_SHAPES, variant,
                 rep, b.in.L);
        fast_vs_naive(m, &b.in, what);
        simd_set_enabled(false);
        fast_vs_naive(m, &b.in, what);
        simd_set_enabled(true);
        free_ids(&b);
    }
    enc_model_free(m);
    free(word);
}
END_TEST

/* Jobs of ids and of embeddings in one enc_forward_many: each gets what it
 * gets alone. */
START_TEST(test_forward_many_mixed)
{
    const emb_shape *s = &SHAPES[_i];
    void *word = NULL;
    enc_model *m = embed_model(s, 7 + (uint64_t)_i, &word);
    const int D = m->hp.d_model;
    uint64_t st = 99;
    ids_batch a, c;
    make_ids(&a, m, 2, 0, &st);
    make_ids(&c, m, 3, 1, &st);
    float *x = xcalloc((size_t)2 * 9 * D, sizeof *x);
    fill_random(x, (size_t)2 * 9 * D, &st, 1.0f);
    enc_batch xb = batch_plain(x, 2, 9, NULL);
    const enc_batch *ins[3] = {&a.in, &xb, &c.in};
    float *outs[3], *alone[3];
    enc_result res[3];
    enc_job jobs[3];
    enc_workspace *ws = enc_workspace_new(m);
    for (int j = 0; j < 3; j++) {
        const size_t n = (size_t)ins[j]->B * ins[j]->L * D;
        outs[j] = xcalloc(n, sizeof(float));
        alone[j] = xcalloc(n, sizeof(float));
        enc_result r = {.out = alone[j]};
        enc_error err = {0};
        ck_assert_msg(enc_forward(m, ws, ins[j], &r, &err) == 0, "%s", err.message);
        res[j] = (enc_result){.out = outs[j]};
        jobs[j] = (enc_job){.in = ins[j], .res = &res[j]};
    }
    ck_assert_int_eq(enc_forward_many(m, ws, jobs, 3), 0);
    for (int j = 0; j < 3; j++) {
        const size_t n = (size_t)ins[j]->B * ins[j]->L * D;
        const double d = max_abs_diff(outs[j], alone[j], n);
        ck_assert_msg(d <= 1e-5, "job %d differs from its forward alone by %g", j, d);
        free(outs[j]);
        free(alone[j]);
    }
    enc_workspace_free(ws);
    free_ids(&a);
    free_ids(&c);
    free(x);
    enc_model_free(m);
    free(word);
}
END_TEST

/* The lookups' float16 widening equals the exact one for every bit pattern
 * (subnormals, infinities, NaN payloads and signs included). */
START_TEST(test_f16_widening_exact)
{
    uint16_t *h = xcalloc(65536, sizeof *h);
    float *f = xcalloc(65536, sizeof *f);
    for (int i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    embed_widen_f16(f, h, 65536);
    for (int i = 0; i < 65536; i++) {
        const float want = st_f16_to_f32((uint16_t)i);
        EXPECT(memcmp(&f[i], &want, sizeof want) == 0, "f16 0x%04x: %a, want %a", i, (double)f[i],
               (double)want);
    }
    free(h);
    free(f);
}
END_TEST

/* The batch checks: every entry and bound named; padding not checked. */
START_TEST(test_ids_refused)
{
    void *word_bert = NULL, *word_rob = NULL, *word_dist = NULL;
    enc_model *bert = embed_model(&SHAPES[0], 1, &word_bert); /* V 97, TV 2, P 40 */
    enc_model *rob = embed_model(&SHAPES[1], 2, &word_rob);   /* V 50, TV 1, P 30, pad 1 */
    enc_model *dist = embed_model(&SHAPES[3], 3, &word_dist); /* V 40, no types, P 45 */
    int32_t ids[2 * 40] = {0}, types[2 * 40] = {0}, pos[2 * 40] = {0};
    int lengths[2] = {5, 3};
    enc_ids e = {.input_ids = ids};
    enc_batch in = batch_plain(NULL, 2, 5, lengths);
    in.ids = &e;
    enc_error err = {0};
#define REFUSED(model, want)                                                                       \
    do {                                                                                           \
        enc_error_clear(&err);                                                                     \
        ck_assert_int_eq(enc_batch_validate(model, &in, &err), ENC_EINVAL);                        \
        ck_assert_str_eq(err.message, want);                                                       \
    } while (0)
#define ACCEPTED(model)                                                                            \
    do {                                                                                           \
        enc_error_clear(&err);                                                                     \
        ck_assert_msg(enc_batch_validate(model, &in, &err) == 0, "%s", err.message);               \
    } while (0)
    ACCEPTED(bert);
    ids[1 * 5 + 2] = 97;
    REFUSED(bert, "input_ids[1][2] = 97 is outside 0..96");
    ids[1 * 5 + 2] = -1;
    REFUSED(bert, "input_ids[1][2] = -1 is outside 0..96");
    ids[1 * 5 + 2] = 0;
    ids[1 * 5 + 3] = 123456; /* padding: never looked up, never checked */
    ACCEPTED(bert);
    ids[1 * 5 + 3] = 0;

    e.token_type_ids = types;
    types[0 * 5 + 4] = 2;
    REFUSED(bert, "token_type_ids[0][4] = 2 is outside 0..1");
    types[0 * 5 + 4] = 1;
    ACCEPTED(bert);
    REFUSED(rob, "token_type_ids[0][4] = 1 is outside 0..0");
    REFUSED(dist,
            "token_type_ids[0][4] = 1 is outside 0..0 (the model has no token type embeddings)");
    types[0 * 5 + 4] = 0;
    ACCEPTED(dist); /* zeros are what the model means without token types */
    e.token_type_ids = NULL;

    in.positions = pos;
    pos[1 * 5 + 1] = 40;
    REFUSED(bert, "positions[1][1] = 40 is outside 0..39 (max_position_embeddings 40)");
    pos[1 * 5 + 1] = 39;
    ACCEPTED(bert);
    in.positions = NULL;

    /* lengths within the table: BERT's L, RoBERTa's offset padding_idx + 1 */
    in = batch_plain(NULL, 1, 40, NULL);
    in.ids = &e;
    ACCEPTED(bert);
    in.L = 41;
    REFUSED(bert, "input_ids[0] has 41 tokens, more than max_position_embeddings 40");
    in.L = 29;
    REFUSED(rob, "input_ids[0] has 29 tokens other than padding_idx 1, more than the 28 that "
                 "max_position_embeddings 30 holds after the offset padding_idx + 1");
    in.L = 28;
    ACCEPTED(rob);
    in.L = 29;
    ids[0] = 1; /* a pad token takes padding_idx: 28 others fit */
    ACCEPTED(rob);
    ids[0] = 0;

    /* exactly one of embeddings and input_ids; ids need an embedding module */
    float x[40 * 16] = {0};
    in = batch_plain(x, 1, 5, NULL);
    in.ids = &e;
    REFUSED(bert, "give embeddings or input_ids, not both: the batch has both");
    in.x = NULL;
    e.input_ids = NULL;
    REFUSED(bert, "no input");
    e.input_ids = ids;
    enc_model *plain = enc_model_random(&SHAPES[0].hp, 4, &err);
    REFUSED(plain, "this model takes embeddings, not input_ids: it has no embedding module "
                   "(serve a model.dir)");
    ck_assert_ptr_null(enc_model_embedding(plain));
    float out[5 * 16];
    enc_result res = {.out = out};
    enc_workspace *ws = enc_workspace_new(plain);
    enc_error_clear(&err);
    ck_assert_int_eq(enc_forward(plain, ws, &in, &res, &err), ENC_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "no embedding module"));
    enc_error_clear(&err);
    ck_assert_int_eq(enc_forward_naive(plain, &in, &res, &err), ENC_EINVAL);
    enc_workspace_free(ws);
#undef REFUSED
#undef ACCEPTED
    enc_model_free(plain);
    enc_model_free(bert);
    enc_model_free(rob);
    enc_model_free(dist);
    free(word_bert);
    free(word_rob);
    free(word_dist);
}
END_TEST

/* ---- the fixture directories -------------------------------------------- */

/* Every case directory with an ids.safetensors: the 4.x config files, and
 * the same directories with transformers 5's (tools/fixtures/make_hf5_fixtures.py,
 * which copies ids.safetensors as it is). */
#define FIX TESTS_DIR "/fixtures/"
static const char *const CASES[] = {"hf/bert_mlm",
                                    "hf/bert_base",
                                    "hf/roberta_mlm",
                                    "hf/xlm_roberta",
                                    "hf/camembert",
                                    "hf/electra_disc",
                                    "hf/distilbert_mlm",
                                    "hf/bert_sharded",
                                    "hf/bert_f16",
                                    "hf/bert_stack4",
                                    "hf/distilbert_sinusoidal",
                                    "modernbert/modernbert_mlm",
                                    "modernbert/modernbert_base_bias",
                                    "modernbert/modernbert_swiglu",
                                    "hf5/bert_mlm",
                                    "hf5/bert_base",
                                    "hf5/roberta_mlm",
                                    "hf5/xlm_roberta",
                                    "hf5/camembert",
                                    "hf5/electra_disc",
                                    "hf5/distilbert_mlm",
                                    "hf5/bert_sharded",
                                    "hf5/bert_f16",
                                    "hf5/bert_stack4",
                                    "hf5/distilbert_sinusoidal",
                                    "modernbert5/modernbert_mlm",
                                    "modernbert5/modernbert_base_bias",
                                    "modernbert5/modernbert_swiglu",
                                    "mpnet/mpnet_base",
                                    "mpnet/mpnet_pad_in_text"};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

/* An ids.safetensors: its batch as the core takes it, and what is expected. */
typedef struct ids_case {
    st_file f;
    int B, L;
    int32_t *input_ids, *types, *positions; /* types, positions NULL when absent */
    int *lengths;
    enc_ids ids;
    enc_batch in;
    json_t *embedding; /* the metadata's "embedding" */
} ids_case;

static void ids_case_open(ids_case *k, const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/ids.safetensors", dir);
    enc_error err = {0};
    memset(k, 0, sizeof *k);
    ck_assert_msg(st_open(&k->f, path, &err) == 0, "%s: %s", path, err.message);
    const st_tensor *t = st_find(&k->f, "input_ids");
    ck_assert(t && t->ndim == 2);
    k->B = (int)t->shape[0];
    k->L = (int)t->shape[1];
    const size_t BL = (size_t)k->B * k->L;
    k->input_ids = hf_ints(&k->f, "input_ids", BL);
    k->types = hf_ints(&k->f, "token_type_ids", BL);
    k->positions = hf_ints(&k->f, "position_ids", BL);
    int32_t *len = hf_ints(&k->f, "lengths", (size_t)k->B);
    k->lengths = xcalloc((size_t)k->B, sizeof *k->lengths);
    for (int b = 0; b < k->B; b++)
        k->lengths[b] = len[b];
    free(len);
    k->ids = (enc_ids){.input_ids = k->input_ids, .token_type_ids = k->types};
    k->in = batch_plain(NULL, k->B, k->L, k->lengths);
    k->in.ids = &k->ids;
    k->in.positions = k->positions;
    k->embedding = json_loads(st_metadata(&k->f, "embedding"), 0, NULL);
    ck_assert_msg(k->embedding != NULL, "%s: no embedding metadata", path);
}

static void ids_case_close(ids_case *k)
{
    free(k->input_ids);
    free(k->types);
    free(k->positions);
    free(k->lengths);
    json_decref(k->embedding);
    st_close(&k->f);
}

/* m's list (count, item) equals the JSON array want, in any order. */
static void same_set(const char *what, size_t n, const char *(*item)(const void *, size_t),
                     const void *obj, const json_t *want)
{
    ck_assert_msg(json_array_size(want) == n, "%s: %zu, the fixture lists %zu", what, n,
                  json_array_size(want));
    for (size_t i = 0; i < json_array_size(want); i++) {
        const char *w = json_string_value(json_array_get(want, i));
        bool found = false;
        for (size_t j = 0; j < n && !found; j++)
            found = strcmp(item(obj, j), w) == 0;
        ck_assert_msg(found, "%s: %s missing", what, w);
    }
}

static const char *tensor_item(const void *info, size_t i)
{
    return ((const enc_embedding_info *)info)->tensors[i];
}

/* One forward of k's batch on m (fast, or naive), compared with the
 * fixture's out and every attn.{l}. */
static void check_forward(const enc_model *m, const ids_case *k, bool naive, const char *name)
{
    const enc_hparams *hp = enc_model_hparams(m);
    const int B = k->B, L = k->L, D = hp->d_model, H = hp->n_heads;
    float *out = xcalloc((size_t)B * L * D, sizeof *out), *attn[ENC_MAX_LAYERS] = {0};
    for (int l = 0; l < hp->n_layers; l++)
        attn[l] = xcalloc((size_t)B * H * L * L, sizeof(float));
    enc_result res = {.out = out, .attn_mode = ENC_ATTN_HEADS, .attn = attn};
    enc_error err = {0};
    if (naive) {
        ck_assert_msg(enc_forward_naive(m, &k->in, &res, &err) == 0, "%s: %s", name, err.message);
    } else {
        enc_workspace *ws = enc_workspace_new(m);
        ck_assert_msg(enc_forward(m, ws, &k->in, &res, &err) == 0, "%s: %s", name, err.message);
        enc_workspace_free(ws);
    }
    float *want = torch_floats(&k->f, "out", NULL);
    double d = max_abs_diff(out, want, (size_t)B * L * D);
    ck_assert_msg(d <= TOL, "%s (%s): outputs differ from the fixture's by %g", name,
                  naive ? "naive" : "fast", d);
    free(want);
    for (int l = 0; l < hp->n_layers; l++) {
        char key[32];
        snprintf(key, sizeof key, "attn.%d", l);
        float *w = torch_floats(&k->f, key, NULL);
        ck_assert_msg(w != NULL, "%s: no %s", name, key);
        d = max_abs_diff(attn[l], w, (size_t)B * H * L * L);
        ck_assert_msg(d <= TOL, "%s (%s): %s differs from the fixture's by %g", name,
                      naive ? "naive" : "fast", key, d);
        free(w);
        free(attn[l]);
    }
    free(out);
}

/* Each directory from its ids: the embedding module's output, the outputs
 * and every layer's weights of the fast forward (AVX-512 and portable) and
 * of the naive reference within 1e-4 of transformers' modules written out;
 * the module's tensors and the ignored ones (heads, poolers) as the script
 * lists them. */
START_TEST(test_fixture_ids)
{
    const char *name = CASES[_i];
    char dir[512];
    snprintf(dir, sizeof dir, FIX "%s", name);
    enc_model *m = hf_load(dir);
    ids_case k;
    ids_case_open(&k, dir);
    const enc_embedding_info *info = enc_model_embedding(m);
    ck_assert_msg(info != NULL, "%s: no embedding module", name);
    ck_assert_str_eq(info->position, json_string_value(json_object_get(k.embedding, "position")));
    same_set("embedding tensors", info->n_tensors, tensor_item, info,
             json_object_get(k.embedding, "tensors"));
    same_set("ignored and head tensors", hf_outside_count(m), hf_outside_item, m,
             json_object_get(k.embedding, "ignored"));

    /* the module alone: embed_rows against the fixture's x (no projection) */
    const embed_module *e = m->embed;
    if (!e->proj_w) {
        const int D = m->hp.d_model;
        float *x = torch_floats(&k.f, "x", NULL), *got = xcalloc((size_t)k.L * D, sizeof *got);
        for (int b = 0; b < k.B; b++) {
            embed_rows(e, &k.in, b, 0, k.lengths[b], got, D);
            const double d = max_abs_diff(got, x + (size_t)b * k.L * D, (size_t)k.lengths[b] * D);
            ck_assert_msg(d <= TOL_X, "%s: sequence %d's embeddings differ by %g", name, b, d);
        }
        free(x);
        free(got);
    }
    check_forward(m, &k, false, name);
    simd_set_enabled(false);
    check_forward(m, &k, false, name);
    simd_set_enabled(true);
    check_forward(m, &k, true, name);
    ids_case_close(&k);
    enc_model_free(m);
}
END_TEST

/* The stack from the fixture's own x (embeddings in) gives the same out: the
 * ids and the embeddings paths agree on every directory. */
START_TEST(test_fixture_embeddings_in)
{
    const char *name = CASES[_i];
    char dir[512];
    snprintf(dir, sizeof dir, FIX "%s", name);
    enc_model *m = hf_load(dir);
    ids_case k;
    ids_case_open(&k, dir);
    const int D = m->hp.d_model;
    float *x = torch_floats(&k.f, "x", NULL), *want = torch_floats(&k.f, "out", NULL);
    float *out = xcalloc((size_t)k.B * k.L * D, sizeof *out);
    enc_batch in = batch_plain(x, k.B, k.L, k.lengths);
    in.positions = m->hp.position == ENC_POS_ROPE ? k.positions : NULL;
    enc_result res = {.out = out};
    enc_workspace *ws = enc_workspace_new(m);
    enc_error err = {0};
    ck_assert_msg(enc_forward(m, ws, &in, &res, &err) == 0, "%s: %s", name, err.message);
    const double d = max_abs_diff(out, want, (size_t)k.B * k.L * D);
    ck_assert_msg(d <= TOL, "%s: outputs from x differ by %g", name, d);
    enc_workspace_free(ws);
    free(x);
    free(want);
    free(out);
    ids_case_close(&k);
    enc_model_free(m);
}
END_TEST

/* Token types and positions change what comes out: without the fixture's
 * token_type_ids (BERT, ELECTRA) or position_ids (bert_base) the outputs
 * move well past the tolerance; and RoBERTa's own positions are those
 * create_position_ids_from_input_ids gives, passed explicitly. */
START_TEST(test_types_and_positions_matter)
{
    static const char *const dirs[] = {HF_DIR "/bert_mlm", HF_DIR "/electra_disc",
                                       HF_DIR "/bert_base", HF_DIR "/camembert"};
    for (int i = 0; i < 4; i++) {
        enc_model *m = hf_load(dirs[i]);
        ids_case k;
        ids_case_open(&k, dirs[i]);
        const int D = m->hp.d_model;
        const size_t n = (size_t)k.B * k.L * D;
        float *out = xcalloc(n, sizeof *out), *want = torch_floats(&k.f, "out", NULL);
        enc_result res = {.out = out};
        enc_workspace *ws = enc_workspace_new(m);
        enc_error err = {0};
        int32_t *pos = NULL;
        if (i < 2) {
            ck_assert_ptr_nonnull(k.types);
            k.ids.token_type_ids = NULL;
        } else if (i == 2) {
            ck_assert_ptr_nonnull(k.positions);
            k.in.positions = NULL;
        } else { /* padding_idx + the count of non-pad ids so far, padding_idx for a pad */
            const int pad = m->embed->cfg.pad_token_id;
            pos = xcalloc((size_t)k.B * k.L, sizeof *pos);
            for (int b = 0; b < k.B; b++)
                for (int j = 0, c = 0; j < k.L; j++) {
                    const bool real = k.input_ids[b * k.L + j] != pad;
                    c += real;
                    pos[b * k.L + j] = real ? pad + c : pad;
                }
            k.in.positions = pos;
        }
        ck_assert_msg(enc_forward(m, ws, &k.in, &res, &err) == 0, "%s", err.message);
        const double d = max_abs_diff(out, want, n);
        if (i < 3)
            ck_assert_msg(d > 100 * TOL, "%s: the outputs do not depend on them (%g)", dirs[i], d);
        else
            ck_assert_msg(d <= TOL, "%s: explicit RoBERTa positions differ by %g", dirs[i], d);
        free(pos);
        free(out);
        free(want);
        enc_workspace_free(ws);
        ids_case_close(&k);
        enc_model_free(m);
    }
}
END_TEST

/* The word table as the file stores it: bert_f16's stays F16 (and its
 * outputs are test_fixture_ids'); an F32 table is the file's own bytes, in
 * a read-only private mapping of model.safetensors (/proc/self/maps says
 * so), and the module's own memory holds only its small tables. */
START_TEST(test_word_table_not_copied)
{
    enc_model *h = hf_load(HF_DIR "/bert_f16");
    ck_assert_str_eq(enc_model_embedding(h)->dtype, "F16");
    enc_model_free(h);

    static const char *const dirs[] = {HF_DIR "/xlm_roberta", HF_DIR "/bert_sharded",
                                       MB_DIR "/modernbert_mlm"};
    for (int i = 0; i < 3; i++) {
        enc_model *m = hf_load(dirs[i]);
        const embed_module *e = m->embed;
        const embed_config *cfg = &e->cfg;
        ck_assert_str_eq(enc_model_embedding(m)->dtype, "F32");
        const size_t E = (size_t)cfg->embedding_size, D = (size_t)m->hp.d_model;
        const size_t P = cfg->pos == EMBED_POS_NONE ? 0 : (size_t)cfg->max_positions;
        ck_assert_uint_eq(e->n_params, P * E + (size_t)cfg->type_vocab_size * E + E +
                                           (cfg->norm_bias ? E : 0) + (e->proj_w ? D * E + D : 0));
        const uintptr_t p = (uintptr_t)e->word;
        FILE *fp = fopen("/proc/self/maps", "r");
        ck_assert_ptr_nonnull(fp);
        char line[4608];
        bool found = false;
        while (!found && fgets(line, sizeof line, fp)) {
            unsigned long lo, hi;
            char perms[8], path[4096] = "";
            if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s", &lo, &hi, perms, path) < 3 ||
                p < lo || p >= hi)
                continue;
            found = true;
            ck_assert_msg(strcmp(perms, "r--p") == 0, "%s: the table's mapping is %s", dirs[i],
                          perms);
            const size_t n = strlen(path);
            ck_assert_msg(n > 12 && strcmp(path + n - 12, ".safetensors") == 0 &&
                              strstr(path, "/fixtures/"),
                          "%s: the table lies in %s, not the weights file", dirs[i], line);
        }
        fclose(fp);
        ck_assert_msg(found, "%s: the table's address is in no mapping", dirs[i]);
        enc_model_free(m);
    }
}
END_TEST

/* A copy of the safetensors file src at dst without the tensors whose name
 * holds drop (NULL: none), with the first value of tensor nan_in (NULL:
 * none) made NaN. */
static void write_subset(const char *src, const char *dst, const char *drop, const char *nan_in)
{
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, src, &err) == 0, "%s", err.message);
    json_t *hdr = json_object();
    json_object_set_new(hdr, "__metadata__", json_pack("{s:s}", "format", "pt"));
    size_t off = 0;
    for (size_t i = 0; i < f.n_tensors; i++) {
        const st_tensor *t = &f.tensors[i];
        if (drop && strstr(t->name, drop))
            continue;
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer(t->shape[d]));
        json_object_set_new(hdr, t->name,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", st_dtype_name(t->dtype),
                                      "shape", shape, "data_offsets", (json_int_t)off,
                                      (json_int_t)(off + t->nbytes)));
        off += t->nbytes;
    }
    char *text = json_dumps(hdr, JSON_COMPACT);
    const uint64_t n = strlen(text);
    FILE *fp = fopen(dst, "wb");
    ck_assert_ptr_nonnull(fp);
    unsigned char len[8];
    for (int b = 0; b < 8; b++)
        len[b] = (unsigned char)(n >> (8 * b));
    ck_assert_uint_eq(fwrite(len, 1, 8, fp), 8);
    ck_assert_uint_eq(fwrite(text, 1, n, fp), n);
    for (size_t i = 0; i < f.n_tensors; i++) {
        const st_tensor *t = &f.tensors[i];
        if (drop && strstr(t->name, drop))
            continue;
        unsigned char *bytes = xcalloc(t->nbytes, 1);
        memcpy(bytes, t->data, t->nbytes);
        if (nan_in && strcmp(t->name, nan_in) == 0) { /* a quiet NaN, little-endian */
            static const unsigned char f32_nan[4] = {0, 0, 0xC0, 0x7F}, f16_nan[2] = {0, 0x7E};
            if (t->dtype == ST_F32)
                memcpy(bytes, f32_nan, sizeof f32_nan);
            else
                memcpy(bytes, f16_nan, sizeof f16_nan);
        }
        ck_assert_uint_eq(fwrite(bytes, 1, t->nbytes, fp), t->nbytes);
        free(bytes);
    }
    fclose(fp);
    free(text);
    json_decref(hdr);
    st_close(&f);
}

/* A directory like base, its model.safetensors rewritten by write_subset,
 * config.json edited with edit (or not). */
static void scratch_subset(scratch *s, const char *base, const char *edit, const char *drop,
                           const char *nan_in)
{
    scratch_make(s, base, edit, NULL, NULL);
    char src[512], dst[640];
    snprintf(src, sizeof src, "%s/model.safetensors", base);
    snprintf(dst, sizeof dst, "%s/model.safetensors", s->dir);
    write_subset(src, dst, drop, nan_in);
}

/* What the binding refuses, naming the tensor: a word table of the wrong
 * shape for config.json's vocab_size, a NaN in it, the module half there;
 * what it loads: a directory without its embedding tensors (embeddings in
 * only, ids refused), a sinusoidal DistilBERT without its position table
 * (computed, as transformers initialises it). */
START_TEST(test_binding)
{
    scratch s;
    scratch_subset(&s, HF_DIR "/bert_mlm", "{\"vocab_size\": 51}", NULL, NULL);
    refused(s.dir, "tensor 'bert.embeddings.word_embeddings.weight' has shape [50, 16], "
                   "expected [51, 16]");
    scratch_free(&s);

    scratch_subset(&s, HF_DIR "/bert_mlm", "{\"type_vocab_size\": 3}", NULL, NULL);
    refused(s.dir, "tensor 'bert.embeddings.token_type_embeddings.weight' has shape [2, 16], "
                   "expected [3, 16]");
    scratch_free(&s);

    scratch_subset(&s, HF_DIR "/electra_disc", "{\"embedding_size\": 4}", NULL, NULL);
    refused(s.dir, "tensor 'electra.embeddings.word_embeddings.weight' has shape [50, 8], "
                   "expected [50, 4]");
    scratch_free(&s);

    scratch_subset(&s, HF_DIR "/roberta_mlm", NULL, NULL,
                   "roberta.embeddings.word_embeddings.weight");
    refused(s.dir, "tensor 'roberta.embeddings.word_embeddings.weight' has a non-finite value "
                   "at index 0");
    scratch_free(&s);

    scratch_subset(&s, HF_DIR "/bert_f16", NULL, NULL, "embeddings.word_embeddings.weight");
    refused(s.dir, "tensor 'embeddings.word_embeddings.weight' has a non-finite value at index 0");
    scratch_free(&s);

    scratch_subset(&s, HF_DIR "/bert_mlm", NULL, "embeddings.LayerNorm", NULL);
    refused(s.dir, "missing tensor 'bert.embeddings.LayerNorm.weight'");
    scratch_free(&s);

    /* no embedding tensors: embeddings in only, nothing listed for them */
    scratch_subset(&s, HF_DIR "/bert_mlm", NULL, "embeddings.", NULL);
    enc_model *m = hf_load(s.dir);
    ck_assert_ptr_null(enc_model_embedding(m));
    for (size_t i = 0; i < enc_model_ignored_count(m); i++)
        ck_assert_ptr_null(strstr(enc_model_ignored(m, i), "embeddings"));
    enc_model_free(m);
    scratch_free(&s);

    /* sinusoidal DistilBERT without its table: computed, the same outputs */
    scratch_subset(&s, HF_DIR "/distilbert_sinusoidal", NULL, "position_embeddings", NULL);
    m = hf_load(s.dir);
    ck_assert_str_eq(enc_model_embedding(m)->position, "sinusoidal");
    ids_case k;
    ids_case_open(&k, HF_DIR "/distilbert_sinusoidal");
    check_forward(m, &k, false, "distilbert_sinusoidal without its table");
    ids_case_close(&k);
    enc_model_free(m);
    scratch_free(&s);

    /* a learned DistilBERT without its table is half a module: refused */
    scratch_subset(&s, HF_DIR "/distilbert_mlm", NULL, "position_embeddings", NULL);
    refused(s.dir, "missing tensor 'distilbert.embeddings.position_embeddings.weight'");
    scratch_free(&s);
}
END_TEST

Suite *embed_suite(void)
{
    Suite *s = timed_suite("embed");
    TCase *tc = timed_case(s, "random", 120);
    tcase_add_loop_test(tc, test_random_fast_vs_naive, 0, 2 * N_SHAPES);
    tcase_add_loop_test(tc, test_forward_many_mixed, 0, N_SHAPES);
    tcase_add_test(tc, test_f16_widening_exact);
    tcase_add_test(tc, test_ids_refused);
    TCase *fx = timed_case(s, "fixtures", 120);
    tcase_add_loop_test(fx, test_fixture_ids, 0, N_CASES);
    tcase_add_loop_test(fx, test_fixture_embeddings_in, 0, N_CASES);
    tcase_add_test(fx, test_types_and_positions_matter);
    tcase_add_test(fx, test_word_table_not_copied);
    tcase_add_test(fx, test_binding);
    return s;
}
