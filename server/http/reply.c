/* reply.c -- queueing responses (reply.h): the headers every answer gets
 * (X-Request-Id; CORS: Access-Control-Allow-Origin naming the request's
 * Origin when --cors-origin lists it, "*" when it lists "*", else the one
 * origin listed when it lists one, else none, and Vary: Origin; Connection:
 * close while draining or after bad framing), the request id (the
 * client's or one made here), the JSON error bodies, and what the access
 * log and metrics record of a reply (status, bytes, where it starts in the
 * acknowledged bytes).
 *
 * Threads: the connection's HTTP thread (MHD calls only let a response be
 * queued there). Reads the server's settings and `draining`, an atomic.
 */
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_acked */
#include <netinet/in.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "reply.h"

int reply_cors_on(const tv_server *s)
{
    return tv_origins_on(&s->cors);
}

void reply_cors_origin(req_ctx *x)
{
    const tv_origins *o = &x->s->cors;
    const char *listed = NULL;
    x->acao = NULL;
    if (!tv_origins_on(o))
        return;
    const char *origin = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
                                                     "Origin");
    tv_origin_check(o, origin, NULL, &listed);
    if (o->any)
        x->acao = "*";
    else if (listed)
        x->acao = listed; /* the Origin itself, as listed */
    else if (o->n == 1)
        x->acao = o->list[0]; /* one origin: always named, as before */
}

int reply_request_id_ok(const char *h)
{
    size_t n = 0;
    if (!h)
        return 0;
    for (; h[n]; n++)
        if (n >= TV_REQUEST_ID_MAX || h[n] < 0x21 || h[n] > 0x7e)
            return 0;
    return n > 0;
}

/* splitmix64: a bijection, so distinct counters give distinct ids. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void reply_request_id(req_ctx *x)
{
    const char *h = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
                                                "X-Request-Id");
    if (reply_request_id_ok(h)) {
        snprintf(x->rid, sizeof x->rid, "%s", h);
        return;
    }
    uint64_t n = atomic_fetch_add(&x->s->rid_next, 1);
    snprintf(x->rid, sizeof x->rid, "%016" PRIx64, mix64(x->s->rid_seed + n));
}

static void common_headers(req_ctx *x, struct MHD_Response *r)
{
    if (x->rid[0])
        MHD_add_response_header(r, "X-Request-Id", x->rid);
    if (x->acao) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", x->acao);
        /* what a page's script may read of the answer (the preflight's
         * copy alone does not let it) */
        MHD_add_response_header(r, "Access-Control-Expose-Headers",
                                REPLY_EXPOSED_HEADERS);
    }
    /* The answer's CORS headers depend on the request's Origin. */
    if (reply_cors_on(x->s) && !x->s->cors.any)
        MHD_add_response_header(r, "Vary", "Origin");
    /* While draining, tell keep-alive clients to go elsewhere; after bad
     * framing, the rest of what the client sent is not a request. */
    if (atomic_load(&x->s->draining) || x->must_close)
        MHD_add_response_header(r, "Connection", "close");
}

/* The methods a route answers (the Allow header). */
const char *reply_allowed(const req_ctx *x)
{
    int cors = reply_cors_on(x->s);
    if (x->route == TV_ROUTE_EMBED || x->route == TV_ROUTE_SIMILAR ||
        x->route == TV_ROUTE_TOKENIZE || x->route == TV_ROUTE_DECODE ||
        x->route == TV_ROUTE_V1_EMBEDDINGS)
        return cors ? "POST, OPTIONS" : "POST";
    return cors ? "GET, HEAD, OPTIONS" : "GET, HEAD";
}

enum MHD_Result reply_queue(req_ctx *x, int status, struct MHD_Response *r,
                            const char *ctype, size_t len)
{
    if (!r)
        return MHD_NO;
    if (ctype)
        MHD_add_response_header(r, "Content-Type", ctype);
    common_headers(x, r);
    x->status = status;
    x->bytes = len;
    x->state = ST_DONE;
    /* Where the reply starts in the connection's acknowledged bytes, for
     * the log of a reply the client cuts. One getsockopt: for the large
     * replies that can be cut part-way; a small one goes out in one send
     * and is logged with 0 bytes if cut. */
    if (len >= ((size_t)64 << 10)) {
        x->acked0 = reply_bytes_acked(x->fd);
        x->acked_known = 1;
    }
    deadline_send(x->s, x->watch, len);
    enum MHD_Result ok = MHD_queue_response(x->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result reply_copy(req_ctx *x, int status, const char *ctype,
                           const char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, MHD_RESPMEM_MUST_COPY);
    return reply_queue(x, status, r, ctype, len);
}

/* What a counted body owns until MHD frees the response (any MHD thread,
 * once): the body and its bytes of max_inflight_bytes. */
typedef struct counted {
    tv_pool *pool;
    char *body;
    size_t len;
} counted;

static void counted_free(void *cls)
{
    counted *c = cls;
    tv_pool_release(c->pool, c->len);
    free(c->body);
    free(c);
}

enum MHD_Result reply_counted(req_ctx *x, const char *ctype, char *body,
                              size_t len, size_t charged)
{
    tv_pool *pool = x->s->pool;
    size_t budget = tv_pool_budget(pool);
    counted *c = NULL;
    struct MHD_Response *r = NULL;
    /* now counted once, as len: only the difference moves, so the total
     * never shows both charges at once (another thread's admission and
     * the gauge read it in between) */
    if (len > charged)
        tv_pool_charge(pool, len - charged);
    else
        tv_pool_release(pool, charged - len);
    if (len > budget) {
        tv_pool_release(pool, len);
        free(body);
        return reply_fail(x, 413, "payload_too_large",
                          "the answer is %zu bytes, %zu over "
                          "max_inflight_bytes (%zu); send less per request",
                          len, len - budget, budget);
    }
    c = malloc(sizeof *c);
    if (c) {
        *c = (counted){.pool = pool, .body = body, .len = len};
        r = MHD_create_response_from_buffer_with_free_callback_cls(
            len, body, counted_free, c);
        if (!r)
            free(c);
    }
    if (!r) {
        tv_pool_release(pool, len);
        free(body);
        return reply_fail(x, 500, "internal", "out of memory");
    }
    return reply_queue(x, 200, r, ctype, len);
}

/* The error body for x's path: OpenAI's shape under /v1/, else tokvec's. */
static size_t error_body(const req_ctx *x, const tv_error *e, char *body)
{
    return tv_route_is_v1(x->path) ? tv_openai_error_body(e, body)
                                   : tv_error_body(e, body);
}

enum MHD_Result reply_error(req_ctx *x, const tv_error *e)
{
    char body[TV_ERROR_BODY_MAX];
    size_t n = error_body(x, e, body);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        n, body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    x->error_type = e->type;
    if (e->status == 429 || e->status == 503)
        MHD_add_response_header(r, "Retry-After", "1");
    if (e->status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (e->status == 405)
        MHD_add_response_header(r, "Allow", reply_allowed(x));
    return reply_queue(x, e->status, r, "application/json", n);
}

enum MHD_Result reply_fail(req_ctx *x, int status, const char *type,
                           const char *fmt, ...)
{
    tv_error e = {.status = status, .type = type};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    return reply_error(x, &e);
}

enum MHD_Result reply_queue_full(req_ctx *x)
{
    return reply_fail(x, 429, "overloaded",
                      "the work queue is full (%" PRId64 " jobs); retry",
                      x->s->cfg->max_queue);
}

/* A body past max_body_bytes, mid-upload: libmicrohttpd 0.9.75 queues no
 * response while a body is being read (only before or after it), so the
 * 413 is written to the socket here -- nothing else is in flight on it at
 * that point (no response yet; a 100 Continue, if any, is already sent).
 * http.c then takes at most REPLY_LINGER_BYTES more of the body, dropped,
 * and closes the connection (MHD_NO): a client that sends its whole body
 * before reading (Python's http.client) and is only a little over still
 * reads the 413 instead of a broken pipe, and a large upload is cut
 * short. The headers are those reply_queue gives an error. */
enum MHD_Result reply_error_and_close(req_ctx *x, const tv_error *e)
{
    char body[TV_ERROR_BODY_MAX], msg[TV_ERROR_BODY_MAX + 512];
    size_t n = error_body(x, e, body);
    const char *origin = x->acao;
    int k = snprintf(msg, sizeof msg,
                     "HTTP/1.1 %d %s\r\nConnection: close\r\n"
                     "Content-Type: application/json\r\n"
                     "Content-Length: %zu\r\n%s%s%s%s%s%s\r\n",
                     e->status, MHD_get_reason_phrase_for((unsigned)e->status),
                     n, x->rid[0] ? "X-Request-Id: " : "", x->rid,
                     x->rid[0] ? "\r\n" : "",
                     origin ? "Access-Control-Allow-Origin: " : "",
                     origin ? origin : "", origin ? "\r\n" : "");
    x->status = e->status;
    x->error_type = e->type;
    x->state = ST_DONE;
    x->raw_replied = 1;
    if (k <= 0 || (size_t)k + n >= sizeof msg || x->fd < 0)
        return MHD_NO;
    memcpy(msg + k, body, n);
    ssize_t w = send(x->fd, msg, (size_t)k + n, MSG_NOSIGNAL);
    x->bytes = w > 0 ? (uint64_t)w : 0;
    return w == (ssize_t)((size_t)k + n) ? MHD_YES : MHD_NO;
}

/* TCP bytes the peer has acknowledged on this socket so far (headers
 * included); 0 where unknown (a Unix socket). */
unsigned long long reply_bytes_acked(int fd)
{
    struct tcp_info ti;
    socklen_t n = sizeof ti;
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &n) < 0 ||
        n < offsetof(struct tcp_info, tcpi_bytes_acked) +
                sizeof ti.tcpi_bytes_acked)
        return 0;
    return ti.tcpi_bytes_acked;
}
