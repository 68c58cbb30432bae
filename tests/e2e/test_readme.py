"""The README as a newcomer reads it: every curl line in it runs as written
against a server on the default table's shape, `make run PORT= HOST=
TABLE=` serves where it is told, and the README stands on its own (no
link outside the repository, the API reference named).

The curl lines are run as written but for the address (localhost:8080 ->
the test server's port, the Unix socket path -> a temporary one) and
`-sS --fail-with-body`, so an error status fails the line; they run in a
temporary directory where `examples` points at the repository's.

Run: /usr/bin/python3 tests/e2e/test_readme.py --binary build/tokvec
Needs curl (Debian curl).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import support as tc

README = os.path.join(tc.TOP, "README.md")


def make_env():
    """The environment for a make of our own: none of the running make's
    flags or variables (make test passes BUILD= and the like down)."""
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "TABLE", "PORT", "HOST",
              "BUILD"):
        env.pop(k, None)
    return env


def readme_text():
    with open(README, encoding="utf-8") as f:
        return f.read()


def curl_lines():
    """The README's command lines in its code blocks (indented or fenced)
    that run curl against tokvec ("$ " prompts removed)."""
    out = []
    in_code = False
    for line in readme_text().splitlines():
        cmd = line.strip()
        if cmd.startswith("```"):
            in_code = not in_code
            continue
        if not in_code and not line.startswith(("    ", "\t")):
            continue  # prose, not an (indented or fenced) code block
        if cmd.startswith("$ "):
            cmd = cmd[2:]
        # vLLM's own server (localhost:8000, the prompt_embeds example) is
        # not tokvec's to run here.
        if cmd.startswith("curl ") and "localhost:8000" not in cmd:
            out.append(cmd)
    return out


class Readme(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tokvec-readme-")
        # The table `make run` creates (same command as the Makefile's).
        cls.table = tc.init_table(
            os.path.join(cls.tmp, "gpt2-256.safetensors"), 50257, 256,
            "--context", "1024", "--positional", "learned", "--seed", "123")
        os.symlink(os.path.join(tc.TOP, "examples"),
                   os.path.join(cls.tmp, "examples"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_every_curl_line_runs_as_written(self):
        lines = curl_lines()
        self.assertGreaterEqual(len(lines), 8, lines)
        sock = os.path.join(self.tmp, "tokvec.sock")
        s = tc.Server(self.table, "--unix-socket", sock, "--tokenizer",
                      os.path.join(tc.TOP, "data", "gpt2"))
        try:
            for line in lines:
                cmd = (line.replace("localhost:8080", "localhost:%d" % s.port)
                       .replace("/run/tokvec/tokvec.sock", sock))
                cmd = re.sub(r"^curl ", "curl -sS --fail-with-body ", cmd)
                r = subprocess.run(["sh", "-c", cmd], cwd=self.tmp,
                                   capture_output=True, timeout=60)
                self.assertEqual(r.returncode, 0, "%s\n%s%s" % (
                    line, r.stdout[:300], r.stderr[:300]))
                self.assertTrue(r.stdout or " -o " in cmd, line)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_the_walk_through_from_raw_text_answers_the_books_batch(self):
        """The "From raw text" commands, as written (the verdict's one a
        python3 pipe over two lines), answer the book's first batch and
        the whole story's (1286, 4, 256)."""
        text = readme_text()
        part = text[text.index("**From raw text**"):]
        part = part[:part.index("## ")]
        cmds = [c.strip() for c in
                re.findall(r"^    (\S(?:[^\n]*\\\n)*[^\n]*)$", part, re.M)]
        self.assertEqual(len(cmds), 2, cmds)
        book = [[40, 367, 2885, 1464], [1807, 3619, 402, 271],
                [10899, 2138, 257, 7026], [15632, 438, 2016, 257],
                [922, 5891, 1576, 438], [568, 340, 373, 645],
                [1049, 5975, 284, 502], [284, 3285, 326, 11]]
        s = tc.Server(self.table, "--tokenizer",
                      os.path.join(tc.TOP, "data", "gpt2"))
        try:
            got = []
            for cmd in cmds:
                cmd = cmd.replace("localhost:8080", "localhost:%d" % s.port)
                cmd = cmd.replace("curl ", "curl -sS --fail-with-body ")
                r = subprocess.run(["sh", "-c", cmd], cwd=tc.TOP,
                                   capture_output=True, timeout=120)
                self.assertEqual(r.returncode, 0, (cmd, r.stderr[:300]))
                got.append(json.loads(r.stdout))
            self.assertEqual(got[0]["shape"], [8, 4, 256])
            self.assertEqual(got[0]["input_ids"], book)
            self.assertEqual(got[0]["target_ids"][0], [367, 2885, 1464,
                                                       1807])
            self.assertEqual(got[1]["shape"], [1286, 4, 256])
            self.assertEqual(got[1]["input_ids"][:8], book)
        finally:
            self.assertEqual(s.stop(), 0)

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

    def test_make_help_lists_every_target_the_readmes_name(self):
        """`make X` in README.md or deploy/README.md: X is in make help
        (coverage, the container and deploy targets, the oracles,
        bench)."""
        r = subprocess.run(["make", "-s", "--no-print-directory", "help"],
                           cwd=tc.TOP, capture_output=True, text=True,
                           env=make_env(), check=True)
        listed = set(re.findall(r"\bmake ([a-z][a-z0-9-]*)", r.stdout))
        named = set()
        for doc in ("README.md", os.path.join("deploy", "README.md")):
            with open(os.path.join(tc.TOP, doc), encoding="utf-8") as f:
                named |= set(re.findall(r"`make ([a-z][a-z0-9-]*)[` ]",
                                        f.read()))
        for target in ("image", "container-test", "compose-test",
                       "deploy-check", "unigram-oracle", "bench"):
            self.assertIn(target, listed)
        self.assertEqual(named - listed, set(), r.stdout)

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
        self.assertTrue(os.path.exists(
            os.path.join(tc.TOP, "docs", "openapi.json")))
        for name in re.findall(r"`(examples/[\w.]+)`", text):
            self.assertTrue(os.path.exists(os.path.join(tc.TOP, name)), name)


if __name__ == "__main__":
    tc.main()
