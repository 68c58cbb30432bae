"""POST /similar, GET / and GET /docs over HTTP: the neighbours equal a
numpy cosine scan of the table file (ties by id), the contract's errors,
auth like /embed, the pages public with a strict CSP (and
/static/auth.json telling the page whether to ask for a key), and the
routes counted in /metrics.

Run: /usr/bin/python3 tests/e2e/test_similar.py --binary build/tokvec
"""
import json
import os
import shutil
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support as tc  # noqa: E402  (the e2e support module)


def similar(srv, obj, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    return srv.request("POST", "/similar", json.dumps(obj), h)


class Similar(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.table = tc.temp_table("tokvec-similar-", 3000, 40,
                                           "--context", "16", "--seed", "7")
        cls.tok = tc.read_safetensors(cls.table)["tok_emb.weight"].astype(
            np.float64)
        cls.srv = tc.Server(cls.table)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp)

    def reference(self, q, k):
        t = self.tok
        cos = t @ q / (np.linalg.norm(t, axis=1) * np.linalg.norm(q))
        order = np.lexsort((np.arange(len(cos)), -cos))
        return cos, order[:k]

    def check(self, got, q, k):
        cos, want = self.reference(q, k)
        self.assertEqual(len(got), k)
        for g in got:
            self.assertEqual(set(g), {"id", "text", "score"})
            self.assertIsNone(g["text"])
            self.assertAlmostEqual(g["score"], cos[g["id"]], delta=1e-5)
        # the same set, up to rounding among near-equal scores
        self.assertAlmostEqual(got[-1]["score"], cos[want[-1]], delta=1e-5)
        same = sum(g["id"] == w for g, w in zip(got, want))
        self.assertGreaterEqual(same, k - 2)

    def test_neighbours_of_a_token_match_numpy(self):
        for tid in (0, 1234, 2999):
            st, _, body = similar(self.srv, {"id": tid, "k": 25})
            self.assertEqual(st, 200)
            got = json.loads(body)
            self.assertEqual(got[0]["id"], tid)
            self.check(got, self.tok[tid], 25)

    def test_neighbours_of_a_vector_match_numpy(self):
        q = np.linspace(-3, 2, 40)
        st, _, body = similar(self.srv, {"vector": q.tolist()})
        self.assertEqual(st, 200)
        self.check(json.loads(body), q, 10)  # k defaults to 10

    def test_errors(self):
        cases = [
            ({"id": 1, "k": 0}, 422, "k_out_of_range"),
            ({"id": 1, "k": 1001}, 422, "k_out_of_range"),
            ({"id": 3000}, 422, "token_out_of_range"),
            ({"vector": [1.0] * 39}, 422, "dimension_mismatch"),
            ({"vector": [0] * 40}, 400, "invalid_request"),
            ({"id": 1, "vector": [1] * 40}, 400, "invalid_request"),
            ({"ids": [1]}, 400, "invalid_request"),
            ({"vector": [1] * 500}, 413, "payload_too_large"),
        ]
        for obj, status, etype in cases:
            st, _, body = similar(self.srv, obj)
            self.assertEqual((st, json.loads(body)["error_type"]),
                             (status, etype), obj)
        st, _, body = self.srv.request("POST", "/similar", "{",
                                       {"Content-Type": "application/json"})
        self.assertEqual((st, json.loads(body)["error_type"]),
                         (400, "invalid_json"))
        st, _, _ = self.srv.request("POST", "/similar", "{}",
                                    {"Content-Type": "text/html"})
        self.assertEqual(st, 415)
        st, hdr, _ = self.srv.get("/similar")
        self.assertEqual((st, hdr.get("Allow")), (405, "POST"))

    def test_pages_are_public_similar_needs_the_key(self):
        keyed = tc.Server(self.table, "--api-key", "sesame")
        try:
            for path in ("/", "/docs", "/static/playground.js"):
                st, hdr, body = keyed.get(path)
                self.assertEqual(st, 200, path)
                self.assertNotIn("unsafe", hdr["Content-Security-Policy"])
                self.assertEqual(hdr["X-Content-Type-Options"], "nosniff")
            # the page learns that it must ask for the key, without one
            st, hdr, body = keyed.get("/static/auth.json")
            self.assertEqual((st, json.loads(body)), (200, {"api_key": True}))
            self.assertEqual(hdr["Content-Type"], "application/json")
            st, hdr, _ = similar(keyed, {"id": 1})
            self.assertEqual((st, hdr.get("WWW-Authenticate")),
                             (401, "Bearer"))
            st, _, _ = similar(keyed, {"id": 1},
                               {"Authorization": "Bearer sesame"})
            self.assertEqual(st, 200)
        finally:
            keyed.stop()
        self.assertEqual(self.srv.get("/static/nope.js")[0], 404)
        st, _, body = self.srv.get("/static/auth.json")
        self.assertEqual((st, json.loads(body)), (200, {"api_key": False}))

    def test_routes_are_counted_in_metrics(self):
        similar(self.srv, {"id": 2})
        self.srv.get("/")
        text = self.srv.get("/metrics")[2].decode()
        self.assertIn('tokvec_requests_total{route="/similar",code="200"}',
                      text)
        self.assertIn('tokvec_requests_total{route="pages",code="200"}',
                      text)


if __name__ == "__main__":
    tc.main()
