/* tokenizer.c - tokenizer.json loaded, and the pipeline that encodes a text
 * or a pair: added tokens, normalizer, pre-tokenizer, model, truncation,
 * post-processor, offsets in characters.  Written after huggingface/
 * tokenizers' tokenizer/mod.rs (encode_single_sequence, post_process),
 * tokenizer/added_vocabulary.rs (extract_and_normalize, find_matches) and
 * processors/ (bert.rs, roberta.rs, template.rs, sequence.rs, and
 * pre_tokenizers/byte_level.rs's process_offsets).
 *
 * The pipeline is Hugging Face tokenizers' (tokenizer/mod.rs encode_single_sequence):
 *
 *     text --added tokens (non-normalized) split--> pieces
 *          --normalizer, each piece--> --added tokens (normalized) split-->
 *          --pre-tokenizer, each piece without a token--> words
 *          --model, each word--> tokens --post-processor--> encoding */
#include "tokenizer/tokenizer.h"
#include "chars.h"
#include "json.h"
#include "models.h"
#include "normalize.h"
#include "pretokenize.h"
#include "utf8.h"

#include "base/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int trie_add_node(trie *t, unsigned char byte)
{
    if (t->n == t->cap) {
        size_t c = t->cap ? 2 * t->cap : 64;
        trie_node *v = realloc(t->v, c * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = c;
    }
    t->v[t->n] = (trie_node){.first_child = -1, .next_sibling = -1, .token = -1, .byte = byte};
    return (int)t->n++;
}

static int trie_insert(trie *t, const char *s, int32_t token)
{
    if (t->n == 0 && trie_add_node(t, 0) < 0)
        return ENC_ENOMEM;
    int32_t node = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int32_t c = t->v[node].first_child;
        while (c >= 0 && t->v[c].byte != *p)
            c = t->v[c].next_sibling;
        if (c < 0) {
            if ((c = trie_add_node(t, *p)) < 0)
                return ENC_ENOMEM;
            t->v[c].next_sibling = t->v[node].first_child;
            t->v[node].first_child = c;
        }
        node = c;
    }
    if (t->v[node].token < 0) /* the first of equal patterns wins */
        t->v[node].token = token;
    return 0;
}

/* The longest pattern starting at s[i]: its end, and its token (-1: none). */
static size_t trie_longest(const trie *t, const char *s, size_t len, size_t i, int32_t *token)
{
    *token = -1;
    size_t end = i;
    if (t->n == 0)
        return end;
    int32_t node = 0;
    for (size_t k = i; k < len; k++) {
        int32_t c = t->v[node].first_child;
        while (c >= 0 && t->v[c].byte != (unsigned char)s[k])
            c = t->v[c].next_sibling;
        if (c < 0)
            break;
        node = c;
        if (t->v[node].token >= 0) {
            *token = t->v[node].token;
            end = k + 1;
        }
    }
    return end;
}

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

static void post_clear(post *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_single; i++)
        free(p->single[i].ids);
    for (size_t i = 0; i < p->n_pair; i++)
        free(p->pair[i].ids);
    free(p->single);
    free(p->pair);
    for (size_t i = 0; i < p->n_procs; i++)
        post_clear(&p->procs[i]);
    free(p->procs);
}

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
};

void tok_free(tok_tokenizer *t)
{
    if (!t)
        return;
    tok_normalizer_free(t->norm);
    tok_pretok_free(t->pre);
    tok_model_free(t->model);
    post_clear(t->post);
    free(t->post);
    for (size_t i = 0; i < t->n_added; i++) {
        free(t->added[i].content);
        free(t->added[i].pattern);
    }
    free(t->added);
    free(t->added_by_id);
    free(t->raw.v);
    free(t->normalized.v);
    free(t->display_prefix);
    free(t);
}

size_t tok_id_count(const tok_tokenizer *t)
{
    size_t n = tok_model_vocab_size(t->model);
    return t->n_added_ids > n ? t->n_added_ids : n;
}

const char *tok_token_text(const tok_tokenizer *t, int32_t id)
{
    if (id >= 0 && (size_t)id < t->n_added_ids && t->added_by_id[id] >= 0)
        return t->added[t->added_by_id[id]].content;
    return tok_model_id_to_token(t->model, id);
}

/* The added token already parsed with that content, or NULL. */
static const added_token *added_named(const tok_tokenizer *t, const char *content)
{
    for (size_t i = 0; i < t->n_added; i++)
        if (strcmp(t->added[i].content, content) == 0)
            return &t->added[i];
    return NULL;
}

int32_t tok_token_id(const tok_tokenizer *t, const char *token)
{
    const added_token *a = added_named(t, token);
    return a ? a->id : tok_model_token_to_id(t->model, token, strlen(token));
}

size_t tok_added_special(const tok_tokenizer *t, bool pair)
{
    return pair ? t->added_pair : t->added_single;
}

/* ---- loading ----------------------------------------------------------------- */

/* The id of a special token a post-processor names ([token, id] pairs). */
static int parse_token_pair(const json_t *j, const char *path, int32_t *id, enc_error *err)
{
    if (!json_is_array(j) || json_array_size(j) != 2 || !json_is_string(json_array_get(j, 0)) ||
        !json_is_integer(json_array_get(j, 1)) || json_integer_value(json_array_get(j, 1)) < 0 ||
        json_integer_value(json_array_get(j, 1)) > INT32_MAX)
        return enc_error_set(err, ENC_EFORMAT, "%s must be [token, id]", path);
    *id = (int32_t)json_integer_value(json_array_get(j, 1));
    return 0;
}

static int parse_template(const json_t *j, const json_t *specials, const char *path,
                          tmpl_piece **out, size_t *n_out, enc_error *err)
{
    if (!json_is_array(j))
        return enc_error_set(err, ENC_EFORMAT, "%s must be a list of pieces", path);
    size_t n = json_array_size(j);
    tmpl_piece *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return enc_error_set(err, ENC_ENOMEM, "out of memory for %s", path);
    *out = v;
    *n_out = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(j, i);
        const json_t *seq = json_object_get(p, "Sequence");
        const json_t *sp = json_object_get(p, "SpecialToken");
        const json_t *body = seq ? seq : sp;
        const json_t *id = json_object_get(body, "id");
        const json_t *type_id = json_object_get(body, "type_id");
        if (!json_is_object(p) || json_object_size(p) != 1 || !body || !json_is_string(id) ||
            !json_is_integer(type_id) || json_integer_value(type_id) < 0 ||
            json_integer_value(type_id) > 255)
            return enc_error_set(err, ENC_EFORMAT,
                                 "%s[%zu] must be {\"Sequence\" or \"SpecialToken\": {\"id\", "
                                 "\"type_id\"}}",
                                 path, i);
        v[i].type_id = (uint32_t)json_integer_value(type_id);
        const char *name = json_string_value(id);
        if (seq) {
            if (strcmp(name, "A") != 0 && strcmp(name, "B") != 0)
                return enc_error_set(err, ENC_EFORMAT, "%s[%zu].Sequence.id must be \"A\" or \"B\"",
                                     path, i);
            v[i].seq = name[0] == 'B';
            continue;
        }
        v[i].special = true;
        const json_t *st = json_object_get(specials, name);
        const json_t *ids = json_object_get(st, "ids");
        if (!json_is_array(ids))
            return enc_error_set(
                err, ENC_EFORMAT,
                "%s[%zu]: special token \"%s\" is not in special_tokens with its ids", path, i,
                name);
        v[i].n_ids = json_array_size(ids);
        if (!(v[i].ids = calloc(v[i].n_ids ? v[i].n_ids : 1, sizeof *v[i].ids)))
            return enc_error_set(err, ENC_ENOMEM, "out of memory for %s", path);
        for (size_t k = 0; k < v[i].n_ids; k++) {
            const json_t *x = json_array_get(ids, k);
            if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                json_integer_value(x) > INT32_MAX)
                return enc_error_set(err, ENC_EFORMAT,
                                     "post_processor.special_tokens.%s.ids[%zu] "
                                     "must be a token id",
                                     name, k);
            v[i].ids[k] = (int32_t)json_integer_value(x);
        }
    }
    return 0;
}

static int parse_post(const json_t *j, const char *path, post *p, enc_error *err)
{
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!json_is_object(j) || !type)
        return enc_error_set(err, ENC_EFORMAT, "%s must be an object with a \"type\"", path);
    char sub[128];
    if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0) {
        p->kind = type[0] == 'B' ? POST_BERT : POST_ROBERTA;
        snprintf(sub, sizeof sub, "%s.cls", path);
        if (parse_token_pair(json_object_get(j, "cls"), sub, &p->cls, err) < 0)
            return err->status;
        snprintf(sub, sizeof sub, "%s.sep", path);
        if (parse_token_pair(json_object_get(j, "sep"), sub, &p->sep, err) < 0)
            return err->status;
        if (p->kind == POST_ROBERTA &&
            (tok_json_bool(j, path, "trim_offsets", true, &p->trim_offsets, err) < 0 ||
             tok_json_bool(j, path, "add_prefix_space", true, &p->add_prefix_space, err) < 0))
            return err->status;
        return 0;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        p->kind = POST_BYTE_LEVEL;
        bool use_regex;
        if (tok_json_bool(j, path, "trim_offsets", true, &p->trim_offsets, err) < 0 ||
            tok_json_bool(j, path, "add_prefix_space", true, &p->add_prefix_space, err) < 0 ||
            tok_json_bool(j, path, "use_regex", true, &use_regex, err) < 0)
            return err->status;
        return 0;
    }
    if (strcmp(type, "TemplateProcessing") == 0) {
        p->kind = POST_TEMPLATE;
        const json_t *specials = json_object_get(j, "special_tokens");
        snprintf(sub, sizeof sub, "%s.single", path);
        if (parse_template(json_object_get(j, "single"), specials, sub, &p->single, &p->n_single,
                           err) < 0)
            return err->status;
        snprintf(sub, sizeof sub, "%s.pair", path);
        if (parse_template(json_object_get(j, "pair"), specials, sub, &p->pair, &p->n_pair, err) <
            0)
            return err->status;
        return 0;
    }
    if (strcmp(type, "Sequence") == 0) {
        p->kind = POST_SEQUENCE;
        const json_t *procs = json_object_get(j, "processors");
        if (!json_is_array(procs))
            return enc_error_set(err, ENC_EFORMAT, "%s.processors must be a list", path);
        p->n_procs = json_array_size(procs);
        if (!(p->procs = calloc(p->n_procs ? p->n_procs : 1, sizeof *p->procs)))
            return enc_error_set(err, ENC_ENOMEM, "out of memory for %s", path);
        for (size_t i = 0; i < p->n_procs; i++) {
            snprintf(sub, sizeof sub, "%s.processors[%zu]", path, i);
            if (parse_post(json_array_get(procs, i), sub, &p->procs[i], err) < 0)
                return err->status;
        }
        return 0;
    }
    return enc_error_set(err, ENC_EINVAL, "%s: type \"%s\" is not supported", path, type);
}

/* Whether p trims offsets by its tokens' spaces (ByteLevel's trim_offsets). */
static bool post_trims(const post *p)
{
    bool any = (p->kind == POST_ROBERTA || p->kind == POST_BYTE_LEVEL) && p->trim_offsets;
    for (size_t i = 0; p->kind == POST_SEQUENCE && i < p->n_procs; i++)
        any = any || post_trims(&p->procs[i]);
    return any;
}

/* How many specials p adds to one text, or to a pair. */
static size_t post_added(const post *p, bool pair)
{
    switch (p->kind) {
    case POST_BERT:
    case POST_ROBERTA:
        return pair ? 4 - (p->kind == POST_BERT) : 2;
    case POST_BYTE_LEVEL:
        return 0;
    case POST_TEMPLATE: {
        size_t n = 0;
        const tmpl_piece *v = pair ? p->pair : p->single;
        for (size_t i = 0, m = pair ? p->n_pair : p->n_single; i < m; i++)
            n += v[i].special ? v[i].n_ids : 0;
        return n;
    }
    case POST_SEQUENCE: {
        size_t n = 0;
        for (size_t i = 0; i < p->n_procs; i++)
            n += post_added(&p->procs[i], pair);
        return n;
    }
    }
    return 0;
}


/* Gives added token x the id Hugging Face gives it, whatever the file says:
 * tokenizers' deserializer adds the tokens in file order
 * (AddedVocabulary::add_tokens), each taking the vocabulary's id when the
 * vocabulary has its content, else the vocabulary's size (its tokens'
 * count) for the first one not in it, or one more than the largest id given
 * so far when that is already at or past the size.  A file that
 * save_pretrained wrote says those ids; one written otherwise may not, and
 * Hugging Face then runs its own.  Refused: an id that lands on another
 * token's (Hugging Face would give two tokens one id). */
static int hf_added_id(tok_tokenizer *t, added_token *x, int64_t *max_id, const char *path,
                       enc_error *err)
{
    const int64_t size = (int64_t)tok_model_vocab_count(t->model);
    int64_t id = tok_model_token_to_id(t->model, x->content, strlen(x->content));
    if (id < 0)
        id = *max_id < 0 ? size : *max_id >= size || size == 0 ? *max_id + 1 : size;
    if (id > INT32_MAX)
        return enc_error_set(err, ENC_EINVAL, "%s: id %lld is out of range", path, (long long)id);
    const char *other = tok_model_id_to_token(t->model, (int32_t)id);
    for (size_t i = 0; !other && i < t->n_added; i++)
        if (t->added[i].id == id)
            other = t->added[i].content;
    if (other && strcmp(other, x->content) != 0)
        return enc_error_set(err, ENC_EINVAL,
                             "%s: Hugging Face's tokenizers numbers \"%s\" %lld (the file says "
                             "%d), the id of \"%s\": the file's added tokens and vocabulary "
                             "disagree",
                             path, x->content, (long long)id, (int)x->id, other);
    x->id = (int32_t)id;
    if (id > *max_id)
        *max_id = id;
    return 0;
}

static int parse_added(tok_tokenizer *t, const json_t *list, enc_error *err)
{
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_array(list))
        return enc_error_set(err, ENC_EFORMAT, "added_tokens must be a list");
    size_t n = json_array_size(list);
    int64_t max_id = -1; /* the largest id given to an added token so far */
    if (!(t->added = calloc(n ? n : 1, sizeof *t->added)))
        return enc_error_set(err, ENC_ENOMEM, "out of memory for added_tokens");
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(list, i);
        char path[64];
        snprintf(path, sizeof path, "added_tokens[%zu]", i);
        added_token *x = &t->added[t->n_added];
        const json_t *id = json_object_get(a, "id");
        const json_t *content = json_object_get(a, "content");
        if (!json_is_object(a) || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) > INT32_MAX || !json_is_string(content) ||
            json_string_length(content) == 0)
            return enc_error_set(err, ENC_EFORMAT, "%s must have an id and a non-empty content",
                                 path);
        x->id = (int32_t)json_integer_value(id);
        bool special;
        if (tok_json_bool(a, path, "special", false, &special, err) < 0 ||
            tok_json_bool(a, path, "single_word", false, &x->single_word, err) < 0 ||
            tok_json_bool(a, path, "lstrip", false, &x->lstrip, err) < 0 ||
            tok_json_bool(a, path, "rstrip", false, &x->rstrip, err) < 0 ||
            tok_json_bool(a, path, "normalized", !special, &x->normalized, err) < 0)
            return err->status;
        x->special = special;
        if (strlen(json_string_value(content)) != json_string_length(content))
            return enc_error_set(err, ENC_EINVAL, "%s.content holds a NUL character", path);
        const added_token *same = added_named(t, json_string_value(content));
        if (same && (same->single_word != x->single_word || same->lstrip != x->lstrip ||
                     same->rstrip != x->rstrip || same->normalized != x->normalized ||
                     same->special != x->special))
            return enc_error_set(err, ENC_EINVAL,
                                 "%s repeats \"%s\" with other options: not supported", path,
                                 json_string_value(content));
        if (same)
            continue; /* the same token twice: tokenizers ignores the second */
        if (!(x->content = strdup(json_string_value(content))))
            return enc_error_set(err, ENC_ENOMEM, "out of memory for added_tokens");
        if (hf_added_id(t, x, &max_id, path, err) < 0) {
            free(x->content);
            x->content = NULL;
            return err->status;
        }
        t->n_added++;
        if ((size_t)x->id + 1 > t->n_added_ids)
            t->n_added_ids = (size_t)x->id + 1;
    }
    if (t->n_added_ids > (size_t)1 << 24)
        return enc_error_set(err, ENC_EINVAL,
                             "added_tokens: an id above 16777215 is not supported");
    if (!(t->added_by_id = malloc((t->n_added_ids ? t->n_added_ids : 1) * sizeof *t->added_by_id)))
        return enc_error_set(err, ENC_ENOMEM, "out of memory for added_tokens");
    for (size_t i = 0; i < t->n_added_ids; i++)
        t->added_by_id[i] = -1;
    for (size_t i = 0; i < t->n_added; i++)
        t->added_by_id[t->added[i].id] = (int32_t)i;
    return 0;
}

/* The patterns: a normalized token is matched in its normalized form
 * (AddedVocabulary's normalized_cache). */
static int build_tries(tok_tokenizer *t, enc_error *err)
{
    tok_str s = {0};
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0; i < t->n_added && rc == 0; i++) {
        added_token *x = &t->added[i];
        if (x->normalized && t->norm) {
            const size_t len = strlen(x->content);
            long n;
            if ((rc = tok_str_from_utf8(&s, x->content, len, 0)) < 0 ||
                (rc = tok_normalize(t->norm, &s)) < 0 ||
                (n = tok_str_utf8(&s, 0, s.n, &buf, &cap)) < 0) {
                rc = rc < 0 ? rc : ENC_ENOMEM;
                break;
            }
            x->pattern = strdup(buf);
        } else {
            x->pattern = strdup(x->content);
        }
        if (!x->pattern) {
            rc = ENC_ENOMEM;
            break;
        }
        if (x->pattern[0])
            rc = trie_insert(x->normalized ? &t->normalized : &t->raw, x->pattern, (int32_t)i);
    }
    tok_str_free(&s);
    free(buf);
    if (rc < 0)
        return enc_error_set(err, rc, "out of memory for the added tokens' patterns");
    return 0;
}

/* How tokens are shown readably, from the decoder the file names. */
static int parse_display(tok_tokenizer *t, const json_t *dec)
{
    const char *type = json_string_value(json_object_get(dec, "type"));
    if (!type)
        return 0;
    if (strcmp(type, "Sequence") == 0) {
        const json_t *v = json_object_get(dec, "decoders");
        for (size_t i = 0; i < json_array_size(v); i++)
            if (parse_display(t, json_array_get(v, i)) < 0)
                return -1;
        return 0;
    }
    const char *prefix = NULL;
    if (strcmp(type, "ByteLevel") == 0) {
        t->display = DISPLAY_BYTE_LEVEL;
    } else if (strcmp(type, "WordPiece") == 0) {
        t->display = DISPLAY_WORDPIECE;
        prefix = json_string_value(json_object_get(dec, "prefix"));
        prefix = prefix ? prefix : "##";
    } else if (strcmp(type, "Metaspace") == 0) {
        t->display = DISPLAY_METASPACE;
        prefix = json_string_value(json_object_get(dec, "replacement"));
        prefix = prefix ? prefix : "\xe2\x96\x81";
    } else if (strcmp(type, "Replace") == 0 && t->display == DISPLAY_PLAIN) {
        /* sentencepiece BPE: Replace("▁", " ") */
        const char *from =
            json_string_value(json_object_get(json_object_get(dec, "pattern"), "String"));
        if (from && strcmp(from, "\xe2\x96\x81") == 0) {
            t->display = DISPLAY_METASPACE;
            prefix = from;
        }
    }
    if (prefix) {
        free(t->display_prefix);
        if (!(t->display_prefix = strdup(prefix)))
            return -1;
    }
    return 0;
}

tok_tokenizer *tok_load_json(const char *text, size_t len, enc_error *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        enc_error_set(err, ENC_EFORMAT, "tokenizer.json: %s at line %d column %d", jerr.text,
                      jerr.line, jerr.column);
        return NULL;
    }
    tok_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        json_decref(root);
        enc_error_set(err, ENC_ENOMEM, "out of memory for the tokenizer");
        return NULL;
    }
    const json_t *j;
    if (!json_is_object(root)) {
        enc_error_set(err, ENC_EFORMAT, "tokenizer.json must hold an object");
        goto fail;
    }
    if (!json_is_object(json_object_get(root, "model"))) {
        enc_error_set(err, ENC_EFORMAT, "tokenizer.json has no model");
        goto fail;
    }
    if (!(t->model = tok_model_new(json_object_get(root, "model"), "model", err)))
        goto fail;
    if ((j = json_object_get(root, "normalizer")) && !json_is_null(j) &&
        !(t->norm = tok_normalizer_new(j, "normalizer", err)))
        goto fail;
    if ((j = json_object_get(root, "pre_tokenizer")) && !json_is_null(j) &&
        !(t->pre = tok_pretok_new(j, "pre_tokenizer", err)))
        goto fail;
    if ((j = json_object_get(root, "post_processor")) && !json_is_null(j)) {
        if (!(t->post = calloc(1, sizeof *t->post))) {
            enc_error_set(err, ENC_ENOMEM, "out of memory for the post-processor");
            goto fail;
        }
        if (parse_post(j, "post_processor", t->post, err) < 0)
            goto fail;
        t->added_single = post_added(t->post, false);
        t->added_pair = post_added(t->post, true);
        t->trims = post_trims(t->post);
    }
    if (parse_added(t, json_object_get(root, "added_tokens"), err) < 0 || build_tries(t, err) < 0)
        goto fail;
    if (parse_display(t, json_object_get(root, "decoder")) < 0) {
        enc_error_set(err, ENC_ENOMEM, "out of memory for the tokenizer");
        goto fail;
    }
    json_decref(root);
    return t;
fail:
    json_decref(root);
    tok_free(t);
    return NULL;
}

tok_tokenizer *tok_load(const char *path, enc_error *err)
{
    size_t len;
    char *text = file_read_whole(path, &len, err);
    if (!text)
        return NULL;
    tok_tokenizer *t = tok_load_json(text, len, err);
    free(text);
    return t;
}

/* ---- encoding ------------------------------------------------------------------ */

/* One sequence on its way: tokens with their original spans (bytes until
 * converted to characters), and the leading / trailing spaces of each
 * token's value (ByteLevel's trim_offsets reads them). */
typedef struct seq_enc {
    tok_toks toks;
    uint8_t *special;
    uint8_t *type_id;
    uint8_t *seq;
    uint16_t *lead, *trail;
    size_t cap;
} seq_enc;

static void seq_free(seq_enc *e)
{
    free(e->toks.v);
    free(e->special);
    free(e->type_id);
    free(e->seq);
    free(e->lead);
    free(e->trail);
    memset(e, 0, sizeof *e);
}

static int seq_grow(seq_enc *e, size_t n)
{
    if (n <= e->cap)
        return 0;
    size_t c = e->cap ? e->cap : 16;
    while (c < n)
        c *= 2;
#define GROW(f)                                                                                    \
    do {                                                                                           \
        void *p = realloc(e->f, c * sizeof *e->f);                                                 \
        if (!p)                                                                                    \
            return ENC_ENOMEM;                                                                     \
        e->f = p;                                                                                  \
    } while (0)
    GROW(special);
    GROW(type_id);
    GROW(seq);
    GROW(lead);
    GROW(trail);
#undef GROW
    e->cap = c;
    return 0;
}

/* ByteLevel's trim_offsets counts, at each end of a token's value, the
 * chars that are spaces or its "Ġ" (U+0120). */
static bool trim_space(uint32_t c)
{
    return c == 0x120 || tok_char_is_whitespace(c);
}

static uint16_t clamp16(size_t n)
{
    return (uint16_t)(n > 65535 ? 65535 : n);
}

/* Those counts of a value given as code points. */
static void count_spaces_cp(const uint32_t *cp, size_t n, uint16_t *lead, uint16_t *trail)
{
    size_t a = 0, b = n;
    while (a < n && trim_space(cp[a]))
        a++;
    while (b > 0 && trim_space(cp[b - 1]))
        b--;
    *lead = clamp16(a);
    *trail = clamp16(n - b);
}

/* The same of a value given as UTF-8 (a vocabulary token), in one pass. */
static void count_spaces(const char *v, uint16_t *lead, uint16_t *trail)
{
    const unsigned char *p = (const unsigned char *)v;
    size_t a = 0, run = 0;
    bool leading = true;
    while (*p) {
        size_t l;
        const bool sp = trim_space(tok_utf8_get(p, &l));
        p += l;
        if (leading && sp)
            a++;
        else
            leading = false;
        run = sp ? run + 1 : 0;
    }
    *lead = clamp16(a);
    *trail = clamp16(run);
}

/* find_matches over piece s (whose UTF-8 is u, with at[k] the code point
 * index of byte k at a char start): the splits into out, added tokens done. */
static int split_added(const tok_tokenizer *t, const trie *tr, tok_str *s, const char *u,
                       size_t ulen, const size_t *at, tok_pieces *out)
{
    size_t start_offset = 0; /* code points */
    tok_str part = {0};
    int rc = 0;
    for (size_t i = 0; i < ulen;) {
        int32_t token;
        size_t end = trie_longest(tr, u, ulen, i, &token);
        if (token < 0) {
            i++;
            continue;
        }
        const added_token *x = &t->added[token];
        size_t a = at[i], b = at[end]; /* code points */
        const size_t next = end;
        if (x->single_word) {
            bool start_space = a == 0 || !tok_char_is_word(s->cp[a - 1]);
            bool stop_space = b == s->n || !tok_char_is_word(s->cp[b]);
            if (!start_space || !stop_space) {
                i = next;
                continue;
            }
        }
        if (x->lstrip) {
            size_t na = a;
            while (na > 0 && tok_char_is_whitespace(s->cp[na - 1]))
                na--;
            a = na > start_offset ? na : start_offset;
        }
        if (x->rstrip)
            while (b < s->n && tok_char_is_whitespace(s->cp[b]))
                b++;
        if (start_offset < a) {
            if ((rc = tok_str_slice(s, start_offset, a, &part)) < 0 ||
                (rc = tok_pieces_take(out, &part, false, (tok_tok){0})) < 0)
                goto done;
        }
        if ((rc = tok_str_slice(s, a, b, &part)) < 0)
            goto done;
        tok_tok tk = {
            .id = x->id, .os = part.n ? part.os[0] : 0, .oe = part.n ? part.oe[part.n - 1] : 0};
        if ((rc = tok_pieces_take(out, &part, true, tk)) < 0)
            goto done;
        start_offset = b;
        i = next;
    }
    if (start_offset < s->n) {
        if ((rc = tok_str_slice(s, start_offset, s->n, &part)) < 0 ||
            (rc = tok_pieces_take(out, &part, false, (tok_tok){0})) < 0)
            goto done;
    }
done:
    tok_str_free(&part);
    return rc;
}

/* Runs find_matches of trie tr over every piece not done. normalize: first
 * normalize the piece. */
static int split_pass(const tok_tokenizer *t, const trie *tr, bool normalize, tok_pieces *p)
{
    tok_pieces out = {0};
    char *u = NULL;
    size_t ucap = 0, *at = NULL, atcap = 0;
    int rc = 0;
    for (size_t k = 0; k < p->n; k++) {
        tok_piece *pc = &p->v[k];
        if (pc->done) {
            if ((rc = tok_pieces_take(&out, &pc->s, true, pc->token)) < 0)
                goto done;
            continue;
        }
        if (normalize && t->norm && (rc = tok_normalize(t->norm, &pc->s)) < 0)
            goto done;
        if (pc->s.n == 0)
            continue; /* PreTokenizedString::split drops empty splits */
        if (tr->n == 0) {
            if ((rc = tok_pieces_take(&out, &pc->s, false, (tok_tok){0})) < 0)
                goto done;
            continue;
        }
        long ulen = tok_str_utf8(&pc->s, 0, pc->s.n, &u, &ucap);
        if (ulen < 0) {
            rc = ENC_ENOMEM;
            goto done;
        }
        if ((size_t)ulen + 1 > atcap) {
            size_t *na = realloc(at, ((size_t)ulen + 1) * sizeof *at);
            if (!na) {
                rc = ENC_ENOMEM;
                goto done;
            }
            at = na;
            atcap = (size_t)ulen + 1;
        }
        for (size_t c = 0, b = 0; c < pc->s.n; c++) {
            char tmp[4];
            int l = tok_utf8_put(pc->s.cp[c], tmp);
            for (int q = 0; q < l; q++)
                at[b + (size_t)q] = c;
            b += (size_t)l;
        }
        at[ulen] = pc->s.n;
        if ((rc = split_added(t, tr, &pc->s, u, (size_t)ulen, at, &out)) < 0)
            goto done;
    }
done:
    free(u);
    free(at);
    if (rc < 0) {
        tok_pieces_free(&out);
        return rc;
    }
    tok_pieces_free(p);
    *p = out;
    return 0;
}

/* Byte offset -> character offset of a text. */
typedef struct char_index {
    uint32_t *of; /* (len + 1) */
} char_index;

static int char_index_make(char_index *ci, const char *text, size_t len)
{
    if (!(ci->of = malloc((len + 1) * sizeof *ci->of)))
        return ENC_ENOMEM;
    uint32_t c = 0; /* spans start and end at char boundaries: only those are read */
    for (size_t i = 0; i < len; i++)
        ci->of[i] = ((unsigned char)text[i] & 0xC0) != 0x80 ? c++ : c;
    ci->of[len] = c;
    return 0;
}

/* encode_single_sequence: one text's tokens, spans in characters. */
static int encode_one(const tok_tokenizer *t, const char *text, size_t len, uint8_t type_id,
                      uint8_t seqno, seq_enc *e)
{
    tok_pieces p = {0};
    tok_str s = {0};
    char_index ci = {0};
    int rc;
    e->toks.n = 0;
    if ((rc = tok_str_from_utf8(&s, text, len, 0)) < 0)
        goto done;
    if (s.n && (rc = tok_pieces_take(&p, &s, false, (tok_tok){0})) < 0)
        goto done;
    if ((rc = split_pass(t, &t->raw, false, &p)) < 0 ||
        (rc = split_pass(t, &t->normalized, true, &p)) < 0)
        goto done;
    if (t->pre && (rc = tok_pretokenize(t->pre, &p)) < 0)
        goto done;
    for (size_t k = 0; k < p.n; k++) {
        const size_t first = e->toks.n;
        if (p.v[k].done)
            rc = tok_toks_push(&e->toks, p.v[k].token.id, p.v[k].token.os, p.v[k].token.oe);
        else
            rc = tok_model_tokenize(t->model, &p.v[k].s, &e->toks);
        if (rc < 0 || (rc = seq_grow(e, e->toks.n)) < 0)
            goto done;
        for (size_t i = first; i < e->toks.n; i++) {
            const int32_t id = e->toks.v[i].id;
            e->special[i] = 0; /* special_tokens_mask: the post-processor's tokens only */
            e->type_id[i] = type_id;
            e->seq[i] = seqno;
            e->lead[i] = e->trail[i] = 0;
            if (!t->trims)
                continue;
            if (p.v[k].done) { /* the added token's value is what it matched, spaces and all */
                count_spaces_cp(p.v[k].s.cp, p.v[k].s.n, &e->lead[i], &e->trail[i]);
            } else {
                const char *v = tok_token_text(t, id);
                if (v)
                    count_spaces(v, &e->lead[i], &e->trail[i]);
            }
        }
    }
    if ((rc = char_index_make(&ci, text, len)) < 0)
        goto done;
    for (size_t i = 0; i < e->toks.n; i++) {
        e->toks.v[i].os = ci.of[e->toks.v[i].os];
        e->toks.v[i].oe = ci.of[e->toks.v[i].oe];
    }
done:
    free(ci.of);
    tok_str_free(&s);
    tok_pieces_free(&p);
    return rc;
}

/* process_offsets (ByteLevel's trim_offsets) on one sequence. */
static void trim_offsets(seq_enc *e, bool add_prefix_space)
{
    for (size_t i = 0; i < e->toks.n; i++) {
        tok_tok *tk = &e->toks.v[i];
        size_t lead = e->lead[i], trail = e->trail[i];
        if (lead > 0) {
            const bool is_first = i == 0 || tk->os == 0;
            if (is_first && add_prefix_space && lead == 1)
                lead = 0;
            tk->os = tk->os + lead < tk->oe ? tk->os + (uint32_t)lead : tk->oe;
        }
        if (trail > 0 && tk->oe >= trail)
            tk->oe = tk->oe - trail > tk->os ? tk->oe - (uint32_t)trail : tk->os;
    }
}

/* Appends src's tokens to dst. */
static int seq_append(seq_enc *dst, const seq_enc *src)
{
    if (seq_grow(dst, dst->toks.n + src->toks.n) < 0)
        return ENC_ENOMEM;
    for (size_t i = 0; i < src->toks.n; i++) {
        const size_t k = dst->toks.n;
        if (tok_toks_push(&dst->toks, src->toks.v[i].id, src->toks.v[i].os, src->toks.v[i].oe) < 0)
            return ENC_ENOMEM;
        dst->special[k] = src->special[i];
        dst->type_id[k] = src->type_id[i];
        dst->seq[k] = src->seq[i];
        dst->lead[k] = src->lead[i];
        dst->trail[k] = src->trail[i];
    }
    return 0;
}

/* Appends a post-processor's special token. */
static int seq_special(seq_enc *dst, int32_t id, uint8_t type_id)
{
    const size_t k = dst->toks.n;
    if (tok_toks_push(&dst->toks, id, 0, 0) < 0 || seq_grow(dst, k + 1) < 0)
        return ENC_ENOMEM;
    dst->special[k] = 1;
    dst->type_id[k] = type_id;
    dst->seq[k] = 255;
    dst->lead[k] = dst->trail[k] = 0;
    return 0;
}

static void seq_set_type(seq_enc *e, uint8_t type_id)
{
    for (size_t i = 0; i < e->toks.n; i++)
        e->type_id[i] = type_id;
}

/* process_encodings over encs[0..*n): may merge them into encs[0] (*n = 1). */
static int post_run(const post *p, seq_enc *encs, size_t *n, bool add_special)
{
    seq_enc out = {0};
    int rc = 0;
    switch (p->kind) {
    case POST_SEQUENCE:
        for (size_t i = 0; i < p->n_procs; i++)
            if ((rc = post_run(&p->procs[i], encs, n, add_special)) < 0)
                return rc;
        return 0;
    case POST_BYTE_LEVEL:
        if (p->trim_offsets)
            for (size_t i = 0; i < *n; i++)
                trim_offsets(&encs[i], p->add_prefix_space);
        return 0;
    case POST_ROBERTA:
        if (p->trim_offsets)
            for (size_t i = 0; i < *n; i++)
                trim_offsets(&encs[i], p->add_prefix_space);
        for (size_t i = 0; i < *n; i++)
            seq_set_type(&encs[i], 0);
        if (!add_special)
            return 0;
        for (size_t i = 0; i < *n && rc == 0; i++) {
            rc = seq_special(&out, i == 0 ? p->cls : p->sep, 0);
            if (rc == 0)
                rc = seq_append(&out, &encs[i]);
            if (rc == 0)
                rc = seq_special(&out, p->sep, 0);
        }
        break;
    case POST_BERT:
        if (!add_special)
            return 0;
        for (size_t i = 0; i < *n && rc == 0; i++) {
            if (i == 0)
                rc = seq_special(&out, p->cls, 0);
            if (rc == 0)
                rc = seq_append(&out, &encs[i]);
            if (rc == 0)
                rc = seq_special(&out, p->sep, (uint8_t)i);
        }
        break;
    case POST_TEMPLATE: {
        const tmpl_piece *v = *n == 2 ? p->pair : p->single;
        const size_t m = *n == 2 ? p->n_pair : p->n_single;
        for (size_t i = 0; i < m && rc == 0; i++) {
            if (v[i].special) {
                for (size_t k = 0; add_special && k < v[i].n_ids && rc == 0; k++)
                    rc = seq_special(&out, v[i].ids[k], (uint8_t)v[i].type_id);
            } else if ((size_t)v[i].seq < *n) {
                seq_set_type(&encs[v[i].seq], (uint8_t)v[i].type_id);
                rc = seq_append(&out, &encs[v[i].seq]);
            }
        }
        break;
    }
    }
    if (rc < 0) {
        seq_free(&out);
        return rc;
    }
    for (size_t i = 0; i < *n; i++)
        seq_free(&encs[i]);
    encs[0] = out;
    *n = 1;
    return 0;
}

/* truncate_encodings with LongestFirst, right, stride 0: the two lengths. */
static void truncate_lengths(size_t *na, size_t *nb, bool pair, size_t max)
{
    if (!pair) {
        if (*na > max)
            *na = max;
        return;
    }
    if (*na + *nb <= max)
        return;
    size_t n1 = *na, n2 = *nb;
    bool swap = false;
    if (n1 > n2) {
        swap = true;
        size_t x = n1;
        n1 = n2;
        n2 = x;
    }
    if (n1 > max)
        n2 = n1;
    else
        n2 = n1 > max - n1 ? n1 : max - n1;
    if (n1 + n2 > max) {
        n1 = max / 2;
        n2 = n1 + max % 2;
    }
    if (swap) {
        size_t x = n1;
        n1 = n2;
        n2 = x;
    }
    if (n1 < *na)
        *na = n1;
    if (n2 < *nb)
        *nb = n2;
}

static int grow_out(tok_encoding *o, size_t n)
{
    if (n <= o->cap)
        return 0;
    size_t c = o->cap ? o->cap : 64;
    while (c < n)
        c *= 2;
#define GROW(f)                                                                                    \
    do {                                                                                           \
        void *p = realloc(o->f, c * sizeof *o->f);                                                 \
        if (!p)                                                                                    \
            return ENC_ENOMEM;                                                                     \
        o->f = p;                                                                                  \
    } while (0)
    GROW(ids);
    GROW(type_ids);
    GROW(special);
    GROW(seq);
    GROW(start);
    GROW(stop);
#undef GROW
    o->cap = c;
    return 0;
}

int tok_encode(const tok_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
               bool add_special, size_t max_tokens, tok_encoding *out, size_t *untruncated,
               enc_error *err)
{
    const bool pair = b != NULL;
    long bad = tok_utf8_invalid_at(a, alen);
    if (bad >= 0)
        return enc_error_set(err, ENC_EINVAL, "%s is not valid UTF-8 at byte %ld",
                             pair ? "the first text" : "the text", bad);
    if (pair && (bad = tok_utf8_invalid_at(b, blen)) >= 0)
        return enc_error_set(err, ENC_EINVAL, "the second text is not valid UTF-8 at byte %ld",
                             bad);
    if (alen > UINT32_MAX - 1 || blen > UINT32_MAX - 1)
        return enc_error_set(err, ENC_ELIMIT, "a text over 4 GiB");
    seq_enc encs[2];
    memset(encs, 0, sizeof encs);
    size_t n = pair ? 2 : 1;
    int rc = encode_one(t, a, alen, 0, 0, &encs[0]);
    if (rc == 0 && pair)
        rc = encode_one(t, b, blen, 1, 1, &encs[1]);
    if (rc < 0)
        goto done;
    const size_t added = add_special ? tok_added_special(t, pair) : 0;
    size_t na = encs[0].toks.n, nb = pair ? encs[1].toks.n : 0;
    if (untruncated)
        *untruncated = na + nb + added;
    if (max_tokens > 0 && na + nb + added > max_tokens) {
        if (max_tokens < added) {
            rc = enc_error_set(err, ENC_ELIMIT,
                               "a limit of %zu tokens leaves no room beside the %zu special tokens",
                               max_tokens, added);
            goto done;
        }
        truncate_lengths(&na, &nb, pair, max_tokens - added);
        encs[0].toks.n = na;
        if (pair)
            encs[1].toks.n = nb;
    }
    if (t->post) {
        rc = post_run(t->post, encs, &n, add_special);
    } else if (pair) {
        seq_enc m = {0};
        if ((rc = seq_append(&m, &encs[0])) == 0 && (rc = seq_append(&m, &encs[1])) == 0) {
            seq_free(&encs[0]);
            seq_free(&encs[1]);
            encs[0] = m;
            n = 1;
        } else {
            seq_free(&m);
        }
    }
    if (rc < 0)
        goto done;
    /* post_run merges; a post-processor that only trims leaves a pair apart */
    if (n == 2) {
        if ((rc = seq_append(&encs[0], &encs[1])) < 0)
            goto done;
        seq_free(&encs[1]);
        n = 1;
    }
    const seq_enc *e = &encs[0];
    if ((rc = grow_out(out, e->toks.n)) < 0)
        goto done;
    for (size_t i = 0; i < e->toks.n; i++) {
        out->ids[i] = e->toks.v[i].id;
        out->type_ids[i] = e->type_id[i];
        out->special[i] = e->special[i];
        out->seq[i] = e->seq[i];
        out->start[i] = e->toks.v[i].os;
        out->stop[i] = e->toks.v[i].oe;
    }
    out->n = e->toks.n;
done:
    seq_free(&encs[0]);
    seq_free(&encs[1]);
    if (rc < 0 && err && err->status == ENC_OK)
        enc_error_set(
            err, rc, "%s",
            rc == ENC_EINVAL   ? "the text needs the model's unknown token, and the tokenizer has "
                                 "none (its unk_token is not in the vocabulary)"
            : rc == ENC_ELIMIT ? "a pattern of the tokenizer ran past the regular expression "
                                 "engine's limits on this text"
                               : "out of memory tokenizing");
    return rc;
}

void tok_encoding_free(tok_encoding *e)
{
    if (!e)
        return;
    free(e->ids);
    free(e->type_ids);
    free(e->special);
    free(e->seq);
    free(e->start);
    free(e->stop);
    memset(e, 0, sizeof *e);
}

/* ---- display ------------------------------------------------------------------- */

/* GPT-2's bytes_to_unicode, inverted: the byte a byte-level char stands for, or -1. */
static int byte_of_char(uint32_t c)
{
    if ((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF))
        return (int)c;
    if (c < 256 || c > 256 + 67)
        return -1;
    /* the others, in order, map to 256, 257, ... */
    int k = 0;
    for (int b = 0; b < 256; b++) {
        if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))
            continue;
        if ((uint32_t)(256 + k) == c)
            return b;
        k++;
    }
    return -1;
}

size_t tok_token_display(const tok_tokenizer *t, int32_t id, char *out, size_t cap)
{
    const char *v = tok_token_text(t, id);
    if (!v)
        v = "";
    const bool added = id >= 0 && (size_t)id < t->n_added_ids && t->added_by_id[id] >= 0;
    char *tmp = NULL;
    size_t len = strlen(v);
    if (!added && t->display == DISPLAY_BYTE_LEVEL) {
        tok_str s = {0};
        if (tok_str_from_utf8(&s, v, len, 0) == 0 && (tmp = malloc(s.n + 1))) {
            size_t k = 0;
            bool all = true;
            for (size_t i = 0; i < s.n; i++) {
                int byte = byte_of_char(s.cp[i]);
                all = all && byte >= 0;
                tmp[k++] = (char)(byte >= 0 ? byte : '?');
            }
            tmp[k] = '\0';
            if (all && tok_utf8_invalid_at(tmp, k) < 0) {
                v = tmp;
                len = k;
            }
        }
        tok_str_free(&s);
    } else if (!added && t->display == DISPLAY_METASPACE && t->display_prefix) {
        const size_t pl = strlen(t->display_prefix);
        if ((tmp = malloc(len + 1))) {
            size_t k = 0;
            for (size_t i = 0; i < len;) {
                if (pl && strncmp(v + i, t->display_prefix, pl) == 0) {
                    tmp[k++] = ' ';
                    i += pl;
                } else {
                    tmp[k++] = v[i++];
                }
            }
            tmp[k] = '\0';
            v = tmp;
            len = k;
        }
    }
    if (cap > 0) {
        size_t c = len < cap - 1 ? len : cap - 1;
        memcpy(out, v, c);
        out[c] = '\0';
    }
    free(tmp);
    return len;
}
