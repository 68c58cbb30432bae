#!/usr/bin/env python3
"""gen_norm_vectors.py -- the expected characters of Hugging Face's
normalizers for tests/test_normalizers.c, computed here from their
definitions (tokenizers/src/normalizers) with Python's unicodedata, not
from core/tokenizer/normalize.c:

* NFD, NFKD, NFC, NFKC: unicodedata.normalize;
* Lowercase: each character's own lowercase mapping (Rust's
  char::to_lowercase: full mappings, no final-sigma context);
* StripAccents: drops M* characters (is_combining_mark);
* BertNormalizer: clean_text (drop NUL, U+FFFD and Cc/Cf/Co but tab, LF
  and CR; then White_Space to ' '), handle_chinese_chars (spaces around
  CJK ideographs), strip_accents (NFD, drop Mn), lowercase, in that order;
  strip_accents unset follows lowercase;
* Strip (White_Space), Replace (a String pattern, left to right), Prepend
  (only before a non-empty text), Sequence.

Writes tests/data/normalize/vectors.tsv: NAME <TAB> input as hex UTF-8
<TAB> output as hex UTF-8, for every name of NORMALIZERS (the same names
and JSON as in the C test) over hand-picked texts and random ones from a
palette of characters assigned by Unicode 6.0 (tok_hfucd.h keeps the
Unicode ages HF's crates know).

Usage: tools/gen_norm_vectors.py [OUT]
"""
import random
import sys
import unicodedata as ud

WS = {chr(c) for c in (9, 10, 11, 12, 13, 32, 0x85, 0xA0, 0x1680, 0x2028,
                       0x2029, 0x202F, 0x205F, 0x3000)} | \
     {chr(c) for c in range(0x2000, 0x200B)}


def cjk(c):
    o = ord(c)
    return 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or \
        0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x2A6DF


def lower(s):
    return "".join(c.lower() for c in s)


def strip_accents(s):
    return "".join(c for c in s if not ud.category(c).startswith("M"))


def bert(clean=True, chinese=True, strip=None, lowercase=True):
    if strip is None:
        strip = lowercase

    def run(s):
        if clean:
            s = "".join(c for c in s if not (
                c in "\0\ufffd" or (c not in "\t\n\r" and
                                    ud.category(c) in ("Cc", "Cf", "Co"))))
            s = "".join(" " if c in WS else c for c in s)
        if chinese:
            s = "".join(" %s " % c if cjk(c) else c for c in s)
        if strip:
            s = "".join(c for c in ud.normalize("NFD", s)
                        if ud.category(c) != "Mn")
        if lowercase:
            s = lower(s)
        return s
    return run


def hf_strip(left, right):
    def run(s):
        while left and s and s[0] in WS:
            s = s[1:]
        while right and s and s[-1] in WS:
            s = s[:-1]
        return s
    return run


def seq(*fs):
    def run(s):
        for f in fs:
            s = f(s)
        return s
    return run


NORMALIZERS = {
    "nfd": lambda s: ud.normalize("NFD", s),
    "nfkd": lambda s: ud.normalize("NFKD", s),
    "nfc": lambda s: ud.normalize("NFC", s),
    "nfkc": lambda s: ud.normalize("NFKC", s),
    "lowercase": lower,
    "strip_accents": strip_accents,
    "bert": bert(),
    "bert_cased": bert(lowercase=False),
    "bert_cased_strip": bert(lowercase=False, strip=True),
    "bert_raw": bert(clean=False, chinese=False),
    "bert_lower_keep_accents": bert(strip=False),
    "strip_both": hf_strip(True, True),
    "strip_left": hf_strip(True, False),
    "replace_seq": seq(lambda s: s.replace(" ", "\u2581"),
                       lambda s: s.replace("ab", "X"),
                       lambda s: s.replace("\u00e9", "")),
    "prepend_seq": seq(lambda s: ud.normalize("NFKC", s),
                       lambda s: ("\u2581" + s) if s else s,
                       lower),
}

HAND = [
    "", "Hello World", "H\u00e9llo W\u00f6rld", "e\u0301\u0327",
    "\u1e9b\u0323", "q\u0307\u0323", "\ud55c\uad6d\uc5b4", "\uac00\uac01",
    "\u1100\u1161\u11a8", "\u1100\u1161", "\u4e2d\u6587abc",
    "\uf900\uf901", "\ufb01\u00b2\u00bd\u212b\u212a", "\u01c4\u01c5",
    "\u0390\u03a3\u03c3", "\u0130I\u0131", "\u00df\u1e9e", "\t\n\r x \u0085",
    "a\u00a0b\u2028c\u200bd\ufffde\x00f\x01g", "  lead and trail  ",
    "\u3000\u3000x\u3000", "a" + "\u0301\u0323\u0345" * 14,
    "A" + "\u0345\u0301\u0323\u0308" * 10 + "b", "\u2160\u216b\u3392",
    "\u0041\u030a\u0301", "abab a b", "\u00e9\u00e9 ab\u00e9",
    # a kept mark with a combining class (Mc): BertNormalizer's steps
    "A\U0001d165\u0301 \u4e2d\t\u00c9\x01\u00a0",
    "\U0001d15e\u0323\U0001d165 x\u3000\u4e2d\u0130", "\U0001d165",
]

PALETTE = list("aAbBzZ \t\n\r.") + [
    "\u00c9", "\u00e9", "\u00f1", "\u03a9", "\u03a3", "\u00df", "\u0130",
    "\u01c5", "\ufb01", "\u00b2", "\u00bd", "\u212b", "\u212a", "\u1e9b",
    "\u0323", "\u0307", "\u0301", "\u0327", "\u0308", "\u0345", "\ud55c",
    "\uac00", "\uac01", "\u1100", "\u1161", "\u11a8", "\u4e2d", "\uf900",
    "\u0085", "\u00a0", "\u2028", "\u200b", "\ufffd", "\x00", "\x01",
    "\u3000", "\u01c4", "\u3392", "\u216b", "\u0390", "\u00c5",
    "\U0001d165", "\U0001d15e",
]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else \
        "tests/data/normalize/vectors.tsv"
    rnd = random.Random(29)
    texts = list(HAND)
    for _ in range(150):
        texts.append("".join(rnd.choice(PALETTE)
                             for _ in range(rnd.randint(1, 12))))
    with open(path, "w", encoding="ascii") as f:
        f.write("# tools/gen_norm_vectors.py: normalizer, input (hex "
                "UTF-8), output (hex UTF-8)\n")
        for name, fn in NORMALIZERS.items():
            for t in texts:
                f.write("%s\t%s\t%s\n" % (name, t.encode().hex() or "-",
                                          fn(t).encode().hex() or "-"))


if __name__ == "__main__":
    main()
