"""sentcheck.py BODIES_DIR URL_A URL_B -- before `make bench-sentences`
times anything: every request body gives the same sentence vectors from
both servers (POST /v1/embeddings, base64 float32) within 1e-5 per
component, the same count and the same usage. Prints the largest
difference; exits 1 on a mismatch.
"""
import base64
import glob
import json
import os
import sys
import urllib.request

import numpy as np


def post(url, body):
    r = urllib.request.Request(url + "/v1/embeddings", data=body, headers={
        "Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=120) as f:
        j = json.load(f)
    v = np.stack([np.frombuffer(base64.b64decode(d["embedding"]), "<f4")
                  for d in sorted(j["data"], key=lambda d: d["index"])])
    return v, j["usage"]["prompt_tokens"]


def main(bodies, a, b):
    worst, n = 0.0, 0
    for p in sorted(glob.glob(os.path.join(bodies, "body-*.json"))):
        with open(p, "rb") as f:
            body = f.read()
        va, ua = post(a, body)
        vb, ub = post(b, body)
        if va.shape != vb.shape or ua != ub:
            sys.exit("sentcheck: %s: shapes %s %s, usage %d %d"
                     % (p, va.shape, vb.shape, ua, ub))
        d = float(np.abs(va.astype(np.float64) - vb).max())
        worst = max(worst, d)
        n += len(va)
        if d > 1e-5:
            i = int(np.abs(va - vb).max(axis=1).argmax())
            sys.exit("sentcheck: %s: vector %d differs by %.3g"
                     % (p, i, d))
    print("%d vectors, largest difference %.3g" % (n, worst))


if __name__ == "__main__":
    main(*sys.argv[1:4])
