"""End-to-end tests of the Python and JavaScript clients (clients/) against a
real `tokvec serve` on a loopback port.

Run: /usr/bin/python3 tests/e2e/test_clients.py --binary build/tokvec
Python standard library + numpy; the JS tests need `node` (Debian nodejs, 18+)
and are skipped, with a message, when it is missing.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "clients", "python"))
import tokvec  # noqa: E402

BINARY = os.path.join(TOP, "build", "tokvec")
TIME_SCALE = float(os.environ.get("TOKVEC_TEST_TIME_SCALE", "1"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """tokvec serve on a temp table; stopped with SIGTERM."""

    def __init__(self, table, *args):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--table", table, "--port", str(self.port)]
            + list(args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 20 * TIME_SCALE
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("server exited: %s"
                                       % self.proc.stderr.read().decode())
                time.sleep(0.05)
        raise RuntimeError("server did not come up")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30 * TIME_SCALE)
        self.proc.stderr.close()


class ClientTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tokvec-clients-")
        cls.table = os.path.join(cls.tmp, "t.safetensors")
        subprocess.run([BINARY, "init", "--vocab", "500", "--dim", "24",
                        "--context", "64", "--seed", "7", "-o", cls.table],
                       check=True)
        cls.server = Server(cls.table)
        cls.key_server = Server(cls.table, "--api-key", "s3cret")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.key_server.stop()
        shutil.rmtree(cls.tmp)

    def test_python_embed_numpy_equals_json_route_bit_for_bit(self):
        ids = [[1, 2, 3, 499], [0, 0, 7, 8]]
        c = tokvec.Client(self.server.url)
        x = c.embed(ids, start_position=5)
        self.assertEqual(x.shape, (2, 4, 24))
        self.assertEqual(x.dtype, np.float32)
        with c:
            pass
        js = tokvec.Client(self.server.url)._embed_json(ids, 5, True)
        y = np.array(js, dtype=np.float32)
        self.assertEqual(x.tobytes(), y.tobytes())

    def test_python_embed_float16_and_bfloat16(self):
        c = tokvec.Client(self.server.url)
        x32 = c.embed([[4, 5, 6]])
        x16 = c.embed([[4, 5, 6]], dtype="float16")
        self.assertEqual(x16.dtype, np.float16)
        self.assertEqual(x16.tobytes(), x32.astype(np.float16).tobytes())
        xb = c.embed([[4, 5, 6]], dtype="bfloat16")
        self.assertEqual(xb.dtype, np.float32)
        # bf16 keeps the top 16 bits after round-to-nearest-even.
        bits = x32.view(np.uint32).astype(np.uint64)
        rne = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32)
        self.assertEqual(xb.view(np.uint32).tobytes(),
                         (rne << 16).astype(np.uint32).tobytes())

    def test_python_errors_carry_error_type(self):
        c = tokvec.Client(self.server.url)
        with self.assertRaises(tokvec.TokvecError) as cm:
            c.embed([[1, 500]])
        self.assertEqual(cm.exception.status, 422)
        self.assertEqual(cm.exception.error_type, "token_out_of_range")
        self.assertIn("500", cm.exception.message)

    def test_python_info_and_token(self):
        c = tokvec.Client(self.server.url)
        info = c.info()
        self.assertEqual((info["vocab_size"], info["dim"]), (500, 24))
        row = np.array(c.token(3), dtype=np.float32)
        x = c.embed([3], positions=False)
        self.assertEqual(row.tobytes(), x[0, 0].tobytes())

    def test_python_api_key(self):
        with self.assertRaises(tokvec.TokvecError) as cm:
            tokvec.Client(self.key_server.url).embed([1])
        self.assertEqual(cm.exception.status, 401)
        x = tokvec.Client(self.key_server.url, api_key="s3cret").embed([1])
        self.assertEqual(x.shape, (1, 1, 24))

    def test_python_without_numpy_returns_lists(self):
        code = (
            "import sys; sys.modules['numpy'] = None\n"
            "sys.path.insert(0, %r)\n"
            "import tokvec, json\n"
            "v = tokvec.Client(%r).embed([[1, 2]])\n"
            "assert isinstance(v, list) and len(v[0][0]) == 24, v\n"
            "print(json.dumps(v))\n"
            % (os.path.join(TOP, "clients", "python"), self.server.url))
        out = subprocess.run([sys.executable, "-c", code], check=True,
                             capture_output=True, text=True).stdout
        lists = np.array(__import__("json").loads(out), dtype=np.float32)
        x = tokvec.Client(self.server.url).embed([[1, 2]])
        self.assertEqual(lists.tobytes(), x.tobytes())

    def test_js_client(self):
        node = shutil.which("node") or shutil.which("nodejs")
        if not node:
            self.skipTest("node not installed (apt-get install nodejs)")
        env = dict(os.environ, TOKVEC_URL=self.server.url)
        r = subprocess.run(
            [node, "--test", os.path.join(TOP, "clients", "js", "test")],
            env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=BINARY)
    args, rest = ap.parse_known_args()
    BINARY = os.path.abspath(args.binary)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
