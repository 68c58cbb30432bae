"""Hostile clients against the real `tokvec serve` on loopback.

Slow header tricklers (slowloris), a 1 GB Content-Length, truncated bodies,
clients hanging up in the middle of large binary replies, pipelining,
header floods, 1000+ concurrent connections and a catalogue of malformed
/embed bodies. Throughout: the server stays up, normal clients keep being
answered promptly, every malformed /embed gets a JSON 4xx (never a 5xx),
and the server's RSS (/proc/PID/status VmRSS) stays bounded.

Run: /usr/bin/python3 tests/e2e/test_hostile.py --binary build/tokvec
Standard library only; about 30-60 s; every load stops by itself.
"""
import json
import os
import random
import resource
import select
import selectors
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402  (the e2e support module)
from support import start_server  # noqa: E402

VOCAB, DIM, CTX = 1000, 256, 1024
# Sanitizer builds (build-san/) are several times slower: looser timings.
SLOW = 1.0


def raise_nofile(want=4096):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < new:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def parse_responses(buf):
    """Parses as many complete HTTP/1.1 responses as buf holds.
    Returns ([(status, headers, body)], rest)."""
    out = []
    while True:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return out, buf
        head = buf[:end].decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        hdrs = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        rest = buf[end + 4:]
        if "content-length" in hdrs:
            n = int(hdrs["content-length"])
            if len(rest) < n:
                return out, buf
            body, buf = rest[:n], rest[n:]
        elif hdrs.get("transfer-encoding", "").lower() == "chunked":
            body, pos = b"", 0
            while True:
                le = rest.find(b"\r\n", pos)
                if le < 0:
                    return out, buf
                size = int(rest[pos:le].split(b";")[0], 16)
                if len(rest) < le + 2 + size + 2:
                    return out, buf
                body += rest[le + 2:le + 2 + size]
                pos = le + 2 + size + 2
                if size == 0:
                    break
            buf = rest[pos:]
        else:
            body, buf = rest, b""
        out.append((status, hdrs, body))


def serve_logged(prefix, args, *table):
    """start_server in a new temporary directory (prefix) with the server's
    stderr in server.log there: (directory, log file, process, port)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    log = open(os.path.join(tmp, "server.log"), "wb")
    proc, port, _ = start_server(tmp, args, log, *table)
    return tmp, log, proc, port


def terminate(proc, timeout):
    """SIGTERM, then SIGKILL after timeout seconds; the exit status."""
    proc.terminate()
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def open_nonblocking(port, n):
    """n non-blocking sockets, each connecting to port (not waited for)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    return socks


def raw_exchange(port, data, timeout=10.0, want=1, half_close=False):
    """Sends data on a fresh connection; reads until `want` responses are
    complete, the peer closes, or timeout. Returns (responses, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        # A bytearray grows in place, and the responses are parsed only
        # when the socket has nothing more waiting: a 16 MiB reply is not
        # copied once per chunk.
        buf, got, closed = bytearray(), [], False
        deadline = time.time() + timeout
        while len(got) < want and time.time() < deadline:
            s.settimeout(max(0.05, deadline - time.time()))
            try:
                chunk = s.recv(1 << 20)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            buf += chunk
            if not select.select([s], [], [], 0)[0]:
                got, _ = parse_responses(bytes(buf))
        if len(got) < want:
            got, _ = parse_responses(bytes(buf))
        return got, closed
    finally:
        s.close()


def post(body, ctype="application/json", extra=b"", path=b"/embed"):
    if isinstance(body, str):
        body = body.encode()
    head = (b"POST " + path + b" HTTP/1.1\r\nHost: localhost\r\n"
            + (b"Content-Type: " + ctype.encode() + b"\r\n" if ctype else b"")
            + b"Content-Length: " + str(len(body)).encode() + b"\r\n" + extra
            + b"\r\n")
    return head + body


def health(port):
    got, _ = raw_exchange(port, b"GET /health HTTP/1.1\r\nHost: localhost\r\n"
                          b"Connection: close\r\n\r\n", timeout=5)
    return got[0][0] if got else None


HOSTILE_ORDER = [
    "test_slow_header_tricklers_do_not_stop_normal_requests",
    "test_a_huge_content_length_is_413_at_once",
    "test_truncated_bodies_get_an_error_or_a_close",
    "test_hanging_up_mid_response_leaves_the_server_whole",
    "test_pipelined_requests_are_answered_in_order",
    "test_header_floods_are_refused",
    "test_1100_concurrent_connections_are_served_or_refused",
    "test_malformed_bodies_are_json_4xx",
    "test_rss_stays_bounded_after_every_attack",
]


class Hostile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.nofile = raise_nofile(4096)  # inherited by the server
        cls.tmp, cls.log, cls.proc, cls.port = serve_logged(
            "tokvec-hostile-",
            ["--threads", "2", "--max-connections", "1200",
             "--access-log", "false", "--log-level", "warn"],
            VOCAB, DIM, CTX, ["--seed", "7"])
        # Warm up every path once, then take the baseline RSS.
        for _ in range(20):
            cls.embed_ok()
            raw_exchange(cls.port, post('{"inputs":[[1,2],[3,4]]}',
                         extra=b"Accept: application/octet-stream\r\n"))
        # ... including big replies, several at once: the allocator's high
        # water mark is part of the baseline, growth after it is not.
        big = post(struct.pack("<%di" % (16 * 1024),
                               *[i % VOCAB for i in range(16 * 1024)]),
                   "application/octet-stream",
                   b"X-Tokvec-Shape: 16,1024\r\n"
                   b"Accept: application/octet-stream\r\n")
        ts = [threading.Thread(target=raw_exchange, args=(cls.port, big, 30))
              for _ in range(12)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        time.sleep(0.3)
        cls.rss0 = rss_kb(cls.proc.pid)
        cls.report = {"rss_start_kb": cls.rss0}

    @classmethod
    def tearDownClass(cls):
        alive = cls.proc.poll() is None
        if alive:
            cls.report["rss_end_kb"] = rss_kb(cls.proc.pid)
            rc = terminate(cls.proc, 40)
            cls.report["server_exit"] = rc
            if rc != 0:  # SIGTERM drains and exits 0; ASan leaks exit 1
                cls.sanitizer_report = True
        else:
            cls.sanitizer_report = True
        cls.log.close()
        print("\nhostile report: " + json.dumps(cls.report), file=sys.stderr)
        with open(os.path.join(cls.tmp, "server.log"), "rb") as f:
            tail = f.read()[-2000:]
        if b"ERROR" in tail or b"Sanitizer" in tail or b"runtime error" \
                in tail:
            print(tail.decode("utf-8", "replace"), file=sys.stderr)
            cls.sanitizer_report = True

    def setUp(self):
        self.t0 = time.time()

    def tearDown(self):
        if self.proc.poll() is None:
            self.report.setdefault("per_test", {})[self._testMethodName] = {
                "seconds": round(time.time() - self.t0, 1),
                "rss_kb": rss_kb(self.proc.pid)}

    @classmethod
    def health(cls):
        return health(cls.port)

    @classmethod
    def embed_ok(cls, timeout=10):
        t0 = time.time()
        got, _ = raw_exchange(cls.port, post('{"inputs":[[5,6,7]]}'),
                              timeout=timeout)
        assert got and got[0][0] == 200, got
        assert json.loads(got[0][2])["shape"] == [1, 3, DIM]
        return time.time() - t0

    def assert_alive(self):
        self.assertIsNone(self.proc.poll(), "server exited")
        self.assertEqual(self.health(), 200)

    def assert_json_4xx(self, resp, what):
        status, hdrs, body = resp
        self.assertTrue(400 <= status < 500, "%s: status %d %r"
                        % (what, status, body[:200]))
        self.assertIn("application/json", hdrs.get("content-type", ""), what)
        j = json.loads(body)
        self.assertIsInstance(j.get("error"), str, what)
        self.assertIsInstance(j.get("error_type"), str, what)

    # -- 1. slowloris ------------------------------------------------------
    def test_slow_header_tricklers_do_not_stop_normal_requests(self):
        n = 500
        socks = open_nonblocking(self.port, n)
        time.sleep(0.2)
        for s in socks:
            try:
                s.send(b"POST /embed HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            except OSError:
                pass
        worst, done, t_end = 0.0, 0, time.time() + 6
        rounds = 0
        while time.time() < t_end:
            # one more header byte from every slow client ...
            for s in socks:
                try:
                    s.send(b"a" if rounds % 8 != 7 else b"\r\nX-Slow: ")
                except OSError:
                    pass
            rounds += 1
            # ... while normal clients are answered promptly.
            for _ in range(3):
                worst = max(worst, self.embed_ok(timeout=5))
                done += 1
            time.sleep(0.2)
        still_open = 0
        for s in socks:
            try:
                s.send(b"Y")
                still_open += 1
            except OSError:
                pass
            s.close()
        self.report["slowloris"] = {"slow_clients": n, "normal_requests": done,
                                    "worst_latency_s": round(worst, 3),
                                    "slow_still_open": still_open}
        self.assertLess(worst, 1.0 * SLOW)
        self.assert_alive()

    # -- 2. 1 GB Content-Length --------------------------------------------
    def test_a_huge_content_length_is_413_at_once(self):
        for cl, expect in ((b"1000000000", 413), (b"1073741824", 413),
                           (b"99999999999999999999999", 413)):
            for extra in (b"", b"Expect: 100-continue\r\n"):
                t0 = time.time()
                got, _ = raw_exchange(
                    self.port, b"POST /embed HTTP/1.1\r\nHost: localhost\r\n"
                    b"Content-Type: application/json\r\nContent-Length: "
                    + cl + b"\r\n" + extra + b"\r\n" + b"{" * 1000,
                    timeout=5)
                dt = time.time() - t0
                self.assertTrue(got, "no answer to Content-Length %s" % cl)
                self.assertEqual(got[0][0], expect, cl)
                if len(cl) <= 19:
                    self.assert_json_4xx(got[0], "Content-Length "
                                         + cl.decode())
                else:
                    # Past 2^64: libmicrohttpd refuses it itself, before
                    # tokvec sees the request (its own body, not JSON).
                    self.report["content_length_2^64+"] = [
                        got[0][0], got[0][1].get("content-type", "")]
                self.assertLess(dt, 1.0 * SLOW)
        self.report["content_length_1GB"] = "413 at once"
        self.assert_alive()

    # -- 3. truncated bodies -----------------------------------------------
    def test_truncated_bodies_get_an_error_or_a_close(self):
        body = b'{"inputs":[[1,2,3],[4,5,6]]}'
        outcomes, answers = {}, {}

        def one(cut):
            req = (b"POST /embed HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                   b"application/json\r\nContent-Length: "
                   + str(len(body)).encode() + b"\r\n\r\n" + body[:cut])
            # half-close: the server sees EOF before the body is complete
            answers[cut] = raw_exchange(self.port, req, timeout=3,
                                        half_close=True)

        # the cuts side by side: each may wait its 3 s for a close
        cuts = (0, 1, 5, len(body) - 1)
        ts = [threading.Thread(target=one, args=(c,)) for c in cuts]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        for cut in cuts:
            got, closed = answers[cut]
            for r in got:
                self.assertLess(r[0], 500, "truncated body gave %d" % r[0])
            outcomes[cut] = got[0][0] if got else "closed"
        # and clients that just vanish with the body half sent
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", self.port))
            s.sendall(b"POST /embed HTTP/1.1\r\nHost: localhost\r\n"
                      b"Content-Type: application/octet-stream\r\n"
                      b"X-Tokvec-Shape: 1,1000\r\n"
                      b"Content-Length: 4000\r\n\r\n" + b"\0" * 1000)
            s.close()
        self.report["truncated"] = outcomes
        self.assert_alive()

    # -- 4. hanging up mid-response ----------------------------------------
    def big_request(self):
        ids = struct.pack("<%di" % (16 * 1024),
                          *[(i * 7) % VOCAB for i in range(16 * 1024)])
        return post(ids, "application/octet-stream",
                    b"X-Tokvec-Shape: 16,1024\r\n"
                    b"Accept: application/octet-stream\r\n")

    def abort_rounds(self, rounds):
        """Clients that ask for 16 MiB raw replies and hang up (RST) after
        0 B .. 8 MiB; one per round reads through a 4 KB window."""
        req = self.big_request()

        def one(read_bytes, slow=False):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=20)
            if slow:  # a 4 KB window: the server's sends block
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(req)
            got = 0
            while got < read_bytes:
                chunk = s.recv(4096 if slow else 65536)
                if not chunk:
                    break
                got += len(chunk)
            # RST rather than FIN: the server's next write fails
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))
            s.close()

        for rnd in range(rounds):
            ts = [threading.Thread(target=one, args=(r,))
                  for r in (0, 100, 5000, 70000, 1 << 20, 4 << 20, 0, 1,
                            8 << 20, 200)]
            ts.append(threading.Thread(target=one, args=(100000, True)))
            for t in ts:
                t.start()
            for t in ts:
                t.join(30)
        return rounds * 11

    # -- 4. hanging up mid-response ----------------------------------------
    def test_hanging_up_mid_response_leaves_the_server_whole(self):
        req = self.big_request()
        size = 16 * 1024 * DIM * 4  # 16 MiB per reply
        aborted = self.abort_rounds(3)
        # a complete one still works and is the right size
        got, _ = raw_exchange(self.port, req, timeout=30)
        self.assertEqual(got[0][0], 200)
        self.assertEqual(len(got[0][2]), size)
        time.sleep(0.5)
        self.report["disconnect_mid_response"] = {
            "aborted": aborted, "reply_bytes": size,
            "rss_after_kb": rss_kb(self.proc.pid)}
        self.assert_alive()

    # -- 5. pipelining -----------------------------------------------------
    def test_pipelined_requests_are_answered_in_order(self):
        reqs = []
        for i in range(60):
            if i % 3 == 0:
                reqs.append(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            elif i % 3 == 1:
                reqs.append(post('{"inputs":[%d,%d]}' % (i, i + 1)))
            else:
                reqs.append(post('{"inputs":[%d' % i))  # malformed
        got, _ = raw_exchange(self.port, b"".join(reqs), timeout=15,
                              want=len(reqs))
        self.assertEqual(len(got), len(reqs))
        for i, r in enumerate(got):
            if i % 3 == 2:
                self.assert_json_4xx(r, "pipelined malformed")
            else:
                self.assertEqual(r[0], 200)
            if i % 3 == 1:
                self.assertEqual(json.loads(r[2])["shape"], [1, 2, DIM])
        self.report["pipelined"] = len(got)
        self.assert_alive()

    # -- 6. header floods --------------------------------------------------
    def test_header_floods_are_refused(self):
        cases = {
            "10000 headers": b"GET /health HTTP/1.1\r\nHost: localhost\r\n"
                             + b"X-A: b\r\n" * 10000 + b"\r\n",
            "1 MB header": b"GET /health HTTP/1.1\r\nHost: localhost\r\n"
                           b"X-Big: " + b"a" * (1 << 20) + b"\r\n\r\n",
            "64 KB url": b"GET /" + b"a" * 65536 + b" HTTP/1.1\r\n"
                         b"Host: localhost\r\n\r\n",
            "1 MB Accept": post('{"inputs":[1]}', extra=b"Accept: "
                                + b"text/x, " * 100000 + b"\r\n"),
            "garbage": os.urandom(4096),
            "NUL in header": b"GET /health HTTP/1.1\r\nHost: localhost\r\n"
                             b"X: a\0b\r\n\r\n",
            "bad version": b"GET /health HTTP/9.9\r\nHost: localhost\r\n\r\n",
            "no host": b"GET /health HTTP/1.1\r\n\r\n",
            "bad method": b"BREW /embed HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "bad content-length": b"POST /embed HTTP/1.1\r\n"
                                  b"Host: localhost\r\n"
                                  b"Content-Length: abc\r\n\r\n{}",
            "negative content-length": b"POST /embed HTTP/1.1\r\n"
                                       b"Host: localhost\r\n"
                                       b"Content-Length: -5\r\n\r\n{}",
            "two content-lengths": b"POST /embed HTTP/1.1\r\n"
                                   b"Host: localhost\r\n"
                                   b"Content-Length: 2\r\nContent-Length: "
                                   b"200\r\n\r\n{}",
            "chunked garbage": b"POST /embed HTTP/1.1\r\nHost: localhost\r\n"
                               b"Transfer-Encoding: chunked\r\n\r\n"
                               b"zz\r\nabc\r\n0\r\n\r\n",
            "chunked huge": b"POST /embed HTTP/1.1\r\nHost: localhost\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n"
                            b"FFFFFFFFFFFF\r\nabc",
        }
        outcomes = {}
        for name, data in cases.items():
            try:
                got, closed = raw_exchange(self.port, data, timeout=5)
            except (BrokenPipeError, ConnectionResetError):
                got, closed = [], True
            status = got[0][0] if got else "closed"
            outcomes[name] = status
            if got and name == "bad version":
                self.assertEqual(got[0][0], 505)  # MHD: HTTP/9.9 unsupported
            elif got:
                self.assertLess(got[0][0], 500, "%s -> %d" % (name, got[0][0]))
            self.assertIsNone(self.proc.poll(), "server died on " + name)
        # a steady stream of 2000 headers across 200 connections at once
        def flood():
            for _ in range(10):
                try:
                    raw_exchange(self.port, b"GET /info HTTP/1.1\r\n"
                                 b"Host: localhost\r\n"
                                 + b"X-Flood: 1\r\n" * 200 + b"\r\n",
                                 timeout=5)
                except OSError:
                    pass
        ts = [threading.Thread(target=flood) for _ in range(20)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        self.report["header_floods"] = outcomes
        self.assert_alive()

    # -- 7. 1000+ concurrent connections -------------------------------------
    def test_1100_concurrent_connections_are_served_or_refused(self):
        n = 1100 if self.nofile >= 2400 else max(100, self.nofile // 2 - 100)
        sel = selectors.DefaultSelector()
        socks = open_nonblocking(self.port, n)
        time.sleep(0.3)
        body = '{"inputs":[[%d,%d,%d]]}'
        pending = {}
        for i, s in enumerate(socks):
            data = post(body % (i % VOCAB, (i * 3) % VOCAB, 1))
            try:
                s.setblocking(True)
                s.settimeout(5)
                s.sendall(data)
                s.setblocking(False)
                pending[s] = b""
                sel.register(s, selectors.EVENT_READ)
            except OSError:
                s.close()
        ok = statuses = 0
        codes = {}
        deadline = time.time() + 30 * SLOW
        while pending and time.time() < deadline:
            for key, _ in sel.select(timeout=1):
                s = key.fileobj
                try:
                    chunk = s.recv(65536)
                except OSError:
                    chunk = b""
                if chunk:
                    pending[s] += chunk
                    got, _ = parse_responses(pending[s])
                    if not got:
                        continue
                    codes[got[0][0]] = codes.get(got[0][0], 0) + 1
                    ok += got[0][0] == 200
                else:
                    codes["closed"] = codes.get("closed", 0) + 1
                sel.unregister(s)
                del pending[s]
                s.close()
        for s in pending:
            codes["no answer"] = codes.get("no answer", 0) + 1
            s.close()
        sel.close()
        self.report["concurrent"] = {"connections": n, "codes": codes}
        # everything within max_connections (1200) is answered, and 200
        self.assertEqual(ok, n, codes)
        self.assert_alive()

    # -- 8. malformed /embed bodies ------------------------------------------
    def test_malformed_bodies_are_json_4xx(self):
        bodies = [
            b"", b" ", b"null", b"0", b"\"inputs\"", b"[]", b"{}", b"[1,2,3]",
            b"{\"inputs\":[]}", b"{\"inputs\":[[]]}", b"{\"inputs\":[[1],[]]}",
            b"{\"inputs\":null}", b"{\"inputs\":\"1 2 3\"}",
            b"{\"inputs\":{\"0\":1}}", b"{\"inputs\":[1.5]}",
            b"{\"inputs\":[1.0]}", b"{\"inputs\":[1e3]}",
            b"{\"inputs\":[true]}", b"{\"inputs\":[null]}",
            b"{\"inputs\":[\"1\"]}", b"{\"inputs\":[NaN]}",
            b"{\"inputs\":[Infinity]}", b"{\"inputs\":[-Infinity]}",
            b"{\"inputs\":[1e400]}", b"{\"inputs\":[-1e400]}",
            b"{\"inputs\":[123456789012345678901234567890]}",
            b"{\"inputs\":[9223372036854775807]}",
            b"{\"inputs\":[-9223372036854775808]}",
            b"{\"inputs\":[-1]}", b"{\"inputs\":[1000]}",
            b"{\"inputs\":[[1,2],[3]]}", b"{\"inputs\":[[1,2],3]}",
            b"{\"inputs\":[1,[2]]}", b"{\"inputs\":[[[1]]]}",
            b"{\"inputs\":[1],\"inputs\":[2]}",
            b"{\"inputs\":[1],\"start_position\":-1}",
            b"{\"inputs\":[1],\"start_position\":1.5}",
            b"{\"inputs\":[1],\"start_position\":\"0\"}",
            b"{\"inputs\":[1],\"start_position\":1024}",
            b"{\"inputs\":[1],\"start_position\":9223372036854775807}",
            b"{\"inputs\":[1],\"positions\":1}",
            b"{\"inputs\":[1],\"positions\":\"false\"}",
            b"{\"inputs\":[1],\"pad_id\":\"0\"}",
            b"{\"inputs\":[[1,2],[3]],\"pad_id\":-1}",
            b"{\"inputs\":[[1,2],[3]],\"pad_id\":1e9}",
            b"{\"inputs\":[[1,2],[3]],\"pad_id\":100000}",
            b"{\"inputs\":[1],\"encoding_format\":\"hex\"}",
            b"{\"inputs\":[1],\"encoding_format\":null}",
            b"{\"inputs\":[1],\"extra\":1}",
            b"{\"inputs\":[1],\"\xff\xfe\":1}",
            b"{\"inputs\":[1],\"a\\u0000b\":1}",
            b"{\"inputs\":[1],\"s\":\"\xc3\x28\"}",
            b"{\"inputs\":[1]}\x00",
            b"\x00{\"inputs\":[1]}",
            b"{\"inputs\":[1\x00]}",
            b"\xef\xbb\xbf{\"inputs\":[1]}",
            b"{\"inputs\":[1]} {\"inputs\":[2]}",
            b"{\"inputs\":[1],}", b"{'inputs':[1]}", b"{inputs:[1]}",
            b"[" * 100000, b"{\"a\":" * 50000, b"[" * 100 + b"]" * 100,
            b"{\"inputs\":" + b"[" * 5000 + b"1" + b"]" * 5000 + b"}",
            b"{\"inputs\":[" + b"1," * 70000 + b"1]}",
            b"{\"inputs\":[" + b"[1]," * 5000 + b"[1]]}",
            b"{\"inputs\":[\"" + b"a" * 100000 + b"\"]}",
            b"{\"" + b"k" * 100000 + b"\":1}",
            b"\xff" * 1000, os.urandom(2000),
        ]
        statuses = {}
        for i, b in enumerate(bodies):
            got, _ = raw_exchange(self.port, post(b), timeout=10)
            self.assertTrue(got, "no answer to body %d %r" % (i, b[:60]))
            self.assert_json_4xx(got[0], "body %d %r" % (i, b[:60]))
            statuses[got[0][0]] = statuses.get(got[0][0], 0) + 1
        # binary requests with bad shapes / sizes, and bad query options
        ids = struct.pack("<4i", 1, 2, 3, 4)
        bad_bin = [
            (ids, b""), (ids, b"X-Tokvec-Shape: 2\r\n"),
            (ids, b"X-Tokvec-Shape: 2,3\r\n"), (ids, b"X-Tokvec-Shape: -2,-2\r\n"),
            (ids, b"X-Tokvec-Shape: 0,4\r\n"), (ids, b"X-Tokvec-Shape: 1, 4\r\n"),
            (ids, b"X-Tokvec-Shape: 99999999999999999999,1\r\n"),
            (ids, b"X-Tokvec-Shape: 65536,65536\r\n"),
            (ids, b"X-Tokvec-Shape: 2,2,1\r\n"),
            (ids[:-1], b"X-Tokvec-Shape: 1,4\r\n"),
            (struct.pack("<2i", -1, 2), b"X-Tokvec-Shape: 1,2\r\n"),
            (struct.pack("<2i", 2**31 - 1, 2), b"X-Tokvec-Shape: 1,2\r\n"),
            (b"", b"X-Tokvec-Shape: 1,1\r\n"),
        ]
        for body, extra in bad_bin:
            got, _ = raw_exchange(self.port, post(body,
                                  "application/octet-stream", extra))
            self.assert_json_4xx(got[0], "binary %r" % extra)
            statuses[got[0][0]] = statuses.get(got[0][0], 0) + 1
        misc = [
            post('{"inputs":[1]}', "text/html"),
            post('{"inputs":[1]}', "application/json",
                 b"Accept: text/html\r\n"),
            post('{"inputs":[1]}', "application/json", b"",
                 b"/embed?dtype=float16"),
            post('{"inputs":[1]}', "application/json", b"",
                 b"/embed?dtype=int8"),
            post('{"inputs":[1]}', "application/json", b"",
                 b"/embed?start_position=1"),
            post(ids, "application/octet-stream", b"X-Tokvec-Shape: 1,4\r\n",
                 b"/embed?start_position=-1"),
            post(ids, "application/octet-stream", b"X-Tokvec-Shape: 1,4\r\n",
                 b"/embed?positions=maybe&x=%00"),
            post(ids, "application/octet-stream", b"X-Tokvec-Shape: 1,4\r\n",
                 b"/embed?start_position=99999999999999999999"),
            b"GET /embed HTTP/1.1\r\nHost: localhost\r\n\r\n",
            b"GET /tokens/-1 HTTP/1.1\r\nHost: localhost\r\n\r\n",
            b"GET /tokens/1000 HTTP/1.1\r\nHost: localhost\r\n\r\n",
            b"GET /tokens/99999999999999999999999 HTTP/1.1\r\n"
            b"Host: localhost\r\n\r\n",
            b"GET /tokens/ HTTP/1.1\r\nHost: localhost\r\n\r\n",
            b"GET /tokens/0x10 HTTP/1.1\r\nHost: localhost\r\n\r\n",
            b"GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n",
            b"DELETE /info HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ]
        for req in misc:
            got, _ = raw_exchange(self.port, req)
            self.assert_json_4xx(got[0], "misc %r" % req[:70])
            statuses[got[0][0]] = statuses.get(got[0][0], 0) + 1
        self.report["malformed"] = {"requests": len(bodies) + len(bad_bin)
                                    + len(misc), "statuses": statuses}
        self.assert_alive()

    # -- 9. last: memory stayed bounded ---------------------------------------
    def test_rss_stays_bounded_after_every_attack(self):
        # glibc keeps freed 16 MiB reply buffers in its arenas (the dynamic
        # mmap threshold rises to their size after the first free), so RSS
        # after test 4 sits at a high-water mark of a few hundred MB. What
        # must not happen is growth: repeat the worst workload and compare.
        time.sleep(0.3)
        before = rss_kb(self.proc.pid)
        self.abort_rounds(2)
        for _ in range(20):
            self.embed_ok()
        for _ in range(5):
            self.test_malformed_bodies_are_json_4xx()
        time.sleep(0.5)
        end = rss_kb(self.proc.pid)
        self.report["rss_plateau_kb"] = [before, end]
        # (ASan's quarantine holds up to 256 MB of freed memory: looser)
        slack = (32 if SLOW == 1.0 else 160) * 1024
        self.assertLess(end, before * 1.1 + slack,
                        "RSS grew from %d kB to %d kB on a repeat" %
                        (before, end))
        # and the high-water mark itself is bounded well under
        # max_inflight_bytes (1 GiB)
        self.assertLess(end, self.rss0 + 768 * 1024)
        self.assert_alive()


def hostile_rank(name):
    """Position in HOSTILE_ORDER; a test not listed runs before the last."""
    if name in HOSTILE_ORDER:
        return HOSTILE_ORDER.index(name)
    return len(HOSTILE_ORDER) - 1.5


# --part 1: the Hostile class alone; --part 2: every other class; none:
# all. The two halves take about as long, so that make test runs them side
# by side (each class starts its own server: they share nothing).
PART = None


def load_tests(loader, tests, pattern):
    """Hostile's attacks run in the order written (the RSS check, last,
    measures what they left); the other classes as unittest orders them."""
    suite = unittest.TestSuite()
    for name, obj in list(globals().items()):
        if isinstance(obj, type) and issubclass(obj, unittest.TestCase):
            if PART is not None and (obj is Hostile) != (PART == 1):
                continue
            names = loader.getTestCaseNames(obj)
            if obj is Hostile:
                names = sorted(names, key=hostile_rank)
            suite.addTests(obj(n) for n in names)
    return suite


class RequestDeadline(unittest.TestCase):
    """request_timeout bounds the time to send one whole request (the
    server allows 2 x request_timeout from the connection's opening or its
    previous response: idle, itself at most request_timeout, plus the
    request): slow tricklers that fill every connection slot are cut, so
    others get in; a client that idles and sends within the limits is
    never cut."""

    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.log, cls.proc, cls.port = serve_logged(
            "tokvec-deadline-",
            ["--max-connections", "20", "--request-timeout", "1"])

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.rc = cls.proc.wait(timeout=40)
        cls.log.close()
        if cls.rc != 0:
            Hostile.sanitizer_report = True
            with open(os.path.join(cls.tmp, "server.log"), "rb") as f:
                print(f.read()[-2000:].decode("utf-8", "replace"),
                      file=sys.stderr)

    def status_counts(self):
        got, _ = raw_exchange(self.port, b"GET /metrics HTTP/1.1\r\n"
                              b"Host: localhost\r\nConnection: close\r\n\r\n")
        out = {}
        for line in got[0][2].decode().splitlines():
            if line.startswith("tokvec_requests_total{"):
                code = line.split('code="')[1].split('"')[0]
                out[code] = out.get(code, 0) + int(line.split()[-1])
        return out

    def test_header_tricklers_holding_every_slot_are_cut(self):
        socks = []
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", self.port))
            s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            socks.append(s)
        time.sleep(0.2)
        t0, answered = time.time(), None
        while time.time() - t0 < 5 * SLOW and answered is None:
            for s in socks:  # a header byte from each every 0.1 s
                try:
                    s.send(b"a")
                except OSError:
                    pass
            try:
                got, _ = raw_exchange(self.port, b"GET /health HTTP/1.1\r\n"
                                      b"Host: localhost\r\n\r\n", timeout=0.3)
                if got and got[0][0] == 200:
                    answered = time.time() - t0
            except OSError:
                pass
            time.sleep(0.1)
        self.assertIsNotNone(answered, "no slot freed in 5 s")
        cut = 0
        for s in socks:
            s.settimeout(2 * SLOW)
            try:
                cut += s.recv(100) == b""
            except OSError:  # reset: also cut
                cut += 1
            s.close()
        self.assertEqual(cut, 20)

    def test_a_trickled_body_is_cut_and_counted_408(self):
        before = self.status_counts().get("408", 0)
        t_open = time.time()
        s = socket.create_connection(("127.0.0.1", self.port))
        s.sendall(post(b'{"inputs":[1]}' + b" " * 100)[:-90])
        t0, closed = time.time(), False
        s.settimeout(0.1)
        while time.time() - t0 < 5 * SLOW:
            try:
                s.send(b" ")
                if s.recv(100) == b"":
                    closed = True
                    break
            except socket.timeout:
                pass
            except OSError:
                closed = True
                break
        took = time.time() - t_open
        s.close()
        self.assertTrue(closed)
        self.assertGreater(took, 1.9)  # 2 x request_timeout
        # counted when MHD reports the request complete, which may come
        # just after the client has seen the close
        deadline = time.time() + 2 * SLOW
        while (self.status_counts().get("408", 0) < before + 1
               and time.time() < deadline):
            time.sleep(0.05)
        self.assertEqual(self.status_counts().get("408", 0), before + 1)

    def test_a_trickler_after_a_quick_request_is_cut_too(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        self.assertIn(b" 200 ", s.recv(65536))
        s.sendall(b"GET /health HTTP/1.1\r\nX-Slow: ")
        t0, closed = time.time(), False
        s.settimeout(0.1)
        while time.time() - t0 < 5 * SLOW and not closed:
            try:
                s.send(b"a")
                closed = s.recv(100) == b""
            except socket.timeout:
                pass
            except OSError:
                closed = True
        s.close()
        self.assertTrue(closed, "a second request trickled for 5 s")

    def test_idle_then_a_request_each_under_the_timeout_is_not_cut(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        self.assertIn(b" 200 ", s.recv(65536))
        time.sleep(0.7)  # idle, under request_timeout (1 s)
        req = post('{"inputs":[1,2]}' + " " * 40)
        for i in range(0, len(req), 16):  # ~0.8 s to send it
            s.sendall(req[i:i + 16])
            time.sleep(0.8 * 16 / len(req))
        buf, got = b"", []
        while not got:
            chunk = s.recv(65536)
            self.assertTrue(chunk, "cut while sending in time")
            buf += chunk
            got, buf = parse_responses(buf)
        self.assertEqual(got[0][0], 200)
        s.close()

    def test_a_quick_keep_alive_client_outlives_the_timeout(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        buf, n = b"", 0
        t0 = time.time()
        while time.time() - t0 < 2.5:  # 2.5 x request_timeout
            s.sendall(post('{"inputs":[1,2]}'))
            got = []
            while not got:
                chunk = s.recv(65536)
                self.assertTrue(chunk, "closed after %d requests" % n)
                buf += chunk
                got, buf = parse_responses(buf)
            self.assertEqual(got[0][0], 200)
            n += 1
            time.sleep(0.3)
        s.close()
        self.assertGreaterEqual(n, 5)


class PerAddressLimit(unittest.TestCase):
    """--max-connections-per-ip: past it, the address's new connections are
    closed at once; a slot frees when one of them closes."""

    def test_connections_past_the_per_address_limit_are_closed(self):
        tmp = tempfile.mkdtemp(prefix="tokvec-perip-")
        proc, port, _ = start_server(tmp, ["--max-connections-per-ip", "3"],
                                     subprocess.DEVNULL)
        try:
            probe = b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"

            def hold_three():
                # until the probe's slot is free: three answered connections
                while True:
                    held = []
                    try:
                        for _ in range(3):
                            s = socket.create_connection(("127.0.0.1", port),
                                                         timeout=5)
                            held.append(s)
                            s.sendall(probe)
                            if b" 200 " not in s.recv(65536):
                                raise OSError("not answered")
                        return held
                    except OSError:
                        for s in held:
                            s.close()
                        self.assertLess(time.time(), deadline)
                        time.sleep(0.05)
            deadline = time.time() + 10 * SLOW
            held = hold_three()
            got, closed = raw_exchange(port, probe, timeout=5)
            self.assertEqual((got, closed), ([], True))
            held.pop().close()
            while True:  # the freed slot is taken again
                got, _ = raw_exchange(port, probe, timeout=5)
                if got:
                    break
                self.assertLess(time.time(), deadline)
                time.sleep(0.05)
            self.assertEqual(got[0][0], 200)
            for s in held:
                s.close()
        finally:
            proc.terminate()
            self.assertEqual(proc.wait(timeout=30), 0)
            subprocess.run(["rm", "-rf", tmp])



def metric(port, name):
    """One sample of /metrics (`name` with its labels), or None. (No
    deadline of its own but a minute: on a busy machine a slow build's
    answer may take seconds, and the callers poll.)"""
    got, _ = raw_exchange(port, b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n"
                          b"Connection: close\r\n\r\n", timeout=60 * SLOW)
    if not got:
        raise AssertionError("GET /metrics: no answer in %g s" % (60 * SLOW))
    for line in got[0][2].decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def wait_until(cond, timeout, what):
    deadline = time.time() + timeout * SLOW
    while not cond():
        if time.time() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


class Abandoned(unittest.TestCase):
    """Issue 15, finding 3: a client that leaves while its job waits gets
    no job computed for it, and a reply cut by the client is logged and
    counted as 499 with the bytes it acknowledged, not as a 200."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tokvec-abandon-")
        self.logpath = os.path.join(self.tmp, "server.log")
        self.log = open(self.logpath, "wb")
        # 4096 x 1024: a JSON reply of 2048 rows takes a worker ~0.15 s and
        # reserves ~58 MB of max_inflight_bytes; 10 of those leaked would
        # stall every later job.
        self.proc, self.port, _ = start_server(
            self.tmp, ["--threads", "1", "--max-inflight-bytes", "300MiB"],
            self.log, vocab=4096, dim=1024, ctx=8)

    def tearDown(self):
        self.proc.terminate()
        self.assertEqual(self.proc.wait(timeout=60), 0)
        self.log.close()
        subprocess.run(["rm", "-rf", self.tmp])

    def access(self):
        with open(self.logpath, "rb") as f:
            return [ln for ln in f.read().decode(errors="replace")
                    .splitlines() if "path=/embed" in ln]

    def test_jobs_of_clients_that_left_are_not_computed(self):
        slow = post(json.dumps({"inputs": [list(range(2048))],
                                "positions": False}))
        hold = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        hold.sendall(slow)
        wait_until(lambda: metric(self.port, "tokvec_inflight_requests") == 2
                   and metric(self.port, "tokvec_queue_depth") == 0,
                   10, "the first job to run")
        for _ in range(10):  # ask for the same, and leave at once
            s = socket.create_connection(("127.0.0.1", self.port))
            s.sendall(slow)
            s.close()
        got = b""
        while not got.endswith(b"]]]}"):
            chunk = hold.recv(1 << 20)
            self.assertTrue(chunk, "the first client's reply was cut")
            got += chunk
        hold.close()
        wait_until(lambda: metric(self.port, "tokvec_queue_depth") == 0
                   and metric(self.port, "tokvec_inflight_requests") == 1,
                   60, "the abandoned requests to end (queue %s, inflight %s)"
                   % (metric(self.port, "tokvec_queue_depth"),
                      metric(self.port, "tokvec_inflight_requests")))
        # Only the first job was computed.
        self.assertEqual(
            metric(self.port, 'tokvec_jobs_total{where="worker"}'), 1)
        lines = self.access()
        self.assertEqual(len(lines), 11, lines)
        self.assertEqual(sum("status=200" in ln for ln in lines), 1, lines)
        self.assertEqual(sum("status=499" in ln for ln in lines), 10, lines)
        # Their max_inflight_bytes came back (leaked, they stalled every
        # later job): another request is answered.
        got, _ = raw_exchange(self.port, post('{"inputs":[[1,2]]}'),
                              timeout=10)
        self.assertEqual(got[0][0], 200)

    def test_a_reply_cut_by_the_client_is_logged_499(self):
        ids = struct.pack("<%di" % 4096, *range(4096))
        req = post(ids, "application/octet-stream",
                   b"X-Tokvec-Shape: 4,1024\r\n"
                   b"Accept: application/octet-stream\r\n",
                   path=b"/embed?positions=false")
        size = 4 * 1024 * 1024 * 4  # 16 MiB
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(req)
        got = 0
        while got < (1 << 20):
            chunk = s.recv(65536)
            self.assertTrue(chunk)
            got += len(chunk)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
        s.close()  # RST
        wait_until(lambda: len(self.access()) == 1, 10, "the log line")
        line = self.access()[0]
        self.assertIn("status=499", line)
        sent = int(line.split("bytes=")[1].split()[0])
        self.assertGreaterEqual(sent, (1 << 20) - 65536)
        self.assertLess(sent, size)
        self.assertEqual(metric(
            self.port, 'tokvec_requests_total{route="/embed",code="499"}'), 1)


class BufferedBodies(unittest.TestCase):
    """Issue 15, finding 6: request bodies being received hold at most
    --max-buffered-bytes in all; past it, 429 at once."""

    def test_bodies_past_max_buffered_bytes_are_429_at_once(self):
        tmp = tempfile.mkdtemp(prefix="tokvec-buffered-")
        proc, port, _ = start_server(tmp, ["--max-buffered-bytes", "1MiB"],
                                     subprocess.DEVNULL)
        try:
            body = b'{"inputs":[[1]]}' + b" " * 700000
            head = post(body)[:-len(body)]
            a = socket.create_connection(("127.0.0.1", port), timeout=10)
            a.sendall(head + body[:1000])  # 700 KB announced, held open
            wait_until(lambda: metric(port, "tokvec_inflight_requests") == 2,
                       10, "the first body to be taken in")
            t0 = time.time()
            # Headers and a little: the 429 comes before the body is read
            # (then the server closes; sending all of it could hit EPIPE).
            got, closed = raw_exchange(port, head + body[:1000], timeout=10)
            self.assertEqual(got[0][0], 429, got)
            self.assertLess(time.time() - t0, 5 * SLOW)
            self.assertEqual(json.loads(got[0][2])["error_type"],
                             "overloaded")
            a.sendall(body[1000:])  # the first one completes...
            a.settimeout(10)
            self.assertIn(b" 200 ", a.recv(65536))
            a.close()
            got, _ = raw_exchange(port, post(body), timeout=10)
            self.assertEqual(got[0][0], 200)  # ...and its share is back
        finally:
            proc.terminate()
            self.assertEqual(proc.wait(timeout=30), 0)
            subprocess.run(["rm", "-rf", tmp])


class SlowReaders(unittest.TestCase):
    """Issue 15, finding 1: slow readers cannot pin max_inflight_bytes
    (a reply holds its real size, not the JSON bound it reserved), a reply
    must be read at min_send_rate (never cut before request_timeout), and
    a job waits at most max_queue_wait for a worker (then 503)."""

    def start(self, *args):
        self.tmp = tempfile.mkdtemp(prefix="tokvec-slow-")
        self.logpath = os.path.join(self.tmp, "server.log")
        self.log = open(self.logpath, "wb")
        self.proc, self.port, _ = start_server(
            self.tmp, list(args), self.log, vocab=VOCAB, dim=DIM, ctx=CTX)

    def tearDown(self):
        self.proc.terminate()
        self.assertEqual(self.proc.wait(timeout=60), 0)
        self.log.close()
        subprocess.run(["rm", "-rf", self.tmp])

    def big_json(self, rows):
        """rows x 1024 tokens as JSON, from a body of a few KB (pad_id)."""
        inputs = [[1]] * (rows - 1) + [[i % VOCAB for i in range(CTX)]]
        return post(json.dumps({"inputs": inputs, "pad_id": 0}))

    def test_slow_readers_do_not_starve_a_small_request(self):
        # Each 16x1024 JSON reply reserves ~120 MB (the bound) but is
        # ~46 MB: three slow readers reserve more than 256 MiB and hold
        # far less.
        self.start("--max-inflight-bytes", "256MiB", "--threads", "2")
        readers = []
        for rows in (16, 16, 8):
            s = socket.create_connection(("127.0.0.1", self.port),
                                         timeout=30)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(self.big_json(rows))
            readers.append(s)  # and never read
        wait_until(lambda: metric(self.port, "tokvec_queue_depth") == 0 and
                   metric(self.port, 'tokvec_jobs_total{where="worker"}')
                   == 3, 30, "the three replies to be built")
        t0 = time.time()
        got, _ = raw_exchange(self.port, post('{"inputs":[[5]]}'),
                              timeout=10)
        took = time.time() - t0
        self.assertEqual(got[0][0], 200)
        self.assertLess(took, 1.0 * SLOW)
        for s in readers:
            s.close()

    def test_a_reply_read_too_slowly_is_cut_and_logged_408(self):
        # 16 MiB at >= 32 MiB/s, never cut before request_timeout: cut
        # after max(2 s, 0.5 s). The client reads 4 KB every 0.2 s, so
        # libmicrohttpd's inactivity limit (also 2 s) never fires.
        self.start("--request-timeout", "2", "--min-send-rate", "32MiB")
        ids = struct.pack("<%di" % (16 * 1024),
                          *[(i * 7) % VOCAB for i in range(16 * 1024)])
        req = post(ids, "application/octet-stream",
                   b"X-Tokvec-Shape: 16,1024\r\n"
                   b"Accept: application/octet-stream\r\n")
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(req)
        t0 = time.time()

        def cut():
            try:
                s.recv(4096)
            except OSError:
                pass
            time.sleep(0.2)
            with open(self.logpath, "rb") as f:
                return b"path=/embed status=408" in f.read()
        wait_until(cut, 10, "the reply to be cut")
        self.assertGreater(time.time() - t0, 1.9)
        s.close()
        self.assert_health()

    def assert_health(self):
        got, _ = raw_exchange(self.port, b"GET /health HTTP/1.1\r\n"
                              b"Host: localhost\r\nConnection: close"
                              b"\r\n\r\n", timeout=5)
        self.assertEqual(got[0][0], 200)

    def test_a_job_waiting_past_max_queue_wait_gets_503(self):
        self.start("--threads", "1", "--max-queue-wait", "0.1",
                   "--max-tokens", "98304")
        hold = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        # 96 x 1024 x 256 floats: ~0.25 s of batch formatting (its bound
        # fits the default budget of 1 GiB)
        hold.sendall(self.big_json(96))
        wait_until(lambda: metric(self.port, "tokvec_inflight_requests") == 2
                   and metric(self.port, "tokvec_queue_depth") == 0,
                   10, "the long job to run")
        t0 = time.time()
        got, _ = raw_exchange(self.port, self.big_json(2), timeout=30)
        self.assertEqual(got[0][0], 503, got)
        self.assertEqual(got[0][1].get("retry-after"), "1")
        self.assertEqual(json.loads(got[0][2])["error_type"], "overloaded")
        self.assertLess(time.time() - t0, 5 * SLOW)
        hold.close()
def proc_status_kb(pid, key):
    """A /proc/PID/status field in kB (VmHWM, RssAnon, ...)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


GPT2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "data", "gpt2")


class Budget(unittest.TestCase):
    """Issue 24, findings 3, 4 and 12: every route's reply counts in
    max_inflight_bytes (unread /tokenize replies cannot pile up past it), a
    reply that could not fit the budget even alone is 413 at once, naming
    the limit, and a small request runs at once beside large ones (the
    small-job lane) instead of waiting for a worker."""

    def start(self, *args, vocab=50257, dim=8, ctx=CTX, tok=True):
        self.tmp = tempfile.mkdtemp(prefix="tokvec-budget-")
        self.log = open(os.path.join(self.tmp, "server.log"), "wb")
        self.proc, self.port, _ = start_server(
            self.tmp, (["--tokenizer", GPT2] if tok else []) + list(args),
            self.log, vocab=vocab, dim=dim, ctx=ctx)

    def tearDown(self):
        self.proc.terminate()
        self.assertEqual(self.proc.wait(timeout=60), 0)
        self.log.close()
        subprocess.run(["rm", "-rf", self.tmp])

    def error_type(self, req):
        got, _ = raw_exchange(self.port, req, timeout=30)
        self.assertTrue(got, "no answer")
        return got[0][0], json.loads(got[0][2]).get("error_type"), \
            json.loads(got[0][2]).get("error", "")

    def test_unread_tokenize_replies_stay_within_the_budget(self):
        self.unread_replies_stay_within_the_budget(
            b"/tokenize", json.dumps({"inputs": "\u0001" * 65536}))

    def test_unread_decode_replies_stay_within_the_budget(self):
        # token 35496 is 128 bytes: 36,000 of them decode to ~4.6 MB
        self.unread_replies_stay_within_the_budget(
            b"/decode", json.dumps({"ids": [35496] * 36000}))

    def test_unread_token_rows_stay_within_the_budget(self):
        # GET /tokens/{id} of a 1 Mi-wide row: ~11 MB of JSON each (more
        # than the socket buffers take), answered at once on the HTTP
        # thread; with the budget full, the next one is a 503 to retry
        # instead of one more unread reply. (RssAnon: the table's pages
        # are the file's.)
        self.start("--max-inflight-bytes", "32MiB", vocab=16,
                   dim=1 << 20, ctx=2, tok=False)
        rss0 = proc_status_kb(self.proc.pid, "RssAnon")
        readers, refused = [], 0
        for i in range(24):
            s = socket.create_connection(("127.0.0.1", self.port),
                                         timeout=30)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(b"GET /tokens/%d HTTP/1.1\r\nHost: localhost\r\n"
                      b"\r\n" % (i % 16))
            readers.append(s)  # and never read
        wait_until(lambda: (metric(self.port, "tokvec_inflight_reply_bytes")
                            or 0) >= 8 << 20, 60, "a reply to be held")
        for s in readers:  # the first bytes of each answer: 200 or 503
            st = s.recv(12)[9:12]
            refused += st == b"503"
        self.assertGreater(refused, 0)
        held = metric(self.port, "tokvec_inflight_reply_bytes")
        self.assertLessEqual(held, 32 << 20)
        grown_mb = (proc_status_kb(self.proc.pid, "RssAnon")
                    - rss0) / 1024
        self.assertLess(grown_mb, 60 if SLOW == 1.0 else 320,
                        "RSS grew %.0f MB" % grown_mb)
        for s in readers:
            s.close()
        wait_until(lambda: metric(self.port,
                                  "tokvec_inflight_reply_bytes") == 0,
                   30, "the replies to be given back")

    def unread_replies_stay_within_the_budget(self, path, body):
        # Answers of ~4.6 MB each (65,536 U+0001 to tokenize: a 0.39 MB
        # body), more than the socket buffers take; 24 clients that never
        # read held ~110 MB before (uncounted, and copied): now at most
        # the 16 MiB budget and what the 2 workers had built, and the
        # other jobs wait for the budget. No clock decides what is built:
        # max_queue_wait is a day (with 1 s, a slow build or a busy
        # machine let jobs expire before the budget filled), and the
        # state is read once nothing more can run: the budget full (no
        # job starts past it), and every job not waiting answered.
        self.start("--max-inflight-bytes", "16MiB", "--threads", "2",
                   "--max-queue-wait", "86400")
        rss0 = proc_status_kb(self.proc.pid, "RssAnon")
        readers = []
        for _ in range(24):
            s = socket.create_connection(("127.0.0.1", self.port),
                                         timeout=60)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(post(body, path=path))
            readers.append(s)  # and never read
        # The unread replies count, up to the budget, and the rest wait.
        # Settled: the answers begun (their heads, peeked) are over the
        # budget, so no job starts any more, and they and the jobs
        # waiting (the same count before and after the look) are all 24:
        # none is being built. (The gauge alone is no witness: it counts
        # an answer twice for a moment as it is handed to the reply.)
        state = {}

        def settled():
            waiting = metric(self.port, "tokvec_queue_depth")
            lengths = []
            for s in readers:
                if select.select([s], [], [], 0)[0]:
                    head = s.recv(4096, socket.MSG_PEEK)
                    self.assertTrue(head.startswith(b"HTTP/1.1 200 "), head)
                    lengths += [int(line.split(b":")[1]) for line in
                                head.lower().split(b"\r\n")
                                if line.startswith(b"content-length:")]
            state.update(waiting=waiting, lengths=lengths)
            return (sum(lengths) > 16 << 20 and
                    len(lengths) + waiting == len(readers) and
                    metric(self.port, "tokvec_queue_depth") == waiting)
        wait_until(settled, 60, "the budget to fill and the jobs that "
                   "started to be answered")
        waiting, lengths = state["waiting"], state["lengths"]
        held = metric(self.port, "tokvec_inflight_reply_bytes")
        self.assertEqual(metric(self.port, "tokvec_queue_depth"), waiting)
        self.assertEqual(held, sum(lengths))  # each answer counted, once
        self.assertLessEqual(held, (16 << 20) + 2 * max(lengths))
        self.assertGreater(waiting, 0)
        # Memory: the answers held; per worker, what building a reply of
        # n bytes leaves in malloc's arena for its next job (the decoded
        # text and the smaller buffers the body grew out of: under 3 n,
        # taken as 4 n); per request, its body, what it parsed into and
        # MHD's buffers (3 x the body). Measured: 55-62 MB of 73-78 MB
        # allowed for /decode, 39-44 MB of 83-88 MB for /tokenize. The 24
        # answers held before were over 110 MB on their own.
        allowed = held + 2 * 4 * max(lengths) + 24 * 3 * len(body)
        grown = (proc_status_kb(self.proc.pid, "RssAnon") - rss0) << 10
        # (ASan's quarantine keeps up to 256 MB of freed memory mapped)
        self.assertLess(grown, allowed if SLOW == 1.0 else 320 << 20,
                        "RSS grew %.1f MB, %.1f MB allowed"
                        % (grown / 1e6, allowed / 1e6))
        for s in readers:
            s.close()
        wait_until(lambda: metric(self.port, "tokvec_queue_depth") == 0 and
                   metric(self.port, "tokvec_inflight_reply_bytes") == 0,
                   60, "the waiting jobs to run and every reply to be "
                   "given back")

    def test_a_reply_that_cannot_fit_the_budget_alone_is_413(self):
        self.start("--max-inflight-bytes", "1MiB", vocab=50257, dim=64)
        # 8 x 1024 x 64 floats: 2 MiB of float32 rows before any JSON
        ids = json.dumps({"inputs": [[i % 50257 for i in range(1024)]] * 8})
        for extra in (b"", b"Accept: application/octet-stream\r\n"):
            st, et, msg = self.error_type(post(ids, extra=extra))
            self.assertEqual((st, et), (413, "payload_too_large"))
            self.assertIn("max_inflight_bytes", msg)
        # /tokenize: ~5 MB of answer, known once built
        st, et, msg = self.error_type(post(json.dumps(
            {"inputs": "\u0001" * 65536}), path=b"/tokenize"))
        self.assertEqual((st, et), (413, "payload_too_large"))
        self.assertIn("max_inflight_bytes", msg)
        # what fits is answered
        got, _ = raw_exchange(self.port, post('{"inputs":[[1,2,3]]}'))
        self.assertEqual(got[0][0], 200)
        wait_until(lambda: metric(self.port, "tokvec_inflight_reply_bytes")
                   == 0, 10, "every reply's bytes to be given back")

    def test_a_legal_json_request_is_not_refused_for_its_bound(self):
        # The JSON bound of 8 x 1024 x 8 floats (~1.2 MB) is over a 1 MiB
        # budget; its shortest encoding is not: answered.
        self.start("--max-inflight-bytes", "1MiB")
        body = json.dumps({"inputs": [[i for i in range(1024)]] * 8})
        got, _ = raw_exchange(self.port, post(body), timeout=30)
        self.assertEqual(got[0][0], 200)

    def test_small_requests_run_while_every_worker_is_busy(self):
        # One worker, held by large jobs (a 3 MiB word to tokenize: ~0.7 s
        # of work each, ~50 ms to parse), 8 of them in line:
        # a 1-token /embed, a small /tokenize and /decode are answered
        # inline (tokvec_jobs_total{where="inline"}) while large jobs
        # still wait. Before, each waited for all of them.
        self.start("--threads", "1")
        letters = bytes(b"abcdefghijklmnopqrstuvwxyz"[i % 26]
                        for i in range(256))  # random bytes -> letters
        word = random.Random(1).randbytes(3 << 20).translate(
            letters).decode()
        big = post(json.dumps({"inputs": word, "truncate": True}),
                   path=b"/tokenize")
        holds = []
        for _ in range(8):
            s = socket.create_connection(("127.0.0.1", self.port),
                                         timeout=60)
            s.sendall(big)
            holds.append(s)
        wait_until(lambda: metric(self.port, "tokvec_queue_depth") >= 4,
                   30, "large jobs to wait")
        inline0 = metric(self.port, 'tokvec_jobs_total{where="inline"}')
        for req in (post('{"inputs":[[5]]}'),
                    post('{"inputs":"Hi"}', path=b"/tokenize"),
                    post('{"ids":[40]}', path=b"/decode")):
            got, _ = raw_exchange(self.port, req, timeout=30)
            self.assertEqual(got[0][0], 200)
        self.assertEqual(
            metric(self.port, 'tokvec_jobs_total{where="inline"}'),
            inline0 + 1)
        self.assertGreaterEqual(metric(self.port, "tokvec_queue_depth"), 1,
                                "the large jobs were still queued")
        for s in holds:
            s.close()


def nested_body(size=16 << 20, depth=2000):
    """An /embed body of `size` bytes at most: rows of `depth`-deep nested
    empty lists ("[[[...]]]"), as many as fit. jansson (its depth limit is
    2048) builds one json_t per "[": ~8.4 million lists, about 1 GB."""
    row = b"[" * depth + b"]" * depth
    head, tail = b'{"inputs":[', b"]}"
    n = (size - len(head) - len(tail) + 1) // (len(row) + 1)
    body = head + b",".join([row] * n) + tail
    assert len(body) <= size
    return body


class NestedBodies(unittest.TestCase):
    """Issue 15, finding 2: a 16 MiB body of 2,000-deep nested lists is
    refused at once (a linear pre-scan of depth and value count before
    jansson builds any tree), with no memory spike, and /health stays
    prompt while clients loop it. Before: 413 ("batch of 4193 sequences is
    over max_batch 4096") after 1.1-5.3 s of jansson (7.9 s on a loaded
    2-core box), peak RSS +1.06 GB and ~520 MB kept after; with 4 clients
    looping it /health took 2.4 s median (over 5 s on that box)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.log, cls.proc, cls.port = serve_logged(
            "tokvec-nested-", ["--access-log", "false", "--log-level", "warn"],
            VOCAB, DIM, CTX)
        cls.body = nested_body()
        cls.request = post(cls.body)

    @classmethod
    def tearDownClass(cls):
        rc = terminate(cls.proc, 60)
        cls.log.close()
        with open(os.path.join(cls.tmp, "server.log"), "rb") as f:
            tail = f.read()[-2000:]
        if rc != 0 or b"Sanitizer" in tail or b"runtime error" in tail:
            print("NestedBodies: server exit %d\n%s"
                  % (rc, tail.decode("utf-8", "replace")), file=sys.stderr)
            Hostile.sanitizer_report = True  # main() fails the run
        subprocess.run(["rm", "-rf", cls.tmp])

    def send_nested(self, timeout=60):
        t0 = time.time()
        got, _ = raw_exchange(self.port, self.request, timeout=timeout)
        dt = time.time() - t0
        self.assertTrue(got, "no answer to the nested body")
        status, hdrs, body = got[0]
        self.assertIn(status, (400, 413), body[:200])
        self.assertIn("application/json", hdrs.get("content-type", ""))
        return dt, json.loads(body)

    def test_a_nested_16mib_body_is_refused_at_once(self):
        self.assertGreater(len(self.body), (16 << 20) - 4096)
        for _ in range(3):  # warm up the ordinary path
            got, _ = raw_exchange(self.port, post('{"inputs":[[5,6,7]]}'))
            self.assertEqual(got[0][0], 200)
        pid = self.proc.pid
        hwm0 = proc_status_kb(pid, "VmHWM")
        anon0 = proc_status_kb(pid, "RssAnon")
        dt, err = self.send_nested()
        hwm1 = proc_status_kb(pid, "VmHWM")
        time.sleep(0.2)
        anon1 = proc_status_kb(pid, "RssAnon")
        print("\nnested 16 MiB body: %.3f s, %s; VmHWM %d -> %d kB, "
              "RssAnon %d -> %d kB" % (dt, err, hwm0, hwm1, anon0, anon1),
              file=sys.stderr)
        # The body itself is buffered (16 MiB); a tree of it would be ~1 GB.
        self.assertLess(hwm1 - hwm0, 96 * 1024,
                        "peak RSS grew by %d kB" % (hwm1 - hwm0))
        self.assertLess(anon1 - anon0, 48 * 1024,
                        "RSS kept %d kB after" % (anon1 - anon0))
        self.assertLess(dt, 1.0 * SLOW, "answered after %.2f s" % dt)
        self.assertEqual(err["error_type"], "invalid_request")
        self.assertEqual(err["error"], '"inputs" nests deeper than a list '
                                       'of lists of ids')

    def test_b_health_is_prompt_while_4_clients_loop_it(self):
        stop = threading.Event()
        sent, errors = [0], []

        def loop():
            while not stop.is_set():
                try:
                    self.send_nested(timeout=60)
                    sent[0] += 1
                except Exception as e:  # noqa: B902 -- reported below
                    errors.append(repr(e))
                    return

        hwm0 = proc_status_kb(self.proc.pid, "VmHWM")
        ts = [threading.Thread(target=loop) for _ in range(4)]
        for t in ts:
            t.start()
        lat = []
        try:
            deadline = time.time() + 4
            while time.time() < deadline:
                t0 = time.time()
                self.assertEqual(health(self.port), 200)
                lat.append(time.time() - t0)
                time.sleep(0.05)
        finally:
            stop.set()
            for t in ts:
                t.join(120)
        hwm1 = proc_status_kb(self.proc.pid, "VmHWM")
        lat.sort()
        med, worst = lat[len(lat) // 2], lat[-1]
        print("\n4 clients looping the nested body: %d sent, /health x%d "
              "median %.3f s, max %.3f s; VmHWM %d -> %d kB"
              % (sent[0], len(lat), med, worst, hwm0, hwm1),
              file=sys.stderr)
        self.assertEqual(errors, [])
        self.assertGreater(sent[0], 4)
        self.assertLess(med, 0.25 * SLOW, "/health median %.3f s" % med)
        self.assertLess(worst, 2.0 * SLOW, "/health worst %.3f s" % worst)
        # four 16 MiB bodies in flight at most, never a tree (ASan's
        # quarantine keeps up to 256 MB of freed bodies besides)
        self.assertLess(hwm1 - hwm0, (160 if SLOW == 1.0 else 448) * 1024)
        got, _ = raw_exchange(self.port, post('{"inputs":[[5,6,7]]}'))
        self.assertEqual(got[0][0], 200)



KEY = b"framing-key"


def embed_head(extra=b"", version=b"HTTP/1.1", host=b"Host: localhost\r\n"):
    """The start of an authorized JSON POST /embed: request line, Host,
    Authorization, Content-Type, then extra; no blank line."""
    return (b"POST /embed " + version + b"\r\n" + host
            + b"Authorization: Bearer " + KEY + b"\r\n"
            b"Content-Type: application/json\r\n" + extra)


BODY = b'{"inputs":[[1,2]]}'   # 18 bytes
CHUNKED = b"12\r\n" + BODY + b"\r\n0\r\n\r\n"
HEALTH = b"GET /health HTTP/1.1\r\nHost: localhost\r\n"


class Framing(unittest.TestCase):
    """Issue 15, findings 5 and 4: framing that libmicrohttpd 0.9.75 would
    stall on (a Transfer-Encoding other than `chunked`, a flood of query
    parameters) or accept leniently (request-smuggling primitives) is
    answered at once with a JSON 4xx/501 and `Connection: close`, and the
    connection is closed: nothing the client sent after it is read as a
    second request. Each case sends one request with whatever a smuggler
    would put after it, then reads until the server closes."""

    @classmethod
    def setUpClass(cls):
        # A request_timeout long enough that a stall cannot pass for a
        # quick close.
        cls.tmp, cls.log, cls.proc, cls.port = serve_logged(
            "tokvec-framing-",
            ["--api-key", KEY.decode(), "--request-timeout", "10",
             "--log-level", "warn"])

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        rc = cls.proc.wait(timeout=40)
        cls.log.close()
        if rc != 0:
            Hostile.sanitizer_report = True
            with open(os.path.join(cls.tmp, "server.log"), "rb") as f:
                print(f.read()[-2000:].decode("utf-8", "replace"),
                      file=sys.stderr)
        subprocess.run(["rm", "-rf", cls.tmp])

    def exchange(self, data):
        """Sends data, reads until the server closes (at most 4 s).
        Returns (responses, closed, seconds)."""
        t0 = time.time()
        try:
            got, closed = raw_exchange(self.port, data, timeout=4, want=2)
        except (BrokenPipeError, ConnectionResetError):
            got, closed = [], True
        return got, closed, time.time() - t0

    def refused(self, data, status=400, what=""):
        got, closed, dt = self.exchange(data)
        self.assertTrue(got, "%s: no answer in %.1f s" % (what, dt))
        st, hdrs, body = got[0]
        self.assertEqual(st, status, "%s: %r" % (what, body[:200]))
        self.assertEqual(len(got), 1, "%s: a second response: %r"
                         % (what, got[1:]))
        self.assertIn("application/json", hdrs.get("content-type", ""), what)
        self.assertEqual(json.loads(body)["error_type"], "invalid_request",
                         what)
        self.assertEqual(hdrs.get("connection", "").lower(), "close", what)
        self.assertTrue(closed, "%s: the connection stayed open" % what)
        self.assertLess(dt, 2.0 * SLOW, what)
        t0 = time.time()
        self.assertEqual(health(self.port), 200)
        self.assertLess(time.time() - t0, 1.0 * SLOW)

    def ok(self, data, what=""):
        got, _, dt = self.exchange(data + HEALTH + b"Connection: close\r\n\r\n")
        self.assertEqual([r[0] for r in got], [200, 200], what)
        self.assertLess(dt, 2.0 * SLOW, what)

    # -- finding 5: stalls ---------------------------------------------------
    def test_te_chunked_with_a_trailing_space_is_501(self):
        self.refused(HEALTH + b"Transfer-Encoding: chunked \r\n\r\n", 501)

    def test_te_identity_is_501(self):
        self.refused(HEALTH + b"Transfer-Encoding: identity\r\n\r\n", 501)

    def test_te_gzip_chunked_is_501(self):
        self.refused(HEALTH + b"Transfer-Encoding: gzip, chunked\r\n\r\n",
                     501, "GET")
        self.refused(embed_head(b"Transfer-Encoding: gzip, chunked\r\n\r\n")
                     + CHUNKED, 501, "POST")

    def test_two_transfer_encodings_are_501(self):
        self.refused(embed_head(b"Transfer-Encoding: chunked\r\n"
                                b"Transfer-Encoding: gzip\r\n\r\n")
                     + CHUNKED, 501)

    def test_a_flood_of_query_parameters_is_414(self):
        for n in (500, 1000):
            self.refused(b"GET /health?" + b"a=1&" * n + b" HTTP/1.1\r\n"
                         b"Host: localhost\r\n\r\n", 414, "%d parameters" % n)
        # a long query with few: 20 KB and 200, 30 KB and 60 stalled too
        self.refused(b"GET /health?" + b"a=1&" * 200 + b"b=" + b"c" * 20000
                     + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", 414, "20 KB")
        self.refused(b"GET /health?" + b"a=1&" * 60 + b"b=" + b"c" * 30000
                     + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", 414, "30 KB")

    def test_a_nul_in_the_request_line_is_400(self):
        # libmicrohttpd cut the path at the NUL (/health, 200) ...
        self.refused(b"GET /health\0junk HTTP/1.1\r\nHost: localhost\r\n\r\n",
                     what="path")
        # ... and parsed a query behind one (1000 parameters: no answer)
        self.refused(b"GET /health\0?" + b"a=1&" * 1000 + b" HTTP/1.1\r\n"
                     b"Host: localhost\r\n\r\n", what="query")

    def test_a_query_hidden_behind_a_nul_and_a_version_is_cut(self):
        # What follows "\0HTTP/1.1\0" cannot be read safely in the URI
        # log callback; the parameters are counted as MHD parses them and
        # the connection is closed at once (no answer: MHD would hang).
        got, closed, dt = self.exchange(
            b"GET /health\0HTTP/1.1\0\0?" + b"a=1&" * 1000
            + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
        self.assertEqual(got, [])
        self.assertTrue(closed)
        self.assertLess(dt, 2.0 * SLOW)
        self.assertEqual(health(self.port), 200)

    def test_a_few_query_parameters_still_work(self):
        self.ok(b"GET /health?" + b"a=1&" * 63 + b"a=1 HTTP/1.1\r\n"
                b"Host: localhost\r\n\r\n", "64 parameters")
        self.ok(embed_head(b"Content-Length: 18\r\n\r\n", b"HTTP/1.1")
                .replace(b"/embed ", b"/embed?dtype=float32 ") + BODY,
                "/embed?dtype=")

    # -- finding 4: lenient framing --------------------------------------------
    def test_whitespace_before_the_colon_is_400(self):
        # Content-Length unseen: the body would be the next request.
        self.refused(embed_head(b"Content-Length : 33\r\n\r\n")
                     + HEALTH + b"\r\n")

    def test_obs_fold_is_400(self):
        self.refused(HEALTH + b"X-A: one\r\n two\r\n\r\n", what="X-A")
        # libmicrohttpd appended " 8" to the name: Content-Length8: 1
        self.refused(embed_head(b"Content-Length: 1\r\n 8\r\n\r\n") + BODY,
                     what="Content-Length")

    def test_a_leading_space_on_the_first_header_line_is_400(self):
        self.refused(b"GET /health HTTP/1.1\r\n Host: localhost\r\n\r\n")

    def test_a_nul_inside_a_field_value_is_400(self):
        self.refused(embed_head(b"Content-Length: 18\0 99\r\n\r\n") + BODY,
                     what="Content-Length")
        self.refused(b"GET /info HTTP/1.1\r\nHost: localhost\r\n"
                     b"Authorization: Bearer " + KEY + b"\0junk\r\n\r\n",
                     what="Authorization")

    def test_content_length_and_transfer_encoding_together_are_400(self):
        self.refused(embed_head(b"Content-Length: 23\r\n"
                                b"Transfer-Encoding: chunked\r\n\r\n")
                     + CHUNKED + HEALTH + b"\r\n")

    def test_two_content_lengths_are_400(self):
        self.refused(embed_head(b"Content-Length: 18\r\nContent-Length: 99"
                                b"\r\n\r\n") + BODY, what="different")
        self.refused(embed_head(b"Content-Length: 18\r\nContent-Length: 18"
                                b"\r\n\r\n") + BODY, what="equal")

    def test_http_1_1_without_host_or_with_two_is_400(self):
        self.refused(b"GET /health HTTP/1.1\r\n\r\n", what="none")
        self.refused(b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                     what="two")
        # HTTP/1.0 needs none
        self.ok(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
                "HTTP/1.0")

    def test_a_bare_cr_in_a_value_is_400(self):
        self.refused(HEALTH + b"X-A: a\rb\r\n\r\n")

    def test_http_1_0_with_chunked_is_400(self):
        self.refused(embed_head(b"Connection: keep-alive\r\n"
                                b"Transfer-Encoding: chunked\r\n\r\n",
                                b"HTTP/1.0") + CHUNKED + HEALTH + b"\r\n")

    @unittest.expectedFailure
    def test_bare_lf_chunk_lines_are_400(self):
        # libmicrohttpd parses the chunk framing itself and hands tokvec
        # only the data: tokvec cannot see these. Left to the proxy (nginx
        # takes the chunked body and sends tokvec a Content-Length).
        self.refused(embed_head(b"Transfer-Encoding: chunked\r\n\r\n")
                     + b"12\n" + BODY + b"\n0\n\n")

    def test_well_formed_requests_keep_their_connection(self):
        self.ok(embed_head(b"Content-Length: 18\r\n\r\n") + BODY, "length")
        self.ok(embed_head(b"Transfer-Encoding: chunked\r\n\r\n") + CHUNKED,
                "chunked")
        self.ok(embed_head(b"Transfer-Encoding: Chunked\r\n\r\n") + CHUNKED,
                "Chunked")
        self.ok(HEALTH + b"X-Empty:\r\nX-Tab:\tv\t\r\n\r\n", "empty, tabs")
        self.ok(b"GET /health HTTP/1.1\nHost: localhost\nX-A: b\n\n",
                "bare LF")

    def test_health_stays_fast_beside_them(self):
        bad = [HEALTH + b"Transfer-Encoding: identity\r\n\r\n",
               b"GET /health?" + b"a=1&" * 1000 + b" HTTP/1.1\r\n"
               b"Host: localhost\r\n\r\n",
               embed_head(b"Content-Length : 33\r\n\r\n") + HEALTH + b"\r\n"]
        socks = []
        for i in range(30):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.sendall(bad[i % len(bad)])
            socks.append(s)
        t0 = time.time()
        self.assertEqual(health(self.port), 200)
        self.assertLess(time.time() - t0, 0.5 * SLOW)
        deadline = time.time() + 2 * SLOW
        for s in socks:  # each answered and closed, none left hanging
            buf = b""
            s.settimeout(max(0.05, deadline - time.time()))
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
            except socket.timeout:
                self.fail("a connection was still open after 2 s: %r"
                          % buf[:100])
            except ConnectionResetError:
                pass
            s.close()
            self.assertRegex(buf[:12], rb"HTTP/1\.1 (4\d\d|501)")


def main():
    global SLOW, PART
    argv = support.parse_args()
    if "--part" in argv:
        i = argv.index("--part")
        PART = int(argv[i + 1])
        del argv[i:i + 2]
    if "build-san" in support.BINARY:
        SLOW = 4.0
    prog = unittest.main(argv=argv, verbosity=2, exit=False)
    bad = getattr(Hostile, "sanitizer_report", False)
    if bad:
        print("server exited badly or logged errors (see above)",
              file=sys.stderr)
    sys.exit(0 if prog.result.wasSuccessful() and not bad else 1)


if __name__ == "__main__":
    main()
