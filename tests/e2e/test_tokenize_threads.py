"""`tokvec tokenize --threads N` on a file: blocks encoded on several
threads give exactly the bytes one thread gives, in order, for a whole
text (byte-level BPE cut at tokvec_tokenizer_cut's places, GPT-2 and a
.tiktoken pattern) and for JSON lines (BPE and WordPiece, ids and
offsets, with and without the post-processor's tokens), and a bad line
in a later block stops at the same line with the same output before it.
The files are ~1 MB, several blocks of 256 KB each. The file is read,
not mapped: a file on standard input is read from where it stands, and
one truncated while the process runs gives a shorter text, never a
SIGBUS.

Run: /usr/bin/python3 tests/e2e/test_tokenize_threads.py --binary build/tokvec
"""
import base64
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support as tc  # noqa: E402  (the e2e support module)

GPT2 = os.path.join(tc.TOP, "data", "gpt2")
BGE = os.path.join(tc.TOP, "tests", "data", "bge", "tokenizer.json")
VERDICT = os.path.join(tc.TOP, "tests", "data", "the-verdict.txt")


def mixed_text(size):
    """The book's text, with lines of other scripts, white space next to
    newlines, '/', CR LF and special tokens, shuffled by lines."""
    with open(VERDICT, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    lines += ["\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440.",
              "\u4e2d\u6587\u5b57 \u65e5\u672c\u8a9e\u3067\u3059",
              "  indented", "\tTab.", "/slash", "a.\r", "<|endoftext|>x",
              "", " ", "caf\u00e9 na\u00efve", "12345 678", "'s 've"]
    r = random.Random(5)
    out = []
    total = 0
    while total < size:
        line = r.choice(lines)
        out.append(line)
        total += len(line.encode()) + 1
    return "\n".join(out) + "\n"


class Threads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        text = mixed_text(1 << 20)
        cls.text = os.path.join(cls.tmp.name, "mixed.txt")
        with open(cls.text, "w", encoding="utf-8") as fh:
            fh.write(text)
        cls.jsonl = os.path.join(cls.tmp.name, "mixed.jsonl")
        with open(cls.jsonl, "w", encoding="utf-8") as fh:
            for line in text.splitlines():
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_tok(self, threads, *args, check=True):
        return subprocess.run([tc.BINARY, "tokenize", "--threads",
                               str(threads)] + list(args),
                              capture_output=True, timeout=300, check=check)

    def same_for_threads(self, *args):
        one = self.run_tok(1, *args).stdout
        self.assertGreater(len(one), 1 << 20)
        for n in (2, 3, 8):
            self.assertEqual(self.run_tok(n, *args).stdout, one,
                             "--threads %d %s" % (n, " ".join(args)))
        return one

    def test_a_whole_text_cut_over_threads_is_one_threads_array(self):
        one = self.same_for_threads("--tokenizer", GPT2, self.text)
        ids = json.loads(one)
        self.assertIn(50256, ids)
        with open(self.text, "rb") as fh:
            piped = subprocess.run([tc.BINARY, "tokenize", "--tokenizer",
                                    GPT2], stdin=fh, capture_output=True,
                                   timeout=300).stdout
        self.assertEqual(piped, one)
        self.same_for_threads("--tokenizer", GPT2, "--no-special", self.text)

    def test_added_tokens_that_strip_white_space_are_never_cut_from_it(self):
        # GPT-2 as HF's byte-level tokenizer.json with an added token
        # that takes the white space on both sides (lstrip, rstrip, as
        # XLM-R's <mask>): at the start of a line it swallows the newline
        # before it, so no cut may fall between them
        with open(os.path.join(GPT2, "encoder.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        with open(os.path.join(GPT2, "vocab.bpe"), encoding="utf-8") as f:
            merges = [ln.split(" ") for ln in f.read().splitlines()[1:]
                      if ln]
        tok = {"version": "1.0", "truncation": None, "padding": None,
               "added_tokens": [
                   {"id": 50256, "content": "<|endoftext|>",
                    "single_word": False, "lstrip": False, "rstrip": False,
                    "normalized": False, "special": True},
                   {"id": 50257, "content": "<mask>", "single_word": False,
                    "lstrip": True, "rstrip": True, "normalized": False,
                    "special": True}],
               "normalizer": None,
               "pre_tokenizer": {"type": "ByteLevel",
                                 "add_prefix_space": False,
                                 "trim_offsets": True, "use_regex": True},
               "post_processor": None, "decoder": None,
               "model": {"type": "BPE", "dropout": None, "unk_token": None,
                         "continuing_subword_prefix": None,
                         "end_of_word_suffix": None, "fuse_unk": False,
                         "byte_fallback": False, "ignore_merges": False,
                         "vocab": vocab, "merges": merges}}
        path = os.path.join(self.tmp.name, "strip.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(tok, fh)
        r = random.Random(7)
        text = os.path.join(self.tmp.name, "strip.txt")
        with open(text, "w", encoding="utf-8") as fh:
            size = 0
            while size < (1 << 20) + (1 << 18):
                # every line starts with it: every cut place is one
                line = r.choice(["<mask> is", "<mask> x <mask>",
                                 "<mask>And so.", "<mask>word"])
                fh.write(line + "\n")
                size += len(line) + 1
        one = self.same_for_threads("--tokenizer", path, text)
        self.assertIn(50257, json.loads(one))

    def test_a_tiktoken_pattern_cuts_the_same(self):
        # the tiny vocabulary of bytes plus tokens across newlines: a cut
        # that split a piece differently would change the ids
        path = os.path.join(self.tmp.name, "cl100k_base.tiktoken")
        with open(path, "w") as fh:
            for b in range(256):
                fh.write("%s %d\n" % (base64.b64encode(bytes([b])).decode(),
                                      b))
            for k, t in enumerate([b"\n\n", b".\n", b"\n/", b" \n",
                                   b"\r\n", b"th", b"the"]):
                fh.write("%s %d\n" % (base64.b64encode(t).decode(), 256 + k))
        for pattern in ("cl100k_base", "o200k_base", "qwen2"):
            self.same_for_threads("--tokenizer", path, "--pattern", pattern,
                                  self.text)

    def test_jsonl_lines_over_threads_are_in_order(self):
        self.same_for_threads("--tokenizer", GPT2, "--jsonl", self.jsonl)
        self.same_for_threads("--tokenizer", GPT2, "--jsonl", "--offsets",
                              self.jsonl)
        one = self.same_for_threads("--tokenizer", BGE, "--jsonl",
                                    "--add-special", self.jsonl)
        lines = one.decode().splitlines()
        with open(self.jsonl, encoding="utf-8") as fh:
            self.assertEqual(len(lines), sum(1 for _ in fh))
        self.assertTrue(all(json.loads(l)[0] == 101 for l in lines))
        self.same_for_threads("--tokenizer", BGE, "--jsonl", "--offsets",
                              self.jsonl)

    def test_a_bad_line_in_a_later_block_stops_there(self):
        bad = os.path.join(self.tmp.name, "bad.jsonl")
        with open(self.jsonl, encoding="utf-8") as fh:
            lines = fh.read().splitlines(True)
        at = len(lines) * 3 // 4
        with open(bad, "w", encoding="utf-8") as fh:
            fh.writelines(lines[:at] + ["not json\n"] + lines[at:])
        one = self.run_tok(1, "--tokenizer", GPT2, "--jsonl", bad,
                           check=False)
        self.assertEqual(one.returncode, 2)
        self.assertIn(b"input line %d: not a JSON string" % (at + 1),
                      one.stderr)
        self.assertEqual(len(one.stdout.splitlines()), at)
        two = self.run_tok(2, "--tokenizer", GPT2, "--jsonl", bad,
                           check=False)
        self.assertEqual((two.returncode, two.stdout, two.stderr),
                         (one.returncode, one.stdout, one.stderr))

    def test_a_file_on_stdin_is_read_from_where_it_stands(self):
        with open(self.text, "rb") as fh:
            data = fh.read()
        at = data.index(b"\n", len(data) // 3) + 1
        want = subprocess.run([tc.BINARY, "tokenize", "--threads", "1",
                               "--tokenizer", GPT2, "-"], input=data[at:],
                              capture_output=True, timeout=300,
                              check=True).stdout
        for n in (1, 2, 8):
            with open(self.text, "rb") as fh:
                fh.seek(at)
                got = subprocess.run([tc.BINARY, "tokenize", "--threads",
                                      str(n), "--tokenizer", GPT2],
                                     stdin=fh, capture_output=True,
                                     timeout=300, check=True).stdout
            self.assertEqual(got, want, "--threads %d" % n)
        with open(self.text, "rb") as fh:
            whole = subprocess.run([tc.BINARY, "tokenize", "--threads", "2",
                                    "--tokenizer", GPT2], stdin=fh,
                                   capture_output=True, timeout=300,
                                   check=True).stdout
        self.assertEqual(whole, self.run_tok(1, "--tokenizer", GPT2,
                                             self.text).stdout)

    def test_a_file_truncated_while_it_runs_is_no_sigbus(self):
        # once the first ids are out the workers are at it: the file is
        # cut to 1000 bytes then (a mapped file would lose its pages under
        # them: SIGBUS). The text was read before: all of its ids come.
        with open(self.text, "rb") as fh:
            data = fh.read() * 8
        big = os.path.join(self.tmp.name, "shrinks.txt")
        with open(big, "wb") as fh:
            fh.write(data)
        want = self.run_tok(1, "--tokenizer", GPT2, big).stdout
        for threads in (2, 8):
            with open(big, "wb") as fh:
                fh.write(data)
            p = subprocess.Popen([tc.BINARY, "tokenize", "--threads",
                                  str(threads), "--tokenizer", GPT2, big],
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, bufsize=0)
            first = p.stdout.read(1)  # unbuffered: communicate reads on
            os.truncate(big, 1000)
            out, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, (threads, err))
            self.assertEqual(first + out, want)

    def test_threads_must_be_a_number_from_1(self):
        for v in ("0", "x", "-2"):
            r = self.run_tok(v, "--tokenizer", GPT2, self.text, check=False)
            self.assertEqual(r.returncode, 2)
            self.assertIn(b"--threads", r.stderr)


if __name__ == "__main__":
    tc.main()
