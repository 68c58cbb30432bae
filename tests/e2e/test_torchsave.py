"""PyTorch reads what server/torchsave.c writes: the "encoding_format":
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

Run: /usr/bin/python3 tests/e2e/test_torchsave.py --binary build/tokvec
(the tool is build/tools/torchsave beside the binary's build directory, or
$TOKVEC_TORCHSAVE). Needs numpy and torch (Debian python3-torch; skipped
with a message without it).
"""
import base64
import io
import json
import os
import subprocess
import sys
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


if __name__ == "__main__":
    tc.main()
