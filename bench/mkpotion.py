"""mkpotion.py DIR -- a potion-shaped Model2Vec model for `make
bench-sentences`: tests/data/bge/tokenizer.json (potion-base-8M's
WordPiece vocabulary, 29528 tokens) and a random 29528x256 float32
`embeddings` in model.safetensors (seeded numpy normal draws; no weights,
no mapping), config.json with normalize true and modules.json with a
Normalize module, as Model2Vec's save_pretrained lays a model out. Kept
when DIR/model.safetensors exists.
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

ROWS, DIM = 29528, 256
TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(out):
    if os.path.exists(os.path.join(out, "model.safetensors")):
        return
    os.makedirs(out, exist_ok=True)
    tok = os.path.join(TOP, "tests", "data", "bge", "tokenizer.json")
    with open(tok, encoding="utf-8") as f:
        vocab = len(json.load(f)["model"]["vocab"])
    assert vocab == ROWS, vocab
    shutil.copy(tok, os.path.join(out, "tokenizer.json"))
    emb = np.random.default_rng(2026).standard_normal(
        (ROWS, DIM), dtype=np.float32) * np.float32(0.1)
    head = json.dumps({"__metadata__": {"format": "pt"},
                       "embeddings": {"dtype": "F32", "shape": [ROWS, DIM],
                                      "data_offsets": [0, emb.nbytes]}})
    head = head.encode() + b" " * (-len(head) % 8)
    tmp = os.path.join(out, "model.safetensors.tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        f.write(emb.astype("<f4").tobytes())
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"model_type": "model2vec", "architectures":
                   ["StaticModel"], "tokenizer_name":
                   "baai/bge-base-en-v1.5", "hidden_dim": DIM,
                   "normalize": True}, f, indent=2)
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": ".", "type":
                    "sentence_transformers.models.StaticEmbedding"},
                   {"idx": 1, "name": "1", "path": "1_Normalize", "type":
                    "sentence_transformers.models.Normalize"}], f, indent=2)
    os.replace(tmp, os.path.join(out, "model.safetensors"))


if __name__ == "__main__":
    main(sys.argv[1])
