#!/usr/bin/python3
"""loadbench.py -- the HTTP half of `make bench` (bench/run.sh runs the core half
first and hands its output over with --core).

Starts, on free loopback ports:
  tokvec   build/tokvec serve --table TABLE --access-log false
  peer     the PyTorch + FastAPI peer (bench/peers/torch_fastapi.py,
           python3 -m uvicorn --workers 2)
  nginx    nginx-light with its own temporary config, serving static files of
           exactly each response's bytes: the HTTP ceiling
checks that tokvec and the peer answer the same bytes for the same body, then
drives all three with wrk (the shared post.lua through bench/stats.lua),
alternating targets point by point so the noise of this shared machine hits
all of them alike. Then the scaling sweeps (tokens per request, dim,
connections), the start-up time vs table size, the serial fraction (CPU of
the server's one-of-a-kind threads, from /proc/PID/task, at --threads 2;
env BENCH_BASELINE=/path/to/older/tokvec measures that binary alongside)
and Unix socket vs TCP (bench/httpload, since wrk has no Unix sockets;
env HTTPLOAD names another httpload binary than BUILD/bench/httpload),
and large replies: 32x128 raw against bench/ceiling (the loopback ceiling:
the same bytes sent from one reused buffer) and nginx, medians of
alternating rounds (env BENCH_BASELINE measured alongside too).

Writes a table to stdout and bench/results/latest.md (+ latest.json, PNG
plots by gnuplot). Exit status 1 if tokvec and the peer disagree.

  --quick    ~1 s per point, fewer sweep points (for development)
"""
import argparse
import base64
import http.client
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
LOAD = os.path.join(TOP, "bench", "load")
PEERS = os.path.join(TOP, "bench", "peers")
POST_LUA = os.path.abspath(os.path.join(LOAD, "post.lua"))
STATS_LUA = os.path.join(TOP, "bench", "stats.lua")
PY = "/usr/bin/python3"
NPROC = os.cpu_count() or 1


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --------------------------------------------------------------- processes
def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def port_free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _answers_200(s, path):
    """GET path on connected socket s: True on a 200 (s is closed)."""
    try:
        s.sendall(b"GET " + path.encode() + b" HTTP/1.0\r\n"
                  b"Host: localhost\r\n\r\n")
        data = s.recv(64)
        return data.startswith(b"HTTP/1.") and data[9:12] == b"200"
    except OSError:
        return False
    finally:
        s.close()


def health_ok(port, path="/health", timeout=1.0):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError:
        return False
    return _answers_200(s, path)


class Proc:
    """A server we start in its own session; stopped by its own pid/pgid."""

    def __init__(self, name, cmd, port, cwd=None, env=None, logfile=None):
        self.name, self.port = name, port
        self.logf = open(logfile or os.devnull, "ab")
        e = dict(os.environ)
        e.update(env or {})
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(cmd, cwd=cwd, env=e, stdout=self.logf,
                                  stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL,
                                  start_new_session=True)

    def wait_healthy(self, timeout, path="/health", poll=0.0005):
        end = self.t0 + timeout
        while time.perf_counter() < end:
            if self.p.poll() is not None:
                return None
            if health_ok(self.port, path):
                return time.perf_counter() - self.t0
            time.sleep(poll)
        return None

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        self.logf.close()


# --------------------------------------------------------------- requests
def post(port, body, accept, path="/embed", timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", path, body=body,
              headers={"Content-Type": "application/json", "Accept": accept})
    r = c.getresponse()
    data = r.read()
    hdr = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdr, data


def body_file(workdir, name, B, S, vocab, seed, extra=None):
    """A request body like the shared ones: random ids, no spaces."""
    path = os.path.join(workdir, "bodies", name + ".json")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        rnd = random.Random(seed)
        obj = {"inputs": [[rnd.randrange(vocab) for _ in range(S)]
                          for _ in range(B)]}
        obj.update(extra or {})
        with open(path, "w") as f:
            f.write(json.dumps(obj, separators=(",", ":")))
    return path


def with_extra(workdir, src, name, extra):
    path = os.path.join(workdir, "bodies", name + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    obj = json.load(open(src))
    obj.update(extra)
    with open(path, "w") as f:
        f.write(json.dumps(obj, separators=(",", ":")))
    return path


def npy_data(b):
    if not b.startswith(b"\x93NUMPY"):
        raise ValueError("no npy magic")
    major = b[6]
    if major == 1:
        hl, off = struct.unpack("<H", b[8:10])[0], 10
    else:
        hl, off = struct.unpack("<I", b[8:12])[0], 12
    hdr = b[off:off + hl].decode("latin1")
    return hdr, b[off + hl:]


def f32(x):
    return struct.pack("<f", x)


def flat(x, out):
    if isinstance(x, list):
        for y in x:
            flat(y, out)
    else:
        out.append(x)
    return out


# --------------------------------------------------------------- wrk
CLK = os.sysconf("SC_CLK_TCK")


def pg_cpu(pgid):
    """CPU seconds (user+sys) of the live processes of process group pgid."""
    tot = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        if int(f[2]) == pgid:          # field 5: pgrp
            tot += int(f[11]) + int(f[12])  # fields 14, 15: utime, stime
    return tot / CLK


def wrk(url, body, accept, conns, duration, threads=None, timeout=30,
        pgid=None):
    threads = threads or min(NPROC, conns)
    env = dict(os.environ, POST_LUA=POST_LUA, BODY=os.path.abspath(body),
               ACCEPT=accept)
    cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % max(1, round(duration)),
           "--timeout", "%ds" % timeout, "-s", STATS_LUA, url]
    c0 = pg_cpu(pgid) if pgid else None
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                         timeout=duration + timeout + 60).stdout
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    c1 = pg_cpu(pgid) if pgid else None
    m = re.search(r"^TVSTATS (\{.*\})$", out, re.M)
    if not m:
        return None
    s = json.loads(m.group(1))
    sec = s["duration_us"] / 1e6
    ok = s["requests"] - s["status"]
    s["rps"] = ok / sec if sec > 0 else 0.0
    s["errors"] = (s["status"] + s["connect"] + s["read"] + s["write"] +
                   s["timeout"])
    n = max(1, s["requests"])
    s["client_cpu_us"] = 1e6 * (r1.ru_utime + r1.ru_stime - r0.ru_utime -
                                r0.ru_stime) / n
    s["server_cpu_us"] = 1e6 * (c1 - c0) / n if pgid else None
    return s


class Runner:
    """Runs wrk points; keeps the best of the rounds for each key."""

    def __init__(self, quick):
        self.quick = quick
        self.dur = 1.0 if quick else 3.0
        self.rounds = 1 if quick else 2

    pgids = {}  # url prefix -> process group of the server behind it

    def wait_idle(self, limit=180):
        """Until every server we watch is idle (< 10% of a core over 0.25 s):
        requests wrk gave up on may still be running, and would steal the
        next point's CPU."""
        end = time.time() + limit
        while time.time() < end:
            pgs = list(set(self.pgids.values()))
            c0 = [pg_cpu(p) for p in pgs]
            time.sleep(0.25)
            c1 = [pg_cpu(p) for p in pgs]
            if all(b - a < 0.025 for a, b in zip(c0, c1)):
                return
        log("  (servers still busy after %d s)" % limit)

    def point(self, url, body, accept, conns, dur=None, threads=None):
        dur = dur or self.dur
        pg = next((v for k, v in self.pgids.items() if url.startswith(k)),
                  None)
        self.wait_idle()
        s = wrk(url, body, accept, conns, dur, threads, pgid=pg)
        # Slow points (a few requests in the window): measure longer.
        if s and s["requests"] < 8 and dur < 20:
            self.wait_idle()
            s = wrk(url, body, accept, conns, 20, threads, pgid=pg)
            s["slow"] = True
        return s

    def register(self, proc):
        if proc:
            self.pgids["http://127.0.0.1:%d/" % proc.port] = proc.p.pid


def better(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a if a["rps"] >= b["rps"] else b


# --------------------------------------------------------------- threads
def stat_ticks(path):
    """utime + stime (clock ticks) from a /proc .../stat file."""
    st = open(path).read()
    f = st[st.rindex(")") + 2:].split()
    return int(f[11]) + int(f[12])  # fields 14, 15


PAR_NAME = re.compile(r"^(.+)-(\d+)$")


def task_cpu(pid):
    """{tid: (comm, utime+stime ticks)} of process pid's live threads."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tids:
        d = "/proc/%d/task/%s/" % (pid, t)
        try:
            ticks = stat_ticks(d + "stat")
            comm = open(d + "comm").read().rstrip("\n")
        except (OSError, ValueError):
            continue  # it ended meanwhile
        out[int(t)] = (comm, ticks)
    return out


class ThreadWatch:
    """CPU of each thread of process pid over a window: /proc/PID/task/*
    read at the start, every `interval` s and at the end. A thread that
    appears is counted from 0; one that ends keeps what it had when last
    seen, and what it spent after that (the process's own stat includes
    ended threads) is one "(exited threads)" entry (tid -1). For each name
    stem (`STEM-<n>`) the most threads alive at once is kept, for
    classify()."""

    def __init__(self, pid, interval=0.1):
        self.pid, self.interval = pid, interval
        try:
            self.proc_name = open("/proc/%d/comm" % pid).read().rstrip("\n")
            self.p0 = stat_ticks("/proc/%d/stat" % pid)
        except OSError:
            self.proc_name, self.p0 = "?", 0
        self.stems = {}
        self.first = self._sample()
        self.last = dict(self.first)
        self.ev = threading.Event()
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()

    def _sample(self):
        t = task_cpu(self.pid)
        live = {}
        for comm, _ in t.values():
            m = PAR_NAME.match(comm)
            if m and comm != self.proc_name:
                live[m.group(1)] = live.get(m.group(1), 0) + 1
        for k, v in live.items():
            self.stems[k] = max(self.stems.get(k, 0), v)
        return t

    def _loop(self):
        while not self.ev.wait(self.interval):
            self.last.update(self._sample())

    def stop(self):
        self.ev.set()
        self.th.join()
        final = self._sample()
        try:
            p1 = stat_ticks("/proc/%d/stat" % self.pid)
        except OSError:
            p1 = self.p0
        self.last.update(final)
        th = {}
        for tid, (name, t1) in self.last.items():
            t0 = self.first[tid][1] if tid in self.first else 0
            th[tid] = {"name": name, "ticks": t1 - t0}
        gone = [t for t in self.last if t not in final]
        resid = (p1 - self.p0) - sum(v["ticks"] for v in th.values())
        # Without an ended thread the residue is only the reads' skew.
        if gone and resid > 0:
            th[-1] = {"name": "(exited threads)", "ticks": resid}
        return {"threads": th, "stems": dict(self.stems),
                "proc_name": self.proc_name, "pid": self.pid,
                "appeared": len([t for t in self.last
                                 if t not in self.first]),
                "ended": len(gone)}


def merge_watch(acc, w):
    """Sums ThreadWatch results of the same process (rounds)."""
    if acc is None:
        return {"threads": {k: dict(v) for k, v in w["threads"].items()},
                "stems": dict(w["stems"]), "proc_name": w["proc_name"],
                "pid": w["pid"], "appeared": w["appeared"],
                "ended": w["ended"]}
    for tid, v in w["threads"].items():
        a = acc["threads"].setdefault(tid, {"name": v["name"], "ticks": 0})
        a["ticks"] += v["ticks"]
        a["name"] = v["name"]
    for k, v in w["stems"].items():
        acc["stems"][k] = max(acc["stems"].get(k, 0), v)
    acc["appeared"] += w["appeared"]
    acc["ended"] += w["ended"]
    return acc


def classify(w):
    """Marks each thread parallel or one of a kind and returns the serial
    fraction (CPU of the one-of-a-kind threads / all), None without CPU.
    Parallel iff the name is STEM-<number>, it is not the process's name,
    and at least 2 threads of that STEM were alive at once."""
    tot = ser = 0
    for tid, v in w["threads"].items():
        m = PAR_NAME.match(v["name"])
        v["parallel"] = bool(tid >= 0 and m and v["name"] != w["proc_name"]
                             and w["stems"].get(m.group(1), 0) >= 2)
        tot += v["ticks"]
        if not v["parallel"]:
            ser += v["ticks"]
    w["total_ticks"], w["serial_ticks"] = tot, ser
    w["serial_fraction"] = ser / tot if tot > 0 else None
    return w["serial_fraction"]


def busiest(w, n=4):
    """'name share%' of the n busiest threads."""
    tot = sum(v["ticks"] for v in w["threads"].values())
    if tot <= 0:
        return "n/a"
    top = sorted(w["threads"].items(), key=lambda kv: -kv[1]["ticks"])[:n]
    return ", ".join("%s%s %.0f%%" % (
        v["name"], " (main)" if tid == w["pid"] else "",
        100.0 * v["ticks"] / tot) for tid, v in top if v["ticks"] > 0)


def amdahl(sf, n):
    """Speed-up bound on n cores for serial fraction sf."""
    return 1.0 / (sf + (1.0 - sf) / n)


def serve_options(binary):
    """The --options `tokvec serve --help` lists."""
    try:
        r = subprocess.run([binary, "serve", "--help"], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return set(re.findall(r"--([a-z][a-z0-9-]*)", r.stdout + r.stderr))


# --------------------------------------------------------------- httpload
def httpload(hl, target, body, accept, conns, threads, duration,
             pgid=None, timeout=30):
    """One bench/httpload run; target: ["--unix", PATH] or ["--tcp", H:P].
    The parsed HTTPLOAD line plus server_cpu_us (process group pgid)."""
    cmd = [hl] + target + ["-c", str(conns), "-t", str(threads),
                           "-d", "%g" % duration, "--timeout", str(timeout),
                           "-H", "Accept: " + accept, "--body", body]
    c0 = pg_cpu(pgid) if pgid else None
    try:
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=duration + timeout + 60)
    except subprocess.TimeoutExpired:
        return None
    c1 = pg_cpu(pgid) if pgid else None
    m = re.search(r"^HTTPLOAD (\{.*\})$", r.stdout, re.M)
    if not m:
        log("  httpload: " + (r.stderr.strip() or "no result line"))
        return None
    s = json.loads(m.group(1))
    s["server_cpu_us"] = (1e6 * (c1 - c0) / max(1, s["requests"])
                          if pgid else None)
    return s


def unix_health(path, timeout=1.0):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except OSError:
        s.close()
        return False
    return _answers_200(s, "/health")


# --------------------------------------------------------------- nginx
class Nginx:
    def __init__(self, port):
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="tokvec-bench-nginx-")
        os.chmod(self.dir, 0o755)
        self.www = os.path.join(self.dir, "www")
        os.mkdir(self.www)
        os.chmod(self.www, 0o755)
        d = self.dir
        conf = """worker_processes %d;
pid %s/nginx.pid;
error_log %s/error.log warn;
daemon off;
worker_rlimit_nofile 8192;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %s/cb; proxy_temp_path %s/px;
  fastcgi_temp_path %s/fc; uwsgi_temp_path %s/uw; scgi_temp_path %s/sc;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 100000000; keepalive_timeout 300s;
  client_body_buffer_size 1m; client_max_body_size 64m;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:%d backlog=4096;
    root %s;
    # POST to a static file: answer it as a GET would (the 405 -> 200 trick)
    location / { error_page 405 =200 $uri; }
  }
}
""" % (NPROC, d, d, d, d, d, d, d, port, self.www)
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(conf)
        self.proc = Proc("nginx", ["nginx", "-p", d, "-e", d + "/error.log",
                                   "-c", d + "/nginx.conf"], port,
                         logfile=os.path.join(d, "out.log"))

    def add(self, name, data):
        p = os.path.join(self.www, name)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, 0o644)
        return "http://127.0.0.1:%d/%s" % (self.port, name)

    def healthy(self):
        self.add("health", b"ok")
        end = time.time() + 10
        while time.time() < end:
            try:
                st, _, _ = post(self.port, b"{}", "*/*", "/health", 2)
                if st == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def stop(self):
        self.proc.stop(signal.SIGQUIT)
        shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------- servers
def tokvec_cmd(binary, table, port, extra=()):
    return [binary, "serve", "--table", table, "--host", "127.0.0.1",
            "--port", str(port), "--access-log", "false",
            "--log-level", "warn"] + list(extra)


def start_tokvec(binary, table, workdir, tag, extra=()):
    port = free_port()
    p = Proc("tokvec", tokvec_cmd(binary, table, port, extra), port,
             logfile=os.path.join(workdir, "tokvec-%s.log" % tag))
    if p.wait_healthy(30) is None:
        log("!! tokvec did not answer /health (see %s)" %
            os.path.join(workdir, "tokvec-%s.log" % tag))
        p.stop()
        return None
    return p


def start_peer(workdir, vocab=50257, dim=256, context=1024, port=None):
    if port is None:
        port = 18081 if port_free(18081) else free_port()
    env = {"PEER_VOCAB": str(vocab), "PEER_DIM": str(dim),
           "PEER_CONTEXT": str(context), "PEER_SEED": "123",
           "OMP_NUM_THREADS": "1"}
    p = Proc("peer", [PY, "-m", "uvicorn", "torch_fastapi:app", "--host",
                      "127.0.0.1", "--port", str(port), "--workers", "2",
                      "--log-level", "warning", "--no-access-log"],
             port, cwd=PEERS, env=env,
             logfile=os.path.join(workdir, "peer.log"))
    t = p.wait_healthy(180, poll=0.05)
    if t is None:
        log("!! peer did not answer /health (see %s/peer.log)" % workdir)
        p.stop()
        return None, None
    # uvicorn answers once the first worker is up; let the second come up.
    time.sleep(2)
    return p, t


# --------------------------------------------------------------- formatting
def fmt_rps(x):
    if x is None:
        return "n/a"
    return "%.0f" % x if x >= 100 else "%.1f" % x


def fmt_ms(us):
    if us is None:
        return "n/a"
    ms = us / 1000.0
    return "%.3f" % ms if ms < 1 else "%.2f" % ms if ms < 100 else "%.0f" % ms


def fmt_us(us):
    if us is None:
        return "n/a"
    return "%.0f" % us if us >= 10 else "%.1f" % us


def fmt_ratio(a, b, pct=False):
    if not a or not b:
        return "n/a"
    r = a / b
    if pct:
        return "%.0f%%" % (100 * r)
    return "%.1fx" % r if r < 100 else "%.0fx" % r


def fmt_bytes(n):
    for u, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            v = n / k
            return ("%.0f %s" if v >= 10 or v == int(v) else "%.1f %s") % (v, u)
    return "%d B" % n


def md_table(headers, rows):
    w = [len(h) for h in headers]
    for r in rows:
        for i, c in enumerate(r):
            w[i] = max(w[i], len(str(c)))
    right = [i > 0 for i in range(len(headers))]

    def line(cells):
        out = []
        for i, c in enumerate(cells):
            c = str(c)
            out.append(c.rjust(w[i]) if right[i] else c.ljust(w[i]))
        return "| " + " | ".join(out) + " |"
    sep = "|" + "|".join(("-" * (w[i] + 1) + ":") if right[i] else
                         ("-" * (w[i] + 2)) for i in range(len(w))) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


# --------------------------------------------------------------- machine
def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = "%.1f GiB" % (int(line.split()[1]) / 1048576)
    except OSError:
        pass
    flags = ""
    try:
        txt = open("/proc/cpuinfo").read()
        fl = re.search(r"^flags\s*:(.*)$", txt, re.M).group(1).split()
        flags = " ".join(f for f in ("avx2", "avx512f", "f16c", "fma")
                         if f in fl)
    except (OSError, AttributeError):
        pass
    virt = ""
    try:
        virt = subprocess.run(["systemd-detect-virt"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        pass

    def ver(cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"
    return {
        "nproc": NPROC, "cpu": cpu, "flags": flags, "mem": mem,
        "kernel": platform.release(), "virt": virt or "?",
        "wrk": ver(["wrk", "--version"]), "nginx": ver(["nginx", "-v"]),
        "python": platform.python_version(),
        "torch": subprocess.run([PY, "-c", "import torch;print(torch.__version__)"],
                                capture_output=True, text=True).stdout.strip() or "?",
    }


# --------------------------------------------------------------- core
def parse_core(text):
    """Numbers from bench/run.sh's core section (embedbench, floatbench,
    init timings); missing ones stay None."""
    c = {}

    def g(pat, key, cast=float):
        m = re.search(pat, text, re.M)
        c[key] = cast(m.group(1)) if m else None
    g(r"^memcpy\t([\d.]+) GB/s", "memcpy_gbs")
    g(r"^embed f32\t([\d.]+) GB/s", "embed_gbs")
    g(r"^embed f32\t[\d.]+ GB/s\t(\d+)% of memcpy", "embed_pct_memcpy")
    g(r"^json\t([\d.]+) M floats/s", "json_mfs_embedbench")
    g(r"^init \S+ \+ \S+\t([\d.]+) s", "init_s")
    g(r"^torch init \S+ \+ \S+\t([\d.]+) s", "torch_init_s")
    # floatbench: "json floats normal(0,1) <TAB>tokvec N M/s<TAB>snprintf
    # %.9g N M/s<TAB>ratio Rx"; the normal(0,1) line is the embedding case.
    tok = snp = None
    m = re.search(r"^json floats normal\S*\s+tokvec ([\d.]+) M/s\s+"
                  r"snprintf %\.9g ([\d.]+) M/s", text, re.M)
    if m:
        tok, snp = float(m.group(1)), float(m.group(2))
    c["json_mfs"] = tok if tok is not None else c.get("json_mfs_embedbench")
    # floatbench with the table: "json floats table<TAB>before N M/s<TAB>
    # tokvec N M/s (Rx)<TAB>json rows of D N M/s (Rx)<TAB>scalar N M/s
    # (Rx)": the formatter it replaced, per value, and the server's batch
    # path (tokvec_f32_format_json) and its portable scalar form
    m = re.search(r"^json floats table\s+before ([\d.]+) M/s\s+tokvec "
                  r"([\d.]+) M/s \S+\s+json rows of \d+ ([\d.]+) M/s \S+"
                  r"\s+scalar ([\d.]+) M/s", text, re.M)
    for i, k in enumerate(("table_before_mfs", "table_tokvec_mfs",
                           "table_json_mfs", "table_json_scalar_mfs")):
        c[k] = float(m.group(i + 1)) if m else None
    # idbench: "id JSON parse fast 32x128<TAB>N MB/s<TAB>..."
    g(r"^id JSON parse fast 32x128\t([\d.]+) MB/s", "ids_fast_mbs")
    g(r"^id JSON parse jansson 32x128\t([\d.]+) MB/s", "ids_jansson_mbs")
    c["snprintf_mfs"] = snp
    return c


def embedbench(build, table, B, S):
    try:
        out = subprocess.run([os.path.join(build, "bench", "embedbench"),
                              table, str(B), str(S)], capture_output=True,
                             text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return parse_core(out)


# --------------------------------------------------------------- plots
def gnuplot(path, title, xlabel, ylabel, series, logx=True, logy=True,
            extra=""):
    """series: [(label, [(x, y), ...])]; one PNG."""
    if not shutil.which("gnuplot"):
        return False
    lines = ["set terminal pngcairo size 900,560 font 'sans,10'",
             "set output '%s'" % path, "set title '%s'" % title,
             "set xlabel '%s'" % xlabel, "set ylabel '%s'" % ylabel,
             "set grid", "set key outside right top"]
    if logx:
        lines.append("set logscale x 2" if logx == 2 else "set logscale x")
    if logy:
        lines.append("set logscale y")
    lines.append(extra)
    plots = []
    for i, (label, pts) in enumerate(series):
        pts = [(x, y) for x, y in pts if y]
        if not pts:
            continue
        lines.append("$d%d << EOD" % i)
        lines += ["%g %g" % p for p in pts]
        lines.append("EOD")
        plots.append("$d%d using 1:2 with linespoints lw 2 title '%s'" %
                     (i, label))
    if not plots:
        return False
    lines.append("plot " + ", ".join(plots))
    r = subprocess.run(["gnuplot"], input="\n".join(lines), text=True,
                       capture_output=True)
    if r.returncode != 0:
        log("gnuplot: " + r.stderr.strip())
        return False
    return True


# --------------------------------------------------------------- serial
SERIAL_CONNS, SERIAL_WRK_THREADS, SERIAL_THREADS = 32, 2, 2
LARGE_ROUNDS = 5


def warm_up(port, wls, accepts, n=3):
    """A few requests of each workload, so a freshly started server has
    touched its table pages and reply buffers before it is measured."""
    for _, f, body in wls:
        data = open(body, "rb").read()
        for _ in range(n):
            try:
                post(port, data, accepts[f])
            except OSError:
                pass


def section_serial(a, run, res, bins, table, workdir, ngx, bodies, wls,
                   accepts):
    """Serial fraction, CPU per request vs nginx, and the threads sweep.
    bins: [(label, binary)], the current binary first; wls: [(workload,
    format, body file)]. Returns the markdown section."""
    log("\n== serial fraction (--threads %d, wrk -t%d -c%d)" % (
        SERIAL_THREADS, SERIAL_WRK_THREADS, SERIAL_CONNS))
    opts = {lab: serve_options(b) for lab, b in bins}
    notes = []
    srv = {}
    for lab, b in bins:
        p = start_tokvec(b, table, workdir, "serial-" + lab,
                         ["--threads", str(SERIAL_THREADS)])
        if p:
            run.register(p)
            srv[lab] = p
            warm_up(p.port, wls, accepts)
        else:
            notes.append("%s (%s) did not start." % (lab, b))
    # the binaries must agree on the bytes they serve
    if len(srv) > 1:
        labs = list(srv)
        for w, f, body in wls:
            data = open(body, "rb").read()
            r = [post(srv[lab].port, data, accepts[f]) for lab in labs]
            if not all(x[0] == 200 and x[2] == r[0][2] for x in r):
                notes.append("%s %s: %s answer different bytes." % (
                    w, f, " and ".join(labs)))
    acc = {}  # (workload, fmt, target) -> summed point
    try:
        for rnd in range(run.rounds):
            for w, f, body in wls:
                targets = [(lab, "http://127.0.0.1:%d/embed" % srv[lab].port,
                            srv[lab].p.pid) for lab, _ in bins if lab in srv]
                if (w, f) in bodies:
                    targets.append(("nginx", ngx.add(
                        "serial-%s.%s" % (w, f), bodies[(w, f)]), None))
                if rnd % 2:
                    targets.reverse()
                for tgt, url, pid in targets:
                    run.wait_idle()
                    tw = ThreadWatch(pid) if pid else None
                    pg = pid or ngx.proc.p.pid
                    s = wrk(url, body, accepts[f], SERIAL_CONNS, run.dur,
                            SERIAL_WRK_THREADS, pgid=pg)
                    wt = tw.stop() if tw else None
                    if not s:
                        log("  %-6s %-4s %-8s wrk failed" % (w, f, tgt))
                        continue
                    k = (w, f, tgt)
                    a_ = acc.setdefault(k, {"rps": 0, "p50": None,
                                            "p99": None, "requests": 0,
                                            "errors": 0, "cpu_s": 0.0,
                                            "watch": None, "rounds": 0})
                    if s["rps"] >= a_["rps"]:
                        a_.update(rps=s["rps"], p50=s["p50"], p99=s["p99"])
                    a_["requests"] += s["requests"]
                    a_["errors"] += s["errors"]
                    a_["rounds"] += 1
                    if wt:
                        a_["watch"] = merge_watch(a_["watch"], wt)
                        a_["cpu_s"] = (sum(v["ticks"] for v in
                                           a_["watch"]["threads"].values())
                                       / CLK)
                    else:
                        a_["cpu_s"] += s["server_cpu_us"] * \
                            s["requests"] / 1e6
                    sf = classify(a_["watch"]) if wt else None
                    log("  %-6s %-4s %-8s %8s req/s  p99 %s ms  %s us/req%s"
                        "%s" % (w, f, tgt, fmt_rps(s["rps"]),
                                fmt_ms(s["p99"]),
                                fmt_us(s["server_cpu_us"]),
                                "  serial %.1f%%" % (100 * sf)
                                if sf is not None else "",
                                "  errors %d" % s["errors"]
                                if s["errors"] else ""))
    finally:
        for p in srv.values():
            p.stop()

    rows = []
    out = res.setdefault("serial", {})
    for w, f, body in wls:
        ng = acc.get((w, f, "nginx"))
        ng_cpu = ng and ng["requests"] and 1e6 * ng["cpu_s"] / ng["requests"]
        for tgt in [lab for lab, _ in bins] + ["nginx"]:
            a_ = acc.get((w, f, tgt))
            if not a_:
                continue
            cpu = (1e6 * a_["cpu_s"] / a_["requests"]
                   if a_["requests"] else None)
            sf = classify(a_["watch"]) if a_["watch"] else None
            pt = {"rps": a_["rps"], "p50": a_["p50"], "p99": a_["p99"],
                  "requests": a_["requests"], "errors": a_["errors"],
                  "server_cpu_us": cpu, "serial_fraction": sf,
                  "cpu_vs_nginx": cpu / ng_cpu if cpu and ng_cpu and
                  tgt != "nginx" else None}
            if a_["watch"]:
                pt["threads"] = {
                    str(tid): v for tid, v in a_["watch"]["threads"].items()}
                pt["proc_name"] = a_["watch"]["proc_name"]
                pt["threads_appeared"] = a_["watch"]["appeared"]
                pt["threads_ended"] = a_["watch"]["ended"]
            out["%s/%s/%s" % (w, f, tgt)] = pt
            res["points"]["serial/%s/%s/%s" % (w, f, tgt)] = pt
            rows.append([
                "%s %s" % (w, f), tgt + ("" if tgt in ("nginx", bins[0][0])
                                         else " (%s)" % os.path.basename(
                                             dict(bins)[tgt])),
                fmt_rps(a_["rps"]), fmt_ms(a_["p99"]), fmt_us(cpu),
                fmt_ratio(cpu, ng_cpu) if tgt != "nginx" else "",
                "%.1f%%" % (100 * sf) if sf is not None else "",
                "%.1fx" % amdahl(sf, 16) if sf is not None else "",
                busiest(a_["watch"]) if a_["watch"] else "",
                str(a_["errors"]) if a_["errors"] else ""])
    sec = ("## Serial fraction: CPU of one-of-a-kind threads (--threads %d,"
           " wrk -t%d -c%d, %s s per point, %d round%s)\n\n" % (
               SERIAL_THREADS, SERIAL_WRK_THREADS, SERIAL_CONNS, run.dur,
               run.rounds, "s" if run.rounds > 1 else "") + md_table(
        ["workload", "server", "req/s", "p99 ms", "server CPU us/req",
         "CPU/req x nginx", "serial fraction", "Amdahl bound, 16 cores",
         "busiest threads (share of the process's CPU)", "errors"], rows) +
        "\n\nPer-thread CPU is utime+stime from /proc/PID/task/*/stat (name"
        " from .../comm; 1/%d s ticks), read before and after each wrk run and every"
        " 0.1 s between (threads that appear count from 0; CPU of threads"
        " that end is kept as `(exited threads)`), summed over the rounds;"
        " req/s and p99 are the best round's. A thread is parallel iff its"
        " name is `STEM-<number>`, it is not the process's own name, and at"
        " least 2 threads of that STEM were alive at once; every other"
        " thread (the main thread, a reaper, MHD's single thread, libuv's"
        " loop and workers, which keep the process name) is one of a kind."
        " Serial fraction = CPU of the one-of-a-kind threads / the"
        " process's CPU. Amdahl bound: 1 / (s + (1 - s) / 16), the most 16"
        " cores could speed up the server's own CPU work at serial"
        " fraction s -- derived, not measured. CPU/req x nginx: the"
        " server's CPU per request over nginx's (process group, user+sys)"
        " serving the same response bytes as a static file, same wrk"
        " settings, same run.\n" % CLK)
    if len(bins) > 1:
        sec += ("\n`%s` is env BENCH_BASELINE (%s), run alternately with"
                " the current binary.\n" % (bins[1][0], bins[1][1]))
    if notes:
        sec += "\n" + " ".join(notes) + "\n"

    # ---- threads sweep ------------------------------------------------
    sweep_wl = [x for x in wls if (x[0], x[1]) in (("8x4", "raw"),
                                                   ("32x128", "raw"))]
    tcounts = [1, 2]
    log("\n== threads sweep (wrk -t%d -c%d)" % (SERIAL_WRK_THREADS,
                                                SERIAL_CONNS))
    sw = {}
    for rnd in range(run.rounds):
        for T in tcounts:
            sv = {}
            for lab, b in bins:
                extra = ["--threads", str(T)]
                if "http-threads" in opts[lab]:
                    extra += ["--http-threads", str(T)]
                p = start_tokvec(b, table, workdir, "sweep-" + lab, extra)
                if p:
                    run.register(p)
                    sv[lab] = p
                    warm_up(p.port, sweep_wl, accepts)
            try:
                for w, f, body in sweep_wl:
                    order = [lab for lab, _ in bins if lab in sv]
                    if (rnd + T) % 2:
                        order.reverse()
                    for lab in order:
                        s = run.point("http://127.0.0.1:%d/embed" %
                                      sv[lab].port, body, accepts[f],
                                      SERIAL_CONNS, threads=SERIAL_WRK_THREADS)
                        sw[(w, f, lab, T)] = better(sw.get((w, f, lab, T)),
                                                    s)
                        log("  threads %d %-6s %-4s %-8s %8s req/s" % (
                            T, w, f, lab, fmt_rps(s and s["rps"])))
            finally:
                for p in sv.values():
                    p.stop()
    hdr = ["threads"]
    for w, f, _ in sweep_wl:
        for lab, _ in bins:
            hdr.append("%s %s %s req/s" % (lab, w, f))
    srows = []
    for T in tcounts:
        r = [str(T)]
        for w, f, _ in sweep_wl:
            for lab, _ in bins:
                s = sw.get((w, f, lab, T))
                r.append(fmt_rps(s and s["rps"]))
                res["points"]["threads/%d/%s/%s/%s" % (T, w, f, lab)] = s
        srows.append(r)
    ht = ", ".join("%s: %s" % (lab, "--threads N --http-threads N"
                               if "http-threads" in opts[lab] else
                               "--threads N (no --http-threads option)")
                   for lab, _ in bins)
    sec += ("\n### Threads sweep (wrk -t%d -c%d, best of %d)\n\n" % (
        SERIAL_WRK_THREADS, SERIAL_CONNS, run.rounds) +
        md_table(hdr, srows) +
        "\n\nServers started as %s. A 16-core machine was not available:"
        " this one has %d cores, shared with wrk, so the sweep stops at 2"
        " threads and the serial fraction above stands in for the scaling"
        " curve.\n" % (ht, NPROC))
    return sec



def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def section_large(a, run, res, bins, table, workdir, ngx, build, body, reply):
    """Large replies: 32x128 raw (reply: tokvec's answer, 4 MiB) from tokvec
    (bins: [(label, binary)], the current binary first, BENCH_BASELINE
    next), from bench/ceiling (a C server sending the same bytes from one
    reused buffer: the loopback ceiling) and from nginx (sendfile of the
    same bytes), wrk -t2 -c32 against each in turn, LARGE_ROUNDS rounds
    in alternating order. Medians over the rounds, and the spread. Returns
    the markdown section."""
    rounds = 3 if a.quick else LARGE_ROUNDS
    log("\n== large replies: 32x128 raw vs the loopback ceiling and nginx"
        " (wrk -t%d -c%d, %d rounds)" % (SERIAL_WRK_THREADS, SERIAL_CONNS,
                                          rounds))
    cbin = os.path.join(build, "bench", "ceiling")
    rfile = os.path.join(workdir, "large-32x128.raw")
    with open(rfile, "wb") as f:
        f.write(reply)
    procs, targets, notes = [], [], []
    try:
        port = free_port()
        cp = Proc("ceiling", [cbin, "--port", str(port), "--threads",
                              str(SERIAL_THREADS), "--body", rfile], port,
                  logfile=os.path.join(workdir, "ceiling.log"))
        if cp.wait_healthy(10) is not None:
            procs.append(cp)
            targets.append(("ceiling", "http://127.0.0.1:%d/embed" % port,
                            cp.p.pid))
        else:
            notes.append("bench/ceiling did not start (%s)." % cbin)
            cp.stop()
        for lab, b in bins:
            p = start_tokvec(b, table, workdir, "large-" + lab,
                             ["--threads", str(SERIAL_THREADS)])
            if not p:
                notes.append("%s (%s) did not start." % (lab, b))
                continue
            procs.append(p)
            st, _, r = post(p.port, open(body, "rb").read(),
                            "application/octet-stream")
            if st != 200 or r != reply:
                notes.append("%s answers different bytes." % lab)
            warm_up(p.port, [("32x128", "raw", body)],
                    {"raw": "application/octet-stream"})
            targets.append((lab, "http://127.0.0.1:%d/embed" % p.port,
                            p.p.pid))
        targets.append(("nginx", ngx.add("large-32x128.raw", reply),
                        ngx.proc.p.pid))
        pts = {}
        for rnd in range(rounds):
            order = targets[::-1] if rnd % 2 else targets
            for lab, url, pg in order:
                run.wait_idle()
                s = wrk(url, body, "application/octet-stream", SERIAL_CONNS,
                        run.dur, SERIAL_WRK_THREADS, pgid=pg)
                if not s or s["errors"]:
                    log("  %-8s wrk failed or errors: %s" % (
                        lab, s and s["errors"]))
                    if not s:
                        continue
                pts.setdefault(lab, []).append(s)
                log("  round %d %-8s %8s req/s  %s us/req server CPU" % (
                    rnd + 1, lab, fmt_rps(s["rps"]),
                    fmt_us(s["server_cpu_us"])))
    finally:
        for p in procs:
            p.stop()
    out = res.setdefault("large", {})
    rows = []

    def spread(xs):
        xs = [x for x in xs if x]
        if len(xs) < 2:
            return ""
        m = median(xs)
        return "%.0f%%" % (100 * (max(xs) - min(xs)) / m) if m else ""
    ceil_r = pts.get("ceiling", [])
    ngx_r = pts.get("nginx", [])
    for lab, _, _ in targets:
        ss = pts.get(lab)
        if not ss:
            continue
        rps = [s["rps"] for s in ss]
        cpu = [s["server_cpu_us"] for s in ss]
        # ratios round by round (the targets ran next to each other)
        vs_ceil = [s["rps"] / c["rps"] for s, c in zip(ss, ceil_r)
                   if c["rps"]] if lab != "ceiling" else []
        vs_ngx = [s["server_cpu_us"] / n["server_cpu_us"]
                  for s, n in zip(ss, ngx_r)
                  if n["server_cpu_us"] and s["server_cpu_us"]] \
            if lab != "nginx" else []
        wcpu = [s["client_cpu_us"] for s in ss]
        pt = {"rps": median(rps), "rps_rounds": rps,
              "server_cpu_us": median(cpu), "cpu_rounds": cpu,
              "client_cpu_us": median(wcpu), "client_cpu_rounds": wcpu,
              "vs_ceiling": median(vs_ceil), "vs_ceiling_rounds": vs_ceil,
              "cpu_vs_nginx": median(vs_ngx), "cpu_vs_nginx_rounds": vs_ngx,
              "errors": sum(s["errors"] for s in ss),
              "p99": median([s["p99"] for s in ss])}
        out[lab] = pt
        res["points"]["large/32x128/raw/%s" % lab] = pt
        rows.append([lab, fmt_rps(pt["rps"]), spread(rps),
                     fmt_ms(pt["p99"]), fmt_us(pt["server_cpu_us"]),
                     spread(cpu), fmt_us(pt["client_cpu_us"]),
                     "%.2f" % pt["vs_ceiling"] if pt["vs_ceiling"] else "",
                     "%.2fx" % pt["cpu_vs_nginx"] if pt["cpu_vs_nginx"]
                     else "", str(pt["errors"]) if pt["errors"] else ""])
    sec = ("## Large replies: 32x128 raw (4 MiB) vs the loopback ceiling and"
           " nginx (--threads %d, wrk -t%d -c%d, %s s per point, median of"
           " %d alternating rounds)\n\n" % (
               SERIAL_THREADS, SERIAL_WRK_THREADS, SERIAL_CONNS, run.dur,
               rounds) +
           md_table(["server", "req/s", "req/s spread", "p99 ms",
                     "server CPU us/req", "CPU spread", "wrk CPU us/req",
                     "x ceiling req/s",
                     "CPU/req x nginx", "errors"], rows) +
           "\n\n`ceiling` is bench/ceiling: a C server (%d threads, epoll)"
           " answering every request with the same bytes from one reused"
           " buffer with send(); nginx sends them from a file (sendfile)."
           " Ratios are taken round by round (the servers ran one after the"
           " other) and their median shown; spread: (max - min) / median over"
           " the rounds, the noise of this shared machine. On loopback the"
           " kernel's TCP work for a reply runs partly in the sender's and"
           " partly in the reader's process (a sender whose socket is full"
           " leaves the sending to the reader's ACKs): read server and wrk"
           " CPU together.\n" %
           SERIAL_THREADS)
    if len(bins) > 1:
        sec += ("\n`%s` is env BENCH_BASELINE (%s).\n" % (bins[1][0],
                                                          bins[1][1]))
    if notes:
        sec += "\n" + " ".join(notes) + "\n"
    return sec


def section_unix(a, run, res, binary, table, workdir, hl, wls, accepts):
    """Unix socket vs TCP, bench/httpload against one server listening on
    both. Returns the markdown section."""
    title = ("## Unix socket vs TCP (bench/httpload -t%d -c%d, one server"
             " with --threads %d --unix-socket, %s s per point)\n\n" % (
                 SERIAL_WRK_THREADS, SERIAL_CONNS, SERIAL_THREADS, run.dur))
    log("\n== unix socket vs TCP")
    if "unix-socket" not in serve_options(binary):
        msg = ("%s has no --unix-socket option (`tokvec serve --help`):"
               " skipped." % binary)
        log("  " + msg)
        res["unix"] = {"skipped": msg}
        return title + msg + "\n"
    if not (hl and os.path.exists(hl)):
        msg = "bench/httpload is not built (%s): skipped." % hl
        log("  " + msg)
        res["unix"] = {"skipped": msg}
        return title + msg + "\n"
    sdir = tempfile.mkdtemp(prefix="tv-unix-")
    path = os.path.join(sdir, "tokvec.sock")
    p = start_tokvec(binary, table, workdir, "unix",
                     ["--threads", str(SERIAL_THREADS), "--unix-socket",
                      path])
    if p:
        end = time.time() + 10
        while time.time() < end and not unix_health(path):
            time.sleep(0.01)
        if not unix_health(path):
            p.stop()
            p = None
    if not p:
        shutil.rmtree(sdir, ignore_errors=True)
        msg = ("tokvec with --unix-socket did not answer /health on both"
               " TCP and %s (see %s/tokvec-unix.log): skipped." % (
                   path, workdir))
        log("  " + msg)
        res["unix"] = {"skipped": msg}
        return title + msg + "\n"
    run.register(p)
    warm_up(p.port, wls, accepts)
    ur = {}
    try:
        tcp = ["--tcp", "127.0.0.1:%d" % p.port]
        unx = ["--unix", path]
        for rnd in range(run.rounds):
            for w, f, body in wls:
                order = [("tcp", tcp), ("unix", unx)]
                if rnd % 2:
                    order.reverse()
                for tr, target in order:
                    run.wait_idle()
                    s = httpload(hl, target, body, accepts[f], SERIAL_CONNS,
                                 SERIAL_WRK_THREADS, run.dur, pgid=p.p.pid)
                    k = (w, f, tr)
                    if s and (k not in ur or s["rps"] >= ur[k]["rps"]):
                        ur[k] = s
                    log("  %-6s %-4s %-4s %8s req/s  p99 %s ms%s" % (
                        w, f, tr, fmt_rps(s and s["rps"]),
                        "%.3f" % s["p99_ms"] if s else "n/a",
                        "  errors %d" % s["errors"] if s and s["errors"]
                        else ""))
    finally:
        p.stop()
        shutil.rmtree(sdir, ignore_errors=True)
    rows = []
    out = res.setdefault("unix", {})
    for w, f, _ in wls:
        t_, u_ = ur.get((w, f, "tcp")), ur.get((w, f, "unix"))
        out["%s/%s" % (w, f)] = {"tcp": t_, "unix": u_}
        res["points"]["unix/%s/%s/tcp" % (w, f)] = t_
        res["points"]["unix/%s/%s/unix" % (w, f)] = u_

        def ms(s):
            return "%.3f" % s["p99_ms"] if s else "n/a"
        err = sum(s["errors"] for s in (t_, u_) if s)
        rows.append(["%s %s" % (w, f), fmt_rps(t_ and t_["rps"]), ms(t_),
                     fmt_us(t_ and t_["server_cpu_us"]),
                     fmt_rps(u_ and u_["rps"]), ms(u_),
                     fmt_us(u_ and u_["server_cpu_us"]),
                     "%.2fx" % (u_["rps"] / t_["rps"])
                     if u_ and t_ and t_["rps"] else "n/a",
                     str(err) if err else ""])
    return title + md_table(
        ["workload", "TCP req/s", "TCP p99 ms", "TCP server CPU us/req",
         "unix req/s", "unix p99 ms", "unix server CPU us/req",
         "unix / TCP req/s", "errors"], rows) + (
        "\n\nBoth transports load the same server process, alternately"
        " (best of %d rounds). httpload is closed-loop: each connection"
        " sends its next POST when the whole response is in; p99 is over"
        " every response of the point.\n" % run.rounds)


# --------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--table", default="data/gpt2-256.safetensors")
    ap.add_argument("--core", help="file with bench/run.sh's core output")
    ap.add_argument("--out", default=os.path.join(TOP, "bench", "results"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only",
                    default="main,tokens,dim,conns,startup,serial,large,unix",
                    help="comma list of sections")
    a = ap.parse_args()
    only = set(a.only.split(","))
    build = os.path.abspath(a.build)
    binary = os.path.join(build, "tokvec")
    table = os.path.abspath(a.table)
    workdir = os.path.join(build, "bench", "work")
    os.makedirs(workdir, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    run = Runner(a.quick)
    res = {"machine": machine(), "quick": a.quick, "started":
           time.strftime("%Y-%m-%d %H:%M:%S %Z"), "points": {}}
    core_text = open(a.core).read() if a.core and os.path.exists(a.core) else ""
    core = parse_core(core_text)
    res["core"] = core
    failures = []
    md = []  # sections of latest.md
    t_start = time.time()

    # ---- start servers --------------------------------------------------
    ngx = Nginx(free_port())
    if not ngx.healthy():
        log("!! nginx did not start:", open(ngx.dir + "/error.log").read())
    tv = start_tokvec(binary, table, workdir, "main")
    # the peer only for the sections that compare with it (it takes a
    # while to start)
    peer_wanted = bool(only & {"main", "tokens", "conns", "startup"})
    if peer_wanted:
        peer, peer_t = start_peer(workdir)
    else:
        peer, peer_t = None, None
    for pr_ in (ngx.proc, tv, peer):
        run.register(pr_)
    res["peer_time_to_health_s"] = peer_t
    tv_url = "http://127.0.0.1:%d/embed" % tv.port if tv else None
    peer_url = "http://127.0.0.1:%d/embed" % peer.port if peer else None

    JSON, RAW, NPY = ("application/json", "application/octet-stream",
                      "application/x-npy")
    b1x1 = body_file(workdir, "b1x1", 1, 1, 50257, 11)
    b32 = os.path.join(LOAD, "b32x128.json")
    b32_b64 = with_extra(workdir, b32, "b32x128_b64",
                         {"encoding_format": "base64"})
    workloads = [  # name, body, B, S
        ("8x4", os.path.join(LOAD, "seed_8x4.json"), 8, 4),
        ("32x128", b32, 32, 128),
        ("4x1024", os.path.join(LOAD, "b4x1024.json"), 4, 1024),
        ("1x1", b1x1, 1, 1),
    ]

    try:
        # ---- correctness: same bytes ------------------------------------
        checks = []
        sizes = {}   # (workload, fmt) -> response bytes (tokvec's)
        bodies = {}  # (workload, fmt) -> response bytes for nginx
        if tv and peer:
            for name, body, B, S in workloads:
                data = open(body, "rb").read()
                st1, h1, r1 = post(tv.port, data, RAW)
                st2, h2, r2 = post(peer.port, data, RAW)
                same = (st1 == st2 == 200 and r1 == r2 and
                        h1.get("x-tokvec-shape") == h2.get("x-tokvec-shape"))
                checks.append((name, "raw", "%d bytes" % len(r1),
                               "identical" if same else
                               "DIFFERENT (%s %d B vs %s %d B)" %
                               (st1, len(r1), st2, len(r2))))
                if not same:
                    failures.append("raw %s differs" % name)
                # JSON: numbers differ in spelling (peer prints doubles),
                # never in value: compare as float32.
                st1, _, j1 = post(tv.port, data, JSON)
                st2, _, j2 = post(peer.port, data, JSON)
                try:
                    o1, o2 = json.loads(j1), json.loads(j2)
                    v1 = flat(o1["embeddings"], [])
                    v2 = flat(o2["embeddings"], [])
                    same = (o1["shape"] == o2["shape"] and len(v1) == len(v2)
                            and all(f32(x) == f32(y) for x, y in zip(v1, v2)))
                except (ValueError, KeyError, TypeError):
                    same = False
                checks.append((name, "json", "%d bytes" % len(j1),
                               "same float32 values" if same else
                               "DIFFERENT"))
                if not same:
                    failures.append("json %s differs" % name)
            # npy and base64 of 32x128 against tokvec's own raw bytes
            data = open(b32, "rb").read()
            _, _, raw = post(tv.port, data, RAW)
            st, h, npy = post(tv.port, data, NPY)
            try:
                hdr, payload = npy_data(npy)
                ok = st == 200 and payload == raw and "'<f4'" in hdr
            except ValueError:
                ok = False
            checks.append(("32x128", "npy", "%d bytes" % len(npy),
                           "data == raw" if ok else "DIFFERENT"))
            if not ok:
                failures.append("npy differs from raw")
            st, h, b64 = post(tv.port, open(b32_b64, "rb").read(), JSON)
            try:
                ok = base64.b64decode(json.loads(b64)["embeddings"]) == raw
            except (ValueError, KeyError, TypeError):
                ok = False
            checks.append(("32x128", "base64", "%d bytes" % len(b64),
                           "decoded == raw" if ok else "DIFFERENT"))
            if not ok:
                failures.append("base64 differs from raw")
        elif peer:
            checks.append(("all", "-", "-", "tokvec not running: skipped"))
        elif tv:
            checks.append(("all", "-", "-", "the peer did not start: skipped"
                           if peer_wanted else "peer not started (no section"
                           " selected that compares with it): skipped"))

        # response bodies (tokvec's if it runs, else the peer's) for nginx
        def response(port, body, accept):
            st, _, r = post(port, open(body, "rb").read(), accept)
            return r if st == 200 else None
        src_port = tv.port if tv else (peer.port if peer else None)
        fmts = {"json": (JSON, None), "raw": (RAW, None), "npy": (NPY, None),
                "base64": (JSON, b32_b64)}
        for name, body, B, S in workloads:
            for f in ("json", "raw") + (("npy", "base64") if name == "32x128"
                                        else ()):
                acc, alt = fmts[f]
                if src_port is None:
                    continue
                r = response(src_port, alt or body, acc)
                if r is not None:
                    sizes[(name, f)] = len(r)
                    bodies[(name, f)] = r

        md.append("## Correctness: tokvec vs the peer, same request body\n\n" +
                  md_table(["workload", "format", "tokvec response",
                            "result"], checks))
        log(md[-1])

        # ---- main workloads ---------------------------------------------
        if "main" in only:
            log("\n== main workloads (%s s per point, best of %d rounds)" %
                (run.dur, run.rounds))
            ceil = {}
            for name, body, B, S in workloads:
                ceil[name] = embedbench(build, table, B, S)
            res["ceilings"] = ceil
            points = []  # (workload, fmt, target)
            for name, body, B, S in workloads:
                fl = ("json", "raw") + (("npy", "base64") if name == "32x128"
                                        else ())
                for f in fl:
                    points.append((name, body, B, S, f))
            main_res = {}
            for rnd in range(run.rounds):
                for name, body, B, S, f in points:
                    acc, alt = fmts[f]
                    bfile = alt or body
                    lat = name == "1x1"
                    conns = 1 if lat else 16
                    targets = []
                    if tv:
                        targets.append(("tokvec", tv_url))
                    if peer and f in ("json", "raw"):
                        targets.append(("peer", peer_url))
                    if (name, f) in bodies:
                        targets.append(("nginx", ngx.add(
                            "%s.%s" % (name, f), bodies[(name, f)])))
                    if rnd % 2:
                        targets.reverse()
                    for tgt, url in targets:
                        k = (name, f, tgt)
                        if main_res.get(k) and main_res[k].get("slow"):
                            continue  # one 20 s window is enough
                        s = run.point(url, bfile, acc, conns)
                        main_res[k] = better(main_res.get(k), s)
                        log("  %-7s %-7s %-6s c=%-3d %9s req/s  p50 %s ms"
                            "  p99 %s ms%s" % (
                                name, f, tgt, conns,
                                fmt_rps(s and s["rps"]),
                                fmt_ms(s and s["p50"]), fmt_ms(s and s["p99"]),
                                "  errors %d" % s["errors"] if s and
                                s["errors"] else ""))
            rows = []
            for name, body, B, S in workloads:
                for f in ("json", "raw", "npy", "base64"):
                    if (name, f, "tokvec") not in main_res and \
                       (name, f, "peer") not in main_res:
                        continue
                    size = sizes.get((name, f))
                    ng = main_res.get((name, f, "nginx"))
                    pr = main_res.get((name, f, "peer"))
                    for tgt in ("tokvec", "peer", "nginx"):
                        s = main_res.get((name, f, tgt))
                        if s is None:
                            continue
                        gbs = s["rps"] * size / 1e9 if size else None
                        cc = ceil.get(name, {})
                        if f in ("raw", "npy") and cc.get("memcpy_gbs") and gbs:
                            vs_core = "%.0f%% memcpy" % (
                                100 * gbs / cc["memcpy_gbs"])
                        elif f == "json" and core.get("json_mfs"):
                            fl_s = s["rps"] * B * S * 256 / 1e6
                            vs_core = "%.0f%% fmt" % (
                                100 * fl_s / (core["json_mfs"] * NPROC))
                        else:
                            vs_core = ""
                        rows.append([
                            name, f, tgt, "c=1" if name == "1x1" else "c=16",
                            fmt_rps(s["rps"]), fmt_ms(s["p50"]),
                            fmt_ms(s["p99"]),
                            "%.3f" % gbs if gbs is not None else "n/a",
                            fmt_ratio(s["rps"], pr and pr["rps"])
                            if tgt != "peer" else "",
                            fmt_ratio(s["rps"], ng and ng["rps"], True)
                            if tgt != "nginx" else "",
                            vs_core if tgt == "tokvec" else "",
                            fmt_us(s.get("server_cpu_us")),
                            fmt_us(s.get("client_cpu_us")),
                            str(s["errors"]) if s["errors"] else ""])
                        res["points"]["main/%s/%s/%s" % (name, f, tgt)] = s
            res["sizes"] = {"%s/%s" % k: v for k, v in sizes.items()}
            sec = ("## Workloads (table %s, %s s per point, best of %d "
                   "alternating rounds)\n\n" % (
                       os.path.basename(table), run.dur, run.rounds) +
                   md_table(["workload", "format", "server", "conns",
                             "req/s", "p50 ms", "p99 ms", "GB/s body",
                             "x peer", "% nginx", "vs core ceiling",
                             "server CPU us/req", "wrk CPU us/req",
                             "errors"], rows) +
                   "\n\nnginx serves a static file of exactly the response "
                   "bytes (sendfile) for the same POST: the HTTP ceiling. "
                   "`%% memcpy`: body GB/s over one core's memcpy of the same "
                   "bytes (embedbench); `%% fmt`: floats/s over the JSON "
                   "writer's one-core rate x %d cores. CPU us/req: user+sys time of "
                   "the server's processes (or of wrk) over the point, per "
                   "request -- what each request costs, whoever is the "
                   "bottleneck.\n" % NPROC)
            md.append(sec)
            res["main"] = {"%s/%s/%s" % k: v for k, v in main_res.items()}
            log(sec)

        # ---- tokens per request ----------------------------------------
        if "tokens" in only:
            shapes = ([(1, 1), (1, 64), (4, 1024), (64, 1024)] if a.quick
                      else [(1, 1), (1, 4), (1, 16), (1, 64), (1, 256),
                            (1, 1024), (4, 1024), (16, 1024), (64, 1024)])
            log("\n== throughput vs tokens per request (c=8)")
            rows, tok_res = [], {}
            for B, S in shapes:
                n = B * S
                body = body_file(workdir, "t%dx%d" % (B, S), B, S, 50257,
                                 1000 + n)
                targets = []
                if tv:
                    targets.append(("tokvec", "raw", tv_url, RAW))
                    if n <= 4096:
                        targets.append(("tokvec", "json", tv_url, JSON))
                if peer:
                    targets.append(("peer", "raw", peer_url, RAW))
                    if n <= 4096:
                        targets.append(("peer", "json", peer_url, JSON))
                if src_port is not None:
                    r = response(src_port, body, RAW)
                    if r is not None:
                        targets.append(("nginx", "raw", ngx.add(
                            "t%d.raw" % n, r), RAW))
                for tgt, f, url, acc in targets:
                    s = run.point(url, body, acc, 8)
                    tok_res[(n, tgt, f)] = s
                    res["points"]["tokens/%d/%s/%s" % (n, tgt, f)] = s
                raw_b = n * 256 * 4

                def g(t, f, key="rps"):
                    s = tok_res.get((n, t, f))
                    return s and s[key]
                rows.append([
                    "%d (%dx%d)" % (n, B, S), fmt_rps(g("tokvec", "raw")),
                    "%.3f" % (g("tokvec", "raw") * raw_b / 1e9)
                    if g("tokvec", "raw") else "n/a",
                    fmt_ms(g("tokvec", "raw", "p99")),
                    fmt_rps(g("tokvec", "json")),
                    fmt_rps(g("peer", "raw")), fmt_rps(g("peer", "json")),
                    fmt_rps(g("nginx", "raw")),
                    fmt_ratio(g("tokvec", "raw"), g("peer", "raw")),
                    fmt_ratio(g("tokvec", "json"), g("peer", "json")),
                    fmt_ratio(g("tokvec", "raw"), g("nginx", "raw"), True)])
                log("  " + " ".join(str(x) for x in rows[-1]))
            sec = ("## Throughput vs tokens per request (dim 256, wrk -c8)"
                   "\n\n" + md_table(
                       ["tokens", "tokvec raw req/s", "raw GB/s",
                        "raw p99 ms", "tokvec json req/s", "peer raw req/s",
                        "peer json req/s", "nginx same bytes req/s",
                        "raw x peer", "json x peer", "raw % nginx"], rows) +
                   "\n\nJSON is measured up to 4096 tokens (1 M floats; larger "
                   "responses take the peer, and tokvec's current float "
                   "writer, seconds each).\n")
            md.append(sec)
            log(sec)
            pl = os.path.join(a.out, "tokens.png")
            xs = [B * S for B, S in shapes]

            def series(t, f, conv=lambda s, n: s["rps"]):
                return [(n, conv(tok_res[(n, t, f)], n))
                        for n in xs if tok_res.get((n, t, f))]
            gb = (lambda s, n: s["rps"] * n * 1024 / 1e9)
            gnuplot(pl, "req/s vs tokens per request (dim 256, c=8)",
                    "tokens per request", "requests/s",
                    [("tokvec raw", series("tokvec", "raw")),
                     ("tokvec json", series("tokvec", "json")),
                     ("peer raw", series("peer", "raw")),
                     ("peer json", series("peer", "json")),
                     ("nginx same bytes", series("nginx", "raw"))])
            gnuplot(os.path.join(a.out, "tokens_gbs.png"),
                    "raw body GB/s vs tokens per request (dim 256, c=8)",
                    "tokens per request", "GB/s",
                    [("tokvec raw", series("tokvec", "raw", gb)),
                     ("peer raw", series("peer", "raw", gb)),
                     ("nginx same bytes", series("nginx", "raw", gb))])

        # ---- connections ----------------------------------------------
        if "conns" in only:
            cl = [1, 16, 256] if a.quick else [1, 4, 16, 64, 256, 1024]
            log("\n== throughput vs connections (8x4 raw)")
            b8 = os.path.join(LOAD, "seed_8x4.json")
            rows, cres = [], {}
            ng_url = ngx.add("8x4.raw", bodies[("8x4", "raw")]) \
                if ("8x4", "raw") in bodies else None
            for c in cl:
                for tgt, url in (("tokvec", tv_url), ("peer", peer_url),
                                 ("nginx", ng_url)):
                    if not url:
                        continue
                    s = run.point(url, b8, RAW, c)
                    cres[(c, tgt)] = s
                    res["points"]["conns/%d/%s" % (c, tgt)] = s

                def g(t, key="rps"):
                    s = cres.get((c, t))
                    return s and s[key]

                def e(t):
                    s = cres.get((c, t))
                    return str(s["errors"]) if s and s["errors"] else ""
                rows.append([str(c), fmt_rps(g("tokvec")),
                             fmt_ms(g("tokvec", "p50")),
                             fmt_ms(g("tokvec", "p99")), e("tokvec"),
                             fmt_rps(g("peer")), fmt_ms(g("peer", "p99")),
                             e("peer"),
                             fmt_rps(g("nginx")), fmt_ms(g("nginx", "p99")),
                             fmt_ratio(g("tokvec"), g("peer")),
                             fmt_ratio(g("tokvec"), g("nginx"), True)])
                log("  " + " ".join(rows[-1]))
            sec = ("## Throughput vs concurrent connections (8x4 raw, "
                   "wrk -t%d)\n\n" % NPROC + md_table(
                       ["conns", "tokvec req/s", "p50 ms", "p99 ms",
                        "errors", "peer req/s", "peer p99 ms",
                        "peer errors", "nginx req/s", "nginx p99 ms",
                        "x peer", "% nginx"], rows) + "\n")
            md.append(sec)
            log(sec)

            def series(t, key="rps", scale=1.0):
                return [(c, cres[(c, t)][key] * scale) for c in cl
                        if cres.get((c, t))]
            gnuplot(os.path.join(a.out, "connections.png"),
                    "req/s vs concurrent connections (8x4 raw)",
                    "connections", "requests/s",
                    [("tokvec", series("tokvec")), ("peer", series("peer")),
                     ("nginx same bytes", series("nginx"))])
            gnuplot(os.path.join(a.out, "connections_p99.png"),
                    "p99 latency vs concurrent connections (8x4 raw)",
                    "connections", "p99 latency (ms)",
                    [("tokvec", series("tokvec", "p99", 1e-3)),
                     ("peer", series("peer", "p99", 1e-3)),
                     ("nginx same bytes", series("nginx", "p99", 1e-3))])
    finally:
        if tv:
            tv.stop()
        if peer:
            peer.stop()

    try:
        # ---- serial fraction, threads sweep ---------------------------
        s8 = os.path.join(LOAD, "seed_8x4.json")
        swl = [("1x1", "raw", b1x1), ("8x4", "raw", s8),
               ("8x4", "json", s8), ("32x128", "raw", b32)]
        acc_f = {"raw": RAW, "json": JSON}
        if "serial" in only:
            bins = [("new", binary)]
            base = os.environ.get("BENCH_BASELINE")
            if base:
                base = os.path.abspath(base)
                if os.access(base, os.X_OK):
                    bins.append(("baseline", base))
                else:
                    log("!! BENCH_BASELINE=%s is not an executable: "
                        "measured without it" % base)
            sec = section_serial(a, run, res, bins, table, workdir, ngx,
                                 bodies, swl, acc_f)
            md.append(sec)
            log(sec)

        # ---- large replies vs the loopback ceiling ---------------------
        if "large" in only:
            bins = [("new", binary)]
            base = os.environ.get("BENCH_BASELINE")
            if base and os.access(os.path.abspath(base), os.X_OK):
                bins.append(("baseline", os.path.abspath(base)))
            reply = bodies.get(("32x128", "raw"))
            if reply is None and tv:
                st, _, reply = post(tv.port, open(b32, "rb").read(), RAW)
                reply = reply if st == 200 else None
            if reply is None:
                log("!! large: no 32x128 raw reply to serve: skipped")
            else:
                sec = section_large(a, run, res, bins, table, workdir, ngx,
                                    build, b32, reply)
                md.append(sec)
                log(sec)

        # ---- unix socket vs TCP ---------------------------------------
        if "unix" in only:
            hl = os.environ.get("HTTPLOAD") or os.path.join(build, "bench",
                                                            "httpload")
            sec = section_unix(a, run, res, binary, table, workdir,
                               os.path.abspath(hl), swl[:3], acc_f)
            md.append(sec)
            log(sec)

        # ---- dim ------------------------------------------------------
        if "dim" in only:
            dims = [256, 4096] if a.quick else [256, 768, 4096]
            V = 16384
            log("\n== throughput vs dim (vocab %d, 32x128, c=8)" % V)
            rows, dres = [], {}
            for D in dims:
                tab = os.path.join(workdir, "tables", "v%d_d%d.safetensors"
                                   % (V, D))
                if not os.path.exists(tab):
                    os.makedirs(os.path.dirname(tab), exist_ok=True)
                    subprocess.run([binary, "init", "--vocab", str(V), "--dim",
                                    str(D), "--context", "1024", "--seed",
                                    "123", "-o", tab], check=True)
                body = body_file(workdir, "d32x128_v%d" % V, 32, 128, V, 77)
                t = start_tokvec(binary, tab, workdir, "d%d" % D)
                p, _ = start_peer(workdir, vocab=V, dim=D)
                run.register(t)
                run.register(p)
                try:
                    turl = t and "http://127.0.0.1:%d/embed" % t.port
                    purl = p and "http://127.0.0.1:%d/embed" % p.port
                    same = None
                    if t and p:
                        bd = open(body, "rb").read()
                        r1, r2 = post(t.port, bd, RAW), post(p.port, bd, RAW)
                        same = r1[0] == 200 and r1[2] == r2[2]
                        if not same:
                            failures.append("raw dim %d differs" % D)
                    src = t or p
                    nurl = None
                    if src:
                        r = response(src.port, body, RAW)
                        if r:
                            nurl = ngx.add("d%d.raw" % D, r)
                    floats = 32 * 128 * D
                    tg = [("tokvec", "raw", turl, RAW),
                          ("peer", "raw", purl, RAW)]
                    if floats <= 1100000:
                        tg += [("tokvec", "json", turl, JSON),
                               ("peer", "json", purl, JSON)]
                    tg.append(("nginx", "raw", nurl, RAW))
                    for tgt, f, url, acc in tg:
                        if url:
                            s = run.point(url, body, acc, 8)
                            dres[(D, tgt, f)] = s
                            res["points"]["dim/%d/%s/%s" % (D, tgt, f)] = s
                finally:
                    if t:
                        t.stop()
                    if p:
                        p.stop()

                def g(t_, f, key="rps"):
                    s = dres.get((D, t_, f))
                    return s and s[key]
                rb = 32 * 128 * D * 4
                rows.append([str(D), fmt_bytes(V * D * 4),
                             {None: "n/a", True: "identical",
                              False: "DIFFERENT"}[same],
                             fmt_rps(g("tokvec", "raw")),
                             "%.3f" % (g("tokvec", "raw") * rb / 1e9)
                             if g("tokvec", "raw") else "n/a",
                             fmt_rps(g("tokvec", "json")),
                             fmt_rps(g("peer", "raw")),
                             fmt_rps(g("peer", "json")),
                             fmt_rps(g("nginx", "raw")),
                             fmt_ratio(g("tokvec", "raw"), g("peer", "raw")),
                             fmt_ratio(g("tokvec", "json"),
                                       g("peer", "json")),
                             fmt_ratio(g("tokvec", "raw"), g("nginx", "raw"),
                                       True)])
                log("  " + " ".join(rows[-1]))
            sec = ("## Throughput vs dim (vocab %d + 1024 learned positions, "
                   "32x128 per request, wrk -c8)\n\n" % V + md_table(
                       ["dim", "token table", "raw bytes", "tokvec raw req/s",
                        "raw GB/s", "tokvec json req/s", "peer raw req/s",
                        "peer json req/s", "nginx same bytes req/s",
                        "raw x peer", "json x peer", "raw % nginx"], rows) +
                   "\n\nJSON only up to ~1 M floats per response.\n")
            md.append(sec)
            log(sec)

            def series(t_, f):
                return [(D, dres[(D, t_, f)]["rps"]) for D in dims
                        if dres.get((D, t_, f))]
            gnuplot(os.path.join(a.out, "dim.png"),
                    "req/s vs dim (32x128 per request, c=8)", "dim",
                    "requests/s",
                    [("tokvec raw", series("tokvec", "raw")),
                     ("tokvec json", series("tokvec", "json")),
                     ("peer raw", series("peer", "raw")),
                     ("peer json", series("peer", "json")),
                     ("nginx same bytes", series("nginx", "raw"))], logx=2)

        # ---- start-up -------------------------------------------------
        if "startup" in only:
            mib = [1, 1024] if a.quick else [1, 16, 128, 1024]
            reps = 3 if a.quick else 5
            log("\n== start-up: exec to /health 200 vs table size")
            rows, sres = [], {}
            for m in mib:
                V = m * 1024  # dim 256 f32: 1 KiB a row
                tab = os.path.join(workdir, "tables", "start_%dMiB"
                                   ".safetensors" % m)
                if not os.path.exists(tab):
                    os.makedirs(os.path.dirname(tab), exist_ok=True)
                    subprocess.run([binary, "init", "--vocab", str(V), "--dim",
                                    "256", "--positional", "none", "--seed",
                                    "1", "-o", tab], check=True)
                for mode in ("cold", "warm"):
                    ts = []
                    for _ in range(reps):
                        if mode == "cold":
                            fd = os.open(tab, os.O_RDONLY)
                            os.posix_fadvise(fd, 0, 0,
                                             os.POSIX_FADV_DONTNEED)
                            os.close(fd)
                        port = free_port()
                        p = Proc("tokvec", tokvec_cmd(binary, tab, port),
                                 port, logfile=os.path.join(
                                     workdir, "tokvec-start.log"))
                        t = p.wait_healthy(60)
                        p.stop()
                        if t is not None:
                            ts.append(t)
                    ts.sort()
                    sres[(m, mode)] = ts[len(ts) // 2] if ts else None
                res["points"]["startup/%dMiB" % m] = {
                    "cold_s": sres[(m, "cold")], "warm_s": sres[(m, "warm")],
                    "bytes": os.path.getsize(tab)}
                rows.append([fmt_bytes(os.path.getsize(tab)),
                             "%dx256" % V,
                             fmt_ms(sres[(m, "cold")] and
                                    sres[(m, "cold")] * 1e6),
                             fmt_ms(sres[(m, "warm")] and
                                    sres[(m, "warm")] * 1e6),
                             fmt_ratio(sres[(m, "cold")],
                                       sres[(mib[0], "cold")])])
                log("  " + " ".join(rows[-1]))
            sec = ("## Start-up: exec to first `/health` 200 vs table size "
                   "(median of %d)\n\n" % reps + md_table(
                       ["table file", "token table", "cold ms", "warm ms",
                        "cold vs smallest"], rows) +
                   "\n\ncold: the file's pages dropped from the page cache "
                   "first (posix_fadvise DONTNEED on that file only). "
                   "Polling interval 0.5 ms. The peer (torch import + "
                   "init of 50257x256 + 1024x256, 2 workers) took %s s to "
                   "its first /health 200.\n" % (
                       "%.1f" % peer_t if peer_t else "n/a"))
            md.append(sec)
            log(sec)
            gnuplot(os.path.join(a.out, "startup.png"),
                    "tokvec time to first /health 200 vs table size",
                    "table size (MiB)", "ms",
                    [("cold page cache", [(m, sres[(m, "cold")] * 1e3)
                                          for m in mib if sres[(m, "cold")]]),
                     ("warm page cache", [(m, sres[(m, "warm")] * 1e3)
                                          for m in mib if sres[(m, "warm")]])],
                    logx=2, logy=False, extra="set yrange [0:*]")
    finally:
        ngx.stop()

    # ---- goals ----------------------------------------------------------
    M = res.get("main", {})

    def rps(k):
        s = M.get(k)
        return s and s["rps"]

    def goal(name, val, ok):
        return [name, val, "n/a" if ok is None else ("met" if ok else
                                                     "MISSED")]

    def ratio_goal(name, a_, b_, need, pct=False):
        if not a_ or not b_:
            return goal(name, "n/a", None)
        r = a_ / b_
        return goal(name, ("%.0f%%" % (100 * r)) if pct else "%.1fx" % r,
                    r >= need)
    G = []
    G.append(ratio_goal("8x4 JSON >= 20x peer req/s",
                        rps("8x4/json/tokvec"), rps("8x4/json/peer"), 20))
    G.append(ratio_goal("8x4 raw >= 10x peer req/s",
                        rps("8x4/raw/tokvec"), rps("8x4/raw/peer"), 10))
    G.append(ratio_goal("32x128 raw >= 3x peer req/s",
                        rps("32x128/raw/tokvec"), rps("32x128/raw/peer"), 3))
    G.append(ratio_goal("32x128 raw >= 80% of nginx, same bytes",
                        rps("32x128/raw/tokvec"), rps("32x128/raw/nginx"),
                        0.8, True))
    G.append(ratio_goal("4x1024 JSON >= 50x peer req/s",
                        rps("4x1024/json/tokvec"), rps("4x1024/json/peer"),
                        50))
    jm = core.get("json_mfs")
    G.append(goal("JSON writer >= 40 M floats/s/core",
                  "%.1f M/s" % jm if jm else "n/a", jm and jm >= 40))
    tj, tb = core.get("table_json_mfs"), core.get("table_before_mfs")
    ts = core.get("table_json_scalar_mfs")
    G.append(goal("JSON floats >= 90 M/s/core (table's values, batch)",
                  "%.1f M/s, scalar %.1f (before %.1f)" % (tj, ts, tb)
                  if tj and ts and tb else "n/a", tj and tj >= 90))
    sn = core.get("snprintf_mfs")
    G.append(ratio_goal("JSON writer >= 5x snprintf %.9g", jm, sn, 5))
    im, ij = core.get("ids_fast_mbs"), core.get("ids_jansson_mbs")
    G.append(goal("id JSON parse >= 500 MB/s/core (32x128)",
                  "%.0f MB/s (jansson %.0f MB/s)" % (im, ij or 0)
                  if im else "n/a", im and im >= 500))
    for f in ("raw", "json"):
        a_ = M.get("1x1/%s/tokvec" % f)
        b_ = M.get("1x1/%s/nginx" % f)
        if a_ and b_:
            r = a_["p99"] / b_["p99"] if b_["p99"] else 0
            G.append(goal("1x1 %s p99 at c=1 within 2x of nginx" % f,
                          "%s ms vs %s ms (%.1fx)" % (
                              fmt_ms(a_["p99"]), fmt_ms(b_["p99"]), r),
                          r <= 2))
        else:
            G.append(goal("1x1 %s p99 at c=1 within 2x of nginx" % f,
                          "n/a", None))
    SR = res.get("serial", {})
    has_base = any(k.endswith("/baseline") for k in SR)
    for w, f in (("1x1", "raw"), ("8x4", "raw"), ("8x4", "json"),
                 ("32x128", "raw")):
        name = "serial fraction <= 5%% (%s %s, --threads %d)" % (
            w, f, SERIAL_THREADS)
        n_, b_ = SR.get("%s/%s/new" % (w, f)), SR.get("%s/%s/baseline" %
                                                     (w, f))
        sf = n_ and n_.get("serial_fraction")
        bsf = b_ and b_.get("serial_fraction")
        val = "%.1f%%" % (100 * sf) if sf is not None else "n/a"
        if has_base:
            val += " (baseline %s)" % ("%.1f%%" % (100 * bsf)
                                       if bsf is not None else "n/a")
        G.append(goal(name, val, sf <= 0.05 if sf is not None else None))
    for w, f in (("8x4", "raw"), ("32x128", "raw")):
        name = "server CPU/req <= 2x nginx (%s %s)" % (w, f)
        n_, b_ = SR.get("%s/%s/new" % (w, f)), SR.get("%s/%s/baseline" %
                                                     (w, f))
        ng = SR.get("%s/%s/nginx" % (w, f))
        r = n_ and n_.get("cpu_vs_nginx")
        if r:
            val = "%.1fx (%s vs %s us)" % (r, fmt_us(n_["server_cpu_us"]),
                                           fmt_us(ng["server_cpu_us"]))
        else:
            val = "n/a"
        if has_base:
            br = b_ and b_.get("cpu_vs_nginx")
            val += " (baseline %s)" % ("%.1fx" % br if br else "n/a")
        G.append(goal(name, val, r <= 2 if r else None))
    L = res.get("large", {})
    ln, lb = L.get("new", {}), L.get("baseline")
    for key, name, need, fm in (
            ("vs_ceiling", "32x128 raw >= 0.9x the loopback ceiling req/s"
             " (large)", lambda r: r >= 0.9, "%.2fx"),
            ("cpu_vs_nginx", "32x128 raw server CPU/req <= 2x nginx (large)",
             lambda r: r <= 2, "%.2fx")):
        r = ln.get(key)
        val = fm % r if r else "n/a"
        if r and key == "cpu_vs_nginx":
            val += " (%s vs %s us)" % (fmt_us(ln["server_cpu_us"]),
                                       fmt_us(L["nginx"]["server_cpu_us"]))
        if lb is not None:
            val += " (baseline %s)" % (fm % lb[key] if lb.get(key) else "n/a")
        G.append(goal(name, val, need(r) if r else None))
    s1 = res["points"].get("startup/1MiB")
    s2 = res["points"].get("startup/1024MiB")
    if s1 and s2 and s1["cold_s"] and s2["cold_s"]:
        r = s2["cold_s"] / s1["cold_s"]
        G.append(goal("1 GiB table time-to-health <= 1.5x of 1 MiB (cold)",
                      "%.1f ms vs %.1f ms (%.2fx)" % (
                          s2["cold_s"] * 1e3, s1["cold_s"] * 1e3, r),
                      r <= 1.5))
    else:
        G.append(goal("1 GiB table time-to-health <= 1.5x of 1 MiB", "n/a",
                      None))
    ep = core.get("embed_pct_memcpy")
    G.append(goal("core embed (32x128) >= 70% of memcpy",
                  "%d%%" % ep if ep is not None else "n/a",
                  ep >= 70 if ep is not None else None))
    ti, tt = core.get("init_s"), core.get("torch_init_s")
    G.append(goal("tokvec init faster than torch init (default table)",
                  "%.3f s vs %.3f s" % (ti, tt) if ti and tt else "n/a",
                  ti < tt if ti and tt else None))
    res["goals"] = G
    gsec = "## Goals\n\n" + md_table(["goal", "measured", "result"], G)
    if failures:
        gsec += "\n\n**Correctness failures:** " + "; ".join(failures)

    mach = res["machine"]
    head = ("# tokvec benchmarks\n\n"
            "Generated by `make bench` (bench/run.sh, bench/loadbench.py) on %s"
            "%s; took %.0f s.\n\n"
            "Machine: %d cores (`nproc`), %s [%s], %s RAM, Linux %s, "
            "virtualization: %s. %s, %s, Python %s, torch %s.\n\n"
            "Everything below ran in one run on this machine, with wrk on "
            "the same cores as the servers (2 threads), so absolute numbers "
            "are low and noisy; read the ratios, which compare points "
            "measured alternately in the same run. The peer is "
            "`torch_fastapi.py` under uvicorn with 2 workers; tokvec runs "
            "with its defaults (threads = cores) and `--access-log false`.\n"
            % (res["started"], " (--quick)" if a.quick else "",
               time.time() - t_start, mach["nproc"], mach["cpu"],
               mach["flags"], mach["mem"], mach["kernel"], mach["virt"],
               mach["wrk"], mach["nginx"], mach["python"], mach["torch"]))
    core_sec = ("## Core (one thread): bench/run.sh\n\n```\n%s\n```\n" %
                core_text.strip()) if core_text else ""
    plots = [p for p in ("tokens.png", "tokens_gbs.png", "connections.png",
                         "connections_p99.png", "dim.png", "startup.png")
             if os.path.exists(os.path.join(a.out, p))]
    psec = ("## Plots\n\n" + "\n".join("![%s](%s)" % (p[:-4], p)
                                        for p in plots) + "\n") if plots else ""
    doc = "\n\n".join(x for x in [head, gsec] + md + [core_sec, psec] if x)
    with open(os.path.join(a.out, "latest.md"), "w") as f:
        f.write(doc.rstrip() + "\n")
    with open(os.path.join(a.out, "latest.json"), "w") as f:
        json.dump(res, f, indent=1, default=str)
    print()
    print(gsec)
    for s in md:
        print()
        print(s)
    print("\nwritten: %s" % os.path.join(a.out, "latest.md"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
