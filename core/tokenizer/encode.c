/* encode.c - the pipeline that encodes a text or a pair with a loaded
 * tokenizer: added tokens, normalizer, pre-tokenizer, model, truncation,
 * post-processor, offsets in characters.  Written after huggingface/
 * tokenizers' tokenizer/mod.rs (encode_single_sequence, post_process),
 * tokenizer/added_vocabulary.rs (extract_and_normalize, find_matches),
 * utils/truncation.rs (truncate_encodings), tokenizer/encoding.rs (truncate) and
 * processors/ (bert.rs, roberta.rs, template.rs, sequence.rs, and
 * pre_tokenizers/byte_level.rs's process_offsets).
 *
 * The pipeline is Hugging Face tokenizers' (tokenizer/mod.rs encode_single_sequence):
 *
 *     text --added tokens (non-normalized) split--> pieces
 *          --normalizer, each piece--> --added tokens (normalized) split-->
 *          --pre-tokenizer, each piece without a token--> words
 *          --model, each word--> tokens --post-processor--> encoding */
#include "tokenizer/tokenizer_def.h"

#include "tokenizer/chars.h"
#include "tokenizer/utf8.h"

#include <stdlib.h>
#include <string.h>

/* ---- added tokens ------------------------------------------------------- */

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

/* truncate_encodings with LongestFirst, stride 0: the two lengths kept
 * (the same for either direction). */
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

/* Encoding::truncate to n tokens, stride 0: the first n kept (right), or
 * the last n (left). */
static void seq_keep(seq_enc *e, size_t n, tok_direction dir)
{
    if (n >= e->toks.n)
        return;
    const size_t drop = dir == TOK_TRUNCATE_LEFT ? e->toks.n - n : 0;
    if (drop) {
        memmove(e->toks.v, e->toks.v + drop, n * sizeof *e->toks.v);
        memmove(e->special, e->special + drop, n * sizeof *e->special);
        memmove(e->type_id, e->type_id + drop, n * sizeof *e->type_id);
        memmove(e->seq, e->seq + drop, n * sizeof *e->seq);
        memmove(e->lead, e->lead + drop, n * sizeof *e->lead);
        memmove(e->trail, e->trail + drop, n * sizeof *e->trail);
    }
    e->toks.n = n;
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
    return tok_encode_dir(t, a, alen, b, blen, add_special, max_tokens, TOK_TRUNCATE_RIGHT, out,
                          untruncated, err);
}

int tok_encode_dir(const tok_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                   bool add_special, size_t max_tokens, tok_direction dir, tok_encoding *out,
                   size_t *untruncated, enc_error *err)
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
        seq_keep(&encs[0], na, dir);
        if (pair)
            seq_keep(&encs[1], nb, dir);
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

int tok_encoding_set_ids(tok_encoding *out, const int32_t *ids, size_t n)
{
    if (grow_out(out, n) < 0)
        return ENC_ENOMEM;
    if (n) /* n == 0 with no arrays yet: nothing to copy into */
        memcpy(out->ids, ids, n * sizeof *ids);
    for (size_t i = 0; i < n; i++) {
        out->type_ids[i] = out->special[i] = out->seq[i] = 0;
        out->start[i] = out->stop[i] = 0;
    }
    out->n = n;
    return 0;
}

int tok_encoding_append(tok_encoding *out, const tok_encoding *more, uint32_t shift)
{
    if (grow_out(out, out->n + more->n) < 0)
        return ENC_ENOMEM;
    for (size_t i = 0, k = out->n; i < more->n; i++, k++) {
        out->ids[k] = more->ids[i];
        out->type_ids[k] = more->type_ids[i];
        out->special[k] = more->special[i];
        out->seq[k] = more->seq[i];
        const bool offsets = more->seq[i] != 255; /* a post-processor's keep [0, 0) */
        out->start[k] = more->start[i] + (offsets ? shift : 0);
        out->stop[k] = more->stop[i] + (offsets ? shift : 0);
    }
    out->n += more->n;
    return 0;
}

void tok_encoding_remove(tok_encoding *e, size_t from, size_t count)
{
    if (!count)
        return;
    const size_t to = from + count, rest = e->n - to;
    memmove(e->ids + from, e->ids + to, rest * sizeof *e->ids);
    memmove(e->type_ids + from, e->type_ids + to, rest * sizeof *e->type_ids);
    memmove(e->special + from, e->special + to, rest * sizeof *e->special);
    memmove(e->seq + from, e->seq + to, rest * sizeof *e->seq);
    memmove(e->start + from, e->start + to, rest * sizeof *e->start);
    memmove(e->stop + from, e->stop + to, rest * sizeof *e->stop);
    e->n -= count;
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
