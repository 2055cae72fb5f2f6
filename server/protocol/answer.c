/* answer.c - transformers' pipelines' postprocess in C (answer.h). */
#include "protocol/answer.h"

#include "protocol/text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NOMEM() api_error_set(err, API_UNAVAILABLE, "out of memory for the answer")

/* ---- scores ------------------------------------------------------------------ */

/* The index of the largest of x (n), the first of equals (numpy's argmax). */
static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* softmax's denominator over x (n), shifted by its largest: exp(x[i] -
 * x[max]) / sum is the score of i. */
static double softmax_sum(const float *x, int n, float max)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += exp((double)x[i] - max);
    return sum;
}

static double score_of(enc_head_function fn, const float *x, int n, int i, float max, double sum)
{
    switch (fn) {
    case ENC_HEAD_FN_SOFTMAX:
        return exp((double)x[i] - max) / sum;
    case ENC_HEAD_FN_SIGMOID:
        return 1.0 / (1.0 + exp(-(double)x[i]));
    case ENC_HEAD_FN_NONE:
        break;
    }
    (void)n;
    return x[i];
}

/* ---- text-classification --------------------------------------------------- */

json_t *answer_labels(const enc_head_info *h, const float *logits, int top_k, enc_head_function fn)
{
    const int C = h->n_outputs;
    double *score = malloc((size_t)C * sizeof *score);
    int *order = malloc((size_t)C * sizeof *order);
    json_t *out = json_array();
    if (!score || !order || !out) {
        free(score);
        free(order);
        json_decref(out);
        return NULL;
    }
    const float max = logits[argmax(logits, C)];
    const double sum = fn == ENC_HEAD_FN_SOFTMAX ? softmax_sum(logits, C, max) : 1.0;
    for (int i = 0; i < C; i++) { /* insertion by score, highest first; stable */
        score[i] = score_of(fn, logits, C, i, max, sum);
        int j = i;
        for (; j > 0 && score[order[j - 1]] < score[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    const int n = top_k > 0 && top_k < C ? top_k : C;
    for (int k = 0; k < n; k++)
        if (json_array_append_new(out, json_pack("{s:s,s:f}", "label", h->labels[order[k]], "score",
                                                 score[order[k]])) < 0) {
            json_decref(out);
            out = NULL;
            break;
        }
    free(score);
    free(order);
    return out;
}

/* ---- token-classification ------------------------------------------------- */

/* One token's entity (the pipeline's aggregate with NONE). */
typedef struct entity {
    const char *label;
    double score;
    size_t index;
    char *word; /* owned */
    uint32_t start, end;
} entity;

/* get_tag: "B-x" -> ('B', x), "I-x" -> ('I', x), else ('I', the name). */
static char tag_of(const char *label, const char **tag)
{
    if ((label[0] == 'B' || label[0] == 'I') && label[1] == '-') {
        *tag = label + 2;
        return label[0];
    }
    *tag = label;
    return 'I';
}

/* group_sub_entities' name: the label after its first '-' (split("-", 1)[-1]). */
static const char *group_name(const char *label)
{
    const char *dash = strchr(label, '-');
    return dash ? dash + 1 : label;
}

static json_t *entity_json(const entity *x)
{
    return json_pack("{s:s,s:f,s:I,s:s,s:I,s:I}", "entity", x->label, "score", x->score, "index",
                     (json_int_t)x->index, "word", x->word, "start", (json_int_t)x->start, "end",
                     (json_int_t)x->end);
}

/* group_sub_entities of xs[0 .. n): appended to out unless it is O.
 * 0 or -1 with err set. */
static int add_group(json_t *out, const tok_tokenizer *t, const entity *xs, size_t n,
                     api_error *err)
{
    const char *name = group_name(xs[0].label);
    if (strcmp(name, "O") == 0)
        return 0;
    const char **words = malloc(n * sizeof *words);
    if (!words)
        return NOMEM();
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        words[i] = xs[i].word;
        sum += xs[i].score;
    }
    char *word = NULL;
    size_t wlen = 0;
    enc_error e = {0};
    const int rc = tok_decode_tokens(t, words, n, &word, &wlen, &e);
    free(words);
    if (rc < 0)
        return api_error_set(err, rc == ENC_ENOMEM ? API_UNAVAILABLE : API_BAD_REQUEST,
                             "entities: %s", e.message);
    json_t *g =
        json_pack("{s:s,s:f,s:s%,s:I,s:I}", "entity_group", name, "score", sum / (double)n, "word",
                  word, wlen, "start", (json_int_t)xs[0].start, "end", (json_int_t)xs[n - 1].end);
    free(word);
    return g && json_array_append_new(out, g) == 0 ? 0 : NOMEM();
}

/* group_entities: a token continues the group before it when its tag is
 * the last one's and it is not a B-. */
static json_t *group_entities(const tok_tokenizer *t, const entity *xs, size_t n, api_error *err)
{
    json_t *out = json_array();
    if (!out) {
        NOMEM();
        return NULL;
    }
    size_t first = 0;
    for (size_t i = 1; i <= n; i++) {
        bool joins = false;
        if (i < n) {
            const char *tag, *last;
            const char bi = tag_of(xs[i].label, &tag);
            tag_of(xs[i - 1].label, &last);
            joins = bi != 'B' && strcmp(tag, last) == 0;
        }
        if (joins)
            continue;
        if (n > 0 && add_group(out, t, xs + first, i - first, err) < 0) {
            json_decref(out);
            return NULL;
        }
        first = i;
    }
    return out;
}

json_t *answer_entities(const tok_tokenizer *t, const enc_head_info *h, const tok_encoding *e,
                        const char *text, size_t len, const float *logits, bool aggregate,
                        api_error *err)
{
    const int C = h->n_outputs;
    const int32_t unk = tok_role_id(t, TOK_ROLE_UNK);
    entity *xs = calloc(e->n ? e->n : 1, sizeof *xs);
    size_t n = 0;
    json_t *out = NULL;
    if (!xs) {
        NOMEM();
        return NULL;
    }
    for (size_t i = 0; i < e->n; i++) {
        if (e->special[i])
            continue;
        const float *row = logits + i * (size_t)C;
        const int best = argmax(row, C);
        entity *x = &xs[n++];
        x->label = h->labels[best];
        x->score =
            score_of(ENC_HEAD_FN_SOFTMAX, row, C, best, row[best], softmax_sum(row, C, row[best]));
        x->index = i;
        x->start = e->start[i];
        x->end = e->stop[i];
        if (e->ids[i] == unk) { /* the text the unknown token stands for */
            const size_t a = text_byte_of(text, len, x->start), b = text_byte_of(text, len, x->end);
            x->word = strndup(text + a, b > a ? b - a : 0);
        } else {
            const char *tok = tok_token_text(t, e->ids[i]);
            x->word = strdup(tok ? tok : "");
        }
        if (!x->word) {
            NOMEM();
            goto done;
        }
    }
    if (aggregate) {
        out = group_entities(t, xs, n, err);
        goto done;
    }
    if (!(out = json_array())) {
        NOMEM();
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(xs[i].label, "O") != 0 && json_array_append_new(out, entity_json(&xs[i])) < 0) {
            json_decref(out);
            out = NULL;
            NOMEM();
            break;
        }
done:
    for (size_t i = 0; i < n; i++)
        free(xs[i].word);
    free(xs);
    return out;
}

/* ---- fill-mask --------------------------------------------------------------- */

/* ids (n) decoded as transformers' decode does: tokenizers' decode, then
 * the clean-up the tokenizer asks for.  A JSON string, or NULL with err. */
static json_t *decoded(const tok_tokenizer *t, const int32_t *ids, size_t n, bool skip,
                       api_error *err)
{
    char *s = NULL;
    size_t len = 0;
    enc_error e = {0};
    const int rc = tok_decode(t, ids, n, skip, &s, &len, &e);
    if (rc < 0) {
        api_error_set(err, rc == ENC_ENOMEM ? API_UNAVAILABLE : API_BAD_REQUEST, "fill-mask: %s",
                      e.message);
        return NULL;
    }
    if (tok_clean_up_spaces(t))
        len = tok_clean_up(s, len);
    json_t *j = json_stringn(s, len);
    free(s);
    if (!j)
        NOMEM();
    return j;
}

/* The k largest of x (V) into top (k), largest first (the first of equals
 * first). */
static void top_of(const float *x, int V, int k, int *top)
{
    int n = 0;
    for (int i = 0; i < V; i++) {
        if (n == k && !(x[i] > x[top[k - 1]]))
            continue;
        int j = n < k ? n++ : k - 1;
        for (; j > 0 && x[top[j - 1]] < x[i]; j--)
            top[j] = top[j - 1];
        top[j] = i;
    }
}

/* One mask's propositions. */
static json_t *fill_one(const tok_tokenizer *t, const int32_t *ids, size_t n, int32_t *scratch,
                        size_t at, bool single, const float *row, int V, int k, int *top,
                        api_error *err)
{
    const int32_t pad = tok_role_id(t, TOK_ROLE_PAD);
    json_t *list = json_array();
    if (!list) {
        NOMEM();
        return NULL;
    }
    top_of(row, V, k, top);
    const float max = row[top[0]];
    const double sum = softmax_sum(row, V, max);
    for (int r = 0; r < k; r++) {
        const int32_t p = top[r];
        size_t m = 0;
        for (size_t i = 0; i < n; i++) { /* the mask replaced, padding left out */
            const int32_t id = i == at ? p : ids[i];
            if (id != pad)
                scratch[m++] = id;
        }
        json_t *seq = decoded(t, scratch, m, single, err);
        json_t *str = seq ? decoded(t, &p, 1, false, err) : NULL;
        if (!str) {
            json_decref(seq);
            json_decref(list);
            return NULL;
        }
        json_t *prop = json_pack("{s:f,s:i,s:o,s:o}", "score", exp((double)row[p] - max) / sum,
                                 "token", (int)p, "token_str", str, "sequence", seq);
        if (!prop || json_array_append_new(list, prop) < 0) {
            NOMEM();
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

json_t *answer_fill_mask(const tok_tokenizer *t, const int32_t *ids, size_t n, const int32_t *masks,
                         int n_masks, const float *logits, int V, int top_k, api_error *err)
{
    const int k = top_k < V ? top_k : V;
    int32_t *scratch = malloc((n ? n : 1) * sizeof *scratch);
    int *top = malloc((size_t)(k > 0 ? k : 1) * sizeof *top);
    json_t *out = n_masks > 1 ? json_array() : NULL;
    if (!scratch || !top || (n_masks > 1 && !out)) {
        free(scratch);
        free(top);
        json_decref(out);
        NOMEM();
        return NULL;
    }
    for (int m = 0; m < n_masks; m++) {
        json_t *one = fill_one(t, ids, n, scratch, (size_t)masks[m], n_masks == 1,
                               logits + (size_t)m * V, V, k, top, err);
        if (!one || n_masks == 1) {
            json_decref(out);
            out = one;
            break;
        }
        if (json_array_append_new(out, one) < 0) {
            json_decref(out);
            out = NULL;
            NOMEM();
            break;
        }
    }
    free(scratch);
    free(top);
    return out;
}
