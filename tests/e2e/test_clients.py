"""End-to-end tests of the Python and JavaScript clients (clients/) against a
real `tokvec serve` on a loopback port, with GPT-2's tokenizer (data/gpt2,
`make data`) and a small table made by `tokvec init` (50257 x 24, 64
positions), and a static model (the model2vec-rs float32 fixture,
`--model`) for the sentence vectors.

Every method and option of the clients is checked against the server's own
JSON answer to the same request (decimal floats read as float32, narrowed
by numpy for float16 / bfloat16), bit for bit; the sentence vectors
(embed_sentences / embedSentences) against the float64 reference of
Model2Vec's StaticModel.encode (static_ref.py) within 1e-5.

Run: /usr/bin/python3 tests/e2e/test_clients.py --binary build/tokvec
Python standard library + numpy; the JS tests need `node` (Debian nodejs, 18+)
and are skipped, with a message, when it is missing.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import static_ref as sref
import support as tc

TOP = tc.TOP
CLIENT_DIR = os.path.join(TOP, "clients", "python")
JS_DIR = os.path.join(TOP, "clients", "js")
GPT2 = os.path.join(TOP, "data", "gpt2")
sys.path.insert(0, CLIENT_DIR)
import tokvec  # noqa: E402

VOCAB, DIM, CTX, MAX_TOKENS = 50257, 24, 64, 256
BOOK = ("I HAD always thought Jack Gisburn rather a cheap genius--though a "
        "good fellow enough--so it was no great surprise to me to hear that, "
        "in the height of his glory, he had dropped his painting, married a "
        "rich widow, and established himself in a villa on the Riviera.")
LONG = BOOK * 4  # over the 64 positions, under max_tokens
EOT = "Hello<|endoftext|> world"
# The sentence vectors: a served fixture model and texts of static_ref's
# (English, other scripts, empty after the unk drop, specials, past the
# cut).
SENTENCE_MODEL = "float32"
SENTENCES = [sref.TEXTS[i] for i in (0, 3, 4, 7, 9, 12)]


def run_python(code, *args, python=None):
    """Runs code in a fresh interpreter with warnings as errors (and
    unraisable ones -- a ResourceWarning from a finalizer -- printed), the
    client on its path; returns the CompletedProcess."""
    return subprocess.run(
        [python or sys.executable, "-X", "dev", "-W", "error", "-c",
         "import sys; sys.path.insert(0, %r)\n" % CLIENT_DIR + code]
        + list(args), capture_output=True, text=True, timeout=60)


def narrowed(x, dtype):
    """float32 x as the server narrows it (round to nearest even), in the
    dtype the Python client returns (bfloat16 widened to float32)."""
    if dtype == "float16":
        return x.astype(np.float16)
    if dtype == "bfloat16":
        return (tc.bf16_rne(x).astype(np.uint32) << 16).view(np.float32)
    return x


class ClientTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.table = tc.temp_table(
            "tokvec-clients-", VOCAB, DIM, "--context", str(CTX),
            "--seed", "7")
        cls.server = tc.Server(cls.table, "--tokenizer", GPT2,
                               "--max-tokens", str(MAX_TOKENS))
        cls.key_server = tc.Server(cls.table, "--api-key", "s3cret")
        cls.model = sref.Model(SENTENCE_MODEL)
        cls.model_server = tc.Server(None, "--model", cls.model.path,
                                     "--api-key", "m0del")
        # what the JS tests compare with (they have no numpy)
        cls.sentence_refs = os.path.join(cls.tmp, "sentences.json")
        with open(cls.sentence_refs, "w") as f:
            json.dump({"texts": SENTENCES, "dim": cls.model.dim,
                       "name": cls.model.dirname,
                       "vectors": cls.sentence_refs_of(),
                       "raw": cls.sentence_refs_of(normalize=False),
                       "first1": cls.sentence_refs_of(k=1)}, f)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.key_server.stop()
        cls.model_server.stop()
        shutil.rmtree(cls.tmp)

    @classmethod
    def sentence_refs_of(cls, normalize=None, k=None):
        return [sref.reference(cls.model, t, normalize=normalize,
                              k=k)[0].tolist() for t in SENTENCES]

    def model_client(self):
        c = tokvec.Client(self.model_server.url, api_key="m0del")
        self.addCleanup(c.close)
        return c

    def setUp(self):
        self.c = tokvec.Client(self.server.url)
        self.addCleanup(self.c.close)

    # -- the references: the server's own JSON answers ---------------------
    def post(self, path, obj):
        st, _, body = self.server.request(
            "POST", path, json.dumps(obj),
            {"Content-Type": "application/json"})
        self.assertEqual(st, 200, body)
        return json.loads(body)

    def json_reply(self, obj):
        """/embed's decimal JSON answer, embeddings as float32."""
        r = self.post("/embed", obj)
        r["embeddings"] = np.array(r["embeddings"], dtype=np.float32)
        return r

    def json_route(self, obj):
        return self.json_reply(obj)["embeddings"]

    # -- ids in (the API of 0.1, unchanged) ---------------------------------
    def test_python_embed_numpy_equals_json_route_bit_for_bit(self):
        ids = [[1, 2, 3, VOCAB - 1], [0, 0, 7, 8]]
        with tokvec.Client(self.server.url) as c:
            x = c.embed(ids, start_position=5)
        self.assertEqual(x.shape, (2, 4, DIM))
        self.assertEqual(x.dtype, np.float32)
        y = self.json_route({"inputs": ids, "start_position": 5})
        self.assertEqual(x.tobytes(), y.tobytes())

    def test_python_start_position_and_positions_false(self):
        c = self.c
        x = c.embed([[5, 6]], start_position=3)
        t = c.embed([[5, 6]], positions=False)
        lists = c._embed_json([[5, 6]], 3, True)
        y = self.json_route({"inputs": [[0, 0, 0, 5, 6]]})
        self.assertEqual(x.tobytes(), y[:, 3:].tobytes())
        self.assertEqual(np.array(lists, dtype=np.float32).tobytes(),
                         x.tobytes())
        z = self.json_route({"inputs": [[5, 6]], "positions": False})
        self.assertEqual(t.tobytes(), z.tobytes())

    def test_python_ids_calls_of_the_old_api_still_work(self):
        """Positional options and the old keyword ids= (0.1's names)."""
        want = self.json_route({"inputs": [[7, 8, 9], [4, 0, 0]],
                                "start_position": 2, "positions": False})
        x = self.c.embed([[7, 8, 9], [4]], 2, False, "float16", 0)
        self.assertEqual(x.tobytes(), want.astype(np.float16).tobytes())
        y = self.c.embed(ids=np.array([[7, 8, 9], [4, 0, 0]]),
                         start_position=2, positions=False)
        self.assertEqual(y.tobytes(), want.tobytes())
        # numpy integers inside lists are ids like any other
        z = self.c.embed([np.int64(7), np.int32(8)], pad_id=np.int64(0))
        self.assertEqual(z.tobytes(), self.json_route(
            {"inputs": [[7, 8]]}).tobytes())

    def test_python_pad_id_pads_a_ragged_batch(self):
        want = self.json_route({"inputs": [[7, 8, 9], [4, 0, 0]],
                                "start_position": 2})
        c = self.c
        x = c.embed([[7, 8, 9], [4]], pad_id=0, start_position=2)
        self.assertEqual(x.tobytes(), want.tobytes())
        # pad_id on a rectangular batch changes nothing.
        r = c.embed([[7, 8, 9], [4, 0, 0]], pad_id=0, start_position=2)
        self.assertEqual(r.tobytes(), want.tobytes())
        x16 = c.embed([[7, 8, 9], [4]], pad_id=0, start_position=2,
                      dtype="float16")
        self.assertEqual(x16.tobytes(), want.astype(np.float16).tobytes())
        with self.assertRaises(tokvec.TokvecError) as cm:
            c.embed([[7, 8, 9], [4]])
        self.assertEqual(cm.exception.status, 422)
        self.assertEqual(cm.exception.error_type, "ragged_batch")
        with self.assertRaises(tokvec.TokvecError) as cm:
            c.embed([[7, 8, 9], [4]], pad_id=VOCAB)
        self.assertEqual(cm.exception.error_type, "token_out_of_range")

    def test_python_client_closes_its_socket_when_collected(self):
        code = ("import gc, tokvec\n"
                "c = tokvec.Client(sys.argv[1]); c.embed([[1, 2]]); "
                "c.info(); c.embed('Hi'); c.tokenize('Hi')\n"
                "del c; gc.collect()\n"
                "with tokvec.Client(sys.argv[1]) as c:\n"
                "    c.embed([[1, 2]], pad_id=0)\n"
                "c.embed([3]); c.close(); c.close()\n"
                "print('ok')\n")
        r = run_python(code, self.server.url)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "ok\n", ""))

    def test_python_embed_float16_and_bfloat16(self):
        c = self.c
        x32 = c.embed([[4, 5, 6]])
        x16 = c.embed([[4, 5, 6]], dtype="float16")
        self.assertEqual(x16.dtype, np.float16)
        self.assertEqual(x16.tobytes(), x32.astype(np.float16).tobytes())
        xb = c.embed([[4, 5, 6]], dtype="bfloat16")
        self.assertEqual(xb.dtype, np.float32)
        # bf16 keeps the top 16 bits after round-to-nearest-even.
        bits = x32.view(np.uint32).astype(np.uint64)
        rne = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32)
        self.assertEqual(xb.view(np.uint32).tobytes(),
                         (rne << 16).astype(np.uint32).tobytes())

    def test_python_errors_carry_status_error_type_and_message(self):
        c = self.c
        with self.assertRaises(tokvec.TokvecError) as cm:
            c.embed([[1, VOCAB]])
        e = cm.exception
        self.assertEqual((e.status, e.error_type), (422, "token_out_of_range"))
        self.assertIn(str(VOCAB), e.message)
        self.assertIn("token_out_of_range (422)", str(e))
        for call, status, etype in [
                (lambda: c.embed("Hi", max_length=8), 422, "text_too_short"),
                (lambda: c.embed(LONG), 422, "sequence_too_long"),
                (lambda: c.similar(3, k=1001), 422, "k_out_of_range"),
                (lambda: c.decode([VOCAB]), 422, "token_out_of_range"),
                (lambda: c.tokenize(BOOK * 10), 413, "payload_too_large"),
                (lambda: c.embed(""), 400, "invalid_request")]:
            with self.assertRaises(tokvec.TokvecError) as cm:
                call()
            self.assertEqual((cm.exception.status, cm.exception.error_type),
                             (status, etype), cm.exception.message)
            self.assertTrue(cm.exception.message)
        with self.assertRaises(tokvec.TokvecError) as cm:
            tokvec.Client("http://127.0.0.1:%d" % tc.free_port()).info()
        self.assertEqual((cm.exception.status, cm.exception.error_type),
                         (0, "connection_error"))

    def test_python_info_and_token(self):
        c = self.c
        info = c.info()
        self.assertEqual((info["vocab_size"], info["dim"]), (VOCAB, DIM))
        self.assertEqual(info["tokenizer"]["name"], "gpt2")
        self.assertEqual(c.health(), {"status": "ok"})
        row = np.array(c.token(3), dtype=np.float32)
        x = c.embed([3], positions=False)
        self.assertEqual(row.tobytes(), x[0, 0].tobytes())

    def test_python_api_key(self):
        with self.assertRaises(tokvec.TokvecError) as cm:
            tokvec.Client(self.key_server.url).embed([1])
        self.assertEqual(cm.exception.status, 401)
        x = tokvec.Client(self.key_server.url, api_key="s3cret").embed([1])
        self.assertEqual(x.shape, (1, 1, DIM))

    # -- text in -------------------------------------------------------------
    def test_python_text_in_gives_embeddings_and_the_servers_ids(self):
        e, ids = self.c.embed(BOOK[:60])
        want = self.json_reply({"inputs": BOOK[:60]})
        self.assertEqual(e.tobytes(), want["embeddings"].tobytes())
        self.assertEqual(ids.tolist(), want["input_ids"])
        self.assertEqual(ids.dtype, np.int64)
        # the same bits as the ids from tokenize()
        toks = [t["id"] for t in self.c.tokenize(BOOK[:60])]
        self.assertEqual([toks], ids.tolist())
        self.assertEqual(self.c.embed([toks]).tobytes(), e.tobytes())
        r = self.c.embed(BOOK[:60])
        self.assertIsInstance(r, tokvec.Embedded)
        self.assertEqual(r.embeddings.dtype, np.float32)

    def test_python_texts_and_ids_mixed_in_one_batch(self):
        inputs = ["Hello world", [40, 1101, 257, 11], "A", (5,)]
        e, ids = self.c.embed(inputs, pad_id=0, start_position=1)
        want = self.json_reply({"inputs": [list(x) if isinstance(x, tuple)
                                           else x for x in inputs],
                                "pad_id": 0, "start_position": 1})
        self.assertEqual(e.shape, (4, 4, DIM))
        self.assertEqual(e.tobytes(), want["embeddings"].tobytes())
        self.assertEqual(ids.tolist(), want["input_ids"])
        with self.assertRaises(tokvec.TokvecError) as cm:
            self.c.embed(inputs)
        self.assertEqual(cm.exception.error_type, "ragged_batch")

    def test_python_text_options_match_the_servers_answers(self):
        """truncate, truncation_direction, special_tokens, start_position,
        positions, pad_id on text: each as the server answers the same
        body."""
        cases = [
            ({"inputs": LONG, "truncate": True}, None),
            ({"inputs": LONG, "truncate": True,
              "truncation_direction": "left"}, None),
            ({"inputs": LONG, "truncate": True,
              "truncation_direction": "right", "start_position": 60}, None),
            ({"inputs": EOT, "special_tokens": False}, None),
            ({"inputs": EOT, "special_tokens": True}, [50256]),
            ({"inputs": ["a b c", "d"], "pad_id": 9,
              "positions": False}, None),
        ]
        for body, must_hold in cases:
            with self.subTest(body=body):
                kw = {k: v for k, v in body.items() if k != "inputs"}
                e, ids = self.c.embed(body["inputs"], **kw)
                want = self.json_reply(body)
                self.assertEqual(e.tobytes(), want["embeddings"].tobytes())
                self.assertEqual(ids.tolist(), want["input_ids"])
                if must_hold:
                    self.assertIn(must_hold[0], ids[0].tolist())
        left = self.c.embed(LONG, truncate=True,
                            truncation_direction="left").input_ids[0]
        right = self.c.embed(LONG, truncate=True).input_ids[0]
        self.assertEqual(len(left), CTX)
        self.assertNotEqual(left.tolist(), right.tolist())
        plain = self.c.embed(EOT, special_tokens=False).input_ids
        self.assertNotIn(50256, plain[0].tolist())

    def test_python_windows_give_embeddings_input_and_target_ids(self):
        w = self.c.embed(BOOK, max_length=4, stride=2, start_position=3)
        self.assertIsInstance(w, tokvec.Windows)
        want = self.json_reply({"inputs": BOOK, "max_length": 4, "stride": 2,
                                "start_position": 3})
        self.assertEqual(w.embeddings.tobytes(), want["embeddings"].tobytes())
        self.assertEqual(w.input_ids.tolist(), want["input_ids"])
        self.assertEqual(w.target_ids.tolist(), want["target_ids"])
        self.assertEqual(w.input_ids[:, 1:].tolist(),
                         w.target_ids[:, :-1].tolist())
        e, inp, tgt = self.c.embed(BOOK, max_length=4)  # stride = max_length
        t = self.c.tokenize(BOOK, max_length=4)
        self.assertIsInstance(t, tokvec.TokenWindows)
        self.assertEqual((inp.tolist(), tgt.tolist()),
                         (t.input_ids, t.target_ids))
        self.assertEqual(e.shape, (len(t.input_ids), 4, DIM))
        # the same bits as the windows' ids sent as ids
        self.assertEqual(self.c.embed(inp).tobytes(), e.tobytes())

    def test_python_every_answer_format_gives_the_same_bits(self):
        """accept npy/raw/json x encoding_format float/base64/torch x dtype,
        for ids (binary and JSON requests) and text: all equal the JSON
        answer's float32, narrowed as the server narrows."""
        ids = [[1, 2, 3], [VOCAB - 1, 0, 7]]
        text = "Hello, world"
        ref_ids = self.json_route({"inputs": ids, "start_position": 2})
        ref_text = self.json_reply({"inputs": text, "start_position": 2})
        combos = [("npy", None), ("raw", None), ("json", "float"),
                  ("json", "base64"), ("json", "torch"), (None, None),
                  (None, "torch")]
        for inputs, ref in [(ids, ref_ids), (text, ref_text["embeddings"])]:
            for dtype in ("float32", "float16", "bfloat16"):
                for accept, fmt in combos:
                    if dtype != "float32" and fmt in ("float", "base64"):
                        continue
                    with self.subTest(inputs=inputs, dtype=dtype,
                                      accept=accept, fmt=fmt):
                        kw = {"accept": accept} if accept else {}
                        if fmt:
                            kw["encoding_format"] = fmt
                        r = self.c.embed(inputs, start_position=2,
                                         dtype=dtype, **kw)
                        x = r if inputs is ids else r.embeddings
                        want = narrowed(ref, dtype)
                        self.assertEqual(x.dtype, want.dtype)
                        self.assertEqual(x.shape, want.shape)
                        self.assertEqual(x.tobytes(), want.tobytes())
                        if inputs is text:
                            binary = accept in ("npy", "raw")
                            self.assertEqual(
                                r.input_ids is None, binary)
                            if not binary:
                                self.assertEqual(r.input_ids.tolist(),
                                                 ref_text["input_ids"])
        # a JSON answer in float16 needs torch; encoding_format on a
        # binary answer means nothing
        with self.assertRaises(ValueError):
            self.c.embed(ids, dtype="float16", encoding_format="base64")
        with self.assertRaises(ValueError):
            self.c.embed(ids, accept="npy", encoding_format="float")

    def test_python_tokenize_options_match_the_servers_answers(self):
        c = self.c
        self.assertEqual(c.tokenize("Hello, world"),
                         self.post("/tokenize", {"inputs": "Hello, world"})[0])
        texts = ["Hello", "", "caf\u00e9 \U0001F600"]
        self.assertEqual(c.tokenize(texts),
                         self.post("/tokenize", {"inputs": texts}))
        self.assertEqual(c.tokenize(tuple(texts)), c.tokenize(texts))
        for kw in [{"special_tokens": False}, {"special_tokens": True}]:
            got = c.tokenize(EOT, **kw)
            self.assertEqual(got, self.post(
                "/tokenize", dict(inputs=EOT, **kw))[0])
            self.assertEqual(any(t["special"] for t in got),
                             kw["special_tokens"])
        long = BOOK * 10  # over max_tokens
        for direction in (None, "right", "left"):
            kw = {"truncate": True}
            if direction:
                kw["truncation_direction"] = direction
            got = c.tokenize(long, **kw)
            self.assertEqual(len(got), MAX_TOKENS)
            self.assertEqual(got, self.post(
                "/tokenize", dict(inputs=long, **kw))[0])
        self.assertEqual(c.tokenize(long, truncate=True,
                                    truncation_direction="left")[-1]["stop"],
                         len(long.encode()))
        w = c.tokenize(BOOK, max_length=5, stride=3)
        want = self.post("/tokenize", {"inputs": BOOK, "max_length": 5,
                                       "stride": 3})
        self.assertEqual(w, (want["input_ids"], want["target_ids"]))

    def test_python_decode_one_sequence_or_many(self):
        c = self.c
        ids = [t["id"] for t in c.tokenize("Hello, caf\u00e9")]
        self.assertEqual(c.decode(ids), "Hello, caf\u00e9")
        self.assertEqual(c.decode([[40, 172], ids]),
                         self.post("/decode", {"ids": [[40, 172], ids]}))
        self.assertEqual(c.decode([40, 172]), "I\ufffd")
        self.assertEqual(c.decode([]), "")
        self.assertEqual(c.decode(np.array(ids)), "Hello, caf\u00e9")
        self.assertEqual(c.decode(np.array([[40], [172]])), ["I", "\ufffd"])
        _, tids = c.embed(["Hello world", "x"], pad_id=50256)
        self.assertEqual(c.decode(tids),
                         ["Hello world", "x<|endoftext|>"])

    def test_python_similar_by_id_and_by_vector(self):
        c = self.c
        want = self.post("/similar", {"id": 3, "k": 5})
        self.assertEqual(c.similar(3, k=5), want)
        self.assertEqual(c.similar(id=3, k=5), want)
        self.assertEqual(c.similar(np.int64(3), 5), want)
        self.assertEqual(len(c.similar(3)), 10)  # the server's default k
        row = np.array(c.token(3), dtype=np.float32)
        vec = self.post("/similar", {"vector": row.tolist(), "k": 4})
        self.assertEqual(c.similar(row, k=4), vec)
        self.assertEqual(c.similar(vector=row.tolist(), k=4), vec)
        self.assertEqual(c.similar(list(row), k=4)[0]["id"], 3)
        self.assertTrue(all(isinstance(n["text"], str) for n in vec))
        with self.assertRaises(TypeError):
            c.similar()
        with self.assertRaises(TypeError):
            c.similar(3, vector=row)
        with self.assertRaises(tokvec.TokvecError) as cm:
            c.similar(row[:5])
        self.assertEqual(cm.exception.error_type, "dimension_mismatch")

    def test_python_unknown_keywords_are_refused_with_the_valid_ones(self):
        c = self.c
        cases = [
            (lambda: c.embed([1], start_positon=1), "start_positon",
             "start_position"),
            (lambda: c.embed("Hi", startPosition=1), "startPosition",
             "start_position"),
            (lambda: c.embed("Hi", max_len=4), "max_len", "max_length"),
            (lambda: c.embed("Hi", encoding="float"), "encoding",
             "encoding_format"),
            (lambda: c.tokenize("Hi", specialTokens=False), "specialTokens",
             "special_tokens"),
            (lambda: c.similar(3, kk=2), "kk", "k"),
            (lambda: c.embed([1], colour="red"), "colour", None),
        ]
        for call, name, hint in cases:
            with self.subTest(name=name):
                with self.assertRaises(TypeError) as cm:
                    call()
                msg = str(cm.exception)
                self.assertIn(repr(name), msg)
                self.assertIn("valid:", msg)
                if hint:
                    self.assertIn("did you mean %r?" % hint, msg)
                else:
                    self.assertNotIn("did you mean", msg)
        msg = str(self.assertRaisesMsg(lambda: c.embed([1], padid=0)))
        for opt in ("start_position", "positions", "pad_id", "dtype",
                    "encoding_format", "truncate", "truncation_direction",
                    "special_tokens", "max_length", "stride", "accept"):
            self.assertIn(opt, msg)
        # values outside a choice are ValueErrors naming the choices
        for call in (lambda: c.embed([1], dtype="float64"),
                     lambda: c.embed([1], accept="xml"),
                     lambda: c.embed("Hi", encoding_format="hex"),
                     lambda: c.tokenize("Hi", truncation_direction="up")):
            with self.assertRaises(ValueError):
                call()

    def assertRaisesMsg(self, call):
        with self.assertRaises(TypeError) as cm:
            call()
        return cm.exception

    def test_python_without_numpy_returns_lists(self):
        code = (
            "import sys; sys.modules['numpy'] = None\n"
            "sys.path.insert(0, %r)\n"
            "import tokvec, json\n"
            "c = tokvec.Client(%r)\n"
            "v = c.embed([[1, 2]])\n"
            "assert isinstance(v, list) and len(v[0][0]) == 24, v\n"
            "e, ids = c.embed('Hello world')\n"
            "h = c.embed([[1, 2]], dtype='float16', encoding_format='torch')\n"
            "r = c.embed([[1, 2]], accept='raw')\n"
            "print(json.dumps([v, e, ids, h, r, c.decode(ids[0])]))\n"
            % (CLIENT_DIR, self.server.url))
        out = subprocess.run([sys.executable, "-c", code], check=True,
                             capture_output=True, text=True).stdout
        v, e, ids, h, r, text = json.loads(out)
        x = self.c.embed([[1, 2]])
        self.assertEqual(np.array(v, dtype=np.float32).tobytes(),
                         x.tobytes())
        self.assertEqual(np.array(r, dtype=np.float32).tobytes(),
                         x.tobytes())
        self.assertEqual(np.array(h, dtype=np.float16).tobytes(),
                         x.astype(np.float16).tobytes())
        want = self.json_reply({"inputs": "Hello world"})
        self.assertEqual(np.array(e, dtype=np.float32).tobytes(),
                         want["embeddings"].tobytes())
        self.assertEqual((ids, text), (want["input_ids"], "Hello world"))

    def test_python_client_installs_with_pip_into_a_venv_offline(self):
        """The README's `pip install ./clients/python`, as documented for a
        machine without network: a venv with the system's packages,
        --no-build-isolation --no-index."""
        def has(module):
            return subprocess.run(["/usr/bin/python3", "-c",
                                   "import " + module],
                                  capture_output=True).returncode == 0
        # Debian's pip (python3-pip), seen through --system-site-packages,
        # installs into the venv as the venv's own would: no pip is copied
        # into it then (ensurepip takes ~10 s).
        system_pip = has("pip")
        if not system_pip and not has("ensurepip"):
            self.skipTest("no python3-venv (apt-get install python3-venv)")
        with tempfile.TemporaryDirectory(prefix="tokvec-venv-") as d:
            # a copy: setuptools builds in the source folder (build/,
            # *.egg-info), and the checkout is not the test's to change
            src = os.path.join(d, "python")
            shutil.copytree(CLIENT_DIR, src, ignore=shutil.ignore_patterns(
                "__pycache__", "build", "*.egg-info"))
            venv = os.path.join(d, "venv")
            subprocess.run(["/usr/bin/python3", "-m", "venv",
                            "--system-site-packages", venv]
                           + (["--without-pip"] if system_pip else []),
                           check=True, capture_output=True, timeout=120)
            py = os.path.join(venv, "bin", "python")
            r = subprocess.run(
                [py, "-m", "pip", "install", "--no-index",
                 "--no-build-isolation", "--no-cache-dir", src],
                capture_output=True, text=True, timeout=300, cwd=d,
                env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            code = ("import sys, tokvec; c = tokvec.Client(sys.argv[1])\n"
                    "assert tokvec.__file__.startswith(sys.prefix), "
                    "tokvec.__file__\n"
                    "e, ids = c.embed('Hello world'); c.close()\n"
                    "print(e.shape, ids.tolist())\n")
            r = subprocess.run([py, "-c", code, self.server.url], cwd=d,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual((r.returncode, r.stdout.strip()),
                             (0, "(1, 2, 24) [[15496, 995]]"), r.stderr)

    # -- sentence vectors (a served static model) -----------------------------
    def test_python_embed_sentences_are_static_model_encode(self):
        c = self.model_client()
        v = c.embed_sentences(SENTENCES)
        self.assertEqual((v.shape, v.dtype),
                         ((len(SENTENCES), self.model.dim), np.float32))
        np.testing.assert_allclose(v, self.sentence_refs_of(), atol=1e-5,
                                   rtol=0)
        one = c.embed_sentences(SENTENCES[1])
        self.assertEqual(one.tobytes(), v[1:2].tobytes())
        self.assertEqual(c.embed_sentences(tuple(SENTENCES),
                                           model="potion-whatever"
                                           ).tobytes(), v.tobytes())

    def test_python_embed_sentences_normalize_and_dimensions(self):
        c = self.model_client()
        for normalize in (None, True, False):
            for k in (None, 1):
                v = c.embed_sentences(SENTENCES, normalize=normalize,
                                      dimensions=k)
                self.assertEqual(v.shape,
                                 (len(SENTENCES), k or self.model.dim))
                np.testing.assert_allclose(
                    v, self.sentence_refs_of(normalize, k), atol=1e-5,
                    rtol=0, err_msg="normalize %s k %s" % (normalize, k))
        # the model normalizes: /embed's pooled vectors (normalize=True)
        # are /v1/embeddings' bit for bit
        self.assertEqual(c.embed_sentences(SENTENCES).tobytes(),
                         c.embed_sentences(SENTENCES,
                                           normalize=True).tobytes())

    def test_python_embed_sentences_refuses_unknown_options_and_errors(self):
        c = self.model_client()
        for kw, hint in (({"normalise": True}, "normalize"),
                         ({"dimension": 1}, "dimensions"),
                         ({"modle": "x"}, "model"),
                         ({"pooling": "mean"}, None)):
            with self.assertRaises(TypeError) as cm:
                c.embed_sentences(["a"], **kw)
            msg = str(cm.exception)
            self.assertIn(repr(next(iter(kw))), msg)
            self.assertIn("valid: dimensions, model, normalize, texts", msg)
            if hint:
                self.assertIn("did you mean %r?" % hint, msg)
        for bad in (lambda: c.embed_sentences(3),
                    lambda: c.embed_sentences(["a"], normalize="yes"),
                    lambda: c.embed_sentences(["a"], model=1)):
            with self.assertRaises(TypeError):
                bad()
        # the server's errors, /v1/'s OpenAI shape read as TokvecError
        for call, status, etype in [
                (lambda: c.embed_sentences(""), 400, "invalid_request"),
                (lambda: c.embed_sentences([]), 400, "invalid_request"),
                (lambda: c.embed_sentences(["a"], dimensions=3), 400,
                 "invalid_request"),
                (lambda: c.embed_sentences(["a"], normalize=False,
                                           dimensions=3), 400,
                 "invalid_request"),
                (lambda: c.embed_sentences([[0, 29528]]), 422,
                 "token_out_of_range"),
                (lambda: tokvec.Client(self.model_server.url)
                 .embed_sentences(["a"]), 401, "unauthorized")]:
            with self.assertRaises(tokvec.TokvecError) as cm:
                call()
            e = cm.exception
            self.assertEqual((e.status, e.error_type), (status, etype),
                             e.message)
            self.assertTrue(e.message)

    def test_python_embed_sentences_without_numpy_returns_lists(self):
        code = (
            "import sys; sys.modules['numpy'] = None\n"
            "sys.path.insert(0, %r)\n"
            "import tokvec, json\n"
            "c = tokvec.Client(%r, api_key='m0del')\n"
            "print(json.dumps([c.embed_sentences(%r),\n"
            "                  c.embed_sentences(%r, normalize=False)]))\n"
            % (CLIENT_DIR, self.model_server.url, SENTENCES, SENTENCES))
        out = subprocess.run([sys.executable, "-c", code], check=True,
                             capture_output=True, text=True).stdout
        v, raw = json.loads(out)
        c = self.model_client()
        self.assertEqual(np.array(v, dtype=np.float32).tobytes(),
                         c.embed_sentences(SENTENCES).tobytes())
        self.assertEqual(np.array(raw, dtype=np.float32).tobytes(),
                         c.embed_sentences(SENTENCES,
                                           normalize=False).tobytes())

    def test_python_embed_sentences_of_a_plain_table_is_the_row_mean(self):
        ids = [[3, 9, 27], [5]]
        v = self.c.embed_sentences(ids)
        rows = self.c.embed(ids[:1])[0].astype(np.float64)
        np.testing.assert_allclose(v[0], rows.mean(axis=0), atol=1e-5)
        self.assertEqual(v.shape, (2, DIM))

    # -- JavaScript ------------------------------------------------------------
    def node(self):
        node = shutil.which("node") or shutil.which("nodejs")
        if not node:
            self.skipTest("node not installed (apt-get install nodejs)")
        return node

    def test_js_client(self):
        node = self.node()
        env = dict(os.environ, TOKVEC_URL=self.server.url,
                   TOKVEC_KEY_URL=self.key_server.url,
                   TOKVEC_DEAD_URL="http://127.0.0.1:%d" % tc.free_port(),
                   TOKVEC_VOCAB=str(VOCAB), TOKVEC_CTX=str(CTX),
                   TOKVEC_MAX_TOKENS=str(MAX_TOKENS),
                   TOKVEC_MODEL_URL=self.model_server.url,
                   TOKVEC_MODEL_KEY="m0del",
                   TOKVEC_SENTENCE_REFS=self.sentence_refs)
        r = subprocess.run(
            [node, "--test", "--test-reporter=tap",
             os.path.join(JS_DIR, "test")],
            env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Every test ran (none skipped for want of a server).
        self.assertIn("# skipped 0", r.stdout, r.stdout)

    def test_js_client_installs_with_npm(self):
        """The README's `npm install ./clients/js` (offline: a local
        folder needs no registry), then `import { Client } from "tokvec"`."""
        node = self.node()
        npm = shutil.which("npm")
        if not npm:
            self.skipTest("npm not installed")
        with tempfile.TemporaryDirectory(prefix="tokvec-npm-") as d:
            r = subprocess.run(
                [npm, "install", "--offline", "--no-audit", "--no-fund",
                 JS_DIR], cwd=d, capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            code = ('import { Client } from "tokvec";\n'
                    "const c = new Client(process.argv[2]);\n"
                    'const r = await c.embed("Hello world");\n'
                    "console.log(JSON.stringify([r.shape, r.inputIds]));\n")
            with open(os.path.join(d, "t.mjs"), "w") as f:
                f.write(code)
            r = subprocess.run([node, "t.mjs", self.server.url], cwd=d,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual((r.returncode, r.stdout.strip()),
                             (0, "[[1,2,24],[[15496,995]]]"), r.stderr)


if __name__ == "__main__":
    tc.main()
