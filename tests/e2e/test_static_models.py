"""The five model2vec-rs fixture models (tests/data/model2vec-rs, MIT:
float32, float16, int8 and sentence-transformers layouts with a bge
WordPiece tokenizer; a vocabulary-quantized one with a Unigram tokenizer)
served with `tokvec serve --model DIR`, end to end: every sentence vector
-- POST /v1/embeddings (float and base64, a batch and one text at a time,
"dimensions"), POST /embed with "pooling": "mean" (JSON floats, base64,
torch, .npy, .npz, raw; "normalize", "dimensions") -- within 1e-5 of the
float64 numpy reference of Model2Vec's StaticModel.encode /
sentence-transformers' StaticEmbedding (static_ref.py), whose ids are
Hugging Face tokenizers' (precomputed: tests/data/model2vec-rs/hf-ids.json,
`make sentence-ids`). Texts: English, other scripts, a text left empty by
the unk drop, specials, white space alone, and one past the Model2Vec cut
(M x median length code points, then the first M ids); a server with
--max-sentence-tokens 4 checks the cut at a small M. The official OpenAI
Node SDK (npm openai, installed as test_sentences.py does) is a client of
each model too. DeployedSettings starts the settings of the image, of
deploy/compose-model.yaml and of deploy/k8s-model/ with the local binary.

The vocabulary-quantized model fails (never skips) while tokvec cannot
load its Unigram tokenizer.json, saying so.

Run: /usr/bin/python3 tests/e2e/test_static_models.py --binary build/tokvec
Standard library + numpy + python3-yaml; node and npm for the SDK.
"""
import base64
import io
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import unittest
import zipfile

import numpy as np

import static_ref as ref
import support as tc
from test_sentences import openai_sdk

ATOL = 1e-5
UNIGRAM_MISSING = (
    "the vocab-quantized fixture's tokenizer.json is a Unigram model, and "
    "this build of tokvec cannot load a Unigram tokenizer.json yet (the "
    "Unigram loader is merged separately); every vector of this model is "
    "untested until it can")


def start(model, *args):
    """`tokvec serve --model DIR ARGS...`; a Unigram tokenizer that cannot
    be loaded yet fails with UNIGRAM_MISSING (not a skip)."""
    try:
        return tc.Server(None, "--model", model.path, *args)
    except RuntimeError as e:
        if model.tokenizer == "unigram" and "Unigram" in str(e):
            raise AssertionError("%s\n(server: %s)" % (UNIGRAM_MISSING, e))
        raise


def torch_rows(archives):
    """The float32 payload (data/0) of each torch.save archive."""
    out = []
    for s in archives:
        with zipfile.ZipFile(io.BytesIO(base64.b64decode(s))) as z:
            name = next(n for n in z.namelist() if n.endswith("/data/0"))
            out.append(np.frombuffer(z.read(name), "<f4"))
    return np.array(out)


class FixtureModel:
    """The checks, for one fixture (NAME); subclasses name it. One server
    with the defaults (M = 512) per class."""
    NAME = None
    M = ref.DEFAULT_M
    ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.model = ref.Model(cls.NAME)
        cls.srv = start(cls.model, *cls.ARGS)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def post(self, path, obj, accept="application/json"):
        st, hd, body = self.srv.request(
            "POST", path, json.dumps(obj),
            {"Content-Type": "application/json", "Accept": accept})
        self.assertEqual(st, 200, body[:300])
        return hd, body

    def refs(self, normalize=None, k=None):
        return [ref.reference(self.model, t, self.M, normalize, k)
                for t in ref.TEXTS]

    def assertVectors(self, got, refs, what):
        got = np.asarray(got, dtype=np.float64)
        self.assertEqual(got.shape, (len(refs), len(refs[0][0])), what)
        for i, (want, ids) in enumerate(refs):
            np.testing.assert_allclose(
                got[i], want, atol=ATOL, rtol=0,
                err_msg="%s: %s text %d %r (%d ids)"
                % (what, self.NAME, i, ref.TEXTS[i][:40], len(ids)))

    # -- the model as /info describes it -------------------------------------
    def test_info_has_the_references_median_unk_and_normalization(self):
        info = json.loads(self.srv.get("/info")[2])
        m = info["model"]
        self.assertEqual(m["layout"], "sentence-transformers"
                         if self.model.st else "model2vec")
        self.assertEqual(m["median_token_length"], self.model.median)
        self.assertEqual(m["unk_id"], -1 if self.model.unk_id is None
                         else self.model.unk_id)
        self.assertEqual(m["normalize"], self.model.normalize)
        self.assertEqual(m["max_sentence_tokens"], self.M)
        self.assertEqual(info["dim"], self.model.dim)
        self.assertEqual(info["vocab_size"], len(self.model.weights)
                         if self.model.mapping is not None
                         else self.model.emb.shape[0])
        # the fixture's tokenizer is the one hf-ids.json was made from
        self.assertEqual(
            ref.sha256_file(self.model.path + "/tokenizer.json"),
            ref.sha256_file(ref.TOKENIZERS[self.model.tokenizer]))

    # -- POST /v1/embeddings --------------------------------------------------
    def test_openai_float_and_base64_are_the_reference(self):
        refs = self.refs()
        ans = json.loads(self.post("/v1/embeddings",
                                   {"input": ref.TEXTS,
                                    "model": "whatever"})[1])
        self.assertEqual(ans["model"], self.model.dirname)
        self.assertEqual([d["index"] for d in ans["data"]],
                         list(range(len(ref.TEXTS))))
        floats = [d["embedding"] for d in ans["data"]]
        self.assertVectors(floats, refs, "/v1/embeddings float")
        n = sum(len(ids) for _, ids in refs)
        self.assertEqual(ans["usage"], {"prompt_tokens": n,
                                        "total_tokens": n})
        b64 = json.loads(self.post("/v1/embeddings",
                                   {"input": ref.TEXTS,
                                    "encoding_format": "base64"})[1])
        rows = [np.frombuffer(base64.b64decode(d["embedding"]), "<f4")
                for d in b64["data"]]
        self.assertVectors(rows, refs, "/v1/embeddings base64")
        # the same float32 bits as the decimal answer
        self.assertEqual(np.array(rows).tobytes(),
                         np.array(floats, dtype=np.float32).tobytes())

    def test_openai_one_text_at_a_time(self):
        for text, (want, ids) in zip(ref.TEXTS, self.refs()):
            ans = json.loads(self.post("/v1/embeddings", {"input": text})[1])
            np.testing.assert_allclose(ans["data"][0]["embedding"], want,
                                       atol=ATOL, rtol=0,
                                       err_msg=repr(text[:40]))
            self.assertEqual(ans["usage"]["prompt_tokens"], len(ids))

    def test_openai_dimensions_are_the_first_k_renormalized(self):
        for k in sorted({1, self.model.dim // 4 or 1, self.model.dim}):
            for fmt in ("float", "base64"):
                ans = json.loads(self.post(
                    "/v1/embeddings", {"input": ref.TEXTS, "dimensions": k,
                                       "encoding_format": fmt})[1])
                rows = [d["embedding"] if fmt == "float" else
                        np.frombuffer(base64.b64decode(d["embedding"]),
                                      "<f4") for d in ans["data"]]
                self.assertVectors(rows, self.refs(k=k),
                                   "/v1/embeddings dimensions %d %s"
                                   % (k, fmt))
        st, _, body = self.srv.request(
            "POST", "/v1/embeddings",
            json.dumps({"input": "x", "dimensions": self.model.dim + 1}),
            {"Content-Type": "application/json"})
        self.assertEqual(st, 400)
        self.assertEqual(json.loads(body)["error"]["param"], "dimensions")

    def test_id_lists_are_pooled_as_given(self):
        """Ids in: every id, in order -- no cut to M, no unk drop."""
        ids = [[1, 66, 67, 68, 69, 70, 2, 3], [1], [5, 6]]
        ans = json.loads(self.post("/v1/embeddings", {"input": ids})[1])
        for row, d in zip(ids, ans["data"]):
            np.testing.assert_allclose(d["embedding"],
                                       self.model.vector(row), atol=ATOL,
                                       rtol=0, err_msg=str(row))
        self.assertEqual(ans["usage"]["prompt_tokens"],
                         sum(len(r) for r in ids))

    def test_the_openai_node_sdk_gets_the_reference(self):
        """The official OpenAI Node SDK (npm openai, tests/e2e/openai/):
        its default request (base64, decoded by the SDK) and "float"."""
        sdk = openai_sdk()
        if sdk is None:
            self.skipTest("npm/node not found (Debian nodejs, npm)")
        r = subprocess.run(
            ["node", os.path.join(sdk, "embed.mjs"),
             "http://127.0.0.1:%d/v1" % self.srv.port, "sk-unused",
             json.dumps({"model": "any", "input": ref.TEXTS})],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        for form in ("default", "float"):
            rows = [d["embedding"] for d in
                    sorted(out[form]["data"], key=lambda d: d["index"])]
            self.assertVectors(rows, self.refs(), "OpenAI SDK " + form)
        self.assertEqual(out["empty"]["status"], 400)

    # -- POST /embed, "pooling": "mean" ---------------------------------------
    def test_embed_mean_in_every_format(self):
        refs = self.refs()
        req = {"inputs": ref.TEXTS, "pooling": "mean"}
        j = json.loads(self.post("/embed", dict(req,
                                                encoding_format="float"))[1])
        self.assertEqual(j["shape"], [len(ref.TEXTS), self.model.dim])
        self.assertVectors(j["embeddings"], refs, "/embed json float")
        self.assertEqual(j["input_ids"], [ids for _, ids in refs])
        bits = np.array(j["embeddings"], dtype=np.float32).tobytes()
        b64 = json.loads(self.post("/embed", dict(
            req, encoding_format="base64"))[1])
        got = np.frombuffer(base64.b64decode(b64["embeddings"]), "<f4")
        self.assertEqual(got.tobytes(), bits, "/embed base64")
        tj = json.loads(self.post("/embed", dict(
            req, encoding_format="torch"))[1])
        rows = torch_rows(tj["embeddings"])
        self.assertEqual(rows.shape, (len(ref.TEXTS), self.model.dim))
        self.assertEqual(rows.tobytes(), bits, "/embed torch")
        _, npy = self.post("/embed", req, "application/x-npy")
        self.assertEqual(np.load(io.BytesIO(npy)).tobytes(), bits, "npy")
        _, npz = self.post("/embed", req, "application/x-npz")
        with np.load(io.BytesIO(npz)) as z:
            self.assertEqual(z["embeddings"].tobytes(), bits, "npz")
        hd, raw = self.post("/embed", req, "application/octet-stream")
        self.assertEqual(hd["X-Tokvec-Shape"],
                         "%d,%d" % (len(ref.TEXTS), self.model.dim))
        self.assertEqual(raw, bits, "raw")

    def test_embed_normalize_and_dimensions(self):
        k = max(1, self.model.dim // 4)
        for normalize in (False, True):
            for dims in (None, k):
                req = {"inputs": ref.TEXTS, "pooling": "mean",
                       "normalize": normalize}
                if dims:
                    req["dimensions"] = dims
                _, npy = self.post("/embed", req, "application/x-npy")
                self.assertVectors(np.load(io.BytesIO(npy)),
                                   self.refs(normalize, dims),
                                   "/embed normalize %s dimensions %s"
                                   % (normalize, dims))

    def test_each_text_alone_equals_its_row_of_the_batch(self):
        _, npy = self.post("/embed", {"inputs": ref.TEXTS,
                                      "pooling": "mean"}, "application/x-npy")
        batch = np.load(io.BytesIO(npy))
        for i, text in enumerate(ref.TEXTS):
            j = json.loads(self.post("/embed", {"inputs": text,
                                                "pooling": "mean"})[1])
            self.assertEqual(np.array(j["embeddings"],
                                      dtype=np.float32).tobytes(),
                             batch[i:i + 1].tobytes(), repr(text[:40]))


class Float32(FixtureModel, unittest.TestCase):
    NAME = "float32"


class Float16(FixtureModel, unittest.TestCase):
    NAME = "float16"


class Int8(FixtureModel, unittest.TestCase):
    NAME = "int8"


class SentenceTransformers(FixtureModel, unittest.TestCase):
    NAME = "sentence-transformers"


class VocabQuantized(FixtureModel, unittest.TestCase):
    """Unigram tokenizer, mapping [V] into 128 stored rows, weights F64;
    no unk drop (Model2Vec finds no unk_token on a Unigram model)."""
    NAME = "vocab-quantized"


class Int8SmallM(FixtureModel, unittest.TestCase):
    """--max-sentence-tokens 4: the text cut to 4 x 6 code points, then
    the first 4 ids after the unk drop."""
    NAME = "int8"
    M = ref.SMALL_M
    ARGS = ("--max-sentence-tokens", str(ref.SMALL_M))


class SentenceTransformersSmallM(FixtureModel, unittest.TestCase):
    """The setting does not cut a sentence-transformers model (every id
    counts)."""
    NAME = "sentence-transformers"
    M = ref.SMALL_M
    ARGS = ("--max-sentence-tokens", str(ref.SMALL_M))


class VocabQuantizedSmallM(FixtureModel, unittest.TestCase):
    NAME = "vocab-quantized"
    M = ref.SMALL_M
    ARGS = ("--max-sentence-tokens", str(ref.SMALL_M))


class DeployedSettings(unittest.TestCase):
    """The settings the image and the deploy examples give tokvec, run by
    the local binary on a fixture model copied to where they put it: the
    Dockerfile's ENV with TOKVEC_MODEL (a TOKVEC_TABLE there would stop
    start-up), deploy/compose-model.yaml's environment and
    deploy/k8s-model/configmap.yaml's data (make manifest-check checks
    their mounts offline; make container-test runs the image)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tokvec-deployed-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve_with(self, env, what):
        """env's TOKVEC_* settings, /models/NAME moved under tmp, host and
        port local: the server answers GET /v1/models with NAME."""
        env = {k: v for k, v in env.items() if k.startswith("TOKVEC_")}
        model = env["TOKVEC_MODEL"]
        self.assertTrue(model.startswith("/models/"), (what, model))
        here = os.path.join(self.tmp, what, model.lstrip("/"))
        shutil.copytree(ref.Model("float32").path, here)
        env.update(TOKVEC_MODEL=here, TOKVEC_HOST="127.0.0.1",
                   TOKVEC_PORT=str(tc.free_port()), TOKVEC_TABLE=None,
                   TOKVEC_TOKENIZER=None, TOKVEC_CONFIG=None)
        srv = tc.Server(None, env=env)
        try:
            st, _, body = srv.get("/v1/models")
            self.assertEqual(st, 200, what)
            self.assertEqual(json.loads(body)["data"][0]["id"],
                             os.path.basename(model), what)
            st, _, body = srv.request(
                "POST", "/v1/embeddings", json.dumps({"input": "hello"}),
                {"Content-Type": "application/json"})
            self.assertEqual(st, 200, (what, body))
            return json.loads(srv.get("/info")[2])
        finally:
            srv.stop()

    def test_the_images_env_with_tokvec_model_serves_the_model(self):
        env = {}
        with open(os.path.join(tc.TOP, "Dockerfile")) as f:
            text = f.read().replace("\\\n", " ")
        for line in text.splitlines():
            if line.startswith("ENV "):
                env.update(kv.split("=", 1) for kv in shlex.split(line[4:]))
        self.assertIn("TOKVEC_PORT", env)
        self.assertNotIn("TOKVEC_TABLE", env,
                         "a TOKVEC_TABLE in the image stops --model")
        env["TOKVEC_MODEL"] = "/models/potion-base-8M"
        self.serve_with(env, "image")

    def test_the_compose_and_k8s_model_examples_start_tokvec(self):
        try:
            import yaml
        except ImportError:
            self.fail("python3-yaml missing (make test-deps installs it)")
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "check_manifests", os.path.join(tc.TOP, "deploy",
                                            "check-manifests.py"))
        cm = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cm)
        with open(os.path.join(tc.TOP, "deploy", "compose-model.yaml")) as f:
            compose = cm.interpolate(yaml.safe_load(f))
        env = cm.compose_env(compose["services"]["tokvec"])
        self.serve_with(env, "compose")
        with open(os.path.join(tc.TOP, "deploy", "k8s-model",
                               "configmap.yaml")) as f:
            data = yaml.safe_load(f)["data"]
        info = self.serve_with(data, "k8s")
        self.assertEqual(info["model"]["max_sentence_tokens"],
                         int(data["TOKVEC_MAX_SENTENCE_TOKENS"]))


if __name__ == "__main__":
    tc.main()
