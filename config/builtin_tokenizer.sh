#!/bin/sh
# builtin_tokenizer.sh - the built-in model's tokenizer.json, from a word list.
#
#     sh config/builtin_tokenizer.sh /usr/share/dict/american-english >tokenizer.json
#
# The Makefile runs it at build time (Debian's wamerican gives the list) and
# builds the file into the binary (config/builtin.h), so that the built-in
# model takes text with nothing downloaded.  It is bert-base-uncased's
# tokenizer.json in shape: BertNormalizer (lowercase, accents stripped),
# BertPreTokenizer, WordPiece with "##" continuations, BertProcessing.  Its
# vocabulary, in id order:
#
#   0-4     [PAD] [UNK] [CLS] [SEP] [MASK]
#   5-98    every printable ASCII character (! .. ~), alone
#   99-192  the same after "##", so that any ASCII word has pieces
#   193-    "##" and some common English endings, then every word of the
#           list that is letters only, lowercased, accents dropped (as
#           BertNormalizer drops them), sorted, each once
#
# A demonstration: the built-in model's weights come from a seed and mean
# nothing; its tokens are real (docs/model.md).  POSIX sh, sort and awk
# only (mawk, in every Debian image), LC_ALL=C throughout.
set -eu
LC_ALL=C
export LC_ALL
list=${1:-/usr/share/dict/american-english}
if [ ! -r "$list" ]; then
    echo "builtin_tokenizer.sh: cannot read the word list $list (Debian: apt-get install wamerican)" >&2
    exit 1
fi

special() { # id content
    printf '    {"id": %d, "content": "%s", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}' "$1" "$2"
}

cat <<EOF
{
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": [
$(special 0 '[PAD]'),
$(special 1 '[UNK]'),
$(special 2 '[CLS]'),
$(special 3 '[SEP]'),
$(special 4 '[MASK]')
  ],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
  "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
  "model": {
    "type": "WordPiece",
    "unk_token": "[UNK]",
    "continuing_subword_prefix": "##",
    "max_input_chars_per_word": 100,
    "vocab": {
EOF

# The accented letters the list has (wamerican: é è ö ü á ó ñ ä ê â ç û å ô í)
# as BertNormalizer leaves them: without the accent, so "café" is a word (one
# byte sequence each: in the C locale a bracket expression takes bytes).
sed -e 's/é/e/g; s/è/e/g; s/ê/e/g; s/ë/e/g; s/á/a/g; s/à/a/g; s/â/a/g; s/ä/a/g' \
    -e 's/å/a/g; s/ó/o/g; s/ò/o/g; s/ô/o/g; s/ö/o/g; s/ú/u/g; s/ù/u/g; s/û/u/g' \
    -e 's/ü/u/g; s/í/i/g; s/ì/i/g; s/î/i/g; s/ï/i/g; s/ñ/n/g; s/ç/c/g; s/É/E/g' \
    -e 's/È/E/g; s/Ê/E/g; s/Á/A/g; s/À/A/g; s/Â/A/g; s/Ä/A/g; s/Å/A/g; s/Ó/O/g' \
    -e 's/Ö/O/g; s/Ú/U/g; s/Ü/U/g' "$list" |
    grep -x '[A-Za-z][A-Za-z]*' | tr 'A-Z' 'a-z' | sort -u | awk '
function put(token) {
    if (token in seen)
        return
    seen[token] = 1
    printf "%s\"%s\":%d", (id ? ",\n" : ""), token, id
    id++
}
BEGIN {
    id = 0
    put("[PAD]"); put("[UNK]"); put("[CLS]"); put("[SEP]"); put("[MASK]")
    for (c = 33; c <= 126; c++) {
        ch = sprintf("%c", c)
        printable[c] = (ch == "\"" || ch == "\\") ? "\\" ch : ch
        put(printable[c])
    }
    for (c = 33; c <= 126; c++)
        put("##" printable[c])
    n = split("s es ed ing er ers est ly ness ment ments tion tions able ful less ity ize izes ized izing ise ised ism ist ists al ally ic ical ous ive y", endings, " ")
    for (i = 1; i <= n; i++)
        put("##" endings[i])
}
length($0) > 1 { put($0) }
END { printf "\n" }
'

cat <<EOF
    }
  }
}
EOF
