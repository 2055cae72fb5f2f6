/* head.h - a Hugging Face directory's task head (head.c): what transformers'
 * *ForSequenceClassification, *ForTokenClassification and *ForMaskedLM
 * compute from the encoder's last hidden state, as one shape for all of
 * them:
 *
 *     rows  = the first token's row, or the mean of the real tokens' (sequence
 *             heads), or every real token's row (token heads, masked LMs)
 *     t     = norm(act(dense(rows)))   each of the three may be absent
 *     logits = out(t)                  classifier, out_proj or the decoder
 *
 * BERT's sequence head is its pooler (dense, tanh) and classifier; RoBERTa's
 * classifier.dense, tanh, out_proj; DistilBERT's pre_classifier, ReLU,
 * classifier; a masked LM's transform (dense, act, LayerNorm) and decoder,
 * tied to the word table or saved on its own.  Private to core/. */
#ifndef ATTND_MODEL_HEAD_H
#define ATTND_MODEL_HEAD_H

#include "encoder.h"
#include "kernels/gemm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* The head's activations, as config.json names them (head_act_parse). */
typedef enum head_act {
    HEAD_ACT_NONE,
    HEAD_ACT_TANH,
    HEAD_ACT_RELU,
    HEAD_ACT_GELU,      /* exact, with erf */
    HEAD_ACT_GELU_TANH, /* gelu_new, gelu_pytorch_tanh */
    HEAD_ACT_SILU,
} head_act;

/* "tanh", "relu", "gelu", "gelu_new" ... -> act; false for a name the head
 * cannot compute. */
bool head_act_parse(const char *name, head_act *act);

/* Output columns of a head Linear per chunk: each chunk is packed on its
 * own, so that a thread's share, and SPLADE's block of columns, is whole
 * chunks (four GEMM panels). */
#define HEAD_CHUNK 128

/* A Linear of the head: w (N, K), PyTorch layout, in the head's own memory
 * or in a weights file's mapping (a tied decoder: the word table); b (N) or
 * NULL; with AVX-512 each chunk of HEAD_CHUNK rows packed (head_pack). */
typedef struct head_linear {
    int N, K;
    const float *w;
    const float *b;
    gemm_packed **pk; /* (chunks) or NULL: cblas_sgemm on w */
    int chunks;
} head_linear;

typedef struct model_head {
    enc_head_info info;
    char architecture[80];
    char problem_type[48];
    char **labels; /* (n_labels) owned */
    int n_labels;
    char **tensors; /* owned names (info.tensors) */
    size_t n_tensors;
    head_linear dense; /* N 0: none */
    head_act act;
    const float *ln_w, *ln_b; /* (dense.N, or K without dense) LayerNorm after act, or NULL */
    float eps;
    head_linear out;
    float *mem; /* the head's own floats (one allocation) */
    size_t n_mem;
    /* In int8 the Linears are quantised on the first run that needs the
     * head (head_run), not at load: ready says they are, pack_lock makes
     * one thread do it while the others wait. */
    atomic_bool ready;
    pthread_mutex_t pack_lock;
} model_head;

/* A head of kind for architecture (copied), no parameters yet: labels
 * and tensors are added by the loader.  NULL when out of memory. */
model_head *head_new(enc_head_kind kind, const char *architecture);
void head_free(model_head *h);
/* Appends label (copied) / a tensor name; -1 when out of memory. */
int head_add_label(model_head *h, const char *label);
int head_add_tensor(model_head *h, const char *name);
/* Room for n floats of parameters in h->mem (zeroed; once). */
int head_alloc(model_head *h, size_t n);
/* Fills info's pointers from the rest (after the last add). */
void head_finish(model_head *h);

/* Packs every Linear of the head into chunks, when the CPU can run the
 * packed GEMM; a mapped decoder's pages then go back (model_release).  In
 * int8 (model.dtype) it only drops any earlier packing: the Linears are
 * quantised by the first head_run that needs them (head_ready), so a model
 * whose requests never ask for its head never holds the quantised decoder
 * (BERT-base's: 22 MiB). */
void head_pack(enc_model *m);

/* Whether the head's Linears are packed (or, failing memory for that, run
 * from their float32 weights) for head_run: always after head_pack but in
 * int8, there after the first head_run that computes the head. */
bool head_ready(const model_head *h);

/* Checks what a job asks of the head: ENC_EINVAL naming what the model has
 * when it asks for a head it lacks, SPLADE of a head that is not a masked
 * LM, chosen rows of a sequence head or rows that are not the batch's real
 * tokens in ascending order, or no logits buffer. */
int head_check(const enc_model *m, const enc_batch *in, const enc_result *res, enc_error *err);

struct enc_workspace;
/* The head over the packed batch (ws->x, ws->seqs) for every live job that
 * asks for it, into its res->logits.  Returns how many jobs failed (out of
 * memory for the head's buffers, non-finite logits). */
int head_run(const enc_model *m, struct enc_workspace *ws, enc_job *jobs, int n);

#endif
