/* pages.h -- what tokvec serves to people: the playground (GET /), the
 * API reference (GET /docs) and their script and style files (GET
 * /static/NAME), all compiled into the binary from docs/playground/ by the
 * Makefile; and POST /similar, the nearest tokens of a token or a vector
 * (a full scan of the table, tokvec_similar.h, run on the worker pool).
 *
 * The HTTP front end (http.c) owns the connection, the route table, auth,
 * the body and the log; it calls these functions:
 *   GET  /, /docs, /static/NAME   tv_pages_response
 *   POST /similar                 tv_similar_parse, then tv_similar_submit,
 *                                 then (resumed) tv_similar_result, and
 *                                 tv_similar_free when the request ends.
 *
 * Threads: every function may be called from any thread; a call's object
 * belongs to one thread at a time: the HTTP thread until
 * tv_similar_submit, the worker (or the reaper, for an expired job) until
 * it resumes the connection, the HTTP thread again after.
 */
#ifndef TV_PAGES_H
#define TV_PAGES_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "request.h"
#include "tokvec_similar.h"
#include "tokvec_table.h"

/* The headers of every page and file: scripts and styles from tokvec's
 * own files only (no inline script or style, no eval), requests to this
 * origin only. */
#define TV_PAGES_CSP                                              \
    "default-src 'none'; script-src 'self'; style-src 'self'; "   \
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; " \
    "form-action 'none'; frame-ancestors 'none'"

/* 1 when path is one of the pages ("/", "/docs") or under "/static/". */
int tv_pages_match(const char *path);

/* The response for GET/HEAD of path: the compiled-in file (never copied)
 * with Content-Type, Content-Security-Policy, X-Content-Type-Options:
 * nosniff, Referrer-Policy and Cache-Control: no-cache set; *len its
 * size. "/static/auth.json" is {"api_key": true} when keyed (the server
 * has --api-key), else {"api_key": false}: public, so the page knows to
 * ask for the key before any keyed request. NULL when path names no file
 * (answer 404) or out of memory. */
struct MHD_Response *tv_pages_response(const char *path, int keyed,
                                       size_t *len);

/* The tokenizer hook: "text" of each neighbour. Writes the text of token
 * id (UTF-8, as the tokenizer decodes that token alone) into buf, at most
 * cap bytes, and returns its length; or -1 when there is none ("text":
 * null). Called on worker threads. Until a tokenizer is loaded the server
 * passes NULL and every "text" is null. */
typedef struct tv_similar_text_hook {
    long (*text)(void *ctx, int64_t id, char *buf, size_t cap);
    void *ctx;
} tv_similar_text_hook;

#define TV_SIMILAR_MAX_K 1000
#define TV_SIMILAR_DEFAULT_K 10

typedef struct tv_similar_call tv_similar_call;

/* HTTP thread, once the whole JSON body is in: {"id": N} or {"vector":
 * [dim numbers]}, and "k" (1..TV_SIMILAR_MAX_K, default 10). Errors: 413
 * payload_too_large first, for a body with more ',' '[' '{' bytes than a
 * request for a vector of dim numbers holds (refused before jansson
 * builds a tree); then 400 invalid_json (not JSON, a duplicate key); 400
 * invalid_request for a body that is not an object; key by key in the
 * body's order, 400 invalid_request for an unknown key or a "k" that is
 * not an integer, 422 k_out_of_range; 400 invalid_request for both or
 * neither of id and vector; then for the one given: 400 invalid_request
 * (not an integer; not a list, a value that is not a number within
 * float32's range, all zeros), 422 token_out_of_range, 422
 * dimension_mismatch (vector length != dim). An id whose row is zeros is
 * answered: every score 0.
 * t and idx (over t) must stay valid until tv_similar_free; hook may be
 * NULL and is copied. 0 with *out a new call, or -1 with *e filled. */
int tv_similar_parse(const char *body, size_t len, const tokvec_table *t,
                     tokvec_similar *idx, const tv_similar_text_hook *hook,
                     tv_similar_call **out, tv_error *e);

/* Takes a place in pool's queue (-1: the queue is full; answer 429, the
 * call is still the caller's to free), suspends conn and pushes the scan.
 * A worker runs it and resumes conn; MHD then calls the handler again,
 * which calls tv_similar_result. The call must live until then (until the
 * request ends: tv_similar_free in the request's completion). */
int tv_similar_submit(tv_similar_call *c, tv_pool *pool,
                      struct MHD_Connection *conn);

/* After the job: 0 with *body (JSON, owned by the call) and *len, or -1
 * with *e filled: 503 overloaded when the job waited past max_queue_wait
 * and never ran (the reaper expired it), 500 internal on out of memory. */
int tv_similar_result(const tv_similar_call *c, const char **body, size_t *len,
                      tv_error *e);

/* The answer's body, given to the caller (free()) after a successful
 * tv_similar_result, with *charged: the bytes of it the worker counted in
 * max_inflight_bytes, now the caller's to release. HTTP thread. */
char *tv_similar_take_body(tv_similar_call *c, size_t *charged);

/* Runs the scan on the calling thread (what the job does on a worker);
 * for tests and tools. */
void tv_similar_run(tv_similar_call *c);

/* NULL is a no-op. Never while the job is queued or running. */
void tv_similar_free(tv_similar_call *c);

#endif
