"""test_oracle.py -- the fast tokenizer oracle of `make test`: tokvec's ids
(and offsets, for Hugging Face pipelines) against the reference libraries
of tests/oracle/ (npm tiktoken and HF tokenizers, installed by the
Makefile from the pinned, hash-checked package-lock.json), one test per
tokenizer: byte-level BPE (gpt2, cl100k_base, o200k_base vs tiktoken, the
built-in texts and tests/data/the-verdict.txt), WordPiece, Unigram and
SentencePiece BPE (vs HF: the built-in texts and Unicode edge cases, both
add_special_tokens settings) and added tokens of every option on each
family, byte-level BPE too (hf.js --added-variant --fast), and bge with each
BertNormalizer flag changed (--bert-variants). Zero differences; the
exhaustive checks and the corpora stay in make tokenizer-oracle(-all).

    python3 tests/oracle/test_oracle.py --binary build/tokvec \
        --oracle build/oracle --gpt2 data/gpt2 [unittest arguments]

Standard library only; each test runs one node process (which runs tokvec
tokenize --jsonl), so tests may run side by side.
"""
import argparse
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OPT = argparse.Namespace(binary="build/tokvec", oracle="build/oracle",
                         gpt2="data/gpt2")


def node(script, *args):
    """Runs tests/oracle/SCRIPT with ARGS; (exit status, its output)."""
    env = dict(os.environ,
               NODE_PATH=os.path.join(OPT.oracle, "node_modules"))
    r = subprocess.run(["node", os.path.join(HERE, script)] + list(args),
                       cwd=ROOT, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, check=False)
    return r.returncode, r.stdout


class Oracle(unittest.TestCase):
    def check(self, script, *args):
        rc, out = node(script, *args)
        sys.stdout.write(out)
        self.assertEqual(rc, 0, out[-3000:])
        self.assertIn(" 0 differences", out)

    def tiktoken(self, encoding, tokenizer):
        self.check("oracle.js", "corpus", "--tokvec", OPT.binary,
                   "--encoding", encoding, "--tokenizer", tokenizer,
                   "tests/data/the-verdict.txt")

    def hf(self, tokenizer, *more):
        self.check("hf.js", "check", "--fast", "1", "--tokvec", OPT.binary,
                   "--tokenizer", tokenizer, *more)

    def oracle_file(self, name):
        return os.path.join(OPT.oracle, name)

    def test_bpe_gpt2_matches_tiktoken(self):
        self.tiktoken("gpt2", OPT.gpt2)

    def test_bpe_cl100k_matches_tiktoken(self):
        self.tiktoken("cl100k_base", self.oracle_file("cl100k_base.tiktoken"))

    def test_bpe_o200k_matches_tiktoken(self):
        self.tiktoken("o200k_base", self.oracle_file("o200k_base.tiktoken"))

    def test_wordpiece_bge_matches_hf(self):
        self.hf("tests/data/bge/tokenizer.json")

    def test_wordpiece_bge_with_other_bert_normalizer_flags_matches_hf(self):
        # wordpiece.c's one-pass path is made from the flags: each changed
        self.hf("tests/data/bge/tokenizer.json", "--bert-variants", "1")

    def test_wordpiece_trained_matches_hf(self):
        self.hf(self.oracle_file("wp-trained.json"))

    def test_unigram_model2vec_matches_hf(self):
        self.hf("tests/data/unigram/model2vec-vocab-quantized.json")

    def test_unigram_sentencepiece_test_model_matches_hf(self):
        self.hf(self.oracle_file("spm-test_model.json"))

    def test_unigram_byte_fallback_matches_hf(self):
        self.hf("tests/data/unigram/debian-unigram.json")

    def test_unigram_stage_sequence_matches_hf(self):
        self.hf("tests/data/unigram/seq.json")

    def test_sentencepiece_bpe_matches_hf(self):
        self.hf("tests/data/bpe-spm/debian-bpe.json")

    def test_sentencepiece_bpe_llama_layout_matches_hf(self):
        self.hf(self.oracle_file("spm-debian-bpe-llama.json"))

    def test_bpe_affixes_fuse_unk_matches_hf(self):
        self.hf("tests/data/bpe-spm/affix.json")

    def test_added_tokens_wordpiece_match_hf(self):
        self.hf("tests/data/bge/tokenizer.json", "--added-variant", "1")

    def test_added_tokens_unigram_match_hf(self):
        self.hf("tests/data/unigram/model2vec-vocab-quantized.json",
                "--added-variant", "1")

    def test_added_tokens_unigram_strip_metaspace_first_match_hf(self):
        self.hf("tests/data/unigram/seq.json", "--added-variant", "1")

    def test_added_tokens_byte_level_bpe_match_hf(self):
        self.hf(self.oracle_file("gpt2-hf.json"), "--added-variant", "1",
                "--ids-only", "1")

    def test_added_tokens_sentencepiece_bpe_match_hf(self):
        self.hf("tests/data/bpe-spm/debian-bpe.json", "--added-variant", "1")


def main():
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--binary", default=OPT.binary)
    p.add_argument("--oracle", default=OPT.oracle)
    p.add_argument("--gpt2", default=OPT.gpt2)
    known, rest = p.parse_known_args()
    OPT.binary = os.path.abspath(known.binary)
    OPT.oracle = os.path.abspath(known.oracle)
    OPT.gpt2 = os.path.abspath(known.gpt2)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
