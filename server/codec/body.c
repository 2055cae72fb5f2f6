/* body.c - a request's JSON body read one way for every protocol (body.h). */
#include "codec/body.h"

#include <stdlib.h>
#include <string.h>

/* jansson's error as b's BODY_JSON, its text made printable ASCII. */
static int json_fault(body_json *b, const json_error_t *jerr)
{
    b->fault = BODY_JSON;
    b->line = jerr->line;
    b->column = jerr->column;
    b->byte = jerr->position;
    size_t i = 0;
    for (; jerr->text[i] && i + 1 < sizeof b->why; i++) {
        const unsigned char c = (unsigned char)jerr->text[i];
        b->why[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    b->why[i] = '\0';
    return -1;
}

static int oom(body_json *b)
{
    b->fault = BODY_OOM;
    return -1;
}

/* body_load with room for n + n_extra cuts at cut. */
static int load(const char *text, size_t len, const jx_array *const *scans, size_t n,
                const jx_cut *extra, size_t n_extra, bool strict, jx_cut *cut, body_json *b)
{
    const jx_array *syntax = NULL; /* a scan found invalid JSON: jansson reads it all */
    size_t n_cuts = 0;
    for (size_t i = 0; i < n; i++) {
        if (!scans[i])
            continue;
        if (scans[i]->fault == JX_OOM)
            return oom(b);
        if (scans[i]->fault == JX_SYNTAX && !syntax)
            syntax = scans[i];
        cut[n_cuts++] = (jx_cut){scans[i]->start, scans[i]->end};
    }
    for (size_t i = 0; i < n_extra; i++)
        cut[n_cuts++] = extra[i];
    if (syntax)
        n_cuts = 0;
    for (size_t i = 1; i < n_cuts; i++) /* in text order */
        for (size_t j = i; j > 0 && cut[j].start < cut[j - 1].start; j--) {
            const jx_cut c = cut[j];
            cut[j] = cut[j - 1];
            cut[j - 1] = c;
        }
    json_error_t jerr;
    bool out_of_memory = false;
    json_t *root = strict && n_cuts == 0
                       ? json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr)
                       : jx_load(text, len, cut, n_cuts, &jerr, &out_of_memory);
    if (out_of_memory)
        return oom(b);
    if (!root)
        return json_fault(b, &jerr);
    if (syntax) { /* jansson took what the scan refused */
        json_decref(root);
        b->fault = BODY_SCAN;
        jx_syntax_text(syntax, text, b->why, sizeof b->why);
        return -1;
    }
    b->root = root;
    return 0;
}

int body_load(const char *text, size_t len, const jx_array *const *scans, size_t n,
              const jx_cut *extra, size_t n_extra, bool strict, body_json *b)
{
    memset(b, 0, sizeof *b);
    if (!text) {
        text = "";
        len = 0;
    }
    jx_cut own[16];
    jx_cut *cut = n + n_extra <= 16 ? own : malloc((n + n_extra) * sizeof *cut);
    if (!cut)
        return oom(b);
    const int rc = load(text, len, scans, n, extra, n_extra, strict, cut, b);
    if (cut != own)
        free(cut);
    return rc;
}
