"""End-to-end tests of the server's threads and listeners: HTTP threads
(--http-threads), workers (--threads), the Unix socket (--unix-socket) and
memory given back after idle.

Run: /usr/bin/python3 tests/e2e/test_threads.py --binary build/tokvec
     (`make e2e`; `make sanitize-test` and `make valgrind` run it again).

How the tests involve every HTTP thread: each TCP HTTP thread has its own
listening socket on the port (SO_REUSEPORT) and the kernel picks one by a
hash of the client's address and port, so K connections leave a given one
of N threads without any with probability (1 - 1/N)^K: 48 connections over
4 threads miss one with probability 4 x 0.75^48 = 4e-6. Waits poll
/metrics, never fixed sleeps.

What is covered:
  names      every thread is named by role: tv-http-N, tv-unix-N,
             tv-work-N, and the main thread (tokvec), whose control loop
             also ticks the reaper (no tv-reaper thread): a trickled
             request is still cut at its deadline.
  spread     many concurrent kept-alive connections over every HTTP thread,
             JSON and raw, every answer bit-exact against numpy.
  suspended  every HTTP thread holding suspended /embed connections while a
             SIGHUP swaps the table and a SIGTERM drains: every request
             answered completely from the table it started on, exit 0.
  unix       every route over the Unix socket, the same bytes as over TCP;
             the socket file is removed on exit and on drain; a stale file
             is replaced, a live one or a non-socket is refused.
  idle       RSS (anonymous) grows during a burst of large replies and
             falls back within a few seconds of idle.
"""
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support as tc  # noqa: E402  (the e2e support module)
from test_server import expected, init, load, wait_for  # noqa: E402

RAW = "application/octet-stream"
UNDER_VALGRIND = bool(os.environ.get("VALGRIND_LOG_DIR"))


def sanitized():
    """The binary is an ASan build: its allocator keeps freed memory in a
    quarantine and shadow pages stay, so RSS says nothing about ours."""
    with open(tc.BINARY, "rb") as f:
        return b"__asan_init" in f.read()


class UnixConnection(http.client.HTTPConnection):
    """http.client over AF_UNIX (what a same-host pipeline would use)."""

    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout * tc.TIME_SCALE)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def unix_request(path, method, url, body=None, headers=None, timeout=30):
    c = UnixConnection(path, timeout)
    try:
        c.request(method, url, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def unix_metric(path, name):
    text = unix_request(path, "GET", "/metrics")[2].decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def thread_names(pid):
    names = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                names.append(f.read().strip())
        except OSError:
            pass  # the thread ended meanwhile
    return sorted(names)


def rss_anon_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/%d/status" % pid)


class Threads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tokvec-e2e-threads-")
        cls.table = init(os.path.join(cls.tmp, "t.safetensors"), 1000, 64,
                         "--context", "64", "--seed", "7")
        cls.t = load(cls.table)
        # 4096 x 1024: a JSON reply of all 4096 rows takes a worker ~0.1 s
        # to format (tests hold the worker with 4 such rows); --threads 1 makes the others wait, suspended.
        cls.big = init(os.path.join(cls.tmp, "big.safetensors"), 4096, 1024,
                       "--context", "8", "--seed", "1")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def sock_path(self, name):
        return os.path.join(self.tmp, name)

    # -- names ---------------------------------------------------------------
    def test_every_thread_is_named_by_role(self):
        path = self.sock_path("names.sock")
        s = tc.Server(self.table, "--threads", "3", "--http-threads", "2",
                      "--unix-socket", path)
        try:
            # /health answers as soon as the first HTTP thread listens;
            # the names follow within moments (seconds under valgrind).
            names = wait_for(lambda: [n for n in [thread_names(s.proc.pid)]
                                      if "tv-unix-1" in n], what="names")[0]
        finally:
            self.assertEqual(s.stop(), 0)
        want = sorted(["tv-http-0", "tv-http-1", "tv-unix-0", "tv-unix-1",
                       "tv-work-0", "tv-work-1", "tv-work-2"])
        # The main thread keeps the process's name (valgrind's differs).
        others = [n for n in names if not n.startswith("tv-")]
        self.assertEqual(len(others), 1, names)
        self.assertEqual(sorted(n for n in names if n.startswith("tv-")),
                         want)

    def test_the_main_threads_loop_ticks_the_deadlines(self):
        # No thread of its own for the reaper: the control loop of the
        # main thread cuts a request trickled past 2 x request_timeout.
        s = tc.Server(self.table, "--threads", "1", "--request-timeout",
                      "%g" % (0.5 * tc.TIME_SCALE))
        try:
            names = thread_names(s.proc.pid)
            self.assertNotIn("tv-reaper", names)
            c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            c.sendall(b"GET /health HTTP/1.1\r\nX-Slow: ")
            c.settimeout(0.1)
            closed = False
            for _ in range(int(100 * tc.TIME_SCALE)):  # 10 s at most
                try:
                    c.send(b"a")
                    closed = c.recv(100) == b""
                except socket.timeout:
                    pass
                except OSError:
                    closed = True
                if closed:
                    break
            c.close()
            self.assertTrue(closed, "a request trickled for 10 s")
            self.assertNotIn("tv-reaper", thread_names(s.proc.pid))
        finally:
            self.assertEqual(s.stop(), 0)

    def test_http_threads_default_to_threads(self):
        s = tc.Server(self.table, "--threads", "3")
        try:
            names = wait_for(lambda: [n for n in [thread_names(s.proc.pid)]
                                      if "tv-http-2" in n], what="names")[0]
        finally:
            self.assertEqual(s.stop(), 0)
        self.assertEqual([n for n in names if n.startswith("tv-http-")],
                         ["tv-http-0", "tv-http-1", "tv-http-2"])

    # -- spread --------------------------------------------------------------
    def test_concurrent_connections_on_every_http_thread_are_bit_exact(self):
        # 48 kept-alive connections at once over 4 HTTP threads.
        conns = 48
        s = tc.Server(self.table, "--threads", "2", "--http-threads", "4",
                      "--access-log", "false")
        errors, done = [], []
        start = threading.Barrier(conns)
        per_conn = 3 if UNDER_VALGRIND else 20

        def client(k):
            rnd = random.Random(k)
            c = s.connect()
            try:
                start.wait(timeout=30 * tc.TIME_SCALE)
                for i in range(per_conn):
                    B, S = rnd.randint(1, 4), rnd.randint(1, 16)
                    ids = [[rnd.randrange(1000) for _ in range(S)]
                           for _ in range(B)]
                    sp = rnd.randrange(64 - S + 1)
                    want = expected(self.t, ids, sp)
                    accept = RAW if (k + i) % 2 else "application/json"
                    c.request("POST", "/embed",
                              json.dumps({"inputs": ids,
                                          "start_position": sp}),
                              {"Content-Type": "application/json",
                               "Accept": accept})
                    r = c.getresponse()
                    body = r.read()
                    if r.status != 200:
                        errors.append((k, i, r.status, body[:200]))
                        return
                    if accept == RAW:
                        got = np.frombuffer(body, "<f4").reshape(want.shape)
                    else:
                        got = np.array(json.loads(body)["embeddings"],
                                       dtype=np.float32)
                    if got.tobytes() != want.tobytes():
                        errors.append((k, i, "values differ"))
                        return
                done.append(k)
            except Exception as e:  # recorded, fails the test
                errors.append((k, repr(e)))
            finally:
                c.close()
        try:
            ts = [threading.Thread(target=client, args=(k,))
                  for k in range(conns)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(errors, [])
            self.assertEqual(sorted(done), list(range(conns)))
        finally:
            self.assertEqual(s.stop(), 0)

    # -- suspended connections through reload and drain ---------------------
    def test_reload_and_drain_with_suspended_connections_on_every_thread(self):
        # One worker, 4 HTTP threads, 40 slow /embed requests on 40
        # connections: one runs, 39 wait suspended, spread over every HTTP
        # thread (see the file comment). Then SIGHUP swaps the table and
        # SIGTERM drains.
        n = 40
        path = os.path.join(self.tmp, "live.safetensors")
        shutil.copy(self.big, path)
        s = tc.Server(path, "--threads", "1", "--http-threads", "4",
                      "--access-log", "false")
        ids = list(range(512))  # JSON: ~15 ms of formatting each
        body = json.dumps({"inputs": [ids], "positions": False})
        old = load(path)
        want = expected(old, [ids], positions=False)
        out = [None] * n

        def slow(k):
            try:
                out[k] = s.request("POST", "/embed", body, timeout=300)
            except Exception as e:  # recorded, fails the test
                out[k] = e
        ts = [threading.Thread(target=slow, args=(k,)) for k in range(n)]
        try:
            # Hold the worker so that every request finds it busy (~0.4 s
            # natively; memcheck is ~30x slower at it, Python is not, and
            # runs the scalar float formatter: two rows there).
            rows = 2 if UNDER_VALGRIND else 4
            hold = threading.Thread(target=lambda: s.request(
                "POST", "/embed", json.dumps({"inputs": [list(range(4096))]
                                              * rows, "positions": False}),
                timeout=300))
            hold.start()
            wait_for(lambda: s.metric("tokvec_inflight_requests") == 2 and
                     s.metric("tokvec_queue_depth") == 0,
                     what="the long job to run")
            for t in ts:
                t.start()
            # n waiting (+1 running, +1: this /metrics request itself)
            wait_for(lambda: s.metric("tokvec_inflight_requests") == n + 2
                     and s.metric("tokvec_queue_depth") == n,
                     what="%d requests suspended in the queue" % n)
            init(path + ".tmp", 4096, 1024, "--context", "8", "--seed", "2")
            os.rename(path + ".tmp", path)
            s.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: s.metric('tokvec_reloads_total{result="ok"}')
                     == 1, what="the reload")
            # Still suspended through the reload (most of them natively).
            self.assertGreaterEqual(s.metric("tokvec_queue_depth"), 1)
            s.proc.send_signal(signal.SIGTERM)
            for t in ts:
                t.join()
            hold.join()
            rc = s.proc.wait(timeout=300 * tc.TIME_SCALE)
            s.close_log()
            self.assertEqual(rc, 0, s.stderr())
            # An answer equal, byte for byte, to one already compared is
            # not parsed again (512 x 1024 floats of JSON each).
            checked = set()
            for r in out:
                self.assertIsInstance(r, tuple, r)
                st, hdr, data = r
                self.assertEqual(st, 200, data[:200])
                self.assertEqual(len(data), int(hdr["Content-Length"]))
                if data in checked:
                    continue
                # Each answer comes from the table its request started on.
                got = np.array(json.loads(data)["embeddings"],
                               dtype=np.float32)
                self.assertEqual(got.tobytes(), want.tobytes())
                checked.add(data)
        finally:
            if s.proc.poll() is None:
                s.stop()

    # -- the Unix socket -----------------------------------------------------
    def test_every_route_answers_the_same_over_the_unix_socket(self):
        sock = self.sock_path("routes.sock")
        s = tc.Server(self.table, "--unix-socket", sock, "--threads", "2")
        try:
            self.assertTrue(os.path.exists(sock))
            body = json.dumps({"inputs": [[1, 2, 3], [4, 5, 6]],
                               "start_position": 2})
            cases = [
                ("GET", "/health", None, {}),
                ("GET", "/ready", None, {}),
                ("GET", "/info", None, {}),
                ("GET", "/openapi.json", None, {}),
                ("GET", "/tokens/3", None, {}),
                ("GET", "/tokens/1000", None, {}),
                ("GET", "/nope", None, {}),
                ("DELETE", "/embed", None, {}),
                ("POST", "/embed", body, {}),
                ("POST", "/embed", body, {"Accept": RAW}),
                ("POST", "/embed", body, {"Accept": "application/x-npy"}),
                ("POST", "/embed", "{", {}),
                ("POST", "/embed", body, {"Content-Type": "text/csv"}),
            ]
            for method, url, b, h in cases:
                tcp = s.request(method, url, b, h)
                uds = unix_request(sock, method, url, b, h)
                self.assertEqual(uds[0], tcp[0], (method, url))
                self.assertEqual(uds[2], tcp[2], (method, url))
                self.assertEqual(uds[1].get("Content-Type"),
                                 tcp[1].get("Content-Type"))
            st, _, data = unix_request(sock, "POST", "/embed", body,
                                       {"Accept": RAW})
            self.assertEqual(data, expected(self.t, [[1, 2, 3], [4, 5, 6]],
                                            2).tobytes())
            st, _, m = unix_request(sock, "GET", "/metrics")
            self.assertEqual(st, 200)
            self.assertIn(b"tokvec_requests_total", m)
        finally:
            self.assertEqual(s.stop(), 0)
        self.assertFalse(os.path.exists(sock), "socket file left behind")

    def test_stale_socket_file_is_replaced(self):
        sock = self.sock_path("stale.sock")
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(sock)
        stale.close()  # the file stays; nobody accepts on it
        s = tc.Server(self.table, "--unix-socket", sock)
        try:
            self.assertEqual(unix_request(sock, "GET", "/health")[0], 200)
        finally:
            self.assertEqual(s.stop(), 0)

    def serve_refused(self, sock):
        """`tokvec serve --unix-socket sock`, expected to exit at start."""
        return subprocess.run([tc.BINARY, "serve", "--table", self.table,
                               "--port", str(tc.free_port()),
                               "--unix-socket", sock],
                              capture_output=True, text=True,
                              timeout=60 * tc.TIME_SCALE,
                              env=tc.serve_env())

    def test_live_socket_or_other_file_is_refused_at_start(self):
        sock = self.sock_path("live.sock")
        s = tc.Server(self.table, "--unix-socket", sock)
        try:
            r = self.serve_refused(sock)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("in use", r.stderr)
            # The first server still answers there.
            self.assertEqual(unix_request(sock, "GET", "/health")[0], 200)
        finally:
            self.assertEqual(s.stop(), 0)
        plain = self.sock_path("plain-file")
        with open(plain, "w") as f:
            f.write("not a socket")
        r = self.serve_refused(plain)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("not a socket", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertTrue(os.path.exists(plain))  # never deleted

    def test_drain_removes_the_socket_file_at_once(self):
        sock = self.sock_path("drain.sock")
        s = tc.Server(self.big, "--unix-socket", sock, "--threads", "1")
        out = []
        # 4 x 4096 rows of JSON (~0.4 s): one row alone became too quick
        # to be seen running once the float formatter went batch-wise
        # (under memcheck one row is slow enough, and 4 outlast the drain).
        rows = 1 if UNDER_VALGRIND else 4
        body = json.dumps({"inputs": [list(range(4096))] * rows,
                           "positions": False})
        t = threading.Thread(target=lambda: out.append(unix_request(
            sock, "POST", "/embed", body, timeout=120)))
        t.start()
        try:
            wait_for(lambda: s.metric("tokvec_queue_depth") == 0 and
                     s.metric("tokvec_inflight_requests") == 2,
                     what="the slow request to run")
            s.proc.send_signal(signal.SIGTERM)
            wait_for(lambda: not os.path.exists(sock),
                     what="the socket file to go")
            t.join()
            self.assertEqual(s.proc.wait(timeout=120 * tc.TIME_SCALE), 0)
            s.close_log()
            self.assertEqual(out[0][0], 200)  # the request in flight ends
        finally:
            if s.proc.poll() is None:
                s.stop()

    # -- idle memory ---------------------------------------------------------
    def test_memory_of_a_burst_is_given_back_after_idle(self):
        if UNDER_VALGRIND or sanitized():
            self.skipTest("RSS is the checker's, not ours, under valgrind "
                          "or ASan")
        s = tc.Server(self.big, "--threads", "2", "--access-log", "false")
        pid = s.proc.pid
        try:
            s.embed({"inputs": [[1]]})
            base = rss_anon_kib(pid)
            # 4 MiB raw and ~11 MB JSON replies, several at once: their
            # buffers are cached for reuse while the burst lasts.
            raw = json.dumps({"inputs": [list(range(1024))] * 4,
                              "positions": False})
            js = json.dumps({"inputs": [list(range(4096))],
                             "positions": False})
            errs = []

            def burst(k):
                for _ in range(3):
                    st = s.request("POST", "/embed", raw if k % 2 else js,
                                   {"Accept": RAW if k % 2 else
                                    "application/json"}, timeout=120)[0]
                    if st != 200:
                        errs.append(st)
            ts = [threading.Thread(target=burst, args=(k,))
                  for k in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(errs, [])
            peak = rss_anon_kib(pid)
            self.assertGreater(peak - base, 16 * 1024,
                               "the burst should hold > 16 MiB (%d KiB)"
                               % (peak - base))
            # Idle: cached buffers go after ~1.5 s, checked twice a second.
            wait_for(lambda: rss_anon_kib(pid) - base
                     < (peak - base) * 0.25, timeout=10,
                     what="RSS to fall back after idle (base %d KiB, peak "
                          "%d KiB)" % (base, peak))
        finally:
            self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    tc.main()
