"""End-to-end: `tokvec tokenize --jsonl` (server/cli/cli_text.c), one JSON
string a line, from a pipe and from a file:

* with --offsets, every [id, start, stop] names the bytes of the text the
  token spells (GPT-2's encoder.json read here, with its byte alphabet),
  the spans tile the text, and the ids are those printed without
  --offsets;
* the JSON escapes (\\n \\t \\" \\\\ \\/ \\b \\f \\r and \\uXXXX, surrogate
  pairs) decode to the characters they name, raw UTF-8 passes as is;
* arrays longer than the output buffer (64 KiB) come out whole;
* a line that is no JSON string (a number, raw bytes that are not UTF-8,
  a string with something after it) is exit 2 naming the line; a second
  FILE, a missing one, are usage errors (2).

Run: python3 tests/e2e/test_tokenize_lines.py --binary build/tokvec
"""
import json
import os
import subprocess
import tempfile
import unittest

import support as tc

GPT2 = os.path.join(tc.TOP, "data", "gpt2")


def byte_decoder():
    """GPT-2's bytes_to_unicode, reversed: character -> byte."""
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("\u00a1"), ord("\u00ac") + 1)) +
          list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def token_bytes():
    dec = byte_decoder()
    with open(os.path.join(GPT2, "encoder.json"), encoding="utf-8") as f:
        enc = json.load(f)
    return {i: bytes(dec[c] for c in s) for s, i in enc.items()}


def tokenize(args, data):
    return subprocess.run([tc.BINARY, "tokenize", "--tokenizer", GPT2]
                          + args, input=data, capture_output=True,
                          timeout=300)


TEXTS = [
    "Hello, w\u00f6rld! \U0001F600",
    "tabs\tand\nnew lines\r\n, \"quotes\", back\\slash, a/b, \b\f",
    "\u00e9t\u00e9 \u4e2d\u6587 \u0645\u0631\u062d\u0628\u0627 \u00bd",
    "",
    " leading and trailing  ",
    "<|endoftext|> special",
]


class JsonLines(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(os.path.join(GPT2, "encoder.json")):
            raise unittest.SkipTest("no data/gpt2 (make data)")
        cls.tokens = token_bytes()

    def check_spans(self, text, spans):
        data = text.encode()
        at = 0
        for tid, start, stop in spans:
            self.assertEqual(start, at, text)
            self.assertEqual(self.tokens[tid], data[start:stop], text)
            at = stop
        self.assertEqual(at, len(data), text)

    def run_lines(self, args, lines, from_file):
        data = b"".join(l + b"\n" for l in lines)
        if not from_file:
            return tokenize(args, data)
        with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
            f.write(data)
            f.flush()
            return tokenize(args + [f.name], b"")

    def test_offsets_name_the_bytes_of_each_token(self):
        # ensure_ascii=True: \\uXXXX escapes (jansson's path); False: raw
        # UTF-8 with the short escapes (the fast path)
        for ascii_only in (True, False):
            lines = [json.dumps(t, ensure_ascii=ascii_only).encode()
                     for t in TEXTS]
            for from_file in (False, True):
                r = self.run_lines(["--jsonl", "--offsets"], lines,
                                   from_file)
                self.assertEqual(r.returncode, 0, r.stderr)
                spans = [json.loads(l) for l in r.stdout.splitlines()]
                self.assertEqual(len(spans), len(TEXTS))
                for text, s in zip(TEXTS, spans):
                    self.check_spans(text, s)
                ids = self.run_lines(["--jsonl"], lines, from_file)
                self.assertEqual(ids.returncode, 0, ids.stderr)
                self.assertEqual([json.loads(l) for l in
                                  ids.stdout.splitlines()],
                                 [[t for t, _, _ in s] for s in spans])
        # the special token is one id with specials on, text without
        r = self.run_lines(["--jsonl", "--no-special"],
                           [json.dumps(TEXTS[-1]).encode()], False)
        self.assertNotIn(50256, json.loads(r.stdout))

    def test_arrays_longer_than_the_buffer_come_out_whole(self):
        text = " ".join("w%d" % (i % 997) for i in range(30000))
        for args in (["--jsonl"], ["--jsonl", "--offsets"]):
            r = tokenize(args, json.dumps(text).encode() + b"\n")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertGreater(len(r.stdout), 1 << 17)
            got = json.loads(r.stdout)
            if "--offsets" in args:
                self.check_spans(text, got)
            else:
                self.assertEqual(b"".join(self.tokens[t] for t in got),
                                 text.encode())
        plain = tokenize([], text.encode())  # the whole-input mode
        self.assertEqual(json.loads(plain.stdout), json.loads(
            tokenize(["--jsonl"], json.dumps(text).encode()).stdout))

    def test_a_line_that_is_no_json_string_names_its_line(self):
        for bad in (b"123", b"\"caf\xc3\" ", b"\"\xc0\xaf\"",
                    b"\"ok\" trailing", b"\"bad \\q escape\"", b"\"open",
                    b"\"\xed\xa0\x80\"", b"\"\xf4\x90\x80\x80\"",
                    b"", b"\"ends in a backslash\\",
                    b"\"a NUL after a backslash \\\x00\""):
            r = tokenize(["--jsonl"], b"\"fine\"\n" + bad + b"\n\"x\"\n")
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn(b"input line 2: not a JSON string", r.stderr, bad)
            self.assertEqual(len(r.stdout.splitlines()), 1, bad)

    def test_utf8_at_each_boundary_is_text_and_past_it_refused(self):
        """The fast line reader's UTF-8 bounds: the first and last
        sequence of each lead byte's range is the text (the ids of the
        whole-input mode), one past it is refused like jansson refuses it;
        spaces, tabs and CRs after the string are fine."""
        for ok in (b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80",
                   b"\xe1\x80\x80", b"\xed\x9f\xbf", b"\xef\xbf\xbf",
                   b"\xf0\x90\x80\x80", b"\xf3\xbf\xbf\xbf",
                   b"\xf4\x8f\xbf\xbf"):
            lines = b"".join(b"\"a" + ok + b"z\"" + tail + b"\n"
                             for tail in (b"", b" \t\r"))
            r = tokenize(["--jsonl"], lines)
            self.assertEqual(r.returncode, 0, (ok, r.stderr))
            whole = json.loads(tokenize([], b"a" + ok + b"z").stdout)
            self.assertEqual([json.loads(l) for l in r.stdout.splitlines()],
                             [whole, whole], ok)
        for bad in (b"\xe0\x9f\xbf", b"\xf0\x8f\xbf\xbf", b"\xf5\x80\x80\x80",
                    b"\xc1\xbf", b"\x80", b"\xe1\x80\"", b"\xe1\xc0\x80",
                    b"\\", b"\x01", b"\"x"):
            r = tokenize(["--jsonl"], b"\"fine\"\n\"a" + bad + b"\n")
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn(b"input line 2: not a JSON string", r.stderr, bad)

    def test_control_characters_and_nul_escapes_are_text(self):
        text = "a\u0000b\u0001c"
        r = tokenize(["--jsonl", "--offsets"], json.dumps(text).encode()
                     + b"\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_spans(text, json.loads(r.stdout))

    def test_files_that_cannot_be_read_are_usage_errors(self):
        r = tokenize(["/nonexistent/in.txt"], b"")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"/nonexistent/in.txt", r.stderr)
        r = tokenize(["a.txt", "b.txt"], b"")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"one FILE only", r.stderr)


if __name__ == "__main__":
    tc.main()
