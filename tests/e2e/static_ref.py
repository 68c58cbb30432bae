"""The float64 numpy reference of a static embedding model's sentence
vector, for the five model2vec-rs fixture models (tests/data/model2vec-rs,
MIT): used by test_static_models.py and test_clients.py.

* Model2Vec layout, as model2vec's StaticModel.encode (0.7 and later):
  the text cut to M x int(median(len(token))) code points (median over
  the vocabulary's token strings, added tokens included), its ids with
  add_special_tokens false, the unknown token's id dropped (model.unk_token
  of tokenizer.json; a Unigram model has none -- the Python binding of
  HF's Unigram has no unk_token, so Model2Vec drops nothing), the first M
  kept, rows embeddings[mapping[id]] * weights[id] (int8 rows as stored,
  no scale), their mean (zeros when none are left), v / (|v| + 1e-32)
  when the model normalizes.
* sentence-transformers layout, as StaticEmbedding (an EmbeddingBag mean
  over every id of the text, no unk drop, no cut; zeros for no ids), then
  Normalize (torch's F.normalize: v / max(|v|, 1e-12)).
* "dimensions" k: the first k components of the mean, renormalized when
  the model normalizes.

Ids are Hugging Face tokenizers' (npm "tokenizers", the oracle of
tests/oracle), precomputed into tests/data/model2vec-rs/hf-ids.json by
`make sentence-ids` (tests/oracle/hf/sentence-ids.js), keyed by the SHA-1
of each text; the file also records the SHA-256 of each tokenizer.json it
was made from. `python3 tests/e2e/static_ref.py --requests` prints what
sentence-ids.js reads.

Standard library + numpy.
"""
import hashlib
import json
import os
import struct
import sys

import numpy as np

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
FIX = os.path.join(TOP, "tests", "data", "model2vec-rs")
IDS_FILE = os.path.join(FIX, "hf-ids.json")
REGEN = "make sentence-ids (tests/oracle/hf/sentence-ids.js)"

# name -> (directory under FIX, tokenizer name)
FIXTURES = {
    "float32": ("test-model-float32", "bge"),
    "float16": ("test-model-float16", "bge"),
    "int8": ("test-model-int8", "bge"),
    "sentence-transformers": ("test-model-sentence-transformers", "bge"),
    "vocab-quantized": ("test-model-vocab-quantized", "unigram"),
}
TOKENIZERS = {
    "bge": os.path.join(FIX, "test-model-float32", "tokenizer.json"),
    "unigram": os.path.join(FIX, "test-model-vocab-quantized",
                            "tokenizer.json"),
}
DEFAULT_M = 512  # max_sentence_tokens: the server's default, encode()'s
SMALL_M = 4      # a server started with --max-sentence-tokens 4

# Past the default cut (512 x median 6 = 3072 code points for bge): prose
# in several scripts, so the cut falls among multi-byte characters, and
# more than 512 ids are left after it.
LONG = ("Static embeddings average token vectors; na\u00efve caf\u00e9 "
        "\u00e9l\u00e8ve \u00fcber Stra\u00dfe. \u6771\u4eac\u306f\u65e5"
        "\u672c\u306e\u9996\u90fd\u3067\u3059\u3002 \u041f\u0440\u0438"
        "\u0432\u0435\u0442, \u043c\u0438\u0440! \U0001f600 ") * 60
TEXTS = [
    "Hello, World! This is a test sentence.",
    "The quick brown fox jumps over the lazy dog; tokvec serves it.",
    "x",
    "Gr\u00f6\u00dfere \u00c4pfel schmecken s\u00fc\u00df, \u00e9l\u00e8ve "
    "na\u00efve caf\u00e9 \u00e0 la cr\u00e8me.",
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002"
    "\u5317\u4eac\u662f\u4e2d\u56fd\u7684\u9996\u90fd\u3002",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! "
    "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3"
    "\u03bc\u03b5. \u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644"
    "\u0639\u0627\u0644\u0645",
    "e\u0301 a\u0300\u0301 \ufb01 \u2460 \uff21\uff42\uff43 \u3000 tab\t"
    "newline\n",
    # empty after the unk drop (bge: every piece is [UNK])
    "\U0001f600 \U0001f680\U0001f30d \U0001f44d\U0001f3fd",
    "[UNK] [UNK]",
    # specials in the text: matched as added tokens, pooled as any id
    "[CLS] [SEP] [MASK] [PAD]",
    "[CLS]hello[SEP] world [MASK] [UNK] done",
    # white space only: no ids at all
    "   \t ",
    LONG,
]


def sha1(text):
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_safetensors(path):
    """{name: ndarray} of a safetensors file, dtypes as stored (F32, F16,
    F64, I8, I32 -- the ones Model2Vec writes)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    hdr = json.loads(data[8:8 + n])
    kinds = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I8": "i1",
             "I32": "<i4", "I64": "<i8"}
    out = {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e],
                                  dtype=kinds[t["dtype"]]).reshape(
                                      t["shape"])
    return out


def tokenizer_facts(path):
    """(median token length, unk id or None) as StaticModel computes
    them: int(np.median(len(t) for t in get_vocab())) -- get_vocab() has
    the added tokens; model.unk_token's id (Unigram: None)."""
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    model = tok["model"]
    vocab = model["vocab"]
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        strings = {p: i for i, (p, _) in enumerate(vocab)}
    else:
        strings = dict(vocab)
    for a in tok.get("added_tokens") or []:
        strings.setdefault(a["content"], a["id"])
    median = int(np.median([len(s) for s in strings]))
    unk = model.get("unk_token")
    unk_id = None
    if unk is not None and model.get("type") != "Unigram":
        unk_id = strings[unk]
    return median, unk_id


class Model:
    """One fixture directory: its rows, normalization and tokenizer
    facts."""

    def __init__(self, name):
        self.name = name
        self.dirname, self.tokenizer = FIXTURES[name]
        self.path = os.path.join(FIX, self.dirname)
        t = read_safetensors(os.path.join(self.path, "model.safetensors"))
        self.st = "embedding.weight" in t
        if self.st:
            self.emb = t["embedding.weight"].astype(np.float64)
        else:
            self.emb = t["embeddings"].astype(np.float64)
        self.weights = t.get("weights")
        self.mapping = t.get("mapping")
        self.dim = self.emb.shape[1]
        self.median, self.unk_id = tokenizer_facts(
            os.path.join(self.path, "tokenizer.json"))
        self.normalize = self._normalize()

    def _normalize(self):
        """modules.json's Normalize, else config.json's normalize, else
        config_sentence_transformers.json's, else False."""
        def load(f):
            p = os.path.join(self.path, f)
            if not os.path.exists(p):
                return None
            with open(p) as fh:
                return json.load(fh)
        mods = load("modules.json")
        if mods and any(m.get("type", "").endswith("Normalize")
                        for m in mods):
            return True
        for f in ("config.json", "config_sentence_transformers.json"):
            c = load(f)
            if c and "normalize" in c:
                return bool(c["normalize"])
        return False

    def rows(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        at = ids if self.mapping is None else self.mapping[ids]
        r = self.emb[at]
        if self.weights is not None:
            r = r * self.weights[ids].astype(np.float64)[:, None]
        return r

    def cut(self, text, m=DEFAULT_M):
        """The text StaticModel.tokenize encodes (the whole text for the
        sentence-transformers layout)."""
        return text if self.st else text[:m * self.median]

    def pooled_ids(self, ids, m=DEFAULT_M):
        """HF's ids of cut(text) -> the ids the mean covers."""
        if self.st:
            return list(ids)
        if self.unk_id is not None:
            ids = [i for i in ids if i != self.unk_id]
        return list(ids)[:m]

    def vector(self, ids, normalize=None, k=None):
        """The sentence vector of the pooled ids (float64)."""
        v = (self.rows(ids).mean(axis=0) if len(ids)
             else np.zeros(self.dim))
        if k is not None:
            v = v[:k]
        if self.normalize if normalize is None else normalize:
            n = np.linalg.norm(v)
            v = v / (max(n, 1e-12) if self.st else n + 1e-32)
        return v


_IDS = None


def hf_ids(tokenizer, text):
    """HF tokenizers' ids of text (add_special_tokens false), from
    hf-ids.json; AssertionError saying how to regenerate the file when
    the text or the tokenizer is not in it."""
    global _IDS
    if _IDS is None:
        with open(IDS_FILE, encoding="utf-8") as f:
            _IDS = json.load(f)
    entry = _IDS.get(tokenizer)
    if entry is None or entry["sha256"] != sha256_file(TOKENIZERS[tokenizer]):
        raise AssertionError("%s: no ids for tokenizer %s as it is now; run "
                             "%s" % (IDS_FILE, tokenizer, REGEN))
    ids = entry["ids"].get(sha1(text))
    if ids is None:
        raise AssertionError("%s: no ids of %r for %s; run %s"
                             % (IDS_FILE, text[:40], tokenizer, REGEN))
    return ids


def reference(model, text, m=DEFAULT_M, normalize=None, k=None):
    """(vector, pooled ids) of one text through model, cut for M = m."""
    ids = model.pooled_ids(hf_ids(model.tokenizer, model.cut(text, m)), m)
    return model.vector(ids, normalize, k), ids


def requests():
    """What sentence-ids.js reads: every tokenizer and every text a test
    needs ids of (each text, and its cuts for M = 512 and SMALL_M)."""
    texts = {name: set() for name in TOKENIZERS}
    for name in FIXTURES:
        model = Model(name)
        for t in TEXTS:
            for m in (DEFAULT_M, SMALL_M):
                texts[model.tokenizer].add(model.cut(t, m))
    return {"tokenizers": {n: {"path": p, "sha256": sha256_file(p)}
                           for n, p in TOKENIZERS.items()},
            "texts": {n: sorted(v) for n, v in texts.items()}}


if __name__ == "__main__":
    if sys.argv[1:] != ["--requests"]:
        sys.exit("usage: static_ref.py --requests")
    json.dump(requests(), sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
