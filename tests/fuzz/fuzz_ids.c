/* fuzz_ids.c -- differential libFuzzer target for the JSON id parsers
 * (issue 14) and the pre-scan before jansson (issue 15, finding 2): every
 * input is a JSON body, parsed by jansson (tv_request_parse_json_slow), by
 * the strict fast path (tv_request_parse_json_fast), scanned by
 * tv_request_prescan_json and parsed by the public tv_request_parse_json,
 * under three sets of limits (small ones where 413 boundaries are easy to
 * reach, either way round, and the server's defaults).
 *
 * Invariants (abort() -> libFuzzer reports a crash):
 *  - the fast path returns 0 or TV_FAST_FALLBACK; on fallback *out is an
 *    init'ed request (no ids);
 *  - when the fast path returns 0, jansson returns 0 too with the same
 *    batch, seq, start_position, positions, base64, torch, body_dtype,
 *    single and ids;
 *  - the pre-scan returns 0 or -1; it never refuses a body jansson turns
 *    into a request, nor one over max_body_bytes or with a NUL byte (those
 *    come first); it refuses only with 400 invalid_request or 413
 *    payload_too_large, at an offset inside the body;
 *  - precedence: jansson given the body up to the refused offset finds
 *    nothing wrong but its premature end, or one of the errors inside a
 *    token the pre-scan does not look for (number range, UTF-8, a lone
 *    surrogate or \u0000 in a string, a duplicate key) -- so a syntax error
 *    before that point is still jansson's to report;
 *  - on a body jansson loads, the pre-scan refuses exactly when the tree
 *    nests lists and objects more than 4 deep (400) or holds more values
 *    than max_tokens + min(max_batch, max_tokens) + 12 (413: ids, rows,
 *    "inputs", the object and the ten options, as request_prescan.c);
 *  - tv_request_parse_json gives the pre-scan's error when it refused,
 *    else what jansson gives: the same request on success (with text
 *    inputs: the same rows, pad_id and text options), the same
 *    status, type and message on error.
 * The fast path may fall back on anything jansson accepts; that is never a
 * failure. Leaks are caught by ASan's leak check at exit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "request.h"

static void fail(const char *what, const uint8_t *data, size_t size,
                 const tv_limits *lim)
{
    fprintf(stderr,
            "fuzz_ids: %s (limits: body %zu, tokens %lld, batch %lld; "
            "%zu-byte body: %.*s)\n",
            what, lim->max_body_bytes, (long long)lim->max_tokens,
            (long long)lim->max_batch, size, size > 300 ? 300 : (int)size,
            (const char *)data);
    abort();
}

/* Text requests (contract section 7): the rows as given and the text
 * options; ids/batch/seq are not made until a tokenizer resolves them. */
static int same_text(const tv_request *a, const tv_request *b)
{
    const tv_text_opts *x = &a->text, *y = &b->text;
    if (a->nrows != b->nrows || a->nrows < 1 || !a->rows || !b->rows ||
        a->has_pad != b->has_pad || (a->has_pad && a->pad_id != b->pad_id) ||
        x->special != y->special || x->truncate != y->truncate ||
        x->left != y->left || x->max_length != y->max_length ||
        x->stride != y->stride)
        return 0;
    for (int64_t i = 0; i < a->nrows; i++) {
        const tv_text_row *r = &a->rows[i], *q = &b->rows[i];
        if (!r->text != !q->text || r->len != q->len || r->n != q->n ||
            !r->ids != !q->ids ||
            (r->text && memcmp(r->text, q->text, r->len)) ||
            (r->ids && memcmp(r->ids, q->ids, (size_t)r->n * sizeof *r->ids)))
            return 0;
    }
    return 1;
}

static int same(const tv_request *a, const tv_request *b)
{
    if (a->has_text != b->has_text || a->start_position != b->start_position ||
        a->positions != b->positions || a->base64 != b->base64 ||
        a->torch != b->torch || a->npz != b->npz ||
        !a->body_dtype != !b->body_dtype ||
        (a->body_dtype && strcmp(a->body_dtype, b->body_dtype)) ||
        a->single != b->single)
        return 0;
    if (a->has_text)
        return same_text(a, b);
    if (a->batch != b->batch || a->seq != b->seq)
        return 0;
    if (a->batch < 1 || a->seq < 1 || !a->ids || !b->ids)
        return 0;
    if (!a->lens != !b->lens ||
        (a->lens &&
         memcmp(a->lens, b->lens, (size_t)a->batch * sizeof *a->lens)))
        return 0;
    return !memcmp(a->ids, b->ids,
                   (size_t)(a->batch * a->seq) * sizeof *a->ids);
}

/* Lists and objects nested in v (v itself counts if it is one), and its
 * values (v and all inside it; keys are not values). */
static void tree_stats(json_t *v, unsigned level, unsigned *depth,
                       uint64_t *values)
{
    ++*values;
    if (!json_is_array(v) && !json_is_object(v))
        return;
    if (level + 1 > *depth)
        *depth = level + 1;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            tree_stats(json_array_get(v, i), level + 1, depth, values);
    } else {
        const char *k;
        json_t *m;
        json_object_foreach(v, k, m)
            tree_stats(m, level + 1, depth, values);
    }
}

/* The pre-scan's invariants; rpre/epre/at are its answer. */
static void check_prescan(const uint8_t *data, size_t size,
                          const tv_limits *lim, int rs, int rpre,
                          const tv_error *epre, size_t at)
{
    const char *body = (const char *)data;
    int nul = size && memchr(data, 0, size);
    uint64_t tokens = lim->max_tokens > 0 ? (uint64_t)lim->max_tokens : 0;
    uint64_t rows = lim->max_batch > 0 ? (uint64_t)lim->max_batch : 0;
    uint64_t bound = tokens + (rows < tokens ? rows : tokens) + 12;
    json_error_t jerr;

    if (rpre != 0 && rpre != -1)
        fail("pre-scan returned neither 0 nor -1", data, size, lim);
    if (rpre) {
        if (rs == 0)
            fail("pre-scan refused a request jansson takes", data, size, lim);
        if (size > lim->max_body_bytes || nul)
            fail("pre-scan refused a body over max_body_bytes or with a "
                 "NUL byte",
                 data, size, lim);
        if (!((epre->status == 400 &&
               !strcmp(epre->type, "invalid_request")) ||
              (epre->status == 413 &&
               !strcmp(epre->type, "payload_too_large"))))
            fail("pre-scan refused with another error", data, size, lim);
        if (at >= size)
            fail("pre-scan refused at no offset in the body", data, size, lim);
        /* nothing jansson reports before the refused offset */
        json_t *pre = json_loadb(body, at, JSON_REJECT_DUPLICATES, &jerr);
        if (pre)
            fail("jansson loads the body up to the refused offset", data, size,
                 lim);
        switch (json_error_code(&jerr)) {
        case json_error_premature_end_of_input:
        case json_error_numeric_overflow:
        case json_error_invalid_utf8:
        case json_error_duplicate_key:
        case json_error_null_character:
        case json_error_null_byte_in_key:
            break;
        case json_error_invalid_syntax:
            if (!strncmp(jerr.text, "invalid Unicode", 15))
                break;
            /* fall through */
        default:
            fprintf(stderr,
                    "fuzz_ids: jansson on the first %zu bytes: %s "
                    "(pre-scan: %s)\n",
                    at, jerr.text, epre->message);
            fail("pre-scan refused past a syntax error", data, size, lim);
        }
    }
    /* On a body jansson loads, exactly the depth and the count. */
    if (size > lim->max_body_bytes || nul)
        return;
    json_t *root = json_loadb(body, size,
                              JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root)
        return;
    unsigned depth = 0;
    uint64_t values = 0;
    tree_stats(root, 0, &depth, &values);
    json_decref(root);
    int deep = depth > 4, many = values > bound;
    if (!rpre && (deep || many))
        fail("pre-scan let through a body too deep or too large", data, size,
             lim);
    if (rpre && !(epre->status == 400 ? deep : many))
        fail("pre-scan refused a body within its bounds", data, size, lim);
}

static void one(const uint8_t *data, size_t size, const tv_limits *lim)
{
    const char *body = (const char *)data;
    tv_request slow, fast, pub;
    tv_error es, ep, epre;
    memset(&es, 0, sizeof es);
    memset(&ep, 0, sizeof ep);
    memset(&epre, 0, sizeof epre);
    size_t at = (size_t)-1;

    int rs = tv_request_parse_json_slow(body, size, lim, &slow, &es);
    int rf = tv_request_parse_json_fast(body, size, lim, &fast);
    int rpre = tv_request_prescan_json(body, size, lim, &epre, &at);
    int rp = tv_request_parse_json(body, size, lim, &pub, &ep);

    if (rf != 0 && rf != TV_FAST_FALLBACK)
        fail("fast path returned neither 0 nor TV_FAST_FALLBACK", data, size,
             lim);
    if (rf == TV_FAST_FALLBACK) {
        tv_request init;
        tv_request_init(&init);
        if (memcmp(&fast, &init, sizeof fast))
            fail("fast path fell back but left *out changed", data, size, lim);
    } else {
        if (rs != 0)
            fail("fast path parsed a body jansson rejects", data, size, lim);
        if (!same(&fast, &slow))
            fail("fast path and jansson differ", data, size, lim);
        if (fast.batch > lim->max_batch ||
            fast.batch * fast.seq > lim->max_tokens)
            fail("fast path passed a request over the limits", data, size,
                 lim);
    }
    check_prescan(data, size, lim, rs, rpre, &epre, at);

    /* the public function: the fast path, else the pre-scan, else jansson
     * (the fast path only takes what jansson takes, which the pre-scan
     * never refuses) */
    const tv_error *want = rpre ? &epre : &es;
    int rwant = rpre ? -1 : rs;
    if (rp != rwant)
        fail("tv_request_parse_json is not the pre-scan, then jansson, in "
             "outcome",
             data, size, lim);
    if (rp == 0 && !same(&pub, &slow))
        fail("tv_request_parse_json and jansson differ in the request", data,
             size, lim);
    if (rp != 0 && (ep.status != want->status || strcmp(ep.type, want->type) ||
                    strcmp(ep.message, want->message)))
        fail("tv_request_parse_json is not the pre-scan, then jansson, in "
             "the error",
             data, size, lim);
    if (rpre) { /* slow may leave options set on error; this may not */
        tv_request init;
        tv_request_init(&init);
        if (memcmp(&pub, &init, sizeof pub))
            fail("tv_request_parse_json failed but left *out changed", data,
                 size, lim);
    }

    if (rs == 0)
        tv_request_free(&slow);
    if (rf == 0)
        tv_request_free(&fast);
    if (rp == 0)
        tv_request_free(&pub);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const tv_limits small = {.max_body_bytes = 4096,
                                    .max_tokens = 12,
                                    .max_batch = 3};
    static const tv_limits dflt = {.max_body_bytes = 16u << 20,
                                   .max_tokens = 65536,
                                   .max_batch = 4096};
    /* max_batch over max_tokens: rows are bounded by max_tokens */
    static const tv_limits wide = {.max_body_bytes = 4096,
                                   .max_tokens = 2,
                                   .max_batch = 64};
    one(data, size, &small);
    one(data, size, &wide);
    one(data, size, &dflt);
    return 0;
}
