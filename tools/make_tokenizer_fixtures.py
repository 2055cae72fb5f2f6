#!/usr/bin/python3
"""Writes small but realistic Hugging Face tokenizer.json fixtures.

usage: /usr/bin/python3 tools/make_tokenizer_fixtures.py OUTDIR

OUTDIR/<name>/tokenizer.json (and tokenizer_config.json) for:
  bert-uncased, bert-cased            WordPiece + BertNormalizer + BertPreTokenizer
  roberta, roberta-merges-str         byte-level BPE (RobertaConverter's shape)
  modernbert                          byte-level BPE shaped as ModernBERT's file
  xlmr                                Unigram + Precompiled (XLMRobertaConverter)
  unigram-fallback                    Unigram with byte_fallback
  llama-bpe, llama-bpe-metaspace      sentencepiece BPE (LlamaConverter, legacy
                                      and Metaspace forms)
  misc, misc-split-*                  remaining normalizers / pre-tokenizers
and OUTDIR/<name>/spm_golden.json for the sentencepiece-trained fixtures: the
pieces sentencepiece itself produces for each text of texts.json (when present in
OUTDIR), a second opinion next to the Hugging Face goldens.

Stdlib + python3-sentencepiece only.  Deterministic: the word list is read sorted,
every random choice comes from a seeded random.Random, sentencepiece trains with
one thread on a fixed corpus, so a rerun writes byte-identical files.
"""

import base64
import json
import os
import random
import sys
import tempfile

WORDS_FILE = "/usr/share/dict/american-english"
SEED = 20240611

# --------------------------------------------------------------------------
# shared pieces


def load_words():
    with open(WORDS_FILE, encoding="utf-8") as f:
        raw = [w.strip() for w in f]
    lower = sorted({w for w in raw if w.isascii() and w.isalpha() and w.islower()})
    return lower


COMMON = (
    "the of and to a in is it you that he was for on are with as i his they be at one "
    "have this from or had by hot word but what some we can out other were all there when "
    "up use your how said an each she which do their time if will way about many then them "
    "write would like so these her long make thing see him two has look more day could go "
    "come did number sound no most people my over know water than call first who may down "
    "side been now find any new work part take get place made live where after back little "
    "only round man year came show every good me give our under name very through just form "
    "sentence great think say help low line differ turn cause much mean before move right boy "
    "old too same tell does set three want air well also play small end put home read hand "
    "port large spell add even land here must big high such follow act why ask men change "
    "went light kind off need house picture try us again animal point mother world near build "
    "self earth father head stand own page should country found answer school grow study still "
    "learn plant cover food sun four between state keep eye never last let thought city tree "
    "cross farm hard start might story saw far sea draw left late run don't while press close "
    "night real life few north hello quick brown fox jumps lazy dog model server token text"
).split()

SUFFIXES = (
    "s es ed d ing er ers est ly tion tions sion ness ment ments able ible al ial ic ical ous "
    "ive ful less ity ty ism ist ists ize ise ized ance ence ant ent ary ery ory y ie ies "
    "en an ian ship hood dom ward wards wise like ling let ette ee eer ar or ors "
    "th he in re on at st nd ou it ha ve te an is ng ti le ea al ro ri ra li la ne me ma "
    "de co ca di ch ct ll ss tt pp ff mm rr nn cc gg ck sh ph wh qu "
    "a b c d e f g h i j k l m n o p q r s t u v w x y z"
).split()

PREFIXES = "un re pre dis over under in im non mis sub super inter trans anti auto bi co de ex".split()

PUNCT = [chr(c) for c in range(0x21, 0x7F) if not chr(c).isalnum()]
DIGITS = [str(d) for d in range(10)]
ACCENTED = list("éèêëáàâäãåíìîïóòôöõúùûüñçøßæœÉÈÁÀÖÜÑÇ")
CJK = list("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴")
KANA = list("あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんアイウエオカキクケコサシスセソタチツテト")


def added(id_, content, special, lstrip=False, rstrip=False, single_word=False, normalized=None):
    if normalized is None:
        normalized = not special
    return {
        "id": id_,
        "content": content,
        "single_word": single_word,
        "lstrip": lstrip,
        "rstrip": rstrip,
        "normalized": normalized,
        "special": special,
    }


def tokenizer_json(added_tokens, normalizer, pre_tokenizer, post_processor, decoder, model):
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": decoder,
        "model": model,
    }


def template(single, pair, specials):
    """single/pair: lists of 'X:type' items as TemplateProcessing's string form;
    specials: list of (token, id)."""

    def items(spec):
        out = []
        for piece in spec.split():
            name, _, type_id = piece.partition(":")
            type_id = int(type_id or 0)
            if name.startswith("$"):
                out.append({"Sequence": {"id": name[1:] or "A", "type_id": type_id}})
            else:
                out.append({"SpecialToken": {"id": name, "type_id": type_id}})
        return out

    return {
        "type": "TemplateProcessing",
        "single": items(single),
        "pair": items(pair),
        "special_tokens": {
            tok: {"id": tok, "ids": [i], "tokens": [tok]} for tok, i in sorted(specials)
        },
    }


def write(outdir, name, tok, config=None):
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, indent=2)
        f.write("\n")
    if config is not None:
        with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, ensure_ascii=False, indent=2, sort_keys=True)
            f.write("\n")
    size = os.path.getsize(os.path.join(d, "tokenizer.json"))
    print(f"{name}: tokenizer.json {size} bytes")


def sentences(words, n, rng, extra=()):
    """Deterministic pseudo-English sentences."""
    out = []
    for i in range(n):
        k = rng.randint(4, 14)
        ws = []
        for _ in range(k):
            if rng.random() < 0.55:
                ws.append(rng.choice(COMMON))
            else:
                ws.append(rng.choice(words))
        if rng.random() < 0.5:
            ws[0] = ws[0].capitalize()
        if rng.random() < 0.2:
            ws.insert(rng.randrange(len(ws)), str(rng.randint(0, 2024)))
        s = " ".join(ws)
        s += rng.choice([".", ".", ".", "?", "!", ",", ";", "..."])
        out.append(s)
    out.extend(extra)
    return out


FOREIGN = [
    "Café crème brûlée à la française, naïve façade, São Paulo, Zürich, Ångström.",
    "El niño comió jalapeños en la señora's piñata; ¿qué pasó? ¡Olé!",
    "Der Fußgänger überquert die Straße schön früh. Grüße aus Köln.",
    "我们在中国学习中文，这是一个很好的机会。你好世界！",
    "日本語のテキストです。ひらがなとカタカナ、東京タワー。",
    "Ελληνικά κείμενα και ΟΔΟΣ, Москва — русский текст.",
    "مرحبا بالعالم، هذا نص عربي.",
    "ﬁne ligatures ½ ² ① ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ㈱ ™",
]

# --------------------------------------------------------------------------
# the test texts (written to OUTDIR/texts.json)

LONG_WORD = "".join("abcdefghijklmnopqrstuvwxyz"[(i * 7) % 26] for i in range(300))

TEXTS = [
    "",
    " ",
    "     ",
    "Hello world",
    "Hello world!",
    "The quick brown fox jumps over the lazy dog.",
    "the quick brown fox jumps over the lazy dog",
    "THE QUICK BROWN FOX",
    "HeLLo WoRLD, MiXeD cAsE",
    "Unbelievably, the reorganization was overwhelmingly successful.",
    "antidisestablishmentarianism",
    "supercalifragilisticexpialidocious",
    "I don't think it's right; we'll see, they've gone, I'm here, you'd know.",
    "Don't DON'T don’t",
    "Punctuation!!! Really??? Yes... (maybe) [brackets] {braces} <angles> \"quotes\" 'single'",
    "a,b;c:d-e_f/g.h",
    "well-known state-of-the-art --- re-use x__y//z",
    "e-mail: user.name@example.com, http://example.com/path?q=1&r=2#frag",
    "Numbers: 0 7 42 1234 3.14159 1,000,000 -17 +3e10 2024-06-11 10:30",
    "1234567890123456789012345678901234567890",
    "  leading spaces",
    "trailing spaces   ",
    "  both  sides  ",
    "multiple   spaces    between     words",
    "tabs\tand\nnewlines\r\nand\u000bvertical\u000cform feeds",
    "\t\n",
    "no-break\u00a0space and\u3000ideographic space and\u2003em space",
    "next line\u0085and\u2028line separator and\ufeffbom",
    "Café naïve résumé façade São Paulo Zürich Ångström",
    "Cafe\u0301 nai\u0308ve re\u0301sume\u0301 (combining marks)",
    "e\u0301\u0301\u0301 stacked combining, a\u030a\u0327",
    "crème brûlée à la française",
    "ÉCOLE ÜBER ÀÇÑ",
    "ΟΔΟΣ Σ σ ς ΣΑΣ",
    "İstanbul ıı ß ẞ ǅ ﬁ",
    "我们在中国学习中文。",
    "你好，世界！Hello 世界 mixed中文text",
    "𠀀𠀁 extension B 𪚥",
    "日本語のテキストです。ひらがなとカタカナ",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ｶﾀｶﾅ",
    "안녕하세요 세계",
    "مرحبا بالعالم",
    "שלום עולם",
    "Привет, мир! Москва",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "emoji 😀 😂👍 🎉",
    "family 👨‍👩‍👧‍👦 and 👩🏽‍💻 and 👍🏿 skin tones",
    "flags 🇺🇸🇫🇷 and keycap 1️⃣",
    "zero\u200bwidth\u200cnon\u200djoiner",
    "control\u0001chars\u0002and\u001fmore\u007fdel",
    "replacement \ufffd char",
    "private use \ue000 and \U000f0000",
    "ligature ﬁne ½ ² ³ ① ™ ㈱ ℃",
    "a [MASK] b",
    "[MASK]",
    "a[MASK]b",
    "a   [MASK]   b",
    "[CLS] [SEP] [PAD] [UNK]",
    "[cls] [mask] lowercase specials",
    "<s> hello </s>",
    "<mask>",
    "a <mask> b",
    "a   <mask>   b",
    "<s><mask></s><pad><unk>",
    "<|endoftext|> [unused0] |||IP_ADDRESS||| |||EMAIL_ADDRESS|||",
    "word          with          ten spaces",
    "<ent> NewWord newword NEWWORD",
    "cat concat cats cat. the cat",
    "x <L> y <R> z",
    "x<L>y<R>z",
    "Ünï ünï UNI",
    "<0x41> <unk> <0xFF>",
    "``quoted``",
    LONG_WORD,
    "prefix " + LONG_WORD[:99] + " suffix",
    "prefix " + LONG_WORD[:101] + " suffix",
    "ab" * 150,
    "The year 1999 and 2000; version 3.10.2 (build 7)",
    "¿Qué? ¡Olé! «guillemets» „quotes“ — dash – en … ellipsis",
    "~!@#$%^&*()_+`-={}|[]\\:\";'<>?,./",
    "Ich heiße Jürgen und wohne in der Straße.",
    "x",
    "A",
    ".",
    "'",
]

PAIRS = [
    ["Hello world", "How are you?"],
    ["The quick brown fox.", "Jumps over the lazy dog!"],
    ["", "only b"],
    ["only a", ""],
    ["a [MASK] b", "c <mask> d"],
    ["  spaced  ", "  out  "],
    ["Café", "我们在中国"],
    ["don't", "it's"],
]


def write_texts(outdir):
    with open(os.path.join(outdir, "texts.json"), "w", encoding="utf-8") as f:
        f.write('{\n"texts": [\n')
        f.write(",\n".join(json.dumps(t, ensure_ascii=False) for t in TEXTS))
        f.write('\n],\n"pairs": [\n')
        f.write(",\n".join(json.dumps(p, ensure_ascii=False) for p in PAIRS))
        f.write("\n]\n}\n")


# --------------------------------------------------------------------------
# WordPiece (BERT)


def wordpiece_vocab(words, cased):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += [f"[unused{i}]" for i in range(5)]
    seen = set(vocab)

    def add(t):
        if t not in seen:
            seen.add(t)
            vocab.append(t)

    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    if cased:
        letters += [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    singles = PUNCT + DIGITS + letters + ACCENTED + CJK[:60] + KANA[:30] + ["▁", "’", "“", "”", "—", "…", "¿", "¡", "€", "£", "°"]
    if not cased:
        singles = [s for s in singles if s == s.lower()]
    for s in singles:
        add(s)
    for s in singles:
        add("##" + s)
    for s in SUFFIXES:
        add("##" + s)
    for p in PREFIXES:
        add(p)
    for w in COMMON:
        if w.isalpha():
            add(w)
            if cased:
                add(w.capitalize())
    for w in ["don", "doesn", "isn", "won", "can", "t", "s", "ll", "re", "ve", "m", "d", "##n"]:
        add(w)
    for n in range(10, 100, 7):
        add(str(n))
    for n in range(0, 100, 11):
        add("##" + str(n))
    # every Nth dictionary word up to the size wanted
    step = max(1, len(words) // 2300)
    for i, w in enumerate(words[::step]):
        add(w)
        if cased and i % 5 == 0:
            add(w.capitalize())
    return vocab


def bert(words, cased):
    vocab = wordpiece_vocab(words, cased)
    ids = {t: i for i, t in enumerate(vocab)}
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    added_tokens = [added(ids[t], t, True, normalized=False) for t in specials]
    normalizer = {
        "type": "BertNormalizer",
        "clean_text": True,
        "handle_chinese_chars": True,
        "strip_accents": False if cased else None,
        "lowercase": not cased,
    }
    if cased:
        post = {"type": "BertProcessing", "sep": ["[SEP]", ids["[SEP]"]], "cls": ["[CLS]", ids["[CLS]"]]}
    else:
        post = template(
            "[CLS]:0 $A:0 [SEP]:0",
            "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
            [("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
        )
    model = {
        "type": "WordPiece",
        "unk_token": "[UNK]",
        "continuing_subword_prefix": "##",
        "max_input_chars_per_word": 100,
        "vocab": ids,
    }
    tok = tokenizer_json(
        added_tokens,
        normalizer,
        {"type": "BertPreTokenizer"},
        post,
        {"type": "WordPiece", "prefix": "##", "cleanup": True},
        model,
    )
    config = {
        "clean_up_tokenization_spaces": True,
        "cls_token": "[CLS]",
        "do_lower_case": not cased,
        "mask_token": "[MASK]",
        "model_max_length": 512,
        "pad_token": "[PAD]",
        "sep_token": "[SEP]",
        "strip_accents": None,
        "tokenize_chinese_chars": True,
        "tokenizer_class": "BertTokenizer",
        "unk_token": "[UNK]",
    }
    return tok, config


# --------------------------------------------------------------------------
# byte-level BPE (RoBERTa, ModernBERT)


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def gpt2_pretokenize(text):
    """A close-enough stand-in for GPT-2's regex, for training only."""
    out = []
    i = 0
    n = len(text)

    def cls(c):
        if c.isalpha():
            return "L"
        if c.isdigit():
            return "N"
        if c.isspace():
            return "S"
        return "P"

    while i < n:
        c = text[i]
        if text.startswith(("'s", "'t", "'m", "'d"), i):
            out.append(text[i : i + 2]); i += 2; continue
        if text.startswith(("'re", "'ve", "'ll"), i):
            out.append(text[i : i + 3]); i += 3; continue
        j = i
        if c == " " and i + 1 < n and cls(text[i + 1]) != "S":
            j = i + 1
        k = cls(text[j])
        e = j + 1
        while e < n and cls(text[e]) == k and not (k == "P" and text[e] == "'"):
            e += 1
        out.append(text[i:e])
        i = e
    return out


def train_bpe(corpus_counts, alphabet_map, n_merges):
    """corpus_counts: {pretoken: count}. Returns merges list of (a, b)."""
    words = []
    for w in sorted(corpus_counts):
        syms = [alphabet_map[b] for b in w.encode("utf-8")]
        words.append([syms, corpus_counts[w]])
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for syms, cnt in words:
            for a, b in zip(syms, syms[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + cnt
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        if pairs[best] < 2:
            break
        merges.append(best)
        a, b = best
        ab = a + b
        for entry in words:
            syms = entry[0]
            if len(syms) < 2:
                continue
            out = []
            i = 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(ab)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            entry[0] = out
    return merges


def bytelevel_bpe(words, n_merges):
    rng = random.Random(SEED + 1)
    counts = {}
    for s in sentences(words, 1500, rng, FOREIGN[:3]):
        for p in gpt2_pretokenize(s):
            counts[p] = counts.get(p, 0) + 1
    for w in COMMON:
        counts[" " + w] = counts.get(" " + w, 0) + 30
        counts[w] = counts.get(w, 0) + 3
    for w in words[::40]:
        counts[" " + w] = counts.get(" " + w, 0) + 1
    return train_bpe(counts, bytes_to_unicode(), n_merges)


def bpe_model(vocab, merges, merges_as_strings, unk=None, fuse_unk=False, byte_fallback=False):
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": unk,
        "continuing_subword_prefix": "" if not byte_fallback else None,
        "end_of_word_suffix": "" if not byte_fallback else None,
        "fuse_unk": fuse_unk,
        "byte_fallback": byte_fallback,
        "ignore_merges": False,
        "vocab": vocab,
        "merges": [f"{a} {b}" for a, b in merges] if merges_as_strings else [[a, b] for a, b in merges],
    }


BYTELEVEL_PRE = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
BYTELEVEL_DEC = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}


def roberta(merges, merges_as_strings):
    b2u = bytes_to_unicode()
    vocab_list = ["<s>", "<pad>", "</s>", "<unk>"] + [b2u[b] for b in range(256)]
    seen = set(vocab_list)
    for a, b in merges:
        if a + b not in seen:
            seen.add(a + b)
            vocab_list.append(a + b)
    vocab_list.append("<mask>")
    ids = {t: i for i, t in enumerate(vocab_list)}
    added_tokens = [
        added(0, "<s>", True, normalized=True),
        added(1, "<pad>", True, normalized=True),
        added(2, "</s>", True, normalized=True),
        added(3, "<unk>", True, normalized=True),
        added(ids["<mask>"], "<mask>", True, lstrip=True, normalized=False),
    ]
    post = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True, "add_prefix_space": False}
    tok = tokenizer_json(added_tokens, None, dict(BYTELEVEL_PRE), post, dict(BYTELEVEL_DEC), bpe_model(ids, merges, merges_as_strings))
    config = {
        "add_prefix_space": False,
        "bos_token": "<s>",
        "clean_up_tokenization_spaces": False,
        "cls_token": "<s>",
        "eos_token": "</s>",
        "errors": "replace",
        "mask_token": "<mask>",
        "model_max_length": 512,
        "pad_token": "<pad>",
        "sep_token": "</s>",
        "tokenizer_class": "RobertaTokenizer",
        "trim_offsets": True,
        "unk_token": "<unk>",
    }
    return tok, config


def modernbert(merges):
    b2u = bytes_to_unicode()
    vocab_list = ["|||IP_ADDRESS|||", "<|padding|>"] + [b2u[b] for b in range(256)]
    seen = set(vocab_list)
    for a, b in merges:
        if a + b not in seen:
            seen.add(a + b)
            vocab_list.append(a + b)
    # GPT-NeoX's masking placeholders and end of text, in the BPE vocab; its
    # runs of spaces (non-special, normalized added tokens) and ModernBERT's
    # own specials are not vocabulary tokens, so, as tokenizers numbers such
    # added tokens when it loads the file (AddedVocabulary::add_tokens: the
    # vocabulary's size, then one more each, in file order), they take the
    # ids after the vocabulary, in order: the ids the file says
    tail = ["|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||", "<|endoftext|>"]
    for t in tail:
        if t not in seen:
            seen.add(t)
            vocab_list.append(t)
    ids = {t: i for i, t in enumerate(vocab_list)}
    # GPT-NeoX's runs of 2..24 spaces, non-special normalized added tokens
    # as in the real file: matched before the pre-tokenizer splits the text
    spaces = [" " * k for k in range(2, 25)]
    n = len(vocab_list)
    added_tokens = [added(0, "|||IP_ADDRESS|||", False, normalized=True), added(1, "<|padding|>", True, normalized=False)]
    for k, sp in enumerate(spaces):
        added_tokens.append(added(n + k, sp, False, normalized=True))
    n += len(spaces)
    added_tokens.append(added(ids["|||EMAIL_ADDRESS|||"], "|||EMAIL_ADDRESS|||", False, normalized=True))
    added_tokens.append(added(ids["|||PHONE_NUMBER|||"], "|||PHONE_NUMBER|||", False, normalized=True))
    added_tokens.append(added(ids["<|endoftext|>"], "<|endoftext|>", True, normalized=False))
    extra = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"] + [f"[unused{i}]" for i in range(16)]
    for i, t in enumerate(extra):
        added_tokens.append(added(n + i, t, True, lstrip=(t == "[MASK]"), normalized=False))
    special_ids = {t: n + i for i, t in enumerate(extra)}
    post = template(
        "[CLS]:0 $A:0 [SEP]:0",
        "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        [("[CLS]", special_ids["[CLS]"]), ("[SEP]", special_ids["[SEP]"])],
    )
    model = bpe_model(ids, merges, False)
    tok = tokenizer_json(added_tokens, {"type": "NFC"}, dict(BYTELEVEL_PRE), post, dict(BYTELEVEL_DEC), model)
    config = {
        "clean_up_tokenization_spaces": True,
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": 8192,
        "pad_token": "[PAD]",
        "sep_token": "[SEP]",
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "[UNK]",
    }
    return tok, config


# --------------------------------------------------------------------------
# sentencepiece: training, the model proto, converters


def read_varint(buf, i):
    shift = 0
    result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def proto_fields(buf):
    """Yields (field number, wire type, value) of one protobuf message."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 1:
            v = buf[i : i + 8]; i += 8
        elif wt == 2:
            ln, i = read_varint(buf, i)
            v = buf[i : i + ln]; i += ln
        elif wt == 5:
            v = buf[i : i + 4]; i += 4
        else:
            raise ValueError(f"wire type {wt}")
        yield field, wt, v


def precompiled_charsmap(model_proto):
    for f, wt, v in proto_fields(model_proto):
        if f == 3 and wt == 2:  # normalizer_spec
            for f2, wt2, v2 in proto_fields(v):
                if f2 == 2 and wt2 == 2:
                    return bytes(v2)
    return b""


def train_spm(corpus, **kw):
    import sentencepiece as spm

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "w", encoding="utf-8") as f:
            for s in corpus:
                f.write(s + "\n")
        prefix = os.path.join(tmp, "m")
        args = dict(
            input=path,
            model_prefix=prefix,
            num_threads=1,
            shuffle_input_sentence=False,
            input_sentence_size=0,
            minloglevel=2,
        )
        args.update(kw)
        spm.SentencePieceTrainer.train(**args)
        with open(prefix + ".model", "rb") as f:
            proto = f.read()
    sp = spm.SentencePieceProcessor(model_proto=proto)
    return sp, proto


def spm_corpus(words, n, seed):
    rng = random.Random(seed)
    extra = []
    for _ in range(20):
        extra.extend(FOREIGN)
    return sentences(words, n, rng, extra)


def score(sp, i):
    return float(sp.get_score(i))


def xlmr(sp, proto):
    pieces = [(sp.id_to_piece(i), score(sp, i)) for i in range(sp.get_piece_size())]
    vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
    vocab += [[p, s] for p, s in pieces[3:]]
    mask_id = len(vocab)
    vocab.append(["<mask>", 0.0])
    charsmap = base64.b64encode(precompiled_charsmap(proto)).decode("ascii")
    added_tokens = [added(i, t, True, normalized=False) for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>"])]
    added_tokens.append(added(mask_id, "<mask>", True, lstrip=True, normalized=False))
    normalizer = {
        "type": "Sequence",
        "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": charsmap},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ],
    }
    meta = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    post = template("<s>:0 $A:0 </s>:0", "<s>:0 $A:0 </s>:0 </s>:0 $B:0 </s>:0", [("<s>", 0), ("</s>", 2)])
    model = {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False}
    tok = tokenizer_json(added_tokens, normalizer, meta, post, dict(meta), model)
    config = {
        "bos_token": "<s>",
        "clean_up_tokenization_spaces": True,
        "cls_token": "<s>",
        "eos_token": "</s>",
        "mask_token": "<mask>",
        "model_max_length": 512,
        "pad_token": "<pad>",
        "sep_token": "</s>",
        "tokenizer_class": "XLMRobertaTokenizer",
        "unk_token": "<unk>",
    }
    # sentencepiece id -> HF id (fairseq offset of 1 for normal pieces)
    idmap = {0: 3, 1: 0, 2: 2}
    return tok, config, idmap


def unigram_fallback(sp, proto):
    vocab = [[sp.id_to_piece(i), score(sp, i)] for i in range(sp.get_piece_size())]
    unk = sp.unk_id()
    specials = [i for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)]
    added_tokens = [added(i, vocab[i][0], True, normalized=False) for i in specials]
    meta = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    normalizer = {
        "type": "Sequence",
        "normalizers": [{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}],
    }
    eos = sp.eos_id()
    post = template("$A:0 </s>:0", "$A:0 </s>:0 $B:0 </s>:0", [("</s>", eos)])
    decoder = {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ],
    }
    model = {"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": True}
    tok = tokenizer_json(added_tokens, normalizer, meta, post, decoder, model)
    config = {
        "clean_up_tokenization_spaces": False,
        "eos_token": "</s>",
        "pad_token": "<pad>",
        "tokenizer_class": "T5Tokenizer",
        "unk_token": "<unk>",
    }
    return tok, config


def spm_bpe_merges(sp):
    """SentencePieceExtractor.extract(vocab_scores): every split of every piece
    into two pieces, ordered by the merged piece's score (descending, stable), then by the
    ids of the left and right pieces."""
    n = sp.get_piece_size()
    vocab = {sp.id_to_piece(i): i for i in range(n)}
    scores = {sp.id_to_piece(i): score(sp, i) for i in range(n)}
    merges = []
    for piece in vocab:  # dict order: id order
        local = []
        for k in range(1, len(piece)):
            l, r = piece[:k], piece[k:]
            if l in vocab and r in vocab:
                local.append((l, r, scores[piece]))
        local.sort(key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)
    merges.sort(key=lambda x: x[2], reverse=True)
    return vocab, [(l, r) for l, r, _ in merges]


def llama(sp, metaspace):
    vocab, merges = spm_bpe_merges(sp)
    added_tokens = [added(i, sp.id_to_piece(i), True, normalized=False) for i in range(3)]
    if metaspace:
        normalizer = None
        pre = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}
    else:
        normalizer = {
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": "▁"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            ],
        }
        pre = None
    post = template("<s>:0 $A:0", "<s>:0 $A:0 <s>:1 $B:1", [("<s>", 1)])
    decoder = {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ],
    }
    model = {
        "type": "BPE",
        "dropout": None,
        "unk_token": "<unk>",
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": True,
        "byte_fallback": True,
        "ignore_merges": False,
        "vocab": vocab,
        "merges": [[a, b] for a, b in merges],
    }
    tok = tokenizer_json(added_tokens, normalizer, pre, post, decoder, model)
    config = {
        "add_bos_token": True,
        "add_eos_token": False,
        "bos_token": "<s>",
        "clean_up_tokenization_spaces": False,
        "eos_token": "</s>",
        "legacy": not metaspace,
        "pad_token": None,
        "tokenizer_class": "LlamaTokenizer",
        "unk_token": "<unk>",
    }
    return tok, config


# --------------------------------------------------------------------------
# misc: the remaining components over a WordPiece model


def misc_fixtures(words):
    vocab = wordpiece_vocab(words, cased=False)
    ids = {t: i for i, t in enumerate(vocab)}
    n = len(vocab)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    base_added = [added(ids[t], t, True, normalized=False, lstrip=(t == "[MASK]"), rstrip=(t == "[MASK]")) for t in specials]
    extra_added = [
        added(n + 0, "<ent>", False, normalized=True),
        added(n + 1, "NewWord", False, normalized=True),
        added(n + 2, "cat", False, single_word=True, normalized=False),
        added(n + 3, "<L>", False, lstrip=True, normalized=False),
        added(n + 4, "<R>", True, rstrip=True, normalized=False),
        added(n + 5, "Ünï", True, normalized=False),
    ]
    post = template(
        "[CLS]:0 $A:0 [SEP]:0",
        "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        [("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    model = {
        "type": "WordPiece",
        "unk_token": "[UNK]",
        "continuing_subword_prefix": "##",
        "max_input_chars_per_word": 100,
        "vocab": ids,
    }
    dec = {"type": "WordPiece", "prefix": "##", "cleanup": True}
    out = {}
    out["misc"] = tokenizer_json(
        base_added + extra_added,
        {
            "type": "Sequence",
            "normalizers": [
                {"type": "NFKC"},
                {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
                {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
                {"type": "Lowercase"},
                {"type": "NFD"},
                {"type": "StripAccents"},
                {"type": "NFC"},
                {"type": "Strip", "strip_left": True, "strip_right": True},
            ],
        },
        {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Whitespace"},
                {"type": "Punctuation", "behavior": "Isolated"},
                {"type": "Digits", "individual_digits": True},
            ],
        },
        post,
        dec,
        model,
    )
    # The same tokens under ids the file gets wrong, one of them twice: as
    # Hugging Face loads the file (AddedVocabulary::add_tokens in file order),
    # a token the vocabulary has takes the vocabulary's id, the others the
    # vocabulary's size and on, whatever ids the file says.
    wrong = [n + 40, 7, n + 3, 2 * n, n + 1, n + 90]
    renumbered = [dict(a, id=w) for a, w in zip(extra_added, wrong)]
    out["misc-renumbered"] = dict(out["misc"], added_tokens=base_added + renumbered + [dict(renumbered[0])])
    splits = [
        ("removed", {"Regex": "[-_/.,]"}, "Removed", False),
        ("isolated", {"String": "-"}, "Isolated", False),
        ("merged-with-previous", {"Regex": "[-_/.,]"}, "MergedWithPrevious", False),
        ("merged-with-next", {"Regex": "[-_/.,]"}, "MergedWithNext", False),
        ("contiguous", {"Regex": "[-_/.,]"}, "Contiguous", False),
        ("invert", {"Regex": "\\p{L}+|\\p{N}+"}, "Isolated", True),
    ]
    for name, pattern, behavior, invert in splits:
        out["misc-split-" + name] = tokenizer_json(
            list(base_added),
            {
                "type": "Sequence",
                "normalizers": [
                    {"type": "NFKD"},
                    {"type": "Lowercase"},
                    {"type": "Strip", "strip_left": True, "strip_right": False},
                    {"type": "Prepend", "prepend": "▁"},
                ],
            },
            {
                "type": "Sequence",
                "pretokenizers": [
                    {"type": "WhitespaceSplit"},
                    {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert},
                ],
            },
            post,
            dec,
            model,
        )
    config = {
        "clean_up_tokenization_spaces": True,
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
        "pad_token": "[PAD]",
        "sep_token": "[SEP]",
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "[UNK]",
    }
    return out, config


# --------------------------------------------------------------------------


def spm_golden(outdir, name, sp, idmap=None):
    """What sentencepiece itself makes of texts.json (for reference only)."""
    texts_path = os.path.join(outdir, "texts.json")
    if not os.path.exists(texts_path):
        return
    with open(texts_path, encoding="utf-8") as f:
        texts = json.load(f)["texts"]
    lines = []
    for t in texts:
        ids = sp.encode(t)
        pieces = [sp.id_to_piece(i) for i in ids]
        if idmap is not None:
            ids = [idmap.get(i, i + 1) for i in ids]
        lines.append(json.dumps({"text": t, "ids": ids, "tokens": pieces}, ensure_ascii=False))
    path = os.path.join(outdir, name, "spm_golden.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write('{\n"source": "sentencepiece %s SentencePieceProcessor.encode (not Hugging Face; reference only)",\n"items": [\n' % __import__("sentencepiece").__version__)
        f.write(",\n".join(lines))
        f.write("\n]\n}\n")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    words = load_words()
    write_texts(outdir)

    for cased in (False, True):
        tok, config = bert(words, cased)
        write(outdir, "bert-cased" if cased else "bert-uncased", tok, config)

    merges = bytelevel_bpe(words, 1000)
    for as_str in (False, True):
        tok, config = roberta(merges, as_str)
        write(outdir, "roberta-merges-str" if as_str else "roberta", tok, config)
    tok, config = modernbert(merges)
    write(outdir, "modernbert", tok, config)

    corpus = spm_corpus(words, 4000, SEED + 2)
    sp, proto = train_spm(
        corpus,
        model_type="unigram",
        vocab_size=1500,
        normalization_rule_name="nmt_nfkc",
        character_coverage=1.0,
    )
    tok, config, idmap = xlmr(sp, proto)
    write(outdir, "xlmr", tok, config)
    spm_golden(outdir, "xlmr", sp, idmap)

    sp, proto = train_spm(
        corpus,
        model_type="unigram",
        vocab_size=900,
        normalization_rule_name="identity",
        character_coverage=0.9995,
        byte_fallback=True,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
    )
    tok, config = unigram_fallback(sp, proto)
    write(outdir, "unigram-fallback", tok, config)
    spm_golden(outdir, "unigram-fallback", sp)

    sp, proto = train_spm(
        corpus,
        model_type="bpe",
        vocab_size=1200,
        normalization_rule_name="identity",
        character_coverage=0.995,
        byte_fallback=True,
        split_digits=True,
        allow_whitespace_only_pieces=True,
        remove_extra_whitespaces=False,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
    )
    for metaspace in (False, True):
        tok, config = llama(sp, metaspace)
        name = "llama-bpe-metaspace" if metaspace else "llama-bpe"
        write(outdir, name, tok, config)
        spm_golden(outdir, name, sp)

    fixtures, config = misc_fixtures(words)
    for name in sorted(fixtures):
        write(outdir, name, fixtures[name], config)


if __name__ == "__main__":
    main()
