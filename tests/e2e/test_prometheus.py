"""Prometheus itself reads what tokvec gives it: `promtool check metrics`
(the Prometheus project's own parser and linter) accepts a live server's
/metrics after every route, status family and histogram has samples;
deploy/prometheus/alerts.yml passes `promtool check rules` and its unit
tests (alerts_test.yml: each alert fires on its case, stays quiet on its
near miss); prometheus.yml passes `promtool check config`; and every metric
the alerts name is one a live server exports.

Run: /usr/bin/python3 tests/e2e/test_prometheus.py --binary build/tokvec
Needs promtool (Debian package prometheus; `make test-deps` installs it).
Without it every test is skipped with a message saying so.
"""
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support as tc  # noqa: E402  (the e2e support module)

PROM = os.path.join(tc.TOP, "deploy", "prometheus")
PROMTOOL = shutil.which("promtool")
NEED = ("promtool not found: install the Debian package prometheus "
        "(make test-deps does)")


def promtool(*args, stdin=None):
    r = subprocess.run([PROMTOOL] + list(args), input=stdin, cwd=PROM,
                       capture_output=True, timeout=120)
    return r.returncode, (r.stdout + r.stderr).decode(errors="replace")


@unittest.skipIf(PROMTOOL is None, NEED)
class Metrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp, p = tc.temp_table("tokvec-e2e-prom-", 100, 8,
                                   "--context", "8")
        cls.srv = tc.Server(p, "--max-tokens", "16")
        s = cls.srv
        # Samples in every family: routes, 2xx/4xx codes, a reload that
        # failed (the file is gone), and one that worked.
        s.embed({"inputs": [[1, 2, 3]]})
        s.embed({"inputs": [[1, 2, 3]]}, "application/octet-stream")
        s.embed({"inputs": [[1, 100]]})          # 422
        s.embed({"inputs": list(range(20))})     # 413
        s.request("POST", "/embed", b"{", {"Content-Type":
                                           "application/json"})  # 400
        for path in ("/tokens/5", "/info", "/health", "/ready", "/nope",
                     "/openapi.json"):
            s.get(path)
        s.request("DELETE", "/embed")            # 405
        # A request is counted when MHD reports it complete, just after
        # its client has the answer (under valgrind, after the next request
        # began): read /metrics once it is the only request in flight.
        deadline = time.time() + 10 * tc.TIME_SCALE
        cls.text = s.get("/metrics")[2]
        while (b"\ntokvec_inflight_requests 1\n" not in cls.text
               and time.time() < deadline):
            time.sleep(0.01)
            cls.text = s.get("/metrics")[2]

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp)

    def test_promtool_accepts_live_metrics(self):
        text = self.text.decode()
        # What is checked really is there: several routes and codes, a
        # histogram with buckets, the table info gauge.
        for needle in ('route="/embed",code="200"', 'code="422"',
                       'code="404"', 'code="405"', 'code="413"',
                       'tokvec_request_duration_seconds_bucket{route='
                       '"/embed",le="+Inf"}', "tokvec_table_info{"):
            self.assertIn(needle, text)
        rc, out = promtool("check", "metrics", stdin=self.text)
        self.assertEqual(rc, 0, out)

    def test_promtool_rejects_what_is_wrong(self):
        # The same checker on broken copies (so the test above can fail):
        # a family's TYPE line repeated after its samples, an unterminated
        # label value, a counter without the _total suffix.
        typ = next(x for x in self.text.decode().splitlines()
                   if x.startswith("# TYPE tokvec_tokens_total "))
        for bad, why in (
                (self.text + (typ + "\n").encode(), "second TYPE line"),
                (self.text.replace(b'route="/info"', b'route="/info'),
                 "end of label value"),
                (self.text.replace(b"tokvec_tokens_total", b"tokvec_tokens"),
                 "_total")):
            rc, out = promtool("check", "metrics", stdin=bad)
            self.assertNotEqual(rc, 0, why + ": " + out)
            self.assertIn(why, out)

    def test_every_metric_an_alert_names_is_exported(self):
        with open(os.path.join(PROM, "alerts.yml")) as f:
            rules = f.read()
        exported = set(re.findall(r"^([a-z_]+)[ {]", self.text.decode(),
                                  re.M))
        named = set(re.findall(r"\b(tokvec_[a-z_]+)", rules))
        self.assertTrue(named)
        self.assertEqual(named - exported, set())


@unittest.skipIf(PROMTOOL is None, NEED)
class Rules(unittest.TestCase):
    def test_alerts_pass_check_rules(self):
        rc, out = promtool("check", "rules", "alerts.yml")
        self.assertEqual(rc, 0, out)
        self.assertIn("SUCCESS: 6 rules found", out)

    def test_alerts_fire_on_their_cases_only(self):
        rc, out = promtool("test", "rules", "alerts_test.yml")
        self.assertEqual(rc, 0, out)

    def test_compose_prometheus_config_is_valid(self):
        rc, out = promtool("check", "config", "prometheus.yml")
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    tc.main()
