"""End-to-end tests of the Python and JavaScript clients (clients/) against a
real `tokvec serve` on a loopback port.

Run: /usr/bin/python3 tests/e2e/test_clients.py --binary build/tokvec
Python standard library + numpy; the JS tests need `node` (Debian nodejs, 18+)
and are skipped, with a message, when it is missing.
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

import numpy as np

import support as tc

TOP = tc.TOP
CLIENT_DIR = os.path.join(TOP, "clients", "python")
sys.path.insert(0, CLIENT_DIR)
import tokvec  # noqa: E402


def run_python(code, *args):
    """Runs code in a fresh interpreter with warnings as errors (and
    unraisable ones -- a ResourceWarning from a finalizer -- printed), the
    client on its path; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c",
         "import sys; sys.path.insert(0, %r)\n" % CLIENT_DIR + code]
        + list(args), capture_output=True, text=True, timeout=60)


class ClientTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.table = tc.temp_table("tokvec-clients-", 500, 24,
                                           "--context", "64", "--seed", "7")
        cls.server = tc.Server(cls.table)
        cls.key_server = tc.Server(cls.table, "--api-key", "s3cret")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.key_server.stop()
        shutil.rmtree(cls.tmp)

    def json_route(self, obj):
        """The server's decimal JSON answer as float32 (the reference)."""
        st, _, body = self.server.embed(obj)
        self.assertEqual(st, 200, body)
        return np.array(json.loads(body)["embeddings"], dtype=np.float32)

    def test_python_embed_numpy_equals_json_route_bit_for_bit(self):
        ids = [[1, 2, 3, 499], [0, 0, 7, 8]]
        with tokvec.Client(self.server.url) as c:
            x = c.embed(ids, start_position=5)
        self.assertEqual(x.shape, (2, 4, 24))
        self.assertEqual(x.dtype, np.float32)
        y = self.json_route({"inputs": ids, "start_position": 5})
        self.assertEqual(x.tobytes(), y.tobytes())

    def test_python_start_position_and_positions_false(self):
        with tokvec.Client(self.server.url) as c:
            x = c.embed([[5, 6]], start_position=3)
            t = c.embed([[5, 6]], positions=False)
            lists = c._embed_json([[5, 6]], 3, True)
        y = self.json_route({"inputs": [[0, 0, 0, 5, 6]]})
        self.assertEqual(x.tobytes(), y[:, 3:].tobytes())
        self.assertEqual(np.array(lists, dtype=np.float32).tobytes(),
                         x.tobytes())
        z = self.json_route({"inputs": [[5, 6]], "positions": False})
        self.assertEqual(t.tobytes(), z.tobytes())

    def test_python_pad_id_pads_a_ragged_batch(self):
        want = self.json_route({"inputs": [[7, 8, 9], [4, 0, 0]],
                                "start_position": 2})
        with tokvec.Client(self.server.url) as c:
            x = c.embed([[7, 8, 9], [4]], pad_id=0, start_position=2)
            self.assertEqual(x.tobytes(), want.tobytes())
            # pad_id on a rectangular batch changes nothing.
            r = c.embed([[7, 8, 9], [4, 0, 0]], pad_id=0, start_position=2)
            self.assertEqual(r.tobytes(), want.tobytes())
            x16 = c.embed([[7, 8, 9], [4]], pad_id=0, start_position=2,
                          dtype="float16")
            self.assertEqual(x16.tobytes(),
                             want.astype(np.float16).tobytes())
            with self.assertRaises(tokvec.TokvecError) as cm:
                c.embed([[7, 8, 9], [4]])
            self.assertEqual(cm.exception.status, 422)
            self.assertEqual(cm.exception.error_type, "ragged_batch")
            with self.assertRaises(tokvec.TokvecError) as cm:
                c.embed([[7, 8, 9], [4]], pad_id=500)
            self.assertEqual(cm.exception.error_type, "token_out_of_range")

    def test_python_client_closes_its_socket_when_collected(self):
        code = ("import gc, tokvec\n"
                "c = tokvec.Client(sys.argv[1]); c.embed([[1, 2]]); "
                "c.info()\n"
                "del c; gc.collect()\n"
                "with tokvec.Client(sys.argv[1]) as c:\n"
                "    c.embed([[1, 2]], pad_id=0)\n"
                "c.embed([3]); c.close(); c.close()\n"
                "print('ok')\n")
        r = run_python(code, self.server.url)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "ok\n", ""))

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
        env = dict(os.environ, TOKVEC_URL=self.server.url,
                   TOKVEC_KEY_URL=self.key_server.url,
                   TOKVEC_DEAD_URL="http://127.0.0.1:%d" % tc.free_port())
        r = subprocess.run(
            [node, "--test", "--test-reporter=tap",
             os.path.join(TOP, "clients", "js", "test")],
            env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Every test ran (none skipped for want of a server).
        self.assertIn("# skipped 0", r.stdout, r.stdout)


if __name__ == "__main__":
    tc.main()
