/* fuzz_tokenizer.c - fuzz target: the tokenizer.json tokenizer
 * (core/tokenizer/) on the test tokenizers bert-uncased (WordPiece),
 * roberta (byte-level BPE), xlmr (Unigram, Precompiled charsmap), llama-bpe
 * (BPE with byte fallback), gemma3 (the same after Gemma's Replace and
 * Split, whitespace runs as added tokens), unigram-fallback and misc (the
 * remaining components), loaded once.  The input is the text, valid UTF-8 or not; when
 * it holds a 0xFF byte, the bytes before the first one and the bytes after
 * it are also encoded as a pair.  Each text (and pair) is encoded with and
 * without the post-processor's specials, then truncated to a few limits
 * taken from its length and the input; its ids, and ids read from the input,
 * are decoded back to text.  See fuzz.h. */
#include "fuzz.h"

#include "tokenizer/tokenizer.h"

#include <stdbool.h>
#include <string.h>

static const char *const NAMES[] = {
    "bert-uncased", "roberta", "xlmr", "llama-bpe", "gemma3", "unigram-fallback", "misc",
};
enum { N_TOK = sizeof NAMES / sizeof NAMES[0] };

static tok_tokenizer *toks[N_TOK];

/* The first invalid byte of s (RFC 3629's table: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or -1: written here, apart from
 * core/tokenizer/utf8.c, so the two are checked against each other. */
static long utf8_invalid_at(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        const uint8_t c = s[i];
        size_t n;
        uint8_t lo = 0x80, hi = 0xBF; /* the second byte's range */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            n = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return (long)i;
        }
        if (i + n > len)
            return (long)i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return (long)i;
        for (size_t k = 2; k < n; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return (long)i;
        i += n;
    }
    return -1;
}

static size_t code_points(const uint8_t *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += (s[i] & 0xC0) != 0x80;
    return n;
}

/* What every successful encoding of (a, b) must be: ids in the vocabulary,
 * each with a token; spans within their own text; post-processor tokens
 * special, at [0, 0), and as many as the tokenizer says it adds. */
static void check_encoding(const char *name, const tok_tokenizer *t, const tok_encoding *e,
                           size_t chars_a, size_t chars_b, bool pair, bool special)
{
    const size_t vocab = tok_id_count(t);
    size_t specials = 0;
    for (size_t i = 0; i < e->n; i++) {
        FUZZ_ASSERT(e->ids[i] >= 0 && (size_t)e->ids[i] < vocab,
                    "%s: token %zu has id %d, the vocabulary %zu", name, i, e->ids[i], vocab);
        FUZZ_ASSERT(tok_token_text(t, e->ids[i]) != NULL, "%s: id %d has no token", name,
                    e->ids[i]);
        FUZZ_ASSERT(e->start[i] <= e->stop[i], "%s: token %zu at [%u, %u)", name, i, e->start[i],
                    e->stop[i]);
        FUZZ_ASSERT(e->seq[i] == 0 || e->seq[i] == 255 || (pair && e->seq[i] == 1),
                    "%s: token %zu of sequence %u", name, i, e->seq[i]);
        FUZZ_ASSERT((e->special[i] != 0) == (e->seq[i] == 255),
                    "%s: token %zu special %u, sequence %u", name, i, e->special[i], e->seq[i]);
        if (e->special[i]) {
            FUZZ_ASSERT(e->start[i] == 0 && e->stop[i] == 0,
                        "%s: special token %zu (%d) at [%u, %u)", name, i, e->ids[i], e->start[i],
                        e->stop[i]);
            specials++;
        } else {
            const size_t chars = e->seq[i] == 1 ? chars_b : chars_a;
            FUZZ_ASSERT(e->stop[i] <= chars,
                        "%s: token %zu at [%u, %u) of a text of %zu code points", name, i,
                        e->start[i], e->stop[i], chars);
        }
    }
    FUZZ_ASSERT(specials == (special ? tok_added_special(t, pair) : 0),
                "%s: %zu special tokens, the post-processor adds %zu%s", name, specials,
                special ? tok_added_special(t, pair) : 0, pair ? " to a pair" : "");
}

/* The tokens of text s in e. */
static size_t count_of(const tok_encoding *e, uint8_t s)
{
    size_t n = 0;
    for (size_t i = 0; i < e->n; i++)
        n += e->seq[i] == s;
    return n;
}

/* Truncated against whole: each text's tokens are the first ones (right
 * truncation, stride 0) or the last ones (left) of its tokens in the whole
 * encoding, the specials all there, and no more than max tokens.  A left
 * cut's first token of a text may start one character earlier than whole
 * has it: ByteLevel's trim_offsets keeps the space add_prefix_space adds
 * before a text's first token, and that token is now first. */
static void check_truncated(const char *name, const tok_encoding *cut, const tok_encoding *whole,
                            size_t max, size_t untruncated, bool left)
{
    FUZZ_ASSERT(untruncated == whole->n, "%s: untruncated %zu, the whole encoding %zu", name,
                untruncated, whole->n);
    FUZZ_ASSERT(cut->n <= max, "%s: %zu tokens at a limit of %zu", name, cut->n, max);
    FUZZ_ASSERT(whole->n > max ? cut->n == max : cut->n == whole->n,
                "%s: %zu tokens at a limit of %zu, %zu without", name, cut->n, max, whole->n);
    for (uint8_t s = 0; s < 2; s++) {
        size_t j = 0, skip = left ? count_of(whole, s) - count_of(cut, s) : 0;
        bool first = true;
        for (size_t i = 0; i < cut->n; i++) {
            if (cut->seq[i] != s)
                continue;
            while (j < whole->n && (whole->seq[j] != s || (skip > 0 && skip--)))
                j++;
            FUZZ_ASSERT(j < whole->n, "%s: more tokens of text %u cut than whole", name, s);
            const bool start_ok = cut->start[i] == whole->start[j] ||
                                  (left && first && cut->start[i] + 1 == whole->start[j]);
            FUZZ_ASSERT(cut->ids[i] == whole->ids[j] && start_ok && cut->stop[i] == whole->stop[j],
                        "%s: text %u's token %zu is %d [%u, %u) cut (%s), %d [%u, %u) whole", name,
                        s, i, cut->ids[i], cut->start[i], cut->stop[i], left ? "left" : "right",
                        whole->ids[j], whole->start[j], whole->stop[j]);
            first = false;
            j++;
        }
    }
}

/* An invalid text: ENC_EINVAL, the message naming the byte. */
static void check_invalid(const char *name, int rc, const enc_error *err, long at, bool second)
{
    FUZZ_ASSERT(rc == ENC_EINVAL, "%s: invalid UTF-8 (byte %ld) gave %d: %s", name, at, rc,
                err->message);
    char want[48];
    snprintf(want, sizeof want, "at byte %ld", at);
    FUZZ_ASSERT(strstr(err->message, want) != NULL, "%s: \"%s\" does not say %s", name,
                err->message, want);
    FUZZ_ASSERT(!second || strstr(err->message, "second"),
                "%s: \"%s\" does not name the second text", name, err->message);
}

/* ids decoded, with and without the specials: UTF-8 text, or (an id with
 * no token) a refusal naming it. */
static void check_decode(const char *name, const tok_tokenizer *t, const int32_t *ids, size_t n)
{
    for (int skip = 0; skip < 2; skip++) {
        char *text = NULL;
        size_t len = 0;
        enc_error err = {0};
        const int rc = tok_decode(t, ids, n, skip, &text, &len, &err);
        if (rc != 0) {
            FUZZ_ASSERT(rc == ENC_EINVAL && strstr(err.message, "no token has id"),
                        "%s: decoding %zu ids gave %d: %s", name, n, rc, err.message);
            FUZZ_ASSERT(text == NULL, "%s: a refused decoding left text", name);
            continue;
        }
        FUZZ_ASSERT(text != NULL && text[len] == '\0', "%s: decoded text not NUL-ended", name);
        FUZZ_ASSERT(tok_utf8_invalid_at(text, len) < 0, "%s: decoded text not UTF-8 at byte %ld",
                    name, tok_utf8_invalid_at(text, len));
        free(text);
    }
}

/* One text (b NULL) or pair through tokenizer k. */
static void run_one(int k, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
                    uint32_t salt, tok_encoding *whole, tok_encoding *cut)
{
    const char *name = NAMES[k];
    const tok_tokenizer *t = toks[k];
    const bool pair = b != NULL;
    const long bad_a = utf8_invalid_at(a, alen), bad_b = pair ? utf8_invalid_at(b, blen) : -1;
    FUZZ_ASSERT(tok_utf8_invalid_at((const char *)a, alen) == bad_a,
                "tok_utf8_invalid_at says %ld, RFC 3629 %ld",
                tok_utf8_invalid_at((const char *)a, alen), bad_a);
    if (pair)
        FUZZ_ASSERT(tok_utf8_invalid_at((const char *)b, blen) == bad_b,
                    "tok_utf8_invalid_at says %ld, RFC 3629 %ld (second text)",
                    tok_utf8_invalid_at((const char *)b, blen), bad_b);
    const size_t chars_a = code_points(a, alen), chars_b = pair ? code_points(b, blen) : 0;

    for (int special = 1; special >= 0; special--) {
        enc_error err = {0};
        size_t untruncated = 0;
        int rc = tok_encode(t, (const char *)a, alen, (const char *)b, blen, special, 0, whole,
                            &untruncated, &err);
        if (bad_a >= 0 || bad_b >= 0) {
            check_invalid(name, rc, &err, bad_a >= 0 ? bad_a : bad_b, bad_a < 0);
            continue;
        }
        FUZZ_ASSERT(rc == 0, "%s: valid text refused (%d): %s", name, rc, err.message);
        FUZZ_ASSERT(untruncated == whole->n, "%s: untruncated %zu, %zu tokens", name, untruncated,
                    whole->n);
        check_encoding(name, t, whole, chars_a, chars_b, pair, special);

        /* Limits: the specials alone, one more, one less than all, one
         * taken from the input, one below the specials (refused); two of
         * them with the specials, one without, chosen by the input (every
         * limit an encoding fewer per input: more inputs a second). */
        const size_t added = special ? tok_added_special(t, pair) : 0;
        const size_t limits[5] = {added, added + 1, whole->n > 1 ? whole->n - 1 : 1,
                                  1 + (salt >> 8) % (whole->n + 2), added > 1 ? added - 1 : 0};
        const int picks[2] = {special ? (int)(salt % 5) : (int)(salt / 25 % 5),
                              special ? (int)(salt / 5 % 5) : -1};
        for (int l = 0; l < 2; l++) {
            if (picks[l] < 0 || (l == 1 && picks[1] == picks[0]))
                continue;
            const size_t max = limits[picks[l]];
            if (max == 0)
                continue; /* 0: no limit */
            enc_error cerr = {0};
            size_t cut_untruncated = 0;
            const bool left = (salt >> (16 + l)) & 1; /* the direction, chosen by the input */
            rc = tok_encode_dir(t, (const char *)a, alen, (const char *)b, blen, special, max,
                                left ? TOK_TRUNCATE_LEFT : TOK_TRUNCATE_RIGHT, cut,
                                &cut_untruncated, &cerr);
            if (max < added && whole->n > max) {
                FUZZ_ASSERT(rc == ENC_ELIMIT, "%s: a limit of %zu below %zu specials gave %d", name,
                            max, added, rc);
                continue;
            }
            FUZZ_ASSERT(rc == 0, "%s: limit %zu refused (%d): %s", name, max, rc, cerr.message);
            check_encoding(name, t, cut, chars_a, chars_b, pair, special);
            check_truncated(name, cut, whole, max, cut_untruncated, left);
        }
    }
    /* The page's display of each token, into a small buffer; the ids
     * decoded; ids made of the input's bytes, two by two, decoded. */
    if (bad_a < 0 && bad_b < 0) {
        check_decode(name, t, whole->ids, whole->n);
        int32_t ids[64];
        size_t n = 0;
        for (size_t i = 0; i + 1 < alen && n < 64; i += 2)
            ids[n++] = (int32_t)((a[i] | (uint32_t)a[i + 1] << 8) % tok_id_count(t));
        check_decode(name, t, ids, n);
        for (size_t i = 0; i < whole->n && i < 64; i++) {
            char buf[8];
            const size_t need = tok_token_display(t, whole->ids[i], buf, sizeof buf);
            /* a byte-level token may stand for a NUL byte: at most need */
            FUZZ_ASSERT(strlen(buf) <= need && strlen(buf) < sizeof buf,
                        "%s: display of %d: %zu bytes, said %zu", name, whole->ids[i], strlen(buf),
                        need);
        }
    }
}

int fuzz_tokenizer(const uint8_t *data, size_t size)
{
    if (!toks[0]) {
        for (int k = 0; k < N_TOK; k++) {
            char path[512];
            snprintf(path, sizeof path, "%s/fixtures/tokenizers/%s/tokenizer.json", TESTS_DIR,
                     NAMES[k]);
            enc_error err = {0};
            toks[k] = tok_load(path, &err);
            FUZZ_ASSERT(toks[k] != NULL, "%s: %s", path, err.message);
        }
    }
    /* A copy of exactly size bytes, so a read past the text is seen. */
    uint8_t *text = malloc(size ? size : 1);
    FUZZ_ASSERT(text != NULL, "out of memory");
    memcpy(text, data, size);
    uint32_t salt = 2166136261u;
    for (size_t i = 0; i < size; i++)
        salt = (salt ^ data[i]) * 16777619u;

    tok_encoding whole = {0}, cut = {0};
    const uint8_t *ff = memchr(text, 0xFF, size);
    for (int k = 0; k < N_TOK; k++) {
        run_one(k, text, size, NULL, 0, salt ^ (0x9E3779B9u * (uint32_t)(k + 1)), &whole, &cut);
        if (ff) {
            const size_t alen = (size_t)(ff - text);
            /* the pair in allocations of their own, exactly sized */
            uint8_t *a = malloc(alen ? alen : 1), *b = malloc(size - alen);
            FUZZ_ASSERT(a && b, "out of memory");
            memcpy(a, text, alen);
            memcpy(b, ff + 1, size - alen - 1);
            run_one(k, a, alen, b, size - alen - 1, salt ^ (0x7F4A7C15u * (uint32_t)(k + 1)),
                    &whole, &cut);
            free(a);
            free(b);
        }
    }
    tok_encoding_free(&whole);
    tok_encoding_free(&cut);
    free(text);
    return 0;
}

FUZZ_LIBFUZZER_ENTRY(fuzz_tokenizer)
