"""The support module of the end-to-end suites (tests/e2e/test_*.py import
it as `tc`; it holds no tests).

* `tc.BINARY`: the tokvec under test, set from --binary by `tc.main()`,
  the `__main__` of every suite (`tc.parse_args()` for a suite with its
  own main).
* `tc.Server`: the real `tokvec serve` on a free loopback port, waited for
  until /health answers; its stderr goes to a file (`.stderr()`), so a
  chatty access log can never fill a pipe and stall the server. HTTP
  helpers: get, request, embed, metric; `.stop()` sends SIGTERM.
* `tc.start_server()`: the same for suites that own the process (returns
  it, with the port and a fresh table).
* `tc.serve_env()`: the environment of a server started by a test (no
  tokenizer unless the test names one).
* `tc.free_port()`, `tc.read_safetensors()` (an independent numpy reader
  of table files; test_cli.py checks it against `tokvec lookup`, since
  every suite trusts it for expected values), `tc.bf16_rne()`.

Standard library + numpy.
"""
import argparse
import http.client
import json
import os
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


# A free port can be taken by another process (a suite running beside this
# one, a client's ephemeral port) before the server binds it: a server that
# cannot listen there is started again on another, this many times.
PORT_TRIES = 5


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


def serve_env(args=(), env=None):
    """The environment of a `tokvec serve ARGS...`: os.environ updated by
    env (a value None unsets the variable), and TOKVEC_TOKENIZER="" (ids
    only) unless env, the environment or args name a tokenizer or a config
    file. Without it every server would load the built-in default
    tokenizer (DATA_DIR/gpt2, docs/configuration.md): slower, and a warning line
    with every small table. A test of the default itself passes
    env={"TOKVEC_TOKENIZER": None}."""
    env = env or {}
    e = dict(os.environ, **env)
    named = (any(a.split("=")[0] in ("--tokenizer", "--config")
                 for a in args)
             or "TOKVEC_CONFIG" in e or "TOKVEC_TOKENIZER" in env)
    if not named:
        e.setdefault("TOKVEC_TOKENIZER", "")
    return {k: v for k, v in e.items() if v is not None}


def spawn(table, args, stderr, env=None, port=None):
    """Starts `tokvec serve [--table TABLE] --port P ARGS...` (stdout
    dropped, stderr to the given file; environment: serve_env); returns
    (proc, port) at once."""
    port = port or free_port()
    argv = [BINARY, "serve"]
    if table is not None:
        argv += ["--table", table]
    proc = subprocess.Popen(argv + ["--port", str(port)] + list(args),
                            stdout=subprocess.DEVNULL, stderr=stderr,
                            env=serve_env(args, env))
    return proc, port


def health_status(port, timeout=5):
    """GET /health on a new connection: the status (OSError if none)."""
    c = http.client.HTTPConnection("127.0.0.1", port,
                                   timeout=timeout * TIME_SCALE)
    try:
        c.request("GET", "/health")
        return c.getresponse().status
    finally:
        c.close()


def wait_healthy(proc, port):
    """Waits until /health on port answers 200; RuntimeError (the process
    killed) if it exits first or does not come up in 20 s (scaled)."""
    deadline = time.time() + 20 * TIME_SCALE
    while time.time() < deadline:
        try:
            if health_status(port) == 200:
                return
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError("server exited with %d" % proc.returncode)
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    raise RuntimeError("server did not come up")


def init_table(path, vocab, dim, *args):
    """`tokvec init --vocab V --dim D ARGS... -o path` (stdout dropped);
    returns path."""
    subprocess.run([BINARY, "init", "--vocab", str(vocab), "--dim",
                    str(dim), *args, "-o", path], check=True,
                   stdout=subprocess.DEVNULL)
    return path


def temp_table(prefix, vocab, dim, *args):
    """A new temporary directory (prefix) holding t.safetensors made by
    init_table; returns (directory, table path)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    return tmp, init_table(os.path.join(tmp, "t.safetensors"), vocab, dim,
                           *args)


def start_server(tmp, serve_args, stderr, vocab=100, dim=8, ctx=8,
                 init_args=()):
    """Makes a table in tmp, starts `tokvec serve` on it on a free port
    with serve_args (stderr to the given file) and waits for /health.
    Returns (proc, port, table); the caller stops the process."""
    table = init_table(os.path.join(tmp, "t.safetensors"), vocab, dim,
                       "--context", str(ctx), *init_args)
    for attempt in range(PORT_TRIES):
        proc, port = spawn(table, serve_args, stderr)
        try:
            wait_healthy(proc, port)
            return proc, port, table
        except RuntimeError:
            if proc.returncode != 1 or attempt == PORT_TRIES - 1:
                raise  # exit 1 is "cannot listen": the port was taken


class Server:
    """`tokvec serve TABLE --port P ARGS...`; waits for /health."""

    def __init__(self, table, *args, env=None, port=None):
        for attempt in range(1 if port else PORT_TRIES):
            self.log = tempfile.NamedTemporaryFile(
                prefix="tokvec-serve-", suffix=".log", delete=False)
            self.proc, self.port = spawn(table, args, self.log, env, port)
            self.url = "http://127.0.0.1:%d" % self.port
            try:
                self.wait_up()
                return
            except RuntimeError as e:
                if "cannot listen on" not in str(e) or \
                        attempt == PORT_TRIES - 1:
                    raise
                os.unlink(self.log.name)

    def stderr(self):
        with open(self.log.name, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_up(self):
        try:
            wait_healthy(self.proc, self.port)
        except RuntimeError as e:
            self.close_log()
            raise RuntimeError("%s: %s" % (e, self.stderr()))

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


def run(*args, check=True):
    """The binary with args (text output captured, 2 minutes at most); with
    check, a non-zero exit raises AssertionError with its stderr."""
    r = subprocess.run([BINARY] + list(args), capture_output=True,
                       text=True, timeout=120)
    if check and r.returncode:
        raise AssertionError("%s: %s" % (args, r.stderr))
    return r


def parse_args():
    """--binary PATH (default build/tokvec) into BINARY; returns argv for
    unittest (the program name and the arguments not ours)."""
    global BINARY
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=BINARY)
    args, rest = ap.parse_known_args()
    BINARY = os.path.abspath(args.binary)
    return [sys.argv[0]] + rest


def main():
    """The __main__ of a suite: `python3 tests/e2e/test_X.py --binary B
    [unittest arguments]`."""
    unittest.main(module="__main__", argv=parse_args(), verbosity=2)
