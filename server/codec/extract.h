/* extract.h - the numeric arrays of a JSON body, read from its text.
 *
 * A tensor sent as JSON is a nested array of numbers, often hundreds of
 * thousands of them; jansson would build one json_t (some 40 bytes) per
 * number.  Both protocols read such arrays here instead, in four steps:
 *
 * 1. jx_object walks an object's members to the array (v1: the top-level
 *    "embeddings"; v2: each inputs[k].data).
 * 2. jx_scan checks the array's syntax (RFC 8259), measures its shape along
 *    the first entries (rank and dims) and notes the first fault in
 *    document order: an entry count that differs from the first sibling's,
 *    a value of the wrong kind, a number outside float32.  The caller turns
 *    these into messages that name its field.
 * 3. jx_load hands jansson the rest of the body, each scanned array cut to
 *    [] (so a body of numbers costs jansson nothing).
 * 4. jx_read_f32 / jx_read_i32 read the numbers into the request's buffer,
 *    on two threads when the text is long; jx_read_i32_rows reads token
 *    ids whose rows may differ in length (scanned by jx_scan_rows).
 *
 * An array whose syntax is wrong is not cut: the caller gives the whole body
 * to jansson, which words the error with its line and column; should
 * jansson take what the scan refused, jx_syntax_text words it instead.
 */
#ifndef ATTND_EXTRACT_H
#define ATTND_EXTRACT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Arrays nested deeper than this are a fault (JX_DEEP). */
#define JX_MAX_RANK 8

typedef enum jx_fault {
    JX_OK,
    JX_COUNT,  /* the array at `at` has `entries`; the first at its level had dims[depth] */
    JX_KIND,   /* the value at `at` is `is`: an array where a number goes (depth == rank),
                  or anything but an array above (depth < rank), or a non-number */
    JX_RANGE,  /* the number at `at` (`value`) is outside the float32 range */
    JX_DEEP,   /* the first entries nest deeper than JX_MAX_RANK arrays */
    JX_SYNTAX, /* not valid JSON at `bad`: `why` */
    JX_OOM,
} jx_fault;

typedef struct jx_array {
    const char *start, *end;  /* its '[' and just past its ']' */
    int rank;                 /* arrays along the first entries, down to the first leaf */
    size_t dims[JX_MAX_RANK]; /* their entry counts (dims[0]: the array's own) */
    bool ragged;              /* jx_scan_rows: rows (arrays at depth rank - 1) may differ */
    size_t longest;           /* the most entries of a row (an array at depth rank - 1) */
    const char *leaf;         /* the first leaf: "a number", "a string", ...; NULL if none */
    size_t count;             /* numbers in it */
    size_t rows;              /* arrays at depth rank - 1 (rows of numbers) */
    /* The first fault in document order, an array's entry count taken at
     * its '[': at[0..depth) is where (entry indices, outermost first). */
    jx_fault fault;
    int depth;
    size_t at[JX_MAX_RANK];
    size_t entries;        /* JX_COUNT */
    const char *is;        /* JX_KIND */
    double value;          /* JX_RANGE */
    const char *bad, *why; /* JX_SYNTAX */
} jx_array;

/* Scans the array at p ('[') in [p, end) into *a.  Returns a->end, or
 * NULL when a->fault is JX_SYNTAX (a->bad, a->why) or JX_OOM. */
const char *jx_scan(const char *p, const char *end, jx_array *a);

/* jx_scan, but the rows (the arrays at depth rank - 1, whose entries are
 * the leaves) may hold different numbers of entries: a row's count is no
 * fault; a->longest is the most any row holds (token ids sent as ragged
 * rows).  Every other fault is noted as jx_scan notes it. */
const char *jx_scan_rows(const char *p, const char *end, jx_array *a);

/* "[0][3][5]" for at[0..depth) (the empty string for depth 0). */
const char *jx_index_text(const size_t *at, int depth, char *buf, size_t size);

/* The index path of number k (flat, document order) of a fault-free array. */
void jx_number_at(const jx_array *a, size_t k, size_t at[JX_MAX_RANK]);

/* "invalid JSON at line L, column C: why" for a JX_SYNTAX fault, L and C
 * counted in text (columns in characters, as jansson counts them). */
const char *jx_syntax_text(const jx_array *a, const char *text, char *buf, size_t size);

/* Reads the numbers of a fault-free array into x[0..a->count) as float32.
 * 0, or -1 when out of memory. */
int jx_read_f32(const jx_array *a, float *x);

/* Reads them into x as int32.  0; -1 when out of memory; 1 when number
 * *bad (flat index) has a fraction or exponent (*fraction) or is outside
 * int32 (its text: *tok, *tok_len). */
typedef struct jx_int_fault {
    size_t k;
    bool fraction;
    const char *tok;
    size_t tok_len;
    size_t row, entry; /* jx_read_i32_rows: where */
} jx_int_fault;
int jx_read_i32(const jx_array *a, int *x, jx_int_fault *bad);

/* Reads a fault-free array of rank 1 or 2 (from jx_scan_rows) row by row:
 * row r's first stride numbers into x[r * stride ...], its count into
 * row_len[r] (room for a->rows; one row for rank 1).  Entries of x past a
 * row's count are left as they are; a row longer than stride is counted,
 * not stored.  0; 1 when a number has a fraction or exponent or is outside
 * int32 (bad->row, bad->entry, and its text). */
int jx_read_i32_rows(const jx_array *a, int32_t *x, size_t stride, size_t *row_len,
                     jx_int_fault *bad);

/* Walks the members of the object at p ('{'): for each, member(ctx, key
 * characters, their length, value) returns the end of the value, or NULL
 * to stop.  Returns the end of the object, or NULL when stopped or when the
 * text is not an object that can be walked. */
typedef const char *(*jx_member_fn)(void *ctx, const char *key, size_t key_len, const char *value,
                                    const char *end);
const char *jx_object(const char *p, const char *end, jx_member_fn member, void *ctx);

/* The string at p ('"') when its characters are plain printable ASCII (no
 * escape, control character or UTF-8: what jansson would read unchanged):
 * returns them and sets *chars_end to the closing quote; else NULL. */
const char *jx_plain_string(const char *p, const char *end, const char **chars_end);

/* A span of text to hand jansson as an empty value: an array ('[' ... ']')
 * becomes [], a string ('"' ... '"') "". */
typedef struct jx_cut {
    const char *start, *end;
} jx_cut;

/* text[0..len) as jansson values, the n cuts (in text order, not
 * overlapping) made empty.  NULL when it is not valid JSON, with *jerr's
 * line and column those of text itself (or *oom).  Integers of any size
 * are numbers (see jx_loadb); a key given twice is refused; U+0000 is read
 * into strings, for the caller to refuse where a string cannot hold it. */
json_t *jx_load(const char *text, size_t len, const jx_cut *cuts, size_t n, json_error_t *jerr,
                bool *oom);

/* json_loadb, but integers beyond int64 (JavaScript writes 1e20 as
 * 100000000000000000000) are read as reals rather than refused. */
json_t *jx_loadb(const char *text, size_t len, size_t flags, json_error_t *err);

#endif
