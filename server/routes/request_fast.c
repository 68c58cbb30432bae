/* request_fast.c -- the fast path of tv_request_parse_json (request.h):
 * the common /embed JSON shape read directly, without jansson; anything
 * else falls back to the jansson parser in request.c.
 *
 * Pure function of its arguments; any thread.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "request_fast.h"

/* --- the fast path (issue 14) -------------------------------------------
 *
 * jansson allocates a json_t per number; for 4,096 ids that was ~29% of the
 * 32x128 raw profile. This path reads the common shape directly and only
 * ever succeeds: anything it does not take (an error, a limit, a real
 * number, an escape, a duplicate key, an unknown key) returns
 * TV_FAST_FALLBACK and the jansson parser answers, so every error and
 * message is the slow parser's by construction.
 *
 * It takes exactly a subset of what tv_request_parse_json_slow accepts,
 * and gives the same tv_request for it (tests/fuzz/fuzz_ids.c checks
 * both). The points where jansson is easy to differ from:
 *  - integers are json_int_t (long long, strtoll): out of range is an
 *    error there, so 20+ digits and 19 digits past INT64 fall back;
 *    "-0" is the integer 0;
 *  - "01", "1.0", "1e2", "+1", "-" are errors or reals there: the grammar
 *    below only lets a number end at whitespace, ',' or ']'/'}';
 *  - JSON_REJECT_DUPLICATES: a key seen twice falls back;
 *  - keys are compared as raw bytes, so an escaped ("\u0069nputs") or
 *    unknown key falls back; no byte outside printable ASCII and the four
 *    whitespace bytes is ever accepted (so no NUL, no UTF-8);
 *  - only whitespace may follow the object.
 *
 * Bounds: the body is scanned between its first byte and its last
 * non-whitespace byte, which must be the closing '}'. Every loop stops at a
 * byte class that '}' is not in (digits, whitespace), so the digit and
 * whitespace loops need no length check; fixed strings check the room
 * left first.
 */

#define FAST_WS(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')

static inline const unsigned char *fast_ws(const unsigned char *p)
{
    while (FAST_WS(*p))
        p++;
    return p;
}

/* One integer as jansson reads it: -?(0|[1-9][0-9]*) in long long range.
 * 0 with *pp past it, or 1 (not an integer this path takes). What follows
 * it is the caller's to check: '.', 'e', 'E' or a digit after "0" are not
 * a separator, so a real or a leading zero falls back there. */
static inline int fast_int(const unsigned char **pp, int64_t *out)
{
    const unsigned char *p = *pp;
    int neg = *p == '-';
    p += neg;
    const unsigned char *d0 = p;
    uint64_t v = (unsigned)*p - '0';
    unsigned d;
    if (v > 9)
        return 1;
    p++;
    if (v) /* a leading "0" is the whole number */
        for (d = (unsigned)*p - '0'; d < 10; d = (unsigned)*p - '0') {
            v = v * 10 + d; /* wraps past 20 digits: those fall back */
            p++;
        }
    if (p - d0 > 18) { /* 10^18 > v: only 19 digits can be out of range */
        if (p - d0 > 19 || v > (uint64_t)INT64_MAX + (uint64_t)neg)
            return 1;
        *out = neg ? (int64_t)(0 - v) : (int64_t)v; /* INT64_MIN included */
    } else {
        *out = neg ? -(int64_t)v : (int64_t)v;
    }
    *pp = p;
    return 0;
}

/* The ids read so far, row after row, and each row's length. ids grows by
 * doubling up to max_ids (max_tokens: more ids than that can only be a 413
 * or an error); rows up to max_rows (max_batch). */
typedef struct {
    int64_t *ids;
    size_t n, cap, max_ids;
    size_t *rows;
    size_t nrows, rcap, max_rows;
} fast_buf;

static int fast_grow_ids(fast_buf *f)
{
    if (f->cap >= f->max_ids)
        return 1;
    size_t cap = f->cap > f->max_ids / 2 ? f->max_ids : f->cap * 2;
    int64_t *ids = tv_realloc(f->ids, cap * sizeof *ids);
    if (!ids)
        return 1;
    f->ids = ids;
    f->cap = cap;
    return 0;
}

static int fast_push_row(fast_buf *f, size_t n)
{
    if (f->nrows == f->rcap) {
        if (f->rcap >= f->max_rows)
            return 1;
        size_t cap = f->rcap * 2 + 16;
        if (cap > f->max_rows)
            cap = f->max_rows;
        size_t *rows = tv_realloc(f->rows, cap * sizeof *rows);
        if (!rows)
            return 1;
        f->rows = rows;
        f->rcap = cap;
    }
    f->rows[f->nrows++] = n;
    return 0;
}

/* A non-empty list of integers, *pp at its first value (past '[' and
 * whitespace); on 0, *pp is past its ']'. The hot loop of the path. */
static int fast_seq(const unsigned char **pp, fast_buf *f)
{
    const unsigned char *p = *pp;
    int64_t *ids = f->ids;
    size_t n = f->n, cap = f->cap;
    int rc = 1;
    for (;;) {
        if (n == cap) {
            f->n = n;
            if (fast_grow_ids(f))
                goto out;
            ids = f->ids;
            cap = f->cap;
        }
        if (fast_int(&p, &ids[n]))
            goto out;
        n++;
        unsigned c = *p;
        if (c == ',') {
            p = fast_ws(p + 1);
            continue;
        }
        if (FAST_WS(c)) {
            p = fast_ws(p + 1);
            c = *p;
            if (c == ',') {
                p = fast_ws(p + 1);
                continue;
            }
        }
        if (c != ']')
            goto out;
        p++;
        rc = 0;
        break;
    }
out:
    f->n = n;
    *pp = p;
    return rc;
}

/* The value of "inputs": [[ids], ...] or [ids]. */
static int fast_inputs(const unsigned char **pp, fast_buf *f, int *single)
{
    const unsigned char *p = *pp;
    if (*p != '[')
        return 1;
    p = fast_ws(p + 1);
    if (*p != '[') { /* one sequence */
        *single = 1;
        if (fast_seq(&p, f) || fast_push_row(f, f->n))
            return 1;
        *pp = p;
        return 0;
    }
    for (;;) {
        if (*p != '[')
            return 1;
        size_t n0 = f->n;
        p = fast_ws(p + 1);
        if (fast_seq(&p, f) || fast_push_row(f, f->n - n0))
            return 1;
        p = fast_ws(p);
        if (*p == ',') {
            p = fast_ws(p + 1);
            continue;
        }
        if (*p != ']')
            return 1;
        *pp = p + 1;
        return 0;
    }
}

enum {
    K_INPUTS = 1,
    K_START = 2,
    K_POSITIONS = 4,
    K_PAD = 8,
    K_FORMAT = 16,
    K_DTYPE = 32,
};

/* The key at p (just past its opening quote) and its closing quote, if it
 * is one of the six, unescaped; 0 otherwise. room: bytes before the final
 * '}'. */
static unsigned fast_key(const unsigned char **pp, size_t room)
{
    static const struct {
        const char *text; /* with the closing quote */
        size_t len;
        unsigned key;
    } keys[] = {
        {"inputs\"", 7, K_INPUTS},           {"start_position\"", 15, K_START},
        {"positions\"", 10, K_POSITIONS},    {"pad_id\"", 7, K_PAD},
        {"encoding_format\"", 16, K_FORMAT}, {"dtype\"", 6, K_DTYPE},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (room >= keys[i].len && !memcmp(*pp, keys[i].text, keys[i].len)) {
            *pp += keys[i].len;
            return keys[i].key;
        }
    return 0;
}

/* Literal s (no '}' in it) at *pp, with room bytes before the final '}'. */
static int fast_lit(const unsigned char **pp, size_t room, const char *s)
{
    size_t n = strlen(s);
    if (room < n || memcmp(*pp, s, n))
        return 0;
    *pp += n;
    return 1;
}

/* The value of "encoding_format" (dtype 0) or "dtype" (1) at *pp, as
 * the slow parser reads it; 1 for anything else. */
static int fast_answer_option(const unsigned char **pp, size_t room, int dtype,
                              tv_request *out)
{
    static const char *const dtypes[] = {"float32", "float16", "bfloat16"};
    static const char *const quoted[] = {"\"float32\"", "\"float16\"",
                                         "\"bfloat16\""};
    if (dtype) {
        for (size_t i = 0; i < 3; i++)
            if (fast_lit(pp, room, quoted[i])) {
                out->body_dtype = dtypes[i];
                return 0;
            }
        return 1;
    }
    out->base64 = out->torch = out->npz = 0;
    if (fast_lit(pp, room, "\"base64\""))
        out->base64 = 1;
    else if (fast_lit(pp, room, "\"torch\""))
        out->torch = 1;
    else if (fast_lit(pp, room, "\"npz\""))
        out->npz = 1;
    else if (!fast_lit(pp, room, "\"float\""))
        return 1;
    return 0;
}

int tv_request_parse_json_fast(const char *body, size_t len,
                               const tv_limits *lim, tv_request *out)
{
    tv_request_init(out);
    if (!len || len > lim->max_body_bytes || lim->max_tokens < 1 ||
        lim->max_batch < 1)
        return TV_FAST_FALLBACK;
    const unsigned char *p = (const unsigned char *)body;
    const unsigned char *end = p + len;
    while (end > p && FAST_WS(end[-1]))
        end--;
    if (end == p || end[-1] != '}')
        return TV_FAST_FALLBACK;
    const unsigned char *last = end - 1; /* the object's closing '}' */

    /* Ids: typical GPT-2 ids take ~6.8 bytes with ", " (1-5 digits); the
     * buffer starts at one per 6 bytes and doubles, never past max_tokens
     * (the body's own bound, one per 2 bytes, is 3x too many). */
    fast_buf f = {0};
    f.max_ids = (uint64_t)lim->max_tokens < SIZE_MAX / sizeof(int64_t)
                    ? (size_t)lim->max_tokens
                    : SIZE_MAX / sizeof(int64_t);
    f.max_rows = (uint64_t)lim->max_batch < f.max_ids ? (size_t)lim->max_batch
                                                      : f.max_ids;
    f.cap = len / 6 + 16 < f.max_ids ? len / 6 + 16 : f.max_ids;
    f.ids = tv_malloc(f.cap * sizeof *f.ids);
    if (!f.ids)
        return TV_FAST_FALLBACK;

    unsigned seen = 0;
    int has_pad = 0;
    int64_t pad = 0, v;
    p = fast_ws(p);
    if (*p != '{')
        goto fallback;
    p = fast_ws(p + 1);
    for (;;) {
        if (*p != '"')
            goto fallback;
        p++;
        unsigned key = fast_key(&p, (size_t)(last - p));
        if (!key || (seen & key))
            goto fallback;
        seen |= key;
        p = fast_ws(p);
        if (*p != ':')
            goto fallback;
        p = fast_ws(p + 1);
        size_t room = (size_t)(last - p);
        switch (key) {
        case K_INPUTS:
            if (fast_inputs(&p, &f, &out->single))
                goto fallback;
            break;
        case K_START:
            if (fast_int(&p, &v) || v < 0)
                goto fallback;
            out->start_position = v;
            break;
        case K_POSITIONS:
            if (fast_lit(&p, room, "true"))
                out->positions = 1;
            else if (fast_lit(&p, room, "false"))
                out->positions = 0;
            else
                goto fallback;
            break;
        case K_PAD:
            if (fast_lit(&p, room, "null"))
                break;
            if (fast_int(&p, &pad))
                goto fallback;
            has_pad = 1;
            break;
        case K_FORMAT:
        case K_DTYPE:
            if (fast_answer_option(&p, room, key == K_DTYPE, out))
                goto fallback;
            break;
        }
        p = fast_ws(p);
        if (*p == ',') {
            p = fast_ws(p + 1);
            continue;
        }
        if (*p == '}' && p == last)
            break;
        goto fallback;
    }
    if (!(seen & K_INPUTS))
        goto fallback;

    /* The slow parser's shape rules: S is the longest row, a ragged batch
     * needs pad_id, then check_shape's limits. */
    size_t B = f.nrows, S = 0;
    int ragged = 0;
    for (size_t b = 0; b < B; b++) {
        if (f.rows[b] != f.rows[0])
            ragged = 1;
        if (f.rows[b] > S)
            S = f.rows[b];
    }
    int64_t n;
    if (ragged && !has_pad)
        goto fallback;
    if ((int64_t)B > lim->max_batch || /* held while reading, too */
        __builtin_mul_overflow((int64_t)B, (int64_t)S, &n) ||
        n > lim->max_tokens)
        goto fallback;
    if (ragged) { /* right-pad in place, last row first */
        int64_t *ids = tv_realloc(f.ids, (size_t)n * sizeof *ids);
        if (!ids)
            goto fallback;
        f.ids = ids;
        /* each row's length: the answer's attention_mask */
        out->lens = tv_malloc(B * sizeof *out->lens);
        if (!out->lens)
            goto fallback;
        for (size_t b = 0; b < B; b++)
            out->lens[b] = (int64_t)f.rows[b];
        size_t off = f.n;
        for (size_t b = B; b-- > 0;) {
            size_t m = f.rows[b];
            off -= m;
            memmove(ids + b * S, ids + off, m * sizeof *ids);
            for (size_t s = m; s < S; s++)
                ids[b * S + s] = pad;
        }
    } else if (f.cap > f.n) {
        int64_t *ids = tv_realloc(f.ids, f.n * sizeof *ids);
        if (ids)
            f.ids = ids;
    }
    free(f.rows);
    out->ids = f.ids;
    out->batch = (int64_t)B;
    out->seq = (int64_t)S;
    out->pad_id = pad; /* checked like any id (tv_request_check) */
    out->has_pad = has_pad;
    return 0;
fallback:
    free(f.ids);
    free(f.rows);
    free(out->lens);
    tv_request_init(out);
    return TV_FAST_FALLBACK;
}
