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

The parts live in bench/httpbench/, one module per job (common, peers,
workloads, reporting); this file is the command line and the run.
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import time

from httpbench.common import free_port, LOAD, log, NPROC, post, Proc, TOP
from httpbench.peers import Nginx, start_peer, start_tokvec, tokvec_cmd
from httpbench.reporting import (fmt_bytes, fmt_ms, fmt_ratio, fmt_rps,
                                 fmt_us, gnuplot, machine, md_table,
                                 parse_core)
from httpbench.workloads import (better, body_file, embedbench, f32, flat,
                                 npy_data, Runner, section_large,
                                 section_serial,
                                 section_unix, SERIAL_THREADS, with_extra)


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
    # env BENCH_BASELINE: an older binary beside this one on the seed
    # workload (8x4 JSON) against the peer, before and after in one run
    base_bin = os.environ.get("BENCH_BASELINE")
    tvb = None
    if base_bin and "main" in only:
        tvb = start_tokvec(os.path.abspath(base_bin), table, workdir,
                           "main-baseline")
    for pr_ in (ngx.proc, tv, peer, tvb):
        run.register(pr_)
    res["peer_time_to_health_s"] = peer_t
    tv_url = "http://127.0.0.1:%d/embed" % tv.port if tv else None
    tvb_url = "http://127.0.0.1:%d/embed" % tvb.port if tvb else None
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
                    if tvb and name == "8x4" and f == "json":
                        targets.append(("baseline", tvb_url))
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
                    for tgt in ("tokvec", "baseline", "peer", "nginx"):
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
        if tvb:
            tvb.stop()

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
    g = ratio_goal("8x4 JSON >= 25x peer req/s",
                   rps("8x4/json/tokvec"), rps("8x4/json/peer"), 25)
    if tvb:
        b_, p_ = rps("8x4/json/baseline"), rps("8x4/json/peer")
        g[1] += " (baseline %s)" % ("%.1fx" % (b_ / p_) if b_ and p_
                                    else "n/a")
    G.append(g)
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
    # GPT-2 BPE against npm tiktoken: make bench runs bench-tokenize first
    # (bench/tokbench.sh, BEFORE=BENCH_BASELINE), which leaves its figures
    tj_ = os.path.join(TOP, "bench", "results", "tokenize.json")
    try:
        tk = json.load(open(tj_))
    except (OSError, ValueError):
        tk = None
    if tk and tk.get("tiktoken") and tk.get("tokvec"):
        r = tk["tiktoken"]["wall"] / tk["tokvec"]["wall"]
        val = "%.1fx wall (one thread %.1fx wall, %.1fx CPU)" % (
            r, tk["tiktoken"]["wall"] / tk["tokvec1"]["wall"],
            tk["tiktoken"]["cpu"] / tk["tokvec1"]["cpu"])
        if tk.get("before"):
            val += " (baseline %.1fx wall)" % (tk["tiktoken"]["wall"] /
                                               tk["before"]["wall"])
        G.append(goal("GPT-2 BPE >= 10x npm tiktoken (10 MB, whole "
                      "processes; bench-tokenize, %s)" % tk["date"], val,
                      r >= 10))
    else:
        G.append(goal("GPT-2 BPE >= 10x npm tiktoken (make bench-tokenize)",
                      "n/a", None))
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
