/* check_safetensors.c - the safetensors reader against the fixtures of
 * tools/fixtures/make_bad_safetensors.py: every good file read back and compared with
 * good/expected.json, every bad file refused with the message in
 * bad/expected.json, plus the in-memory parser and the half-float widening. */
#include "load/safetensors.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FIXTURES TESTS_DIR "/fixtures/safetensors"

/* ---- helpers ---------------------------------------------------------------- */

/* FIXTURES/dir/file into path. */
static void fixture_path(char *path, size_t size, const char *dir, const char *file)
{
    int n = snprintf(path, size, FIXTURES "/%s/%s", dir, file);
    ck_assert_msg(n > 0 && (size_t)n < size, "fixture path too long: %s/%s", dir, file);
}

/* FIXTURES/dir/expected.json, parsed; fails the test if it cannot be read.
 * Returns an owned reference. */
static json_t *load_expected(const char *dir)
{
    char path[1024];
    json_error_t jerr;
    fixture_path(path, sizeof path, dir, "expected.json");
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    ck_assert_msg(j != NULL, "cannot load %s: %s (run tools/fixtures/make_bad_safetensors.py)",
                  path, jerr.text);
    ck_assert_msg(json_is_object(j) && json_object_size(j) > 0, "%s: not a non-empty object", path);
    return j;
}

/* Entries in FIXTURES/dir/expected.json, for sizing loop tests; 1 if it cannot
 * be read, so the loop test runs once and reports why. */
static int count_expected(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, FIXTURES "/%s/expected.json", dir);
    json_t *j = json_load_file(path, 0, NULL);
    size_t n = json_is_object(j) ? json_object_size(j) : 0;
    json_decref(j);
    return n ? (int)n : 1;
}

/* The i-th key of object o (in file order) and its value (borrowed). */
static const char *nth_entry(json_t *o, int i, json_t **value)
{
    void *it = json_object_iter(o);
    for (int k = 0; k < i && it; k++)
        it = json_object_iter_next(o, it);
    ck_assert_msg(it != NULL, "expected.json has no entry %d", i);
    *value = json_object_iter_value(it);
    return json_object_iter_key(it);
}

/* The whole file at path in a malloc'd buffer (owned, size+1 bytes). */
static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "cannot open %s: %s", path, strerror(errno));
    ck_assert_int_eq(fseek(fp, 0, SEEK_END), 0);
    long n = ftell(fp);
    ck_assert_int_ge(n, 0);
    rewind(fp);
    unsigned char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *size = (size_t)n;
    return buf;
}

/* True if every field of f is zero, as st_close and failed opens leave it. */
static int is_closed(const st_file *f)
{
    return f->map == NULL && f->map_size == 0 && f->bytes == NULL && f->size == 0 &&
           f->header == NULL && f->tensors == NULL && f->n_tensors == 0;
}

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Checks got against an expected.json value: a number, "inf", "-inf" or "nan".
 * Numbers must match exactly, including the sign of zero. */
static void check_value(const char *where, size_t i, const json_t *want, float got)
{
    if (json_is_string(want)) {
        const char *s = json_string_value(want);
        if (strcmp(s, "nan") == 0)
            ck_assert_msg(isnan(got), "%s[%zu] = %a, expected nan", where, i, (double)got);
        else if (strcmp(s, "inf") == 0)
            ck_assert_msg(isinf(got) && got > 0, "%s[%zu] = %a, expected inf", where, i,
                          (double)got);
        else if (strcmp(s, "-inf") == 0)
            ck_assert_msg(isinf(got) && got < 0, "%s[%zu] = %a, expected -inf", where, i,
                          (double)got);
        else
            ck_abort_msg("%s[%zu]: bad expected value '%s'", where, i, s);
        return;
    }
    ck_assert_msg(json_is_number(want), "%s[%zu]: expected value is not a number", where, i);
    float w = (float)json_number_value(want);
    ck_assert_msg(f32_bits(got) == f32_bits(w), "%s[%zu] = %a, expected %a", where, i, (double)got,
                  (double)w);
}

/* ---- good files --------------------------------------------------------------- */

/* Checks one tensor of a good file against its expected.json entry. */
static void check_tensor(const char *file, const st_file *f, size_t index, json_t *want)
{
    const st_tensor *t = &f->tensors[index];
    const char *name = json_string_value(json_object_get(want, "name"));
    char where[512];
    snprintf(where, sizeof where, "%s: tensor '%s'", file, name);

    /* header order, and st_find finds this very entry */
    ck_assert_ptr_nonnull(name);
    ck_assert_msg(strcmp(t->name, name) == 0, "%s: tensor %zu is '%s', expected '%s'", file, index,
                  t->name, name);
    ck_assert_ptr_eq(st_find(f, name), t);

    const char *dtype = json_string_value(json_object_get(want, "dtype"));
    ck_assert_msg(strcmp(st_dtype_name(t->dtype), dtype) == 0, "%s: dtype %s, expected %s", where,
                  st_dtype_name(t->dtype), dtype);

    json_t *shape = json_object_get(want, "shape");
    ck_assert_msg((size_t)t->ndim == json_array_size(shape), "%s: ndim %d, expected %zu", where,
                  t->ndim, json_array_size(shape));
    size_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        json_int_t dim = json_integer_value(json_array_get(shape, (size_t)d));
        ck_assert_msg(t->shape[d] == dim, "%s: shape[%d] = %lld, expected %lld", where, d,
                      (long long)t->shape[d], (long long)dim);
        numel *= (size_t)dim;
    }
    ck_assert_uint_eq(t->numel, numel);
    ck_assert_uint_eq(t->nbytes, numel * st_dtype_size(t->dtype));
    ck_assert_msg(t->data >= f->bytes && t->data + t->nbytes <= f->bytes + f->size,
                  "%s: data outside the file", where);

    /* one float past the end, to catch a write past numel */
    float *buf = malloc((numel + 1) * sizeof *buf);
    ck_assert_ptr_nonnull(buf);
    buf[numel] = 1234.5f;
    enc_error err = {0};
    int rc = st_tensor_read_f32(t, buf, &err);

    json_t *read_error = json_object_get(want, "read_error");
    if (read_error) {
        ck_assert_msg(rc == ENC_EFORMAT, "%s: read gave %d, expected ENC_EFORMAT", where, rc);
        ck_assert_int_eq(err.status, ENC_EFORMAT);
        ck_assert_msg(strstr(err.message, json_string_value(read_error)) != NULL,
                      "%s: message \"%s\" lacks \"%s\"", where, err.message,
                      json_string_value(read_error));
    } else {
        json_t *values = json_object_get(want, "values");
        ck_assert_msg(rc == 0, "%s: read failed: %s", where, err.message);
        ck_assert_int_eq(err.status, ENC_OK);
        ck_assert_uint_eq(json_array_size(values), numel);
        for (size_t i = 0; i < numel; i++)
            check_value(where, i, json_array_get(values, i), buf[i]);
    }
    ck_assert_msg(buf[numel] == 1234.5f, "%s: read wrote past numel", where);
    free(buf);
}

START_TEST(test_good_file)
{
    json_t *expected = load_expected("good");
    json_t *entry;
    const char *file = nth_entry(expected, _i, &entry);
    char path[1024];
    fixture_path(path, sizeof path, "good", file);

    st_file f;
    memset(&f, 0xa5, sizeof f); /* st_open must not depend on what f held */
    enc_error err = {0};
    int rc = st_open(&f, path, &err);
    ck_assert_msg(rc == 0, "%s: st_open failed: %s", file, err.message);
    ck_assert_int_eq(err.status, ENC_OK);
    ck_assert_str_eq(err.message, "");

    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(f.size, (size_t)st.st_size);
    ck_assert_uint_eq(f.map_size, f.size);
    ck_assert_ptr_nonnull(f.map);
    ck_assert_ptr_eq(f.bytes, f.map);

    json_t *tensors = json_object_get(entry, "tensors");
    ck_assert_msg(f.n_tensors == json_array_size(tensors), "%s: %zu tensors, expected %zu", file,
                  f.n_tensors, json_array_size(tensors));
    for (size_t i = 0; i < f.n_tensors; i++)
        check_tensor(file, &f, i, json_array_get(tensors, i));

    ck_assert_ptr_null(st_find(&f, "no.such.tensor"));
    ck_assert_ptr_null(st_find(&f, "__metadata__"));
    ck_assert_ptr_null(st_metadata(&f, "no-such-key"));
    json_t *meta = json_object_get(entry, "metadata");
    const char *key;
    json_t *value;
    json_object_foreach(meta, key, value)
    {
        const char *got = st_metadata(&f, key);
        ck_assert_msg(got != NULL, "%s: no metadata '%s'", file, key);
        ck_assert_str_eq(got, json_string_value(value));
    }

    st_close(&f);
    ck_assert(is_closed(&f));
    st_close(&f); /* twice is safe */
    ck_assert(is_closed(&f));
    json_decref(expected);
}
END_TEST

/* ---- bad files ------------------------------------------------------------------ */

START_TEST(test_bad_file)
{
    json_t *expected = load_expected("bad");
    json_t *entry;
    const char *file = nth_entry(expected, _i, &entry);
    const char *want = json_string_value(entry);
    ck_assert_msg(want != NULL && *want, "%s: expected message is not a string", file);
    char path[1024];
    fixture_path(path, sizeof path, "bad", file);

    st_file f;
    memset(&f, 0xa5, sizeof f);
    enc_error err = {0};
    int rc = st_open(&f, path, &err);
    ck_assert_msg(rc == ENC_EFORMAT, "%s: st_open returned %d (%s), expected ENC_EFORMAT", file, rc,
                  err.message);
    ck_assert_int_eq(err.status, ENC_EFORMAT);
    ck_assert_msg(strstr(err.message, want) != NULL, "%s: message \"%s\" lacks \"%s\"", file,
                  err.message, want);
    ck_assert_msg(is_closed(&f), "%s: failed st_open left f open", file);
    st_close(&f);
    st_close(&f);
    ck_assert(is_closed(&f));

    /* st_parse over the same bytes says the same. */
    size_t size;
    unsigned char *buf = slurp(path, &size);
    enc_error err2 = {0};
    rc = st_parse(&f, buf, size, &err2);
    ck_assert_int_eq(rc, ENC_EFORMAT);
    ck_assert_str_eq(err2.message, err.message);
    ck_assert(is_closed(&f));
    free(buf);
    json_decref(expected);
}
END_TEST

/* Every fixture file has an expected.json entry (a forgotten one would go
 * untested), and every entry has its file. */
static void check_listing(const char *dir)
{
    char path[1024];
    json_t *expected = load_expected(dir);
    fixture_path(path, sizeof path, dir, "");
    DIR *d = opendir(path);
    ck_assert_msg(d != NULL, "cannot list %s: %s", path, strerror(errno));
    size_t files = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 12 || strcmp(de->d_name + n - 12, ".safetensors") != 0)
            continue;
        files++;
        ck_assert_msg(json_object_get(expected, de->d_name) != NULL,
                      "%s/%s has no entry in expected.json", dir, de->d_name);
    }
    closedir(d);
    ck_assert_uint_eq(files, json_object_size(expected));
    json_decref(expected);
}

START_TEST(test_listings_complete)
{
    check_listing("good");
    check_listing("bad");
    check_listing("model");
}
END_TEST

/* ---- model files: valid at the format level ---------------------------------- */

START_TEST(test_model_file_format_valid)
{
    json_t *expected = load_expected("model");
    json_t *entry;
    const char *file = nth_entry(expected, _i, &entry);
    char path[1024];
    fixture_path(path, sizeof path, "model", file);

    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s: %s", file, err.message);
    ck_assert_uint_ge(f.n_tensors, 11);
    for (size_t i = 0; i < f.n_tensors; i++) {
        const st_tensor *t = &f.tensors[i];
        float *buf = malloc((t->numel ? t->numel : 1) * sizeof *buf);
        ck_assert_ptr_nonnull(buf);
        ck_assert_msg(st_tensor_read_f32(t, buf, &err) == 0, "%s: %s", file, err.message);
        free(buf);
    }
    st_close(&f);
    json_decref(expected);
}
END_TEST

START_TEST(test_model_valid_contents)
{
    char path[1024];
    fixture_path(path, sizeof path, "model", "valid.safetensors");
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(f.n_tensors, 12);

    const st_tensor *w = st_find(&f, "self_attn.in_proj_weight");
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(w->dtype, ST_F32);
    ck_assert_int_eq(w->ndim, 2);
    ck_assert_int_eq(w->shape[0], 12);
    ck_assert_int_eq(w->shape[1], 4);

    const st_tensor *g = st_find(&f, "norm2.weight");
    ck_assert_ptr_nonnull(g);
    float buf[4];
    ck_assert_int_eq(st_tensor_read_f32(g, buf, &err), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(buf[i], 1.0f);
    st_close(&f);

    fixture_path(path, sizeof path, "model", "nan_value.safetensors");
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s", err.message);
    const st_tensor *b = st_find(&f, "linear2.bias");
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(st_tensor_read_f32(b, buf, &err), 0);
    ck_assert(isfinite(buf[0]) && isfinite(buf[1]) && isfinite(buf[2]));
    ck_assert(isnan(buf[3]));
    st_close(&f);
}
END_TEST

/* ---- the API directly ---------------------------------------------------------- */

/* A one-tensor file in memory at an odd address, so no read may assume
 * alignment; st_parse borrows it without copying. */
START_TEST(test_parse_memory)
{
    static const char hdr[] = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                              "\"__metadata__\":{\"k\":\"v\"},"
                              "\"h\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[8,10]}}";
    static const unsigned char data[10] = {0x00, 0x00, 0x80, 0x3f, /* 1.0f */
                                           0x00, 0x00, 0x00, 0xc0, /* -2.0f */
                                           0x00, 0x3c};            /* f16 1.0 */
    const size_t n = sizeof hdr - 1, size = 8 + n + sizeof data;
    unsigned char *buf = malloc(size + 1);
    ck_assert_ptr_nonnull(buf);
    unsigned char *p = buf + 1;
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(p + 8, hdr, n);
    memcpy(p + 8 + n, data, sizeof data);

    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_parse(&f, p, size, &err) == 0, "%s", err.message);
    ck_assert_ptr_null(f.map);
    ck_assert_ptr_eq(f.bytes, p);
    ck_assert_uint_eq(f.size, size);
    ck_assert_uint_eq(f.n_tensors, 2);
    ck_assert_str_eq(f.tensors[0].name, "x");
    ck_assert_str_eq(f.tensors[1].name, "h");

    const st_tensor *x = st_find(&f, "x");
    ck_assert_ptr_eq(x, &f.tensors[0]);
    ck_assert_ptr_eq(x->data, p + 8 + n); /* zero-copy */
    float out[2];
    ck_assert_int_eq(st_tensor_read_f32(x, out, &err), 0);
    ck_assert_float_eq(out[0], 1.0f);
    ck_assert_float_eq(out[1], -2.0f);
    const st_tensor *h = st_find(&f, "h");
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(st_tensor_read_f32(h, out, &err), 0);
    ck_assert_float_eq(out[0], 1.0f);
    ck_assert_str_eq(st_metadata(&f, "k"), "v");
    st_close(&f);
    ck_assert(is_closed(&f));

    /* The same bytes one short: refused, and f left closed. */
    ck_assert_int_eq(st_parse(&f, p, size - 1, &err), ENC_EFORMAT);
    ck_assert_str_eq(err.message,
                     "tensor 'h': data_offsets [8, 10] run past the end of the data section "
                     "(9 bytes)");
    ck_assert(is_closed(&f));

    /* Nothing at all. */
    enc_error err2 = {0};
    ck_assert_int_eq(st_parse(&f, p, 0, &err2), ENC_EFORMAT);
    ck_assert_str_eq(err2.message, "file is 0 bytes, shorter than the 8-byte header length");
    st_close(&f);
    free(buf);
}
END_TEST

START_TEST(test_missing_path)
{
    const char *path = FIXTURES "/no/such/file.safetensors";
    st_file f;
    memset(&f, 0xa5, sizeof f);
    enc_error err = {0};
    ck_assert_int_eq(st_open(&f, path, &err), ENC_EIO);
    ck_assert_int_eq(err.status, ENC_EIO);
    ck_assert_msg(strstr(err.message, path) != NULL, "\"%s\" does not name the path", err.message);
    ck_assert_msg(strstr(err.message, strerror(ENOENT)) != NULL, "\"%s\" lacks the reason",
                  err.message);
    ck_assert(is_closed(&f));
    st_close(&f);
}
END_TEST

START_TEST(test_directory_path)
{
    const char *path = FIXTURES "/good";
    st_file f;
    enc_error err = {0};
    ck_assert_int_eq(st_open(&f, path, &err), ENC_EIO);
    ck_assert_msg(strstr(err.message, path) != NULL, "\"%s\" does not name the path", err.message);
    ck_assert_msg(strstr(err.message, "not a regular file") != NULL, "\"%s\"", err.message);
    ck_assert(is_closed(&f));
}
END_TEST

START_TEST(test_close_zeroed)
{
    st_file f = {0};
    st_close(&f);
    st_close(&f);
    ck_assert(is_closed(&f));
    ck_assert_ptr_null(st_find(&f, "x"));
    ck_assert_ptr_null(st_metadata(&f, "x"));
    st_close(NULL);
}
END_TEST

START_TEST(test_dtype_table)
{
    static const struct {
        st_dtype d;
        const char *name;
        size_t size;
    } v[] = {
        {ST_BOOL, "BOOL", 1}, {ST_U8, "U8", 1},           {ST_I8, "I8", 1},
        {ST_I16, "I16", 2},   {ST_U16, "U16", 2},         {ST_F16, "F16", 2},
        {ST_BF16, "BF16", 2}, {ST_I32, "I32", 4},         {ST_U32, "U32", 4},
        {ST_F32, "F32", 4},   {ST_F64, "F64", 8},         {ST_I64, "I64", 8},
        {ST_U64, "U64", 8},   {ST_F8_E4M3, "F8_E4M3", 1}, {ST_F8_E5M2, "F8_E5M2", 1},
    };
    ck_assert_uint_eq(sizeof v / sizeof v[0], ST_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        ck_assert_str_eq(st_dtype_name(v[i].d), v[i].name);
        ck_assert_uint_eq(st_dtype_size(v[i].d), v[i].size);
    }
    ck_assert_str_eq(st_dtype_name(ST_DTYPE_COUNT), "?");
    ck_assert_uint_eq(st_dtype_size(ST_DTYPE_COUNT), 0);
}
END_TEST

/* ---- half-precision widening ---------------------------------------------------- */

/* An IEEE half's value by arithmetic, independent of st_f16_to_f32's bit
 * manipulation: subnormals m * 2^-24, normals (1024 + m) * 2^(e - 25). */
static float f16_reference(unsigned h)
{
    unsigned e = (h >> 10) & 31u, m = h & 1023u;
    double v;
    if (e == 0)
        v = ldexp((double)m, -24);
    else if (e == 31)
        v = INFINITY; /* NaNs are checked apart */
    else
        v = ldexp(1024.0 + m, (int)e - 25);
    return (float)((h & 0x8000u) ? -v : v);
}

START_TEST(test_f16_all_patterns)
{
    for (unsigned h = 0; h <= 0xffffu; h++) {
        float got = st_f16_to_f32((uint16_t)h);
        unsigned e = (h >> 10) & 31u, m = h & 1023u;
        if (e == 31 && m != 0) {
            /* NaN: sign and payload kept, in the float's top mantissa bits */
            uint32_t want = (uint32_t)(h & 0x8000u) << 16 | 0x7f800000u | (uint32_t)m << 13;
            EXPECT(isnan(got), "f16 0x%04x gave %a, expected NaN", h, (double)got);
            EXPECT(f32_bits(got) == want, "f16 0x%04x gave bits 0x%08x, expected 0x%08x", h,
                   (unsigned)f32_bits(got), (unsigned)want);
            continue;
        }
        float want = f16_reference(h);
        EXPECT(f32_bits(got) == f32_bits(want), "f16 0x%04x gave %a, expected %a", h, (double)got,
               (double)want);
    }
    ck_assert_float_eq(st_f16_to_f32(0x0001), 0x1p-24f);
    ck_assert_float_eq(st_f16_to_f32(0x03ff), 0x1.ff8p-15f);
    ck_assert_float_eq(st_f16_to_f32(0x7bff), 65504.0f);
    ck_assert_float_eq(st_f16_to_f32(0x3c00), 1.0f);
    ck_assert(signbit(st_f16_to_f32(0x8000)) && st_f16_to_f32(0x8000) == 0.0f);
    ck_assert(isinf(st_f16_to_f32(0xfc00)) && st_f16_to_f32(0xfc00) < 0);
}
END_TEST

START_TEST(test_bf16_all_patterns)
{
    for (unsigned b = 0; b <= 0xffffu; b++) {
        float got = st_bf16_to_f32((uint16_t)b);
        EXPECT(f32_bits(got) == (uint32_t)b << 16, "bf16 0x%04x gave bits 0x%08x", b,
               (unsigned)f32_bits(got));
    }
    ck_assert_float_eq(st_bf16_to_f32(0x3f80), 1.0f);
    ck_assert_float_eq(st_bf16_to_f32(0x4049), 3.140625f);
    ck_assert_float_eq(st_bf16_to_f32(0xc000), -2.0f);
}
END_TEST

Suite *safetensors_suite(void)
{
    Suite *s = timed_suite("safetensors");

    TCase *files = timed_case(s, "fixtures", 60);
    tcase_add_loop_test(files, test_good_file, 0, count_expected("good"));
    tcase_add_loop_test(files, test_bad_file, 0, count_expected("bad"));
    tcase_add_loop_test(files, test_model_file_format_valid, 0, count_expected("model"));
    tcase_add_test(files, test_model_valid_contents);
    tcase_add_test(files, test_listings_complete);

    TCase *api = timed_case(s, "api", 60);
    tcase_add_test(api, test_parse_memory);
    tcase_add_test(api, test_missing_path);
    tcase_add_test(api, test_directory_path);
    tcase_add_test(api, test_close_zeroed);
    tcase_add_test(api, test_dtype_table);
    tcase_add_test(api, test_f16_all_patterns);
    tcase_add_test(api, test_bf16_all_patterns);
    return s;
}
