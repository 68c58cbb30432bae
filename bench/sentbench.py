"""sentbench.py -- `make bench-sentences`: sentence vectors over HTTP,
tokvec against what a JavaScript user writes (bench/sentpeer.js: Node,
npm tokenizers, Float32Array mean pooling), on the same potion-shaped
Model2Vec model (bench/mkpotion.py), the same request bodies
(bench/mksentences.py: 256 short mixed-language lines each, base64
answers) and the same load generator (wrk, bench/sentences.lua).

Steps: start both servers (one process each, their defaults: tokvec's
workers = the cores, the peer's tokenizers thread pool = the cores);
check that every body gives the same vectors from both (within 1e-5,
bench/sentcheck.py); then ROUNDS rounds, each timing tokvec and the peer
(order alternating) for SECS seconds with CONNS connections. For each
run: sentences/s (requests x 256 / wall), the server's CPU seconds (utime
+ stime of the process from /proc, all its threads) and sentences per
CPU-second of the server ("per core": what one fully busy core gives).
Medians over the rounds; the ratio is the median of each round's ratio.
Then one `perf record --call-graph dwarf` of tokvec under the same load:
every sample is put in the step of the first frame, leaf upwards, that
names one (bench/sentsplit.py). Writes bench/results/sentences.md and
sentences.json.

Env: BUILD (build), ORACLE (BUILD/oracle: node_modules), ROUNDS (7),
SECS (10), CONNS (4), PERF (1: the split; 0: none).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build")
ORACLE = os.environ.get("ORACLE", os.path.join(BUILD, "oracle"))
ROUNDS = int(os.environ.get("ROUNDS", "7"))
SECS = int(os.environ.get("SECS", "10"))
CONNS = int(os.environ.get("CONNS", "4"))
PERF = os.environ.get("PERF", "1") == "1"
PER = 256
NBODIES = 16
WORK = os.path.join(BUILD, "bench", "sent")
MODEL = os.path.join(WORK, "potion")
BODIES = os.path.join(WORK, "bodies")
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_up(proc, url, log):
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit("sentbench: %s exited: %s" % (url, open(log).read()))
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit("sentbench: %s did not come up" % url)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def wrk(url, secs):
    env = dict(os.environ, BODIES=BODIES, N=str(NBODIES))
    out = subprocess.run(["wrk", "-t1", "-c%d" % CONNS, "-d%ds" % secs,
                          "--timeout", "30s", "-s",
                          os.path.join(TOP, "bench", "sentences.lua"), url],
                         env=env, capture_output=True, text=True,
                         check=True).stdout
    line = [x for x in out.splitlines() if x.startswith("SENTSTATS ")][-1]
    return json.loads(line.split(" ", 1)[1])


def run_one(name, srv):
    c0 = cpu_seconds(srv["proc"].pid)
    s = wrk(srv["url"], SECS)
    c1 = cpu_seconds(srv["proc"].pid)
    if s["non2xx"] or s["errors"]:
        sys.exit("sentbench: %s: %d non-2xx, %d errors"
                 % (name, s["non2xx"], s["errors"]))
    wall = s["duration_us"] / 1e6
    sent = s["requests"] * PER
    cpu = c1 - c0
    return {"requests": s["requests"], "wall_s": wall, "cpu_s": cpu,
            "sentences_per_s": sent / wall,
            "sentences_per_cpu_s": sent / cpu if cpu else None,
            "p50_ms": s["p50"] / 1e3, "p99_ms": s["p99"] / 1e3}


def version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except OSError:
        return "?"


def main():
    subprocess.run([sys.executable, "bench/mkpotion.py", MODEL], check=True)
    text = os.path.join(BUILD, "bench", "tok", "base.txt")
    subprocess.run(["sh", "bench/mktext.sh",
                    os.path.join(BUILD, "bench", "tok", "mixed.txt")],
                   check=True)
    if not os.path.exists(os.path.join(BODIES, "body-%d.json"
                                       % (NBODIES - 1))):
        subprocess.run([sys.executable, "bench/mksentences.py", text,
                        BODIES, str(NBODIES)], check=True)
    lens = []
    for k in range(NBODIES):
        with open(os.path.join(BODIES, "body-%d.json" % k)) as f:
            lens += [len(x.encode()) for x in json.load(f)["input"]]
    mean_len = sum(lens) / len(lens)

    servers, procs = {}, []
    try:
        for name, argv, env in (
                ("tokvec", [os.path.join(BUILD, "tokvec"), "serve",
                            "--model", MODEL], {}),
                ("peer", ["node", "bench/sentpeer.js", MODEL],
                 {"NODE_PATH": os.path.join(ORACLE, "node_modules")})):
            port = free_port()
            log = os.path.join(WORK, name + ".log")
            e = {k: v for k, v in os.environ.items()
                 if not k.startswith("TOKVEC_")}
            e.update(env)
            if name == "tokvec":
                argv = argv + ["--port", str(port)]
            else:
                argv = argv + [str(port)]
            with open(log, "w") as lf:
                p = subprocess.Popen(argv, stdout=lf, stderr=lf, env=e)
            procs.append(p)
            url = "http://127.0.0.1:%d" % port
            wait_up(p, url, log)
            servers[name] = {"proc": p, "url": url}
        check = subprocess.run(
            [sys.executable, "bench/sentcheck.py", BODIES,
             servers["tokvec"]["url"], servers["peer"]["url"]],
            capture_output=True, text=True)
        if check.returncode:
            sys.exit(check.stdout + check.stderr)
        print("same vectors:", check.stdout.strip(), flush=True)
        for name in servers:  # warm-up: pages of the model, JIT
            wrk(servers[name]["url"], 2)
        runs = {"tokvec": [], "peer": []}
        for r in range(ROUNDS):
            order = ["tokvec", "peer"] if r % 2 == 0 else ["peer", "tokvec"]
            for name in order:
                x = run_one(name, servers[name])
                x["round"] = r
                runs[name].append(x)
                print("round %d %-6s %9.0f sentences/s, %9.0f per CPU-s, "
                      "CPU %.1f s / %.1f s wall" % (
                          r, name, x["sentences_per_s"],
                          x["sentences_per_cpu_s"] or 0, x["cpu_s"],
                          x["wall_s"]), flush=True)
        split = None
        if PERF and shutil.which("perf"):
            split = profile(servers["tokvec"])
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
    report(runs, split, mean_len, check.stdout.strip())


def profile(srv):
    data = os.path.join(WORK, "perf.data")
    env = dict(os.environ, BODIES=BODIES, N=str(NBODIES))
    load = subprocess.Popen(
        ["wrk", "-t1", "-c%d" % CONNS, "-d%ds" % (SECS + 2), "-s",
         os.path.join(TOP, "bench", "sentences.lua"), srv["url"]],
        env=env, stdout=subprocess.DEVNULL)
    time.sleep(1)
    subprocess.run(["perf", "record", "-q", "-F", "499", "--call-graph",
                    "dwarf,16384", "-p", str(srv["proc"].pid), "-o", data,
                    "--", "sleep", str(min(SECS, 6))],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    load.wait()
    script = subprocess.run(["perf", "script", "-i", data, "-F",
                             "tid,ip,sym,dso"], capture_output=True,
                            text=True).stdout
    out = subprocess.run([sys.executable, "bench/sentsplit.py"],
                         input=script, capture_output=True, text=True,
                         check=True).stdout
    os.remove(data)
    return json.loads(out)


def med(xs):
    return statistics.median(xs)


def report(runs, split, mean_len, check):
    cores = os.cpu_count()
    t, p = runs["tokvec"], runs["peer"]
    ratios = [a["sentences_per_s"] / b["sentences_per_s"]
              for a, b in zip(t, p)]
    cpu_ratios = [a["sentences_per_cpu_s"] / b["sentences_per_cpu_s"]
                  for a, b in zip(t, p)]
    load = version(["cat", "/proc/loadavg"]).split()[:3]
    res = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cores": cores, "rounds": ROUNDS, "secs": SECS, "conns": CONNS,
        "sentences_per_request": PER, "mean_line_bytes": mean_len,
        "node": version(["node", "--version"]),
        "wrk": version(["wrk", "-v"]).splitlines()[0] if version(
            ["wrk", "-v"]) else "wrk",
        "check": check, "loadavg_after": load,
        "runs": runs, "ratio_median": med(ratios),
        "ratio_per_cpu_median": med(cpu_ratios), "split": split,
    }
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/sentences.json", "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")

    def row(name, xs):
        sps = med([x["sentences_per_s"] for x in xs])
        cpu = med([x["sentences_per_cpu_s"] for x in xs])
        return "| %s | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f |" % (
            name, sps, min(x["sentences_per_s"] for x in xs),
            sps / cores, cpu, med([x["p50_ms"] for x in xs]),
            med([x["p99_ms"] for x in xs]))
    lines = [
        "# Sentence vectors over HTTP: tokvec vs a Node server (%s, %d CPUs)"
        % (res["date"], cores), "",
        "POST /v1/embeddings, base64 answers, %d lines a request (mean %.1f "
        "UTF-8 bytes: English, Russian, Japanese, Chinese, Korean, Greek, "
        "Thai, Arabic, Hindi, Hebrew, ...), a random 29528x256 float32 "
        "Model2Vec model with bge's WordPiece tokenizer (normalize true). "
        "wrk -t1 -c%d, %d s a run, %d rounds (order alternating), medians. "
        "The load generator runs on the same %d cores; the machine is "
        "shared (load average after: %s)."
        % (PER, mean_len, CONNS, SECS, ROUNDS, cores, " ".join(load)), "",
        "Same vectors first: %s (within 1e-5 required)." % check, "",
        "| server | sentences/s | slowest round | sentences/s per core "
        "(/ %d) | sentences per server CPU-second | p50 ms | p99 ms |"
        % cores,
        "|---|---|---|---|---|---|---|",
        row("tokvec serve --model", t),
        row("Node: npm tokenizers + Float32Array (bench/sentpeer.js)", p),
        "",
        "tokvec / peer: **%.1fx** sentences/s (median of the rounds' ratios;"
        " rounds: %s), %.1fx per server CPU-second."
        % (med(ratios), ", ".join("%.1f" % x for x in ratios),
           med(cpu_ratios)), ""]
    if split:
        lines += [
            "tokvec's server CPU by step (perf record --call-graph dwarf, "
            "%d samples; each sample goes to the first frame, leaf "
            "upwards, that names a step: bench/sentsplit.py):" %
            split["samples"], "",
            "| step | share | what |", "|---|---|---|"]
        for k, what in (
                ("parse", "the JSON request: jansson, tokvec's checks"),
                ("tokenize", "the text cut, normalizer, pre-tokenizer, "
                 "WordPiece"),
                ("pool", "rows, mean, normalize (unk dropped)"),
                ("encode", "base64 and the JSON answer"),
                ("send", "libmicrohttpd and the kernel: receive, send, "
                 "wake-ups"),
                ("other", "thread pool, allocator, the rest")):
            lines.append("| %s | %.1f %% | %s |"
                         % (k, split["share"].get(k, 0.0), what))
        lines.append("")
    with open("bench/results/sentences.md", "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    os.chdir(TOP)
    main()
