"""httpbench.peers -- what bench/loadbench.py measures against: tokvec
itself, the PyTorch + FastAPI peer and nginx serving the same bytes (the
HTTP ceiling), each started on a free port and waited for."""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from .common import (_answers_200, free_port, log, NPROC, PEERS, port_free,
                     post, Proc, PY)


def serve_options(binary):
    """The --options `tokvec serve --help` lists."""
    try:
        r = subprocess.run([binary, "serve", "--help"], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return set(re.findall(r"--([a-z][a-z0-9-]*)", r.stdout + r.stderr))


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
