/* reply.h -- private to the HTTP front end: queueing a response on a
 * request's connection (headers every answer gets, error bodies, what the
 * access log and metrics record). See reply.c.
 */
#ifndef TV_REPLY_H
#define TV_REPLY_H

#include <microhttpd.h>
#include <stddef.h>

#include "server.h"

/* The response headers a cross-origin script may read (CORS). */
#define REPLY_EXPOSED_HEADERS "X-Tokvec-Shape, X-Tokvec-Dtype, X-Request-Id"

/* CORS is on (--cors-origin set). */
int reply_cors_on(const tv_server *s);

/* x->acao: the Access-Control-Allow-Origin of the request's answers, from
 * its Origin and --cors-origin (see reply.c), NULL for none. First call,
 * before any answer is queued. */
void reply_cors_origin(req_ctx *x);

/* The methods the request's route answers (the Allow header). */
const char *reply_allowed(const req_ctx *x);

/* Queues r (NULL: out of memory, MHD_NO) with status, Content-Type ctype
 * (NULL: none) and the common headers; records status and len for the
 * log, starts the send deadline. Destroys r. HTTP thread. */
enum MHD_Result reply_queue(req_ctx *x, int status, struct MHD_Response *r,
                            const char *ctype, size_t len);

/* A copy of body as the response. */
enum MHD_Result reply_copy(req_ctx *x, int status, const char *ctype,
                           const char *body, size_t len);

/* A 200 with body (malloc'd; the response owns it from here, whatever
 * happens) counted in max_inflight_bytes until the response is freed:
 * the answers whose size is known only once built (/tokenize, /decode,
 * /similar, GET /tokens/{id}). `charged`: bytes the worker already
 * counted for it (given back here: from now on len counts). One larger
 * than the whole budget is a 413 naming the limit, never sent. HTTP
 * thread. */
enum MHD_Result reply_counted(req_ctx *x, const char *ctype, char *body,
                              size_t len, size_t charged);

/* The JSON error body of e, with Retry-After (429, 503),
 * WWW-Authenticate (401) or Allow (405) where they apply. */
enum MHD_Result reply_error(req_ctx *x, const tv_error *e);

/* reply_error with a printf-style message. */
enum MHD_Result reply_fail(req_ctx *x, int status, const char *type,
                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* 429 overloaded: the worker pool's queue holds max_queue jobs. */
enum MHD_Result reply_queue_full(req_ctx *x);

/* e written straight to the socket with Connection: close, for an error
 * found while a body is being read (libmicrohttpd 0.9.75 cannot queue a
 * response then); sets x->raw_replied: http.c drops at most
 * REPLY_LINGER_BYTES more of the body, then closes the connection.
 * MHD_NO (close now) if the answer could not be written whole. */
enum MHD_Result reply_error_and_close(req_ctx *x, const tv_error *e);
#define REPLY_LINGER_BYTES ((size_t)256 << 10)

/* Whether h is a request id to keep: 1..TV_REQUEST_ID_MAX bytes, each
 * visible ASCII (0x21-0x7e). */
int reply_request_id_ok(const char *h);

/* x->rid: the client's X-Request-Id when reply_request_id_ok, else a new
 * one (16 hex digits, distinct for the server's life). First call. */
void reply_request_id(req_ctx *x);

/* TCP bytes the peer has acknowledged on this socket so far (headers
 * included); 0 where unknown (a Unix socket). */
unsigned long long reply_bytes_acked(int fd);

#endif
