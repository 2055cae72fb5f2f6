/* jsonnum.c - JSON numbers read from and written to text (jsonnum.h). */
#include "codec/jsonnum.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading --------------------------------------------------------------- */

/* Numeric arrays are read from the body text, not through one json_t per
 * number.  A number is read as jansson read it (strtod, then float32), with
 * a fast exact path: up to 19 significant digits w and a decimal exponent e
 * with w <= 2^53 and |e| <= 22 make w * 10^e or w / 10^-e one correctly
 * rounded double operation on exact operands (Clinger), the double strtod
 * returns.  Anything else goes to strtod. */

static const double POW10_DBL[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static const uint64_t POW10_U64[20] = {1u,
                                       10u,
                                       100u,
                                       1000u,
                                       10000u,
                                       100000u,
                                       1000000u,
                                       10000000u,
                                       100000000u,
                                       1000000000u,
                                       10000000000u,
                                       100000000000u,
                                       1000000000000u,
                                       10000000000000u,
                                       100000000000000u,
                                       1000000000000000u,
                                       10000000000000000u,
                                       100000000000000000u,
                                       1000000000000000000u,
                                       10000000000000000000u};

bool jsonnum_scan(const char *s, size_t n, jsonnum_scanned *t)
{
    const char *p = s, *const end = s + n;
    p += *p == '-';
    if (p == end || (unsigned)(*p - '0') > 9)
        return false;
    const char *first = p;
    long mag = JSONNUM_MAG_ZERO;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && (unsigned)(*p - '0') <= 9)
            p++;
        mag = p - first > 1000000000 ? 1000000000L : (long)(p - first);
    }
    t->digits = (size_t)(p - first);
    t->integer = true;
    if (p < end && *p == '.') {
        t->integer = false;
        if (++p == end || (unsigned)(*p - '0') > 9)
            return false;
        const char *frac = p;
        if (mag == JSONNUM_MAG_ZERO) {
            while (p < end && *p == '0')
                p++;
            if (p < end && (unsigned)(*p - '0') <= 9) /* 0.00123 < 10^-2 */
                mag = p - frac > 1000000000 ? -1000000000L : -(long)(p - frac);
        }
        while (p < end && (unsigned)(*p - '0') <= 9)
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        t->integer = false;
        bool neg = false;
        if (++p < end && (*p == '+' || *p == '-'))
            neg = *p++ == '-';
        if (p == end || (unsigned)(*p - '0') > 9)
            return false;
        long e = 0;
        for (; p < end && (unsigned)(*p - '0') <= 9; p++)
            if (e < 100000000)
                e = e * 10 + (*p - '0');
        if (mag != JSONNUM_MAG_ZERO)
            mag += neg ? -e : e;
    }
    t->len = (size_t)(p - s);
    t->mag = mag;
    return true;
}

/* A token copied and NUL-terminated for the C library: into small (size
 * bytes) when it fits, else malloc'd (free it when != small).  NULL when out
 * of memory. */
static char *token_copy(const char *s, size_t n, char *small, size_t size)
{
    char *buf = n < size ? small : malloc(n + 1);
    if (buf) {
        memcpy(buf, s, n);
        buf[n] = '\0';
    }
    return buf;
}

bool jsonnum_strtod(const char *s, size_t n, double *out, bool *erange)
{
    char small[128], *buf = token_copy(s, n, small, sizeof small);
    if (!buf)
        return false;
    errno = 0;
    *out = strtod(buf, NULL);
    *erange = errno == ERANGE;
    if (buf != small)
        free(buf);
    return true;
}

size_t jsonnum_read(const char *s, size_t n, double *out)
{
    const char *p = s, *const end = s + n;
    const bool neg = *p == '-';
    p += neg;
    uint64_t w = 0; /* all the digits, when there are at most 19 */
    const char *digits = p;
    for (; p < end && (unsigned)(*p - '0') <= 9; p++)
        w = w * 10 + (unsigned)(*p - '0');
    size_t nd = (size_t)(p - digits);
    long e10 = 0; /* value = w * 10^e10 */
    if (p < end && *p == '.') {
        digits = ++p;
        for (; p < end && (unsigned)(*p - '0') <= 9; p++)
            w = w * 10 + (unsigned)(*p - '0');
        nd += (size_t)(p - digits);
        e10 = -(long)(p - digits);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        bool eneg = false;
        if (++p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        long e = 0;
        for (; p < end && (unsigned)(*p - '0') <= 9; p++)
            if (e < 100000000)
                e = e * 10 + (*p - '0');
        e10 += eneg ? -e : e;
    }
    const size_t len = (size_t)(p - s);
    if (nd <= 19) { /* w < 10^19: exact */
        if (w == 0) {
            *out = neg ? -0.0 : 0.0;
            return len;
        }
        if (w <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22) {
            double d = (double)w;
            d = e10 < 0 ? d / POW10_DBL[-e10] : d * POW10_DBL[e10];
            *out = neg ? -d : d;
            return len;
        }
    }
    bool erange;
    return jsonnum_strtod(s, len, out, &erange) ? len : 0;
}

bool jsonnum_parse(const char *text, size_t len, double *value)
{
    jsonnum_scanned t;
    if (!text || len == 0 || !jsonnum_scan(text, len, &t) || t.len != len)
        return false;
    return jsonnum_read(text, len, value) == len;
}

size_t jsonnum_token(const char *text, size_t len, double *value)
{
    jsonnum_scanned t;
    if (!text || len == 0 || !jsonnum_scan(text, len, &t))
        return 0;
    if (jsonnum_read(text, t.len, value) != t.len)
        return 0;
    return t.integer || !isinf(*value) ? t.len : 0; /* jansson: "real number overflow" */
}

/* ---- writing --------------------------------------------------------------- */

/* A float with p significant digits, exactly as "%.{p}g" prints it, without
 * snprintf: the float is m * 2^e2 (m < 2^24), and round-half-even(m * 2^e2 *
 * 10^k) for the k that leaves p digits is computed exactly in 64- or 128-bit
 * integers (m * 5^k shifted, or m << e2 divided by 10^-k).  The few floats
 * out of that reach (below about 1e-36) go to snprintf. */

__extension__ typedef unsigned __int128 u128;

static const uint64_t POW5_U64[28] = {1u,
                                      5u,
                                      25u,
                                      125u,
                                      625u,
                                      3125u,
                                      15625u,
                                      78125u,
                                      390625u,
                                      1953125u,
                                      9765625u,
                                      48828125u,
                                      244140625u,
                                      1220703125u,
                                      6103515625u,
                                      30517578125u,
                                      152587890625u,
                                      762939453125u,
                                      3814697265625u,
                                      19073486328125u,
                                      95367431640625u,
                                      476837158203125u,
                                      2384185791015625u,
                                      11920928955078125u,
                                      59604644775390625u,
                                      298023223876953125u,
                                      1490116119384765625u,
                                      7450580596923828125u};

/* Round half to even of v / 2^t, 0 < t < 64 (or 128). */
static uint64_t shr_round64(uint64_t v, int t)
{
    const uint64_t q = v >> t, rem = v & ((UINT64_C(1) << t) - 1), half = UINT64_C(1) << (t - 1);
    return q + ((rem > half) | ((rem == half) & q & 1));
}

static u128 shr_round128(u128 v, int t)
{
    const u128 one = 1, q = v >> t, rem = v & ((one << t) - 1), half = one << (t - 1);
    return q + (rem > half || (rem == half && (q & 1)));
}

/* Round half to even of num / den. */
static uint64_t div_round64(uint64_t num, uint64_t den)
{
    const uint64_t q = num / den, r = num % den;
    return q + (r > den - r || (r == den - r && (q & 1)));
}

static u128 div_round128(u128 num, u128 den)
{
    const u128 q = num / den, r = num % den;
    return q + (r > den - r || (r == den - r && (q & 1)));
}

/* round-half-even(m * 2^e2 * 10^k), exactly, in *r.  False when that is out
 * of this code's reach (the caller uses snprintf). */
static bool scale_round(uint32_t m, int e2, int k, uint64_t *r)
{
    if (k >= 0) {   /* m * 5^k * 2^(e2 + k) */
        if (k > 44) /* m * 5^k must stay under 2^128 */
            return false;
        const int s = e2 + k;
        if (k <= 17) { /* m * 5^k < 2^64 */
            const uint64_t P = (uint64_t)m * POW5_U64[k];
            if (s >= 0) {
                if (s > 63 || P > UINT64_MAX >> s)
                    return false;
                *r = P << s;
            } else {
                if (-s > 63)
                    return false;
                *r = shr_round64(P, -s);
            }
            return true;
        }
        const u128 P = k <= 27 ? (u128)m * POW5_U64[k] : (u128)m * POW5_U64[27] * POW5_U64[k - 27];
        u128 q;
        if (s >= 0) {
            if (s > 127 || P > ((u128)-1) >> s)
                return false;
            q = P << s;
        } else {
            if (-s > 127)
                return false;
            q = shr_round128(P, -s);
        }
        if (q > UINT64_MAX)
            return false;
        *r = (uint64_t)q;
        return true;
    }
    const int j = -k; /* m * 2^e2 / 10^j */
    if (j > 38)
        return false;
    if (e2 >= 0) {
        if (j <= 19 && e2 <= 39) {
            *r = div_round64((uint64_t)m << e2, POW10_U64[j]);
            return true;
        }
        if (e2 > 103) /* m << e2 must stay under 2^128 */
            return false;
        const u128 den = (u128)POW10_U64[j < 19 ? j : 19] * POW10_U64[j < 19 ? 0 : j - 19];
        const u128 q = div_round128((u128)m << e2, den);
        if (q > UINT64_MAX)
            return false;
        *r = (uint64_t)q;
        return true;
    }
    if (j > 19 || -e2 > 63 || POW10_U64[j] > UINT64_MAX >> -e2)
        return false;
    *r = div_round64(m, POW10_U64[j] << -e2);
    return true;
}

/* 10^j as the nearest double, j = -46..39 */
static const double POW10_NEAR[86] = {
    1e-46, 1e-45, 1e-44, 1e-43, 1e-42, 1e-41, 1e-40, 1e-39, 1e-38, 1e-37, 1e-36, 1e-35, 1e-34,
    1e-33, 1e-32, 1e-31, 1e-30, 1e-29, 1e-28, 1e-27, 1e-26, 1e-25, 1e-24, 1e-23, 1e-22, 1e-21,
    1e-20, 1e-19, 1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9,  1e-8,
    1e-7,  1e-6,  1e-5,  1e-4,  1e-3,  1e-2,  1e-1,  1e0,   1e1,   1e2,   1e3,   1e4,   1e5,
    1e6,   1e7,   1e8,   1e9,   1e10,  1e11,  1e12,  1e13,  1e14,  1e15,  1e16,  1e17,  1e18,
    1e19,  1e20,  1e21,  1e22,  1e23,  1e24,  1e25,  1e26,  1e27,  1e28,  1e29,  1e30,  1e31,
    1e32,  1e33,  1e34,  1e35,  1e36,  1e37,  1e38,  1e39};

static const char DIGITS2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* v < 10^8 as 8 ASCII digits in a register, stored (memcpy) in reading order. */
static uint64_t digits8(uint32_t v)
{
    const uint32_t a = v / 10000, b = v - a * 10000;
    const uint32_t a1 = a / 100, a2 = a - a1 * 100, b1 = b / 100, b2 = b - b1 * 100;
    uint16_t t0, t1, t2, t3;
    memcpy(&t0, DIGITS2 + 2 * a1, 2);
    memcpy(&t1, DIGITS2 + 2 * a2, 2);
    memcpy(&t2, DIGITS2 + 2 * b1, 2);
    memcpy(&t3, DIGITS2 + 2 * b2, 2);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint64_t)t0 << 48 | (uint64_t)t1 << 32 | (uint64_t)t2 << 16 | t3;
#else
    return (uint64_t)t3 << 48 | (uint64_t)t2 << 32 | (uint64_t)t1 << 16 | t0;
#endif
}

/* Of 8 bytes in reading order: the last n zero bytes (v != 0); the bytes
 * after the first n (0 <= n < 8). */
static int trailing_zero_bytes(uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_ctzll(v) / 8;
#else
    return __builtin_clzll(v) / 8;
#endif
}

static uint64_t drop_bytes(uint64_t v, int n)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return v << (8 * n);
#else
    return v >> (8 * n);
#endif
}

/* The longest float fmt_float writes ("-1.23456789e-38", "-0.000123456789"),
 * and how far past its end it may scribble. */
#define FLOAT_CHARS 15
#define FLOAT_SLACK 16
_Static_assert(FLOAT_CHARS + FLOAT_SLACK == JSONNUM_ROOM, "jsonnum.h's JSONNUM_ROOM");

/* Writes f with p (1..9) significant digits as "%.{p}g" does, or null when
 * f is not finite, to out (room for FLOAT_CHARS + FLOAT_SLACK bytes; not
 * NUL-terminated).  Returns the length. */
static size_t fmt_float(char *out, float f, int p)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const uint32_t bits = u & 0x7fffffffu;
    char *o = out;
    if (bits >= 0x7f800000u) {
        memcpy(o, "null", 4);
        return 4;
    }
    *o = '-';
    o += u >> 31;
    if (bits == 0) {
        *o++ = '0';
        return (size_t)(o - out);
    }
    uint32_t m;
    int e2;
    if (bits >= 0x00800000u) {
        m = (bits & 0x007fffffu) | 0x00800000u;
        e2 = (int)(bits >> 23) - 150;
    } else { /* subnormal */
        m = bits;
        e2 = -149;
    }
    /* x = floor(log10 |f|): 2^n2 <= |f| < 2^(n2 + 1) gives it or one less
     * ((n * 1233) >> 12 is floor(n log10 2) for |n| < 681; gcc's >> of a
     * negative int is arithmetic); one comparison settles it.  (Should a
     * comparison with a rounded power of ten ever be wrong, the loop below
     * corrects k, or snprintf takes over: the digits never depend on it.) */
    const int n2 = e2 + 31 - __builtin_clz(m);
    int x = (n2 * 1233) >> 12;
    float a;
    memcpy(&a, &bits, sizeof a);
    x += (double)a >= POW10_NEAR[x + 47];
    int k = p - 1 - x;
    uint64_t r = 0;
    for (int tries = 0;; tries++) {
        if (tries == 4 || !scale_round(m, e2, k, &r))
            goto fallback;
        if (r < POW10_U64[p - 1]) { /* x was high */
            k++;
        } else if (r > POW10_U64[p]) { /* x was low */
            k--;
        } else {
            if (r == POW10_U64[p]) { /* 9.9999999996 rounds to 10.0000000 */
                r = POW10_U64[p - 1];
                k--;
            }
            break;
        }
    }
    x = p - 1 - k; /* the exponent of the rounded value: %g's X */

    /* The digits as c0 and, in a register, the next 8 (zeros past p), so
     * that each piece is one store into out. */
    const uint32_t r9 = (uint32_t)(r * POW10_U64[9 - p]), c0 = r9 / 100000000u;
    const uint64_t rest = digits8(r9 - c0 * 100000000u);
    const uint64_t vals = rest - UINT64_C(0x3030303030303030); /* digit values */
    const int nd = vals ? 9 - trailing_zero_bytes(vals) : 1;   /* %g drops trailing zeros */
    if (x < -4 || x >= p) {                                    /* d.ddde+XX */
        o[0] = (char)('0' + c0);
        o[1] = '.';
        memcpy(o + 2, &rest, 8);
        o += nd > 1 ? nd + 1 : 1;
        const int ax = x < 0 ? -x : x;
        o[0] = 'e';
        o[1] = x < 0 ? '-' : '+';
        memcpy(o + 2, DIGITS2 + 2 * ax, 2); /* |x| <= 45 */
        o += 4;
    } else if (x >= 0) { /* ddd.ddd */
        o[0] = (char)('0' + c0);
        memcpy(o + 1, &rest, 8);
        if (nd > x + 1) { /* x < 8 */
            const uint64_t frac = drop_bytes(rest, x);
            o[x + 1] = '.';
            memcpy(o + x + 2, &frac, 8);
            o += nd + 1;
        } else {
            o += x + 1;
        }
    } else { /* 0.000ddd */
        memcpy(o, "0.000000", 8);
        o += 1 - x;
        o[0] = (char)('0' + c0);
        memcpy(o + 1, &rest, 8);
        o += nd;
    }
    return (size_t)(o - out);

fallback:;
    char buf[48];
    int n = snprintf(buf, sizeof buf, "%.*g", p, (double)f);
    n = n > 0 && n <= FLOAT_CHARS ? n : 0;
    memcpy(out, buf, (size_t)n);
    return (size_t)n;
}

_Static_assert(FLOAT_CHARS + FLOAT_SLACK == JSONNUM_ROOM, "jsonnum.h's JSONNUM_ROOM");

size_t jsonnum_write(char *out, float f, int precision)
{
    return fmt_float(out, f, precision);
}

size_t jsonnum_format(char *buf, float f, int precision)
{
    char tmp[FLOAT_CHARS + FLOAT_SLACK];
    const size_t n = fmt_float(tmp, f, precision < 1 ? 1 : precision > 9 ? 9 : precision);
    memcpy(buf, tmp, n);
    buf[n] = '\0';
    return n;
}

/* ---- integers beyond int64 ------------------------------------------------ */

/* Whether the integer token s[0..n) fits int64 (jansson's json_int_t). */
static bool fits_int64(const char *s, size_t n)
{
    char small[128], *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf)
        return true; /* out of memory: leave it to jansson */
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    (void)strtoll(buf, NULL, 10);
    const bool fits = errno != ERANGE;
    if (buf != small)
        free(buf);
    return fits;
}

/* Rewrites the integer token s[0..n) (beyond int64, so n >= 19) as a real
 * of exactly n bytes, its value rounded to n - 6 or more significant digits
 * (14 or more: the same float32). */
static void widen_token(char *s, size_t n)
{
    double d;
    bool erange;
    if (!jsonnum_strtod(s, n, &d, &erange))
        return;
    char buf[512];
    const int sign = d < 0;
    for (int k = (int)n - sign - 6; k >= 1 && k < 400;) {
        const int len = snprintf(buf, sizeof buf, "%.*e", k, d);
        if (len < 0 || (size_t)len >= sizeof buf)
            return;
        if ((size_t)len == n) {
            memcpy(s, buf, n);
            return;
        }
        k += (int)n - len;
    }
}

size_t jsonnum_widen(char *text, size_t len)
{
    size_t widened = 0;
    bool token_start = true; /* after a structural character or whitespace */
    for (size_t i = 0; i < len;) {
        const char c = text[i];
        if (c == '"') { /* skip the string, escapes included */
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\')
                    i++;
            i++;
            token_start = false;
            continue;
        }
        jsonnum_scanned t;
        if (token_start && (c == '-' || (c >= '0' && c <= '9')) &&
            jsonnum_scan(text + i, len - i, &t)) {
            if (t.integer && t.digits >= 19 && !fits_int64(text + i, t.len)) {
                widen_token(text + i, t.len);
                widened++;
            }
            i += t.len;
            token_start = false;
            continue;
        }
        token_start = c == ',' || c == '[' || c == '{' || c == ':' || c == ' ' || c == '\t' ||
                      c == '\n' || c == '\r';
        i++;
    }
    return widened;
}
