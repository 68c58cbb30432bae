/* request.h -- parsing and validating POST /embed requests, independent of
 * HTTP. JSON bodies (jansson) and binary bodies (int32 LE ids with an
 * X-Tokvec-Shape header and query options) become one tv_request.
 *
 * Errors are described by a tv_error: the HTTP status, the contract's
 * error_type and a message for a person that names exactly what is wrong
 * (which key, which batch index and position, which id). Messages never
 * contain internal details (paths, pointers, errno text).
 *
 * Pure functions of their arguments; any thread.
 */
#ifndef TV_REQUEST_H
#define TV_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "request_fast.h"
#include "request_prescan.h"
#include "request_types.h"
#include "tokvec_table.h"

struct json_t;

/* One key of a request object: 1 when key is a text option (its value
 * checked and stored), 0 when it is not one, -1 with *e filled (400
 * invalid_request: a wrong type, a max_length or stride below 1, a
 * direction other than "right" or "left"). */
int tv_text_option(tv_text_opts *o, const char *key, const struct json_t *v,
                   tv_error *e);

/* After every key: 400 invalid_request for a stride without max_length,
 * 413 payload_too_large for a max_length over max_tokens (no window could
 * be answered). 0 or -1. */
int tv_text_opts_check(tv_text_opts *o, int64_t max_tokens, tv_error *e);

/* The book's GPTDatasetV1 windows of n ids: how many i are in
 * range(0, n - L, T). */
int64_t tv_text_windows(int64_t n, int64_t max_length, int64_t stride);

typedef enum {
    TV_BODY_JSON,        /* application/json (parameters allowed) */
    TV_BODY_BINARY,      /* application/octet-stream */
    TV_BODY_UNSUPPORTED, /* 415 */
} tv_body_kind;

/* Classifies a Content-Type header value (NULL or empty -> JSON; so are
 * text/plain and application/x-www-form-urlencoded, what fetch() with a
 * string body and curl -d send). */
tv_body_kind tv_body_kind_of(const char *content_type);

/* The 415 for a Content-Type tv_body_kind_of does not take (or, when
 * !binary_ok, a binary one): names the type received and the types the
 * route accepts. Returns -1. */
int tv_body_kind_error(const char *content_type, int binary_ok, tv_error *err);

/* Parses a JSON /embed body: "inputs" (batch of sequences or one sequence of
 * integers), "start_position", "positions", "pad_id", "encoding_format"
 * ("float", "base64", "torch" or "npz"), "dtype" (float32|float16|bfloat16);
 * unknown keys are rejected (400 invalid_request, naming the key). Checks
 * shape, limits and raggedness (422 ragged_batch without pad_id; with pad_id
 * shorter rows are right-padded, their lengths in lens). Does not check ids
 * against a table.
 * 0, or -1 with *err filled; *out is valid only on 0.
 *
 * The fast path first (request_fast.h); when it declines, the pre-scan
 * (tv_request_prescan_json), then jansson only for a body the pre-scan
 * found shallow and bounded. Which error a body gets, first that applies:
 *   1. over max_body_bytes: 413 payload_too_large;
 *   2. a NUL byte anywhere: 400 invalid_json, naming its offset;
 *   3. reading from the start, the first of: a JSON syntax error the
 *      pre-scan sees (then jansson reports it, 400 invalid_json with line
 *      and column, as before), a list or object opened 5 levels deep (400
 *      invalid_request), more JSON values than any request within the
 *      limits holds (413 payload_too_large);
 *   4. jansson and the request's own checks, as before the pre-scan.
 * So a syntax error keeps its invalid_json unless the body was already too
 * deep or too large before it. The pre-scan checks the structure, numbers
 * and literals as jansson's lexer does, inside strings only escapes and
 * control characters: past what it does not check (an integer or real out
 * of range, invalid UTF-8 or a lone surrogate or \u0000 in a string, a
 * duplicate key) it may still refuse a body jansson would have called
 * invalid_json there. */
int tv_request_parse_json(const char *body, size_t len, const tv_limits *lim,
                          tv_request *out, tv_error *err);

/* The two halves of tv_request_parse_json, exposed for the differential
 * fuzz target (tests/fuzz/fuzz_ids.c) and the benchmark (bench/idbench.c);
 * the server calls tv_request_parse_json, which tries the fast one first.
 *
 * tv_request_parse_json_slow: jansson, every shape, every error message
 * (what tv_request_parse_json does when the fast path declines and the
 * pre-scan lets the body through). After jansson ran on a body over 1 MiB
 * it calls malloc_trim(0) (glibc), so that the freed tree's pages go back
 * to the system instead of staying in the calling thread's arena.
 *
 * tv_request_parse_json_fast: the common /embed shape only -- an object
 * with "inputs" (list of lists of integers, or one flat list), and
 * optionally "start_position", "positions", "pad_id", "encoding_format",
 * "dtype", in any order, unescaped keys, integers as jansson reads them.
 * Returns 0 with *out exactly what the slow parser gives, or
 * TV_FAST_FALLBACK (*out init'ed, nothing held) for anything else: every
 * error, every limit (413) case and every unusual but valid body is left
 * to the slow parser.
 * It never allocates per id; what it allocates is bounded by
 * lim->max_tokens ids and lim->max_batch rows. */
int tv_request_parse_json_slow(const char *body, size_t len,
                               const tv_limits *lim, tv_request *out,
                               tv_error *err);

/* Parses a binary body: shape "B,S" (X-Tokvec-Shape) and B*S int32 LE ids.
 */
int tv_request_parse_binary(const void *body, size_t len, const char *shape,
                            const tv_limits *lim, tv_request *out,
                            tv_error *err);

/* Applies one query-string option to a request: start_position=N,
 * positions=true|false|1|0, dtype=... (kept as given in r->dtype, not
 * checked here: a response option, see tv_negotiate),
 * encoding_format=float|base64|torch|npz (as the JSON body's). Unknown
 * keys -> 400. */
int tv_request_set_option(tv_request *r, const char *key, const char *value,
                          tv_error *err);

/* One key=value of POST /embed's query string, for a body of the given
 * kind: dtype= always; the other options (tv_request_set_option) only with
 * a binary body -- a JSON body takes them in the body (400). */
int tv_request_query(tv_request *r, tv_body_kind body, const char *key,
                     const char *value, tv_error *err);

/* The {id} of GET /tokens/{id}: an optional '-' and 1 to 18 decimal
 * digits, nothing else (no '+', spaces or hex). 0, or -1 with a 400
 * invalid_request in err. The range is the table's to check. */
int tv_request_token_id(const char *text, int64_t *id, tv_error *err);

/* POST /v1/embeddings (OpenAI's): "input" (a string, a list of strings,
 * a list of ids, or a list of id lists), "model" (any string, checked by
 * nobody: one model is served), "encoding_format" float|base64,
 * "dimensions" (>= 1), "user" (ignored); null is absent; other keys 400.
 * Gives a pooled request (pool = 1, openai = 1, normalize -1). "" and
 * empty lists are 400 invalid_request with param "input"; more inputs
 * than max_batch 413. 0, or -1 with *err filled (err->param set). */
int tv_request_parse_openai(const char *body, size_t len, const tv_limits *lim,
                            tv_request *out, tv_error *err);

/* Checks ids and positions against the table (tokvec_embed_check): 422
 * token_out_of_range "token id 50257 at batch index 1, position 2 is out of
 * range [0, 50257)", 422 sequence_too_long. */
int tv_request_check(const tv_request *r, const tokvec_table *t,
                     tv_error *err);

#endif
