#!/usr/bin/env python3
"""spm2json.py -- a SentencePiece .model (protobuf) as a tokenizer.json.

    python3 tools/spm2json.py [--template bos|eos|both] [--llama] \
        MODEL.model > tokenizer.json

Laid out as Hugging Face transformers' SpmConverter lays out a plain
Unigram or BPE model (convert_slow_tokenizer.py, today's version):
  normalizer    Sequence[Precompiled(charsmap) when the model has one,
                Strip(right), Replace(Regex " {2,}" -> "▁")] -- the last two
                only when normalizer_spec.remove_extra_whitespaces (the
                default), which is what they stand for;
  pre_tokenizer Metaspace("▁", prepend_scheme "always" when
                normalizer_spec.add_dummy_prefix (the default), else
                "never", split true);
  model         Unigram(vocab [[piece, score]...], unk_id from trainer_spec,
                byte_fallback from trainer_spec), or for a BPE model
                BPE(vocab {piece: id}, merges as SentencePieceExtractor
                finds them, unk_token, fuse_unk, byte_fallback);
  decoder       Metaspace, after ByteFallback when byte_fallback is on;
  added_tokens  CONTROL (special) and USER_DEFINED pieces, normalized false;
  post_processor none, or with --template a TemplateProcessing that puts
                the bos piece before ("<s> $A", Llama's converter), the eos
                piece after ("$A </s>", T5's) or both around the text;
  --llama       LlamaConverter's legacy layout instead: normalizer
                Prepend("▁") + Replace(" " -> "▁"), no pre-tokenizer,
                decoders Replace("▁" -> " "), ByteFallback, Fuse, Strip.
Only the standard library: the protobuf wire format is read by hand
(fields of sentencepiece_model.proto: ModelProto 1 pieces, 2 trainer_spec,
3 normalizer_spec; SentencePiece 1 piece, 2 score (float), 3 type;
TrainerSpec 3 model_type, 35 byte_fallback, 40 unk_id, 41 bos_id, 42
eos_id; NormalizerSpec 2
precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces).
Exit 1 with a message for a file that is not such a model, or for a model
type other than Unigram or BPE.
"""
import base64
import json
import struct
import sys


def varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise ValueError("truncated varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field number, wire type, value) of one message's bytes."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        if i > len(b):
            raise ValueError("truncated field %d" % num)
        yield num, wt, v


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def parse(data):
    pieces, trainer, norm = [], {}, {}
    for num, wt, v in fields(data):
        if num == 1 and wt == 2:
            p = {"piece": "", "score": 0.0, "type": 1}
            for n2, w2, v2 in fields(v):
                if n2 == 1 and w2 == 2:
                    p["piece"] = v2.decode("utf-8")
                elif n2 == 2 and w2 == 5:
                    p["score"] = struct.unpack("<f", v2)[0]
                elif n2 == 3 and w2 == 0:
                    p["type"] = v2
            pieces.append(p)
        elif num == 2 and wt == 2:
            for n2, w2, v2 in fields(v):
                if w2 == 0:
                    trainer[n2] = v2
        elif num == 3 and wt == 2:
            for n2, w2, v2 in fields(v):
                norm[n2] = v2
    return pieces, trainer, norm


def template(pieces, trainer, which):
    """TemplateProcessing with the bos and/or eos piece around $A."""
    ids = {"bos": signed(trainer.get(41, 1)), "eos": signed(trainer.get(42, 2))}
    single, special = [{"Sequence": {"id": "A", "type_id": 0}}], {}
    for k in ("bos", "eos"):
        if which not in (k, "both"):
            continue
        i = ids[k]
        if not 0 <= i < len(pieces):
            raise ValueError("--template %s: the model has no %s piece" % (k, k))
        name = pieces[i]["piece"]
        st = {"SpecialToken": {"id": name, "type_id": 0}}
        if k == "bos":
            single.insert(0, st)
        else:
            single.append(st)
        special[name] = {"id": name, "ids": [i], "tokens": [name]}
    pair = single + [dict(x) for x in single]
    return {"type": "TemplateProcessing", "single": single,
            "pair": [x if "Sequence" not in x else
                     {"Sequence": {"id": "A" if n < len(single) else "B",
                                   "type_id": 0}}
                     for n, x in enumerate(pair)],
            "special_tokens": special}


def bpe_merges(pieces):
    """transformers' SentencePieceExtractor.extract(vocab_scores): every
    split of every piece into two pieces, by (left id, right id) within a
    piece, then by the piece's score, highest first (stable)."""
    vocab = {p["piece"]: i for i, p in enumerate(pieces)}
    merges = []
    for p in pieces:
        m = p["piece"]
        local = [(m[:k], m[k:], p["score"]) for k in range(1, len(m))
                 if m[:k] in vocab and m[k:] in vocab]
        local.sort(key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)
    merges.sort(key=lambda x: x[2], reverse=True)
    return [[a, b] for a, b, _ in merges]


def convert(data, which=None, llama=False):
    pieces, trainer, norm = parse(data)
    model_type = trainer.get(3, 1)
    if model_type not in (1, 2):
        raise ValueError("model_type %d: only Unigram (1) and BPE (2) are "
                         "converted" % model_type)
    unk_id = signed(trainer.get(40, 0))
    byte_fallback = bool(trainer.get(35, 0))
    charsmap = norm.get(2, b"")
    dummy = bool(norm.get(3, 1))
    extra_ws = bool(norm.get(4, 1))
    seq = []
    if charsmap:
        seq.append({"type": "Precompiled",
                    "precompiled_charsmap":
                        base64.b64encode(charsmap).decode("ascii")})
    if extra_ws:
        seq.append({"type": "Strip", "strip_left": False,
                    "strip_right": True})
        seq.append({"type": "Replace", "pattern": {"Regex": " {2,}"},
                    "content": "\u2581"})
    scheme = "always" if dummy else "never"
    meta = {"type": "Metaspace", "replacement": "\u2581",
            "prepend_scheme": scheme, "split": True}
    decoder = dict(meta)
    if byte_fallback:
        decoder = {"type": "Sequence",
                   "decoders": [{"type": "ByteFallback"}, dict(meta)]}
    added = [{"id": i, "content": p["piece"], "single_word": False,
              "lstrip": False, "rstrip": False, "normalized": False,
              "special": p["type"] == 3}
             for i, p in enumerate(pieces) if p["type"] in (3, 4)]
    if model_type == 2:
        unk = pieces[unk_id]["piece"] if 0 <= unk_id < len(pieces) else None
        model = {"type": "BPE", "dropout": None, "unk_token": unk,
                 "continuing_subword_prefix": None,
                 "end_of_word_suffix": None, "fuse_unk": True,
                 "byte_fallback": byte_fallback, "ignore_merges": False,
                 "vocab": {p["piece"]: i for i, p in enumerate(pieces)},
                 "merges": bpe_merges(pieces)}
    else:
        model = {"type": "Unigram",
                 "unk_id": unk_id if unk_id >= 0 else None,
                 "vocab": [[p["piece"], p["score"]] for p in pieces],
                 "byte_fallback": byte_fallback}
    normalizer = {"type": "Sequence", "normalizers": seq}
    pre_tokenizer = meta
    if llama:  # LlamaConverter's legacy layout
        normalizer = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "},
             "content": "\u2581"}]}
        pre_tokenizer = None
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"},
             "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": template(pieces, trainer, which) if which else None,
        "decoder": decoder,
        "model": model,
    }


def main():
    args = sys.argv[1:]
    which, llama = None, False
    while len(args) > 1 and args[0].startswith("--"):
        if args[0] == "--llama":
            llama, args = True, args[1:]
        elif args[0] == "--template" and args[1] in ("bos", "eos", "both"):
            which, args = args[1], args[2:]
        else:
            break
    if len(args) != 1:
        sys.stderr.write("usage: spm2json.py [--template bos|eos|both] "
                         "[--llama] MODEL.model > tokenizer.json\n")
        return 2
    try:
        with open(args[0], "rb") as f:
            tj = convert(f.read(), which, llama)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        sys.stderr.write("spm2json: %s: %s\n" % (args[0], e))
        return 1
    json.dump(tj, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
