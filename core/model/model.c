/* model.c - a model's storage: its parameters in one allocation, the
 * files' mappings its float32 Linear weights stay in (bound by
 * checkpoint.c), pages given back, the files' names; the accessors of
 * encoder.h that read them.  What is built on the storage (the packed
 * panels, the embeddings, the head, a seeded model) is build.c's. */
#include "model/model.h"

#include "base/mem.h"
#include "kernels/gemm.h"
#include "kernels/mask.h"

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
    const size_t KV = (size_t)m->kv_dim, HE = (size_t)m->q_dim, E = (size_t)m->head_dim;
    CARVE(w_q, HE * D, block && linear);
    CARVE(w_k, KV * D, block && linear);
    CARVE(w_v, KV * D, block && linear);
    CARVE(b_qkv, Q, block && b);
    CARVE(w_o, D * HE, block && linear);
    CARVE(b_o, D, block && b);
    CARVE(w_1, F1 * D, block && linear);
    if (carve) /* gated: the gate's rows after the input's */
        carve->w_g = carve->w_1 && F1 > F ? carve->w_1 + F * D : NULL;
    CARVE(b_1, F1, block && b);
    CARVE(w_2, D * F, block && linear);
    CARVE(b_2, D, block && b);
    CARVE(ln1_w, D, ln1 || (!block && hp->final_norm));
    CARVE(ln1_b, D, (ln1 || (!block && hp->final_norm)) && nb);
    CARVE(ln2_w, D, block);
    CARVE(ln2_b, D, block && nb);
    const bool whole = hp->qk_norm && hp->qk_norm_whole,
               so1 = hp->sublayer_norm || hp->double_residual;
    CARVE(qn_w, whole ? HE : E, block && hp->qk_norm);
    CARVE(kn_w, whole ? KV : E, block && hp->qk_norm);
    CARVE(qn_b, HE, block && whole && nb);
    CARVE(kn_b, KV, block && whole && nb);
    CARVE(so1_w, D, block && so1);
    CARVE(so1_b, D, block && so1 && nb);
    CARVE(so2_w, D, block && hp->sublayer_norm);
    CARVE(so2_b, D, block && hp->sublayer_norm && nb);
#undef CARVE
    return off;
}

enc_model *model_alloc(const enc_hparams *hp, enc_error *err)
{
    enc_model *m = model_new(hp, err);
    if (m && model_carve(m, true, err) < 0) {
        model_storage_free(m);
        return NULL;
    }
    return m;
}

/* DeBERTa's table, its norm, the layers' rows built on it and the row of
 * each distance (enc_model.dis_*); -1 when out of memory. */
static int dis_alloc(enc_model *m)
{
    const enc_disentangled *dis = &m->hp.dis;
    const size_t D = (size_t)m->hp.d_model, rows = 2 * (size_t)dis->span;
    /* the nearest distance from which the rows are the first and the last
     * (the buckets grow with it: validated, within ENC_MAX_POSITION + span) */
    int far = 0;
    while (enc_dis_row(dis, far) < 2 * dis->span - 1 || enc_dis_row(dis, -far) > 0)
        far++;
    m->dis_far = far;
    if (!(m->dis_table = calloc(rows * D, sizeof *m->dis_table)) ||
        !(m->dis_pos = calloc((2 * (size_t)m->hp.n_layers + 1) * rows * D, sizeof *m->dis_pos)) ||
        !(m->dis_row = calloc(2 * (size_t)far + 1, sizeof *m->dis_row)) ||
        (dis->norm && !(m->dis_ln_w = calloc(2 * D, sizeof *m->dis_ln_w))))
        return -1;
    if (dis->norm)
        m->dis_ln_b = m->dis_ln_w + D;
    for (int d = -far; d <= far; d++)
        m->dis_row[far + d] = enc_dis_row(dis, d);
    return 0;
}

enc_model *model_new(const enc_hparams *hp, enc_error *err)
{
    if (enc_hparams_validate(hp, err) < 0)
        return NULL;
    enc_model *m = calloc(1, sizeof *m);
    if (!m)
        goto nomem;
    m->hp = *hp;
    m->head_dim = enc_head_dim(hp);
    m->q_dim = hp->n_heads * m->head_dim;
    m->kv_dim = hp->n_kv_heads * m->head_dim;
    m->qkv_dim = m->q_dim + 2 * m->kv_dim;

    if (hp->position == ENC_POS_ALIBI) {
        if (!(m->alibi = calloc((size_t)hp->n_heads, sizeof *m->alibi)))
            goto nomem;
        enc_alibi_slopes(hp->n_heads, m->alibi);
    }
    if (hp->rel_buckets > 0) {
        if (!(m->rel_bias =
                  calloc((size_t)hp->rel_buckets * (size_t)hp->n_heads, sizeof *m->rel_bias)) ||
            !(m->rel_dist = calloc((size_t)hp->n_heads * MASK_REL_ROW, sizeof *m->rel_dist)))
            goto nomem;
    }
    if (hp->dis.span > 0 && dis_alloc(m) < 0)
        goto nomem;
    m->n_params = layer_floats(m, -1, NULL, NULL, true) +
                  (size_t)hp->rel_buckets * (size_t)hp->n_heads +
                  (size_t)2 * (size_t)hp->dis.span * (size_t)hp->d_model +
                  (hp->dis.span > 0 && hp->dis.norm ? 2 * (size_t)hp->d_model : 0);
    for (int l = 0; l < hp->n_layers; l++)
        m->n_params += layer_floats(m, l, NULL, NULL, true);
    if (!(m->layers = calloc((size_t)hp->n_layers, sizeof *m->layers)))
        goto nomem;
    return m;
nomem:
    model_storage_free(m);
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

void model_storage_free(enc_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_files; i++)
        free(m->files[i].name);
    for (size_t i = 0; i < m->n_ignored; i++)
        free(m->ignored[i]);
    free(m->files);
    free(m->ignored);
    free(m->alibi);
    free(m->rel_bias);
    free(m->rel_dist);
    free(m->dis_table);
    free(m->dis_ln_w);
    free(m->dis_pos);
    free(m->dis_row);
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

const struct enc_dense *enc_model_projection(const enc_model *m)
{
    return m->project.weight ? &m->project : NULL;
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
