"""Sentence vectors end to end (contract section 8): `tokvec serve --model
DIR` on model directories this suite writes (Model2Vec layout with weights
and mapping, sentence-transformers layout under 0_StaticEmbedding/, a plain
--table), their tokenizer.json a ByteLevel BPE made from GPT-2's files
(data/gpt2) -- the tokenizer family tokvec reads today. Every vector is
checked against a float64 numpy reference within 1e-5: Model2Vec's
StaticModel.encode (text cut to M x median token length code points, the
first M ids, rows embeddings[mapping[id]] * weights[id], mean, v / (|v| +
1e-32)), sentence-transformers' StaticEmbedding (mean of every id, then
Normalize). Ids come from the server's /tokenize (exact against tiktoken:
tests/oracle). Also POST /v1/embeddings and GET /v1/models as OpenAI's API
(errors in OpenAI's shape, statuses tokvec's), /embed's "pooling" in every
answer format, start-up errors and SIGHUP. The model2vec-rs fixtures
(WordPiece and Unigram tokenizers) are read through the core API in
tests/test_model.c and through `tokvec inspect` here. The official OpenAI
Node SDK (npm `openai`, pinned in tests/e2e/openai/) is run as a real
client.

Standard library + numpy; node and npm for the SDK.
"""
import base64
import io
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import unittest

import numpy as np

import support as tc

TOP = tc.TOP
FIX = os.path.join(TOP, "tests", "data", "model2vec-rs")
V = 50257
D = 16


def write_safetensors(path, tensors):
    """{name: (dtype, array)} -> a safetensors file (renamed into place)."""
    hdr, blobs, off = {}, [], 0
    for name, (dt, a) in tensors.items():
        b = np.ascontiguousarray(a).tobytes()
        hdr[name] = {"dtype": dt, "shape": list(a.shape),
                     "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.rename(tmp, path)


def gpt2_tokenizer_json():
    """GPT-2's encoder.json + vocab.bpe as a Hugging Face tokenizer.json
    (BPE, ByteLevel pre-tokenizer); returns (json text, vocab strings)."""
    with open(os.path.join(TOP, "data", "gpt2", "encoder.json")) as f:
        enc = json.load(f)
    with open(os.path.join(TOP, "data", "gpt2", "vocab.bpe"),
              encoding="utf-8") as f:
        merges = [ln for ln in f.read().split("\n")[1:] if ln]
    vocab = {k: v for k, v in enc.items() if k != "<|endoftext|>"}
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": 50256, "content": "<|endoftext|>",
                             "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False,
                             "special": True}],
           "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                             "trim_offsets": True, "use_regex": True},
           "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                       "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False,
                     "byte_fallback": False, "vocab": vocab,
                     "merges": merges}}
    return json.dumps(tok), list(enc.keys())


class Models:
    """The model directories, made once."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="tokvec-sentences-")
        text, strings = gpt2_tokenizer_json()
        # numpy's median of len(token) over get_vocab(), then int()
        self.median = int(np.median([len(s) for s in strings]))
        rng = np.random.default_rng(26)
        # Model2Vec, vocabulary-quantized: K rows, weights F64, mapping I32
        self.emb = rng.standard_normal((64, D)).astype(np.float32)
        self.weights = rng.random(V)
        self.mapping = rng.integers(0, 64, V).astype(np.int32)
        self.m2v = self.model2vec_dir("m2v", text, self.emb, self.weights,
                                      self.mapping)
        # sentence-transformers: embedding.weight under 0_StaticEmbedding/
        self.st_table = rng.standard_normal((V, D)).astype(np.float16)
        self.st = os.path.join(self.tmp, "st")
        os.makedirs(os.path.join(self.st, "0_StaticEmbedding"))
        with open(os.path.join(self.st, "0_StaticEmbedding",
                               "tokenizer.json"), "w") as f:
            f.write(text)
        write_safetensors(os.path.join(self.st, "0_StaticEmbedding",
                                       "model.safetensors"),
                          {"embedding.weight": ("F16", self.st_table)})
        with open(os.path.join(self.st, "modules.json"), "w") as f:
            json.dump([{"idx": 0, "name": "0", "path": "0_StaticEmbedding",
                        "type": "sentence_transformers.models."
                                "StaticEmbedding"},
                       {"idx": 1, "name": "1", "path": "1_Normalize",
                        "type": "sentence_transformers.models.Normalize"}],
                      f)
        self.text = text

    def model2vec_dir(self, name, text, emb, weights, mapping, dt="F32"):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            f.write(text)
        self.write_m2v_table(d, emb, weights, mapping, dt)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump({"model_type": "model2vec", "normalize": True}, f)
        return d

    @staticmethod
    def write_m2v_table(d, emb, weights, mapping, dt="F32"):
        write_safetensors(os.path.join(d, "model.safetensors"),
                          {"embeddings": (dt, emb),
                           "weights": ("F64", weights),
                           "mapping": ("I32", mapping)})

    def m2v_rows(self, ids, emb=None, weights=None, mapping=None):
        emb = self.emb if emb is None else emb
        weights = self.weights if weights is None else weights
        mapping = self.mapping if mapping is None else mapping
        ids = np.asarray(ids, dtype=np.int64)
        return emb[mapping[ids]].astype(np.float64) * weights[ids][:, None]


MODELS = None


def setUpModule():
    global MODELS
    MODELS = Models()


def tearDownModule():
    shutil.rmtree(MODELS.tmp, ignore_errors=True)


def mean_ref(rows, normalize, k=None):
    v = rows.mean(axis=0) if len(rows) else np.zeros(rows.shape[1])
    if k is not None:
        v = v[:k]
    if normalize:
        v = v / (np.linalg.norm(v) + 1e-32)
    return v


class Model2VecServer(unittest.TestCase):
    M = 5  # max_sentence_tokens, small enough to cut

    @classmethod
    def setUpClass(cls):
        cls.srv = tc.Server(None, "--model", MODELS.m2v,
                            "--max-sentence-tokens", str(cls.M),
                            "--api-key", "k")
        cls.auth = {"Authorization": "Bearer k"}

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def post(self, path, obj, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(self.auth)
        h.update(headers or {})
        st, hd, body = self.srv.request("POST", path, json.dumps(obj), h)
        return st, hd, body

    def ids_of(self, text):
        st, _, body = self.post("/tokenize", {"inputs": text})
        self.assertEqual(st, 200, body)
        return [t["id"] for t in json.loads(body)[0]]

    def encode_ref(self, text):
        """StaticModel.encode: cut, tokenize, first M ids, mean, norm."""
        cut = text[:self.M * MODELS.median]
        ids = self.ids_of(cut)[:self.M] if cut else []
        return mean_ref(MODELS.m2v_rows(ids), True), len(ids)

    def test_openai_vectors_are_static_model_encode(self):
        texts = ["hello world", "The quick brown fox jumps over the lazy "
                 "dog, again and again and again.", "x", "\u00e9t\u00e9 "
                 "\u65e5\u672c\u8a9e \U0001f600 emoji"]
        st, _, body = self.post("/v1/embeddings",
                                {"input": texts, "model": "anything",
                                 "user": "u", "encoding_format": None})
        self.assertEqual(st, 200, body)
        ans = json.loads(body)
        self.assertEqual(ans["object"], "list")
        self.assertEqual(ans["model"], "m2v")
        total = 0
        for i, t in enumerate(texts):
            ref, n = self.encode_ref(t)
            total += n
            d = ans["data"][i]
            self.assertEqual((d["object"], d["index"]), ("embedding", i))
            np.testing.assert_allclose(d["embedding"], ref, atol=1e-5)
        self.assertEqual(ans["usage"], {"prompt_tokens": total,
                                        "total_tokens": total})
        self.assertLessEqual(total, self.M * len(texts))

    def test_base64_is_the_float_answer_as_le_float32(self):
        for inp in ("hello", ["a b", "c"], [1, 2, 3], [[5], [6, 7]]):
            a = json.loads(self.post("/v1/embeddings", {"input": inp})[2])
            b = json.loads(self.post("/v1/embeddings",
                                     {"input": inp,
                                      "encoding_format": "base64"})[2])
            for x, y in zip(a["data"], b["data"]):
                v = np.frombuffer(base64.b64decode(y["embedding"]), "<f4")
                self.assertEqual(v.tolist(),
                                 np.float32(x["embedding"]).tolist())

    def test_id_inputs_pool_as_given(self):
        ids = [[5, 17, 2000], [50256]]
        ans = json.loads(self.post("/v1/embeddings", {"input": ids})[2])
        for i, row in enumerate(ids):
            np.testing.assert_allclose(ans["data"][i]["embedding"],
                                       mean_ref(MODELS.m2v_rows(row), True),
                                       atol=1e-5)
        self.assertEqual(ans["usage"]["prompt_tokens"], 4)

    def test_dimensions_are_the_first_k_renormalized(self):
        ans = json.loads(self.post("/v1/embeddings",
                                   {"input": [[1, 2, 3]],
                                    "dimensions": 5})[2])
        v = np.array(ans["data"][0]["embedding"])
        np.testing.assert_allclose(
            v, mean_ref(MODELS.m2v_rows([1, 2, 3]), True, 5), atol=1e-5)
        self.assertAlmostEqual(float(np.linalg.norm(v)), 1.0, places=5)

    def test_errors_have_openais_shape_and_tokvecs_status(self):
        cases = [
            ({"input": ""}, 400, "invalid_request", "input"),
            ({"input": []}, 400, "invalid_request", "input"),
            ({"input": [[1], []]}, 400, "invalid_request", "input"),
            ({"input": "a", "dimensions": D + 1}, 400, "invalid_request",
             "dimensions"),
            ({"input": "a", "dimensions": 0}, 400, "invalid_request",
             "dimensions"),
            ({"input": "a", "encoding_format": "npy"}, 400,
             "invalid_request", "encoding_format"),
            ({"input": [[V]]}, 422, "token_out_of_range", "input"),
            ({"input": "a", "temperature": 1}, 400, "invalid_request", None),
        ]
        for obj, status, code, param in cases:
            st, _, body = self.post("/v1/embeddings", obj)
            self.assertEqual(st, status, (obj, body))
            err = json.loads(body)["error"]
            self.assertEqual(set(err), {"message", "type", "param", "code"})
            self.assertEqual(err["code"], code, obj)
            self.assertEqual(err["param"], param, obj)
            self.assertEqual(err["type"], "invalid_request_error")
        # before routing: 401, 415, 404 under /v1/
        st, _, body = self.srv.request("POST", "/v1/embeddings",
                                       '{"input":"a"}',
                                       {"Content-Type": "application/json"})
        self.assertEqual(st, 401)
        self.assertEqual(json.loads(body)["error"]["type"],
                         "authentication_error")
        self.assertEqual(json.loads(body)["error"]["code"], "unauthorized")
        st, _, body = self.post("/v1/embeddings", {"input": "a"},
                                {"Content-Type": "text/csv"})
        self.assertEqual(st, 415)
        self.assertEqual(json.loads(body)["error"]["code"],
                         "unsupported_media_type")
        st, _, body = self.srv.request("GET", "/v1/chat", None, self.auth)
        self.assertEqual(st, 404)
        self.assertEqual(json.loads(body)["error"]["code"], "not_found")
        # tokvec's own routes keep tokvec's shape
        st, _, body = self.post("/embed", {"inputs": []})
        self.assertIn("error_type", json.loads(body))

    def test_models_lists_the_served_model(self):
        st, _, body = self.srv.request("GET", "/v1/models", None, self.auth)
        self.assertEqual(st, 200)
        ans = json.loads(body)
        self.assertEqual(ans["object"], "list")
        (m,) = ans["data"]
        self.assertEqual((m["id"], m["object"], m["owned_by"]),
                         ("m2v", "model", "tokvec"))
        self.assertIsInstance(m["created"], int)

    def test_info_names_the_model_and_rows_are_the_formula(self):
        info = json.loads(self.srv.request("GET", "/info", None,
                                           self.auth)[2])
        self.assertEqual(info["vocab_size"], V)
        self.assertEqual(info["model"]["layout"], "model2vec")
        self.assertEqual(info["model"]["name"], "m2v")
        self.assertTrue(info["model"]["normalize"])
        self.assertEqual(info["model"]["normalize_from"], "config.json")
        self.assertEqual(info["model"]["median_token_length"], MODELS.median)
        for i in (0, 7, 50256):
            row = json.loads(self.srv.request("GET", "/tokens/%d" % i, None,
                                              self.auth)[2])["embedding"]
            self.assertEqual(np.float32(row).tolist(),
                             MODELS.m2v_rows([i])[0].astype(
                                 np.float32).tolist())

    def test_embed_pooling_in_every_format(self):
        inputs = [[1, 2, 3], [4], [5, 6]]  # ragged: no pad_id needed
        refs = np.array([mean_ref(MODELS.m2v_rows(r), True) for r in inputs])
        st, _, body = self.post("/embed", {"inputs": inputs,
                                           "pooling": "mean"})
        self.assertEqual(st, 200, body)
        ans = json.loads(body)
        self.assertEqual(ans["shape"], [3, D])
        np.testing.assert_allclose(ans["embeddings"], refs, atol=1e-5)
        b64 = json.loads(self.post("/embed", {"inputs": inputs,
                                              "pooling": "mean",
                                              "encoding_format": "base64"})[2])
        self.assertEqual(np.frombuffer(base64.b64decode(b64["embeddings"]),
                                       "<f4").reshape(3, D).tolist(),
                         np.float32(ans["embeddings"]).tolist())
        st, hd, raw = self.post("/embed", {"inputs": inputs,
                                           "pooling": "mean"},
                                {"Accept": "application/octet-stream"})
        self.assertEqual(hd["X-Tokvec-Shape"], "3,%d" % D)
        self.assertEqual(np.frombuffer(raw, "<f4").reshape(3, D).tolist(),
                         np.float32(ans["embeddings"]).tolist())
        st, _, npy = self.post("/embed", {"inputs": inputs,
                                          "pooling": "mean",
                                          "normalize": False,
                                          "dimensions": 4},
                               {"Accept": "application/x-npy"})
        a = np.load(io.BytesIO(npy))
        self.assertEqual(a.shape, (3, 4))
        np.testing.assert_allclose(
            a, [mean_ref(MODELS.m2v_rows(r), False, 4) for r in inputs],
            atol=1e-5)
        # torch: one (D,) archive per input (a zip with data.pkl)
        tj = json.loads(self.post("/embed", {"inputs": inputs,
                                             "pooling": "mean",
                                             "encoding_format": "torch"})[2])
        self.assertEqual(tj["shape"], [3, D])
        self.assertEqual(len(tj["embeddings"]), 3)
        self.assertEqual(base64.b64decode(tj["embeddings"][0])[:2], b"PK")
        # texts: input_ids are each input's pooled ids
        st, _, body = self.post("/embed", {"inputs": ["hello world", "x"],
                                           "pooling": "mean"})
        ans = json.loads(body)
        self.assertEqual(ans["input_ids"],
                         [self.ids_of("hello world"), self.ids_of("x")])

    def test_embed_pooling_options_are_checked(self):
        for obj, status in [
                ({"inputs": [[1]], "normalize": True}, 400),
                ({"inputs": [[1]], "dimensions": 2}, 400),
                ({"inputs": "a b c d e", "pooling": "mean",
                  "max_length": 2}, 400),
                ({"inputs": [[1]], "pooling": "max"}, 400),
                ({"inputs": [[1]], "pooling": "mean",
                  "dimensions": D + 1}, 400),
                ({"inputs": [[1], [2, 3]]}, 422)]:  # ragged without mean
            st, _, body = self.post("/embed", obj)
            self.assertEqual(st, status, (obj, body))

    def test_metrics_label_the_new_routes(self):
        self.post("/v1/embeddings", {"input": "a"})
        text = self.srv.get("/metrics")[2].decode()
        self.assertIn('route="/v1/embeddings"', text)


SDK_DIR = os.path.join(TOP, "tests", "e2e", "openai")


def openai_sdk():
    """The npm `openai` package (pinned, hash-checked by npm ci) installed
    under build/openai-sdk; None where npm is missing."""
    dest = os.path.join(TOP, "build", "openai-sdk")
    mark = os.path.join(dest, ".installed")
    lock = os.path.join(SDK_DIR, "package-lock.json")
    if shutil.which("npm") is None or shutil.which("node") is None:
        return None
    if not (os.path.exists(mark) and
            os.path.getmtime(mark) >= os.path.getmtime(lock)):
        os.makedirs(dest, exist_ok=True)
        for f in ("package.json", "package-lock.json", "embed.mjs"):
            shutil.copy(os.path.join(SDK_DIR, f), dest)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"],
                       cwd=dest, check=True, timeout=300)
        open(mark, "w").close()
    shutil.copy(os.path.join(SDK_DIR, "embed.mjs"), dest)
    return dest


class OpenAISDK(unittest.TestCase):
    """The official OpenAI Node SDK, unchanged, against base_url .../v1:
    its default request (base64, which it decodes) and "float" give the
    vectors of StaticModel.encode, "" is the SDK's 400 error."""

    @classmethod
    def setUpClass(cls):
        cls.sdk = openai_sdk()
        if cls.sdk is None:
            raise unittest.SkipTest("npm/node not found (Debian nodejs, npm)")
        cls.srv = tc.Server(None, "--model", MODELS.m2v,
                            "--max-sentence-tokens", "5",
                            "--served-model-name", "potion-test",
                            "--api-key", "sk-local")

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_the_official_sdk_gets_static_model_encode_vectors(self):
        texts = ["hello world", "The quick brown fox jumps over the dog",
                 "x"]
        r = subprocess.run(
            ["node", os.path.join(self.sdk, "embed.mjs"),
             "http://127.0.0.1:%d/v1" % self.srv.port, "sk-local",
             json.dumps({"model": "anything", "input": texts})],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        h = {"Content-Type": "application/json",
             "Authorization": "Bearer sk-local"}
        for form in ("default", "float"):
            ans = out[form]
            self.assertEqual(ans["model"], "potion-test")
            self.assertEqual([d["index"] for d in ans["data"]], [0, 1, 2])
            for text, d in zip(texts, ans["data"]):
                st, _, body = self.srv.request(
                    "POST", "/embed", json.dumps(
                        {"inputs": [text], "pooling": "mean"}), h)
                self.assertEqual(st, 200, body)
                want = np.array(json.loads(body)["embeddings"][0],
                                np.float32)
                got = np.array(d["embedding"], np.float32)
                np.testing.assert_array_equal(got.view("<u4"),
                                              want.view("<u4"))
            self.assertGreater(ans["usage"]["prompt_tokens"], 0)
        self.assertEqual(out["empty"]["status"], 400)


class SentenceTransformersServer(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.srv = tc.Server(None, "--model", MODELS.st,
                            "--served-model-name", "static-st",
                            "--max-sentence-tokens", "2")

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_mean_of_every_id_then_normalize(self):
        text = "Sentence transformers do not cut: every id counts."
        st, _, body = self.srv.request(
            "POST", "/tokenize", json.dumps({"inputs": text}),
            {"Content-Type": "application/json"})
        ids = [t["id"] for t in json.loads(body)[0]]
        ans = json.loads(self.srv.request(
            "POST", "/v1/embeddings", json.dumps({"input": text}),
            {"Content-Type": "application/json"})[2])
        self.assertEqual(ans["model"], "static-st")
        self.assertEqual(ans["usage"]["prompt_tokens"], len(ids))
        rows = MODELS.st_table[ids].astype(np.float64)
        np.testing.assert_allclose(ans["data"][0]["embedding"],
                                   mean_ref(rows, True), atol=1e-5)
        info = json.loads(self.srv.get("/info")[2])
        self.assertEqual(info["model"]["layout"], "sentence-transformers")
        self.assertEqual(info["model"]["normalize_from"], "modules.json")


class PlainTable(unittest.TestCase):

    def test_mean_of_the_rows_embed_returns(self):
        tmp, table = tc.temp_table("tokvec-sent-plain-", 100, 8,
                                   "--positional", "learned",
                                   "--context", "16")
        srv = tc.Server(table)
        try:
            ids = [3, 9, 27]
            rows = np.array(json.loads(srv.embed({"inputs": [ids]})[2])
                            ["embeddings"][0], dtype=np.float64)
            ans = json.loads(srv.request(
                "POST", "/v1/embeddings", json.dumps({"input": ids}),
                {"Content-Type": "application/json"})[2])
            np.testing.assert_allclose(ans["data"][0]["embedding"],
                                       rows.mean(axis=0), atol=1e-5)
            self.assertEqual(ans["model"], "t.safetensors")
            models = json.loads(srv.get("/v1/models")[2])
            self.assertEqual(models["data"][0]["id"], "t.safetensors")
        finally:
            srv.stop()
            shutil.rmtree(tmp, ignore_errors=True)


class StartUpAndReload(unittest.TestCase):

    def run_serve(self, *args):
        p = subprocess.run([tc.BINARY, "serve", "--port",
                            str(tc.free_port()), *args],
                           capture_output=True, timeout=60)
        return p.returncode, p.stderr.decode()

    def test_model_with_table_or_tokenizer_is_exit_2(self):
        for extra in (["--table", "x.safetensors"],
                      ["--tokenizer", "data/gpt2"]):
            rc, err = self.run_serve("--model", MODELS.m2v, *extra)
            self.assertEqual(rc, 2, err)
            self.assertIn("give --model alone", err)
        p = subprocess.run([tc.BINARY, "serve", "--port",
                            str(tc.free_port()), "--model", MODELS.m2v],
                           capture_output=True, timeout=60,
                           env=dict(os.environ, TOKVEC_TABLE="y"))
        self.assertEqual(p.returncode, 2)

    def test_malformed_directory_is_one_line_naming_the_file(self):
        d = tempfile.mkdtemp(prefix="tokvec-sent-bad-")
        try:
            shutil.copy(os.path.join(MODELS.m2v, "tokenizer.json"), d)
            shutil.copy(os.path.join(MODELS.m2v, "model.safetensors"), d)
            with open(os.path.join(d, "modules.json"), "w") as f:
                f.write("[1")
            rc, err = self.run_serve("--model", d)
            self.assertEqual(rc, 2)
            self.assertIn("modules.json", err)
            self.assertIn("not valid JSON", err)
        finally:
            shutil.rmtree(d)

    def test_sighup_reopens_the_directory_or_keeps_the_old(self):
        d = os.path.join(MODELS.tmp, "reload")
        shutil.copytree(MODELS.m2v, d)
        srv = tc.Server(None, "--model", d)
        try:
            def vec():
                return json.loads(srv.request(
                    "POST", "/v1/embeddings", json.dumps({"input": [[7]]}),
                    {"Content-Type": "application/json"})[2])[
                        "data"][0]["embedding"]
            before = vec()
            emb2 = (MODELS.emb * 2).astype(np.float32)
            Models.write_m2v_table(d, emb2, MODELS.weights, MODELS.mapping)
            srv.proc.send_signal(signal.SIGHUP)
            ok = False
            end = time.time() + 20 * tc.TIME_SCALE  # (valgrind: slower)
            while time.time() < end:
                if srv.metric('tokvec_reloads_total{result="ok"}') >= 1:
                    ok = True
                    break
                time.sleep(0.02)
            self.assertTrue(ok, srv.stderr())
            # normalized: the doubled rows give the same direction ...
            np.testing.assert_allclose(vec(), before, atol=1e-5)
            info = json.loads(srv.get("/tokens/7")[2])["embedding"]
            np.testing.assert_allclose(
                info, MODELS.m2v_rows([7], emb=emb2)[0], atol=1e-5)
            # a broken directory: logged, the old one keeps serving
            with open(os.path.join(d, "config.json"), "w") as f:
                f.write('{"normalize": "maybe"}')
            srv.proc.send_signal(signal.SIGHUP)
            end = time.time() + 20 * tc.TIME_SCALE
            while time.time() < end:
                if srv.metric('tokvec_reloads_total{result="failed"}') >= 1:
                    break
                time.sleep(0.02)
            self.assertIn("config.json", srv.stderr())
            np.testing.assert_allclose(vec(), before, atol=1e-5)
        finally:
            srv.stop()


class InspectFixtures(unittest.TestCase):

    def test_inspect_describes_the_model2vec_rs_fixtures(self):
        want = {"test-model-float32": ("model2vec", "29528 from 29528"),
                "test-model-int8": ("model2vec", "29528 from 29528"),
                "test-model-vocab-quantized": ("model2vec",
                                               "29524 from 128 stored rows, "
                                               "mapping mapping, weights "
                                               "weights (F64)"),
                "test-model-sentence-transformers": (
                    "sentence-transformers", "29528 from 29528")}
        for name, (layout, rows) in want.items():
            p = subprocess.run([tc.BINARY, "inspect",
                                os.path.join(FIX, name)],
                               capture_output=True, text=True, check=True)
            self.assertIn("(%s layout)" % layout, p.stdout)
            self.assertIn("vocab_size " + rows, p.stdout)
            self.assertIn("normalize   true", p.stdout)


if __name__ == "__main__":
    tc.main()
