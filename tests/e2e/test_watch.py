"""End-to-end: `tokvec serve --watch` (TOKVEC_WATCH, "watch" in the
config file) reloads what it serves when its files change, as SIGHUP does.

* A new table renamed over the served one (f32, f16, bf16): its rows are
  served, after exactly one reload (tokvec_reloads_total and the log);
  written under a temporary name in the same directory first, as an
  atomic replacement is.
* A broken file renamed over it (cut, not a table, another dim): the old
  table keeps serving and the log says why, as a SIGHUP reload does; the
  next good file is taken.
* --tokenizer FILE: a tokenizer replaced by one with other ids is read
  again (/tokenize follows); a broken one keeps the old pair.
* --model DIR: a new model.safetensors renamed into the directory is
  served; a broken config.json keeps the old model.
* Without --watch nothing is reloaded; TOKVEC_WATCH=true watches.

Deadlines only bound the waits (scaled by TOKVEC_TEST_TIME_SCALE); no
assertion is about time.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import numpy as np

import support as tc
import test_sentences as ts

TOP = tc.TOP
GPT2 = os.path.join(TOP, "data", "gpt2")


def init(path, vocab, seed, dtype="f32", dim=8):
    """`tokvec init` into a temporary name beside path, then renamed over
    it (one atomic replacement)."""
    tmp = path + ".tmp"
    subprocess.run([tc.BINARY, "init", "--vocab", str(vocab), "--dim",
                    str(dim), "--context", "4", "--seed", str(seed),
                    "--dtype", dtype, "-o", tmp], check=True,
                   stdout=subprocess.DEVNULL)
    os.rename(tmp, path)


def replace(path, data):
    """data under a temporary name, renamed over path."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


def wait_for(pred, what, srv, seconds=20):
    end = time.time() + seconds * tc.TIME_SCALE
    while time.time() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("no %s: %s" % (what, srv.stderr()))


def watching(srv, what):
    """The control loop's "watch: WHAT" line is there: the watches are set
    before the server starts, so a change made once it answers is seen
    (wait_for only in case the log line is still on its way)."""
    wait_for(lambda: "watch: " + what in srv.stderr(), "watch line", srv)


def reloads(srv, result):
    return srv.metric('tokvec_reloads_total{result="%s"}' % result) or 0


def row(srv, i):
    st, _, b = srv.get("/tokens/%d" % i)
    assert st == 200, b
    return np.array(json.loads(b)["embedding"], dtype=np.float32)


def sighup_round_trip(srv):
    """A SIGHUP and its reload: every change the loop had seen before it
    has been handled once this returns."""
    n = reloads(srv, "ok") + reloads(srv, "failed")
    srv.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: reloads(srv, "ok") + reloads(srv, "failed") > n,
             "reload after SIGHUP", srv)


class WatchTable(unittest.TestCase):

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="tokvec-watch-")
        self.path = os.path.join(self.d, "t.safetensors")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def test_a_new_table_renamed_over_the_old_is_served_after_one_reload(
            self):
        for dtype in ("f32", "f16", "bf16"):
            with self.subTest(dtype=dtype):
                init(self.path, 300, 1, dtype)
                srv = tc.Server(self.path, "--watch", "true")
                try:
                    # set before the server first answered (tc.Server
                    # returns once /health has)
                    self.assertIn("watch: " + self.path, srv.stderr())
                    init(self.path, 400, 2, dtype)
                    want = tc.read_safetensors(
                        self.path, widen=True)["tok_emb.weight"]
                    wait_for(lambda: reloads(srv, "ok") >= 1, "reload", srv)
                    info = json.loads(srv.get("/info")[2])
                    self.assertEqual(info["vocab_size"], 400)
                    for i in (0, 299, 399):
                        np.testing.assert_array_equal(row(srv, i), want[i])
                    st, _, b = srv.embed({"inputs": [[399, 5]],
                                          "positions": False})
                    self.assertEqual(st, 200, b)
                    np.testing.assert_array_equal(
                        np.array(json.loads(b)["embeddings"][0],
                                 dtype=np.float32), want[[399, 5]])
                    sighup_round_trip(srv)
                    err = srv.stderr()
                    # one reload for the rename, one for the SIGHUP
                    self.assertEqual(err.count("watch: %s changed"
                                               % self.path), 1, err)
                    self.assertEqual(reloads(srv, "ok"), 2)
                    self.assertEqual(reloads(srv, "failed"), 0)
                finally:
                    self.assertEqual(srv.stop(), 0)

    def test_a_broken_file_keeps_the_old_table_and_says_why(self):
        init(self.path, 300, 1)
        good = tc.read_safetensors(self.path)["tok_emb.weight"]
        with open(self.path, "rb") as f:
            data = f.read()
        other_dim = os.path.join(self.d, "wide.safetensors")
        init(other_dim, 300, 3, dim=16)
        with open(other_dim, "rb") as f:
            wide = f.read()
        srv = tc.Server(self.path, "--watch", "true")
        try:
            watching(srv, self.path)
            cases = [(data[:100], "beyond the file size"),
                     (b"not a table at all", self.path),
                     (wide, "has dim 16")]
            for n, (bad, why) in enumerate(cases, 1):
                with self.subTest(why=why):
                    replace(self.path, bad)
                    wait_for(lambda: reloads(srv, "failed") >= n,
                             "failed reload", srv)
                    err = srv.stderr()
                    self.assertIn("reload failed, still serving the old "
                                  "table", err)
                    self.assertIn(why, err)
                    np.testing.assert_array_equal(row(srv, 7), good[7])
            self.assertEqual(reloads(srv, "ok"), 0)
            # the next good file is taken
            init(self.path, 300, 4)
            wait_for(lambda: reloads(srv, "ok") >= 1, "reload", srv)
            new = tc.read_safetensors(self.path)["tok_emb.weight"]
            np.testing.assert_array_equal(row(srv, 7), new[7])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_without_watch_a_change_is_not_reloaded(self):
        init(self.path, 300, 1)
        srv = tc.Server(self.path)
        try:
            init(self.path, 400, 2)
            sighup_round_trip(srv)  # the loop has run past the change
            self.assertEqual(reloads(srv, "ok"), 1)  # the SIGHUP's alone
            self.assertNotIn("watch:", srv.stderr())
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_the_variable_and_the_config_key_watch_too(self):
        conf = os.path.join(self.d, "tokvec.json")
        with open(conf, "w") as f:
            json.dump({"watch": True}, f)
        for args, env in ((("--config", conf), None),
                          ((), {"TOKVEC_WATCH": "true"})):
            with self.subTest(args=args, env=env):
                init(self.path, 300, 1)
                srv = tc.Server(self.path, *args, env=env)
                try:
                    watching(srv, self.path)
                    init(self.path, 400, 2)
                    wait_for(lambda: reloads(srv, "ok") >= 1, "reload", srv)
                    info = json.loads(srv.get("/info")[2])
                    self.assertEqual(info["vocab_size"], 400)
                finally:
                    self.assertEqual(srv.stop(), 0)


class WatchTokenizer(unittest.TestCase):

    def test_a_replaced_tokenizer_is_read_again_a_broken_one_is_not(self):
        d = tempfile.mkdtemp(prefix="tokvec-watch-tok-")
        try:
            text, _ = ts.gpt2_tokenizer_json()
            path = os.path.join(d, "tokenizer.json")
            replace(path, text.encode())
            srv = tc.Server(os.path.join(TOP, "data",
                                         "gpt2-256.safetensors"),
                            "--tokenizer", path, "--watch", "true")
            try:
                def ids():
                    st, _, b = srv.request("POST", "/tokenize", json.dumps(
                        {"inputs": "Hello world"}))
                    self.assertEqual(st, 200, b)
                    return [t["id"] for t in json.loads(b)[0]]
                self.assertEqual(ids(), [15496, 995])
                watching(srv, path)
                replace(path, b'{"model": ')
                wait_for(lambda: reloads(srv, "failed") >= 1,
                         "failed reload", srv)
                self.assertIn("tokenizer:", srv.stderr())
                self.assertEqual(ids(), [15496, 995])
                # the same tokens under swapped ids
                tok = json.loads(text)
                v = tok["model"]["vocab"]
                v["Hello"], v["\u0120world"] = v["\u0120world"], v["Hello"]
                replace(path, json.dumps(tok).encode())
                wait_for(lambda: reloads(srv, "ok") >= 1, "reload", srv)
                self.assertEqual(ids(), [995, 15496])
            finally:
                self.assertEqual(srv.stop(), 0)
        finally:
            shutil.rmtree(d, ignore_errors=True)


class WatchModel(unittest.TestCase):

    def test_a_model_directory_is_watched_whole(self):
        d = tempfile.mkdtemp(prefix="tokvec-watch-model-")
        try:
            text, _ = ts.gpt2_tokenizer_json()
            rng = np.random.default_rng(29)
            emb = rng.standard_normal((ts.V, ts.D)).astype(np.float32)
            replace(os.path.join(d, "tokenizer.json"), text.encode())
            ts.write_safetensors(os.path.join(d, "model.safetensors"),
                                 {"embeddings": ("F32", emb)})
            replace(os.path.join(d, "config.json"), json.dumps(
                {"model_type": "model2vec", "normalize": False}).encode())
            srv = tc.Server(None, "--model", d, "--watch", "true")
            try:
                watching(srv, "%s (the directory)" % d)
                np.testing.assert_array_equal(row(srv, 7), emb[7])
                emb2 = (emb * 2).astype(np.float32)
                tmp = os.path.join(d, "model.safetensors.new")
                ts.write_safetensors(tmp, {"embeddings": ("F32", emb2)})
                os.rename(tmp, os.path.join(d, "model.safetensors"))
                wait_for(lambda: np.array_equal(row(srv, 7), emb2[7]),
                         "the new model's rows", srv)
                np.testing.assert_array_equal(row(srv, 50256), emb2[50256])
                # a broken directory: logged, the old one keeps serving
                failed = reloads(srv, "failed")
                replace(os.path.join(d, "config.json"),
                        b'{"normalize": "maybe"}')
                wait_for(lambda: reloads(srv, "failed") > failed,
                         "failed reload", srv)
                self.assertIn("config.json", srv.stderr())
                np.testing.assert_array_equal(row(srv, 7), emb2[7])
            finally:
                self.assertEqual(srv.stop(), 0)
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    tc.main()
