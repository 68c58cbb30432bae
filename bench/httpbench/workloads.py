"""httpbench.workloads -- what bench/loadbench.py sends: request bodies,
the wrk and httpload drivers, the runner that alternates targets point by
point, warm-up, the core benchmark, and the serial-fraction and Unix
socket sections, and large replies against the loopback ceiling."""
import json
import os
import random
import re
import resource
import shutil
import struct
import subprocess
import tempfile
import time

from .common import (CLK, free_port, log, merge_watch, NPROC, pg_cpu, post,
                     POST_LUA, Proc, STATS_LUA, ThreadWatch)
from .peers import serve_options, start_tokvec, unix_health
from .reporting import (amdahl, busiest, classify, fmt_ms, fmt_ratio, fmt_rps,
                        fmt_us, md_table, parse_core)


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


def embedbench(build, table, B, S):
    try:
        out = subprocess.run([os.path.join(build, "bench", "embedbench"),
                              table, str(B), str(S)], capture_output=True,
                             text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return parse_core(out)


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
    # env LARGE_MODES: more ceilings, one per bench/ceiling --mode (with
    # ":hp", --hugepage 1), e.g. sendfile,zerocopy,memfd:hp: what each way
    # of handing the kernel a reply costs (docs/performance.md)
    modes = [m for m in os.environ.get("LARGE_MODES", "").split(",") if m]
    try:
        for mode in ["send"] + modes:
            port = free_port()
            lab = "ceiling" + ("" if mode == "send" else "-" + mode)
            m, hp = mode.split(":")[0], mode.endswith(":hp")
            cp = Proc(lab, [cbin, "--port", str(port), "--threads",
                            str(SERIAL_THREADS), "--body", rfile, "--mode", m,
                            "--hugepage", "1" if hp else "0"], port,
                      logfile=os.path.join(workdir, lab + ".log"))
            if cp.wait_healthy(10) is not None:
                procs.append(cp)
                targets.append((lab, "http://127.0.0.1:%d/embed" % port,
                                cp.p.pid))
            else:
                notes.append("bench/ceiling --mode %s did not start (%s)." %
                             (mode, cbin))
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
    if modes:
        sec += ("\n`ceiling-MODE` is bench/ceiling --mode MODE (env"
                " LARGE_MODES; `:hp`: --hugepage 1): the same bytes handed to"
                " the kernel another way (bench/ceiling.c says how).\n")
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
