"""End-to-end tests of the tokvec CLI: init, inspect, lookup, convert, probe,
tokenize (with data/gpt2 from `make data`).

Run: /usr/bin/python3 tests/e2e/test_cli.py --binary build/tokvec
Standard library + numpy; torch-exactness of init itself is covered bit for
bit by tests/test_init.c.
"""
import hashlib
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support as tc  # noqa: E402


run = tc.run


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GPT2 = os.path.join(ROOT, "data", "gpt2")
VERDICT = os.path.join(ROOT, "tests", "data", "the-verdict.txt")


def commands_of(text):
    """The commands `tokvec --help` lists ("  NAME  what it does")."""
    return re.findall(r"^  ([a-z]+) +\S", text, re.M)


def help_of(text):
    """A command's --help: (its usage lines, up to the first blank line;
    {option: its short form or None} of the lines that document options,
    "  --name VALUE  what" or "  -o, --output FILE  what")."""
    usage = text.split("\n\n")[0]
    options = {}
    for line in text.splitlines():
        if not re.match(r"\s+-", line) or line.lstrip().startswith("usage"):
            continue
        head = re.split(r"\s{2,}", line.strip())[0]
        short = re.match(r"(-[a-z]), --", head)
        for name in re.findall(r"--([a-z][a-z0-9-]*)", head):
            options[name] = short.group(1) if short else None
    return usage, options


def typo(name):
    """name with its first two different neighbours (past the first
    letter) swapped: "seed" -> "sede", "serve" -> "sreve"."""
    for i in range(1, len(name) - 1):
        if name[i] != name[i + 1] and "-" not in name[i:i + 2]:
            return name[:i] + name[i + 1] + name[i] + name[i + 2:]
    return name[::-1]


def cli(*args):
    """The binary with args, stdin empty (tokenize reads it), never
    checked."""
    return subprocess.run([tc.BINARY] + list(args), capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


class CLI(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tokvec-cli-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def test_inspect_and_lookup_read_a_sharded_checkpoint(self):
        d = self.p("ckpt")
        os.mkdir(d)
        tok = np.arange(12, dtype=np.float32).reshape(3, 4)
        pos = np.full((2, 4), 0.5, np.float32)
        for name, tensors in (("model-00001-of-00002.safetensors",
                               {"wte.weight": tok}),
                              ("model-00002-of-00002.safetensors",
                               {"wpe.weight": pos,
                                "h.0.b": np.ones(2, np.float32)})):
            hdr, blobs, off = {}, [], 0
            for k, a in tensors.items():
                hdr[k] = {"dtype": "F32", "shape": list(a.shape),
                          "data_offsets": [off, off + a.nbytes]}
                off += a.nbytes
                blobs.append(a.tobytes())
            h = json.dumps(hdr).encode()
            with open(os.path.join(d, name), "wb") as f:
                f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 88}, "weight_map": {
                "wte.weight": "model-00001-of-00002.safetensors",
                "wpe.weight": "model-00002-of-00002.safetensors",
                "h.0.b": "model-00002-of-00002.safetensors",
                "lm_head.weight": "model-00003-of-00002.safetensors"}}, f)
        out = run("inspect", d).stdout
        self.assertIn("(safetensors-index,", out)
        self.assertIn("shards      3", out)
        self.assertIn("model-00002-of-00002.safetensors  2 tensors  mapped",
                      out)
        self.assertRegex(out, r"model-00003-of-00002.safetensors  1 tensors"
                              r"\n")
        self.assertRegex(out, r"wpe.weight  F32  \[2 x 4\].* in "
                              r"model-00002-of-00002.safetensors.*<- position")
        r = json.loads(run("lookup", "--table", d, "2", "0").stdout)
        self.assertEqual(r["embeddings"], [[[8.5, 9.5, 10.5, 11.5],
                                            [0.5, 1.5, 2.5, 3.5]]])

    BOOK = ("Hello, do you like tea? <|endoftext|> In the sunlit "
            "terracesof someunknownPlace.")
    BOOK_IDS = [15496, 11, 466, 345, 588, 8887, 30, 220, 50256, 554, 262,
                4252, 18250, 8812, 2114, 1659, 617, 34680, 27271, 13]

    def tokenize(self, *args, stdin=None, check=True):
        r = subprocess.run([tc.BINARY, "tokenize"] + list(args),
                           input=stdin, capture_output=True, timeout=120)
        if check and r.returncode:
            raise AssertionError("%s: %s" % (args, r.stderr))
        return r

    def test_tokenize_prints_the_books_ids(self):
        out = self.tokenize("--tokenizer", GPT2,
                            stdin=self.BOOK.encode()).stdout
        self.assertEqual(json.loads(out), self.BOOK_IDS)
        f = self.p("book.txt")
        with open(f, "w") as fh:
            fh.write(self.BOOK)
        self.assertEqual(json.loads(self.tokenize("--tokenizer", GPT2, f)
                                    .stdout), self.BOOK_IDS)
        env_out = subprocess.run([tc.BINARY, "tokenize", f],
                                 capture_output=True, timeout=60,
                                 env=dict(os.environ,
                                          TOKVEC_TOKENIZER=GPT2)).stdout
        self.assertEqual(json.loads(env_out), self.BOOK_IDS)
        plain = json.loads(self.tokenize("--tokenizer", GPT2, "--no-special",
                                         f).stdout)
        self.assertNotIn(50256, plain)
        eot = self.tokenize("--tokenizer", GPT2, "--no-special",
                            stdin=b"<|endoftext|>").stdout
        self.assertEqual(json.loads(eot), [27, 91, 437, 1659, 5239, 91, 29])

    def test_tokenize_the_verdict_and_jsonl(self):
        ids = json.loads(self.tokenize("--tokenizer", GPT2,
                                       VERDICT).stdout)
        self.assertEqual(len(ids), 5145)
        self.assertEqual(ids[:4], [40, 367, 2885, 1464])
        lines = self.tokenize("--tokenizer", GPT2, "--jsonl",
                              stdin=b'"Hello"\n"a\\u0000b"\n""\n').stdout
        got = [json.loads(l) for l in lines.decode().splitlines()]
        self.assertEqual(got[0], [15496])
        self.assertEqual(len(got), 3)
        self.assertEqual(got[2], [])

    def test_tokenize_jsonl_answers_each_line_as_it_arrives(self):
        # A pipe used as a service: the second text is written only after
        # the first answer came back, so a reader of the whole input (or an
        # unflushed stdout) would hang here until the timeout.
        p = subprocess.Popen([tc.BINARY, "tokenize", "--tokenizer", GPT2,
                              "--jsonl"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for text, want in (("Hello", [15496]), (" world", [995])):
                p.stdin.write((json.dumps(text) + "\n").encode())
                p.stdin.flush()
                ready, _, _ = select.select([p.stdout], [], [], 30)
                self.assertTrue(ready, "no answer to %r" % text)
                self.assertEqual(json.loads(p.stdout.readline()), want)
            p.stdin.write(b"not json\n")
            p.stdin.close()
            self.assertEqual(p.wait(timeout=30), 2)
            self.assertIn(b"input line 3: not a JSON string",
                          p.stderr.read())
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()

    def test_tokenize_bad_tokenizer_exits_2_naming_it(self):
        bad = self.p("bad.tiktoken")
        with open(bad, "w") as fh:
            fh.write("not base64\n")
        r = self.tokenize("--tokenizer", bad, "--pattern", "gpt2",
                          stdin=b"x", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad.encode(), r.stderr)
        r = self.tokenize("--tokenizer", GPT2, "--bogus", check=False)
        self.assertEqual(r.returncode, 2)

    def test_tokenize_and_lookup_find_the_default_tokenizer_anywhere(self):
        """One default for every command (docs/configuration.md): --tokenizer,
        else $TOKVEC_TOKENIZER, else the built-in DATA_DIR/gpt2 -- from
        any working directory, not data/gpt2 of the current one. An empty
        one means none, as for serve: an error that says what to do."""
        env = {k: v for k, v in os.environ.items()
               if k != "TOKVEC_TOKENIZER"}

        def cmd(args, stdin=b"", extra=None):
            return subprocess.run([tc.BINARY] + args, input=stdin,
                                  cwd=self.tmp, env=dict(env, **(extra or
                                                                 {})),
                                  capture_output=True, timeout=60)
        r = cmd(["tokenize"], self.BOOK.encode())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), self.BOOK_IDS)
        t = self.p("t.safetensors")
        run("init", "--vocab", "50257", "--dim", "4", "--context", "64",
            "-o", t)
        r = cmd(["lookup", "--table", t, "--text", self.BOOK])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode(), run(
            "lookup", "--table", t, *[str(i) for i in self.BOOK_IDS]).stdout)
        for args, extra, want in (
                (["tokenize"], {"TOKVEC_TOKENIZER": ""},
                 "TOKVEC_TOKENIZER is empty (no tokenizer); give "
                 "--tokenizer FILE"),
                (["tokenize", "--tokenizer", ""], None,
                 "--tokenizer '' is no tokenizer; give --tokenizer FILE"),
                (["lookup", "--table", t, "--text", "x"],
                 {"TOKVEC_TOKENIZER": ""}, "TOKVEC_TOKENIZER is empty")):
            r = cmd(args, extra=extra)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(want, r.stderr.decode(), args)
        self.assertIn("DATA_DIR: " + os.path.join(tc.TOP, "data"),
                      run("tokenize", "--help").stdout)

    def test_a_torch_save_file_given_as_a_table_names_the_conversion(self):
        """torch.save writes a zip archive (PK\\x03\\x04; .pt, .pth) or,
        before PyTorch 1.6, a pickle (0x80): the message says which and
        gives the one-line conversion, with the file's own path."""
        import pickle
        import zipfile
        z = self.p("model.pth")
        with zipfile.ZipFile(z, "w") as f:  # torch.save's layout
            f.writestr("model/data.pkl", pickle.dumps({"wte.weight": 0}))
            f.writestr("model/version", "3\n")
        pk = self.p("old.pt")
        with open(pk, "wb") as f:
            f.write(pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2)
                    + b"\0" * 64)
        for path, what in ((z, "a zip archive: PyTorch's torch.save"),
                           (pk, "a Python pickle: PyTorch's legacy")):
            for args in (("inspect", path), ("lookup", "--table", path, "1"),
                         ("convert", path, "-o", self.p("o.safetensors"))):
                r = run(*args, check=False)
                self.assertEqual(r.returncode, 2, args)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1)
                self.assertIn(what, r.stderr)
                self.assertIn("python3 -c \"import torch; from "
                              "safetensors.torch import save_file; sd = "
                              "torch.load('%s', map_location='cpu')" % path,
                              r.stderr)
                self.assertIn(".state_dict()", r.stderr)
        srv = subprocess.run([tc.BINARY, "serve", "--table", z, "--port",
                              str(tc.free_port())], env=tc.serve_env(),
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(srv.returncode, 2)
        self.assertIn("torch.load('%s'" % z, srv.stderr)

    def test_lookup_text_is_lookup_of_its_ids(self):
        t = self.p("t.safetensors")
        run("init", "--vocab", "50257", "--dim", "4", "--context", "64",
            "-o", t)
        by_text = run("lookup", "--table", t, "--tokenizer", GPT2,
                      "--text", self.BOOK).stdout
        by_ids = run("lookup", "--table", t,
                     *[str(i) for i in self.BOOK_IDS]).stdout
        self.assertEqual(by_text, by_ids)
        r = run("lookup", "--table", t, "--tokenizer", GPT2, "--text", "",
                check=False)
        self.assertEqual(r.returncode, 2)
        r = run("lookup", "--table", t, "--text", "x", "1", check=False)
        self.assertEqual(r.returncode, 2)

    def test_textbook_lookup_prints_numpy_repr(self):
        run("init", "--vocab", "6", "--dim", "3", "--positional", "none",
            "--seed", "123", "-o", self.p("six.safetensors"))
        out = run("lookup", "--table", self.p("six.safetensors"), "3").stdout
        self.assertEqual(json.loads(out)["embeddings"],
                         [[[-0.401488, 0.96657157, -1.148144]]])
        self.assertIn("[-0.401488,0.96657157,-1.148144]", out)

    def test_inspect_hashes_and_picks(self):
        t = self.p("t.safetensors")
        run("init", "--vocab", "10", "--dim", "4", "--context", "5", "-o", t)
        out = run("inspect", t).stdout
        tensors = tc.read_safetensors(t)
        for name, role in (("tok_emb.weight", "token"),
                           ("pos_emb.weight", "position")):
            h = hashlib.sha256(tensors[name].tobytes()).hexdigest()
            line = [l for l in out.splitlines() if l.strip().startswith(name)]
            self.assertEqual(len(line), 1, out)
            self.assertIn(h, line[0])
            self.assertIn("<- " + role, line[0])
            self.assertIn("non-finite 0", line[0])

    def test_init_dtypes_and_padding(self):
        run("init", "--vocab", "8", "--dim", "4", "--context", "2",
            "--padding-idx", "2", "-o", self.p("a.safetensors"))
        tok = tc.read_safetensors(self.p("a.safetensors"))["tok_emb.weight"]
        self.assertTrue((tok[2] == 0).all())
        run("init", "--vocab", "8", "--dim", "4", "--context", "2",
            "--dtype", "f16", "-o", self.p("h.safetensors"))
        h = tc.read_safetensors(self.p("h.safetensors"))["tok_emb.weight"]
        run("init", "--vocab", "8", "--dim", "4", "--context", "2",
            "-o", self.p("f.safetensors"))
        f = tc.read_safetensors(self.p("f.safetensors"))["tok_emb.weight"]
        self.assertEqual(h.tobytes(), f.astype(np.float16).tobytes())

    def test_convert_npy_pair_and_dtype(self):
        tok = np.arange(40, dtype=np.float32).reshape(10, 4) / 7
        pos = -np.arange(12, dtype=np.float32).reshape(3, 4) / 3
        np.save(self.p("tok.npy"), tok)
        np.save(self.p("pos.npy"), pos)
        out = self.p("c.safetensors")
        run("convert", self.p("tok.npy"), "--pos", self.p("pos.npy"),
            "-o", out)
        t = tc.read_safetensors(out)
        self.assertEqual(t["tok_emb.weight"].tobytes(), tok.tobytes())
        self.assertEqual(t["pos_emb.weight"].tobytes(), pos.tobytes())
        j = json.loads(run("lookup", "--table", out, "--start-position", "1",
                           "9", "0").stdout)
        got = np.array(j["embeddings"], dtype=np.float32)
        self.assertEqual(got.tobytes(),
                         (tok[[9, 0]] + pos[1:3])[None].tobytes())
        run("convert", out, "--dtype", "f16", "-o", self.p("c16.safetensors"))
        t16 = tc.read_safetensors(self.p("c16.safetensors"))
        self.assertEqual(t16["tok_emb.weight"].tobytes(),
                         tok.astype(np.float16).tobytes())

    def test_bad_input_exits_2_naming_the_file(self):
        bad = self.p("bad.safetensors")
        with open(bad, "wb") as f:
            f.write(b"\x10" + b"\0" * 7 + b"{}")
        for args in (("inspect", bad), ("lookup", "--table", bad, "1"),
                     ("convert", bad, "-o", self.p("x.safetensors"))):
            r = run(*args, check=False)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1)
            self.assertIn(bad, r.stderr)
        r = run("init", "--vocab", "x", "--dim", "3", "-o", "y", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--vocab", r.stderr)
        run("init", "--vocab", "6", "--dim", "3", "-o", self.p("s.st"))
        r = run("lookup", "--table", self.p("s.st"), "6", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("token id 6", r.stderr)

    def test_help_everywhere(self):
        for cmd in ("serve", "init", "inspect", "lookup", "convert", "tokenize",
                    "probe"):
            r = run(cmd, "--help")
            self.assertIn("usage", r.stdout.lower())
        self.assertIn("serve", run("--help").stdout)

    def test_unknown_options_suggest_the_closest(self):
        for args, want in (
                (["serve", "--prot", "1"],
                 "unknown option '--prot' (did you mean --port?)"),
                (["serve", "--max-token=3"],
                 "unknown option '--max-token' (did you mean --max-tokens?)"),
                (["inspect", "--tokne-tensor", "x", "f"],
                 "unknown option '--tokne-tensor' (did you mean "
                 "--token-tensor?)"),
                (["lookup", "--tabel", "x", "1"],
                 "unknown option '--tabel' (did you mean --table?)"),
                (["convert", "--dtpye", "f16", "a"],
                 "unknown option '--dtpye' (did you mean --dtype?)"),
                (["serve", "--zzz", "1"], "unknown option '--zzz' (see")):
            r = run(*args, check=False)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(want, r.stderr, args)

    def test_every_option_of_every_command_is_suggested_when_misspelt(self):
        """Table-driven over what --help says, so a new command or option is
        covered by being documented: each command's every option is
        accepted (never "unknown option"), a typo of it (two neighbours
        swapped, given with no value) names it ("did you mean --seed?"),
        and it is on the usage lines (serve: --SETTING stands for them).
        A typo of each command names the command."""
        commands = commands_of(run("--help").stdout)
        self.assertEqual(commands, ["serve", "init", "inspect", "lookup",
                                    "convert", "tokenize", "probe"])
        for cmd in commands:
            r = run(typo(cmd), check=False)
            self.assertEqual(r.returncode, 2, cmd)
            self.assertIn("unknown command '%s' (did you mean %s?)"
                          % (typo(cmd), cmd), r.stderr)
            usage, options = help_of(run(cmd, "--help").stdout)
            self.assertIn("help", options, cmd)
            for opt, short in options.items():
                r = cli(cmd, "--" + opt)
                self.assertNotIn("unknown option", r.stderr, (cmd, opt))
                bad = typo(opt)
                r = cli(cmd, "--" + bad)
                self.assertEqual(r.returncode, 2, (cmd, bad))
                self.assertIn("unknown option '--%s' (did you mean --%s?)"
                              % (bad, opt), r.stderr, (cmd, opt))
                if opt == "help" or "--SETTING" in usage:
                    continue
                self.assertTrue("--" + opt in usage or
                                (short and short + " " in usage),
                                "tokvec %s: --%s is not on its usage line"
                                % (cmd, opt))
        for args, want in ((["sereve"], "did you mean serve?"),
                           (["init", "--sede", "1"], "did you mean --seed?"),
                           (["tokenize", "--no-specal"],
                            "did you mean --no-special?"),
                           (["serve", "--max-inflight", "1"],
                            "did you mean --max-inflight-bytes?"),
                           (["zzz"], "unknown command 'zzz'\n")):
            r = cli(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(want, r.stderr, args)

    def test_unknown_tokvec_variable_is_warned_of_at_start_up(self):
        t = self.p("t.safetensors")
        run("init", "--vocab", "10", "--dim", "4", "-o", t)
        s = tc.Server(t, env={"TOKVEC_PROT": "9", "TOKVEC_THREADS": "1"})
        try:
            self.assertEqual(s.get("/health")[0], 200)
        finally:
            self.assertEqual(s.stop(), 0)
        log = s.stderr()
        self.assertIn("warn TOKVEC_PROT is not a setting (did you mean "
                      "TOKVEC_PORT?); ignored", log)
        self.assertNotIn("TOKVEC_THREADS is not", log)

    def test_independent_reader_agrees_with_tokvec_lookup(self):
        """tc.read_safetensors gives every suite its expected values."""
        tmp = tempfile.mkdtemp(prefix="tokvec-reader-")
        try:
            for dtype in ("f32", "f16", "bf16"):
                p = os.path.join(tmp, dtype + ".safetensors")
                run("init", "--vocab", "50", "--dim", "6", "--context", "8",
                    "--dtype", dtype, "-o", p)
                t = tc.read_safetensors(p, widen=True)
                r = run("lookup", "--table", p, "7", "3")
                got = np.array(json.loads(r.stdout)["embeddings"],
                               dtype=np.float32)
                want = (t["tok_emb.weight"][[7, 3]]
                        + t["pos_emb.weight"][:2]).astype(np.float32)
                self.assertEqual(got.reshape(want.shape).tobytes(),
                                 want.tobytes(), dtype)
        finally:
            shutil.rmtree(tmp)

    def test_probe_exit_codes(self):
        run("init", "--vocab", "6", "--dim", "3", "-o", self.p("s.st"))
        s = tc.Server(self.p("s.st"))
        try:
            url = "http://127.0.0.1:%d" % s.port
            self.assertEqual(run("probe", url + "/health").returncode, 0)
            self.assertEqual(run("probe", url + "/nope",
                                 check=False).returncode, 1)
        finally:
            s.stop()
        self.assertEqual(run("probe", "http://127.0.0.1:%d/health"
                             % tc.free_port(), check=False).returncode, 1)
        self.assertEqual(run("probe", "ftp://x", check=False).returncode, 2)


if __name__ == "__main__":
    tc.main()
