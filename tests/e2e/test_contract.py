"""Shared helpers of the end-to-end suites, and a check of the helpers.

test_server.py (the HTTP contract), test_cli.py and test_openapi.py import
this module as `tc`: `tc.BINARY` (set from --binary by the running suite),
`tc.free_port()`, `tc.read_safetensors()` (an independent numpy reader of
the table files), `tc.bf16_rne()` and `tc.Server` (the real `tokvec serve`
on a free loopback port; its stderr goes to a file, so a chatty access log
can never fill a pipe and stall the server).

The one test here checks the reader itself against `tokvec lookup`, since
every other suite trusts it to compute expected values.

Run: /usr/bin/python3 tests/e2e/test_contract.py --binary build/tokvec
Standard library + numpy.
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
BINARY = os.path.join(TOP, "build", "tokvec")
# Deadlines are multiplied by this (make valgrind runs the server ~20x slower).
TIME_SCALE = float(os.environ.get("TOKVEC_TEST_TIME_SCALE", "1"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_safetensors(path, widen=False):
    """Independent reader: {name: np.ndarray} of the file's tensors.

    As stored: F32 '<f4', F16 '<f2', BF16 the raw bits as '<u2'. With
    widen=True every one is float32 (F16 widened by numpy, BF16 by moving
    its bits into the high half of a float32: both exact). The file's
    "__metadata__" (or {}) is under the key "__metadata__"."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    hdr = json.loads(data[8:8 + n])
    out = {"__metadata__": hdr.get("__metadata__", {})}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = data[8 + n + b:8 + n + e]
        dt = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}.get(t["dtype"])
        if dt is None:
            continue
        a = np.frombuffer(raw, dtype=dt).reshape(t["shape"])
        if widen and t["dtype"] == "F16":
            a = a.astype(np.float32)
        elif widen and t["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = a
    return out


def bf16_rne(x):
    """float32 -> bfloat16 bits, round to nearest even (finite inputs)."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


class Server:
    """`tokvec serve TABLE --port P ARGS...`; waits for /health."""

    def __init__(self, table, *args, env=None, port=None):
        self.port = port or free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = tempfile.NamedTemporaryFile(prefix="tokvec-serve-",
                                               suffix=".log", delete=False)
        argv = [BINARY, "serve"]
        if table is not None:
            argv += ["--table", table]
        self.proc = subprocess.Popen(
            argv + ["--port", str(self.port)] + list(args),
            stdout=subprocess.DEVNULL, stderr=self.log,
            env=dict(os.environ, **(env or {})))
        self.wait_up()

    def stderr(self):
        with open(self.log.name, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_up(self):
        deadline = time.time() + 20 * TIME_SCALE
        while time.time() < deadline:
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                self.close_log()
                raise RuntimeError("server exited: " + self.stderr())
            time.sleep(0.02)
        self.proc.kill()
        raise RuntimeError("server did not come up")

    def connect(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout * TIME_SCALE)

    def request(self, method, path, body=None, headers=None, timeout=30):
        c = self.connect(timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def get(self, path, headers=None):
        return self.request("GET", path, headers=headers)

    def embed(self, obj, accept="application/json", query="", headers=None):
        h = {"Content-Type": "application/json", "Accept": accept}
        h.update(headers or {})
        return self.request("POST", "/embed" + query, json.dumps(obj), h)

    def metric(self, name):
        """The value of one sample line `name value` of /metrics."""
        text = self.get("/metrics")[2].decode()
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def close_log(self):
        try:
            self.log.close()
        except OSError:
            pass

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout * TIME_SCALE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self.close_log()
        return rc

    def __del__(self):
        try:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.unlink(self.log.name)
        except Exception:
            pass


class Reader(unittest.TestCase):
    def test_reader_agrees_with_tokvec_lookup(self):
        tmp = tempfile.mkdtemp(prefix="tokvec-reader-")
        try:
            for dtype in ("f32", "f16", "bf16"):
                p = os.path.join(tmp, dtype + ".safetensors")
                subprocess.run([BINARY, "init", "--vocab", "50", "--dim", "6",
                                "--context", "8", "--dtype", dtype, "-o", p],
                               check=True, stdout=subprocess.DEVNULL)
                t = read_safetensors(p, widen=True)
                r = subprocess.run([BINARY, "lookup", "--table", p, "7", "3"],
                                   check=True, capture_output=True,
                                   text=True)
                got = np.array(json.loads(r.stdout)["embeddings"],
                               dtype=np.float32)
                want = (t["tok_emb.weight"][[7, 3]]
                        + t["pos_emb.weight"][:2]).astype(np.float32)
                self.assertEqual(got.reshape(want.shape).tobytes(),
                                 want.tobytes(), dtype)
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=BINARY)
    args, rest = ap.parse_known_args()
    BINARY = os.path.abspath(args.binary)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
