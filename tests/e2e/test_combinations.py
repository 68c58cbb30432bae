"""Where features meet: every input kind of POST /embed x every output
encoding x every kind of table, and every route that reads rows (/embed,
GET /tokens/{id}, POST /similar by id and by vector) on every kind of
table. The per-feature suites each vary one thing; the bugs of issue 24
(text + torch overran its reply buffer; /similar read quantized and
mixed-dtype GGUF rows as float32) lived where two met.

Run: /usr/bin/python3 tests/e2e/test_combinations.py --binary build/tokvec
Needs numpy; the torch encoding is checked with torch.load when `import
torch` works (Debian python3-torch), skipped with a message otherwise.

Tables (vocab 300, dim 256, context 16; one server, switched by SIGHUP
reloads of a symlink, so the whole cross costs two server starts):
  safetensors from `tokvec init`: F32, F16, BF16 with learned positions,
  F32 and BF16 sinusoidal, F16 without positions;
  GGUF from gguf_ref.py: each of Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K
  as the token table with a position table of another quant type (the
  token tensor first in half of them, last -- ending the file -- in the
  others); F16 tokens with F32 positions (and two rows of inf and NaN);
  Q4_K tokens without a position tensor.
Inputs: two id lists with start_position, one flat id list, ragged id
lists with pad_id, one text, texts with pad_id, a text cut into
max_length/stride windows with start_position, texts and id lists mixed
with pad_id and "positions": false, and an int32 binary body.
Outputs: JSON floats, base64, torch (float32/float16/bfloat16 by the
body's "dtype"), application/octet-stream, application/x-npy and
application/x-npz (float32, float16, bfloat16 by ?dtype=; npz also by the
body's "encoding_format": "npz" and, for int32 bodies,
?encoding_format=npz).

The tokenizer is a tiny Hugging Face tokenizer.json (ByteLevel BPE: the
256 bytes in GPT-2's bytes_to_unicode order and six merges, vocab 262),
written here.

What is checked, bit for bit where the contract defines bits: the rows
are gguf_ref's numpy dequantization (or the safetensors values widened);
embeddings = tok[ids] + pos[start:start+S] in float32 (tok[ids] without
positions), narrowed to float16 (numpy's) or bfloat16 (tc.bf16_rne) with
round to nearest even; every JSON float parses back to that float32;
input_ids/target_ids are POST /tokenize of the same server, padded, or
cut into windows by GPTDatasetV1's rule (i in range(0, n - L, T):
ids[i:i+L], targets ids[i+1:i+L+1]); a padded batch's attention_mask (JSON
floats, base64 and torch alike, and npz) is 1 for each row's own tokens
and 0 for its padding, absent where no row is padded; an npz answer is read
by zipfile (stored members, CRCs checked) and numpy.load: embeddings in the
answer's dtype, input_ids (texts), target_ids (windows), attention_mask
(padded), int64, and no other member; /similar scores are numpy's cosine
of the dequantized rows within 1e-5 (a NaN/inf row scores -1), the row
itself first; a NaN/inf row by id is 422 row_not_finite.

Regressions of issue 24: a text with max_length 2 and stride 1 in torch
(then the server must still answer); /similar by id on a Q4_0 table
(vocab 4, dim 16384) whose token tensor ends the file.
"""
import base64
import http.client
import io
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_ref as g  # noqa: E402
import support as tc  # noqa: E402  (the e2e support module)

try:
    import torch
except ImportError:
    torch = None
NO_TORCH = ("torch not importable: install the Debian package python3-torch "
            "(make test-deps does)")

VOCAB, DIM, CTX = 300, 256, 16
QUANT = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"]
MERGES = ["h e", "l l", "\u0120 w", "o r", "he ll", "\u0120w or"]
INF_ROW, NAN_ROW = 296, 297  # of the mixed F16/F32 GGUF table
LONG = "hello world, or hello wor! hell or world hello"
DTYPES = ("float32", "float16", "bfloat16")


def bytes_to_unicode():
    """GPT-2's byte -> character map: (bytes in id order, characters)."""
    bs = (list(range(ord("!"), ord("~") + 1))
          + list(range(ord("\u00a1"), ord("\u00ac") + 1))
          + list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, [chr(c) for c in cs]


def write_tokenizer(path):
    """A tokenizer.json of 256 byte tokens and MERGES; returns the bytes of
    each id."""
    bs, cs = bytes_to_unicode()
    vocab = {c: i for i, c in enumerate(cs)}
    token_bytes = [bytes([b]) for b in bs]
    dec = dict(zip(cs, bs))
    for m in MERGES:
        piece = m.replace(" ", "")
        vocab[piece] = len(vocab)
        token_bytes.append(bytes(dec[c] for c in piece))
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": "1.0", "normalizer": None,
                   "pre_tokenizer": {"type": "ByteLevel",
                                     "add_prefix_space": False,
                                     "trim_offsets": True,
                                     "use_regex": True},
                   "model": {"type": "BPE", "dropout": None,
                             "vocab": vocab, "merges": MERGES}}, f)
    return token_bytes


def sinusoidal(P, D):
    """test_server.py's test_sinusoidal reference."""
    i = np.arange(D // 2, dtype=np.float64)
    ang = (np.arange(P, dtype=np.float64)[:, None]
           / np.power(10000.0, 2 * i / D)[None, :])
    pos = np.empty((P, D))
    pos[:, 0::2], pos[:, 1::2] = np.sin(ang), np.cos(ang)
    return pos.astype(np.float32)


def raw_rows(rng, tname, rows, dim):
    """(rows, bytes per row) uint8 of a tensor stored as tname."""
    if tname == "F32":
        return rng.normal(0, 1, (rows, dim)).astype("<f4").view(np.uint8)
    if tname == "F16":
        return rng.normal(0, 1, (rows, dim)).astype("<f2").view(np.uint8)
    _, B, S = g.TYPES[tname]
    return g.random_blocks(rng, tname, rows * dim // B).reshape(
        rows, dim // B * S)


def write_gguf(path, tok_type, pos_type, seed, token_last, vocab=VOCAB,
               dim=DIM, special_rows=False):
    """A GGUF table; returns (tok, pos) as float32 (pos None without a
    position tensor). special_rows: rows INF_ROW and NAN_ROW of an F16
    token table are inf and NaN."""
    rng = np.random.default_rng(seed)
    tok = raw_rows(rng, tok_type, vocab, dim)
    if special_rows:
        f = tok.view("<f2")
        f[INF_ROW] = np.inf
        f[NAN_ROW] = np.nan
    tensors = [("token_embd.weight", tok_type, [dim, vocab], tok.tobytes())]
    pos = None
    if pos_type:
        pos = raw_rows(rng, pos_type, CTX, dim)
        tensors.append(("position_embd.weight", pos_type, [dim, CTX],
                        pos.tobytes()))
    if token_last:
        tensors.reverse()
    data = g.gguf_bytes(tensors, kv=[("general.architecture", 8, "gpt2"),
                                     ("gpt2.context_length", 4, CTX)])
    with open(path, "wb") as f:
        f.write(data)
    return (g.table_values(tok_type, tok),
            None if pos is None else g.table_values(pos_type, pos), data,
            tok.tobytes())


class Table:
    def __init__(self, name, path, tok, pos, token_dtype):
        self.name, self.path, self.tok, self.pos = name, path, tok, pos
        self.token_dtype = token_dtype

    def embeddings(self, ids, start, positions):
        """tok[ids] + pos[start:start+S] in float32 (B, S, D)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = self.tok[ids]
        if positions and self.pos is not None:
            out = out + self.pos[start:start + ids.shape[1]][None]
        return out.astype(np.float32)

    def cosines(self, q):
        """numpy's cosine of q with every row (float64); a row holding
        NaN or inf scores -1, a zero row 0."""
        t = self.tok.astype(np.float64)
        q = np.asarray(q, dtype=np.float64)
        bad = ~np.isfinite(t).all(axis=1)
        t = np.where(bad[:, None], 0.0, t)
        norms = np.linalg.norm(t, axis=1) * np.linalg.norm(q)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.where(norms > 0, (t @ q) / norms, 0.0)
        cos[bad] = -1.0
        return cos


def mask_of(lens, S):
    """The attention_mask of rows of lengths lens padded to S."""
    return [[1] * n + [0] * (S - n) for n in lens]


def narrow(x, dtype):
    """The bits of float32 x in dtype: float32 as '<u4', float16 and
    bfloat16 (round to nearest even) as '<u2'."""
    if dtype == "float32":
        return x.astype("<f4").view("<u4")
    if dtype == "float16":
        return x.astype("<f2").view("<u2")
    return tc.bf16_rne(x)


# The inputs of POST /embed: a JSON body each (the binary one apart).
KINDS = [
    ("id lists", {"inputs": [[0, 299, 17, 5], [261, 1, 2, 3]],
                  "start_position": 2}),
    ("one id list", {"inputs": [7, 8, 299]}),
    ("ragged ids with pad_id", {"inputs": [[3, 1, 4, 1, 5], [9, 2], [299]],
                                "pad_id": 298}),
    ("one text", {"inputs": "hello world"}),
    ("texts with pad_id", {"inputs": ["hello world", "or", " hello!"],
                           "pad_id": 0}),
    ("text windows", {"inputs": LONG, "max_length": 3, "stride": 2,
                      "start_position": 5}),
    ("texts and ids", {"inputs": ["hello world", [299, 3], "w"],
                       "pad_id": 7, "positions": False}),
]
BINARY_IDS = [[5, 6, 7], [299, 0, 261]]  # int32 body, ?start_position=1

# The encodings: (name, Accept, query, extra body keys, answer dtype).
JSON_OUTS = [("json floats", {}, "float32"),
             ("json base64", {"encoding_format": "base64"}, "float32")]
TORCH_OUTS = [("torch " + d, {"encoding_format": "torch", "dtype": d}, d)
              for d in DTYPES]
BINARY_OUTS = [("%s %s" % (name, d), accept,
                "" if (d == "float32" and name == "raw") else "?dtype=" + d, d)
               for name, accept in (("raw", "application/octet-stream"),
                                    ("npy", "application/x-npy"),
                                    ("npz", "application/x-npz"))
               for d in DTYPES]
NPZ = "application/x-npz"
NPY_DESCR = {"float32": "<f4", "float16": "<f2", "bfloat16": "<u2"}


class Client:
    """One kept-alive connection to a server; a connection the server
    closed is opened again once (never when the process is gone)."""

    def __init__(self, srv):
        self.srv, self.conn = srv, None

    def call(self, method, path, body=None, headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            headers = dict({"Content-Type": "application/json"},
                           **(headers or {}))
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = self.srv.connect()
            try:
                self.conn.request(method, path, body=body,
                                  headers=headers or {})
                r = self.conn.getresponse()
                data = r.read()
                if r.will_close:
                    self.close()
                return r.status, dict(r.getheaders()), data
            except (http.client.HTTPException, ConnectionError):
                self.close()
                if attempt or self.srv.proc.poll() is not None:
                    raise

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None


class Combinations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tokvec-e2e-combo-")
        cls.tokenizer = os.path.join(cls.tmp, "tokenizer.json")
        cls.token_bytes = write_tokenizer(cls.tokenizer)
        cls.tables = cls.make_tables()
        cls.link = os.path.join(cls.tmp, "serving")
        first = cls.tables[0]
        os.symlink(first.path, cls.link)
        cls.current = first.name
        cls.srv = tc.Server(cls.link, "--tokenizer", cls.tokenizer)
        cls.http = Client(cls.srv)
        cls.tokenized = {}

    @classmethod
    def tearDownClass(cls):
        cls.http.close()
        rc = cls.srv.stop()
        shutil.rmtree(cls.tmp)
        if rc != 0:  # e.g. a leak report of the sanitizer build
            raise AssertionError("server exit %d: %s"
                                 % (rc, cls.srv.stderr()[-3000:]))

    @classmethod
    def make_tables(cls):
        tables = []
        for dt, positional in (("f32", "learned"), ("f16", "learned"),
                               ("bf16", "learned"), ("f32", "sinusoidal"),
                               ("bf16", "sinusoidal"), ("f16", "none")):
            name = "safetensors %s %s" % (dt.upper(), positional)
            path = tc.init_table(
                os.path.join(cls.tmp, "%s-%s.safetensors" % (dt, positional)),
                VOCAB, DIM, "--context", str(CTX), "--dtype", dt,
                "--positional", positional, "--seed", str(len(tables)))
            t = tc.read_safetensors(path, widen=True)
            pos = t.get("pos_emb.weight")
            if positional == "sinusoidal":
                pos = sinusoidal(CTX, DIM)
            tables.append(Table(name, path, t["tok_emb.weight"], pos,
                                dt.upper()))
        specs = [(q, QUANT[(i + 3) % len(QUANT)], i % 2 == 0, False)
                 for i, q in enumerate(QUANT)]
        specs += [("F16", "F32", True, True), ("Q4_K", None, False, False)]
        for i, (tt, pt, last, special) in enumerate(specs):
            name = "gguf %s tokens, %s positions%s" % (
                tt, pt or "no", ", token tensor last" if last else "")
            path = os.path.join(cls.tmp, "%d.gguf" % i)
            tok, pos, _, _ = write_gguf(path, tt, pt, seed=100 + i,
                                     token_last=last, special_rows=special)
            tables.append(Table(name, path, tok, pos, tt))
        return tables

    # --- serving a table ---------------------------------------------------

    def reloads(self):
        text = self.http.call("GET", "/metrics")[2].decode()
        got = {}
        for line in text.splitlines():
            for r in ("ok", "failed"):
                if line.startswith('tokvec_reloads_total{result="%s"} ' % r):
                    got[r] = float(line.split()[-1])
        return got["ok"], got["failed"]

    def serve(self, table):
        """Makes table the one served: the symlink switched, SIGHUP, until
        the reload is counted; /info then names its token dtype."""
        cls = type(self)
        if cls.current != table.name:
            ok, failed = self.reloads()
            fresh = self.link + ".new"
            os.symlink(table.path, fresh)
            os.replace(fresh, self.link)
            self.srv.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 20 * tc.TIME_SCALE
            while True:
                now = self.reloads()
                if now[1] != failed:
                    self.fail("reload of %s failed: %s"
                              % (table.name, self.srv.stderr()[-2000:]))
                if now[0] > ok:
                    break
                if time.time() > deadline:
                    self.fail("reload of %s not seen" % table.name)
                time.sleep(0.005)
            cls.current = table.name
        info = json.loads(self.http.call("GET", "/info")[2])
        self.assertEqual(info["tensors"]["token_dtype"], table.token_dtype)
        return table

    def tearDown(self):
        self.assertIsNone(self.srv.proc.poll(),
                          "the server died: " + self.srv.stderr()[-3000:])

    # --- the expected answers ----------------------------------------------

    def tokenize(self, text):
        """POST /tokenize of this server: the ids of text."""
        if text not in self.tokenized:
            st, _, raw = self.http.call("POST", "/tokenize",
                                        {"inputs": [text]})
            self.assertEqual(st, 200, raw)
            ids = [t["id"] for t in json.loads(raw)[0]]
            self.assertEqual(b"".join(self.token_bytes[i] for i in ids),
                             text.encode())
            self.tokenized[text] = ids
        return self.tokenized[text]

    def padded_lengths(self, body):
        """Each row's own length where body's rows are padded (they differ
        in length), else None: the attention_mask's ones."""
        inp = body["inputs"]
        if body.get("max_length") or isinstance(inp, str) or isinstance(
                inp[0], int):
            return None
        lens = [len(self.tokenize(r)) if isinstance(r, str) else len(r)
                for r in inp]
        return lens if len(set(lens)) > 1 else None

    def resolve(self, body):
        """(ids, target_ids or None, start, positions, has_text) that body
        asks for: texts tokenized, rows padded, or windows."""
        inp = body["inputs"]
        start = body.get("start_position", 0)
        positions = body.get("positions", True)
        L = body.get("max_length")
        if L:
            ids = self.tokenize(inp)
            T = body.get("stride", L)
            at = range(0, len(ids) - L, T)
            self.assertGreater(len(at), 1)
            return ([ids[i:i + L] for i in at],
                    [ids[i + 1:i + L + 1] for i in at], start, positions,
                    True)
        if isinstance(inp, str):
            rows = [inp]
        elif isinstance(inp[0], int):
            rows = [inp]
        else:
            rows = inp
        has_text = any(isinstance(r, str) for r in rows)
        rows = [self.tokenize(r) if isinstance(r, str) else list(r)
                for r in rows]
        S = max(len(r) for r in rows)
        if "pad_id" in body:
            rows = [r + [body["pad_id"]] * (S - len(r)) for r in rows]
        return rows, None, start, positions, has_text

    # --- checking one answer -----------------------------------------------

    def check_json(self, raw, want, dtype, base64_, want_ids, targets,
                   has_text, torch_, lens=None):
        B, S, D = want.shape
        j = json.loads(raw)
        keys = {"shape", "dtype", "embeddings"}
        if has_text:
            keys |= {"input_ids"} | ({"target_ids"} if targets else set())
        if lens:
            keys.add("attention_mask")
        self.assertEqual(set(j), keys)
        self.assertEqual((j["shape"], j["dtype"]), ([B, S, D], dtype))
        if has_text:
            self.assertEqual(j["input_ids"], want_ids)
            if targets:
                self.assertEqual(j["target_ids"], targets)
        if lens:
            self.assertEqual(j["attention_mask"], mask_of(lens, S))
        bits = narrow(want, dtype)
        if torch_:
            self.assertEqual(len(j["embeddings"]), B)
            for b, s in enumerate(j["embeddings"]):
                archive = base64.b64decode(s, validate=True)
                self.assertEqual(archive[:4], b"PK\x03\x04")
                if torch is None:  # the archive's tensors: test_torchsave
                    continue
                t = torch.load(io.BytesIO(archive), weights_only=True)
                self.assertEqual(str(t.dtype), "torch." + dtype)
                self.assertEqual(tuple(t.shape), (S, D))
                got = (t.numpy().view("<u4") if dtype == "float32"
                       else t.view(torch.int16).numpy().view("<u2"))
                np.testing.assert_array_equal(got, bits[b])
        elif base64_:
            got = np.frombuffer(base64.b64decode(j["embeddings"],
                                                 validate=True), "<f4")
            np.testing.assert_array_equal(got.view("<u4"), bits.ravel())
        else:
            got = np.array(j["embeddings"], dtype=np.float64)
            self.assertEqual(got.shape, (B, S, D))
            np.testing.assert_array_equal(got.astype("<f4").view("<u4"),
                                          bits)

    def check_npz(self, raw, want_bits, dtype, ids, targets, lens):
        """An npz answer: a stored ZIP whose CRCs hold, numpy.load-able,
        holding embeddings (want_bits in dtype) and the int64 arrays that
        exist (ids: texts' input_ids, or None), nothing else."""
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            self.assertIsNone(z.testzip())  # every member's CRC-32
            infos = z.infolist()
            self.assertTrue(all(i.compress_type == zipfile.ZIP_STORED
                                for i in infos))
        want = {"embeddings": None}
        if ids is not None:
            want["input_ids"] = ids
        if targets:
            want["target_ids"] = targets
        if lens:
            want["attention_mask"] = mask_of(lens, want_bits.shape[1])
        self.assertEqual([i.filename for i in infos],
                         [k + ".npy" for k in want])
        with np.load(io.BytesIO(raw)) as a:
            self.assertEqual(sorted(a.files), sorted(want))
            e = a["embeddings"]
            self.assertEqual(e.dtype.str, NPY_DESCR[dtype])
            self.assertEqual(e.shape, want_bits.shape)
            np.testing.assert_array_equal(e.view(want_bits.dtype), want_bits)
            for k, v in want.items():
                if k == "embeddings":
                    continue
                self.assertEqual(a[k].dtype.str, "<i8", k)
                np.testing.assert_array_equal(a[k], np.array(v, np.int64),
                                              k)

    def check_binary(self, hdr, raw, want, accept, dtype, ids=None,
                     targets=None, lens=None):
        B, S, D = want.shape
        self.assertEqual(hdr["Content-Type"], accept)
        self.assertEqual(hdr["X-Tokvec-Shape"], "%d,%d,%d" % (B, S, D))
        self.assertEqual(int(hdr["Content-Length"]), len(raw))
        bits = narrow(want, dtype)
        if accept == NPZ:
            self.check_npz(raw, bits, dtype, ids, targets, lens)
        elif accept == "application/x-npy":
            a = np.load(io.BytesIO(raw))
            self.assertEqual(a.dtype.str, {"float32": "<f4",
                                           "float16": "<f2",
                                           "bfloat16": "<u2"}[dtype])
            self.assertEqual(a.shape, (B, S, D))
            np.testing.assert_array_equal(a.view(bits.dtype), bits)
        else:
            self.assertEqual(len(raw), bits.nbytes)
            np.testing.assert_array_equal(
                np.frombuffer(raw, bits.dtype).reshape(B, S, D), bits)

    def embed_every_kind(self, table, outs):
        """Every JSON input kind in each of outs on table."""
        for kind, body in KINDS:
            ids, targets, start, positions, has_text = self.resolve(body)
            lens = self.padded_lengths(body)
            want = table.embeddings(ids, start, positions)
            for name, extra, dtype in outs:
                with self.subTest(table=table.name, input=kind, out=name):
                    st, _, raw = self.http.call(
                        "POST", "/embed", dict(body, **extra),
                        {"Accept": "application/json"})
                    self.assertEqual(st, 200, raw[:300])
                    self.check_json(raw, want, dtype,
                                    extra.get("encoding_format") == "base64",
                                    ids, targets, has_text,
                                    extra.get("encoding_format") == "torch",
                                    lens)

    # --- the tests -----------------------------------------------------------

    def test_json_floats_and_base64_are_the_float32_sum_on_every_table(self):
        for table in self.tables:
            self.serve(table)
            self.embed_every_kind(table, JSON_OUTS)

    @unittest.skipIf(torch is None, NO_TORCH)
    def test_torch_archives_hold_the_sum_in_every_dtype_on_every_table(self):
        for table in self.tables:
            self.serve(table)
            self.embed_every_kind(table, TORCH_OUTS)

    def test_binary_answers_are_the_sum_narrowed_on_every_table(self):
        for table in self.tables:
            self.serve(table)
            for kind, body in KINDS:
                ids, targets, start, positions, has_text = self.resolve(body)
                lens = self.padded_lengths(body)
                want = table.embeddings(ids, start, positions)
                for name, accept, query, dtype in BINARY_OUTS:
                    with self.subTest(table=table.name, input=kind, out=name):
                        st, hdr, raw = self.http.call(
                            "POST", "/embed" + query, body,
                            {"Accept": accept})
                        self.assertEqual(st, 200, raw[:300])
                        self.check_binary(hdr, raw, want, accept, dtype,
                                          ids if has_text else None,
                                          targets, lens)
                # the body's "encoding_format": "npz" picks npz too, where
                # Accept names no type (none here, or */*)
                with self.subTest(table=table.name, input=kind,
                                  out="npz by encoding_format"):
                    st, hdr, raw = self.http.call(
                        "POST", "/embed?dtype=float16",
                        dict(body, encoding_format="npz"),
                        {"Accept": "*/*"} if lens else {})
                    self.assertEqual(st, 200, raw[:300])
                    self.check_binary(hdr, raw, want, NPZ, "float16",
                                      ids if has_text else None, targets,
                                      lens)

    def test_int32_bodies_answer_every_encoding_on_every_table(self):
        B, S = len(BINARY_IDS), len(BINARY_IDS[0])
        body = np.array(BINARY_IDS, "<i4").tobytes()
        for table in self.tables:
            self.serve(table)
            want = table.embeddings(BINARY_IDS, 1, True)
            outs = [("json floats", "application/json", "", "float32"),
                    ("npz by ?encoding_format", "", "?encoding_format=npz",
                     "float32")]
            for name, accept, query, dtype in outs + BINARY_OUTS:
                query = (query + "&" if query else "?") + "start_position=1"
                with self.subTest(table=table.name, out=name):
                    st, hdr, raw = self.http.call(
                        "POST", "/embed" + query, body,
                        {"Content-Type": "application/octet-stream",
                         "X-Tokvec-Shape": "%d,%d" % (B, S),
                         "Accept": accept})
                    self.assertEqual(st, 200, raw[:300])
                    if accept == "application/json":
                        self.check_json(raw, want, dtype, False, None, None,
                                        False, False)
                    else:  # no Accept and ?encoding_format=npz: npz
                        self.check_binary(hdr, raw, want, accept or NPZ,
                                          dtype)

    def test_pooled_npz_holds_the_sentence_vectors_alone(self):
        """"pooling": "mean" answers (B, D): its npz is embeddings alone
        (the inputs' ids are ragged; JSON answers carry them as lists),
        the JSON answer's vectors in the answer's dtype."""
        body = {"inputs": ["hello world", [299, 3], "or"], "pooling": "mean"}
        for table in (self.tables[0], self.tables[6], self.tables[-2]):
            self.serve(table)
            st, _, raw = self.http.call("POST", "/embed", body)
            self.assertEqual(st, 200, raw[:300])
            vecs = np.array(json.loads(raw)["embeddings"], np.float32)
            self.assertEqual(vecs.shape, (3, DIM))
            for dtype in DTYPES:
                with self.subTest(table=table.name, dtype=dtype):
                    st, hdr, raw = self.http.call(
                        "POST", "/embed?dtype=" + dtype,
                        dict(body, encoding_format="npz"))
                    self.assertEqual(st, 200, raw[:300])
                    self.assertEqual(hdr["Content-Type"], NPZ)
                    self.assertEqual(hdr["X-Tokvec-Shape"], "3,%d" % DIM)
                    self.check_npz(raw, narrow(vecs, dtype), dtype, None,
                                   None, None)

    def test_an_accept_that_names_a_type_wins_over_encoding_format_npz(self):
        self.serve(self.tables[0])
        body = {"inputs": [[1, 2, 3], [4]], "pad_id": 0,
                "encoding_format": "npz"}
        want = self.tables[0].embeddings([[1, 2, 3], [4, 0, 0]], 0, True)
        st, hdr, raw = self.http.call("POST", "/embed", body,
                                      {"Accept": "application/json"})
        self.assertEqual(st, 200, raw[:300])
        self.check_json(raw, want, "float32", False, None, None, False,
                        False, [3, 1])
        st, hdr, raw = self.http.call("POST", "/embed", body,
                                      {"Accept": "application/x-npy"})
        self.assertEqual(st, 200, raw[:300])
        self.check_binary(hdr, raw, want, "application/x-npy", "float32")
        # npz excluded: the wildcard's pick (JSON); nothing left: 406
        st, hdr, raw = self.http.call(
            "POST", "/embed", body, {"Accept": NPZ + ";q=0, */*"})
        self.assertEqual((st, hdr["Content-Type"]),
                         (200, "application/json"))
        st, _, raw = self.http.call("POST", "/embed", body,
                                    {"Accept": "text/html"})
        self.assertEqual((st, json.loads(raw)["error_type"]),
                         (406, "not_acceptable"))
        # float16 needs a binary answer: npz is one
        st, hdr, raw = self.http.call("POST", "/embed",
                                      dict(body, dtype="float16"))
        self.assertEqual(st, 200, raw[:300])
        self.check_binary(hdr, raw, want, NPZ, "float16", None, None, [3, 1])

    def test_tokens_route_answers_each_row_as_stored(self):
        for table in self.tables:
            self.serve(table)
            ids = [0, 150, 261, VOCAB - 1]
            if table.token_dtype == "F16" and table.name.startswith("gguf"):
                ids += [INF_ROW, NAN_ROW]
            for tid in ids:
                with self.subTest(table=table.name, id=tid):
                    st, _, raw = self.http.call("GET", "/tokens/%d" % tid)
                    self.assertEqual(st, 200, raw[:300])
                    j = json.loads(raw)
                    self.assertEqual(set(j), {"id", "embedding"})
                    self.assertEqual(j["id"], tid)
                    row = table.tok[tid]
                    fin = np.isfinite(row)
                    got = j["embedding"]
                    self.assertEqual(len(got), DIM)
                    # non-finite values are null (JSON has no inf or NaN)
                    self.assertTrue(all(v is None for v, f in zip(got, fin)
                                        if not f))
                    vals = np.array([v for v in got if v is not None],
                                    np.float64).astype("<f4")
                    np.testing.assert_array_equal(vals.view("<u4"),
                                                  row[fin].view("<u4"))

    def check_neighbours(self, table, got, q, k):
        """got: /similar's answer for query vector q (k entries): numpy's
        cosines within 1e-5, best first, the same set up to near-ties."""
        cos = table.cosines(q)
        want = np.lexsort((np.arange(VOCAB), -cos))[:k]
        self.assertEqual(len(got), k)
        ids = [n["id"] for n in got]
        self.assertEqual(len(set(ids)), k)
        prev = 2.0
        for n in got:
            self.assertEqual(set(n), {"id", "text", "score"})
            self.assertAlmostEqual(n["score"], cos[n["id"]], delta=1e-5)
            self.assertLessEqual(n["score"], prev)
            prev = n["score"]
            if n["id"] < len(self.token_bytes):
                self.assertEqual(n["text"], self.token_bytes[n["id"]].decode(
                    "utf-8", "replace"))
            else:
                self.assertIsNone(n["text"])
        self.assertAlmostEqual(got[-1]["score"], cos[want[-1]], delta=1e-5)
        self.assertGreaterEqual(sum(a == b for a, b in zip(ids, want)),
                                k - 2)

    def test_similar_by_id_finds_the_row_itself_first_on_every_table(self):
        for table in self.tables:
            self.serve(table)
            for tid in (0, 77, 261, VOCAB - 1):
                with self.subTest(table=table.name, id=tid):
                    st, _, raw = self.http.call(
                        "POST", "/similar", {"id": tid, "k": VOCAB})
                    self.assertEqual(st, 200, raw[:300])
                    got = json.loads(raw)
                    self.assertEqual(got[0]["id"], tid)
                    self.assertAlmostEqual(got[0]["score"], 1.0, delta=1e-5)
                    self.check_neighbours(table, got, table.tok[tid], VOCAB)

    def test_similar_by_id_of_a_nan_or_inf_row_is_row_not_finite(self):
        table = next(t for t in self.tables if t.token_dtype == "F16"
                     and t.name.startswith("gguf"))
        self.serve(table)
        for tid in (INF_ROW, NAN_ROW):
            st, _, raw = self.http.call("POST", "/similar", {"id": tid})
            self.assertEqual(st, 422, raw)
            self.assertEqual(json.loads(raw)["error_type"], "row_not_finite")
        # and the server goes on answering
        st, _, raw = self.http.call("POST", "/similar", {"id": 3, "k": 5})
        self.assertEqual(st, 200, raw)
        self.check_neighbours(table, json.loads(raw), table.tok[3], 5)

    def test_similar_by_vector_matches_numpy_cosine_on_every_table(self):
        rng = np.random.default_rng(9)
        for table in self.tables:
            self.serve(table)
            q = (table.tok[42] * 0.5 + rng.normal(0, 0.1, DIM)).astype(
                np.float32)
            with self.subTest(table=table.name):
                st, _, raw = self.http.call(
                    "POST", "/similar", {"vector": q.tolist(), "k": 25})
                self.assertEqual(st, 200, raw[:300])
                self.check_neighbours(table, json.loads(raw), q, 25)

    def test_text_windows_of_two_in_torch_leave_the_server_answering(self):
        """Issue 24: "input_ids"/"target_ids" were left out of the torch
        reply's plan; max_length 2, stride 1 gave the most ids per float
        and wrote past the buffer. (Without torch the archives' tensors are
        not loaded; the rest is checked.)"""
        body = {"inputs": LONG, "max_length": 2, "stride": 1,
                "encoding_format": "torch"}
        ids, targets, _, _, _ = self.resolve(body)
        for table in (self.tables[0], self.tables[6], self.tables[-1]):
            self.serve(table)
            want = table.embeddings(ids, 0, True)
            for dtype in DTYPES:
                with self.subTest(table=table.name, dtype=dtype):
                    st, _, raw = self.http.call(
                        "POST", "/embed", dict(body, dtype=dtype))
                    self.assertEqual(st, 200, raw[:300])
                    self.check_json(raw, want, dtype, False, ids, targets,
                                    True, True)
                    st, _, raw = self.http.call(
                        "POST", "/embed", {"inputs": [[1, 2]]},
                        {"Accept": "application/octet-stream"})
                    self.assertEqual(st, 200)
                    np.testing.assert_array_equal(
                        np.frombuffer(raw, "<u4"),
                        narrow(table.embeddings([[1, 2]], 0, True),
                               "float32").ravel())

    def test_similar_by_id_on_a_q4_0_table_that_ends_the_file(self):
        """Issue 24: /similar read a Q4_0 token table as float32, 7x past
        its end; vocab 4 x dim 16384 with the tensor last in the file put
        that past the mapping."""
        path = os.path.join(self.tmp, "q4_0-end.gguf")
        tok, _, data, blocks = write_gguf(path, "Q4_0", "F32", seed=7,
                                          token_last=True, vocab=4,
                                          dim=16384)
        # the token tensor's blocks are the file's last bytes
        self.assertEqual(len(blocks), 4 * 16384 // 32 * 18)
        self.assertTrue(data.endswith(blocks))
        srv = tc.Server(path)
        http = Client(srv)
        try:
            for tid in range(4):
                st, _, raw = http.call("POST", "/similar",
                                       {"id": tid, "k": 4})
                self.assertEqual(st, 200, raw[:300])
                got = json.loads(raw)
                self.assertEqual(got[0]["id"], tid)
                t = Table("q4_0", path, tok, None, "Q4_0")
                cos = t.cosines(tok[tid])
                self.assertEqual([n["id"] for n in got],
                                 list(np.lexsort((np.arange(4), -cos))))
                for n in got:
                    self.assertAlmostEqual(n["score"], cos[n["id"]],
                                           delta=1e-5)
            self.assertEqual(http.call("GET", "/health")[0], 200)
            self.assertIsNone(srv.proc.poll())
        finally:
            http.close()
            rc = srv.stop()
        self.assertEqual(rc, 0, srv.stderr()[-3000:])


if __name__ == "__main__":
    tc.main()
