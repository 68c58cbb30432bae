"""PyTorch reads what server/routes/torchsave.c writes: the "encoding_format":
"torch" body ({"shape", "dtype", "embeddings": [base64 per sequence]}) for
known float32 inputs, in float32, float16 and bfloat16, made by
build/tools/torchsave (the same encoder and the same narrowing the server
uses), each string loaded with torch.load(io.BytesIO(b64decode(s)),
weights_only=True) as vLLM's prompt_embeds does.

Checked bit for bit: float32 values come back as sent; float16 and bfloat16
are what torch's own .to(dtype) gives (round to nearest even, overflow to
inf, NaN stays NaN) and what numpy / an independent bf16 rounding give; the
tensors are (S, D), contiguous, stride (D, 1), no grad; torch.save of the
loaded tensor pickles exactly the same data.pkl and data/0.

Served: the live /embed with "encoding_format": "torch", every dtype, with
and without positions, against torch.nn.Embedding's own answer.

Run: /usr/bin/python3 tests/e2e/test_torchsave.py --binary build/tokvec
(the tool is build/tools/torchsave beside the binary's build directory, or
$TOKVEC_TORCHSAVE). Needs numpy and torch (Debian python3-torch; skipped
with a message without it).
"""
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support as tc  # noqa: E402  (the e2e support module)

try:
    import torch
except ImportError:
    torch = None
NEED = ("torch not importable: install the Debian package python3-torch "
        "(make test-deps does)")


def tool():
    if os.environ.get("TOKVEC_TORCHSAVE"):
        return os.environ["TOKVEC_TORCHSAVE"]
    binary = os.environ.get("TOKVEC_REAL_BINARY", tc.BINARY)
    return os.path.join(os.path.dirname(binary), "tools", "torchsave")


def inputs(B, S, D, seed):
    """float32 values: normal ones, then the cases narrowing gets wrong
    first: signed zeros, subnormals of both targets, ties, overflow."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(B * S * D).astype(np.float32)
    special = np.array(
        [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 65504.0, 65520.0,
         -65536.0, 6e-8, 3e-8, 1e-40, -1e-45, 3.4028235e38, 1.1754944e-38],
        dtype=np.float32)
    ties = np.array([0x3F808000, 0x3F818000, 0x3F801000, 0x3F803000,
                     0xC0008000, 0x7F7F8000], dtype=np.uint32).view(np.float32)
    extra = np.concatenate([special, ties])
    k = min(x.size, extra.size)
    x[:k] = extra[:k]
    return x.reshape(B, S, D)


def encode(x, dtype):
    B, S, D = x.shape
    r = subprocess.run([tool(), str(B), str(S), str(D), dtype],
                       input=x.astype("<f4").tobytes(), capture_output=True,
                       timeout=60)
    if r.returncode != 0:
        raise AssertionError("torchsave failed: " + r.stderr.decode())
    return json.loads(r.stdout)


def bits16(t):
    return t.view(torch.int16).numpy().view(np.uint16)


@unittest.skipIf(torch is None, NEED)
class TorchLoad(unittest.TestCase):
    SHAPES = [(1, 1, 1), (2, 3, 5), (3, 7, 64), (1, 40, 768)]
    DT = {"float32": "torch.float32", "float16": "torch.float16",
          "bfloat16": "torch.bfloat16"}

    def load_all(self, x, dtype):
        j = encode(x, dtype)
        self.assertEqual(set(j), {"shape", "dtype", "embeddings"})
        self.assertEqual(j["shape"], list(x.shape))
        self.assertEqual(j["dtype"], dtype)
        self.assertEqual(len(j["embeddings"]), x.shape[0])
        out = []
        for s in j["embeddings"]:
            raw = base64.b64decode(s, validate=True)
            t = torch.load(io.BytesIO(raw), weights_only=True)
            self.assertIsInstance(t, torch.Tensor)
            self.assertEqual(str(t.dtype), self.DT[dtype])
            self.assertEqual(tuple(t.shape), x.shape[1:])
            self.assertEqual(t.stride(), (x.shape[2], 1))
            self.assertTrue(t.is_contiguous())
            self.assertFalse(t.requires_grad)
            out.append((raw, t))
        return out

    def test_float32_comes_back_bit_for_bit(self):
        for i, shape in enumerate(self.SHAPES):
            x = inputs(*shape, seed=i)
            for b, (_, t) in enumerate(self.load_all(x, "float32")):
                self.assertEqual(t.numpy().tobytes(), x[b].tobytes(), shape)

    def check_half(self, dtype, torch_dtype, independent):
        for i, shape in enumerate(self.SHAPES):
            x = inputs(*shape, seed=10 + i)
            for b, (_, t) in enumerate(self.load_all(x, dtype)):
                got = bits16(t)
                want = bits16(torch.from_numpy(x[b].copy()).to(torch_dtype))
                nan = np.isnan(x[b])
                # NaN stays NaN (payloads may differ); every other value is
                # torch's own rounding, bit for bit.
                self.assertTrue(np.isnan(t.float().numpy()[nan]).all())
                np.testing.assert_array_equal(got[~nan], want[~nan])
                np.testing.assert_array_equal(got[~nan],
                                              independent(x[b])[~nan])

    def test_float16_is_torchs_rounding(self):
        def numpy_f16(a):
            with np.errstate(over="ignore"):  # 65520 -> inf is the point
                return a.astype(np.float16).view(np.uint16)
        self.check_half("float16", torch.float16, numpy_f16)

    def test_bfloat16_is_torchs_rounding(self):
        self.check_half("bfloat16", torch.bfloat16, tc.bf16_rne)

    def test_torch_save_of_the_loaded_tensor_writes_the_same_records(self):
        x = inputs(2, 5, 16, seed=99)
        for dtype in self.DT:
            for raw, t in self.load_all(x, dtype):
                ours = zipfile.ZipFile(io.BytesIO(raw))
                self.assertIsNone(ours.testzip())  # every CRC-32 right
                buf = io.BytesIO()
                torch.save(t, buf)
                theirs = zipfile.ZipFile(buf)
                for name in ("archive/data.pkl", "archive/data/0",
                             "archive/version"):
                    self.assertEqual(ours.read(name), theirs.read(name),
                                     (dtype, name))
                for info in ours.infolist():
                    self.assertEqual(info.compress_type, zipfile.ZIP_STORED)

    def test_record_data_is_64_byte_aligned(self):
        x = inputs(1, 3, 7, seed=5)
        raw, _ = self.load_all(x, "float16")[0]
        z = zipfile.ZipFile(io.BytesIO(raw))
        for info in z.infolist():
            h = info.header_offset
            nl = int.from_bytes(raw[h + 26:h + 28], "little")
            xl = int.from_bytes(raw[h + 28:h + 30], "little")
            self.assertEqual((h + 30 + nl + xl) % 64, 0, info.filename)


@unittest.skipIf(torch is None, NEED)
class Served(unittest.TestCase):
    """The live /embed with "encoding_format": "torch": every dtype, with
    and without positions, is PyTorch's own tok(ids) + pos(arange(S)) (or
    tok(ids)) converted by .to(dtype), bit for bit; ?dtype= or "dtype"."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tokvec-e2e-torch-")
        p = os.path.join(cls.tmp, "t.safetensors")
        subprocess.run([tc.BINARY, "init", "--vocab", "300", "--dim", "64",
                        "--context", "32", "--seed", "123", "-o", p],
                       check=True, stdout=subprocess.DEVNULL)
        cls.srv = tc.Server(p)
        torch.manual_seed(123)
        cls.tok = torch.nn.Embedding(300, 64)
        cls.pos = torch.nn.Embedding(32, 64)

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        shutil.rmtree(cls.tmp)
        if rc != 0:  # e.g. a leak report of the sanitizer build
            raise AssertionError("server exit %d: %s"
                                 % (rc, cls.srv.stderr()[-3000:]))

    @staticmethod
    def raw(t):
        return (t.numpy() if t.dtype == torch.float32 else bits16(t)).tobytes()

    def test_every_dtype_is_torchs_embedding_bit_for_bit(self):
        ids = [[1, 2, 3, 299], [5, 6, 7, 8]]
        with torch.no_grad():
            tok = self.tok(torch.tensor(ids))
            both = tok + self.pos(torch.arange(2, 6))
        for dtype in ("float32", "float16", "bfloat16"):
            for positions, ref in ((True, both), (False, tok)):
                for body, query in (({"dtype": dtype}, ""),
                                    ({}, "?dtype=" + dtype)):
                    req = dict(body, inputs=ids, start_position=2,
                               positions=positions, encoding_format="torch")
                    st, hdr, raw = self.srv.embed(req, query=query)
                    self.assertEqual(st, 200, raw)
                    j = json.loads(raw)
                    self.assertEqual(j["shape"], [2, 4, 64])
                    self.assertEqual(j["dtype"], dtype)
                    want = ref.to(getattr(torch, dtype))
                    self.assertEqual(len(j["embeddings"]), 2)
                    for b, s in enumerate(j["embeddings"]):
                        t = torch.load(io.BytesIO(base64.b64decode(s)),
                                       weights_only=True)
                        self.assertEqual(t.dtype, want.dtype)
                        self.assertEqual(tuple(t.shape), (4, 64))
                        self.assertEqual(self.raw(t), self.raw(want[b]),
                                         (dtype, positions, query))

    def test_large_batches_go_to_a_worker_and_match_too(self):
        # 64 x 32 x 64 floats: past the inline bound, a worker's job
        ids = [[(b * 7 + s) % 300 for s in range(32)] for b in range(64)]
        st, _, raw = self.srv.embed({"inputs": ids, "encoding_format":
                                     "torch", "dtype": "bfloat16"})
        self.assertEqual(st, 200, raw)
        with torch.no_grad():
            want = (self.tok(torch.tensor(ids)) +
                    self.pos(torch.arange(32))).to(torch.bfloat16)
        for b, s in enumerate(json.loads(raw)["embeddings"]):
            t = torch.load(io.BytesIO(base64.b64decode(s)), weights_only=True)
            self.assertEqual(self.raw(t), self.raw(want[b]), b)

    def test_a_binary_accept_wins_over_torch(self):
        st, hdr, raw = self.srv.embed(
            {"inputs": [[1, 2]], "encoding_format": "torch",
             "dtype": "float16"}, accept="application/octet-stream")
        self.assertEqual(st, 200, raw)
        self.assertEqual(len(raw), 2 * 64 * 2)

    def test_dtype_errors(self):
        for req, query, needle in (
                ({"dtype": "float16"}, "", "JSON is float32"),
                ({"encoding_format": "torch", "dtype": "f16"}, "",
                 '"dtype" must be'),
                ({"encoding_format": "torch", "dtype": "float16"},
                 "?dtype=bfloat16", "differ"),
                ({"encoding_format": "pickle"}, "", '"torch"')):
            st, _, raw = self.srv.embed(dict(req, inputs=[[1]]), query=query)
            self.assertEqual(st, 400, raw)
            self.assertIn(needle, json.loads(raw)["error"])


if __name__ == "__main__":
    tc.main()
