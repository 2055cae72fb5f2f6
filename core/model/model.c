/* model.c - a model's parameters: one allocation, built from a seed with
 * PyTorch's initialisation scheme (or bound from files by checkpoint.c,
 * whose float32 Linear weights stay in the files' mappings, kept here);
 * the Linear weights packed for the GEMM kernel. */
#include "model/model.h"

#include "base/mem.h"
#include "base/rng.h"
#include "kernels/gemm.h"
#include "kernels/simd.h"
#include "model/embed.h"
#include "model/head.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Floats in layer l, and where each tensor sits, for hp (layer -1: the
 * final norm's); without linear, the Linear weights are neither counted
 * nor carved (a loader points them into a file's mapping). */
static size_t layer_floats(const enc_model *m, int l, enc_layer *carve, float *base, bool linear)
{
    const enc_hparams *hp = &m->hp;
    const size_t D = (size_t)hp->d_model, F = (size_t)hp->d_ff, Q = (size_t)m->qkv_dim;
    const size_t F1 = (size_t)enc_ffn_rows(hp); /* the first Linear's rows: F, or 2F gated */
    const bool b = hp->bias, nb = enc_norm_has_bias(hp);
    const bool block = l >= 0, ln1 = block && !(l == 0 && hp->first_norm_identity);
    size_t off = 0;
#define CARVE(field, n, present)                                                                   \
    do {                                                                                           \
        if (carve)                                                                                 \
            carve->field = (present) ? base + off : NULL;                                          \
        off += (present) ? (n) : 0;                                                                \
    } while (0)
    const size_t KV = (size_t)m->kv_dim;
    CARVE(w_q, D * D, block && linear);
    CARVE(w_k, KV * D, block && linear);
    CARVE(w_v, KV * D, block && linear);
    CARVE(b_qkv, Q, block && b);
    CARVE(w_o, D * D, block && linear);
    CARVE(b_o, D, block && b);
    CARVE(w_1, F1 * D, block && linear);
    CARVE(b_1, F1, block && b);
    CARVE(w_2, D * F, block && linear);
    CARVE(b_2, D, block && b);
    CARVE(ln1_w, D, ln1 || (!block && hp->final_norm));
    CARVE(ln1_b, D, (ln1 || (!block && hp->final_norm)) && nb);
    CARVE(ln2_w, D, block);
    CARVE(ln2_b, D, block && nb);
#undef CARVE
    return off;
}

enc_model *model_alloc(const enc_hparams *hp, enc_error *err)
{
    enc_model *m = model_new(hp, err);
    if (m && model_carve(m, true, err) < 0) {
        enc_model_free(m);
        return NULL;
    }
    return m;
}

enc_model *model_new(const enc_hparams *hp, enc_error *err)
{
    if (enc_hparams_validate(hp, err) < 0)
        return NULL;
    enc_model *m = calloc(1, sizeof *m);
    if (!m)
        goto nomem;
    m->hp = *hp;
    m->head_dim = hp->d_model / hp->n_heads;
    m->kv_dim = hp->n_kv_heads * m->head_dim;
    m->qkv_dim = hp->d_model + 2 * m->kv_dim;

    if (hp->position == ENC_POS_ALIBI) {
        if (!(m->alibi = calloc((size_t)hp->n_heads, sizeof *m->alibi)))
            goto nomem;
        enc_alibi_slopes(hp->n_heads, m->alibi);
    }
    m->n_params = layer_floats(m, -1, NULL, NULL, true);
    for (int l = 0; l < hp->n_layers; l++)
        m->n_params += layer_floats(m, l, NULL, NULL, true);
    if (!(m->layers = calloc((size_t)hp->n_layers, sizeof *m->layers)))
        goto nomem;
    return m;
nomem:
    enc_model_free(m);
    enc_error_set(err, ENC_ENOMEM, "out of memory allocating the model's parameters");
    return NULL;
}

int model_carve(enc_model *m, bool linear, enc_error *err)
{
    m->n_owned = layer_floats(m, -1, NULL, NULL, linear);
    for (int l = 0; l < m->hp.n_layers; l++)
        m->n_owned += layer_floats(m, l, NULL, NULL, linear);
    if (!(m->params = mem_zalloc(m->n_owned * sizeof *m->params)))
        return enc_error_set(err, ENC_ENOMEM, "out of memory allocating the model's parameters");
    size_t off = 0;
    for (int l = 0; l < m->hp.n_layers; l++)
        off += layer_floats(m, l, &m->layers[l], m->params + off, linear);
    enc_layer final;
    layer_floats(m, -1, &final, m->params + off, linear);
    m->final_w = final.ln1_w;
    m->final_b = final.ln1_b;
    return ENC_OK;
}

int model_add_map(enc_model *m, void *addr, size_t size, int fd)
{
    struct model_map *maps = realloc(m->maps, (m->n_maps + 1) * sizeof *maps);
    if (!maps)
        return -1;
    m->maps = maps;
    maps[m->n_maps++] = (struct model_map){addr, size, fd};
    return 0;
}

float *model_own(enc_model *m, const float *p)
{
    return m->params + (p - m->params);
}

bool model_mapped(const enc_model *m, const void *p)
{
    const uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < m->n_maps; i++)
        if (a >= (uintptr_t)m->maps[i].addr && a < (uintptr_t)m->maps[i].addr + m->maps[i].size)
            return true;
    return false;
}

/* The whole pages inside bytes at p: [*lo, *hi); false when there are none. */
static bool whole_pages(const void *p, size_t bytes, uintptr_t *lo, uintptr_t *hi)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    *lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    *hi = ((uintptr_t)p + bytes) & ~(page - 1);
    return *hi > *lo;
}

void model_release(const enc_model *m, const void *p, size_t bytes)
{
    uintptr_t lo, hi;
    if (p && bytes > 0 && model_mapped(m, p) && whole_pages(p, bytes, &lo, &hi))
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED); /* a read-only private file mapping */
}

void model_release_owned(enc_model *m, const void *p, size_t bytes)
{
    const uintptr_t a = (uintptr_t)p, own = (uintptr_t)m->params,
                    own_bytes = (uintptr_t)(m->n_owned * sizeof *m->params);
    uintptr_t lo, hi;
    if (!p || !m->params || own_bytes < MEM_MAPPED_BYTES || a < own || a + bytes > own + own_bytes ||
        !whole_pages(p, bytes, &lo, &hi) || mprotect((void *)lo, hi - lo, PROT_NONE) != 0)
        return; /* not its own mapping, or still readable: left as it is */
    (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
    m->owned_released = true;
}

/* Layer ly's float32 Linear weights that are packed will not be read: a
 * file's pages given back (model_release; a float32 forward with AVX-512
 * off faults them back in), and in bfloat16 or int8 attnd's own too
 * (model_release_owned: every forward reads the bfloat16 or int8 panels). */
static void release_packed(enc_model *m, const enc_layer *ly)
{
    const size_t D = (size_t)m->hp.d_model, KV = (size_t)m->kv_dim, f = sizeof(float);
    const struct {
        const float *w;
        size_t bytes;
        const gemm_packed *pk;
    } ws[] = {{ly->w_q, D * D * f, ly->pk_qkv},
              {ly->w_k, KV * D * f, ly->pk_qkv},
              {ly->w_v, KV * D * f, ly->pk_qkv},
              {ly->w_o, D * D * f, ly->pk_o},
              {ly->w_1, (size_t)enc_ffn_rows(&m->hp) * D * f, ly->pk_1},
              {ly->w_2, D * (size_t)m->hp.d_ff * f, ly->pk_2}};
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++) {
        if (!ws[i].pk)
            continue;
        model_release(m, ws[i].w, ws[i].bytes);
        if (m->hp.dtype == ENC_DTYPE_BFLOAT16 || m->hp.dtype == ENC_DTYPE_INT8)
            model_release_owned(m, ws[i].w, ws[i].bytes);
    }
}

void model_pack(enc_model *m)
{
    if (m->owned_released) /* the float32 weights are gone: the panels stay */
        return;
    const int D = m->hp.d_model, F = m->hp.d_ff, F1 = enc_ffn_rows(&m->hp), KV = m->kv_dim;
    m->packed = false;
    for (int l = 0; l < m->hp.n_layers; l++) {
        enc_layer *ly = &m->layers[l];
        gemm_packed_free(ly->pk_qkv);
        gemm_packed_free(ly->pk_o);
        gemm_packed_free(ly->pk_1);
        gemm_packed_free(ly->pk_2);
        const float *qkv[3] = {ly->w_q, ly->w_k, ly->w_v};
        const int rows[3] = {D, KV, KV};
        if (m->hp.dtype == ENC_DTYPE_BFLOAT16) {
            ly->pk_qkv = gemm_pack_parts_bf16(qkv, rows, 3, D);
            ly->pk_o = gemm_pack_bf16(ly->w_o, D, D);
            ly->pk_1 = gemm_pack_bf16(ly->w_1, F1, D);
            ly->pk_2 = gemm_pack_bf16(ly->w_2, D, F);
        } else if (m->hp.dtype == ENC_DTYPE_INT8) { /* on any CPU, as bfloat16 */
            ly->pk_qkv = gemm_pack_parts_int8(qkv, rows, 3, D);
            ly->pk_o = gemm_pack_int8(ly->w_o, D, D);
            ly->pk_1 = gemm_pack_int8(ly->w_1, F1, D);
            ly->pk_2 = gemm_pack_int8(ly->w_2, D, F);
        } else {
            ly->pk_qkv = gemm_pack_parts(qkv, rows, 3, D);
            ly->pk_o = gemm_pack(ly->w_o, D, D);
            ly->pk_1 = gemm_pack(ly->w_1, F1, D);
            ly->pk_2 = gemm_pack(ly->w_2, D, F);
        }
        m->packed = m->packed || ly->pk_qkv || ly->pk_o || ly->pk_1 || ly->pk_2;
        release_packed(m, ly);
    }
    if (m->embed)
        embed_pack(m->embed);
    head_pack(m);
}

void enc_model_free(enc_model *m)
{
    if (!m)
        return;
    for (int l = 0; m->layers && l < m->hp.n_layers; l++) {
        gemm_packed_free(m->layers[l].pk_qkv);
        gemm_packed_free(m->layers[l].pk_o);
        gemm_packed_free(m->layers[l].pk_1);
        gemm_packed_free(m->layers[l].pk_2);
    }
    for (size_t i = 0; i < m->n_files; i++)
        free(m->files[i].name);
    for (size_t i = 0; i < m->n_ignored; i++)
        free(m->ignored[i]);
    free(m->files);
    free(m->ignored);
    free(m->alibi);
    embed_free(m->embed);
    head_free(m->head);
    mem_zfree(m->params, m->n_owned * sizeof *m->params);
    for (size_t i = 0; i < m->n_maps; i++) {
        munmap(m->maps[i].addr, m->maps[i].size);
        close(m->maps[i].fd);
    }
    free(m->maps);
    free(m->layers);
    free(m);
}

int model_add_file(enc_model *m, const char *name, const char *sha256)
{
    struct model_file *files = realloc(m->files, (m->n_files + 1) * sizeof *files);
    if (!files)
        return -1;
    m->files = files;
    if (!(files[m->n_files].name = strdup(name)))
        return -1;
    snprintf(files[m->n_files].sha256, sizeof files->sha256, "%s", sha256);
    m->n_files++;
    return 0;
}

int model_add_ignored(enc_model *m, const char *name)
{
    char **names = realloc(m->ignored, (m->n_ignored + 1) * sizeof *names);
    if (!names)
        return -1;
    m->ignored = names;
    if (!(names[m->n_ignored] = strdup(name)))
        return -1;
    m->n_ignored++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct model_file *)a)->name, ((const struct model_file *)b)->name);
}

void model_sort_files(enc_model *m)
{
    if (m->n_files > 1)
        qsort(m->files, m->n_files, sizeof *m->files, by_name);
}

const enc_hparams *enc_model_hparams(const enc_model *m)
{
    return &m->hp;
}

size_t enc_model_param_count(const enc_model *m)
{
    return m->n_params;
}

const char *enc_model_sha256(const enc_model *m)
{
    return m->sha256;
}

const char *enc_model_source(const enc_model *m)
{
    return m->source;
}

enc_dtype enc_model_dtype(const enc_model *m)
{
    /* bfloat16 and int8 panels run on every CPU (gemm_bf16_kernel,
     * gemm_int8_kernel); none only when memory was short at packing */
    return (m->hp.dtype == ENC_DTYPE_BFLOAT16 || m->hp.dtype == ENC_DTYPE_INT8) && m->packed
               ? m->hp.dtype
               : ENC_DTYPE_FLOAT32;
}

const char *enc_model_architecture(const enc_model *m)
{
    return m->architecture;
}

size_t enc_model_file_count(const enc_model *m)
{
    return m->n_files;
}

const char *enc_model_file(const enc_model *m, size_t i, const char **sha256)
{
    if (i >= m->n_files)
        return NULL;
    if (sha256)
        *sha256 = m->files[i].sha256;
    return m->files[i].name;
}

size_t enc_model_ignored_count(const enc_model *m)
{
    return m->n_ignored;
}

const char *enc_model_ignored(const enc_model *m, size_t i)
{
    return i < m->n_ignored ? m->ignored[i] : NULL;
}

/* Fills n floats from one stream, uniform in [-bound, bound). */
static void fill_uniform(float *dst, size_t n, uint64_t seed, int layer, int tensor, double bound)
{
    rng_stream r;
    rng_init(&r, seed, layer, tensor);
    for (size_t i = 0; i < n; i++)
        dst[i] = rng_uniform(&r, bound);
}

static void fill_value(float *dst, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = v;
}

/* Stream numbers of enc_model_random, one per tensor of a layer. */
enum { RNG_Q, RNG_K, RNG_V, RNG_OUT_W, RNG_FF1_W, RNG_FF1_B, RNG_FF2_W, RNG_FF2_B };

enc_model *enc_model_random(const enc_hparams *hp, uint64_t seed, enc_error *err)
{
    enc_model *m = model_alloc(hp, err);
    if (!m)
        return NULL;
    const size_t D = (size_t)hp->d_model, F = (size_t)hp->d_ff, KV = (size_t)m->kv_dim;
    const size_t F1 = (size_t)enc_ffn_rows(hp);
    for (int l = 0; l < hp->n_layers; l++) {
        enc_layer *ly = &m->layers[l];
        float *w_qkv = model_own(m, ly->w_q); /* q, k and v rows one after the other */
        if (hp->n_kv_heads == hp->n_heads) {
            /* nn.MultiheadAttention: xavier_uniform_ over the whole (3D, D). */
            fill_uniform(w_qkv, 3 * D * D, seed, l, RNG_Q, sqrt(6.0 / (double)(D + 3 * D)));
        } else {
            /* Separate q/k/v weights: xavier_uniform_ on each. */
            fill_uniform(w_qkv, D * D, seed, l, RNG_Q, sqrt(6.0 / (double)(D + D)));
            fill_uniform(w_qkv + D * D, KV * D, seed, l, RNG_K, sqrt(6.0 / (double)(D + KV)));
            fill_uniform(w_qkv + D * D + KV * D, KV * D, seed, l, RNG_V,
                         sqrt(6.0 / (double)(D + KV)));
        }
        /* nn.Linear: kaiming_uniform_(a=sqrt(5)) gives bound 1/sqrt(fan_in),
         * and its bias the same bound; MHA zeroes its two biases. */
        fill_uniform(model_own(m, ly->w_o), D * D, seed, l, RNG_OUT_W, 1.0 / sqrt((double)D));
        fill_uniform(model_own(m, ly->w_1), F1 * D, seed, l, RNG_FF1_W, 1.0 / sqrt((double)D));
        fill_uniform(model_own(m, ly->w_2), D * F, seed, l, RNG_FF2_W, 1.0 / sqrt((double)F));
        if (hp->bias) {
            fill_uniform(ly->b_1, F1, seed, l, RNG_FF1_B, 1.0 / sqrt((double)D));
            fill_uniform(ly->b_2, D, seed, l, RNG_FF2_B, 1.0 / sqrt((double)F));
            /* b_qkv, b_o and the LayerNorm biases stay zero from calloc. */
        }
        if (ly->ln1_w) /* layer 0's may be the identity */
            fill_value(ly->ln1_w, D, 1.0f);
        fill_value(ly->ln2_w, D, 1.0f);
    }
    if (m->final_w)
        fill_value(m->final_w, D, 1.0f);
    snprintf(m->source, sizeof m->source, "seed:%llu", (unsigned long long)seed);
    model_pack(m);
    return m;
}

/* ---- the embedding module ---------------------------------------------- */

const enc_embedding_info *enc_model_embedding(const enc_model *m)
{
    return m && m->embed ? &m->embed->info : NULL;
}

int enc_model_seed_embedding(enc_model *m, int vocab_size, int max_positions, uint64_t seed,
                             enc_error *err)
{
    if (m->embed)
        return enc_error_set(err, ENC_EINVAL, "the model has an embedding module already");
    if (vocab_size < 1 || max_positions < 1)
        return enc_error_set(err, ENC_EINVAL,
                             "a seeded embedding module needs vocab_size and max_positions of at "
                             "least 1 (got %d and %d)",
                             vocab_size, max_positions);
    const int D = m->hp.d_model;
    const embed_config cfg = {.vocab_size = vocab_size,
                              .type_vocab_size = 2,
                              .max_positions = max_positions,
                              .embedding_size = D,
                              .pos = EMBED_POS_SINUSOIDAL,
                              .eps = m->hp.layer_norm_eps,
                              .norm_bias = true};
    embed_module *e = embed_new(&cfg, D, err);
    if (!e)
        return err->status;
    static const char *const names[] = {"embeddings.word_embeddings.weight",
                                        "embeddings.token_type_embeddings.weight",
                                        "embeddings.position_embeddings.weight",
                                        "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (embed_add_name(e, names[i]) < 0) {
            embed_free(e);
            return enc_error_set(err, ENC_ENOMEM, "out of memory for the embedding module");
        }
    rng_stream r;
    rng_init(&r, seed, EMBED_SEED_LAYER, EMBED_SEED_TYPE);
    for (size_t i = 0; i < 2 * (size_t)D; i++)
        e->type[i] = rng_uniform(&r, EMBED_SEED_BOUND);
    for (int j = 0; j < D; j++) /* the bias stays 0 from mem_zalloc */
        e->ln_w[j] = 1.0f;
    embed_sinusoidal(e);
    e->word_seeded = true;
    e->word_seed = seed;
    e->word_dtype = EMBED_F32;
    embed_finish(e, &m->hp);
    m->embed = e;
    return ENC_OK;
}
