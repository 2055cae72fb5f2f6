/* load.c - tokenizer.json read into a tok_tokenizer: its model,
 * normalizer, pre-tokenizer, post-processor, added tokens (with their
 * tries), decoder and roles; and the tokenizer freed.  Written after
 * huggingface/tokenizers' tokenizer/added_vocabulary.rs and processors/
 * (bert.rs, roberta.rs, template.rs, sequence.rs). */
#include "tokenizer/tokenizer_def.h"

#include "tokenizer/json.h"

#include "base/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- added tokens ------------------------------------------------------- */

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
    tok_decoder_free(t->decoder);
    free(t->specials);
    free(t);
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

int tok_set_bos_eos(tok_tokenizer *t, int32_t bos, bool add_bos, int32_t eos, bool add_eos,
                    enc_error *err)
{
    post *p = calloc(1, sizeof *p);
    if (!p || !(p->pair = calloc(6, sizeof *p->pair)) ||
        !(p->single = calloc(3, sizeof *p->single))) {
        post_clear(p);
        free(p);
        return enc_error_set(err, ENC_ENOMEM, "out of memory for the post-processor");
    }
    p->kind = POST_TEMPLATE;
    /* the pair's template; one text's is its A part */
    for (int seq = 0; seq < 2; seq++) {
        const struct {
            bool on;
            int32_t id;
        } around[2] = {{add_bos, bos}, {add_eos, eos}};
        for (int k = 0; k < 3; k++) {
            const bool special = k != 1;
            if (special && !around[k / 2].on)
                continue;
            tmpl_piece *pc = &p->pair[p->n_pair++];
            *pc = (tmpl_piece){.special = special, .seq = seq, .type_id = (uint32_t)seq};
            if (special && !(pc->ids = malloc(sizeof *pc->ids)))
                goto oom;
            if (special) {
                pc->ids[0] = around[k / 2].id;
                pc->n_ids = 1;
            }
            if (seq == 1)
                continue;
            tmpl_piece *one = &p->single[p->n_single++];
            *one = *pc;
            one->ids = NULL;
            if (special && !(one->ids = malloc(sizeof *one->ids)))
                goto oom;
            if (special)
                one->ids[0] = pc->ids[0];
        }
    }
    post_clear(t->post);
    free(t->post);
    t->post = p;
    t->added_single = post_added(p, false);
    t->added_pair = post_added(p, true);
    t->trims = false;
    return ENC_OK;
oom:
    post_clear(p);
    free(p);
    return enc_error_set(err, ENC_ENOMEM, "out of memory for the post-processor");
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
        const added_token *same = tok_added_named(t, json_string_value(content));
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
    if (tok_decode_setup(t, json_object_get(root, "decoder"), err) < 0)
        goto fail;
    tok_roles_default(t, root);
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
