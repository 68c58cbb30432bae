"""End-to-end contract checks: the real `tokvec serve` on a loopback port,
results compared bit for bit with numpy reading the table file itself.

Run: /usr/bin/python3 tests/e2e/test_contract.py --binary build/tokvec
Standard library + numpy. Where `import torch` works, the default-table
layout is also compared with PyTorch's nn.Embedding (skipped otherwise).
"""
import argparse
import base64
import http.client
import io
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
BINARY = os.path.join(TOP, "build", "tokvec")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_safetensors(path):
    """Independent reader: {name: np.ndarray} (F32/F16 only)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    hdr = json.loads(data[8:8 + n])
    out = {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        dt = {"F32": "<f4", "F16": "<f2"}[t["dtype"]]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e],
                                  dtype=dt).reshape(t["shape"])
    return out


class Server:
    def __init__(self, table, *args, env=None):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--table", table, "--port", str(self.port)]
            + list(args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=dict(os.environ, **(env or {})))
        self.wait_up()

    def wait_up(self):
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("server exited: "
                                   + self.proc.stderr.read().decode())
            time.sleep(0.05)
        raise RuntimeError("server did not come up")

    def request(self, method, path, body=None, headers=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port,
                                       timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def get(self, path, headers=None):
        return self.request("GET", path, headers=headers)

    def embed(self, obj, accept="application/json", query=""):
        return self.request("POST", "/embed" + query, json.dumps(obj),
                            {"Content-Type": "application/json",
                             "Accept": accept})

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=60)
        self.proc.stderr.close()
        return rc


def bf16_rne(x):
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


class Contract(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tokvec-contract-")
        cls.table = os.path.join(cls.tmp, "t.safetensors")
        subprocess.run([BINARY, "init", "--vocab", "1000", "--dim", "32",
                        "--context", "16", "--seed", "123", "-o", cls.table],
                       check=True)
        t = read_safetensors(cls.table)
        cls.tok, cls.pos = t["tok_emb.weight"], t["pos_emb.weight"]
        cls.srv = Server(cls.table, "--max-tokens", "64", "--max-batch", "8",
                         "--max-body-bytes", "4096")

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp)

    def expected(self, ids, start=0, positions=True):
        ids = np.array(ids)
        out = self.tok[ids]
        if positions:
            out = out + self.pos[start:start + ids.shape[1]][None]
        return out.astype(np.float32)

    def assert_error(self, resp, status, etype, *needles):
        st, hdr, body = resp
        self.assertEqual(st, status, body)
        e = json.loads(body)
        self.assertEqual(e["error_type"], etype)
        for n in needles:
            self.assertIn(n, e["error"])
        return hdr

    # -- semantics and formats --------------------------------------------
    def test_json_floats_are_shortest_repr_and_exact(self):
        ids = [[1, 2, 3], [999, 0, 7]]
        st, hdr, body = self.srv.embed({"inputs": ids, "start_position": 4})
        self.assertEqual(st, 200)
        self.assertEqual(hdr["Content-Type"], "application/json")
        j = json.loads(body)
        self.assertEqual(j["shape"], [2, 3, 32])
        self.assertEqual(j["dtype"], "float32")
        want = self.expected(ids, 4)
        got = np.array(j["embeddings"], dtype=np.float32)
        self.assertEqual(got.tobytes(), want.tobytes())
        # Every number is spelled as numpy's repr of the float32.
        text = body.decode()
        spelled = text[text.index('"embeddings":') + 13:]
        for tok, v in zip(spelled.replace("[", "").replace("]", "")
                          .rstrip("}").split(","), want.ravel()):
            self.assertEqual(tok, repr(np.float32(v)))

    def test_single_sequence_is_batch_of_one(self):
        st, _, body = self.srv.embed({"inputs": [5, 6]})
        self.assertEqual(json.loads(body)["shape"], [1, 2, 32])

    def test_raw_npy_base64_agree(self):
        ids = [[10, 20, 30, 40]]
        want = self.expected(ids)
        st, hdr, raw = self.srv.embed({"inputs": ids},
                                      "application/octet-stream")
        self.assertEqual(st, 200)
        self.assertEqual(hdr["X-Tokvec-Shape"], "1,4,32")
        self.assertEqual(hdr["X-Tokvec-Dtype"], "float32")
        self.assertEqual(int(hdr["Content-Length"]), len(raw))
        self.assertEqual(raw, want.tobytes())
        st, hdr, npy = self.srv.embed({"inputs": ids}, "application/x-npy")
        a = np.load(io.BytesIO(npy))
        self.assertEqual(a.shape, (1, 4, 32))
        self.assertEqual(a.tobytes(), want.tobytes())
        st, _, body = self.srv.embed({"inputs": ids,
                                      "encoding_format": "base64"})
        self.assertEqual(base64.b64decode(json.loads(body)["embeddings"]),
                         want.tobytes())

    def test_half_outputs_round_to_nearest_even(self):
        ids = [[1, 2]]
        want = self.expected(ids)
        st, hdr, b = self.srv.embed({"inputs": ids},
                                    "application/octet-stream",
                                    "?dtype=float16")
        self.assertEqual(hdr["X-Tokvec-Dtype"], "float16")
        self.assertEqual(b, want.astype(np.float16).tobytes())
        st, hdr, b = self.srv.embed({"inputs": ids},
                                    "application/octet-stream",
                                    "?dtype=bfloat16")
        self.assertEqual(b, bf16_rne(want).tobytes())

    def test_positions_false_and_pad_id(self):
        st, _, body = self.srv.embed({"inputs": [[3, 4]], "positions": False})
        got = np.array(json.loads(body)["embeddings"], dtype=np.float32)
        self.assertEqual(got.tobytes(),
                         self.expected([[3, 4]], positions=False).tobytes())
        st, _, body = self.srv.embed({"inputs": [[3, 4, 5], [6]],
                                      "pad_id": 0})
        got = np.array(json.loads(body)["embeddings"], dtype=np.float32)
        self.assertEqual(got.tobytes(),
                         self.expected([[3, 4, 5], [6, 0, 0]]).tobytes())

    def test_binary_request_with_query_options(self):
        ids = np.array([[7, 8, 9]], dtype="<i4")
        st, hdr, raw = self.srv.request(
            "POST", "/embed?start_position=2&positions=true", ids.tobytes(),
            {"Content-Type": "application/octet-stream",
             "X-Tokvec-Shape": "1,3", "Accept": "application/octet-stream"})
        self.assertEqual(st, 200, raw)
        self.assertEqual(raw, self.expected(ids, 2).tobytes())

    def test_tokens_info_health_ready_metrics(self):
        st, _, body = self.srv.get("/tokens/3")
        j = json.loads(body)
        self.assertEqual(j["id"], 3)
        self.assertEqual(np.array(j["embedding"], np.float32).tobytes(),
                         self.tok[3].tobytes())
        info = json.loads(self.srv.get("/info")[2])
        for k in ("name", "version", "vocab_size", "dim", "context_length",
                  "dtype", "positional", "tensors", "limits"):
            self.assertIn(k, info)
        self.assertEqual((info["vocab_size"], info["dim"],
                          info["context_length"]), (1000, 32, 16))
        self.assertEqual(json.loads(self.srv.get("/health")[2]),
                         {"status": "ok"})
        self.assertEqual(self.srv.get("/ready")[0], 200)
        m = self.srv.get("/metrics")[2].decode()
        for name in ("tokvec_requests_total", "tokvec_request_duration_"
                     "seconds_bucket", "tokvec_tokens_total",
                     "tokvec_response_bytes_total",
                     "tokvec_inflight_requests", "tokvec_queue_depth",
                     "tokvec_reloads_total", "tokvec_table_info"):
            self.assertIn(name, m)

    # -- errors -------------------------------------------------------------
    def test_every_error_status(self):
        s = self.srv
        self.assert_error(s.request("POST", "/embed", b"{nope",
                                    {"Content-Type": "application/json"}),
                          400, "invalid_json")
        self.assert_error(s.embed({"inputs": []}), 400, "invalid_request")
        self.assert_error(s.embed({"inputs": [[1, 2.5]]}), 400,
                          "invalid_request")
        self.assert_error(s.embed({"inputs": [[1]], "extra": 1}), 400,
                          "invalid_request", "extra")
        self.assert_error(s.embed({"inputs": [[1, 2], [3, 1000]]}), 422,
                          "token_out_of_range", "1000", "batch index 1",
                          "position 1")
        self.assert_error(s.embed({"inputs": [[-1]]}), 422,
                          "token_out_of_range", "-1")
        self.assert_error(s.embed({"inputs": [[1, 2]],
                                   "start_position": 15}),
                          422, "sequence_too_long")
        self.assert_error(s.embed({"inputs": [[1, 2], [3]]}), 422,
                          "ragged_batch")
        self.assert_error(s.embed({"inputs": [[1] * 9] * 8}), 413,
                          "payload_too_large")
        self.assert_error(s.embed({"inputs": [[1]] * 9}), 413,
                          "payload_too_large")
        self.assert_error(s.request("POST", "/embed", b"x" * 5000,
                                    {"Content-Type": "application/json"}),
                          413, "payload_too_large")
        self.assert_error(s.request("POST", "/embed", b"{}",
                                    {"Content-Type": "text/plain"}),
                          415, "unsupported_media_type")
        self.assert_error(s.embed({"inputs": [[1]]}, "text/html"), 406,
                          "not_acceptable")
        self.assert_error(s.get("/nope"), 404, "not_found")
        self.assert_error(s.get("/tokens/1000"), 422, "token_out_of_range")
        self.assert_error(s.get("/tokens/" + "9" * 40), 400,
                          "invalid_request")
        hdr = self.assert_error(s.get("/embed"), 405, "method_not_allowed")
        self.assertIn("POST", hdr["Allow"])

    def test_big_content_length_is_refused_without_reading(self):
        with socket.create_connection(("127.0.0.1", self.srv.port)) as c:
            c.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: "
                      b"application/json\r\nContent-Length: 1000000000\r\n"
                      b"\r\n")
            c.settimeout(5)
            resp = c.recv(4096)
        self.assertIn(b" 413 ", resp.split(b"\r\n")[0])


class Operations(unittest.TestCase):
    """Auth, limits, config precedence, reload, drain, overload."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tokvec-ops-")
        self.table = os.path.join(self.tmp, "t.safetensors")
        subprocess.run([BINARY, "init", "--vocab", "100", "--dim", "8",
                        "--context", "8", "-o", self.table], check=True)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_api_key_protects_work_routes_only(self):
        keyfile = os.path.join(self.tmp, "key")
        with open(keyfile, "w") as f:
            f.write("k3y\n")
        s = Server(self.table, "--api-key-file", keyfile)
        try:
            self.assertEqual(s.embed({"inputs": [1]})[0], 401)
            st, hdr, _ = s.request("POST", "/embed", b'{"inputs":[1]}',
                                   {"Authorization": "Bearer wrong"})
            self.assertEqual(st, 401)
            st, _, _ = s.request("POST", "/embed", b'{"inputs":[1]}',
                                 {"Authorization": "Bearer k3y"})
            self.assertEqual(st, 200)
            for p in ("/health", "/ready", "/metrics"):
                self.assertEqual(s.get(p)[0], 200)
            self.assertEqual(s.get("/info")[0], 401)
        finally:
            s.stop()

    def test_flag_beats_env_beats_file(self):
        cfg = os.path.join(self.tmp, "c.json")
        with open(cfg, "w") as f:
            json.dump({"max_tokens": 3, "max_batch": 3}, f)
        s = Server(self.table, "--config", cfg, "--max-tokens", "5",
                   env={"TOKVEC_MAX_TOKENS": "4", "TOKVEC_MAX_BATCH": "2"})
        try:
            lim = json.loads(s.get("/info")[2])["limits"]
            self.assertEqual(lim["max_tokens"], 5)
            self.assertEqual(lim["max_batch"], 2)
        finally:
            s.stop()

    def test_bad_setting_stops_startup_naming_it(self):
        r = subprocess.run([BINARY, "serve", "--table", self.table,
                            "--max-tokens", "zero"], capture_output=True,
                           text=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn("max-tokens", r.stderr)
        bad = os.path.join(self.tmp, "bad.safetensors")
        with open(bad, "wb") as f:
            f.write(b"\xff" * 20)
        r = subprocess.run([BINARY, "serve", "--table", bad, "--port",
                            str(free_port())], capture_output=True,
                           text=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad, r.stderr)

    def test_sighup_reload_good_and_corrupt(self):
        s = Server(self.table)
        try:
            before = s.embed({"inputs": [1]})[2]
            tmp = self.table + ".new"
            subprocess.run([BINARY, "init", "--vocab", "100", "--dim", "8",
                            "--context", "8", "--seed", "7", "-o", tmp],
                           check=True)
            os.rename(tmp, self.table)
            s.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 10
            while s.embed({"inputs": [1]})[2] == before:
                self.assertLess(time.time(), deadline)
                time.sleep(0.05)
            after = s.embed({"inputs": [1]})[2]
            with open(tmp, "wb") as f:
                f.write(b"\x08" + b"\0" * 7 + b"{broken")
            os.rename(tmp, self.table)
            s.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 10
            while 'result="failed"} 1' not in s.get("/metrics")[2].decode():
                self.assertLess(time.time(), deadline)
                time.sleep(0.05)
            self.assertEqual(s.embed({"inputs": [1]})[2], after)
        finally:
            self.assertEqual(s.stop(), 0)

    def big_table(self):
        big = os.path.join(self.tmp, "big.safetensors")
        subprocess.run([BINARY, "init", "--vocab", "4096", "--dim", "1024",
                        "--context", "8", "-o", big], check=True)
        return big

    def test_sigterm_drains_requests_in_flight(self):
        s = Server(self.big_table(), "--max-tokens", "65536", "--threads",
                   "1")
        body = json.dumps({"inputs": [[i % 4096 for i in range(8)]] * 1024,
                           "positions": False})
        results, stop = [], threading.Event()

        def client():  # keeps requests in flight until the server is gone
            while not stop.is_set():
                try:
                    results.append(s.request(
                        "POST", "/embed", body,
                        {"Accept": "application/octet-stream"}, timeout=60))
                except (ConnectionError, http.client.HTTPException):
                    return

        ts = [threading.Thread(target=client) for _ in range(4)]
        for t in ts:
            t.start()
        time.sleep(0.5)
        rc = s.stop(signal.SIGTERM)
        stop.set()
        for t in ts:
            t.join()
        self.assertEqual(rc, 0)
        ok = 0
        for st, hdr, b in results:
            if st == 200:  # answered: complete
                self.assertEqual(len(b), 1024 * 8 * 1024 * 4)
                self.assertEqual(len(b), int(hdr["Content-Length"]))
                ok += 1
            else:
                self.assertEqual(st, 503)
        self.assertGreater(ok, 0)

    def test_full_queue_answers_429(self):
        s = Server(self.big_table(), "--max-queue", "1", "--threads", "1",
                   "--max-tokens", "65536")
        body = json.dumps({"inputs": [[1] * 8] * 4096, "positions": False})
        codes = []

        def client():
            codes.append(s.request("POST", "/embed", body, {
                "Accept": "application/octet-stream"}, timeout=60)[0])

        ts = [threading.Thread(target=client) for _ in range(12)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        s.stop()
        self.assertIn(429, codes)
        self.assertIn(200, codes)
        self.assertEqual(set(codes) - {200, 429}, set())


class Torch(unittest.TestCase):
    def test_default_layout_matches_pytorch(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch not installed")
        tmp = tempfile.mkdtemp()
        try:
            p = os.path.join(tmp, "t.safetensors")
            subprocess.run([BINARY, "init", "--vocab", "300", "--dim", "64",
                            "--context", "32", "--seed", "123", "-o", p],
                           check=True)
            s = Server(p)
            try:
                torch.manual_seed(123)
                tok = torch.nn.Embedding(300, 64)
                pos = torch.nn.Embedding(32, 64)
                ids = [[1, 2, 3, 299], [5, 6, 7, 8]]
                with torch.no_grad():
                    want = (tok(torch.tensor(ids))
                            + pos(torch.arange(4))).numpy()
                raw = s.embed({"inputs": ids}, "application/octet-stream")[2]
                self.assertEqual(raw, want.tobytes())
            finally:
                s.stop()
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=BINARY)
    args, rest = ap.parse_known_args()
    BINARY = os.path.abspath(args.binary)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
