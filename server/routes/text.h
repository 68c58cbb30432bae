/* text.h -- private to the HTTP front end: text in (contract section 7).
 * POST /tokenize and POST /decode as jobs on the worker pool, and the text
 * options that /embed shares with /tokenize (special_tokens, truncate,
 * truncation_direction, max_length, stride). See text.c.
 *
 * The HTTP front end (http.c) owns the connection, auth, the body and the
 * log; for /tokenize and /decode it calls tv_text_parse, then
 * tv_text_submit, then (resumed) tv_text_result, and tv_text_free when the
 * request ends -- the pattern of POST /similar (pages.h).
 *
 * Threads: a call belongs to one thread at a time: the HTTP thread until
 * tv_text_submit, the worker (or the reaper, for an expired job) until it
 * resumes the connection, the HTTP thread again after. The tokenizer is
 * read-only and shared; each worker thread has its own tokvec_tok_state
 * (tv_text_state), freed when the thread exits.
 */
#ifndef TV_TEXT_H
#define TV_TEXT_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "request.h"
#include "tokvec_tokenizer.h"

/* The calling thread's tokenizer working memory (made on first use, freed
 * when the thread exits); NULL when out of memory. */
tokvec_tok_state *tv_text_state(void);

/* 400 invalid_request for text on a server without a tokenizer. */
int tv_text_no_tokenizer(tv_error *e);

/* Encodes text with o's special_tokens into out, and counts the bytes in
 * tokvec_tokenized_bytes_total. 0, or -1 with a 500 in *e. */
int tv_text_encode(const tokvec_tokenizer *tok, const tv_text_opts *o,
                   const char *text, size_t len, unsigned flags,
                   tokvec_tok_ids *out, tv_error *e);

/* POST /similar's text hook (pages.h): token id's bytes as UTF-8 (U+FFFD
 * for part of a character) into buf; -1 when id names no token of the
 * tokenizer ctx or the text does not fit in cap. Any thread. */
long tv_text_token_text(void *ctx, int64_t id, char *buf, size_t cap);

enum { TV_TEXT_TOKENIZE, TV_TEXT_DECODE };

typedef struct tv_text_call tv_text_call;

/* HTTP thread, once the whole JSON body is in. kind TV_TEXT_TOKENIZE:
 * {"inputs": "text" | ["text", ...], "special_tokens", "truncate",
 * "truncation_direction", "max_length", "stride"}; TV_TEXT_DECODE: {"ids":
 * [ids] | [[ids], ...]}. tok may be NULL (400 naming --tokenizer). Errors:
 * 400 invalid_json (not JSON, not UTF-8, a duplicate key), 400
 * invalid_request (not an object, an unknown key, a missing or empty
 * "inputs"/"ids", an element of the wrong type, windows of more than one
 * text), 413 payload_too_large (more than max_batch texts or sequences,
 * more than max_tokens ids, or more JSON values than that can hold), 422
 * token_out_of_range (an id that names no token of the tokenizer: batch
 * index, position and id). 0 with *out a new call, or -1 with *e. */
int tv_text_parse(int kind, const char *body, size_t len,
                  const tokvec_tokenizer *tok, const tv_limits *lim,
                  tv_text_call **out, tv_error *e);

/* Runs a small call at once on the calling thread (1: answer it now with
 * tv_text_result), or takes a place in pool's queue (-1: full; answer
 * 429, the call is still the caller's to free), suspends conn and pushes
 * the job (0); the worker resumes conn when done. */
int tv_text_submit(tv_text_call *c, tv_pool *pool,
                   struct MHD_Connection *conn);

/* Runs the job on the calling thread (what the worker does). */
void tv_text_run(tv_text_call *c);

/* After the job: 0 with *body (JSON, owned by the call), or -1 with *e:
 * the errors known only once the text is tokenized (413 over max_tokens
 * or max_batch, 422 text_too_short), 503 overloaded (expired in the
 * queue), 500 internal (out of memory). *tokens: ids answered. */
int tv_text_result(const tv_text_call *c, const char **body, size_t *len,
                   uint64_t *tokens, tv_error *e);

/* The answer's body, given to the caller (free()) after a successful
 * tv_text_result, with *charged: the bytes of it the worker already
 * counted in max_inflight_bytes (0 for a call run inline), now the
 * caller's to release. The call no longer holds either. HTTP thread. */
char *tv_text_take_body(tv_text_call *c, size_t *charged);

/* NULL is a no-op. Never while the job is queued or running. */
void tv_text_free(tv_text_call *c);

#endif
