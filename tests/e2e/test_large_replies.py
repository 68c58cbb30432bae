#!/usr/bin/python3
"""Large replies made as they are sent (docs/performance.md, "Large
replies"): raw and npy answers to /embed past the small-job lane are made a
chunk at a time on the HTTP thread when the socket takes more, instead of
whole into a buffer first.

What must hold: the bytes are those numpy computes from the table (every
output dtype, table dtype, input kind; rows longer than a chunk; npy
headers); a client that reads slowly gets them all; one that stops reading
holds its reply's bytes of max_inflight_bytes (the gauge says so) but no
worker and no reply-sized buffer; one that disconnects mid-reply gives
them back (gauge back to 0, logged 499); one too slow for the send
deadline is cut (408) and gives them back too.

Run: /usr/bin/python3 tests/e2e/test_large_replies.py --binary build/tokvec
Standard library + numpy; about 20 s.
"""
import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support as tc  # noqa: E402  (the e2e support module)

RAW, NPY = "application/octet-stream", "application/x-npy"
GPT2 = os.path.join(tc.TOP, "data", "gpt2")


_SANITIZED = {}


def sanitized():
    """The binary under test was built with ASan (make sanitize): its
    memory and speed are not a plain build's."""
    if tc.BINARY not in _SANITIZED:
        with open(tc.BINARY, "rb") as f:
            _SANITIZED[tc.BINARY] = b"__asan_init" in f.read()
    return _SANITIZED[tc.BINARY]


def wait_until(cond, timeout, what):
    deadline = time.time() + timeout * tc.TIME_SCALE * (
        4 if sanitized() else 1)
    while not cond():
        if time.time() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


def post(body, accept, query="", extra=b"", ctype=b"application/json"):
    if isinstance(body, str):
        body = body.encode()
    return (b"POST /embed" + query.encode() + b" HTTP/1.1\r\n"
            b"Host: localhost\r\nContent-Type: " + ctype + b"\r\n"
            b"Accept: " + accept.encode() + b"\r\nContent-Length: " +
            str(len(body)).encode() + b"\r\n" + extra + b"\r\n" + body)


def read_head(s):
    """Reads one response's head; returns (status, headers, body bytes
    already read)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise AssertionError("closed before the head: %r" % buf)
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), hdrs, rest


def rss_anon_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def npy_header(descr, shape):
    """numpy's .npy v1.0 header, as tokvec writes it (64-byte aligned)."""
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(n) for n in shape) +
        ("," if len(shape) == 1 else ""))
    pad = 64 - (10 + len(d) + 1) % 64
    d += " " * (pad % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode()


class Chunked(unittest.TestCase):
    """One server per table; every case is a whole reply checked byte for
    byte."""

    def serve(self, vocab, dim, *args, dtype="f32", ctx=1024, tok=False):
        tmp, table = tc.temp_table("tokvec-large-", vocab, dim, "--context",
                                   str(ctx), "--dtype", dtype)
        self.addCleanup(shutil.rmtree, tmp, True)
        extra = ["--tokenizer", GPT2] if tok else []
        srv = tc.Server(table, "--threads", "2", *extra, *args)
        # exit status 0: no leak (ASan), nothing left in flight
        self.addCleanup(lambda: self.assertEqual(srv.stop(), 0))
        t = tc.read_safetensors(table, widen=True)
        return srv, t["tok_emb.weight"], t["pos_emb.weight"]

    def expected(self, tok, pos, ids, start, out_dtype, kind, positions=True):
        ids = np.asarray(ids, dtype=np.int64)
        B, S = ids.shape
        x = tok[ids]
        if positions:
            x = x + pos[start:start + S][None, :, :]
        x = x.astype(np.float32)
        if out_dtype == "float16":
            data, descr = x.astype("<f2").tobytes(), "<f2"
        elif out_dtype == "bfloat16":
            data, descr = tc.bf16_rne(x).astype("<u2").tobytes(), "<u2"
        else:
            data, descr = x.astype("<f4").tobytes(), "<f4"
        if kind == NPY:
            return npy_header(descr, (B, S, tok.shape[1])) + data
        return data

    def check(self, srv, body, accept, want, query="", headers=None):
        h = {"Content-Type": "application/json", "Accept": accept}
        h.update(headers or {})
        st, hdrs, got = srv.request("POST", "/embed" + query, body, h)
        self.assertEqual(st, 200, got[:300])
        self.assertEqual(len(got), len(want))
        self.assertTrue(got == want, "bytes differ from numpy's")
        return hdrs

    def test_every_chunked_format_and_dtype_is_numpys_bytes(self):
        for table_dtype in ("f32", "f16", "bf16"):
            srv, tok, pos = self.serve(1000, 256, dtype=table_dtype)
            ids = [[(b * 37 + s * 11) % 1000 for s in range(300)]
                   for b in range(4)]
            for kind in (RAW, NPY):
                for dt in ("float32", "float16", "bfloat16"):
                    with self.subTest(table=table_dtype, kind=kind, dt=dt):
                        want = self.expected(tok, pos, ids, 7, dt, kind)
                        self.assertGreater(len(want), 256 << 10)
                        hdrs = self.check(
                            srv, json.dumps({"inputs": ids,
                                             "start_position": 7}),
                            kind, want, "?dtype=" + dt)
                        self.assertEqual(hdrs.get("X-Tokvec-Shape"),
                                         "4,300,256")
            # ids as a binary body, and without positions
            ids = [[(b * 5 + s) % 1000 for s in range(512)]
                   for b in range(3)]
            packed = struct.pack("<%di" % (3 * 512), *sum(ids, []))
            for kind in (RAW, NPY):
                with self.subTest(table=table_dtype, kind=kind, body="bin"):
                    want = self.expected(tok, pos, ids, 0, "float32", kind,
                                         positions=False)
                    self.check(srv, packed, kind, want, "?positions=false",
                               {"Content-Type": "application/octet-stream",
                                "X-Tokvec-Shape": "3,512"})

    def test_a_padded_batch_is_padded_in_every_chunk(self):
        srv, tok, pos = self.serve(1000, 256)
        rows = [[(b * 13 + s) % 1000 for s in range(100 + 150 * b)]
                for b in range(4)]
        S = max(len(r) for r in rows)
        padded = [r + [3] * (S - len(r)) for r in rows]
        for kind in (RAW, NPY):
            with self.subTest(kind=kind):
                want = self.expected(tok, pos, padded, 0, "float32", kind)
                self.check(srv, json.dumps({"inputs": rows, "pad_id": 3}),
                           kind, want)

    def test_rows_longer_than_a_chunk_are_cut_and_joined(self):
        # 40,000 floats a row: 160,000 bytes, more than one 128 KiB chunk;
        # float16 rows (80,000 bytes) end chunks mid-way too.
        srv, tok, pos = self.serve(16, 40000, ctx=8)
        ids = [[(b * 3 + s) % 16 for s in range(8)] for b in range(2)]
        for kind in (RAW, NPY):
            for dt in ("float32", "float16", "bfloat16"):
                with self.subTest(kind=kind, dt=dt):
                    want = self.expected(tok, pos, ids, 0, dt, kind)
                    self.check(srv, json.dumps({"inputs": ids}), kind, want,
                               "?dtype=" + dt)

    @unittest.skipUnless(os.path.exists(os.path.join(GPT2, "vocab.bpe")),
                         "no GPT-2 tokenizer in data/gpt2 (make data)")
    def test_texts_answered_in_chunks(self):
        srv, tok, pos = self.serve(50257, 64, tok=True)
        texts = ["The quick brown fox jumps over the lazy dog. " * 60,
                 "Large replies are made a chunk at a time. " * 50]
        body = json.dumps({"inputs": texts, "pad_id": 0})
        st, _, js = srv.request("POST", "/embed", body,
                                {"Content-Type": "application/json"})
        self.assertEqual(st, 200, js[:300])
        ids = json.loads(js)["input_ids"]
        S = max(len(r) for r in ids)
        self.assertIn(0, json.loads(js)["attention_mask"][1])
        ids = [r + [0] * (S - len(r)) for r in ids]
        for kind in (RAW, NPY):
            with self.subTest(kind=kind):
                want = self.expected(tok, pos, ids, 0, "float32", kind)
                self.assertGreater(len(want), 256 << 10)
                self.check(srv, body, kind, want)


class Readers(unittest.TestCase):
    """Clients that read slowly, stop, or leave mid-reply."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tokvec-large-")
        self.logpath = os.path.join(self.tmp, "server.log")
        self.table = tc.init_table(os.path.join(self.tmp, "t.safetensors"),
                                   1000, 256, "--context", "1024")
        t = tc.read_safetensors(self.table, widen=True)
        self.tok, self.pos = t["tok_emb.weight"], t["pos_emb.weight"]
        self.srv = None

    def tearDown(self):
        if self.srv:
            self.assertEqual(self.srv.stop(), 0)
        shutil.rmtree(self.tmp, True)

    def start(self, *args):
        self.srv = tc.Server(self.table, "--access-log", "true", *args)
        self.port = self.srv.port

    def gauge(self):
        return self.srv.metric("tokvec_inflight_reply_bytes")

    def request(self, B=32, S=128, accept=RAW, query=""):
        ids = [[(b * 31 + s * 7) % 1000 for s in range(S)] for b in range(B)]
        want = self.tok[np.asarray(ids)] + self.pos[:S][None]
        want = want.astype("<f4").tobytes()
        if accept == NPY:
            want = npy_header("<f4", (B, S, 256)) + want
        return post(json.dumps({"inputs": ids}), accept, query), want

    def connect(self, rcvbuf=None):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.addCleanup(s.close)
        return s

    def busy_worker_request(self):
        """A JSON /embed too large for the small-job lane: needs a worker.
        Its status."""
        ids = [[s % 1000 for s in range(64)] for _ in range(4)]
        st, _, _ = self.srv.request("POST", "/embed", json.dumps(
            {"inputs": ids}), {"Content-Type": "application/json"})
        return st

    def access_lines(self):
        return [ln for ln in self.srv.stderr().splitlines()
                if "path=/embed" in ln]

    def test_a_slow_reader_gets_every_byte_of_each_format(self):
        self.start("--threads", "1")
        for accept in (RAW, NPY):
            with self.subTest(accept=accept):
                req, want = self.request(32, 128, accept)
                s = self.connect(rcvbuf=256 << 10)
                s.sendall(req)
                st, hdrs, got = read_head(s)
                self.assertEqual(st, 200)
                n = int(hdrs["content-length"])
                self.assertEqual(n, len(want))
                while len(got) < n:
                    chunk = s.recv(65536)
                    self.assertTrue(chunk, "closed at %d of %d" % (
                        len(got), n))
                    got += chunk
                    time.sleep(0.001)
                self.assertTrue(got == want, "bytes differ")
                # in the meantime the one worker served others
                self.assertEqual(self.busy_worker_request(), 200)
        wait_until(lambda: self.gauge() == 0, 10, "the gauge to be 0")

    def test_readers_that_stop_hold_the_budget_not_a_worker_or_memory(self):
        # 24 replies of 4 MiB that nobody reads: each holds its 4 MiB of
        # max_inflight_bytes until its client leaves, but no buffer of
        # that size (RssAnon grows by about a chunk per reply, not 96 MiB)
        # and no worker: the one worker still answers. Then they leave:
        # every byte is given back, each cut reply logged 499.
        self.start("--threads", "1", "--max-inflight-bytes", "256MiB",
                   "--request-timeout", "120")
        req, want = self.request()
        rss0 = rss_anon_kb(self.srv.proc.pid)
        readers = []
        for _ in range(24):
            s = self.connect(rcvbuf=4096)
            s.sendall(req)
            readers.append(s)
        wait_until(lambda: self.gauge() == 24 * len(want), 30,
                   "every reply to be under way")
        self.assertEqual(self.busy_worker_request(), 200)
        grown_mb = (rss_anon_kb(self.srv.proc.pid) - rss0) / 1024
        # (ASan keeps freed memory in quarantine; valgrind's own memory
        # counts under it too)
        if not sanitized() and tc.TIME_SCALE == 1:
            self.assertLess(grown_mb, 40, "RssAnon grew %.0f MB" % grown_mb)
        for s in readers:
            s.close()
        wait_until(lambda: self.gauge() == 0, 30, "the gauge to be 0")
        wait_until(lambda: self.srv.metric(
            'tokvec_requests_total{route="/embed",code="499"}') == 24, 10,
            "24 replies cut by their clients")

    def test_a_client_that_leaves_mid_reply_gives_its_bytes_back(self):
        self.start("--threads", "2")
        for accept in (RAW, NPY):
            for how in ("close", "reset"):
                with self.subTest(accept=accept, how=how):
                    # 16 MiB: more than the socket buffers hold
                    req, want = self.request(64, 256, accept)
                    s = self.connect(rcvbuf=256 << 10)
                    s.sendall(req)
                    st, _, got = read_head(s)
                    self.assertEqual(st, 200)
                    while len(got) < (1 << 20):
                        chunk = s.recv(65536)
                        self.assertTrue(chunk)
                        got += chunk
                    self.assertTrue(got == want[:len(got)], "bytes differ")
                    if how == "reset":
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                     struct.pack("ii", 1, 0))
                    s.close()
                    wait_until(lambda: self.gauge() == 0, 10,
                               "the gauge to be 0")
        wait_until(lambda: sum("status=499" in ln
                               for ln in self.access_lines()) == 4, 10,
                   "four 499 lines: %s" % self.access_lines())
        # and the server still answers in full
        req, want = self.request(32, 128)
        s = self.connect()
        s.sendall(req)
        st, _, got = read_head(s)
        while len(got) < len(want):
            chunk = s.recv(1 << 20)
            self.assertTrue(chunk)
            got += chunk
        self.assertTrue(got == want, "bytes differ")

    def test_a_reader_too_slow_for_the_deadline_is_cut_408(self):
        # 4 MiB at >= 32 MiB/s: cut after max(2 s, 0.125 s); the client
        # reads 4 KB every 0.2 s (libmicrohttpd's idle limit never fires).
        self.start("--request-timeout", "2", "--min-send-rate", "32MiB")
        req, want = self.request()
        s = self.connect(rcvbuf=4096)
        s.sendall(req)

        def cut():
            try:
                s.recv(4096)
            except OSError:
                pass
            time.sleep(0.2)
            return any("status=408" in ln for ln in self.access_lines())
        wait_until(cut, 20, "the reply to be cut")
        wait_until(lambda: self.gauge() == 0, 10, "the gauge to be 0")


if __name__ == "__main__":
    tc.main()
