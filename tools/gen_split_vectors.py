#!/usr/bin/env python3
"""gen_split_vectors.py -- the expected pieces of tiktoken's split regexes
for tests/test_split_patterns.c, computed by the Python `regex` module (the
reference: it runs the regexes themselves, with the same leftmost-first
alternation and backtracking as Rust's fancy-regex).

Writes tests/data/split/vectors.tsv: one line per case,
    PATTERN <TAB> TEXT as hex UTF-8 <TAB> piece ends (byte offsets, commas)
Cases: hand-picked strings for every alternative of each pattern (prefixes,
contractions in both cases, digit groups, newline runs, Unicode classes),
then random strings from a palette of characters of every class, fixed seed.
The palette avoids the characters whose class the Unicode versions or
engines disagree on (U+180E, U+200B, U+FEFF, U+001C..U+001F).

Usage: tools/gen_split_vectors.py [OUT]   (needs python3-regex)
"""
import random
import sys

import regex

PATTERNS = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"""
            r"""|\s+(?!\S)|\s+""",
    "cl100k_base": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+"""
                   r"""|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"""
                   r"""|\s+(?!\S)|\s+""",
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+"""
             r"""|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "o200k_base": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*"""
        r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"""
        r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]),
}

HAND = [
    "Hello world", "hello  world", "it's", "IT'S", "we'LL", "they're",
    "You've", "I'm", "he'd", "don't", "'t", "'x", "'", "''s", "a'", "'ſ",
    "'S", "John's", "JOHN'S", "HelloWorld", "ABCdef", "abcDEF", "ǅungla",
    "ʰello", "中文字", "e\u0301t\u00e9", "\u0301abc", "\u0301", "12345678",
    "1 2  3", " 123", "x1234567y", "Ⅻ½٣", "$hello", "\nhello", "\rHello",
    " $hello", "!!!\n\n", "?!/\r\n/", " ...", "a  \n\n  b", "  \r\n  ",
    "   ", "a   ", "a \u3000b", "\u00a0\u00a0x", "a\u2028b", "\t\tx",
    "x\n \n", "𝐀𝐁c", "😀😀 ok", " 😀", "a/b//c", "end.\n", "\n", " ",
    "'s'S'll", "ſ", "-->", " - x", "IPhone's", "e\u0301E\u0301", "ǅǅ",
    "ʰʰʰ", "HTTPServer", "getHTTP2", "x\u0301\u0301\u0301y",
]

PALETTE = list("aZ'sStTlLdDmMrRvVeE0 9\t\n\r.!/-$") + [
    "\u017f", "\u01c5", "\u02b0", "\u4e2d", "\u0301", "\u0903", "\u20dd",
    "\u0663", "\u216b", "\u00bd", "\u00a0", "\u3000", "\u2028", "\u0085",
    "\U0001d400", "\U0001f600", "\u00e9", "\u00c9", "\u2019",
]


def ends(pat, text):
    out, pos = [], 0
    for m in pat.finditer(text):
        assert m.start() == pos, (text, m)  # the pieces tile the text
        pos = m.end()
        out.append(len(text[:pos].encode()))
    assert pos == len(text), text
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else \
        "tests/data/split/vectors.tsv"
    rnd = random.Random(29)
    texts = list(HAND)
    for _ in range(400):
        texts.append("".join(rnd.choice(PALETTE)
                             for _ in range(rnd.randint(1, 14))))
    with open(path, "w", encoding="ascii") as f:
        f.write("# tools/gen_split_vectors.py: pattern, text (hex UTF-8), "
                "piece ends\n")
        for name, src in PATTERNS.items():
            pat = regex.compile(src)
            for t in texts:
                f.write("%s\t%s\t%s\n" % (name, t.encode().hex(),
                                          ",".join(map(str, ends(pat, t)))))


if __name__ == "__main__":
    main()
