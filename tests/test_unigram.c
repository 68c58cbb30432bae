/* test_unigram.c -- the Unigram model (core/tokenizer/unigram.c): the
 * Viterbi's choices, ties, unknown characters fused and scored, byte
 * fallback, the missing unk_id, the tokenizer.json "model" object and its
 * scores read as serde_json reads them, and long runs of one letter or
 * of unknown characters (what they cost per byte is a measurement for a
 * benchmark, never a timed unit test).
 * Through the tokenizer.json loader: a SentencePiece-style pipeline
 * (Strip, Replace with a regex, Metaspace) gives HF's ids, byte spans
 * and decode, and what tokvec does not run is refused by its JSON path;
 * a BPE without ByteLevel (spbpe.c) falls back to bytes and fuses
 * unknowns as HF does.
 * Exactness against Hugging Face tokenizers itself is make
 * tokenizer-oracle.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tok_fixture.h"
#include "tokvec_tokenizer.h"
#include "unigram.h"

static tv_unigram *make(const char **p, const double *s, size_t n, int64_t unk,
                        int bf)
{
    const unsigned char *pp[64];
    size_t len[64];
    tv_unigram *u = NULL;
    for (size_t i = 0; i < n; i++) {
        pp[i] = (const unsigned char *)p[i];
        len[i] = strlen(p[i]);
    }
    assert_int_equal(tv_unigram_new(pp, len, s, n, unk, bf, &u), 0);
    return u;
}

/* Encodes text; ids into got (n returned), spans checked to tile it. */
static size_t enc(const tv_unigram *u, const char *text, int32_t *got,
                  size_t *start, size_t *end)
{
    tv_uni_work *w = tv_uni_work_new();
    tv_uni_toks t = {0};
    assert_non_null(w);
    assert_int_equal(tv_unigram_encode(u, w, (const unsigned char *)text,
                                       strlen(text), 0, &t),
                     0);
    for (size_t i = 0; i < t.n; i++) {
        got[i] = t.id[i];
        if (start)
            start[i] = t.start[i];
        if (end)
            end[i] = t.end[i];
    }
    size_t n = t.n;
    tv_uni_toks_free(&t);
    tv_uni_work_free(w);
    return n;
}

/* s[0..n) through tv_unigram_stream_feed in pieces of 1..max bytes
 * (*seed: the sizes), each call given only the bytes from the last
 * *keep on, in a buffer of their own (ASan sees a read before it), its
 * tokens appended to t. */
static void feed_in_pieces(const tv_unigram *u, const unsigned char *s,
                           size_t n, size_t max, uint64_t *seed,
                           tv_uni_toks *t)
{
    tv_uni_work *w = tv_uni_work_new();
    assert_non_null(w);
    assert_int_equal(tv_unigram_stream_begin(u, w, 0), 0);
    size_t keep = 0, got = 0;
    while (got < n || n == 0) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t k = 1 + (size_t)(*seed >> 33) % max;
        got = n - got > k ? got + k : n;
        unsigned char *own = malloc(got - keep + 1);
        assert_non_null(own);
        memcpy(own, s + keep, got - keep);
        size_t nk = 0;
        assert_int_equal(tv_unigram_stream_feed(u, w, own, keep, got, got == n,
                                                t, NULL, NULL, &nk),
                         0);
        free(own);
        assert_true(nk >= keep && nk <= got);
        keep = nk;
        if (n == 0)
            break;
    }
    tv_uni_work_free(w);
}

/* tokenizers' own doc example: "abcdacdxx" -> abcd, a, cd, xx (xx one
 * fused unknown). */
static void best_path_and_fused_unknowns_as_tokenizers_doc(void **state)
{
    (void)state;
    const char *p[] = {"<unk>", "a", "b", "c", "d", "cd", "ab", "abc", "abcd"};
    const double s[] = {0, 0, 0, 0, 0, 1, 2, 5, 10};
    tv_unigram *u = make(p, s, 9, 0, 0);
    int32_t ids[16];
    size_t st[16], en[16];
    size_t n = enc(u, "abcdacdxx", ids, st, en);
    assert_int_equal(n, 4);
    int32_t want[] = {8, 1, 5, 0};
    assert_memory_equal(ids, want, sizeof want);
    assert_int_equal(st[3], 7);
    assert_int_equal(en[3], 9);
    tv_unigram_free(u);
}

/* Equal path scores: the first candidate to reach a position stays (the
 * earlier start, then the shorter piece). */
static void ties_keep_the_first_candidate(void **state)
{
    (void)state;
    const char *p[] = {"<unk>", "a", "aa"};
    const double s[] = {0, -1, -2};
    tv_unigram *u = make(p, s, 3, 0, 0);
    int32_t ids[8];
    /* a+aa and aa+a tie at -3; the node at 3 came from start 1 first */
    assert_int_equal(enc(u, "aaa", ids, NULL, NULL), 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    tv_unigram_free(u);
}

/* An unknown character scores min - 10; a fused stretch is looked up
 * whole, so with high scores it can be a piece of its own. */
static void fused_unknowns_are_looked_up_whole(void **state)
{
    (void)state;
    const char *p[] = {"<unk>", "xy", "a"};
    const double s[] = {50, 30, 40};
    tv_unigram *u = make(p, s, 3, 0, 0);
    int32_t ids[8];
    /* unknown x + unknown y: 2 * (30 - 10) = 40 > 30 for "xy" */
    assert_int_equal(enc(u, "xy", ids, NULL, NULL), 1);
    assert_int_equal(ids[0], 1);
    tv_unigram_free(u);
}

static void byte_fallback_spells_unknowns_in_bytes(void **state)
{
    (void)state;
    const char *p[] = {"<unk>", "a", "<0xC3>", "<0xA9>", "<0x21>"};
    const double s[] = {0, -1, 0, 0, 0};
    tv_unigram *u = make(p, s, 5, 0, 1);
    int32_t ids[8];
    size_t st[8], en[8];
    /* é is C3 A9: both bytes present, one span for both */
    size_t n = enc(u, "a\xC3\xA9", ids, st, en);
    assert_int_equal(n, 3);
    assert_int_equal(ids[1], 2);
    assert_int_equal(ids[2], 3);
    assert_int_equal(st[1], 1);
    assert_int_equal(st[2], 1);
    assert_int_equal(en[2], 3);
    /* é and ☃ (E2 98 83, no such bytes) are one stretch: all of it unk */
    n = enc(u,
            "\xC3\xA9\xE2\x98\x83"
            "a",
            ids, st, en);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 0);
    assert_int_equal(en[0], 5);
    assert_int_equal(ids[1], 1);
    tv_unigram_free(u);
}

static void missing_unk_id_fails_only_on_unknowns(void **state)
{
    (void)state;
    const char *p[] = {"a", "b"};
    const double s[] = {-1, -1};
    tv_unigram *u = make(p, s, 2, -1, 0);
    tv_uni_work *w = tv_uni_work_new();
    tv_uni_toks t = {0};
    assert_int_equal(
        tv_unigram_encode(u, w, (const unsigned char *)"ab", 2, 0, &t), 0);
    assert_int_equal(t.n, 2);
    assert_int_equal(tv_unigram_encode(u, w, (const unsigned char *)"az", 2, 0,
                                       &t),
                     TOKVEC_E_TOKENIZER);
    assert_int_equal(t.n, 2); /* untouched */
    tv_uni_toks_free(&t);
    tv_uni_work_free(w);
    tv_unigram_free(u);
}

static int from_json(const char *text, tv_unigram **u, char *err)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    int rc = tv_unigram_from_json(j, u, err, 128);
    json_decref(j);
    return rc;
}

static void model_object_rules_are_tokenizers(void **state)
{
    (void)state;
    char err[128];
    tv_unigram *u = NULL;
    assert_int_equal(from_json("{\"type\":\"Unigram\",\"unk_id\":1,"
                               "\"vocab\":[[\"a\",-1],[\"<unk>\",0.0]],"
                               "\"byte_fallback\":false}",
                               &u, err),
                     0);
    assert_int_equal(tv_unigram_size(u), 2);
    assert_int_equal(tv_unigram_unk(u), 1);
    assert_int_equal(tv_unigram_id(u, (const unsigned char *)"a", 1), 0);
    tv_unigram_free(u);
    static const char *bad[] = {
        "{\"type\":\"BPE\",\"vocab\":[]}",
        "{\"vocab\":[[\"a\",-1]],\"unk_id\":1}",
        "{\"vocab\":[],\"unk_id\":0}",
        "{\"vocab\":[[\"a\"]]}",
        "{\"vocab\":[[\"a\",\"x\"]]}",
        "{\"vocab\":[[\"a\",1]],\"unk_id\":-1}",
        "{\"vocab\":[[\"a\",1]],\"byte_fallback\":1}",
        "{\"unk_id\":null}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(from_json(bad[i], &u, err), TOKVEC_E_TOKENIZER);
        assert_null(u);
        assert_true(err[0] != 0);
    }
    /* no unk_id and no vocabulary: loads (and fails on any text) */
    assert_int_equal(from_json("{\"vocab\":[]}", &u, err), 0);
    tv_unigram_free(u);
}

/* serde_json (tokenizers' parser) reads -9.355305671691895 as the digits
 * 9355305671691895 / 1e15, one ulp from the correctly rounded value. */
static void scores_are_read_as_serde_json_reads_them(void **state)
{
    (void)state;
    char err[128];
    tv_unigram *u = NULL;
    assert_int_equal(from_json("{\"vocab\":[[\"a\",-9.355305671691895],"
                               "[\"b\",-0.5]]}",
                               &u, err),
                     0);
    double s = 0;
    assert_non_null(tv_unigram_piece(u, 0, NULL, &s));
    volatile double sig = 9355305671691895.0, p = 1e15;
    assert_true(s == -(sig / p));
    assert_true(s != -9.355305671691895);
    assert_non_null(tv_unigram_piece(u, 1, NULL, &s));
    assert_true(s == -0.5);
    tv_unigram_free(u);
    /* 17 digits (the integer past 2^53), one digit and a small exponent,
     * and a repeat of the first (read once) */
    assert_int_equal(from_json("{\"vocab\":[[\"a\",-0.30000000000000004],"
                               "[\"b\",-1e-07],[\"c\",-0.30000000000000004]]}",
                               &u, err),
                     0);
    volatile double s17 = 30000000000000004.0, p17 = 1e17, p7 = 1e7;
    assert_non_null(tv_unigram_piece(u, 0, NULL, &s));
    assert_true(s == -(s17 / p17));
    assert_non_null(tv_unigram_piece(u, 1, NULL, &s));
    assert_true(s == -(1.0 / p7));
    assert_non_null(tv_unigram_piece(u, 2, NULL, &s));
    assert_true(s == -(s17 / p17));
    tv_unigram_free(u);
}

/* The vocabulary trie (a double array): among 6,000 pieces of shared
 * prefixes, ASCII and 2-, 3- and 4-byte characters, with repeats, each
 * piece's bytes give the id of its last copy; every proper prefix that
 * is not a piece, and strings that are none, give -1 (against a sorted
 * list). */
typedef struct ref_piece {
    char s[48];
    int32_t id;
} ref_piece;

static int ref_cmp(const void *a, const void *b)
{
    const ref_piece *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int32_t ref_id(const ref_piece *r, size_t n, const char *s)
{
    size_t lo = 0, hi = n; /* the last of equal pieces: past them, back */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(r[mid].s, s) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && !strcmp(r[lo - 1].s, s) ? r[lo - 1].id : -1;
}

static void every_piece_is_found_by_its_bytes_among_thousands(void **state)
{
    (void)state;
    enum { N = 6000 };
    static const char *const ch[] = {"a",
                                     "b",
                                     "e",
                                     "\xe2\x96\x81",
                                     "\xc3\xa9",
                                     "\xe4\xb8\xad",
                                     "\xf0\x9f\x98\x80",
                                     "z",
                                     "~",
                                     "\x7f"};
    ref_piece *r = malloc(N * sizeof *r);
    const unsigned char **pp = malloc(N * sizeof *pp);
    size_t *len = malloc(N * sizeof *len);
    double *sc = malloc(N * sizeof *sc);
    assert_non_null(r);
    assert_non_null(pp);
    assert_non_null(len);
    assert_non_null(sc);
    uint64_t x = 12345;
    for (size_t i = 0; i < N; i++) {
        size_t k = 0, m;
        if (i > 0 && i % 97 == 0) { /* a repeat of an earlier piece */
            memcpy(r[i].s, r[i / 2].s, sizeof r[i].s);
        } else {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            m = 1 + (size_t)(x >> 60) % 8;
            for (size_t j = 0; j < m; j++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                const char *c = ch[(x >> 33) % (j < 2 ? 4 : 10)];
                memcpy(r[i].s + k, c, strlen(c));
                k += strlen(c);
            }
            r[i].s[k] = '\0';
        }
        r[i].id = (int32_t)i;
        pp[i] = (const unsigned char *)r[i].s;
        len[i] = strlen(r[i].s);
        sc[i] = -(double)i;
    }
    tv_unigram *u = NULL;
    assert_int_equal(tv_unigram_new(pp, len, sc, N, -1, 0, &u), 0);
    qsort(r, N, sizeof *r, ref_cmp);
    size_t found = 0, absent = 0;
    for (size_t i = 0; i < N; i++) {
        const char *s = r[i].s;
        size_t n = strlen(s);
        for (size_t m = 1; m <= n; m++) { /* every prefix, the piece too */
            char q[48];
            memcpy(q, s, m);
            q[m] = '\0';
            int32_t want = ref_id(r, N, q);
            assert_int_equal(tv_unigram_id(u, (const unsigned char *)q, m),
                             want);
            if (want >= 0)
                found++;
            else
                absent++;
            q[m - 1] ^= 0x20; /* a last byte off: usually none */
            assert_int_equal(tv_unigram_id(u, (const unsigned char *)q, m),
                             ref_id(r, N, q));
        }
    }
    assert_true(found >= N);
    assert_true(absent > 1000);
    assert_int_equal(tv_unigram_id(u, (const unsigned char *)"", 0), -1);
    tv_unigram_free(u);
    free(r);
    free(pp);
    free(len);
    free(sc);
}

static tv_uni_toks encode_all(const tv_unigram *u, tv_uni_work *w,
                              const char *s, size_t n)
{
    tv_uni_toks t = {0};
    assert_int_equal(
        tv_unigram_encode(u, w, (const unsigned char *)s, n, 0, &t), 0);
    return t;
}

/* 4 MB of one letter, of unknown characters, of text, each one piece: the
 * letters are the longest piece over and over, the unknowns one fused unk
 * spanning them all, the text its words. (What they cost per byte is
 * measured by `make unigram-oracle`'s speed lines, never timed here.) */
static void long_runs_give_the_longest_pieces_and_one_fused_unk(void **state)
{
    (void)state;
    const char *p[] = {"<unk>", "a", "aa", "aaaa", "aaaaaaaa", "the",
                       " ",     "t", "h",  "e",    " the",     "q",
                       "u",     "i", "c",  "k"};
    const double s[] = {0,  -1, -1.5, -2, -2.5, -3, -1, -2,
                        -2, -2, -2.5, -4, -4,   -4, -4, -4};
    tv_unigram *u = make(p, s, 16, 0, 0);
    tv_uni_work *w = tv_uni_work_new();
    size_t n = 4 << 20;
    char *a = malloc(n), *x = malloc(n);
    assert_true(a && x);
    memset(a, 'a', n);
    for (size_t i = 0; i < n; i++) /* U+2603, 3 bytes each */
        x[i] = (char)(i % 3 == 0 ? 0xE2 : i % 3 == 1 ? 0x98 : 0x83);
    tv_uni_toks t = encode_all(u, w, a, n);
    assert_int_equal(t.n, n / 8);
    for (size_t i = 0; i < t.n; i += 4099)
        assert_int_equal(t.id[i], 4); /* "aaaaaaaa" */
    tv_uni_toks_free(&t);
    t = encode_all(u, w, x, n - n % 3);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.id[0], 0);
    assert_int_equal(t.start[0], 0);
    assert_int_equal(t.end[0], n - n % 3);
    tv_uni_toks_free(&t);
    free(a);
    free(x);
    tv_uni_work_free(w);
    tv_unigram_free(u);
}

/* The reference: tokenizers' Viterbi over the whole string at once
 * (lattice arrays the string's length, no windows), its path fused and
 * looked up as tokenizers does; appends to ids/st/en, returns the count. */
static size_t whole_lattice(const tv_unigram *u, const unsigned char *s,
                            size_t n, int bf, int32_t *ids, size_t *st,
                            size_t *en)
{
    double *best = malloc((n + 1) * sizeof *best);
    size_t *from = malloc((n + 1) * sizeof *from);
    int32_t *id = malloc((n + 1) * sizeof *id);
    assert_true(best && from && id);
    size_t pieces = tv_unigram_size(u), k = 0;
    double minsc = 0;
    for (size_t i = 0; i < pieces; i++) {
        double sc;
        (void)tv_unigram_piece(u, (int32_t)i, NULL, &sc);
        if (i == 0 || sc < minsc)
            minsc = sc;
    }
    for (size_t i = 0; i <= n; i++)
        from[i] = SIZE_MAX;
    best[0] = 0;
    for (size_t p = 0; p < n;) {
        size_t ml = s[p] < 0x80 ? 1 : s[p] < 0xE0 ? 2 : s[p] < 0xF0 ? 3 : 4;
        int single = 0;
        for (size_t q = p + 1; q <= n && q - p <= 32; q++) { /* pieces */
            int32_t t = tv_unigram_id(u, s + p, q - p);
            double sc;
            if (t < 0)
                continue;
            (void)tv_unigram_piece(u, t, NULL, &sc);
            if (from[q] == SIZE_MAX || sc + best[p] > best[q]) {
                best[q] = sc + best[p];
                from[q] = p;
                id[q] = t;
            }
            single |= q - p == ml;
        }
        double c = minsc - 10.0 + best[p];
        if (!single && (from[p + ml] == SIZE_MAX || c > best[p + ml])) {
            best[p + ml] = c;
            from[p + ml] = p;
            id[p + ml] = (int32_t)tv_unigram_unk(u);
        }
        p += ml;
    }
    size_t *cut = malloc((n + 1) * sizeof *cut), nc = 0; /* path, reversed */
    assert_non_null(cut);
    for (size_t e = n; e > 0; e = from[e])
        cut[nc++] = e;
    cut[nc] = 0;
    int32_t unk = (int32_t)tv_unigram_unk(u);
    for (size_t j = nc; j > 0;) {
        size_t a = cut[j], b = cut[j - 1];
        int32_t t = id[b];
        j--;
        if (t == unk) { /* fuse the run */
            while (j > 0 && id[cut[j - 1]] == unk)
                b = cut[--j];
            t = tv_unigram_id(u, s + a, b - a);
            size_t k0 = k;
            for (size_t i = a; t < 0 && bf && i < b; i++) {
                char name[8];
                snprintf(name, sizeof name, "<0x%02X>", s[i]);
                ids[k] = tv_unigram_id(u, (unsigned char *)name, 6);
                st[k] = a;
                en[k] = b;
                if (ids[k++] < 0) { /* every byte has its piece, or unk */
                    k = k0;
                    break;
                }
            }
            if (k > k0)
                continue;
            if (t < 0)
                t = unk;
        }
        ids[k] = t;
        st[k] = a;
        en[k++] = b;
    }
    free(cut);
    free(best);
    free(from);
    free(id);
    return k;
}

/* Random texts of 5,000 to 40,000 bytes (many lattice windows) over
 * letters, two- and three-byte characters and characters no piece spells,
 * with runs of each, through random vocabularies whose scores tie often:
 * the same ids and spans as the whole lattice gives, with and without
 * byte fallback, also when the string comes in pieces of 1 to 4,096 bytes
 * (tv_unigram_stream_feed). Then a text whose best paths never meet (odd and
 * even lengths of "aa" pieces: every window stays open to the end). */
static void windows_and_pieces_give_the_ids_of_the_whole_lattice(void **s0)
{
    (void)s0;
    static const char *ch[] = {"a",
                               "b",
                               "c",
                               "\xc3\xa9",
                               "\xe6\x97\xa5",
                               "x",
                               "\xf0\x9d\x84\x9e"}; /* x, U+1D11E: no
                                                       piece */
    static const double sc[] = {-1, -2, -1.5, -3, -2.5, -1};
    uint64_t seed = 42;
#define RND()                                                       \
    (seed = seed * 6364136223846793005ull + 1442695040888963407ull, \
     (unsigned)(seed >> 33))
    size_t cap = 40000 + 64;
    unsigned char *text = malloc(cap);
    int32_t *want = malloc(cap * sizeof *want);
    size_t *ws = malloc(cap * sizeof *ws), *we = malloc(cap * sizeof *we);
    assert_true(text && want && ws && we);
    for (int round = 0; round < 12; round++) {
        char pbuf[300][32];
        const unsigned char *pp[300];
        size_t pl[300];
        double ps[300];
        size_t np = 0;
        int bf = round % 2;
        pp[np] = (const unsigned char *)"<unk>";
        pl[np] = 5;
        ps[np++] = 0;
        for (unsigned b = 0; bf && b < 256; b += 3) { /* some bytes */
            snprintf(pbuf[np], sizeof pbuf[np], "<0x%02X>", b);
            pp[np] = (const unsigned char *)pbuf[np];
            pl[np] = 6;
            ps[np++] = -7;
        }
        size_t first = np;
        while (np < first + 40) {
            size_t len = 0, m = 1 + RND() % 6;
            for (size_t j = 0; j < m; j++) {
                const char *c = ch[RND() % 5];
                memcpy(pbuf[np] + len, c, strlen(c));
                len += strlen(c);
            }
            pp[np] = (const unsigned char *)pbuf[np];
            pl[np] = len;
            ps[np++] = sc[RND() % 6];
        }
        for (size_t j = 0; j < 5; j++) { /* every letter a piece */
            pp[np] = (const unsigned char *)ch[j];
            pl[np] = strlen(ch[j]);
            ps[np++] = -4;
        }
        tv_unigram *u = NULL;
        assert_int_equal(tv_unigram_new(pp, pl, ps, np, 0, bf, &u), 0);
        size_t n = 0, target = 5000 + RND() % 35000;
        while (n < target) {
            size_t run = RND() % 8 == 0 ? 1 + RND() % 3000 : 1;
            const char *c = ch[RND() % 7];
            for (size_t j = 0; j < run && n + 4 < target; j++) {
                memcpy(text + n, c, strlen(c));
                n += strlen(c);
            }
            if (n + 4 >= target)
                break;
        }
        size_t k = whole_lattice(u, text, n, bf, want, ws, we);
        tv_uni_work *w = tv_uni_work_new();
        tv_uni_toks t = {0};
        assert_int_equal(tv_unigram_encode(u, w, text, n, 0, &t), 0);
        assert_int_equal(t.n, k);
        for (size_t i = 0; i < k; i++) {
            if (t.id[i] != want[i] || t.start[i] != ws[i] || t.end[i] != we[i])
                fprintf(stderr,
                        "round %d token %zu: %d %u-%u, want %d %zu-%zu\n",
                        round, i, t.id[i], t.start[i], t.end[i], want[i],
                        ws[i], we[i]);
            assert_int_equal(t.id[i], want[i]);
            assert_int_equal(t.start[i], ws[i]);
            assert_int_equal(t.end[i], we[i]);
        }
        /* the same string given a piece at a time */
        for (size_t max = 1; max <= 4096; max *= 8) {
            t.n = 0;
            feed_in_pieces(u, text, n, max, &seed, &t);
            assert_int_equal(t.n, k);
            for (size_t i = 0; i < k; i++) {
                assert_int_equal(t.id[i], want[i]);
                assert_int_equal(t.start[i], ws[i]);
                assert_int_equal(t.end[i], we[i]);
            }
        }
        tv_uni_toks_free(&t);
        tv_uni_work_free(w);
        tv_unigram_free(u);
    }
#undef RND
    const char *p[] = {"<unk>", "a", "aa"};
    const double s[] = {0, -10, 0};
    tv_unigram *u = make(p, s, 3, 0, 0);
    for (size_t n = 39999; n <= 40000; n++) {
        memset(text, 'a', n);
        size_t k = whole_lattice(u, text, n, 0, want, ws, we);
        tv_uni_work *w = tv_uni_work_new();
        tv_uni_toks t = {0};
        assert_int_equal(tv_unigram_encode(u, w, text, n, 0, &t), 0);
        assert_int_equal(t.n, k);
        assert_int_equal(k, (n + 1) / 2);
        assert_int_equal(t.id[0], n % 2 ? 1 : 2); /* the odd "a" first */
        for (size_t i = 0; i < k; i++) {
            assert_int_equal(t.id[i], want[i]);
            assert_int_equal(t.end[i], we[i]);
        }
        tv_uni_toks_free(&t);
        tv_uni_work_free(w);
    }
    tv_unigram_free(u);
    free(text);
    free(want);
    free(ws);
    free(we);
}

/* A SentencePiece layout (tools/spm2json.py) around a five-piece model;
 * extra: more top-level keys. */
#define SPM_JSON(norm, pre, extra)                                          \
    "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true,"  \
    "\"normalized\":false}],\"normalizer\":" norm ",\"pre_tokenizer\":" pre \
    ",\"decoder\":" SPM_PRE ",\"model\":{\"type\":"                         \
    "\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"\u2581a\",-1],"   \
    "[\"b\",-2],[\"\u2581\",-3],[\"a\",-4]]}" extra "}"
#define SPM_NORM                                                        \
    "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Strip\","      \
    "\"strip_left\":false,\"strip_right\":true},{\"type\":\"Replace\"," \
    "\"pattern\":{\"Regex\":\" {2,}\"},\"content\":\"\u2581\"}]}"
#define SPM_PRE "{\"type\":\"Metaspace\",\"replacement\":\"\u2581\"}"

/* Expected values: npm tokenizers 0.23.2 on the same file. */
static void a_sentencepiece_pipeline_gives_hfs_ids_spans_and_decode(void **s)
{
    (void)s;
    tokvec_tokenizer *t = NULL;
    char err[256] = "";
    assert_int_equal(
        tf_open_json(SPM_JSON(SPM_NORM, SPM_PRE, ""), &t, err, sizeof err), 0);
    tokvec_tok_state *st = tokvec_tok_state_new();
    tokvec_tok_ids ids = {0};
    /* "a  b " -> "a  b" -> "a\u2581b" -> "\u2581a\u2581b": the replaced
     * run's character takes its last space's span */
    static const char *const text[] = {"a  b ", "<unk>a c"};
    static const int32_t want[2][4][3] = {
        {{1, 0, 1}, {3, 2, 3}, {2, 3, 4}},
        {{0, 0, 5}, {1, 5, 6}, {3, 6, 7}, {0, 7, 8}}};
    static const size_t nwant[2] = {3, 4};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tokvec_tokenizer_encode(
                             t, st, text[k], strlen(text[k]),
                             TOKVEC_TOK_SPECIAL | TOKVEC_TOK_OFFSETS, &ids),
                         0);
        assert_int_equal(ids.n, nwant[k]);
        for (size_t j = 0; j < ids.n; j++) {
            assert_int_equal(ids.ids[j], want[k][j][0]);
            assert_int_equal(ids.offsets[j], want[k][j][1]);
            assert_int_equal(ids.stops[j], want[k][j][2]);
        }
    }
    char *out = NULL;
    size_t ol = 0;
    assert_int_equal(tokvec_tokenizer_decode_flags(t, ids.ids, ids.n, 0, &out,
                                                   &ol, NULL),
                     0);
    assert_string_equal(out, "<unk> a <unk>");
    free(out);
    tokvec_tokenizer_info info;
    tokvec_tokenizer_get_info(t, &info);
    assert_string_equal(info.model, "Unigram");
    tokvec_tok_ids_free(&ids);
    tokvec_tok_state_free(st);
    tokvec_tokenizer_close(t);
}

/* BertNormalizer and BertPreTokenizer in front of a Unigram model: every
 * stage, then Viterbi (the one-pass ASCII route of WordPiece is
 * WordPiece's alone). "AB c" -> "ab c" -> ab | c; "a,b" -> a | , | b with
 * "," unknown. */
static void bert_stages_before_unigram_run_every_stage(void **s)
{
    (void)s;
    static const char json[] =
        "{\"added_tokens\":[],\"normalizer\":{\"type\":\"BertNormalizer\","
        "\"clean_text\":true,\"handle_chinese_chars\":true,"
        "\"strip_accents\":null,\"lowercase\":true},\"pre_tokenizer\":"
        "{\"type\":\"BertPreTokenizer\"},\"model\":{\"type\":\"Unigram\","
        "\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"ab\",-1],[\"a\",-2],"
        "[\"b\",-3],[\"c\",-4]]}}";
    tokvec_tokenizer *t = NULL;
    char err[256] = "";
    assert_int_equal(tf_open_json(json, &t, err, sizeof err), 0);
    tokvec_tok_state *st = tokvec_tok_state_new();
    tokvec_tok_ids ids = {0};
    static const char *const text[] = {"AB c", "a,b"};
    static const int32_t want[2][3][3] = {{{1, 0, 2}, {4, 3, 4}},
                                          {{2, 0, 1}, {0, 1, 2}, {3, 2, 3}}};
    static const size_t nwant[2] = {2, 3};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tokvec_tokenizer_encode(t, st, text[k],
                                                 strlen(text[k]),
                                                 TOKVEC_TOK_OFFSETS, &ids),
                         0);
        assert_int_equal(ids.n, nwant[k]);
        for (size_t j = 0; j < ids.n; j++) {
            assert_int_equal(ids.ids[j], want[k][j][0]);
            assert_int_equal(ids.offsets[j], want[k][j][1]);
            assert_int_equal(ids.stops[j], want[k][j][2]);
        }
    }
    tokvec_tok_ids_free(&ids);
    tokvec_tok_state_free(st);
    tokvec_tokenizer_close(t);
}

static void expect_refused(const char *json, const char *want)
{
    tokvec_tokenizer *t = NULL;
    char err[512] = "";
    assert_int_equal(tf_open_json(json, &t, err, sizeof err),
                     TOKVEC_E_TOKENIZER);
    assert_null(t);
    if (!strstr(err, want) || !strstr(err, tu_dir))
        fail_msg("message '%s' lacks '%s' or the file", err, want);
}

static void what_tokvec_does_not_run_is_refused_by_json_path(void **s)
{
    (void)s;
    expect_refused(SPM_JSON("{\"type\":\"Replace\",\"pattern\":{\"Regex\":"
                            "\"a|b\"},\"content\":\"\"}",
                            SPM_PRE, ""),
                   "normalizer: Replace: the pattern is not");
    expect_refused(SPM_JSON("{\"type\":\"Replace\",\"pattern\":{\"Regex\":"
                            "\"a{0,}\"},\"content\":\"\"}",
                            SPM_PRE, ""),
                   "normalizer: Replace");
    expect_refused(SPM_JSON(SPM_NORM,
                            "{\"type\":\"Sequence\",\"pretokenizers\":[{"
                            "\"type\":\"Digits\"}," SPM_PRE "]}",
                            ""),
                   "pre_tokenizer.pretokenizers[1]: Metaspace is supported "
                   "only as the first");
    expect_refused("{\"model\":{\"type\":\"Unigram\",\"unk_id\":null,"
                   "\"vocab\":[[\"a\",-1]]}}",
                   "model.unk_id: null is not supported");
    expect_refused(SPM_JSON("{\"type\":\"Precompiled\","
                            "\"precompiled_charsmap\":\"AAAA\"}",
                            SPM_PRE, ""),
                   "normalizer: ");
    expect_refused("{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,"
                   "\"vocab\":[[\"a\",-1]]},\"decoder\":{\"type\":"
                   "\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":"
                   "\"x\"}}",
                   "decoder: Metaspace.prepend_scheme");
}

/* BPE without ByteLevel (spbpe.c); expected values: npm tokenizers
 * 0.23.2 on the same file, its quirk included: an unknown character waits
 * for the next known one, so it can follow byte tokens that came after it,
 * and spans are the symbols' lengths laid end to end. */
static void a_sentencepiece_bpe_falls_back_and_fuses_as_hf(void **s)
{
    (void)s;
    tokvec_tokenizer *t = NULL;
    char err[256] = "";
    assert_int_equal(
        tf_open_json("{\"model\":{\"type\":\"BPE\",\"unk_token\":"
                     "\"<unk>\",\"fuse_unk\":true,\"byte_fallback\":"
                     "true,\"vocab\":{\"<unk>\":0,\"a\":1,\"b\":2,"
                     "\"ab\":3,\"<0x63>\":4},\"merges\":[\"a b\"]}}",
                     &t, err, sizeof err),
        0);
    tokvec_tok_state *st = tokvec_tok_state_new();
    tokvec_tok_ids ids = {0};
    static const char *const text[] = {"abcd", "dab", "dcab", "ddcb"};
    static const int32_t want[4][3][3] = {{{3, 0, 2}, {4, 2, 3}, {0, 3, 4}},
                                          {{0, 0, 1}, {3, 1, 3}},
                                          {{4, 0, 1}, {0, 1, 2}, {3, 2, 4}},
                                          {{4, 0, 1}, {0, 1, 3}, {2, 3, 4}}};
    static const size_t nwant[4] = {3, 2, 3, 3};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(tokvec_tokenizer_encode(t, st, text[k],
                                                 strlen(text[k]),
                                                 TOKVEC_TOK_OFFSETS, &ids),
                         0);
        assert_int_equal(ids.n, nwant[k]);
        for (size_t j = 0; j < ids.n; j++) {
            assert_int_equal(ids.ids[j], want[k][j][0]);
            assert_int_equal(ids.offsets[j], want[k][j][1]);
            assert_int_equal(ids.stops[j], want[k][j][2]);
        }
    }
    tokvec_tokenizer_info info;
    tokvec_tokenizer_get_info(t, &info);
    assert_string_equal(info.model, "BPE");
    tokvec_tok_ids_free(&ids);
    tokvec_tok_state_free(st);
    tokvec_tokenizer_close(t);
    expect_refused("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},"
                   "\"merges\":[\"a b\"]}}",
                   "model.merges[0]: the right token is not in the "
                   "vocabulary");
    expect_refused("{\"model\":{\"type\":\"BPE\",\"unk_token\":\"?\","
                   "\"vocab\":{\"a\":0},\"merges\":[]}}",
                   "model.unk_token");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(best_path_and_fused_unknowns_as_tokenizers_doc),
        cmocka_unit_test(ties_keep_the_first_candidate),
        cmocka_unit_test(fused_unknowns_are_looked_up_whole),
        cmocka_unit_test(byte_fallback_spells_unknowns_in_bytes),
        cmocka_unit_test(missing_unk_id_fails_only_on_unknowns),
        cmocka_unit_test(model_object_rules_are_tokenizers),
        cmocka_unit_test(scores_are_read_as_serde_json_reads_them),
        cmocka_unit_test(every_piece_is_found_by_its_bytes_among_thousands),
        cmocka_unit_test(long_runs_give_the_longest_pieces_and_one_fused_unk),
        cmocka_unit_test(windows_and_pieces_give_the_ids_of_the_whole_lattice),
        cmocka_unit_test(
            a_sentencepiece_pipeline_gives_hfs_ids_spans_and_decode),
        cmocka_unit_test(what_tokvec_does_not_run_is_refused_by_json_path),
        cmocka_unit_test(a_sentencepiece_bpe_falls_back_and_fuses_as_hf),
        cmocka_unit_test(bert_stages_before_unigram_run_every_stage),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
