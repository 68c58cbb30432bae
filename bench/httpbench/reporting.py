"""httpbench.reporting -- what bench/loadbench.py writes: number
formats, markdown tables, the machine's description, the core half's
output parsed, gnuplot plots, and the serial fraction's reading
(which threads are one of a kind, Amdahl's bound)."""
import platform
import re
import shutil
import subprocess

from .common import log, NPROC, PAR_NAME, PY


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
