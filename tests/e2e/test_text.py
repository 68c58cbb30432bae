"""Text in (contract section 7) over HTTP: the tokenizer setting, GET
/info's tokenizer block, POST /tokenize and POST /decode, and text inputs
of POST /embed (windows, truncation, padding), with their errors.

The ids are checked against `tokvec tokenize` (whose ids the tokenizer
oracle, `make tokenizer-oracle`, checks against tiktoken) and against the
book's numbers. Needs `make data` (data/gpt2 and the default table).

Run: /usr/bin/python3 tests/e2e/test_text.py --binary build/tokvec
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support as tc  # noqa: E402  (the e2e support module)

GPT2 = os.path.join(tc.TOP, "data", "gpt2")
TABLE = os.path.join(tc.TOP, "data", "gpt2-256.safetensors")
VERDICT = os.path.join(tc.TOP, "tests", "data", "the-verdict.txt")
BOOK = ("Hello, do you like tea? <|endoftext|> In the sunlit terraces"
        "of someunknownPlace.")
BOOK_IDS = [15496, 11, 466, 345, 588, 8887, 30, 220, 50256, 554, 262, 4252,
            18250, 8812, 2114, 1659, 617, 34680, 27271, 13]
BOOK_BATCH = [[40, 367, 2885, 1464], [1807, 3619, 402, 271],
              [10899, 2138, 257, 7026], [15632, 438, 2016, 257],
              [922, 5891, 1576, 438], [568, 340, 373, 645],
              [1049, 5975, 284, 502], [284, 3285, 326, 11]]


def cli_tokenize(text, special=True):
    """`tokvec tokenize` of text: the reference ids."""
    argv = [tc.BINARY, "tokenize", "--tokenizer", GPT2]
    if not special:
        argv.append("--no-special")
    out = subprocess.run(argv + ["-"], input=text.encode(), check=True,
                         stdout=subprocess.PIPE).stdout
    return json.loads(out)


def post(srv, path, obj, headers=None, raw=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    body = raw if raw is not None else json.dumps(obj)
    st, hd, b = srv.request("POST", path, body, h)
    return st, json.loads(b) if b else None


class Setting(unittest.TestCase):
    """--tokenizer, TOKVEC_TOKENIZER and the config key, checked at start."""

    def test_info_names_the_tokenizer_when_one_is_loaded(self):
        srv = tc.Server(TABLE, "--tokenizer", GPT2)
        try:
            st, _, b = srv.get("/info")
            self.assertEqual(st, 200)
            self.assertEqual(json.loads(b)["tokenizer"], {
                "name": "gpt2", "vocab_size": 50257,
                "special_tokens": {"<|endoftext|>": 50256}})
            self.assertIn("tokenizer", srv.stderr())
        finally:
            srv.stop()

    def test_info_has_null_tokenizer_without_one(self):
        srv = tc.Server(TABLE)
        try:
            self.assertIsNone(json.loads(srv.get("/info")[2])["tokenizer"])
        finally:
            srv.stop()

    def test_env_var_and_config_key_set_the_tokenizer(self):
        srv = tc.Server(TABLE, env={"TOKVEC_TOKENIZER": GPT2})
        try:
            info = json.loads(srv.get("/info")[2])
            self.assertEqual(info["tokenizer"]["name"], "gpt2")
        finally:
            srv.stop()
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump({"tokenizer": GPT2}, f)
            f.flush()
            srv = tc.Server(TABLE, "--config", f.name)
            try:
                info = json.loads(srv.get("/info")[2])
                self.assertEqual(info["tokenizer"]["vocab_size"], 50257)
            finally:
                srv.stop()

    def test_tokenizer_past_the_tables_vocab_stops_start_up(self):
        with tempfile.TemporaryDirectory() as d:
            small = os.path.join(d, "small.safetensors")
            subprocess.run([tc.BINARY, "init", "--vocab", "1000", "--dim",
                            "8", "--context", "16", "-o", small],
                           check=True, stdout=subprocess.DEVNULL)
            p = subprocess.run([tc.BINARY, "serve", "--table", small,
                                "--port", str(tc.free_port()),
                                "--tokenizer", GPT2],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=30)
            self.assertEqual(p.returncode, 2)
            err = p.stderr.decode()
            self.assertIn("50257", err)
            self.assertIn("1000", err)

    def test_a_bad_tokenizer_file_stops_start_up(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "encoder.json")
            with open(bad, "w") as f:
                f.write("{\"a\": 0")
            for path in (bad, os.path.join(d, "missing.json")):
                p = subprocess.run([tc.BINARY, "serve", "--table", TABLE,
                                    "--port", str(tc.free_port()),
                                    "--tokenizer", path],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, timeout=30)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("tokenizer", p.stderr.decode())

    def test_reload_keeps_the_tokenizer(self):
        srv = tc.Server(TABLE, "--tokenizer", GPT2)
        try:
            import signal
            import time
            srv.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 10 * tc.TIME_SCALE
            while "reloaded" not in srv.stderr() and time.time() < deadline:
                time.sleep(0.05)
            self.assertIn("reloaded", srv.stderr())
            info = json.loads(srv.get("/info")[2])
            self.assertEqual(info["tokenizer"]["name"], "gpt2")
        finally:
            srv.stop()


if __name__ == "__main__":
    tc.main()
