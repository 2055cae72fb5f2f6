/* v2_util.h - what the Open Inference Protocol suites share (v2_util.c):
 * request bodies written byte by byte (JSON, then Triton's binary tensor
 * data, little-endian whatever the host's order), the 2 x 4 input they
 * carry, and the malformed requests that check_v2_codec.c sends through the
 * codec and check_v2.c through the daemon. */
#ifndef ATTND_TESTS_V2_UTIL_H
#define ATTND_TESTS_V2_UTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A growing byte buffer for request bodies. */
typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
} bytes;

static inline void put(bytes *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static inline void put_str(bytes *b, const char *s)
{
    put(b, s, strlen(s));
}

/* A 32-bit value, little-endian, whatever the host's order. */
static inline void put_le32(bytes *b, uint32_t u)
{
    unsigned char c[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                          (unsigned char)(u >> 24)};
    put(b, c, 4);
}

static inline void put_f32(bytes *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    put_le32(b, u);
}

static inline float get_f32(const unsigned char *c)
{
    uint32_t u = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A 2 x 4 input and its JSON text. */
extern const float X8[8];
#define X8_JSON "[0.5,-1,0.25,2,1.5,0,-0.5,1]"
#define EMB_JSON                                                                                   \
    "{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],\"data\":" X8_JSON "}"
#define EMB_BIN                                                                                    \
    "{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,2,4],"                            \
    "\"parameters\":{\"binary_data_size\":32}}"

#define INFER(inputs)       "{\"inputs\":[" inputs "]}"
#define WITH_PARAMS(params) "{\"inputs\":[" EMB_JSON "],\"parameters\":{" params "}}"
#define WITH_OUTPUTS(outs)  "{\"inputs\":[" EMB_JSON "],\"outputs\":[" outs "]}"
#define LEN_IN(dtype, shape, data)                                                                 \
    "{\"name\":\"lengths\",\"datatype\":\"" dtype "\",\"shape\":" shape ",\"data\":" data "}"
#define EMB_IN(dtype, shape, data)                                                                 \
    "{\"name\":\"embeddings\",\"datatype\":\"" dtype "\",\"shape\":" shape ",\"data\":" data "}"

/* A malformed request and what the protocol answers to it. */
typedef struct bad_case {
    const char *json;   /* the JSON header */
    const char *header; /* Inference-Header-Content-Length: NULL none, "" the JSON's length */
    int floats;         /* float32 values of X8 (cycled) after the JSON */
    int extra;          /* bytes more (0xab) */
    int nan_at;         /* >= 0: that float is NaN */
    int status;
    const char *want; /* in the error message */
} bad_case;

/* The malformed requests, N_BAD of them. */
extern const bad_case bad_cases[];
extern const int N_BAD;

/* The body of a bad case into *b, and its header value in hl (NULL: no
 * header). */
const char *bad_body(const bad_case *c, bytes *b, char hl[32]);

#endif
