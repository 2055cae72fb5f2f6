/* body.h - a request's JSON body read one way for every protocol.
 *
 * A protocol scans the numeric arrays it reads from the text itself
 * (extract.h: jx_object, jx_scan); body_load does the rest: a scan out of
 * memory is the body's fault; the scanned arrays (and any spans cut
 * besides) are cut to [] or "" and jansson reads what is left; a scan that
 * found a syntax fault cuts nothing, so jansson reads the whole body and
 * words the error with its line and column, or, should jansson take what
 * the scan refused, the scan words it (jx_syntax_text).  jansson's text is
 * made printable ASCII.  The protocol turns a fault into its error body
 * (protocol/fields.h: fields_body_error).
 *
 *     body_json b;
 *     if (body_load(text, len, scans, n, NULL, 0, false, &b) < 0)
 *         return fields_body_error(&b, false, err);
 *     ... b.root ...
 *     json_decref(b.root); */
#ifndef ATTND_CODEC_BODY_H
#define ATTND_CODEC_BODY_H

#include "codec/extract.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum body_fault {
    BODY_OK,
    BODY_OOM,  /* out of memory */
    BODY_JSON, /* jansson refused the text: line, column, byte, why (its words) */
    BODY_SCAN, /* jansson took an array a scan refused: why (the scan's words) */
} body_fault;

typedef struct body_json {
    json_t *root; /* owned: the body's value (BODY_OK), else NULL */
    body_fault fault;
    int line, column, byte;           /* BODY_JSON: where, in text's own counts */
    char why[JSON_ERROR_TEXT_LENGTH]; /* BODY_JSON, BODY_SCAN: printable ASCII */
} body_json;

/* Reads text[0..len) (text NULL: empty) into *b.  scans: the n arrays the
 * protocol scanned, each cut from what jansson reads (NULL entries: none);
 * extra: n_extra spans cut besides (a plain string read where it lies),
 * none of them overlapping.  strict (with nothing cut): integers beyond
 * int64 refused, as jansson refuses them; else read as reals (jx_loadb).  A key given twice
 * is refused; U+0000 is read into strings, for the protocol to refuse
 * where a string cannot hold it.  0, or -1 with b->fault. */
int body_load(const char *text, size_t len, const jx_array *const *scans, size_t n,
              const jx_cut *extra, size_t n_extra, bool strict, body_json *b);

#endif
