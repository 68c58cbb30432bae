"""End-to-end tests of GGUF tables: files written by gguf_ref.py (a writer
from ggml's docs/gguf.md), read by tokvec, every value compared bit for bit
with gguf_ref's numpy dequantization of the blocks.

Run: /usr/bin/python3 tests/e2e/test_gguf.py --binary build/tokvec
Rows are read back through `tokvec convert --dtype f32` (every row of both
tables, dequantized), `tokvec lookup` (the embed path: token + position,
a row of 1280 values dequantized in two chunks) and `tokvec serve` (POST
/embed raw float32, GET /tokens/ID, /info with each table's file dtype,
validated against docs/openapi.json).
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_ref as g  # noqa: E402
import support as tc  # noqa: E402  (the e2e support module)
import test_openapi  # noqa: E402  (its schema Validator)

QUANT = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"]
VOCAB, CTX, DIM = 6, 3, 1280


run = tc.run


def raw_table(rng, tname, rows, dim):
    """(rows, bytes per row) uint8 of a table stored as tname."""
    if tname == "F32":
        return rng.normal(0, 1, (rows, dim)).astype("<f4").view(np.uint8)
    if tname == "F16":
        return rng.normal(0, 1, (rows, dim)).astype("<f2").view(np.uint8)
    if tname == "BF16":
        f = rng.normal(0, 1, (rows, dim)).astype("<f4")
        return (f.view("<u4") >> 16).astype("<u2").view(np.uint8)
    _, B, S = g.TYPES[tname]
    blocks = g.random_blocks(rng, tname, rows * dim // B)
    return blocks.reshape(rows, dim // B * S)


class GGUF(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tokvec-gguf-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, tok_type, pos_type, version=3, seed=1):
        rng = np.random.default_rng(seed)
        tok = raw_table(rng, tok_type, VOCAB, DIM)
        pos = raw_table(rng, pos_type, CTX, DIM)
        path = os.path.join(self.tmp, "%s-%s.gguf" % (tok_type, pos_type))
        other = rng.normal(0, 1, 8).astype("<f4").view(np.uint8)
        data = g.gguf_bytes(
            [("token_embd.weight", tok_type, [DIM, VOCAB], tok.tobytes()),
             ("output_norm.weight", "F32", [8], other.tobytes()),
             ("position_embd.weight", pos_type, [DIM, CTX], pos.tobytes())],
            kv=[("general.architecture", 8, "gpt2"),
                ("general.alignment", 4, 64),
                ("tokenizer.ggml.tokens", 9, (8, ["a", "b", "c"])),
                ("gpt2.context_length", 4, CTX)],
            version=version, alignment=64)
        with open(path, "wb") as f:
            f.write(data)
        return (path, g.table_values(tok_type, tok),
                g.table_values(pos_type, pos))

    def check(self, tok_type, pos_type, version=3):
        path, tok, pos = self.write(tok_type, pos_type, version)
        out = os.path.join(self.tmp, "out.safetensors")
        run("convert", path, "-o", out, "--dtype", "f32")
        got = tc.read_safetensors(out)
        np.testing.assert_array_equal(got["tok_emb.weight"].view("<u4"),
                                      tok.view("<u4"))
        np.testing.assert_array_equal(got["pos_emb.weight"].view("<u4"),
                                      pos.view("<u4"))
        ids = [5, 0, 3]
        r = json.loads(run("lookup", "--table", path,
                           *map(str, ids)).stdout)
        emb = np.array([float(x) for x in np.ravel(r["embeddings"])],
                       np.float32).reshape(len(ids), DIM)
        want = tok[ids] + pos[np.arange(len(ids))]
        np.testing.assert_array_equal(emb.view("<u4"), want.view("<u4"))
        return path

    def test_float_tables_are_served_in_place(self):
        for t in ("F32", "F16", "BF16"):
            with self.subTest(t=t):
                self.check(t, t)
        self.check("F16", "F32")  # GGUF tables may differ in dtype

    def test_quantized_rows_match_the_block_formulas_bit_for_bit(self):
        for i, t in enumerate(QUANT):
            with self.subTest(t=t):
                self.check(t, QUANT[(i + 3) % len(QUANT)])

    def test_serve_answers_the_dequantized_rows(self):
        path, tok, pos = self.write("Q6_K", "Q5_0", seed=3)
        s = tc.Server(path)
        try:
            st, _, body = s.get("/info")
            info = json.loads(body)
            self.assertEqual((st, info["dtype"], info["dim"],
                              info["context_length"]),
                             (200, "float32", DIM, CTX))
            st, _, body = s.embed({"inputs": [[4, 1, 2], [0, 5, 5]]},
                                  accept="application/octet-stream")
            self.assertEqual(st, 200)
            got = np.frombuffer(body, "<f4").reshape(2, 3, DIM)
            ids = np.array([[4, 1, 2], [0, 5, 5]])
            want = tok[ids] + pos[np.arange(3)]
            np.testing.assert_array_equal(got.view("<u4"), want.view("<u4"))
            st, _, body = s.get("/tokens/5")
            row = json.loads(body)
            np.testing.assert_array_equal(
                np.array(row["embedding"], np.float32).view("<u4"),
                tok[5].view("<u4"))
        finally:
            self.assertEqual(s.stop(), 0)

    def test_info_names_each_tables_file_dtype(self):
        with open(test_openapi.DOC, encoding="utf-8") as f:
            v = test_openapi.Validator(json.load(f))
        info_schema = v.doc["components"]["schemas"]["Info"]
        for tok_type, pos_type, served in (("Q4_K", "Q8_0", "float32"),
                                           ("F16", "F16", "float16"),
                                           ("BF16", "F32", "float32")):
            with self.subTest(t=(tok_type, pos_type)):
                path, _, _ = self.write(tok_type, pos_type)
                s = tc.Server(path)
                try:
                    st, _, body = s.get("/info")
                    info = json.loads(body)
                finally:
                    self.assertEqual(s.stop(), 0)
                self.assertEqual(st, 200)
                self.assertEqual(info["dtype"], served)
                self.assertEqual(info["tensors"], {
                    "token": "token_embd.weight",
                    "position": "position_embd.weight",
                    "token_dtype": tok_type, "position_dtype": pos_type})
                v.check(info, info_schema)

    def test_version_2_reads_like_version_3(self):
        self.check("Q8_0", "F16", version=2)

    def test_inspect_reports_each_tensors_ggml_type(self):
        path, _, _ = self.write("Q4_K", "Q8_0")
        out = run("inspect", path).stdout
        self.assertIn("(gguf,", out)
        self.assertIn("token       token_embd.weight: 6 x 1280 Q4_K", out)
        self.assertIn("position    position_embd.weight: 3 x 1280 Q8_0", out)
        self.assertIn("output_norm.weight  F32  [8]", out)
        self.assertIn('"general.architecture":"gpt2"', out)

    def test_unsupported_type_is_refused_by_name(self):
        rng = np.random.default_rng(2)
        path = os.path.join(self.tmp, "q2k.gguf")
        blocks = rng.integers(0, 256, (VOCAB * DIM // 256, 84), np.uint8)
        with open(path, "wb") as f:
            f.write(g.gguf_bytes([("token_embd.weight", "Q2_K",
                                   [DIM, VOCAB], blocks.tobytes())]))
        r = run("lookup", "--table", path, "1", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("token_embd.weight' has dtype Q2_K", r.stderr)


if __name__ == "__main__":
    tc.main()
