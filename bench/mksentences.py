"""mksentences.py TEXT OUT N -- N request bodies for `make bench-sentences`
(OUT/body-0.json ...): each a POST /v1/embeddings of 256 short lines of
mixed-language prose, base64 answers. The lines come from bench/mktext.sh's
text (Debian's licenses, the translations of installed programs in 17
languages, man pages): lines of 50 to 80 UTF-8 bytes with at least 60 %
letters (so roff requests and tables are left out), interleaved by
script so every body mixes languages; 256 x N distinct lines. Prints the
mean line length in bytes.
"""
import json
import os
import sys
import unicodedata

PER = 256


def script(line):
    """A coarse script key: the Unicode name's first word of the first
    letter beyond ASCII, else LATIN."""
    for ch in line:
        if ord(ch) > 127 and ch.isalpha():
            return unicodedata.name(ch, "X").split()[0]
    return "LATIN"


def main(text, out, n):
    seen, by = set(), {}
    with open(text, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = " ".join(line.split())
            b = len(line.encode())
            if not 50 <= b <= 80 or line in seen or line.startswith("."):
                continue
            if "\\" in line or "\ufffd" in line:
                continue
            if sum(c.isalpha() or c == " " for c in line) < 0.6 * len(line):
                continue
            seen.add(line)
            by.setdefault(script(line), []).append(line)
    # round-robin over the scripts: every body mixes them
    pools = sorted(by.values(), key=len, reverse=True)
    lines, i = [], 0
    while len(lines) < PER * n and any(pools):
        p = pools[i % len(pools)]
        if p:
            lines.append(p.pop(0))
        i += 1
    if len(lines) < PER * n:
        sys.exit("mksentences: only %d lines" % len(lines))
    os.makedirs(out, exist_ok=True)
    for k in range(n):
        body = {"input": lines[k * PER:(k + 1) * PER], "model": "potion",
                "encoding_format": "base64"}
        with open(os.path.join(out, "body-%d.json" % k), "w") as f:
            json.dump(body, f, ensure_ascii=False)
    used = lines[:PER * n]
    print("%.1f" % (sum(len(x.encode()) for x in used) / len(used)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
