/* tokenizer_def.h - a loaded tokenizer's parts, for load.c, which reads
 * them from tokenizer.json, tokenizer.c (the vocabulary), encode.c, which
 * runs the pipeline with them, and decode.c.  Not for outside
 * core/tokenizer/. */
#ifndef ATTND_TOK_TOKENIZER_DEF_H
#define ATTND_TOK_TOKENIZER_DEF_H

#include "tokenizer/decode.h"
#include "tokenizer/models.h"
#include "tokenizer/normalize.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- added tokens ------------------------------------------------------- */

typedef struct added_token {
    char *content; /* as written in the file */
    char *pattern; /* what is matched: content, or content normalized */
    int32_t id;
    bool single_word, lstrip, rstrip, normalized, special;
} added_token;

/* A byte trie over the added tokens' patterns, matched leftmost-longest (the
 * daachorse automaton tokenizers builds, MatchKind::LeftmostLongest). */
typedef struct trie_node {
    int32_t first_child, next_sibling; /* node indices, -1 none */
    int32_t token;                     /* index into added[], -1 none */
    unsigned char byte;
} trie_node;

typedef struct trie {
    trie_node *v;
    size_t n, cap;
} trie;

/* ---- post-processors ---------------------------------------------------- */

typedef enum post_kind {
    POST_BERT,
    POST_ROBERTA,
    POST_BYTE_LEVEL,
    POST_TEMPLATE,
    POST_SEQUENCE
} post_kind;

typedef struct tmpl_piece {
    bool special; /* a special token, or a sequence */
    int seq;      /* the sequence: 0 (A) or 1 (B) */
    uint32_t type_id;
    int32_t *ids; /* (n_ids) the special token's ids */
    size_t n_ids;
} tmpl_piece;

typedef struct post {
    post_kind kind;
    int32_t cls, sep;                    /* Bert, Roberta */
    bool trim_offsets, add_prefix_space; /* Roberta, ByteLevel */
    tmpl_piece *single, *pair;           /* Template */
    size_t n_single, n_pair;
    struct post *procs; /* Sequence */
    size_t n_procs;
} post;

/* ---- the tokenizer --------------------------------------------------------- */

typedef enum display_kind {
    DISPLAY_PLAIN,
    DISPLAY_WORDPIECE,
    DISPLAY_BYTE_LEVEL,
    DISPLAY_METASPACE
} display_kind;

struct tok_tokenizer {
    tok_normalizer *norm; /* NULL: none */
    tok_pretok *pre;      /* NULL: none */
    tok_model *model;
    post *post; /* NULL: none */
    added_token *added;
    size_t n_added;
    int32_t *added_by_id; /* (n_added_ids) index into added[] by id, -1 none */
    size_t n_added_ids;
    trie raw, normalized;            /* the non-normalized and the normalized patterns */
    size_t added_single, added_pair; /* specials the post-processor adds */
    bool trims; /* the post-processor trims offsets (ByteLevel's trim_offsets) */
    display_kind display;
    char *display_prefix; /* WordPiece's continuation prefix; Metaspace's replacement */
    tok_decoder *decoder;     /* NULL: none (or decoder_error) */
    enc_error decoder_error;  /* status not 0: the file's decoder cannot run, tok_decode's error */
    const char **specials;    /* (n_specials) the special added tokens' contents, sorted (strcmp) */
    size_t n_specials;
    int32_t role[TOK_ROLES]; /* the roles' ids, -1 none (roles.c) */
    bool clean_up;           /* transformers' decode cleans up spaces */
    size_t model_max_length; /* tokenizer_config.json's, 0: none (roles.c) */
};

/* The roles tokenizer.json alone gives (roles.c): the model's unk_token or
 * unk_id, padding's pad_id, and special tokens spelled [UNK] / <unk>,
 * [PAD] / <pad>, [MASK] / <mask>; no clean-up. */
void tok_roles_default(tok_tokenizer *t, const json_t *root);

/* Replaces t's post-processor by a TemplateProcessing of [bos] $A:0 [eos]
 * for one text, then [bos:1] $B:1 [eos:1] for a pair's second, each
 * special where its add_ is set (load.c; transformers' LlamaTokenizerFast
 * and GemmaTokenizerFast build this from add_bos_token / add_eos_token,
 * roles.c).  0, or ENC_ENOMEM with err set (t unchanged). */
int tok_set_bos_eos(tok_tokenizer *t, int32_t bos, bool add_bos, int32_t eos, bool add_eos,
                    enc_error *err);

/* The added token already parsed with that content, or NULL (tokenizer.c). */
const added_token *tok_added_named(const tok_tokenizer *t, const char *content);

#endif
