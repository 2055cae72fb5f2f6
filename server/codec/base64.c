/* base64.c - RFC 4648 base64 (base64.h). */
#include "codec/base64.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char B64_ALPHABET[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The two characters of every 12 bits (built from B64_ALPHABET on first use):
 * one table read per two output characters. */
static char b64_pairs[4096][2];
static pthread_once_t b64_pairs_once = PTHREAD_ONCE_INIT;

static void b64_pairs_init(void)
{
    for (unsigned v = 0; v < 4096; v++) {
        b64_pairs[v][0] = B64_ALPHABET[v >> 6];
        b64_pairs[v][1] = B64_ALPHABET[v & 63];
    }
}

/* AVX-512 VBMI loops for the bulk of both directions (W. Mula and D.
 * Lemire, "Base64 encoding and decoding at almost the speed of a memory
 * copy", 2019): 48 bytes <-> 64 characters per step with byte permutes, about
 * 8x the table loops below, which do the rest (and everything on CPUs
 * without VBMI, or under valgrind). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define B64_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

static atomic_bool vbmi_allowed = true; /* base64_set_vbmi */

static bool b64_vbmi(void)
{
    if (!atomic_load_explicit(&vbmi_allowed, memory_order_relaxed))
        return false;
    static atomic_int has = -1; /* not asked yet */
    int h = atomic_load_explicit(&has, memory_order_relaxed);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
        atomic_store_explicit(&has, h, memory_order_relaxed);
    }
    return h;
}

/* Encodes whole 48-byte steps while 64 source bytes can be loaded; returns
 * the bytes consumed (4/3 as many characters written). */
B64_VBMI static size_t b64_encode_vbmi(const unsigned char *src, size_t n, char *dst)
{
    /* each 32-bit lane gets source bytes 1 0 2 1 of its 3-byte group, so
     * that the four 6-bit fields sit at bit offsets 10, 4, 22, 16 (+ 32) */
    const __m512i gather =
        _mm512_setr_epi32(0x01020001, 0x04050304, 0x07080607, 0x0a0b090a, 0x0d0e0c0d, 0x10110f10,
                          0x13141213, 0x16171516, 0x191a1819, 0x1c1d1b1c, 0x1f201e1f, 0x22232122,
                          0x25262425, 0x28292728, 0x2b2c2a2b, 0x2e2f2d2e);
    const __m512i shifts = _mm512_set1_epi64(0x3036242a1016040a);
    const __m512i alphabet = _mm512_loadu_si512((const void *)B64_ALPHABET);
    size_t i = 0;
    for (; i + 64 <= n; i += 48, dst += 64) {
        const __m512i in = _mm512_permutexvar_epi8(gather, _mm512_loadu_si512(src + i));
        const __m512i idx = _mm512_multishift_epi64_epi8(shifts, in);
        _mm512_storeu_si512(dst, _mm512_permutexvar_epi8(idx, alphabet));
    }
    return i;
}

/* Decodes whole 64-character steps while the 64-byte store fits in cap and
 * the final group (which may hold padding) is left over; stops before a
 * step holding a non-alphabet character.  Returns the characters consumed
 * (3/4 as many bytes written). */
B64_VBMI static size_t b64_decode_vbmi(const unsigned char *s, size_t len, unsigned char *out,
                                       size_t cap)
{
    /* values of ASCII 0..127: 6 bits, or 0x80 for a character outside the
     * alphabet (the input's own high bit catches 128..255) */
    unsigned char table[128];
    memset(table, 0x80, sizeof table);
    for (unsigned v = 0; v < 64; v++)
        table[(unsigned char)B64_ALPHABET[v]] = (unsigned char)v;
    const __m512i lo = _mm512_loadu_si512(table), hi = _mm512_loadu_si512(table + 64);
    const __m512i pack = _mm512_set_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60, 61, 62,
                                         56, 57, 58, 52, 53, 54, 48, 49, 50, 44, 45, 46, 40, 41, 42,
                                         36, 37, 38, 32, 33, 34, 28, 29, 30, 24, 25, 26, 20, 21, 22,
                                         16, 17, 18, 12, 13, 14, 8, 9, 10, 4, 5, 6, 0, 1, 2);
    size_t i = 0, o = 0;
    for (; i + 64 < len && o + 64 <= cap; i += 64, o += 48) {
        const __m512i in = _mm512_loadu_si512(s + i);
        const __m512i v = _mm512_permutex2var_epi8(lo, in, hi);
        if (_mm512_movepi8_mask(_mm512_or_si512(v, in)))
            break;
        /* 4 x 6 bits -> 24 bits per 32-bit lane, then 3 bytes of each lane */
        const __m512i ab = _mm512_maddubs_epi16(v, _mm512_set1_epi32(0x01400140));
        const __m512i abcd = _mm512_madd_epi16(ab, _mm512_set1_epi32(0x00011000));
        _mm512_storeu_si512(out + o, _mm512_permutexvar_epi8(pack, abcd));
    }
    return i;
}
#else
static atomic_bool vbmi_allowed = true;

static bool b64_vbmi(void)
{
    return false;
}

static size_t b64_encode_vbmi(const unsigned char *src, size_t n, char *dst)
{
    (void)src, (void)n, (void)dst;
    return 0;
}

static size_t b64_decode_vbmi(const unsigned char *s, size_t len, unsigned char *out, size_t cap)
{
    (void)s, (void)len, (void)out, (void)cap;
    return 0;
}
#endif

/* Encodes n bytes (n a multiple of 3, or the final piece) to dst: 4 chars
 * per 3 bytes, '=' padding on a short final group.  Returns chars written. */
size_t base64_encode_block(const unsigned char *src, size_t n, char *dst)
{
    pthread_once(&b64_pairs_once, b64_pairs_init);
    size_t i = b64_vbmi() ? b64_encode_vbmi(src, n, dst) : 0, o = i / 3 * 4;
    for (; i + 3 <= n; i += 3, o += 4) {
        const unsigned v = (unsigned)src[i] << 16 | (unsigned)src[i + 1] << 8 | src[i + 2];
        memcpy(dst + o, b64_pairs[v >> 12], 2);
        memcpy(dst + o + 2, b64_pairs[v & 4095], 2);
    }
    if (n - i == 1) {
        unsigned v = (unsigned)src[i] << 16;
        dst[o++] = B64_ALPHABET[v >> 18 & 63];
        dst[o++] = B64_ALPHABET[v >> 12 & 63];
        dst[o++] = '=';
        dst[o++] = '=';
    } else if (n - i == 2) {
        unsigned v = (unsigned)src[i] << 16 | (unsigned)src[i + 1] << 8;
        dst[o++] = B64_ALPHABET[v >> 18 & 63];
        dst[o++] = B64_ALPHABET[v >> 12 & 63];
        dst[o++] = B64_ALPHABET[v >> 6 & 63];
        dst[o++] = '=';
    }
    return o;
}

/* Bytes that len characters of base64 decode to (len a multiple of 4),
 * assuming the padding is well placed (decoding checks it). */
size_t base64_decoded_size(const char *s, size_t len)
{
    size_t n = len / 4 * 3;
    if (len >= 4 && s[len - 1] == '=')
        n -= (s[len - 2] == '=') ? 2 : 1;
    return n;
}

/* Each character's 6 bits, or B64_BAD: the table both decoding loops
 * read (built from B64_ALPHABET on first use). */
#define B64_BAD 0x100u
static uint16_t b64_table[256];
static pthread_once_t b64_table_once = PTHREAD_ONCE_INIT;

static void b64_table_init(void)
{
    for (int c = 0; c < 256; c++)
        b64_table[c] = B64_BAD;
    for (unsigned v = 0; v < 64; v++)
        b64_table[(unsigned char)B64_ALPHABET[v]] = (uint16_t)v;
}

/* Decodes len characters (a multiple of 4) into out, which has room for
 * base64_decoded_size bytes.  Returns 0, or -1 with *bad the offset of the
 * first character that is not valid there (a non-alphabet character, or '='
 * other than one or two at the very end). */
int base64_decode_into(const char *s, size_t len, unsigned char *out, size_t *bad)
{
    pthread_once(&b64_table_once, b64_table_init);
    const unsigned char *u = (const unsigned char *)s;
    size_t i = b64_vbmi() ? b64_decode_vbmi(u, len, out, base64_decoded_size(s, len)) : 0;
    size_t o = i / 4 * 3;
    /* Every group but the last has no padding: four table reads, one check. */
    for (; i + 4 < len; i += 4, o += 3) {
        const uint32_t a = b64_table[u[i]], b = b64_table[u[i + 1]], c = b64_table[u[i + 2]],
                       d = b64_table[u[i + 3]];
        if ((a | b | c | d) & B64_BAD)
            break; /* the careful loop below finds the character */
        const uint32_t v = a << 18 | b << 12 | c << 6 | d;
        out[o] = (unsigned char)(v >> 16);
        out[o + 1] = (unsigned char)(v >> 8);
        out[o + 2] = (unsigned char)v;
    }
    for (; i < len; i += 4) {
        const bool last = i + 4 == len;
        int v[4];
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + (size_t)k];
            if (c == '=') {
                if (!last || k < 2 || (k == 2 && s[i + 3] != '=')) {
                    *bad = i + (size_t)k;
                    return -1;
                }
                v[k] = -2;
            } else if ((v[k] = b64_table[c]) & B64_BAD) {
                *bad = i + (size_t)k;
                return -1;
            }
        }
        out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
        if (v[2] >= 0)
            out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
        if (v[3] >= 0)
            out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
    }
    return 0;
}

char *base64_encode(const void *data, size_t len, size_t *out_len)
{
    if (len > (SIZE_MAX - 4) / 4 * 3)
        return NULL;
    size_t n = (len + 2) / 3 * 4;
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    size_t w = base64_encode_block(data ? data : "", len, s);
    s[w] = '\0';
    if (out_len)
        *out_len = w;
    return s;
}

unsigned char *base64_decode(const char *text, size_t len, size_t *out_len)
{
    if (len % 4 || (len && !text))
        return NULL;
    size_t n = base64_decoded_size(text, len), bad;
    unsigned char *out = malloc(n ? n : 1);
    if (!out)
        return NULL;
    if (base64_decode_into(text, len, out, &bad) < 0) {
        free(out);
        return NULL;
    }
    if (out_len)
        *out_len = n;
    return out;
}

void base64_set_vbmi(bool on)
{
    atomic_store_explicit(&vbmi_allowed, on, memory_order_relaxed);
}

bool base64_vbmi_enabled(void)
{
    return b64_vbmi();
}
