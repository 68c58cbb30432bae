"""The README and docs/ as a newcomer reads them, and examples/.

* Every command of README.md and docs/*.md (the lines of their code
  blocks that start with a command: curl, tokvec, python3, node, ...) runs
  as written, in document order, in one temporary directory where
  links point at the repository's files and folders (examples/, data/,
  tools/, ...):
  the address (localhost:8080 -> the test server's port, the Unix socket
  path -> a temporary one) and `build/tokvec` (-> the binary under test)
  rewritten, curl given `-sS --fail-with-body` so that an error status
  fails the line, `/tmp/` -> the temporary directory. A command shown
  with its output (`$ cmd` then lines) must print that output ("..."
  stands for any text), a tokvec command with a `# [ids]` comment those
  ids. What cannot run here (a server of its own, the network, root and
  podman, vLLM, a model the repository does not hold) is skipped for a
  named reason (SKIPS, MISSING_FILES), every other command runs: a new
  kind of command fails until it runs or gets its reason.
* The README's Python blocks that use the client run against the server
  and print what their comments say.
* Every file in examples/ runs (EXAMPLES names the test that runs it);
  examples/curl.sh must reach every route of docs/openapi.json and name
  every encoding_format, Accept type and dtype.
* `make run PORT= HOST= TABLE=` serves where it is told; the README's
  Docker command serves your own table; `make help` lists every public
  target; the container targets and every relative link stay inside the
  checkout, and every link (with its #anchor) leads somewhere.

Run: /usr/bin/python3 tests/e2e/test_readme.py --binary build/tokvec
Needs curl (Debian curl); node for the JS line, python3-torch for
examples/pytorch_model.py.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import support as tc

README = os.path.join(tc.TOP, "README.md")
DOCS = [README] + sorted(glob.glob(os.path.join(tc.TOP, "docs", "*.md")))
MAKEFILES = [os.path.join(tc.TOP, "Makefile")] + sorted(
    glob.glob(os.path.join(tc.TOP, "*", "*.mk"))
    + glob.glob(os.path.join(tc.TOP, "*", "*", "*.mk")))

# The words a command line of a code block starts with.
COMMANDS = ("curl", "build/tokvec", "tokvec", "python3", "node", "pip",
            "npm", "make", "podman", "docker", "huggingface-cli", "echo",
            "printf", "cat", "vllm")
# Commands not run here, by their first word(s), with the reason.
SKIPS = {
    "make": "make's targets have their own tests (make run below; make "
            "data and make test are what runs this)",
    "pip install": "test_clients.py installs the client into a venv",
    "npm install": "test_clients.py installs the client with npm "
                   "(here node_modules/tokvec points at clients/js)",
    "podman": "the image: make container-test (root, podman)",
    "docker": "the image: make container-test (root, podman)",
    "huggingface-cli": "needs the network",
    "vllm": "vLLM's own server",
    "tokvec serve": "starts a server: the suites start it their way",
}
# Files of the user's own that the repository does not hold: a command
# naming one is skipped.
MISSING_FILES = {
    "gpt2/model.safetensors": "Hugging Face's GPT-2 checkpoint",
    "~/models/llama/": "a Llama checkpoint",
    "gpt2.Q8_0.gguf": "a GGUF of GPT-2",
    "gpt2.Q4_K_M.gguf": "a GGUF of GPT-2",
    "models/potion-base-8M": "a Model2Vec model (downloaded)",
    " m.model": "your own SentencePiece model",
    "localhost:8000": "vLLM's own server",
}
# Each file of examples/ and the test that runs it.
EXAMPLES = {
    "curl.sh": "test_examples_curl_sh_covers_every_route_and_format",
    "seed_8x4.json": "test_every_command_of_the_readme_and_docs_runs",
    "textbook.py": "test_examples_textbook_py_prints_the_books_rows",
    "pytorch_model.py":
        "test_examples_pytorch_model_py_is_bit_identical_to_torch",
}


def make_env():
    """The environment for a make of our own: none of the running make's
    flags or variables (make test passes BUILD= and the like down)."""
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "TABLE", "PORT", "HOST",
              "BUILD"):
        env.pop(k, None)
    return env


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def readme_text():
    return read(README)


def code_blocks(text):
    """[(lang, [lines])] of a Markdown text: fenced blocks (lang: their
    info string) and indented ones (lang ""), lines with their indent."""
    blocks, cur, fence = [], None, None
    for line in text.splitlines():
        s = line.strip()
        if fence is not None:
            if s.startswith("```"):
                blocks.append((fence, cur))
                fence, cur = None, None
            else:
                cur.append(line)
            continue
        if s.startswith("```"):
            fence, cur = s[3:].strip(), []
            continue
        if line.startswith(("    ", "\t")) and s:
            if cur is None:
                cur = []
                blocks.append(("", cur))
            cur.append(line)
        elif not s and cur is not None:
            cur.append(line)
        else:
            cur = None
    return blocks


def is_command(s):
    s = s[2:] if s.startswith("$ ") else s
    s = re.sub(r"^(\w+=\S*\s+)+", "", s)  # FOO=bar cmd
    if re.match(r"^\w+=\$\(", s):  # E=$(curl ...)
        return True
    return s.split(" ", 1)[0] in COMMANDS


def commands(text):
    """[(command, expected output lines)] of a Markdown text's shell code
    blocks, continuation lines joined; the output is the lines after a
    `$ ` command up to the next command or blank line."""
    out = []
    for lang, lines in code_blocks(text):
        if lang not in ("", "sh", "bash", "shell", "console"):
            continue
        i = 0
        while i < len(lines):
            s = lines[i].strip()
            if not is_command(s):
                i += 1
                continue
            prompt = s.startswith("$ ")
            cmd = s[2:] if prompt else s
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd += "\n" + lines[i].strip()
            i += 1
            expect = []
            while prompt and i < len(lines) and lines[i].strip() and \
                    not is_command(lines[i].strip()):
                expect.append(lines[i].strip())
                i += 1
            out.append((cmd, expect))
    return out


def skip_reason(cmd):
    words = re.sub(r"^(\w+=\S*\s+)+", "", cmd).split()
    first = words[0] if words else ""
    two = " ".join(words[:2]).replace("build/tokvec", "tokvec")
    for key, why in SKIPS.items():
        if key in (first, two):
            return why
    for name, what in MISSING_FILES.items():
        if name in cmd:
            return "names %s (%s), not in the repository" % (name, what)
    return None


def wildcard(expected):
    """A regex of an expected output line: "..." is any text."""
    return "^" + ".*".join(re.escape(p) for p in expected.split("...")) + "$"


def shell_form(cmd, port, sock, tmp):
    """The command as run here (see the module's doc)."""
    cmd = (cmd.replace("/tmp/", tmp + "/")
           .replace("localhost:8080", "localhost:%d" % port)
           .replace("/run/tokvec/tokvec.sock", sock))
    cmd = re.sub(r"(^|[|;(]\s*|\$\()curl ", r"\1curl -sS --fail-with-body ",
                 cmd)
    cmd = re.sub(r"(^|[|;(]\s*)(build/)?tokvec ",
                 lambda m: m.group(1) + tc.BINARY + " ", cmd)
    return cmd


def python_blocks(text):
    return ["\n".join(lines) for lang, lines in code_blocks(text)
            if lang == "python"]


def phony_targets():
    """The .PHONY targets of every Makefile, the HELP_HIDDEN ones, and
    every target whose name is no file (no "/", ".", "$", "%")."""
    phony, hidden, named = set(), set(), set()
    for mk in MAKEFILES:
        text = read(mk).replace("\\\n", " ")
        for names in re.findall(r"^([a-z][a-z0-9 -]*):(?!=)", text, re.M):
            named |= set(names.split())
        for names in re.findall(r"^\.PHONY:(.*)$", text, re.M):
            phony |= set(names.split())
        for names in re.findall(r"^HELP_HIDDEN\s*[:+]?=(.*)$", text, re.M):
            hidden |= set(names.split())
    return phony, hidden, named


def anchors(md):
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for h in re.findall(r"^#+ (.*)$", read(md), re.M):
        a = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        out.add(a)
    return out


class Readme(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tokvec-readme-")
        # The table `make run` creates (same command as the Makefile's).
        cls.table = tc.init_table(
            os.path.join(cls.tmp, "gpt2-256.safetensors"), 50257, 256,
            "--context", "1024", "--positional", "learned", "--seed", "123")
        # where the commands run: the repository's files and folders
        # (data/, tools/, ...) as links, what the commands write beside them
        cls.cwd = os.path.join(cls.tmp, "cwd")
        os.mkdir(cls.cwd)
        for name in os.listdir(tc.TOP):
            if not name.startswith("."):
                os.symlink(os.path.join(tc.TOP, name),
                           os.path.join(cls.cwd, name))
        # what `npm install ./clients/js` makes: a link in node_modules
        os.makedirs(os.path.join(cls.cwd, "node_modules"))
        os.symlink(os.path.join(tc.TOP, "clients", "js"),
                   os.path.join(cls.cwd, "node_modules", "tokvec"))
        cls.sock = os.path.join(cls.tmp, "tokvec.sock")
        cls.gpt2 = os.path.join(tc.TOP, "data", "gpt2")
        cls.server = tc.Server(cls.table, "--unix-socket", cls.sock,
                               "--tokenizer", cls.gpt2)
        # python3 is the one running this (Debian's, with numpy and torch)
        cls.bin = os.path.join(cls.tmp, "bin")
        os.mkdir(cls.bin)
        os.symlink(sys.executable, os.path.join(cls.bin, "python3"))

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        shutil.rmtree(cls.tmp)
        assert rc == 0, rc

    def env(self):
        e = dict(os.environ)
        e["PYTHONPATH"] = os.path.join(tc.TOP, "clients", "python")
        e["PATH"] = self.bin + os.pathsep + e.get("PATH", "")
        e.pop("TOKVEC_TOKENIZER", None)
        return e

    def run_command(self, cmd, expect, where):
        line = shell_form(cmd, self.server.port, self.sock, self.cwd)
        r = subprocess.run(["bash", "-c", line], cwd=self.cwd,
                           capture_output=True, timeout=180, env=self.env())
        what = "%s: %s\n%s%s" % (where, cmd, r.stdout[:400], r.stderr[:400])
        self.assertEqual(r.returncode, 0, what)
        out = r.stdout.decode(errors="replace").replace("\r", "")
        self.assertTrue(out or " -o " in cmd or
                        re.search(r"\s>\s*\S+\s*$", cmd), what)
        if expect:
            got = [ln for ln in out.strip().split("\n")]
            self.assertEqual(len(got), len(expect), what)
            for g, e in zip(got, expect):
                self.assertRegex(g, wildcard(e), what)
        # `tokvec ...  # [ids...] N ids`: those ids (... any)
        m = re.search(r"\s{2,}# (\[[^\]]*\])(?: (\d+) ids)?\s*$", cmd)
        if m and re.match(r"^(echo .*\| *)?(build/)?tokvec ",
                          cmd.replace("\n", " ")):
            self.assertRegex(out.strip(), wildcard(m.group(1)), what)
            if m.group(2):
                self.assertEqual(len(json.loads(out)), int(m.group(2)),
                                 what)

    def test_every_command_of_the_readme_and_docs_runs(self):
        ran, skipped = [], []
        for doc in DOCS:
            where = os.path.relpath(doc, tc.TOP)
            for cmd, expect in commands(read(doc)):
                why = skip_reason(cmd)
                if why:
                    skipped.append((where, cmd, why))
                    continue
                with self.subTest(doc=where, cmd=cmd[:60]):
                    self.run_command(cmd, expect, where)
                ran.append((where, cmd))
        print("\n%d commands ran, %d skipped:" % (len(ran), len(skipped)))
        for where, cmd, why in skipped:
            print("  %s: %s -- %s" % (where, cmd.split("\n")[0][:60], why))
        readme = [c for w, c in ran if w == "README.md"]
        self.assertGreaterEqual(len(readme), 12, readme)
        self.assertGreaterEqual(len(ran), 30, ran)
        # the kinds the README promises: curl, the CLI, Python, JS
        for kind in ("curl ", "build/tokvec ", "python3 ", "node "):
            self.assertTrue(any(c.startswith(kind) for c in readme), kind)

    def test_the_readmes_python_blocks_print_what_they_say(self):
        blocks = [b for b in python_blocks(readme_text())
                  if "import tokvec" in b]
        self.assertGreaterEqual(len(blocks), 1)
        url = "http://localhost:%d" % self.server.port
        for block in blocks:
            code = block.replace("http://localhost:8080", url)
            r = subprocess.run(["/usr/bin/python3", "-c", code],
                               cwd=self.cwd, capture_output=True, text=True,
                               timeout=180, env=self.env())
            self.assertEqual(r.returncode, 0, r.stderr)
            said = re.findall(r"^print\(.*\)\s+# (.*)$", block, re.M)
            self.assertTrue(said, block)
            self.assertEqual(r.stdout.strip().split("\n"), said)

    def test_the_walk_through_from_raw_text_answers_the_books_batch(self):
        """The "From raw text" commands, as written (the verdict's one a
        python3 pipe over two lines), answer the book's first batch and
        the whole story's (1286, 4, 256)."""
        text = readme_text()
        part = text[text.index("**From raw text**"):]
        part = part[:part.index("Text and ids mix")]
        cmds = [c for c, _ in commands(part)]
        self.assertEqual(len(cmds), 2, cmds)
        book = [[40, 367, 2885, 1464], [1807, 3619, 402, 271],
                [10899, 2138, 257, 7026], [15632, 438, 2016, 257],
                [922, 5891, 1576, 438], [568, 340, 373, 645],
                [1049, 5975, 284, 502], [284, 3285, 326, 11]]
        got = []
        for cmd in cmds:
            line = shell_form(cmd, self.server.port, self.sock, self.cwd)
            r = subprocess.run(["sh", "-c", line], cwd=self.cwd,
                               capture_output=True, timeout=120)
            self.assertEqual(r.returncode, 0, (cmd, r.stderr[:300]))
            got.append(json.loads(r.stdout))
        self.assertEqual(got[0]["shape"], [8, 4, 256])
        self.assertEqual(got[0]["input_ids"], book)
        self.assertEqual(got[0]["target_ids"][0], [367, 2885, 1464, 1807])
        self.assertEqual(got[1]["shape"], [1286, 4, 256])
        self.assertEqual(got[1]["input_ids"][:8], book)

    # -- examples/ ----------------------------------------------------------
    def test_every_file_in_examples_is_run(self):
        files = sorted(os.listdir(os.path.join(tc.TOP, "examples")))
        self.assertEqual(files, sorted(EXAMPLES))
        for name, test in EXAMPLES.items():
            self.assertTrue(hasattr(self, test), test)
        text = readme_text()
        for name in files:  # and the README names each
            self.assertIn("examples/" + name, text)

    def test_examples_curl_sh_covers_every_route_and_format(self):
        """It runs to its end against a server like `make run`'s (any
        error status stops it), and the server's /metrics then counts a
        200 on every route of docs/openapi.json; it names every
        encoding_format, Accept type and dtype the API has."""
        s = tc.Server(self.table, "--tokenizer", self.gpt2)
        try:
            r = subprocess.run(["sh", "examples/curl.sh", s.url],
                               cwd=tc.TOP, capture_output=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            metrics = s.get("/metrics")[2].decode()
        finally:
            self.assertEqual(s.stop(), 0)
        api = json.loads(read(os.path.join(tc.TOP, "docs", "openapi.json")))
        label = {"/tokens/{id}": "/tokens", "/": "pages", "/docs": "pages",
                 "/static/{name}": "pages"}
        for path in api["paths"]:
            route = label.get(path, path)
            self.assertTrue(re.search(
                r'tokvec_requests_total\{route="%s",code="200"\} [1-9]'
                % re.escape(route), metrics), "no 200 on " + path)
        self.assertIn("/static/", read(os.path.join(tc.TOP, "examples",
                                                    "curl.sh")))
        script = read(os.path.join(tc.TOP, "examples", "curl.sh"))
        embed = api["paths"]["/embed"]["post"]
        enums = re.findall(r'"enum": \[([^\]]*)\]', json.dumps(embed))
        values = set()
        for e in enums:
            values |= set(json.loads("[%s]" % e))
        self.assertTrue({"npz", "torch", "base64", "float16"} <= values)
        for v in values - {"float32"}:  # float32: the default
            self.assertRegex(script, r'"%s"|=%s\b' % (v, v), v)
        for ctype in embed["responses"]["200"]["content"]:
            if ctype != "application/json":
                self.assertIn("Accept: " + ctype, script)
        for what in ('"inputs":"', '"max_length"', '"pad_id"',
                     '"pooling"', "X-Tokvec-Shape", "start_position",
                     '"positions":false', '"truncate"', '"vector"',
                     '"special_tokens"'):
            self.assertIn(what, script)

    def test_examples_textbook_py_prints_the_books_rows(self):
        # its own servers get 10 s to start: under make valgrind, the
        # binary valgrind.sh runs (the example is checked, not memcheck's)
        binary = os.environ.get("TOKVEC_REAL_BINARY") or tc.BINARY
        r = subprocess.run(["/usr/bin/python3", "examples/textbook.py"],
                           cwd=tc.TOP, capture_output=True, text=True,
                           timeout=300,
                           env=dict(os.environ, TOKVEC_BINARY=binary))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('JSON row 3: {"shape":[1,1,3],"dtype":"float32",'
                      '"embeddings":[[[-0.401488,0.96657157,-1.148144]]]}',
                      r.stdout)
        self.assertIn("pos_embeddings: (8, 4, 256)", r.stdout)

    def test_examples_pytorch_model_py_is_bit_identical_to_torch(self):
        r = subprocess.run(["/usr/bin/python3", "examples/pytorch_model.py",
                            self.server.url], cwd=tc.TOP,
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("input (2, 4, 256) -> block output (2, 4, 256)",
                      r.stdout)
        self.assertIn("bit-identical to torch: True", r.stdout)

    def test_make_run_serves_on_port_host_and_table(self):
        # make run uses build/tokvec: only meaningful for that build.
        if os.path.realpath(tc.BINARY) != os.path.realpath(
                os.path.join(tc.TOP, "build", "tokvec")):
            self.skipTest("make run serves build/tokvec, not %s" % tc.BINARY)
        small = tc.init_table(os.path.join(self.tmp, "small.safetensors"),
                              77, 5)
        port = tc.free_port()
        log = open(os.path.join(self.tmp, "make-run.log"), "wb")
        p = subprocess.Popen(
            ["make", "-s", "--no-print-directory", "run", "PORT=%d" % port,
             "HOST=127.0.0.1", "TABLE=" + small], cwd=tc.TOP,
            stdout=log, stderr=log, start_new_session=True, env=make_env())
        try:
            probe = tc.Server.__new__(tc.Server)  # its HTTP helpers only
            probe.port = port
            deadline = time.time() + 60 * tc.TIME_SCALE
            info = None
            while time.time() < deadline and p.poll() is None:
                try:
                    st, _, body = probe.get("/info")
                    if st == 200:
                        info = body
                        break
                except OSError:
                    time.sleep(0.1)
            self.assertIsNotNone(info, "make run did not serve on %d" % port)
            self.assertIn(b'"vocab_size":77', info)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=60)
            log.close()

    def test_make_run_without_settings_serves_the_default_table(self):
        r = subprocess.run(["make", "-n", "--no-print-directory", "run"],
                           cwd=tc.TOP, capture_output=True, text=True,
                           env=make_env(), check=True)
        serve = [ln for ln in r.stdout.splitlines() if " serve " in ln]
        self.assertEqual(len(serve), 1, r.stdout)
        self.assertTrue(serve[0].endswith(
            "serve --table data/gpt2-256.safetensors --tokenizer "
            "data/gpt2"), serve)

    def test_the_second_docker_command_serves_my_table_with_a_warning(self):
        """README "Docker": the image run with your own table mounted
        (-e TOKVEC_TABLE=...) starts, dropping the image's default
        tokenizer with a warning: the binary run with the environment the
        Dockerfile sets (ENV) and the command's -e, its table a 6-row
        one, the built-in default tokenizer this build's DATA_DIR/gpt2 as
        the image's is /data/gpt2 (make DATA_DIR=/data)."""
        with open(os.path.join(tc.TOP, "Dockerfile")) as f:
            docker = f.read()
        self.assertIn("make -j\"$(nproc)\" DATA_DIR=/data build/tokvec",
                      docker)
        self.assertIn("COPY --from=build /data/gpt2 /data/gpt2", docker)
        blocks = re.findall(r"^ENV ((?:.*\\\n)*.*)$", docker, re.M)
        env = dict(re.findall(r"(TOKVEC_\w+)=(\S+)", "\n".join(blocks)))
        self.assertEqual(env.get("TOKVEC_HOST"), "0.0.0.0")
        self.assertNotIn("TOKVEC_TOKENIZER", env)  # a default, not named
        text = readme_text()
        docker_part = text[text.index("## Docker"):]
        runs = re.findall(r"^    (podman run (?:.*\\\n)*.*)$", docker_part,
                          re.M)
        self.assertEqual(len(runs), 2, runs)
        mount = re.search(r"-v \$PWD/(\S+):(\S+):ro", runs[1])
        env.update(re.findall(r"-e (TOKVEC_\w+)=(\S+)", runs[1]))
        self.assertEqual(env["TOKVEC_TABLE"], mount.group(2))
        mine = tc.init_table(os.path.join(self.tmp, mount.group(1)), 6, 3)
        env["TOKVEC_TABLE"] = mine
        env["TOKVEC_TOKENIZER"] = None  # the image sets none (above)
        s = tc.Server(None, env=env)  # ENTRYPOINT tokvec serve
        try:
            self.assertEqual(s.embed({"inputs": [[1, 5]]})[0], 200)
            self.assertIsNone(json.loads(s.get("/info")[2])["tokenizer"])
            deadline = time.time() + 10 * tc.TIME_SCALE
            while " listening on " not in s.stderr() and \
                    time.time() < deadline:
                time.sleep(0.01)
        finally:
            self.assertEqual(s.stop(), 0)
        log = s.stderr()
        self.assertIn("warn default tokenizer not used, serving ids only",
                      log)
        self.assertIn("has vocab_size 6", log)
        # 0.0.0.0 in a container: the curl names localhost and the port
        # published for ours, not 127.0.0.1.
        self.assertIn("listening on http://0.0.0.0:%d -- try: curl" % s.port,
                      log)
        self.assertIn("http://localhost:%d/embed (in a container: the port "
                      "published for %d" % (s.port, s.port), log)

    def make_help(self):
        r = subprocess.run(["make", "-s", "--no-print-directory", "help"],
                           cwd=tc.TOP, capture_output=True, text=True,
                           env=make_env(), check=True)
        return r.stdout, set(re.findall(r"\bmake \[?([a-z][a-z0-9-]*)",
                                        r.stdout))

    def test_make_help_lists_every_target_the_docs_name(self):
        """`make X` in README.md, docs/ or deploy/README.md: X is in make
        help (coverage, the container and deploy targets, the oracles,
        bench)."""
        out, listed = self.make_help()
        named = set()
        for doc in DOCS + [os.path.join(tc.TOP, "deploy", "README.md")]:
            named |= set(re.findall(r"`make ([a-z][a-z0-9-]*)[` ]",
                                    read(doc)))
        self.assertEqual(named - listed, set(), out)

    def test_make_help_lists_every_public_target(self):
        """Every target of the Makefiles (Makefile, */*.mk) that is no
        file is .PHONY, and every .PHONY one is in make help but those
        HELP_HIDDEN names as steps of others; every name there is a
        target."""
        out, listed = self.make_help()
        phony, hidden, named = phony_targets()
        self.assertEqual(named - phony, set(), "targets not in .PHONY")
        for target in ("image", "container-test", "compose-test",
                       "deploy-check", "kube-test", "bench-similar",
                       "fuzz", "soak", "coverage", "check-all", "test",
                       "check-long", "unigram-oracle"):
            self.assertIn(target, phony)
        self.assertEqual(hidden - phony, set())
        self.assertEqual(phony - hidden - listed, set(), out)
        self.assertEqual(listed - phony, set(), out)
        self.assertEqual(hidden & listed, set(), out)

    def test_container_targets_call_nothing_outside_the_repository(self):
        """make image, container-test, compose-test, deploy-check and
        their scripts use the project's own deploy/podman-base.sh, and no
        relative path of theirs leads out of the checkout."""
        top = os.path.realpath(tc.TOP)
        deploy = os.path.join(tc.TOP, "deploy")
        for name in sorted(os.listdir(deploy)) + ["../Makefile"]:
            path = os.path.join(deploy, name)
            if not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            here = os.path.dirname(os.path.realpath(path))
            for rel in re.findall(r"(?:\.\./)+[\w.-]+", text):
                where = os.path.realpath(os.path.join(here, rel))
                self.assertTrue(where == top or
                                where.startswith(top + os.sep),
                                "%s names %s, outside the checkout"
                                % (name, rel))
        r = subprocess.run(["make", "-n", "--no-print-directory", "image",
                            "container-test", "compose-test",
                            "deploy-check"], cwd=tc.TOP, capture_output=True,
                           text=True, env=make_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        # run from the top of the checkout: no command climbs out of it
        self.assertNotIn("../", r.stdout + r.stderr)
        for script in ("podman-base.sh", "container-test.sh",
                       "compose-test.sh", "kube-test.sh"):
            self.assertIn("bash deploy/" + script, r.stdout)

    def test_readme_stands_on_its_own(self):
        text = readme_text()
        # at the top of the checkout: no link or file of its climbs out
        # (error messages quoted in it may show a "../x" they refuse)
        for target in re.findall(r"\]\(([^)]*)\)", text):
            self.assertFalse(target.startswith("../"), target)
        for path in re.findall(r"`(\.\./[\w./-]+)`", text):
            self.fail("the README names %s, outside the checkout" % path)
        self.assertIn("GET /openapi.json", text)
        self.assertIn("docs/openapi.json", text)
        # the README is short: the rest is linked from it
        self.assertLessEqual(len(text.splitlines()), 320)
        for page in ("api", "configuration", "performance", "decisions",
                     "development", "architecture", "tokenizers", "models",
                     "tables", "troubleshooting"):
            self.assertIn("](docs/%s.md)" % page, text)
        self.assertIn("](SECURITY.md)", text)
        # no word of how the work was organized
        for doc in DOCS:
            for word in ("issue", "session", "wave", "this task",
                         "this work"):
                self.assertNotRegex(read(doc).lower(), r"\b%s\b" % word,
                                    doc)

    def test_every_link_of_the_readme_and_docs_leads_somewhere(self):
        """Relative links and `path` mentions of files: the file exists
        inside the checkout; a #anchor names a heading of its file."""
        top = os.path.realpath(tc.TOP)
        for doc in DOCS:
            here = os.path.dirname(doc)
            text = read(doc)
            for target in re.findall(r"\]\(([^)\s]*)\)", text):
                if re.match(r"^[a-z]+:", target):
                    continue  # http:, mailto:
                path, _, anchor = target.partition("#")
                full = os.path.realpath(os.path.join(here, path)) \
                    if path else doc
                self.assertTrue(full == top or full.startswith(top + os.sep),
                                "%s: %s" % (doc, target))
                self.assertTrue(os.path.exists(full),
                                "%s: %s" % (doc, target))
                if anchor:
                    self.assertIn(anchor, anchors(full),
                                  "%s: %s" % (doc, target))
            for name in re.findall(r"`((?:examples|docs|tests|tools|deploy|"
                                   r"clients|bench|server|core)/[\w./-]+)`",
                                   text):
                if "*" in name or name.endswith("/"):
                    continue
                path = os.path.join(tc.TOP, name)  # a file, or a program
                self.assertTrue(os.path.exists(path)  # built from one
                                or os.path.exists(path + ".c"),
                                "%s names %s" % (doc, name))


if __name__ == "__main__":
    tc.main()
