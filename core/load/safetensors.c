/* safetensors.c - a strict, zero-copy reader for the safetensors format.
 *
 * Validation follows the reference Rust implementation (huggingface/safetensors):
 * a file is accepted only if every byte of its data section belongs to exactly
 * one tensor.  All multi-byte values are little-endian and are assembled from
 * bytes, so the code is right on any host and never reads unaligned memory. */
#include "load/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_METADATA_KEY "__metadata__"

/* Name and element size of every dtype, indexed by st_dtype. */
static const struct {
    const char *name;
    size_t size;
} dtype_info[ST_DTYPE_COUNT] = {
    [ST_BOOL] = {"BOOL", 1}, [ST_U8] = {"U8", 1},           [ST_I8] = {"I8", 1},
    [ST_I16] = {"I16", 2},   [ST_U16] = {"U16", 2},         [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_I32] = {"I32", 4},         [ST_U32] = {"U32", 4},
    [ST_F32] = {"F32", 4},   [ST_F64] = {"F64", 8},         [ST_I64] = {"I64", 8},
    [ST_U64] = {"U64", 8},   [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_F8_E5M2] = {"F8_E5M2", 1},
};

/* "F32", "BF16", ... for a dtype; "?" for a value outside the enum. */
const char *st_dtype_name(st_dtype dtype)
{
    return (unsigned)dtype < ST_DTYPE_COUNT ? dtype_info[dtype].name : "?";
}

/* Bytes per element of a dtype; 0 for a value outside the enum. */
size_t st_dtype_size(st_dtype dtype)
{
    return (unsigned)dtype < ST_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}

/* ---- little-endian loads ------------------------------------------------ */

static uint16_t load_le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static uint32_t load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load_le64(const unsigned char *p)
{
    return (uint64_t)load_le32(p) | (uint64_t)load_le32(p + 4) << 32;
}

/* The float whose IEEE-754 bits are u. */
static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The double whose IEEE-754 bits are u. */
static double f64_from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* The low `bits` bits of u read as a two's-complement integer, without
 * relying on implementation-defined conversions. */
static int64_t sign_extend(uint64_t u, int bits)
{
    uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    uint64_t sign = (uint64_t)1 << (bits - 1);
    u &= mask;
    if (u & sign)
        return -(int64_t)(~u & mask) - 1;
    return (int64_t)u;
}

/* d rounded to float as IEEE 754 does (nearest, ties to even), overflow to
 * +-inf made explicit: converting an out-of-range double is undefined in ISO C
 * without Annex F.  0x1.ffffffp127 is FLT_MAX plus half an ulp, the tie that
 * rounds to infinity because FLT_MAX's significand is odd. */
static float f64_to_f32(double d)
{
    if (d >= 0x1.ffffffp127)
        return INFINITY;
    if (d <= -0x1.ffffffp127)
        return -INFINITY;
    return (float)d; /* in range, or NaN */
}

/* Widens an IEEE half exactly: rebias normals, normalise subnormals, and keep
 * the sign and payload of infinities and NaNs. */
float st_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;

    if (exp == 0x1f) { /* inf (mant 0) or NaN */
        bits = sign | 0x7f800000u | mant << 13;
    } else if (exp != 0) { /* normal: exponent bias 15 -> 127 */
        bits = sign | (exp + 112) << 23 | mant << 13;
    } else if (mant == 0) { /* +-0 */
        bits = sign;
    } else {              /* subnormal: mant * 2^-24, normal as a float */
        uint32_t e = 113; /* float exponent field of 2^-14 */
        while (!(mant & 0x400u)) {
            mant <<= 1;
            e--;
        }
        bits = sign | e << 23 | (mant & 0x3ffu) << 13;
    }
    return f32_from_bits(bits);
}

/* Widens a bfloat16: its bits are the top half of a float's. */
float st_bf16_to_f32(uint16_t b)
{
    return f32_from_bits((uint32_t)b << 16);
}

/* Converts t's elements to float32 into dst.  Returns 0, or ENC_EFORMAT
 * naming the tensor for an F8 dtype (or a dtype outside the enum). */
int st_tensor_read_f32(const st_tensor *t, float *dst, enc_error *err)
{
    const unsigned char *p = t->data;
    const size_t n = t->numel;

    switch (t->dtype) {
    case ST_BOOL:
        for (size_t i = 0; i < n; i++)
            dst[i] = p[i] ? 1.0f : 0.0f;
        break;
    case ST_U8:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)p[i];
        break;
    case ST_I8:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)sign_extend(p[i], 8);
        break;
    case ST_I16:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)sign_extend(load_le16(p + 2 * i), 16);
        break;
    case ST_U16:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)load_le16(p + 2 * i);
        break;
    case ST_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = st_f16_to_f32(load_le16(p + 2 * i));
        break;
    case ST_BF16:
        for (size_t i = 0; i < n; i++)
            dst[i] = st_bf16_to_f32(load_le16(p + 2 * i));
        break;
    case ST_I32:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)sign_extend(load_le32(p + 4 * i), 32);
        break;
    case ST_U32:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)load_le32(p + 4 * i);
        break;
    case ST_F32:
        for (size_t i = 0; i < n; i++)
            dst[i] = f32_from_bits(load_le32(p + 4 * i));
        break;
    case ST_F64:
        for (size_t i = 0; i < n; i++)
            dst[i] = f64_to_f32(f64_from_bits(load_le64(p + 8 * i)));
        break;
    case ST_I64:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)sign_extend(load_le64(p + 8 * i), 64);
        break;
    case ST_U64:
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)load_le64(p + 8 * i);
        break;
    default:
        return enc_error_set(err, ENC_EFORMAT,
                             "tensor '%s' has dtype %s, which cannot be read as F32", t->name,
                             st_dtype_name(t->dtype));
    }
    return ENC_OK;
}

/* ---- header validation -------------------------------------------------- */

/* Formats a shape as "[a, b]" into buf (truncated if it does not fit). */
static void shape_str(char *buf, size_t size, const int64_t *shape, int ndim)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

/* Checks that __metadata__ is an object of string values.  Returns 0 or
 * ENC_EFORMAT. */
static int check_metadata(json_t *meta, enc_error *err)
{
    const char *key;
    json_t *value;
    if (!json_is_object(meta))
        return enc_error_set(err, ENC_EFORMAT, ST_METADATA_KEY " is not an object");
    json_object_foreach(meta, key, value)
    {
        if (!json_is_string(value))
            return enc_error_set(err, ENC_EFORMAT, ST_METADATA_KEY " value '%s' is not a string",
                                 key);
    }
    return ENC_OK;
}

/* True if v is a JSON integer >= 0; stores it in *out. */
static bool get_index(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* Fills t from the header entry `name`: dtype, shape, numel, nbytes, and its
 * data_offsets in *begin.  Checks everything that concerns this tensor alone.
 * Returns 0 or ENC_EFORMAT naming the tensor. */
static int parse_entry(st_tensor *t, const char *name, json_t *entry, size_t data_size,
                       size_t *begin, enc_error *err)
{
    t->name = name;
    if (!json_is_object(entry))
        return enc_error_set(err, ENC_EFORMAT, "tensor '%s' is not an object", name);

    /* dtype */
    json_t *dtype = json_object_get(entry, "dtype");
    if (!dtype)
        return enc_error_set(err, ENC_EFORMAT, "tensor '%s' has no dtype", name);
    if (!json_is_string(dtype))
        return enc_error_set(err, ENC_EFORMAT, "tensor '%s': dtype is not a string", name);
    const char *dtype_s = json_string_value(dtype);
    int d = 0;
    while (d < ST_DTYPE_COUNT && strcmp(dtype_s, dtype_info[d].name) != 0)
        d++;
    if (d == ST_DTYPE_COUNT)
        return enc_error_set(err, ENC_EFORMAT, "tensor '%s' has unknown dtype '%s'", name, dtype_s);
    t->dtype = (st_dtype)d;

    /* shape */
    json_t *shape = json_object_get(entry, "shape");
    if (!shape)
        return enc_error_set(err, ENC_EFORMAT, "tensor '%s' has no shape", name);
    if (!json_is_array(shape))
        return enc_error_set(err, ENC_EFORMAT, "tensor '%s': shape is not an array", name);
    size_t ndim = json_array_size(shape);
    if (ndim > ST_MAX_DIMS)
        return enc_error_set(err, ENC_EFORMAT,
                             "tensor '%s': shape has %zu dimensions, more than %d", name, ndim,
                             ST_MAX_DIMS);
    t->ndim = (int)ndim;
    bool overflow = false;
    size_t numel = 1;
    for (size_t i = 0; i < ndim; i++) {
        uint64_t dim;
        if (!get_index(json_array_get(shape, i), &dim))
            return enc_error_set(err, ENC_EFORMAT,
                                 "tensor '%s': shape[%zu] is not a non-negative integer", name, i);
        t->shape[i] = (int64_t)dim;
        /* As the Rust reader: any partial product past SIZE_MAX is refused,
         * even if a later dimension is 0. */
        if (dim > SIZE_MAX || (dim && numel > SIZE_MAX / dim))
            overflow = true;
        else
            numel *= (size_t)dim;
    }
    size_t esize = dtype_info[t->dtype].size;
    char shape_s[ST_MAX_DIMS * 22 + 4]; /* "[" + ", "-separated 19-digit dims + "]" */
    shape_str(shape_s, sizeof shape_s, t->shape, t->ndim);
    if (overflow || numel > SIZE_MAX / esize)
        return enc_error_set(err, ENC_EFORMAT, "tensor '%s': shape %s of %s is too large", name,
                             shape_s, dtype_s);
    t->numel = numel;
    t->nbytes = numel * esize;

    /* data_offsets */
    json_t *offsets = json_object_get(entry, "data_offsets");
    uint64_t b, e;
    if (!offsets)
        return enc_error_set(err, ENC_EFORMAT, "tensor '%s' has no data_offsets", name);
    if (!json_is_array(offsets) || json_array_size(offsets) != 2 ||
        !get_index(json_array_get(offsets, 0), &b) || !get_index(json_array_get(offsets, 1), &e))
        return enc_error_set(err, ENC_EFORMAT,
                             "tensor '%s': data_offsets is not an array of 2 non-negative integers",
                             name);
    if (b > e)
        return enc_error_set(err, ENC_EFORMAT,
                             "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] begin after end",
                             name, b, e);
    if (e - b != (uint64_t)t->nbytes)
        return enc_error_set(
            err, ENC_EFORMAT,
            "tensor '%s': shape %s of %s needs %zu bytes, data_offsets give %" PRIu64, name,
            shape_s, dtype_s, t->nbytes, e - b);
    if (e > (uint64_t)data_size)
        return enc_error_set(err, ENC_EFORMAT,
                             "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                             "] run past the end of the data section (%zu bytes)",
                             name, b, e, data_size);
    *begin = (size_t)b;
    return ENC_OK;
}

/* A tensor's byte range in the data section, for the coverage check. */
typedef struct st_span {
    size_t begin, end, index;
} st_span;

/* Orders spans by begin, then end (so empty tensors come first), then header
 * position (so the order, and the error reported, never depend on qsort). */
static int span_cmp(const void *pa, const void *pb)
{
    const st_span *a = pa, *b = pb;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Checks that f's tensors tile the data section (data_size bytes at data)
 * exactly: no overlaps, no holes, no trailing bytes.  Returns 0, ENC_EFORMAT
 * naming the tensors or offset at fault, or ENC_ENOMEM. */
static int check_coverage(const st_file *f, const unsigned char *data, size_t data_size,
                          enc_error *err)
{
    int rc = ENC_OK;
    st_span *spans = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *spans);
    if (!spans)
        return enc_error_set(err, ENC_ENOMEM, "out of memory checking %zu tensors", f->n_tensors);
    for (size_t i = 0; i < f->n_tensors; i++) {
        spans[i].begin = (size_t)(f->tensors[i].data - data);
        spans[i].end = spans[i].begin + f->tensors[i].nbytes;
        spans[i].index = i;
    }
    qsort(spans, f->n_tensors, sizeof *spans, span_cmp);

    size_t pos = 0;          /* everything before pos is covered */
    const char *prev = NULL; /* the tensor that ends at pos */
    for (size_t i = 0; i < f->n_tensors; i++) {
        const st_span *s = &spans[i];
        const char *name = f->tensors[s->index].name;
        if (s->begin < pos) {
            if (s->begin == s->end)
                rc = enc_error_set(err, ENC_EFORMAT,
                                   "tensor '%s' (0 bytes at offset %zu) lies inside tensor '%s'",
                                   name, s->begin, prev);
            else
                rc = enc_error_set(err, ENC_EFORMAT, "tensors '%s' and '%s' overlap", prev, name);
            goto done;
        }
        if (s->begin > pos) {
            rc = enc_error_set(err, ENC_EFORMAT,
                               "data section is not fully covered: %zu bytes at offset %zu belong "
                               "to no tensor",
                               s->begin - pos, pos);
            goto done;
        }
        pos = s->end;
        prev = name;
    }
    if (pos < data_size)
        rc = enc_error_set(err, ENC_EFORMAT,
                           "data section is not fully covered: %zu bytes at offset %zu belong to "
                           "no tensor",
                           data_size - pos, pos);
done:
    free(spans);
    return rc;
}

/* Validates size bytes at bytes into f (which starts zeroed), leaving what it
 * allocated in f for st_close.  Returns 0 or a negative enc_status. */
static int parse_into(st_file *f, const unsigned char *bytes, size_t size, enc_error *err)
{
    f->bytes = bytes;
    f->size = size;
    if (size < 8)
        return enc_error_set(err, ENC_EFORMAT,
                             "file is %zu bytes, shorter than the 8-byte header length", size);
    uint64_t n = load_le64(bytes);
    if (n > ST_MAX_HEADER)
        return enc_error_set(err, ENC_EFORMAT,
                             "header length %" PRIu64 " is over the limit of %u bytes", n,
                             ST_MAX_HEADER);
    if (n > size - 8)
        return enc_error_set(err, ENC_EFORMAT,
                             "header length %" PRIu64 " runs past the end of the file (size %zu)",
                             n, size);

    json_error_t jerr;
    f->header = json_loadb((const char *)bytes + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!f->header)
        return enc_error_set(err, ENC_EFORMAT,
                             "header is not valid JSON: %s (line %d, column %d, byte %d)",
                             jerr.text, jerr.line, jerr.column, jerr.position);
    if (!json_is_object(f->header))
        return enc_error_set(err, ENC_EFORMAT, "header is not a JSON object");

    size_t count = json_object_size(f->header);
    f->tensors = calloc(count ? count : 1, sizeof *f->tensors);
    if (!f->tensors)
        return enc_error_set(err, ENC_ENOMEM, "out of memory for %zu tensors", count);

    const unsigned char *data = bytes + 8 + n;
    size_t data_size = size - 8 - (size_t)n;
    const char *name;
    json_t *entry;
    json_object_foreach(f->header, name, entry)
    {
        int rc;
        if (strcmp(name, ST_METADATA_KEY) == 0) {
            if ((rc = check_metadata(entry, err)) < 0)
                return rc;
            continue;
        }
        size_t begin = 0;
        st_tensor *t = &f->tensors[f->n_tensors];
        if ((rc = parse_entry(t, name, entry, data_size, &begin, err)) < 0)
            return rc;
        t->data = data + begin;
        f->n_tensors++;
    }
    return check_coverage(f, data, data_size, err);
}

/* Validates size bytes at buf (borrowed) into f.  Returns 0, or a negative
 * enc_status with err set and f closed. */
int st_parse(st_file *f, const void *buf, size_t size, enc_error *err)
{
    memset(f, 0, sizeof *f);
    int rc = parse_into(f, buf, size, err);
    if (rc < 0)
        st_close(f);
    return rc;
}

/* Maps path read-only and validates it into f.  Returns 0, ENC_EIO (message
 * with path and strerror) if it cannot be opened, stat'ed or mapped, or the
 * st_parse status; on failure f is closed. */
int st_open(st_file *f, const char *path, enc_error *err)
{
    int rc;
    int fd = -1;
    void *map = MAP_FAILED;
    size_t size = 0;
    struct stat st;

    memset(f, 0, sizeof *f);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = enc_error_set(err, ENC_EIO, "cannot open '%s': %s", path, strerror(errno));
        goto error;
    }
    if (fstat(fd, &st) < 0) {
        rc = enc_error_set(err, ENC_EIO, "cannot stat '%s': %s", path, strerror(errno));
        goto error;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = enc_error_set(err, ENC_EIO, "cannot read '%s': not a regular file", path);
        goto error;
    }
    if ((uintmax_t)st.st_size > SIZE_MAX) {
        rc = enc_error_set(err, ENC_EIO, "cannot map '%s': %s", path, strerror(EFBIG));
        goto error;
    }
    size = (size_t)st.st_size;
    if (size == 0) {
        /* mmap refuses 0 bytes; the format check gives the real reason. */
        static const unsigned char empty[1];
        rc = st_parse(f, empty, 0, err);
        goto error;
    }
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        rc = enc_error_set(err, ENC_EIO, "cannot map '%s': %s", path, strerror(errno));
        goto error;
    }
    if ((rc = parse_into(f, map, size, err)) < 0)
        goto error;
    f->map = map;
    f->map_size = size;
    f->fd = fd;
    return ENC_OK;

error:
    st_close(f); /* before munmap: f may point into the mapping */
    if (map != MAP_FAILED)
        munmap(map, size);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Frees the header and tensor table, unmaps the file and zeroes f. */
void st_close(st_file *f)
{
    if (!f)
        return;
    json_decref(f->header);
    free(f->tensors);
    if (f->map) {
        munmap(f->map, f->map_size);
        close(f->fd);
    }
    memset(f, 0, sizeof *f);
}

void st_release(const st_file *f, const st_tensor *t)
{
    st_release_bytes(f, t->data, t->nbytes);
}

void st_release_bytes(const st_file *f, const void *p, size_t n)
{
    if (!f->map || n == 0)
        return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    const uintptr_t hi = ((uintptr_t)p + n) & ~(page - 1);
    if (hi > lo) /* a hint: the mapping is read-only and private, nothing is lost */
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* The tensor called name, or NULL (a linear scan: files hold few tensors). */
const st_tensor *st_find(const st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

/* The string value of key in __metadata__, or NULL if there is no such key
 * (or no header).  Borrowed until st_close. */
const char *st_metadata(const st_file *f, const char *key)
{
    json_t *meta = f->header ? json_object_get(f->header, ST_METADATA_KEY) : NULL;
    return json_string_value(json_object_get(meta, key));
}
