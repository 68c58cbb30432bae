/* request.c -- POST /embed requests (see request.h): JSON bodies parsed
 * by a strict fast path for the common shape or else by jansson, binary
 * bodies of int32 ids, query options, and the checks against a table. Messages name what is wrong (key, batch index,
 * position, id) and never echo raw client bytes. Any thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "request.h"
#include "tokvec_embed.h"

void tv_request_init(tv_request *r)
{
    memset(r, 0, sizeof *r);
    r->positions = 1;
}

void tv_request_free(tv_request *r)
{
    free(r->ids);
    r->ids = NULL;
}

tv_body_kind tv_body_kind_of(const char *ct)
{
    if (!ct || !*ct)
        return TV_BODY_JSON;
    size_t n = strcspn(ct, "; \t");
    if (n == 16 && !strncasecmp(ct, "application/json", 16))
        return TV_BODY_JSON;
    /* curl -d sends this by default; the contract's first example
     * (curl -d '{"inputs":...}') must work, so it is read as JSON. */
    if (n == 33 && !strncasecmp(ct, "application/x-www-form-urlencoded", 33))
        return TV_BODY_JSON;
    if (n == 24 && !strncasecmp(ct, "application/octet-stream", 24))
        return TV_BODY_BINARY;
    return TV_BODY_UNSUPPORTED;
}

/* B and B*S against the limits, before anything is allocated. */
static int check_shape(int64_t B, int64_t S, const tv_limits *lim,
                       tv_error *err)
{
    int64_t n;
    if (B > lim->max_batch)
        return tv_error_set(err, 413, "payload_too_large",
                            "batch of %" PRId64 " sequences is over "
                            "max_batch %" PRId64, B, lim->max_batch);
    if (__builtin_mul_overflow(B, S, &n) || n > lim->max_tokens)
        return tv_error_set(err, 413, "payload_too_large",
                            "%" PRId64 " x %" PRId64 " tokens is over "
                            "max_tokens %" PRId64, B, S, lim->max_tokens);
    return 0;
}

static int id_of(json_t *v, int64_t b, int64_t s, int64_t *out,
                 tv_error *err)
{
    if (!json_is_integer(v))
        return tv_error_set(err, 400, "invalid_request",
                            "token id at batch index %" PRId64
                            ", position %" PRId64 " is not an integer",
                            b, s);
    *out = json_integer_value(v);
    return 0;
}

/* jansson on a body larger than this is followed by malloc_trim(0). */
#define TRIM_AFTER_BYTES ((size_t)1 << 20)

int tv_request_parse_json_slow(const char *body, size_t len,
                               const tv_limits *lim, tv_request *out,
                               tv_error *err)
{
    json_error_t jerr;
    json_t *root = NULL;
    int rc = -1;
    int64_t pad = 0;
    int has_pad = 0;

    tv_request_init(out);
    if (len > lim->max_body_bytes)
        return tv_error_set(err, 413, "payload_too_large",
                            "body of %zu bytes is over max_body_bytes %zu",
                            len, lim->max_body_bytes);
    /* jansson 2.14 skips a NUL byte after a number ("[1\0]" loads as
     * [1]); a NUL is never valid JSON text outside a string either. */
    const char *nul = len ? memchr(body, '\0', len) : NULL;
    if (nul)
        return tv_error_set(err, 400, "invalid_json",
                            "body is not valid JSON: NUL byte at offset %zu",
                            (size_t)(nul - body));
    root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        tv_error_set(err, 400, "invalid_json",
                     "body is not valid JSON: %s (line %d, column %d)",
                     jerr.text, jerr.line, jerr.column);
        goto out;
    }
    if (!json_is_object(root)) {
        tv_error_set(err, 400, "invalid_request",
                     "body must be a JSON object with \"inputs\"");
        goto out;
    }
    const char *key;
    json_t *v, *inputs = NULL;
    json_object_foreach(root, key, v)
    {
        if (!strcmp(key, "inputs")) {
            inputs = v;
        } else if (!strcmp(key, "start_position")) {
            if (!json_is_integer(v) || json_integer_value(v) < 0) {
                tv_error_set(err, 400, "invalid_request",
                             "\"start_position\" must be a non-negative "
                             "integer");
                goto out;
            }
            out->start_position = json_integer_value(v);
        } else if (!strcmp(key, "positions")) {
            if (!json_is_boolean(v)) {
                tv_error_set(err, 400, "invalid_request",
                             "\"positions\" must be true or false");
                goto out;
            }
            out->positions = json_is_true(v);
        } else if (!strcmp(key, "pad_id")) {
            if (json_is_null(v))
                continue;
            if (!json_is_integer(v)) {
                tv_error_set(err, 400, "invalid_request",
                             "\"pad_id\" must be an integer or null");
                goto out;
            }
            pad = json_integer_value(v);
            has_pad = 1;
        } else if (!strcmp(key, "encoding_format")) {
            const char *f = json_string_value(v);
            if (f && !strcmp(f, "float")) {
                out->base64 = 0;
            } else if (f && !strcmp(f, "base64")) {
                out->base64 = 1;
            } else {
                tv_error_set(err, 400, "invalid_request",
                             "\"encoding_format\" must be \"float\" or "
                             "\"base64\"");
                goto out;
            }
        } else {
            char shown[64];
            size_t n = strlen(key);
            /* Name the key, shortened, ASCII only. */
            for (size_t i = 0; i < sizeof shown - 1; i++)
                shown[i] = i < n && key[i] >= 0x20 && key[i] < 0x7f
                               ? key[i] : (i < n ? '?' : '\0');
            shown[sizeof shown - 1] = '\0';
            tv_error_set(err, 400, "invalid_request",
                         "unknown key \"%s\" (known: inputs, start_position,"
                         " positions, pad_id, encoding_format)", shown);
            goto out;
        }
    }
    if (!inputs) {
        tv_error_set(err, 400, "invalid_request", "missing \"inputs\"");
        goto out;
    }
    if (!json_is_array(inputs) || json_array_size(inputs) == 0) {
        tv_error_set(err, 400, "invalid_request",
                     "\"inputs\" must be a non-empty list of token ids or "
                     "of sequences");
        goto out;
    }
    int64_t B, S = 0;
    json_t *first = json_array_get(inputs, 0);
    if (!json_is_array(first)) { /* one sequence */
        out->single = 1;
        B = 1;
        S = (int64_t)json_array_size(inputs);
        if (check_shape(B, S, lim, err))
            goto out;
        out->ids = malloc((size_t)S * sizeof *out->ids);
        if (!out->ids) {
            tv_error_set(err, 500, "internal", "out of memory");
            goto out;
        }
        for (int64_t s = 0; s < S; s++)
            if (id_of(json_array_get(inputs, (size_t)s), 0, s,
                      &out->ids[s], err))
                goto out;
    } else {
        B = (int64_t)json_array_size(inputs);
        int ragged = 0;
        for (int64_t b = 0; b < B; b++) {
            json_t *row = json_array_get(inputs, (size_t)b);
            if (!json_is_array(row)) {
                tv_error_set(err, 400, "invalid_request",
                             "\"inputs\" mixes sequences and ids: batch "
                             "index %" PRId64 " is not a list", b);
                goto out;
            }
            int64_t n = (int64_t)json_array_size(row);
            if (n == 0) {
                tv_error_set(err, 400, "invalid_request",
                             "sequence at batch index %" PRId64 " is empty",
                             b);
                goto out;
            }
            if (b && n != S)
                ragged = 1;
            if (n > S)
                S = n;
        }
        if (ragged && !has_pad) {
            tv_error_set(err, 422, "ragged_batch",
                         "sequences have different lengths; set \"pad_id\" "
                         "to right-pad them");
            goto out;
        }
        if (check_shape(B, S, lim, err))
            goto out;
        out->ids = malloc((size_t)(B * S) * sizeof *out->ids);
        if (!out->ids) {
            tv_error_set(err, 500, "internal", "out of memory");
            goto out;
        }
        for (int64_t b = 0; b < B; b++) {
            json_t *row = json_array_get(inputs, (size_t)b);
            int64_t n = (int64_t)json_array_size(row);
            for (int64_t s = 0; s < S; s++) {
                if (s >= n)
                    out->ids[b * S + s] = pad;
                else if (id_of(json_array_get(row, (size_t)s), b, s,
                               &out->ids[b * S + s], err))
                    goto out;
            }
        }
    }
    out->batch = B;
    out->seq = S;
    rc = 0;
out:
    json_decref(root);
    if (rc)
        tv_request_free(out);
#ifdef __GLIBC__
    /* The tree is freed, but glibc keeps freed pages in the arena of the
     * thread that parsed (an HTTP thread) for its next allocations: a
     * large parse would leave its peak resident. Give them back. In the
     * server jansson only sees bodies the fast path declined and the
     * pre-scan bounded, so this is rare, and cheap next to a 1 MiB parse
     * (over twice a max_tokens body of GPT-2 ids, ~7 bytes each). */
    if (len > TRIM_AFTER_BYTES)
        malloc_trim(0);
#endif
    return rc;
}

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
        while ((d = (unsigned)*p - '0') < 10) {
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
    int64_t *ids = realloc(f->ids, cap * sizeof *ids);
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
        size_t *rows = realloc(f->rows, cap * sizeof *rows);
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
};

/* The key at p (just past its opening quote) and its closing quote, if it
 * is one of the five, unescaped; 0 otherwise. room: bytes before the final
 * '}'. */
static unsigned fast_key(const unsigned char **pp, size_t room)
{
    static const struct {
        const char *text; /* with the closing quote */
        size_t len;
        unsigned key;
    } keys[] = {
        {"inputs\"", 7, K_INPUTS},
        {"start_position\"", 15, K_START},
        {"positions\"", 10, K_POSITIONS},
        {"pad_id\"", 7, K_PAD},
        {"encoding_format\"", 16, K_FORMAT},
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
    f.max_rows = (uint64_t)lim->max_batch < f.max_ids
                     ? (size_t)lim->max_batch : f.max_ids;
    f.cap = len / 6 + 16 < f.max_ids ? len / 6 + 16 : f.max_ids;
    f.ids = malloc(f.cap * sizeof *f.ids);
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
            if (fast_lit(&p, room, "\"float\""))
                out->base64 = 0;
            else if (fast_lit(&p, room, "\"base64\""))
                out->base64 = 1;
            else
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
        int64_t *ids = realloc(f.ids, (size_t)n * sizeof *ids);
        if (!ids)
            goto fallback;
        f.ids = ids;
        size_t off = f.n;
        for (size_t b = B; b-- > 0;) {
            size_t m = f.rows[b];
            off -= m;
            memmove(ids + b * S, ids + off, m * sizeof *ids);
            for (size_t s = m; s < S; s++)
                ids[b * S + s] = pad;
        }
    } else if (f.cap > f.n) {
        int64_t *ids = realloc(f.ids, f.n * sizeof *ids);
        if (ids)
            f.ids = ids;
    }
    free(f.rows);
    out->ids = f.ids;
    out->batch = (int64_t)B;
    out->seq = (int64_t)S;
    return 0;
fallback:
    free(f.ids);
    free(f.rows);
    tv_request_init(out);
    return TV_FAST_FALLBACK;
}

/* --- the pre-scan (issue 15, finding 2) ---------------------------------
 *
 * jansson builds a json_t for every value before the request's limits can
 * be checked: a 16 MiB body of 2,000-deep nested lists was 8.4 million
 * lists, 1.07 GB and seconds of one HTTP thread, to answer 413. The
 * pre-scan reads the body once, allocating nothing, with the grammar of
 * jansson's parser: a stack of at most PRESCAN_DEPTH open lists and
 * objects, the state (what may come next) and a count of values.
 *
 * Precedence (request.h): it stops without refusing at the first thing it
 * sees is not JSON, so jansson reports that syntax error exactly as before
 * -- jansson stops there too or earlier, having built no more than the
 * shallow, bounded prefix the pre-scan accepted. It refuses at the first
 * list or object at level PRESCAN_DEPTH + 1 (400) or the first value past
 * the bound (413), whichever comes first in the text. What it does not
 * check (it is not needed for the structure): inside a string only the
 * escapes and control characters (not UTF-8, surrogates, \u0000), numbers
 * not for range, keys not for duplicates. The fuzz target
 * (tests/fuzz/fuzz_ids.c) checks that jansson, given the body up to the
 * refused offset, finds nothing wrong but the end or one of those.
 *
 * Depth: a valid request nests 3 (the object, "inputs", the rows); one
 * level more is still left to jansson, whose message names the key or the
 * batch index and position ("token id at batch index 0, position 1 is not
 * an integer", "\"positions\" must be true or false"); a fifth level is no
 * mistake a client makes by accident, and is refused at once.
 */

#define PRESCAN_DEPTH 4

enum { P_ROOT, P_VALUE, P_VALUE_OR_END, P_KEY, P_KEY_OR_END, P_COLON,
       P_NEXT };

#define P_WS(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')
#define P_DIGIT(c) ((unsigned)(c) - '0' < 10)
#define P_ALPHA(c) ((unsigned)(((c) | 0x20) - 'a') < 26)

/* A string at p (its opening quote); past its closing quote, or NULL where
 * jansson's lexer errs (a control character, a bad escape, the end). */
static const unsigned char *prescan_string(const unsigned char *p,
                                           const unsigned char *end)
{
    for (p++; p < end; p++) {
        unsigned c = *p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return NULL;
        if (c != '\\')
            continue;
        if (++p == end)
            return NULL;
        c = *p;
        if (c == 'u') {
            for (int i = 0; i < 4; i++)
                if (++p == end || !((unsigned)(*p - '0') < 10 ||
                                    (unsigned)((*p | 0x20) - 'a') < 6))
                    return NULL;
        } else if (!c || !strchr("\"\\/bfnrt", (int)c)) {
            return NULL;
        }
    }
    return NULL;
}

/* A number at p as jansson's lexer reads it, -?(0|[1-9][0-9]*)(\.[0-9]+)?
 * ([eE][+-]?[0-9]+)?; past it, or NULL. Its range is not checked. */
static const unsigned char *prescan_number(const unsigned char *p,
                                           const unsigned char *end)
{
    if (*p == '-' && ++p == end)
        return NULL;
    if (*p == '0') {
        if (++p < end && P_DIGIT(*p))
            return NULL;
    } else if (P_DIGIT(*p)) {
        while (++p < end && P_DIGIT(*p))
            ;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        if (++p == end || !P_DIGIT(*p))
            return NULL;
        while (++p < end && P_DIGIT(*p))
            ;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !P_DIGIT(*p))
            return NULL;
        while (++p < end && P_DIGIT(*p))
            ;
    }
    return p;
}

int tv_request_prescan_json(const char *body, size_t len,
                            const tv_limits *lim, tv_error *err, size_t *at)
{
    if (len > lim->max_body_bytes || (len && memchr(body, '\0', len)))
        return 0; /* jansson's parser answers these before parsing */
    /* The most values a valid request holds: ids, rows, "inputs", the
     * object and the four options (keys are not values). */
    uint64_t tokens = lim->max_tokens > 0 ? (uint64_t)lim->max_tokens : 0;
    uint64_t rows = lim->max_batch > 0 ? (uint64_t)lim->max_batch : 0;
    if (rows > tokens)
        rows = tokens;
    uint64_t max_values = tokens + rows + 6;
    if (max_values < tokens) /* wrapped: no bound */
        max_values = UINT64_MAX;

    const unsigned char *p = (const unsigned char *)body, *end = p + len;
    const unsigned char *tok;
    unsigned char open[PRESCAN_DEPTH]; /* '[' or '{' */
    unsigned depth = 0, state = P_ROOT;
    int inputs = 0; /* in the root object, the key read last is "inputs" */
    uint64_t values = 0;

    for (;;) {
        while (p < end && P_WS(*p))
            p++;
        if (p == end)
            return 0;
        tok = p;
        unsigned c = *p;
        switch (state) {
        case P_KEY_OR_END:
        case P_KEY:
            if (c == '}' && state == P_KEY_OR_END)
                goto close;
            if (c != '"' || !(p = prescan_string(p, end)))
                return 0;
            if (depth == 1)
                inputs = p - tok == 8 && !memcmp(tok + 1, "inputs", 6);
            state = P_COLON;
            continue;
        case P_COLON:
            if (c != ':')
                return 0;
            p++;
            state = P_VALUE;
            continue;
        case P_NEXT:
            if (depth == 0) /* text after the body's one value */
                return 0;
            if (c == ',') {
                p++;
                state = open[depth - 1] == '[' ? P_VALUE : P_KEY;
                continue;
            }
            if (c == (open[depth - 1] == '[' ? ']' : '}'))
                goto close;
            return 0;
        case P_VALUE_OR_END:
            if (c == ']')
                goto close;
            break;
        case P_ROOT:
            if (c != '[' && c != '{') /* jansson: "'[' or '{' expected" */
                return 0;
            break;
        }
        /* a value */
        if (c == '[' || c == '{') {
            if (depth == PRESCAN_DEPTH) {
                if (at)
                    *at = (size_t)(tok - (const unsigned char *)body);
                if (open[0] == '{' && inputs)
                    return tv_error_set(err, 400, "invalid_request",
                                        "\"inputs\" nests deeper than a "
                                        "list of lists of ids");
                return tv_error_set(err, 400, "invalid_request",
                                    "body nests lists or objects deeper "
                                    "than a request can (an object with "
                                    "\"inputs\", a list of lists of ids)");
            }
        } else if (c == '"') {
            p = prescan_string(p, end);
        } else if (c == '-' || P_DIGIT(c)) {
            p = prescan_number(p, end);
        } else if (P_ALPHA(c)) {
            while (++p < end && P_ALPHA(*p))
                ;
            size_t n = (size_t)(p - tok);
            if (!((n == 4 && (!memcmp(tok, "true", 4) ||
                              !memcmp(tok, "null", 4))) ||
                  (n == 5 && !memcmp(tok, "false", 5))))
                return 0;
        } else {
            return 0;
        }
        if (!p)
            return 0;
        if (++values > max_values) {
            if (at)
                *at = (size_t)(tok - (const unsigned char *)body);
            return tv_error_set(err, 413, "payload_too_large",
                                "body holds more than %" PRIu64 " JSON "
                                "values, more than any request within "
                                "max_tokens %" PRId64 " and max_batch %"
                                PRId64 " can hold", max_values,
                                lim->max_tokens, lim->max_batch);
        }
        if (c == '[' || c == '{') {
            open[depth++] = (unsigned char)c;
            p++;
            state = c == '[' ? P_VALUE_OR_END : P_KEY_OR_END;
        } else {
            state = P_NEXT;
        }
        continue;
    close:
        depth--;
        p++;
        state = P_NEXT;
    }
}

int tv_request_parse_json(const char *body, size_t len, const tv_limits *lim,
                          tv_request *out, tv_error *err)
{
    if (tv_request_parse_json_fast(body, len, lim, out) == 0)
        return 0;
    if (tv_request_prescan_json(body, len, lim, err, NULL)) {
        tv_request_init(out);
        return -1;
    }
    return tv_request_parse_json_slow(body, len, lim, out, err);
}

/* Strict non-negative decimal, no sign, no spaces; -1 on anything else. */
static int64_t decimal(const char *s, size_t n)
{
    int64_t v = 0;
    if (n == 0 || n > 18)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int tv_request_parse_binary(const void *body, size_t len, const char *shape,
                            const tv_limits *lim, tv_request *out,
                            tv_error *err)
{
    tv_request_init(out);
    if (len > lim->max_body_bytes)
        return tv_error_set(err, 413, "payload_too_large",
                            "body of %zu bytes is over max_body_bytes %zu",
                            len, lim->max_body_bytes);
    const char *comma = shape ? strchr(shape, ',') : NULL;
    int64_t B = comma ? decimal(shape, (size_t)(comma - shape)) : -1;
    int64_t S = comma ? decimal(comma + 1, strlen(comma + 1)) : -1;
    if (B < 1 || S < 1)
        return tv_error_set(err, 400, "invalid_request",
                            "binary requests need X-Tokvec-Shape: B,S with "
                            "positive integers");
    if (check_shape(B, S, lim, err))
        return -1;
    if ((uint64_t)len != (uint64_t)(B * S) * 4)
        return tv_error_set(err, 400, "invalid_request",
                            "body is %zu bytes; shape %" PRId64 ",%" PRId64
                            " needs %" PRId64 " int32 ids (%" PRId64
                            " bytes)", len, B, S, B * S, B * S * 4);
    out->ids = malloc((size_t)(B * S) * sizeof *out->ids);
    if (!out->ids)
        return tv_error_set(err, 500, "internal", "out of memory");
    const unsigned char *p = body;
    for (int64_t i = 0; i < B * S; i++, p += 4)
        out->ids[i] = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                                (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    out->batch = B;
    out->seq = S;
    return 0;
}

int tv_request_set_option(tv_request *r, const char *key, const char *value,
                          tv_error *err)
{
    if (!value)
        value = "";
    if (!strcmp(key, "start_position")) {
        int64_t v = decimal(value, strlen(value));
        if (v < 0)
            return tv_error_set(err, 400, "invalid_request",
                                "start_position must be a non-negative "
                                "integer");
        r->start_position = v;
    } else if (!strcmp(key, "positions")) {
        if (!strcmp(value, "true") || !strcmp(value, "1"))
            r->positions = 1;
        else if (!strcmp(value, "false") || !strcmp(value, "0"))
            r->positions = 0;
        else
            return tv_error_set(err, 400, "invalid_request",
                                "positions must be true or false");
    } else if (!strcmp(key, "dtype")) {
        /* a response option: see tv_negotiate */
    } else {
        return tv_error_set(err, 400, "invalid_request",
                            "unknown query option (known: start_position, "
                            "positions, dtype)");
    }
    return 0;
}

int tv_request_check(const tv_request *r, const tokvec_table *t,
                     tv_error *err)
{
    tokvec_embed_fault f;
    unsigned flags = r->positions ? 0 : TOKVEC_EMBED_NO_POSITIONS;
    const tokvec_table_info *in = tokvec_table_get_info(t);
    int rc = tokvec_embed_check(t, r->ids, r->batch, r->seq,
                                r->start_position, flags, &f);
    switch (rc) {
    case 0:
        return 0;
    case TOKVEC_E_TOKEN_RANGE:
        return tv_error_set(err, 422, "token_out_of_range",
                            "token id %" PRId64 " at batch index %" PRId64
                            ", position %" PRId64 " is out of range for "
                            "vocab_size %" PRId64, f.id, f.batch, f.position,
                            in->vocab_size);
    case TOKVEC_E_POSITION_RANGE:
        return tv_error_set(err, 422, "sequence_too_long",
                            "start_position %" PRId64 " + sequence length %"
                            PRId64 " exceeds context_length %" PRId64,
                            r->start_position, r->seq, in->context_length);
    case TOKVEC_E_TOO_LARGE:
        return tv_error_set(err, 413, "payload_too_large",
                            "response would be too large");
    default:
        return tv_error_set(err, 400, "invalid_request", "%s",
                            tokvec_strerror(rc));
    }
}
