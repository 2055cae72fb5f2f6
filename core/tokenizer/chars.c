/* chars.c - tok_char_*: the Unicode classes the tokenizer's files test,
 * as Rust's char methods and tokenizers' helpers define them, and GPT-2's
 * byte-to-char map that ByteLevel uses.  Categories come from utf8proc and
 * Alphabetic from Oniguruma's property tables (each library's Unicode
 * version). */
#include "tokenizer/chars.h"

#include <oniguruma.h>
#include <pthread.h>
#include <utf8proc.h>

static int category(uint32_t c)
{
    return (int)utf8proc_category((utf8proc_int32_t)c);
}

/* The White_Space property (what Rust's char::is_whitespace tests). */
bool tok_char_is_whitespace(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Oniguruma's ctype for the Alphabetic property (utf8proc has none). */
static OnigCtype alpha_ctype;
static pthread_once_t alpha_once = PTHREAD_ONCE_INIT;

static void alpha_init(void)
{
    static char name[] = "Alphabetic"; /* the macro takes a non-const pointer */
    int t = ONIGENC_PROPERTY_NAME_TO_CTYPE(ONIG_ENCODING_UTF8, (OnigUChar *)name,
                                           (OnigUChar *)name + sizeof name - 1);
    alpha_ctype = t >= 0 ? (OnigCtype)t : ONIGENC_CTYPE_ALPHA;
}

bool tok_char_is_alphabetic(uint32_t c)
{
    pthread_once(&alpha_once, alpha_init);
    return ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, c, alpha_ctype) != 0;
}

bool tok_char_is_numeric(uint32_t c)
{
    int k = category(c);
    return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

/* tokenizers' is_punc: char::is_ascii_punctuation or unicode_categories'
 * is_punctuation (Pc Pd Ps Pe Pi Pf Po).  ASCII's $ + < = > ^ ` | ~ are
 * symbols in Unicode but punctuation here. */
bool tok_char_is_punctuation(uint32_t c)
{
    if (c < 0x80)
        return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
               (c >= 0x7B && c <= 0x7E);
    int k = category(c);
    return k == UTF8PROC_CATEGORY_PC || k == UTF8PROC_CATEGORY_PD || k == UTF8PROC_CATEGORY_PS ||
           k == UTF8PROC_CATEGORY_PE || k == UTF8PROC_CATEGORY_PI || k == UTF8PROC_CATEGORY_PF ||
           k == UTF8PROC_CATEGORY_PO;
}

/* bert.rs is_control: not \t \n \r, and unicode_categories' is_other
 * (Cc Cf Cn Co Cs: unassigned code points count). */
bool tok_char_is_control(uint32_t c)
{
    if (c == '\t' || c == '\n' || c == '\r')
        return false;
    int k = category(c);
    return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CN ||
           k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CS;
}

bool tok_char_is_chinese(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool tok_char_is_mark_nonspacing(uint32_t c)
{
    return category(c) == UTF8PROC_CATEGORY_MN;
}

/* unicode-normalization's is_combining_mark: General_Category Mark (Mn Mc
 * Me), what the StripAccents normalizer removes (BertNormalizer's
 * strip_accents removes Mn only). */
bool tok_char_is_mark(uint32_t c)
{
    int k = category(c);
    return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

/* GPT-2's bytes_to_unicode. */
uint32_t tok_char_byte_level(uint8_t b)
{
    /* the printable bytes stand for themselves; the others, in order, for
     * U+0100 on */
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
        return b;
    if (b <= 0x20)
        return 0x100u + b;
    if (b <= 0xA0)
        return 0x100u + 33 + (uint32_t)(b - 0x7F);
    return 0x100u + 67; /* 0xAD */
}

int tok_char_byte_of(uint32_t c)
{
    if ((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF))
        return (int)c;
    /* the other bytes, in order, stand for 256, 257, ...: 0..32, 127..160, 173 */
    if (c < 256 || c > 256 + 67)
        return -1;
    const uint32_t k = c - 256;
    return k <= 32 ? (int)k : k <= 66 ? (int)(k + 94) : 173;
}

/* The regex crate's Unicode \w (UTS #18: Alphabetic, M, Nd, Pc,
 * Join_Control). */
bool tok_char_is_word(uint32_t c)
{
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
               c == '_';
    int k = utf8proc_category((utf8proc_int32_t)c);
    return tok_char_is_alphabetic(c) || tok_char_is_mark(c) || k == UTF8PROC_CATEGORY_ND ||
           k == UTF8PROC_CATEGORY_PC || c == 0x200C || c == 0x200D;
}
