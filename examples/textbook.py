"""The textbook walk-through, with tokvec instead of PyTorch.

  torch.manual_seed(123); embedding_layer = nn.Embedding(6, 3)
  print(embedding_layer.weight); print(embedding_layer(torch.tensor([3])))
then the GPT-2 sized layer: vocab 50257, dim 256, context 4, a batch of
8 x 4 token ids, token + absolute position embeddings -> (8, 4, 256).

Run from the repository top after `make`:  /usr/bin/python3 examples/textbook.py
(needs numpy; starts its own server on a free port with the default table,
creating data/gpt2-256.safetensors if missing).
"""
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "clients", "python"))
import tokvec  # noqa: E402

# TOKVEC_BINARY: another build (the tests run this file with theirs).
BIN = (os.environ.get("TOKVEC_BINARY")
       or os.path.join(TOP, "build", "tokvec"))
np.set_printoptions(precision=4, suppress=True)


def serve(table):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([BIN, "serve", "--table", table, "--port", str(port),
                          "--access-log", "0"], stderr=subprocess.DEVNULL)
    url = "http://127.0.0.1:%d" % port
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/health", timeout=1).close()
            return p, url
        except OSError:
            time.sleep(0.05)
    raise SystemExit("server did not start")


tmp = tempfile.mkdtemp()
six = os.path.join(tmp, "six.safetensors")
subprocess.run([BIN, "init", "--vocab", "6", "--dim", "3", "--positional",
                "none", "--seed", "123", "-o", six], check=True)
p, url = serve(six)
c = tokvec.Client(url)
print("torch.manual_seed(123); nn.Embedding(6, 3).weight:")
print(np.array([c.token(i) for i in range(6)], dtype=np.float32))
print("embedding of token 3:", c.embed([3])[0])
print("JSON row 3:", urllib.request.urlopen(urllib.request.Request(
    url + "/embed", data=b'{"inputs":[3]}')).read().decode())
p.terminate()
p.wait()

table = os.path.join(TOP, "data", "gpt2-256.safetensors")
if not os.path.exists(table):
    os.makedirs(os.path.dirname(table), exist_ok=True)
    subprocess.run([BIN, "init", "--vocab", "50257", "--dim", "256",
                    "--context", "1024", "--seed", "123", "-o", table],
                   check=True)
p, url = serve(table)
c = tokvec.Client(url)
inputs = [[40, 367, 2885, 1464], [1807, 3619, 402, 271],
          [10899, 2138, 257, 7026], [15632, 438, 2016, 257],
          [922, 5891, 1576, 438], [568, 340, 373, 645],
          [1049, 5975, 284, 502], [284, 3285, 326, 11]]
x = c.embed(inputs)
print("\ninput_embeddings = token_embeddings + pos_embeddings:", x.shape)
print(x[0, :2, :5])
p.terminate()
p.wait()
