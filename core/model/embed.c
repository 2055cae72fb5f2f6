/* embed.c - a Hugging Face directory's embedding module: token ids to the
 * stack's input, as transformers' BertEmbeddings, RobertaEmbeddings,
 * ElectraEmbeddings (+ ElectraModel's embeddings_project), DistilBERT's
 * Embeddings and ModernBertEmbeddings compute it; the batch checks of
 * input_ids.  The forward (forward.c) runs embed_rows over its team, by
 * rows; naive.c has the same math in plain loops. */
#include "model/embed.h"

#include "base/mem.h"
#include "base/rng.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The widening loops are compiled for AVX-512, AVX2 and plain x86-64, as
 * ops.c's (GCC function multi-versioning). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "embed.c reads the file's little-endian tables in place"
#endif

embed_module *embed_new(const embed_config *cfg, int D, enc_error *err)
{
    embed_module *e = calloc(1, sizeof *e);
    if (!e) {
        enc_error_set(err, ENC_ENOMEM, "out of memory for the embedding module");
        return NULL;
    }
    e->cfg = *cfg;
    e->D = D;
    e->word_fd = -1;
    const size_t E = (size_t)cfg->embedding_size;
    const size_t P = cfg->pos == EMBED_POS_NONE ? 0 : (size_t)cfg->max_positions;
    const size_t TV = (size_t)cfg->type_vocab_size, proj = E != (size_t)D;
    const bool ln = !cfg->no_norm, ln_b = ln && cfg->norm_bias;
    e->n_params = P * E + TV * E + (ln ? E : 0) + (ln_b ? E : 0) + (proj ? (size_t)D * E + D : 0);
    if (!(e->params = mem_zalloc(e->n_params * sizeof *e->params))) {
        embed_free(e);
        enc_error_set(err, ENC_ENOMEM, "out of memory for the embedding module's tables");
        return NULL;
    }
    float *p = e->params;
#define CARVE(field, n, present)                                                                   \
    do {                                                                                           \
        e->field = (present) ? p : NULL;                                                           \
        p += (present) ? (n) : 0;                                                                  \
    } while (0)
    CARVE(pos, P * E, P > 0);
    CARVE(type, TV * E, TV > 0);
    CARVE(ln_w, E, ln);
    CARVE(ln_b, E, ln_b);
    CARVE(proj_w, (size_t)D * E, proj);
    CARVE(proj_b, (size_t)D, proj);
#undef CARVE
    return e;
}

void embed_free(embed_module *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->info.n_tensors; i++)
        free(e->names[i]);
    free(e->names);
    gemm_packed_free(e->pk_proj);
    mem_zfree(e->params, e->n_params * sizeof *e->params);
    free(e);
}

int embed_add_name(embed_module *e, const char *name)
{
    char **names = realloc(e->names, (e->info.n_tensors + 1) * sizeof *names);
    if (!names)
        return -1;
    e->names = names;
    if (!(names[e->info.n_tensors] = strdup(name)))
        return -1;
    e->info.n_tensors++;
    return 0;
}

/* Bytes of one word-table element. */
static size_t dtype_size(embed_dtype dtype)
{
    return dtype == EMBED_F32 ? 4 : 2;
}

/* One bit test per element (every exponent bit set: an infinity or a NaN),
 * no early exit, so the loop vectorizes; a pass over the table at load. */
VECTOR_CLONES
bool embed_finite(const void *data, size_t n, embed_dtype dtype)
{
    const unsigned char *p = data;
    uint32_t bad = 0;
    if (dtype == EMBED_F32) {
        for (size_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * i, sizeof u);
            bad |= (u & 0x7F800000u) == 0x7F800000u;
        }
    } else {
        const uint16_t exp = dtype == EMBED_F16 ? 0x7C00u : 0x7F80u;
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, sizeof h);
            bad |= (h & exp) == exp;
        }
    }
    return !bad;
}

/* Widens n elements of dtype at src into dst. */
static void widen(float *dst, const unsigned char *src, size_t n, embed_dtype dtype)
{
    if (dtype == EMBED_F32) {
        memcpy(dst, src, n * sizeof *dst); /* little-endian float32: the bits as they are */
    } else if (dtype == EMBED_F16) {
        embed_widen_f16(dst, src, n);
    } else {
        for (size_t i = 0; i < n; i++) { /* bfloat16: the top half of a float32 */
            uint16_t h;
            memcpy(&h, src + 2 * i, sizeof h);
            const uint32_t u = (uint32_t)h << 16;
            memcpy(dst + i, &u, sizeof u);
        }
    }
}

/* IEEE half to float without a branch or a subnormal operation: normals
 * rebias the exponent (+112), subnormals are m * 2^-24 (exact: m < 2^10),
 * infinities and NaNs keep their payload; the sign goes back on last. */
VECTOR_CLONES
void embed_widen_f16(float *dst, const void *src, size_t n)
{
    const unsigned char *p = src;
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, sizeof h);
        const uint32_t em = h & 0x7FFFu, exp = em >> 10, mant = em & 0x3FFu;
        const float sub = (float)mant * 0x1p-24f;
        uint32_t sub_bits;
        memcpy(&sub_bits, &sub, sizeof sub_bits);
        uint32_t bits = exp == 0 ? sub_bits : (em << 13) + (112u << 23);
        bits = exp == 0x1F ? 0x7F800000u | mant << 13 : bits;
        bits |= (uint32_t)(h & 0x8000u) << 16;
        memcpy(dst + i, &bits, sizeof bits);
    }
}

int embed_check_word(const embed_module *e, const void *data, embed_dtype dtype, size_t row0,
                     size_t rows, const char *name, enc_error *err)
{
    const size_t E = (size_t)e->cfg.embedding_size, size = dtype_size(dtype);
    const unsigned char *p = (const unsigned char *)data + row0 * E * size;
    const size_t n = rows * E;
    if (embed_finite(p, n, dtype))
        return ENC_OK;
    size_t k = 0;
    for (float v; k < n; k++) { /* the first one, for the message */
        widen(&v, p + k * size, 1, dtype);
        if (!isfinite(v))
            break;
    }
    return enc_error_set(err, ENC_EFORMAT, "tensor '%s' has a non-finite value at index %zu", name,
                         row0 * E + k);
}

void embed_use_word(embed_module *e, const void *data, embed_dtype dtype)
{
    e->word = data;
    e->word_dtype = dtype;
}

int embed_set_word(embed_module *e, const void *data, embed_dtype dtype, const char *name,
                   enc_error *err)
{
    const int rc = embed_check_word(e, data, dtype, 0, (size_t)e->cfg.vocab_size, name, err);
    if (rc == ENC_OK)
        embed_use_word(e, data, dtype);
    return rc;
}

void embed_sinusoidal(embed_module *e)
{
    /* transformers' _create_sinusoidal_embeddings: angle pos / 10000^(2 (j // 2)
     * / dim) in float64, sin in the even columns, cos in the odd ones, each
     * rounded to float32 once. */
    const int P = e->cfg.max_positions, E = e->cfg.embedding_size;
    for (int p = 0; p < P; p++)
        for (int j = 0; j < E; j++) {
            const double a = (double)p / pow(10000.0, 2.0 * (j / 2) / (double)E);
            e->pos[(size_t)p * E + j] = (float)(j % 2 == 0 ? sin(a) : cos(a));
        }
}

void embed_finish(embed_module *e, const enc_hparams *hp)
{
    static const char *const dtypes[] = {
        [EMBED_F32] = "F32", [EMBED_F16] = "F16", [EMBED_BF16] = "BF16"};
    static const char *const positions[] = {[EMBED_POS_ABSOLUTE] = "absolute",
                                            [EMBED_POS_ROBERTA] = "roberta",
                                            [EMBED_POS_SINUSOIDAL] = "sinusoidal"};
    e->info.vocab_size = e->cfg.vocab_size;
    e->info.type_vocab_size = e->cfg.type_vocab_size;
    e->info.max_positions = e->cfg.pos == EMBED_POS_NONE ? 0 : e->cfg.max_positions;
    e->info.padding_idx = e->cfg.pos == EMBED_POS_ROBERTA ? e->cfg.pad_token_id : -1;
    e->info.dtype = dtypes[e->word_dtype];
    e->info.position = e->cfg.pos != EMBED_POS_NONE    ? positions[e->cfg.pos]
                       : hp->position == ENC_POS_ALIBI ? "alibi"
                       : hp->position == ENC_POS_ROPE  ? "rope"
                                                       : "relative";
    e->info.tensors = (const char *const *)e->names;
}

void embed_pack(embed_module *e)
{
    gemm_packed_free(e->pk_proj);
    e->pk_proj = e->proj_w ? gemm_pack(e->proj_w, e->D, e->cfg.embedding_size) : NULL;
}

/* Whether n bytes at offset off of fd were read into dst. */
static bool read_at(int fd, void *dst, size_t n, uint64_t off)
{
    unsigned char *p = dst;
    while (n > 0) {
        const ssize_t got = pread(fd, p, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        p += got;
        n -= (size_t)got;
        off += (uint64_t)got;
    }
    return true;
}

void embed_seeded_row(uint64_t seed, int32_t id, size_t E, float *y)
{
    rng_stream r; /* row id: numbers id * E .. id * E + E - 1 of the stream */
    rng_init(&r, seed, EMBED_SEED_LAYER, EMBED_SEED_WORD);
    rng_skip(&r, (uint64_t)id * E);
    for (size_t j = 0; j < E; j++)
        y[j] = rng_uniform(&r, EMBED_SEED_BOUND);
}

/* Row id of the word table, widened, into y (E floats): drawn from the
 * seed (a seeded module), read from the file when the module has one (see
 * embed_module), else (or should the read fail) at word. */
static void word_row(const embed_module *e, int32_t id, float *y)
{
    const size_t E = (size_t)e->cfg.embedding_size, size = dtype_size(e->word_dtype);
    const size_t bytes = E * size;
    if (e->word_seeded) {
        embed_seeded_row(e->word_seed, id, E, y);
        return;
    }
    if (e->word_fd >= 0) {
        /* F32 into y as it is; F16 and BF16 into y's second half, then widened
         * forward: float k's bytes [4k, 4k + 4) end at or before half k + 1's,
         * at 2E + 2k + 2, so each half is read before it is overwritten */
        unsigned char *dst = (unsigned char *)y + (sizeof(float) - size) * E;
        if (read_at(e->word_fd, dst, bytes, e->word_off + (uint64_t)id * bytes)) {
            if (e->word_dtype != EMBED_F32)
                widen(y, dst, E, e->word_dtype);
            return;
        }
    }
    widen(y, e->word + (size_t)id * bytes, E, e->word_dtype);
}

/* ---- a batch of ids ------------------------------------------------------- */

int embed_validate(const embed_module *e, const enc_batch *in, enc_error *err)
{
    const embed_config *cfg = &e->cfg;
    const int B = in->B, L = in->L, V = cfg->vocab_size, TV = cfg->type_vocab_size;
    const int P = cfg->max_positions, pad = cfg->pad_token_id;
    const bool table = cfg->pos != EMBED_POS_NONE;
    for (int b = 0; b < B; b++) {
        const int len = in->lengths ? in->lengths[b] : L;
        const int32_t *ids = in->ids->input_ids + (size_t)b * L;
        const int32_t *tt =
            in->ids->token_type_ids ? in->ids->token_type_ids + (size_t)b * L : NULL;
        const int32_t *pos = in->positions ? in->positions + (size_t)b * L : NULL;
        int real = 0; /* RoBERTa: tokens other than padding_idx */
        for (int i = 0; i < len; i++) {
            if (ids[i] < 0 || ids[i] >= V)
                return enc_error_set(err, ENC_EINVAL, "input_ids[%d][%d] = %d is outside 0..%d", b,
                                     i, (int)ids[i], V - 1);
            if (tt && (tt[i] < 0 || tt[i] >= (TV ? TV : 1)))
                return enc_error_set(err, ENC_EINVAL,
                                     "token_type_ids[%d][%d] = %d is outside 0..%d%s", b, i,
                                     (int)tt[i], TV ? TV - 1 : 0,
                                     TV ? "" : " (the model has no token type embeddings)");
            if (table && pos && pos[i] >= P)
                return enc_error_set(err, ENC_EINVAL,
                                     "positions[%d][%d] = %d is outside 0..%d "
                                     "(max_position_embeddings %d)",
                                     b, i, (int)pos[i], P - 1, P);
            real += ids[i] != pad;
        }
        if (!table || pos)
            continue;
        if (cfg->pos == EMBED_POS_ROBERTA && pad + real >= P)
            return enc_error_set(err, ENC_EINVAL,
                                 "input_ids[%d] has %d tokens other than padding_idx %d, more than "
                                 "the %d that max_position_embeddings %d holds after the offset "
                                 "padding_idx + 1",
                                 b, real, pad, P - pad - 1, P);
        if (cfg->pos != EMBED_POS_ROBERTA && len > P)
            return enc_error_set(
                err, ENC_EINVAL,
                "input_ids[%d] has %d tokens, more than max_position_embeddings %d", b, len, P);
    }
    return ENC_OK;
}

void embed_rows(const embed_module *e, const enc_batch *in, int b, int i0, int i1, float *out,
                int ldo)
{
    const embed_config *cfg = &e->cfg;
    const int L = in->L, E = cfg->embedding_size, pad = cfg->pad_token_id;
    const int32_t *ids = in->ids->input_ids + (size_t)b * L;
    const int32_t *tt = in->ids->token_type_ids ? in->ids->token_type_ids + (size_t)b * L : NULL;
    const int32_t *pos = in->positions ? in->positions + (size_t)b * L : NULL;
    /* RoBERTa's positions: padding_idx + the non-pad tokens up to and
     * including this one (transformers' create_position_ids_from_input_ids),
     * padding_idx for a pad token */
    int real = 0;
    for (int i = 0; cfg->pos == EMBED_POS_ROBERTA && !pos && i < i0; i++)
        real += ids[i] != pad;
    for (int i = i0; i < i1; i++) {
        float *y = out + (size_t)(i - i0) * ldo;
        word_row(e, ids[i], y);
        for (int k = 0; cfg->scale != 0.0f && k < E; k++) /* Gemma3TextScaledWordEmbedding */
            y[k] *= cfg->scale;
        if (e->type) /* inputs_embeds + token_type_embeddings */
            ops_residual(y, e->type + (size_t)(tt ? tt[i] : 0) * E, (size_t)E);
        if (e->pos) { /* + position_embeddings */
            int p = i;
            if (pos)
                p = pos[i];
            else if (cfg->pos == EMBED_POS_ROBERTA)
                p = ids[i] != pad ? pad + ++real : pad;
            ops_residual(y, e->pos + (size_t)p * E, (size_t)E);
        }
        if (ldo != E && e->ln_w)
            ops_layernorm(y, y, e->ln_w, e->ln_b, 1, E, cfg->eps);
    }
    if (ldo == E && e->ln_w) /* the rows in one call */
        ops_layernorm(out, out, e->ln_w, e->ln_b, i1 - i0, E, cfg->eps);
}
