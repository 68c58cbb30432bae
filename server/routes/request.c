/* request.c -- POST /embed requests (see request.h): JSON bodies parsed
 * by a strict fast path for the common shape (request_fast.c) or else,
 * after the pre-scan (request_prescan.c), by jansson (here); binary bodies
 * of int32 ids, query options, the checks against a table, and tv_error.
 * Messages name what is wrong (key, batch index, position, id) and never
 * echo raw client bytes. Any thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "request.h"
#include "tokvec_embed.h"

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
    /* fetch() and browsers send a string body as text/plain;charset=UTF-8 */
    if (n == 10 && !strncasecmp(ct, "text/plain", 10))
        return TV_BODY_JSON;
    if (n == 24 && !strncasecmp(ct, "application/octet-stream", 24))
        return TV_BODY_BINARY;
    return TV_BODY_UNSUPPORTED;
}

int tv_body_kind_error(const char *ct, int binary_ok, tv_error *err)
{
    size_t n = strcspn(ct ? ct : "", "; \t");
    return tv_error_set(err, 415, "unsupported_media_type",
                        "Content-Type '%.*s%s' is not accepted; send "
                        "application/json (text/plain and "
                        "application/x-www-form-urlencoded are read as "
                        "JSON too)%s",
                        (int)(n > 64 ? 64 : n), ct ? ct : "",
                        n > 64 ? "..." : "",
                        binary_ok ? " or application/octet-stream (int32 "
                                    "ids, X-Tokvec-Shape)"
                                  : "");
}

/* B and B*S against the limits, before anything is allocated. */
static int check_shape(int64_t B, int64_t S, const tv_limits *lim,
                       tv_error *err)
{
    int64_t n;
    if (B > lim->max_batch)
        return tv_error_set(err, 413, "payload_too_large",
                            "batch of %" PRId64 " sequences is over "
                            "max_batch %" PRId64,
                            B, lim->max_batch);
    if (__builtin_mul_overflow(B, S, &n) || n > lim->max_tokens)
        return tv_error_set(err, 413, "payload_too_large",
                            "%" PRId64 " x %" PRId64 " tokens is over "
                            "max_tokens %" PRId64,
                            B, S, lim->max_tokens);
    return 0;
}

/* How many bytes of a client's value an error message echoes; ECHO(s):
 * the arguments of "%.*s%s" that echo s, cut there with "...". */
#define ECHO_MAX 40
#define ECHO(s) ECHO_MAX, (s), strlen(s) > ECHO_MAX ? "..." : ""

static int id_of(json_t *v, int64_t b, int64_t s, int64_t *out, tv_error *err)
{
    if (!json_is_integer(v)) {
        /* The value as JSON (ASCII, so any cut is clean), cut at
         * ECHO_MAX bytes. */
        char *j = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT |
                                    JSON_ENSURE_ASCII);
        tv_error_set(err, 400, "invalid_request",
                     "token id at batch index %" PRId64 ", position %" PRId64
                     " is not an integer: %.*s%s",
                     b, s, ECHO(j ? j : ""));
        free(j);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static int positive(const struct json_t *v, const char *key, int64_t *out,
                    tv_error *e)
{
    if (!json_is_integer(v) || json_integer_value(v) < 1)
        return tv_error_set(e, 400, "invalid_request",
                            "\"%s\" must be an integer >= 1", key);
    *out = json_integer_value(v);
    return 0;
}

int tv_text_option(tv_text_opts *o, const char *key, const struct json_t *v,
                   tv_error *e)
{
    if (!strcmp(key, "special_tokens") || !strcmp(key, "truncate") ||
        !strcmp(key, "add_special_tokens")) {
        if (!json_is_boolean(v))
            return tv_error_set(e, 400, "invalid_request",
                                "\"%s\" must be true or false", key);
        *(key[0] == 's'   ? &o->special
          : key[0] == 't' ? &o->truncate
                          : &o->add_special) = json_is_true(v);
        return 1;
    }
    if (!strcmp(key, "truncation_direction")) {
        const char *d = json_string_value(v);
        if (!d || (strcmp(d, "right") && strcmp(d, "left")))
            return tv_error_set(e, 400, "invalid_request",
                                "\"truncation_direction\" must be \"right\" "
                                "or \"left\"");
        o->left = !strcmp(d, "left");
        return 1;
    }
    if (!strcmp(key, "max_length"))
        return positive(v, key, &o->max_length, e) < 0 ? -1 : 1;
    if (!strcmp(key, "stride"))
        return positive(v, key, &o->stride, e) < 0 ? -1 : 1;
    return 0;
}

int tv_text_opts_check(tv_text_opts *o, int64_t max_tokens, tv_error *e)
{
    if (o->stride && !o->max_length)
        return tv_error_set(e, 400, "invalid_request",
                            "\"stride\" needs \"max_length\"");
    /* A window is max_length tokens of one answer: past max_tokens none
     * can be answered (and 2^63 - 1 would overflow what is computed of
     * it), so it is refused before the text is tokenized. */
    if (o->max_length > max_tokens)
        return tv_error_set(e, 413, "payload_too_large",
                            "\"max_length\" %" PRId64
                            " is over max_tokens %" PRId64
                            ": no window of it fits in an answer",
                            o->max_length, max_tokens);
    if (o->max_length && o->add_special)
        return tv_error_set(e, 400, "invalid_request",
                            "\"add_special_tokens\" does not go with "
                            "\"max_length\" windows");
    if (o->max_length && !o->stride)
        o->stride = o->max_length;
    return 0;
}

int64_t tv_text_windows(int64_t n, int64_t max_length, int64_t stride)
{
    if (max_length < 1 || stride < 1 || n <= max_length)
        return 0;
    return (n - max_length - 1) / stride + 1;
}

/* jansson on a body larger than this is followed by malloc_trim(0). */
#define TRIM_AFTER_BYTES ((size_t)1 << 20)

/* "encoding_format" f (NULL: not a string) into r. 0, or -1 when f is
 * none of float, base64, torch, npz. */
static int set_encoding(tv_request *r, const char *f)
{
    r->base64 = f && !strcmp(f, "base64");
    r->torch = f && !strcmp(f, "torch");
    r->npz = f && !strcmp(f, "npz");
    return r->base64 || r->torch || r->npz || (f && !strcmp(f, "float")) ? 0
                                                                         : -1;
}

/* The answer's options: "encoding_format" (float, base64, torch, npz) and
 * "dtype" (float32, float16, bfloat16; checked against the answer's
 * format by tv_negotiate_embed). 0 or -1. */
static int slow_answer_option(const char *key, json_t *v, tv_request *out,
                              tv_error *err)
{
    static const char *const dtypes[] = {"float32", "float16", "bfloat16"};
    const char *f = json_string_value(v);
    if (!strcmp(key, "dtype")) {
        for (size_t i = 0; f && i < sizeof dtypes / sizeof dtypes[0]; i++)
            if (!strcmp(f, dtypes[i])) {
                out->body_dtype = dtypes[i];
                return 0;
            }
        return tv_error_set(err, 400, "invalid_request",
                            "\"dtype\" must be \"float32\", \"float16\" "
                            "or \"bfloat16\"");
    }
    if (set_encoding(out, f) == 0)
        return 0;
    return tv_error_set(err, 400, "invalid_request",
                        "\"encoding_format\" must be \"float\", "
                        "\"base64\", \"torch\" or \"npz\"");
}

/* The keys of the request object: the options into out, "inputs" (not
 * read yet) into *inputs, pad_id into *pad and *has_pad. 0 or -1. */
static int slow_keys(json_t *root, const tv_limits *lim, tv_request *out,
                     json_t **inputs, int64_t *pad, int *has_pad,
                     tv_error *err)
{
    const char *key;
    json_t *v;
    *inputs = NULL;
    json_object_foreach(root, key, v) {
        int text = tv_text_option(&out->text, key, v, err);
        if (text < 0)
            return -1;
        if (text > 0)
            continue;
        if (!strcmp(key, "inputs")) {
            *inputs = v;
        } else if (!strcmp(key, "start_position")) {
            if (!json_is_integer(v) || json_integer_value(v) < 0) {
                tv_error_set(err, 400, "invalid_request",
                             "\"start_position\" must be a non-negative "
                             "integer");
                return -1;
            }
            out->start_position = json_integer_value(v);
        } else if (!strcmp(key, "positions")) {
            if (!json_is_boolean(v)) {
                tv_error_set(err, 400, "invalid_request",
                             "\"positions\" must be true or false");
                return -1;
            }
            out->positions = json_is_true(v);
        } else if (!strcmp(key, "pad_id")) {
            if (json_is_null(v))
                continue;
            if (!json_is_integer(v)) {
                tv_error_set(err, 400, "invalid_request",
                             "\"pad_id\" must be an integer or null");
                return -1;
            }
            *pad = json_integer_value(v);
            *has_pad = 1;
        } else if (!strcmp(key, "encoding_format") || !strcmp(key, "dtype")) {
            if (slow_answer_option(key, v, out, err) < 0)
                return -1;
        } else if (!strcmp(key, "pooling")) {
            const char *p = json_string_value(v);
            if (!p || (strcmp(p, "none") && strcmp(p, "mean")))
                return tv_error_set(err, 400, "invalid_request",
                                    "\"pooling\" must be \"none\" or "
                                    "\"mean\"");
            out->pool = !strcmp(p, "mean");
        } else if (!strcmp(key, "normalize")) {
            if (!json_is_boolean(v) && !json_is_null(v))
                return tv_error_set(err, 400, "invalid_request",
                                    "\"normalize\" must be true, false or "
                                    "null");
            out->normalize = json_is_null(v) ? -1 : json_is_true(v);
        } else if (!strcmp(key, "dimensions")) {
            if (json_is_null(v))
                continue;
            if (!json_is_integer(v) || json_integer_value(v) < 1)
                return tv_error_set(err, 400, "invalid_request",
                                    "\"dimensions\" must be a positive "
                                    "integer");
            out->dims = json_integer_value(v);
        } else {
            char shown[64];
            size_t n = strlen(key);
            /* Name the key, shortened, ASCII only. */
            for (size_t i = 0; i < sizeof shown - 1; i++)
                shown[i] = i < n && key[i] >= 0x20 && key[i] < 0x7f
                               ? key[i]
                               : (i < n ? '?' : '\0');
            shown[sizeof shown - 1] = '\0';
            tv_error_set(err, 400, "invalid_request",
                         "unknown key \"%s\" (known: inputs, start_position,"
                         " positions, pad_id, encoding_format, dtype, "
                         "special_tokens, add_special_tokens, truncate, "
                         "truncation_direction, max_length, stride, "
                         "pooling, normalize, dimensions)",
                         shown);
            return -1;
        }
    }
    if (!out->pool && (out->normalize >= 0 || out->dims))
        return tv_error_set(err, 400, "invalid_request",
                            "\"%s\" needs \"pooling\": \"mean\"",
                            out->dims ? "dimensions" : "normalize");
    if (out->pool && out->text.max_length)
        return tv_error_set(err, 400, "invalid_request",
                            "\"max_length\" windows and \"pooling\": "
                            "\"mean\" exclude each other");
    return tv_text_opts_check(&out->text, lim->max_tokens, err);
}

static int has_texts(json_t *inputs);

/* "inputs" holding texts: a string, or a list whose elements are strings
 * or lists of ids. Kept as rows for tv_embed_text_resolve. 0 or -1. */
static int slow_text_rows(json_t *inputs, const tv_limits *lim,
                          tv_request *out, tv_error *err)
{
    /* A pooled request keeps id lists as rows too (each its own mean). */
    int flat = json_is_array(inputs) && json_array_size(inputs) &&
               json_is_integer(json_array_get(inputs, 0));
    int64_t B = json_is_string(inputs) || flat
                    ? 1
                    : (int64_t)json_array_size(inputs);
    if (B > lim->max_batch)
        return tv_error_set(err, 413, "payload_too_large",
                            "batch of %" PRId64
                            " inputs is over max_batch %" PRId64,
                            B, lim->max_batch);
    out->has_text = !out->pool || has_texts(inputs);
    out->single = json_is_string(inputs) || flat;
    out->rows = tv_calloc((size_t)B, sizeof *out->rows);
    if (!out->rows)
        return tv_error_set(err, 500, "internal", "out of memory");
    out->nrows = B;
    int64_t total = 0;
    for (int64_t b = 0; b < B; b++) {
        json_t *v = out->single ? inputs : json_array_get(inputs, (size_t)b);
        tv_text_row *r = &out->rows[b];
        if (out->pool && !json_is_string(v) && !json_is_array(v))
            return tv_error_set(err, 400, "invalid_request",
                                "inputs[%" PRId64 "] is neither a text nor "
                                "a list of token ids",
                                b);
        if (json_is_string(v)) {
            r->len = json_string_length(v);
            r->text = tv_malloc(r->len + 1);
            if (!r->text)
                return tv_error_set(err, 500, "internal", "out of memory");
            memcpy(r->text, json_string_value(v), r->len + 1);
            continue;
        }
        if (!json_is_array(v))
            return tv_error_set(err, 400, "invalid_request",
                                "inputs[%" PRId64 "] is neither a text nor "
                                "a list of token ids",
                                b);
        r->n = (int64_t)json_array_size(v);
        if (r->n == 0)
            return tv_error_set(err, 400, "invalid_request",
                                "sequence at batch index %" PRId64 " is empty",
                                b);
        total += r->n;
        if (total > lim->max_tokens)
            return tv_error_set(
                err, 413, "payload_too_large",
                "the id lists hold more than max_tokens %" PRId64 " ids",
                lim->max_tokens);
        r->ids = tv_malloc((size_t)r->n * sizeof *r->ids);
        if (!r->ids)
            return tv_error_set(err, 500, "internal", "out of memory");
        for (int64_t s = 0; s < r->n; s++)
            if (id_of(json_array_get(v, (size_t)s), b, s, &r->ids[s], err))
                return -1;
    }
    return 0;
}

/* 1 when "inputs" holds a text: a string, or a list with one. */
static int has_texts(json_t *inputs)
{
    if (json_is_string(inputs))
        return 1;
    for (size_t i = 0; i < json_array_size(inputs); i++)
        if (json_is_string(json_array_get(inputs, i)))
            return 1;
    return 0;
}

/* "inputs" (NULL: missing) into out->ids, batch and seq: one sequence
 * or a batch of them, right-padded with pad when has_pad. 0 or -1. */
static int slow_inputs(json_t *inputs, const tv_limits *lim, int64_t pad,
                       int has_pad, tv_request *out, tv_error *err)
{
    if (!inputs) {
        tv_error_set(err, 400, "invalid_request", "missing \"inputs\"");
        return -1;
    }
    if (out->pool) { /* every input its own row, its own mean */
        if (!json_is_string(inputs) &&
            (!json_is_array(inputs) || json_array_size(inputs) == 0))
            return tv_error_set(err, 400, "invalid_request",
                                "\"inputs\" must be a text, a list of "
                                "token ids, or a non-empty list of them");
        return slow_text_rows(inputs, lim, out, err);
    }
    if (json_array_size(inputs) && json_is_array(json_array_get(inputs, 0))
            ? has_texts(inputs)
            : json_is_string(inputs) ||
                  (json_is_array(inputs) &&
                   json_is_string(json_array_get(inputs, 0))))
        return slow_text_rows(inputs, lim, out, err);
    if (out->text.max_length) {
        tv_error_set(err, 400, "invalid_request",
                     "\"max_length\" windows need a text in \"inputs\"");
        return -1;
    }
    if (!json_is_array(inputs) || json_array_size(inputs) == 0) {
        tv_error_set(err, 400, "invalid_request",
                     "\"inputs\" must be a non-empty list of token ids or "
                     "of sequences");
        return -1;
    }
    int64_t B, S = 0;
    json_t *first = json_array_get(inputs, 0);
    if (!json_is_array(first)) { /* one sequence */
        out->single = 1;
        B = 1;
        S = (int64_t)json_array_size(inputs);
        if (check_shape(B, S, lim, err))
            return -1;
        out->ids = tv_malloc((size_t)S * sizeof *out->ids);
        if (!out->ids) {
            tv_error_set(err, 500, "internal", "out of memory");
            return -1;
        }
        for (int64_t s = 0; s < S; s++)
            if (id_of(json_array_get(inputs, (size_t)s), 0, s, &out->ids[s],
                      err))
                return -1;
    } else {
        B = (int64_t)json_array_size(inputs);
        int ragged = 0;
        for (int64_t b = 0; b < B; b++) {
            json_t *row = json_array_get(inputs, (size_t)b);
            if (!json_is_array(row)) {
                tv_error_set(err, 400, "invalid_request",
                             "\"inputs\" mixes sequences and ids: batch "
                             "index %" PRId64 " is not a list",
                             b);
                return -1;
            }
            int64_t n = (int64_t)json_array_size(row);
            if (n == 0) {
                tv_error_set(err, 400, "invalid_request",
                             "sequence at batch index %" PRId64 " is empty",
                             b);
                return -1;
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
            return -1;
        }
        if (check_shape(B, S, lim, err))
            return -1;
        out->ids = tv_malloc((size_t)(B * S) * sizeof *out->ids);
        if (!out->ids) {
            tv_error_set(err, 500, "internal", "out of memory");
            return -1;
        }
        /* A padded batch: each row's length, for its attention_mask. */
        out->lens = ragged ? tv_malloc((size_t)B * sizeof *out->lens) : NULL;
        if (ragged && !out->lens)
            return tv_error_set(err, 500, "internal", "out of memory");
        for (int64_t b = 0; b < B; b++) {
            json_t *row = json_array_get(inputs, (size_t)b);
            int64_t n = (int64_t)json_array_size(row);
            if (out->lens)
                out->lens[b] = n;
            for (int64_t s = 0; s < S; s++) {
                if (s >= n)
                    out->ids[b * S + s] = pad;
                else if (id_of(json_array_get(row, (size_t)s), b, s,
                               &out->ids[b * S + s], err))
                    return -1;
            }
        }
    }
    out->batch = B;
    out->seq = S;
    return 0;
}
/* The body as a JSON object: jansson's tree (the caller's to decref), or
 * NULL with *err: 400 invalid_json for a NUL byte (jansson 2.14 skips one
 * after a number, "[1\0]" loads as [1]; a NUL is never valid JSON text
 * outside a string) or text that does not parse, 400 invalid_request for
 * anything but an object ("with \"key\""). A \u0000 in a string is
 * text like any other (contract section 7). */
static json_t *load_object(const char *body, size_t len, const char *key,
                           tv_error *err)
{
    json_error_t jerr;
    const char *nul = len ? memchr(body, '\0', len) : NULL;
    if (nul) {
        tv_error_set(err, 400, "invalid_json",
                     "body is not valid JSON: NUL byte at offset %zu",
                     (size_t)(nul - body));
        return NULL;
    }
    json_t *root = json_loadb(body, len,
                              JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        tv_error_set(err, 400, "invalid_json",
                     "body is not valid JSON: %s (line %d, column %d)",
                     jerr.text, jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        tv_error_set(err, 400, "invalid_request",
                     "body must be a JSON object with \"%s\"", key);
        return NULL;
    }
    return root;
}

int tv_request_parse_json_slow(const char *body, size_t len,
                               const tv_limits *lim, tv_request *out,
                               tv_error *err)
{
    json_t *root = NULL;
    int rc = -1;
    int64_t pad = 0;
    int has_pad = 0;

    tv_request_init(out);
    if (len > lim->max_body_bytes)
        return tv_error_set(err, 413, "payload_too_large",
                            "body of %zu bytes is over max_body_bytes %zu",
                            len, lim->max_body_bytes);
    root = load_object(body, len, "inputs", err);
    if (!root)
        goto out;
    json_t *inputs;
    if (slow_keys(root, lim, out, &inputs, &pad, &has_pad, err) < 0)
        goto out;
    out->pad_id = pad;
    out->has_pad = has_pad;
    if (slow_inputs(inputs, lim, pad, has_pad, out, err) < 0)
        goto out;
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

/* One key of an OpenAI body (v not null). 0, or -1 with *err. */
static int openai_key(const char *key, json_t *v, const tv_limits *lim,
                      tv_request *out, json_t **input, tv_error *err)
{
    if (!strcmp(key, "input")) {
        *input = v;
        return 0;
    }
    if (!strcmp(key, "model") || !strcmp(key, "user")) {
        if (json_is_string(v))
            return 0; /* one model is served; user is ignored */
        tv_error_set(err, 400, "invalid_request", "\"%s\" must be a string",
                     key);
    } else if (!strcmp(key, "encoding_format")) {
        const char *f = json_string_value(v);
        out->base64 = f && !strcmp(f, "base64");
        if (f && (out->base64 || !strcmp(f, "float")))
            return 0;
        tv_error_set(err, 400, "invalid_request",
                     "\"encoding_format\" must be \"float\" or \"base64\"");
    } else if (!strcmp(key, "dimensions")) {
        if (json_is_integer(v) && json_integer_value(v) >= 1) {
            out->dims = json_integer_value(v);
            return 0;
        }
        tv_error_set(err, 400, "invalid_request",
                     "\"dimensions\" must be a positive integer");
    } else {
        (void)lim;
        tv_error_set(err, 400, "invalid_request",
                     "unknown key \"%.48s\" (known: input, model, "
                     "encoding_format, dimensions, user)",
                     key);
        err->param = NULL;
        return -1;
    }
    /* the field at fault, as a static string */
    err->param = !strcmp(key, "model")             ? "model"
                 : !strcmp(key, "user")            ? "user"
                 : !strcmp(key, "encoding_format") ? "encoding_format"
                                                   : "dimensions";
    return -1;
}

int tv_request_parse_openai(const char *body, size_t len, const tv_limits *lim,
                            tv_request *out, tv_error *err)
{
    json_t *root = NULL, *input = NULL;
    const char *key;
    json_t *v;
    int rc = -1;

    tv_request_init(out);
    out->pool = 1;
    out->openai = 1;
    if (len > lim->max_body_bytes)
        return tv_error_set(err, 413, "payload_too_large",
                            "body of %zu bytes is over max_body_bytes %zu",
                            len, lim->max_body_bytes);
    /* The pre-scan bounds what jansson builds (nesting, value count). */
    if (tv_request_prescan_json(body, len, lim, err, NULL) < 0)
        return -1;
    root = load_object(body, len, "input", err);
    if (!root)
        goto out;
    json_object_foreach(root, key, v) {
        if (!json_is_null(v) && openai_key(key, v, lim, out, &input, err) < 0)
            goto out;
    }
    if (!input || (!json_is_string(input) && !json_is_array(input)) ||
        (json_is_array(input) && json_array_size(input) == 0)) {
        tv_error_set(err, 400, "invalid_request",
                     "\"input\" must be a string, a list of strings, a "
                     "list of token ids or a list of lists of them");
        err->param = "input";
        goto out;
    }
    if (json_is_string(input) && json_string_length(input) == 0) {
        tv_error_set(err, 400, "invalid_request",
                     "\"input\" is an empty string");
        err->param = "input";
        goto out;
    }
    if (slow_text_rows(input, lim, out, err) < 0) {
        err->param = "input";
        goto out;
    }
    rc = 0;
out:
    json_decref(root);
    if (rc)
        tv_request_free(out);
    return rc;
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
                            " needs %" PRId64 " int32 ids (%" PRId64 " bytes)",
                            len, B, S, B * S, B * S * 4);
    out->ids = tv_malloc((size_t)(B * S) * sizeof *out->ids);
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
        r->dtype = value; /* a response option: see tv_negotiate */
    } else if (!strcmp(key, "encoding_format")) {
        if (set_encoding(r, value) < 0)
            return tv_error_set(err, 400, "invalid_request",
                                "encoding_format must be float, base64, "
                                "torch or npz");
    } else {
        return tv_error_set(err, 400, "invalid_request",
                            "unknown query option '%.*s%s' (known: "
                            "start_position, positions, dtype, "
                            "encoding_format)",
                            ECHO(key));
    }
    return 0;
}

int tv_request_query(tv_request *r, tv_body_kind body, const char *key,
                     const char *value, tv_error *err)
{
    if (body == TV_BODY_JSON && strcmp(key, "dtype"))
        return tv_error_set(err, 400, "invalid_request",
                            "query option '%.*s%s': JSON requests take "
                            "options in the body; only ?dtype= goes in the "
                            "query",
                            ECHO(key));
    return tv_request_set_option(r, key, value, err);
}

int tv_request_token_id(const char *text, int64_t *id, tv_error *err)
{
    int neg = text[0] == '-';
    const char *d = text + neg;
    size_t n = strlen(d);
    if (n == 0 || n > 18)
        return tv_error_set(err, 400, "invalid_request",
                            "token id must be a decimal integer of at most "
                            "18 digits, not '%.*s%s'",
                            ECHO(text));
    int64_t v = decimal(d, n);
    if (v < 0)
        return tv_error_set(err, 400, "invalid_request",
                            "token id must be a decimal integer, not '%.*s%s'",
                            ECHO(text));
    *id = neg ? -v : v;
    return 0;
}

/* A pooled request: dimensions within dim, every id a row, every row
 * within the positions (when used). */
static int check_pooled(const tv_request *r, const tokvec_table *t,
                        tv_error *err)
{
    const tokvec_table_info *in = tokvec_table_get_info(t);
    if (r->dims > in->dim) {
        tv_error_set(err, 400, "invalid_request",
                     "\"dimensions\" %" PRId64 " is over the model's %" PRId64,
                     r->dims, in->dim);
        err->param = "dimensions";
        return -1;
    }
    for (int64_t b = 0; b < r->batch; b++) {
        int64_t n = r->offs[b + 1] - r->offs[b];
        for (int64_t i = 0; i < n; i++) {
            int64_t id = r->ids[r->offs[b] + i];
            if (id < 0 || id >= in->vocab_size) {
                tv_error_set(err, 422, "token_out_of_range",
                             "token id %" PRId64 " at batch index %" PRId64
                             ", position %" PRId64 " is out of range for "
                             "vocab_size %" PRId64,
                             id, b, i, in->vocab_size);
                err->param = r->openai ? "input" : "inputs";
                return -1;
            }
        }
        if (r->positions && in->positional != TOKVEC_POS_NONE &&
            n > in->context_length - r->start_position)
            return tv_error_set(err, 422, "sequence_too_long",
                                "start_position %" PRId64
                                " + sequence length %" PRId64
                                " exceeds context_length %" PRId64,
                                r->start_position, n, in->context_length);
    }
    return 0;
}

/* What fixes a sequence_too_long of a text input: its options (none for
 * ids: the client chose them). */
static const char *text_hint(const tv_request *r)
{
    if (!r->has_text || r->text.truncate)
        return ""; /* truncated: start_position alone is past the end */
    if (r->text.max_length)
        return "; give a \"max_length\" of at most context_length - "
               "start_position";
    return "; for a longer text send \"truncate\": true (keeps its first "
           "tokens that fit) or \"max_length\": L with \"stride\": T "
           "(windows of L tokens)";
}

int tv_request_check(const tv_request *r, const tokvec_table *t, tv_error *err)
{
    if (r->pool)
        return check_pooled(r, t, err);
    tokvec_embed_fault f;
    unsigned flags = r->positions ? 0 : TOKVEC_EMBED_NO_POSITIONS;
    const tokvec_table_info *in = tokvec_table_get_info(t);
    /* pad_id is an id like any other, checked whether it pads or not. */
    if (r->has_pad && (r->pad_id < 0 || r->pad_id >= in->vocab_size))
        return tv_error_set(err, 422, "token_out_of_range",
                            "pad_id %" PRId64 " is out of range for "
                            "vocab_size %" PRId64,
                            r->pad_id, in->vocab_size);
    int rc = tokvec_embed_check(t, r->ids, r->batch, r->seq, r->start_position,
                                flags, &f);
    switch (rc) {
    case 0:
        return 0;
    case TOKVEC_E_TOKEN_RANGE:
        return tv_error_set(err, 422, "token_out_of_range",
                            "token id %" PRId64 " at batch index %" PRId64
                            ", position %" PRId64 " is out of range for "
                            "vocab_size %" PRId64,
                            f.id, f.batch, f.position, in->vocab_size);
    case TOKVEC_E_POSITION_RANGE:
        return tv_error_set(err, 422, "sequence_too_long",
                            "start_position %" PRId64
                            " + sequence length %" PRId64
                            " exceeds context_length %" PRId64 "%s",
                            r->start_position, r->seq, in->context_length,
                            text_hint(r));
    case TOKVEC_E_TOO_LARGE:
        return tv_error_set(err, 413, "payload_too_large",
                            "response would be too large");
    default:
        return tv_error_set(err, 400, "invalid_request", "%s",
                            tokvec_strerror(rc));
    }
}
