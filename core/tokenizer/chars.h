/* chars.h - Unicode classes, as Rust's char methods and tokenizers' helpers
 * define them, and the char ByteLevel shows a byte as. */
#ifndef ATTND_TOK_CHARS_H
#define ATTND_TOK_CHARS_H

#include <stdbool.h>
#include <stdint.h>

bool tok_char_is_whitespace(uint32_t c);  /* char::is_whitespace (White_Space) */
bool tok_char_is_alphabetic(uint32_t c);  /* char::is_alphabetic (Alphabetic) */
bool tok_char_is_numeric(uint32_t c);     /* char::is_numeric (Nd, Nl, No) */
bool tok_char_is_punctuation(uint32_t c); /* tokenizers' is_punc: P* or ASCII punctuation */
bool tok_char_is_control(uint32_t c);     /* tokenizers' BertNormalizer is_control */
bool tok_char_is_chinese(uint32_t c);     /* BertNormalizer is_chinese_char */
bool tok_char_is_mark_nonspacing(uint32_t c); /* Mn: what BertNormalizer's strip_accents removes */
bool tok_char_is_mark(uint32_t c);            /* M (Mn Mc Me): what StripAccents removes */
bool tok_char_is_word(uint32_t c); /* Rust regex's \w: alphabetic, marks, Nd, Pc, joiners */

/* GPT-2's bytes_to_unicode: the char ByteLevel shows byte b as. */
uint32_t tok_char_byte_level(uint8_t b);
/* Its inverse: the byte a byte-level char stands for, or -1. */
int tok_char_byte_of(uint32_t c);

#endif
