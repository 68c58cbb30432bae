"""End-to-end: the verbs of the tokvec binary (server/cli/main.c) -- no
verb is a usage error (exit 2, the list on stderr); --help, -h and help
print the same list on stdout (exit 0); --version prints the version of
include/tokvec_error.h; an unknown verb exits 2 with the list, naming the
closest verb only when it is a likely typo.

Run: python3 tests/e2e/test_cli_verbs.py --binary build/tokvec
"""
import os
import re
import subprocess
import unittest

import support as tc

VERBS = ["serve", "init", "inspect", "lookup", "convert", "tokenize",
         "probe"]


def run(*args):
    return subprocess.run([tc.BINARY] + list(args), capture_output=True,
                          text=True, timeout=60)


def header_version():
    with open(os.path.join(tc.TOP, "include", "tokvec_error.h"),
              encoding="utf-8") as f:
        return re.search(r'#define TOKVEC_VERSION "([^"]+)"',
                         f.read()).group(1)


def verbs_listed(text):
    return re.findall(r"^  (\w+) +\S", text, re.M)


class Verbs(unittest.TestCase):
    def test_no_verb_is_a_usage_error_listing_the_verbs(self):
        r = run()
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertTrue(r.stderr.startswith("usage: tokvec COMMAND"))
        self.assertEqual(verbs_listed(r.stderr), VERBS)

    def test_help_in_each_spelling_lists_the_verbs_on_stdout(self):
        texts = []
        for arg in ("--help", "-h", "help"):
            r = run(arg)
            self.assertEqual(r.returncode, 0, arg)
            self.assertEqual(r.stderr, "", arg)
            self.assertEqual(verbs_listed(r.stdout), VERBS, arg)
            self.assertTrue(r.stdout.rstrip().endswith(
                "tokvec " + header_version()), arg)
            texts.append(r.stdout)
        self.assertEqual(len(set(texts)), 1)  # one text, three spellings

    def test_version_is_the_headers(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, "tokvec %s\n" % header_version())

    def test_an_unknown_verb_names_a_close_one_only(self):
        for verb, close in (("serv", "serve"), ("lokup", "lookup"),
                            ("xyzzy-quux", None), ("--port", None)):
            r = run(verb, "x")
            self.assertEqual(r.returncode, 2, verb)
            self.assertEqual(r.stdout, "", verb)
            first = r.stderr.splitlines()[0]
            if close:
                self.assertEqual(first, "tokvec: unknown command '%s' (did "
                                 "you mean %s?)" % (verb, close))
            else:
                self.assertEqual(first, "tokvec: unknown command '%s'"
                                 % verb)
            self.assertEqual(verbs_listed(r.stderr), VERBS, verb)


if __name__ == "__main__":
    tc.main()
