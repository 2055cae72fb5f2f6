/* safetensors.h - a strict reader for the safetensors format.
 *
 * The format: 8 bytes little-endian u64 N, then N bytes of JSON header
 * ({"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *   "__metadata__": {"key": "string", ...}}), then the data section.  Offsets are
 * relative to the start of the data section.
 *
 * st_open() maps the file read-only and validates everything before it returns:
 * header length inside the file, header JSON (an object, no duplicate keys,
 * at most 100 MB), every entry's dtype, shape and offsets, that the byte count
 * equals numel * dtype size, that offsets lie inside the data section, do not
 * overlap, and cover it with no holes.  Nothing is copied: tensor data points
 * into the mapping.
 *
 *     st_file f;
 *     enc_error err = {0};
 *     if (st_open(&f, "model.safetensors", &err) < 0) { puts(err.message); ... }
 *     const st_tensor *t = st_find(&f, "norm1.weight");
 *     float *buf = malloc(t->numel * sizeof *buf);
 *     st_tensor_read_f32(t, buf, &err);
 *     st_close(&f);
 */
#ifndef ATTND_SAFETENSORS_H
#define ATTND_SAFETENSORS_H

#include "base/error.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER (100u * 1000u * 1000u)

/* Every dtype the format defines; only some can be converted to float32. */
typedef enum st_dtype {
    ST_BOOL,
    ST_U8,
    ST_I8,
    ST_I16,
    ST_U16,
    ST_F16,
    ST_BF16,
    ST_I32,
    ST_U32,
    ST_F32,
    ST_F64,
    ST_I64,
    ST_U64,
    ST_F8_E4M3,
    ST_F8_E5M2,
    ST_DTYPE_COUNT
} st_dtype;

typedef struct st_tensor {
    const char *name;            /* borrowed from the st_file's header */
    st_dtype dtype;
    int ndim;                    /* 0 for a scalar */
    int64_t shape[ST_MAX_DIMS];
    size_t numel;                /* product of shape (1 for a scalar) */
    const unsigned char *data;   /* into the mapping; not aligned: read via memcpy */
    size_t nbytes;
} st_tensor;

typedef struct st_file {
    void *map;          /* the mapping, or NULL when parsed from memory */
    size_t map_size;
    int fd;             /* the file, open (O_RDONLY) while map is set: whoever takes
                           map over from f (setting it NULL) takes fd with it */
    const unsigned char *bytes;   /* start of the file's bytes */
    size_t size;                  /* the file's size */
    json_t *header;     /* owned: the parsed header (tensor names borrow from it) */
    st_tensor *tensors; /* owned: n_tensors entries in header order */
    size_t n_tensors;
} st_file;

/* Maps and validates the file at path.  On success returns 0 and f owns the
 * mapping and the open file; on error returns a negative enc_status, fills err with a message
 * naming the tensor or the reason, and leaves f closed (st_close is safe). */
int st_open(st_file *f, const char *path, enc_error *err);

/* The same validation over size bytes at buf, which stay borrowed and must
 * outlive f.  For tests and fuzzing. */
int st_parse(st_file *f, const void *buf, size_t size, enc_error *err);

/* Releases what f owns.  Safe on a zeroed, failed or already-closed st_file. */
void st_close(st_file *f);

/* t's bytes (a tensor of f) will not be read again: the pages wholly
 * inside them leave the process's memory (madvise MADV_DONTNEED: the file's
 * page cache keeps them, and a later read faults them back in).  A loader
 * that copies a tensor calls it, so a file's pages and their copies are not
 * both resident.  Nothing for a file parsed from memory. */
void st_release(const st_file *f, const st_tensor *t);
/* The same for n bytes at p, inside f's mapping. */
void st_release_bytes(const st_file *f, const void *p, size_t n);

/* The tensor called name, or NULL.  Borrowed until st_close. */
const st_tensor *st_find(const st_file *f, const char *name);

/* The string value of key in __metadata__, or NULL.  Borrowed until st_close. */
const char *st_metadata(const st_file *f, const char *key);

/* "F32", "BF16", ... for a dtype. */
const char *st_dtype_name(st_dtype dtype);

/* Bytes per element of a dtype. */
size_t st_dtype_size(st_dtype dtype);

/* Converts t's numel elements to float32 into dst (which has room for them).
 * Supports every dtype except the F8 ones; F16 and BF16 are widened exactly.
 * Returns 0, or ENC_EFORMAT naming the tensor for an unsupported dtype. */
int st_tensor_read_f32(const st_tensor *t, float *dst, enc_error *err);

/* Half-precision conversions, exact (every F16/BF16 value is a float32). */
float st_f16_to_f32(uint16_t h);
float st_bf16_to_f32(uint16_t b);

#endif
