/* hfhead.h - a Hugging Face directory's task head as its config.json names
 * it (hfhead.c): which transformers class architectures gives, the head's
 * labels and scoring, and the tensors it reads, for checkpoint.c to bind.
 * Private to core/. */
#ifndef ATTND_LOAD_HFHEAD_H
#define ATTND_LOAD_HFHEAD_H

#include "encoder.h"
#include "model/head.h"

#include <stdbool.h>

/* The names of a head's tensors (after the file's root; a task
 * checkpoint's base prefix is in them where the class puts it there). */
typedef struct hf_head_names {
    char dense[128]; /* the dense's prefix ("bert.pooler.dense."): weight, bias; "" none */
    bool dense_bias;
    int dense_out;  /* the dense's width: d_model */
    char norm[128]; /* the LayerNorm's prefix after act, "" none */
    bool norm_bias;
    char out_w[128];  /* the last Linear's weight */
    char out_b[128];  /* its bias, "" none */
    char out_b2[128]; /* the bias's other name (a decoder's own, saved beside the head's), or "" */
    bool tied;        /* a masked LM's decoder is the word table (tie_word_embeddings);
                         out_w, when saved too, is checked and listed but not read; a
                         causal LM's lm_head is, when out_w is not saved */
} hf_head_names;

/* What dir/config.json's architectures[0] names (klass, 80 bytes): a head
 * (*h, owned, with its labels, problem_type, function and pooling, kind set,
 * no parameters, and its tensors' names in *names); none (*h NULL) for a
 * base model or no architectures; or a head attnd does not compute (*h
 * NULL, *unsupported true).  A causal LM (...ForCausalLM) is a sequence
 * head of one output when hp's score ids or the directory's LogitScore
 * module name its tokens (h's info.n_score_ids set).  prefix: the task
 * checkpoint's base prefix ("bert."), c what enc_hf_config_read gave, hp
 * the model's.  0, or an error naming the field. */
int hf_head_read(const char *dir, const enc_hf_config *c, const enc_hparams *hp, const char *prefix,
                 model_head **h, hf_head_names *names, char *klass, bool *unsupported,
                 enc_error *err);

#endif
