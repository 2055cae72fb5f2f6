#!/usr/bin/python3
"""text_corpus.py - the text section's corpus: sentences made from the word list.

    /usr/bin/python3 bench/text_corpus.py OUT [--sentences 5000] [--seed 32]

Writes OUT: --sentences lines of pseudo-English, one sentence a line (UTF-8,
"\\n" only), made deterministically (Python's Mersenne Twister, seeded) from
/usr/share/dict/american-english: 6 to 28 of its words each (proper names and
possessives as the list has them), about one word in 25 one of the list's
accented words (Bogotá, Düsseldorf, résumé ...), commas, a number now and
then, a quoted or bracketed phrase in some, and a closing . ? or !.  The same
arguments give the same bytes, so bench/tok_bench.c and bench/tok_hf.mjs
read the same text.  Python's standard library only.
"""
import argparse
import random
import sys

WORDS_FILE = "/usr/share/dict/american-english"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--sentences", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=32)
    a = ap.parse_args()
    with open(WORDS_FILE, encoding="utf-8") as f:
        words = [w.strip() for w in f if w.strip()]
    plain = [w for w in words if w.isascii()]
    accented = [w for w in words if not w.isascii()]
    if not plain or not accented:
        sys.exit(f"{WORDS_FILE}: no words")
    rng = random.Random(a.seed)

    def pick(seq):
        return seq[int(rng.random() * len(seq))]

    lines = []
    for _ in range(a.sentences):
        n = 6 + int(rng.random() * 23)
        out = []
        for i in range(n):
            w = pick(accented) if rng.random() < 0.04 else pick(plain)
            if i == 0:
                w = w[:1].upper() + w[1:]
            r = rng.random()
            if r < 0.03:
                w = str(int(rng.random() * 10000))
            elif r < 0.05 and i + 2 < n:
                w = ("\"" + w + " " + pick(plain) + "\"") if rng.random() < 0.5 else \
                    ("(" + w + " " + pick(plain) + ")")
            if i + 1 < n and rng.random() < 0.08:
                w += ","
            out.append(w)
        lines.append(" ".join(out) + pick(".....?!"))
    with open(a.out, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    size = sum(len(s.encode()) + 1 for s in lines)
    print(f"{a.out}: {len(lines)} sentences, {size} bytes, "
          f"{sum(len(s) for s in lines) / len(lines):.1f} characters a sentence on average")


if __name__ == "__main__":
    main()
