"""End-to-end: what tokvec init, inspect, lookup, convert and tokenize
refuse, and how (server/cli/cli.c, cli_text.c): each bad value of each
option is exit 2 with one line naming the option and the value; a file
that cannot be written (a missing folder, /dev/full) is exit 1 naming it,
and leaves no file; inspect counts the non-finite values of every float
dtype (F32, F16, BF16, F64: numbers written here with numpy) and says
"scalar" for a tensor without dimensions and "sinusoidal" for computed
positions.

Run: python3 tests/e2e/test_cli_refusals.py --binary build/tokvec
"""
import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import numpy as np

import support as tc

GPT2 = os.path.join(tc.TOP, "data", "gpt2")


def run(*args, stdout=subprocess.PIPE):
    return subprocess.run([tc.BINARY] + list(args), stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def write_safetensors(path, tensors):
    """tensors: [(name, dtype name, shape, raw bytes)]."""
    hdr, off, data = {}, 0, b""
    for name, dtype, shape, raw in tensors:
        hdr[name] = {"dtype": dtype, "shape": list(shape),
                     "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


class Refusals(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tokvec-cli-refusals-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def refused(self, args, says, code=2):
        r = run(*args)
        self.assertEqual(r.returncode, code, (args, r.stderr))
        self.assertIn(says, r.stderr, args)
        self.assertEqual(r.stdout, "", args)
        return r

    def table(self, name="t.st", *extra):
        r = run("init", "--vocab", "10", "--dim", "4", "--context", "6",
                "-o", self.p(name), *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return self.p(name)

    def test_init_refuses_each_bad_value_naming_it(self):
        out = self.p("x.st")
        base = ["init", "--vocab", "10", "--dim", "4", "-o", out]
        for extra, says in (
                (["stray"], "init: unexpected argument 'stray'"),
                (["--vocab", "0"], "--vocab '0' is not an integer"),
                (["--dim", "2000000"], "--dim '2000000' is not an integer"),
                (["--context", "-1"], "--context '-1' is not an integer"),
                (["--positional", "rotary"], "--positional 'rotary' is not"),
                (["--positional", "auto"], "--positional 'auto' is not"),
                (["--seed", "x1"], "--seed 'x1' is not an integer"),
                (["--padding-idx", "z"], "--padding-idx 'z' is not"),
                (["--padding-idx", "10"],
                 "--padding-idx 10 is outside [-10, 10)"),
                (["--dtype", "f64"], "--dtype 'f64' is not f32, f16"),
                (["--vocab", "2000000000", "--dim", "1048576"],
                 "is too large")):
            self.refused(base + extra, says)
        self.refused(["init", "--vocab", "10", "-o", out],
                     "--vocab, --dim and -o are required")
        self.assertFalse(os.path.exists(out))

    def test_files_that_cannot_be_written_are_runtime_errors(self):
        missing = self.p("no/such/dir/t.st")
        self.refused(["init", "--vocab", "4", "--dim", "2", "-o", missing],
                     missing + ": cannot write", code=1)
        t = self.table()
        self.refused(["convert", t, "-o", missing],
                     missing + ": cannot write", code=1)
        self.assertFalse(os.path.exists(os.path.dirname(missing)))
        with open("/dev/full", "w") as full:
            r = run("lookup", "--table", t, "1", "2", stdout=full)
            self.assertEqual(r.returncode, 1)
            self.assertIn("lookup: write error", r.stderr)
            if os.path.isfile(os.path.join(GPT2, "encoder.json")):
                for args in ([], ["--jsonl"], ["--jsonl", "--offsets"]):
                    r = subprocess.run(
                        [tc.BINARY, "tokenize", "--tokenizer", GPT2] + args,
                        input=b"\"hello\"\n", stdout=full,
                        stderr=subprocess.PIPE, timeout=60)
                    self.assertEqual(r.returncode, 1, args)
                    self.assertIn(b"tokvec", r.stderr, args)

    def test_outputs_longer_than_a_buffer_to_a_full_device_fail(self):
        """A write to /dev/full of more than stdio buffers (a lookup of
        many ids; ids and spans of a long text, over the 64 KiB chunk)
        fails at that write: exit 1, and the error says so."""
        t = self.table()
        with open("/dev/full", "w") as full:
            r = run("lookup", "--table", t, "--no-positions",
                    *(["1"] * 400), stdout=full)
            self.assertEqual(r.returncode, 1)
            self.assertIn("lookup: write error", r.stderr)
            if not os.path.isfile(os.path.join(GPT2, "encoder.json")):
                return
            text = " a" * 30000
            for args, data in (([], text.encode()),
                               (["--jsonl"], json.dumps(text).encode()),
                               (["--jsonl", "--offsets"],
                                json.dumps(text).encode()),
                               (["--jsonl"], b'" a a a a"')):
                r = subprocess.run(
                    [tc.BINARY, "tokenize", "--tokenizer", GPT2] + args,
                    input=data + b"\n", stdout=full,
                    stderr=subprocess.PIPE, timeout=60)
                self.assertEqual(r.returncode, 1, args)
                self.assertIn(b"tokvec: ", r.stderr, args)

    def test_lookup_convert_inspect_refuse_bad_arguments(self):
        t = self.table()
        for args, says in (
                (["lookup", "--table", t, "1x"],
                 "'1x' is not an integer token id"),
                (["lookup", "--table", t, "--start-position", "-2", "1"],
                 "--start-position '-2' is not a non-negative integer"),
                (["lookup", "--table", t, "10"],
                 "token id 10 at position 0 is out of range for "
                 "vocab_size 10"),
                (["lookup", "--table", t, "--start-position", "5", "1", "2"],
                 "start_position 5 + sequence length 2 exceeds "
                 "context_length 6"),
                (["lookup", "--table", t, "--text", "hi", "3"],
                 "give IDs or --text, not both"),
                (["lookup", "--table", t], "need --table FILE and at least"),
                (["inspect", t, t], "inspect: one FILE only"),
                (["inspect"], "inspect: need FILE"),
                (["convert", t, t, "-o", self.p("c.st")],
                 "convert: one input file only"),
                (["convert", t, "-o", self.p("c.st"), "--dtype", "i8"],
                 "--dtype 'i8' is not f32, f16 or bf16"),
                (["convert", t], "convert: need IN and -o OUT")):
            self.refused(args, says)
        self.assertFalse(os.path.exists(self.p("c.st")))

    def test_probe_refuses_each_malformed_url_naming_it(self):
        for url in ("ftp://x", "http://", "http:///health", "http://[::1",
                    "http://[::1]x/", "http://:80/", "http://u@h:80/",
                    "http://h:/", "http://h:1234567/", "http://h:8a/",
                    "http://h:0/", "http://h:65536/", "http://h:80x",
                    "http://" + "h" * 300 + ":80/"):
            self.refused(["probe", url], "tokvec: probe: '%s' is not an "
                         "http://HOST:PORT/PATH URL" % url)
        for url in ("http://h:80/a b", "http://h:80/a\r\nX: y",
                    "http://h:80/" + "p" * 2100):
            self.refused(["probe", url], "tokvec: probe: bad path in")
        self.refused(["probe"], "usage: tokvec probe")
        self.refused(["probe", "a", "b"], "usage: tokvec probe")
        self.refused(["probe", "--timeout", "x"], "probe")
        self.refused(["probe", "-x"], "probe")
        r = run("probe", "-h")
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: tokvec probe", r.stdout)
        self.refused(["probe", "http://no-such-host.invalid:80/"],
                     "tokvec: probe: cannot resolve 'no-such-host.invalid'",
                     code=1)

    def test_probe_is_1_unless_the_answer_is_http_200(self):
        """A listener that answers other bytes, a short answer, an HTTP
        status other than 200, or nothing: exit 1; an [IPv6] literal and
        a URL without a port or path are understood."""
        import socket
        import threading
        for answer, code in ((b"HTTP/1.1 200 OK\r\n\r\n", 0),
                             (b"HTTP/1.0 200 OK\r\n\r\n", 0),
                             (b"HTTP/1.1 503 Busy\r\n\r\n", 1),
                             (b"SSH-2.0-OpenSSH_9.2\r\n", 1),
                             (b"HTTP/1.1", 1), (b"", 1)):
            for family, host in ((socket.AF_INET, "127.0.0.1"),
                                 (socket.AF_INET6, "[::1]")):
                try:
                    ls = socket.socket(family, socket.SOCK_STREAM)
                    ls.bind((host.strip("[]"), 0))
                except OSError:
                    continue  # no IPv6 loopback here
                ls.listen(1)
                got = []

                def serve():
                    c, _ = ls.accept()
                    try:
                        got.append(c.recv(4096))
                        for i in range(0, len(answer), 3):  # in pieces
                            c.sendall(answer[i:i + 3])
                    except OSError:
                        pass  # probe hangs up after 12 bytes
                    finally:
                        c.close()
                t = threading.Thread(target=serve)
                t.start()
                url = "http://%s:%d" % (host, ls.getsockname()[1])
                r = run("probe", url)
                t.join(30)
                ls.close()
                self.assertEqual(r.returncode, code, (answer, url))
                self.assertTrue(got[0].startswith(b"GET / HTTP/1.0\r\n"
                                                  b"Host: "), got)

    def test_long_option_spellings_and_missing_arguments(self):
        out = self.p("o.st")
        r = run("init", "--vocab", "10", "--dim", "4", "--output", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        c = self.p("c.st")
        r = run("convert", out, "--output", c, "--dtype", "bf16")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("BF16", run("inspect", c).stdout)
        missing = "init: --vocab, --dim and -o are required"
        for args in (["--dim", "4", "-o", out], ["--vocab", "10", "-o", out],
                     ["--vocab", "10", "--dim", "4"]):
            self.refused(["init"] + args, missing)
        self.refused(["init", "--vocab", "10", "--dim", "4", "-o", out,
                      "--padding-idx", "-11"],
                     "--padding-idx -11 is outside [-10, 10)")
        r = run("init", "--vocab", "10", "--dim", "4", "-o",
                self.p("p.st"), "--padding-idx", "-10")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.refused(["init", "--vocab", "10", "--dim", "1024", "--context",
                      "20000000", "-o", out], "is too large")
        self.refused(["convert", "-o", c], "convert: need IN and -o OUT")
        self.refused(["lookup", "--text", "hi"],
                     "lookup: need --table FILE and at least one ID")
        self.refused(["lookup", "--table", out, "--text", ""],
                     "a --text that has tokens")

    def test_tokenize_names_a_missing_tokenizer_and_an_unreadable_input(self):
        env = dict(os.environ, TOKVEC_TOKENIZER="")
        r = subprocess.run([tc.BINARY, "tokenize"], input="hi", text=True,
                           capture_output=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("tokvec: tokenize: TOKVEC_TOKENIZER is empty (no "
                      "tokenizer); give --tokenizer FILE or unset it",
                      r.stderr)
        self.refused(["tokenize", "--tokenizer", ""],
                     "tokenize: --tokenizer '' is no tokenizer")
        self.refused(["tokenize", "--tokenizer", "/nonexistent/x.json"],
                     "/nonexistent/x.json")
        if os.path.isfile(os.path.join(GPT2, "encoder.json")):
            # a folder opens but cannot be read: a runtime error
            self.refused(["tokenize", "--tokenizer", GPT2, self.tmp],
                         "tokvec: tokenize: Input/output error", code=1)
            r = subprocess.run([tc.BINARY, "tokenize", "--tokenizer", GPT2,
                                "--add-special", "-"], input="hi",
                               text=True, capture_output=True, timeout=60)
            self.assertEqual((r.returncode, r.stdout), (0, "[5303]\n"))

    def test_tokenize_refuses_a_pattern_where_the_file_has_its_own(self):
        # --pattern names the split of a .tiktoken file (ranks only);
        # encoder.json and every tokenizer.json model bring their own
        # split: the option is refused there (exit 2, one line), with
        # every way of reading the input, and taken for .tiktoken files.
        if not os.path.isfile(os.path.join(GPT2, "encoder.json")):
            self.skipTest("make data: data/gpt2")
        with open(os.path.join(GPT2, "encoder.json"), encoding="utf-8") as f:
            vocab = {k: v for k, v in json.load(f).items() if v < 256}
        bytelevel = self.p("tokenizer.json")
        with open(bytelevel, "w", encoding="utf-8") as f:
            json.dump({"model": {"type": "BPE", "vocab": vocab,
                                 "merges": []},
                       "pre_tokenizer": {"type": "ByteLevel",
                                         "add_prefix_space": False}}, f)
        data = os.path.join(tc.TOP, "tests", "data")
        own = {GPT2: "GPT-2's encoder.json",
               os.path.join(GPT2, "encoder.json"): "GPT-2's encoder.json",
               bytelevel: "a tokenizer.json (BPE)",
               self.tmp: "a tokenizer.json (BPE)",  # the folder holding it
               os.path.join(data, "bge", "tokenizer.json"):
                   "a tokenizer.json (WordPiece)",
               os.path.join(data, "unigram", "seq.json"):
                   "a tokenizer.json (Unigram)",
               os.path.join(data, "bpe-spm", "affix.json"):
                   "a tokenizer.json (BPE)"}
        text = self.p("in.txt")
        with open(text, "w") as f:
            f.write("Hello 12345 world\n")
        modes = ([], ["--jsonl"], ["--threads", "1", text],
                 ["--threads", "2", text], ["--no-special", "-"])
        for tok, kind in own.items():
            for mode in modes:
                args = ["tokenize", "--tokenizer", tok] + mode
                r = subprocess.run([tc.BINARY] + args, input='"Hi"\n',
                                   text=True, capture_output=True,
                                   timeout=60)
                self.assertEqual(r.returncode, 0, (args, r.stderr))
                r = self.refused(args + ["--pattern", "cl100k_base"],
                                 "tokvec: tokenize: --pattern is for "
                                 ".tiktoken files: %s is %s" % (tok, kind))
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        # a .tiktoken file: the pattern chooses the split (gpt2 keeps
        # " 1234" one piece, "1234" merged; cl100k_base cuts digits in
        # threes), and a name that is no pattern is refused
        tt = self.p("ranks.tiktoken")
        with open(tt, "w") as f:
            for b in range(256):
                f.write("%s %d\n" % (base64.b64encode(bytes([b])).decode(),
                                      b))
            for k, t in enumerate([b"12", b"34", b"1234"]):
                f.write("%s %d\n" % (base64.b64encode(t).decode(), 256 + k))
        for pattern, ids in (("gpt2", "[32,258]"),
                             ("cl100k_base", "[32,256,51,52]")):
            r = subprocess.run([tc.BINARY, "tokenize", "--tokenizer", tt,
                                "--pattern", pattern], input=" 1234",
                               text=True, capture_output=True, timeout=60)
            self.assertEqual((r.returncode, r.stdout.replace(" ", "")),
                             (0, ids + "\n"), (pattern, r.stderr))
        self.refused(["tokenize", "--tokenizer", tt, "--pattern", "bert"],
                     "name the split pattern")

    def test_inspect_counts_non_finite_values_of_every_float_dtype(self):
        inf, nan = float("inf"), float("nan")
        vals = [1.0, inf, -inf, nan, 0.5, -2.0]  # 3 non-finite
        f32 = np.array(vals, dtype="<f4")
        bf16 = (f32.view("<u4") >> 16).astype("<u2")  # exact for these
        f64 = ("extra", "F64", [6], np.array(vals, "<f8").tobytes())
        for dtype, raw in (("F32", f32.tobytes()),
                           ("F16", np.array(vals, "<f2").tobytes()),
                           ("BF16", bf16.tobytes())):
            path = self.p(dtype + ".st")
            write_safetensors(path, [  # F64 cannot be the token table
                ("tok_emb.weight", dtype, [3, 2], raw), f64,
                ("step", "I64", [], struct.pack("<q", 7)),
            ])
            r = run("inspect", path)
            self.assertEqual(r.returncode, 0, (dtype, r.stderr))
            rows = {l.split()[0]: l for l in r.stdout.splitlines()
                    if l.startswith("  ")}
            self.assertIn("non-finite 3", rows["tok_emb.weight"], dtype)
            self.assertIn("<- token", rows["tok_emb.weight"], dtype)
            self.assertIn("non-finite 3", rows["extra"], dtype)
            self.assertIn("[scalar]", rows["step"], dtype)
            self.assertNotIn("non-finite", rows["step"], dtype)
            self.assertIn("position    none", r.stdout, dtype)
        t = self.table("s.st", "--positional", "sinusoidal")
        r = run("inspect", t)
        self.assertIn("position    sinusoidal, context_length 6", r.stdout)


if __name__ == "__main__":
    tc.main()
