"""httpbench.common -- what every part of bench/loadbench.py shares: the
paths (the shared load scripts and peers), processes started and stopped
by process group, free ports, health checks, one POST, and the CPU
accounting of a server's threads (/proc/PID/task) behind the serial
fraction."""
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time


TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
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
