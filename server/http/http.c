/* http.c -- the MHD handler of every listener (http.h, server.h): a
 * request's first call (framing, Host, route, method, Origin, auth,
 * Content-Length checked before any body is read: origin.h says which
 * Host and Origin are allowed; the Host check covers every route of a
 * loopback listener, the Origin check the routes that do work -- every
 * POST route and the keyed GETs /tokens/{id} and /info, and their CORS
 * preflights), its body (appended up to
 * max_body_bytes under the server-wide max_buffered_bytes budget), the
 * dispatch to its route once the whole request is in, and its completion
 * (status for the log and metrics, cleanup); and the server's lifecycle:
 * tv_server_start, _drain_begin, _busy, _stop.
 *
 * Where a request goes, file by file: listen.c (the daemons that accept
 * it) -> framing.c (refused before its body if badly framed) -> here ->
 * get_routes.c (GET routes, answered at once) or embed_job.c (POST /embed: a
 * job for the worker pool, pool.c) -> reply.c (the response queued).
 *
 * Threads: MHD runs N polling threads per listener (tv-http-0..N-1 for
 * TCP, tv-unix-0..N-1 for --unix-socket), each with its own epoll and its
 * own connections; a connection stays on the thread that accepted it, and
 * every callback here runs on it. Workers (tv-work-0..M-1, pool.h) build
 * /embed replies. The request deadline, max_queue_wait and the trim of
 * idle memory are the reaper's tick (deadline.c), which the control loop
 * of `tokvec serve` runs on the main thread; it only cuts and expires,
 * and no request waits for it. Nothing per request runs on a thread that
 * exists once. tv_server_start, _drain_begin and _stop run on the main thread;
 * tv_server_busy on any. `draining`, `requests` and `buffered` are
 * atomics; cfg, lim and topts never change after start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "body.h"
#include "cpus.h"
#include "embed_job.h"
#include "framing.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "pages.h"
#include "pool.h"
#include "request.h"
#include "tables.h"
#include "text.h"
#include "reply.h"
#include "server.h"

/* docs/openapi.json, compiled in by the Makefile (build/gen/openapi.c). */
extern const char tv_openapi_json[];
extern const unsigned long tv_openapi_len;

/* Constant-time comparison of the Authorization header's credentials
 * with the key. The scheme "Bearer" compares in any case (RFC 9110,
 * 11.1), followed by one or more spaces; the key exactly. */
static int authorized(const tv_server *s, struct MHD_Connection *c)
{
    const char *key = s->cfg->api_key;
    if (!key || !*key)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7))
        return 0;
    h += 7;
    while (*h == ' ')
        h++;
    size_t hl = strlen(h), kl = strlen(key);
    unsigned char diff = (unsigned char)(hl != kl);
    for (size_t i = 0; i < kl; i++)
        diff |= (unsigned char)(key[i] ^ (i < hl ? h[i] : 0));
    return diff == 0;
}

/* A request with a body: acknowledge its header segment now. A client
 * that writes headers and body in two sends (Python's httpx, h11) has
 * Nagle hold the body until that ACK comes, and on a kept-alive connection
 * Linux delays it (delayed ACK, ~40 ms: it expects to piggyback it on a
 * reply) -- ~44 ms a request. TCP_QUICKACK sends the pending ACK at once;
 * the flag is not sticky, hence once per request. Fails harmlessly on the
 * Unix socket. */
static void quick_ack(int fd)
{
#ifdef TCP_QUICKACK
    int one = 1;
    if (fd >= 0)
        (void)setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
#else
    (void)fd;
#endif
}

/* A header value for a message: at most 100 bytes, printable ASCII (others
 * as '?'). */
static const char *shown(const char *v, char *buf, size_t n)
{
    size_t i = 0;
    for (; v && v[i] && i + 1 < n && i < 100; i++)
        buf[i] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
    buf[i] = '\0';
    return buf;
}

/* DNS rebinding (origin.h): a server on a loopback address answers only
 * a Host that names the loopback (or none: HTTP/1.0). The Unix socket is
 * not checked (no browser reaches it; a proxy there passes its own Host).
 * 0, or -1 with *e filled (403 host_not_allowed). */
static int host_check(const req_ctx *x, tv_error *e)
{
    if (!x->s->loopback || x->unix_peer)
        return 0;
    const char *host = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
                                                   "Host");
    if (!host || tv_host_is_loopback(host))
        return 0;
    char b[128];
    return tv_error_set(e, 403, "host_not_allowed",
                        "Host '%s' is not a loopback name or address, and "
                        "this server listens on the loopback (%s): use "
                        "localhost, 127.0.0.1 or [::1] (a guard against DNS "
                        "rebinding; a server for other hosts listens on "
                        "another --host)",
                        shown(host, b, sizeof b), x->s->cfg->host);
}

/* Cross-site requests (origin.h): a request without Origin, from the
 * server's own origin (Origin's host[:port] is Host) or from an origin
 * --cors-origin lists is allowed. 0, or -1 with *e filled (403
 * origin_not_allowed). */
static int origin_check(const req_ctx *x, tv_error *e)
{
    const char *origin = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
                                                     "Origin");
    const char *host = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
                                                   "Host");
    if (tv_origin_check(&x->s->cors, origin, host, NULL) != TV_ORIGIN_REFUSED)
        return 0;
    char b[128];
    return tv_error_set(e, 403, "origin_not_allowed",
                        "a page of Origin '%s' may not call this server: "
                        "only its own origin (the Host it is served from) "
                        "and the origins listed in --cors-origin may%s",
                        shown(origin, b, sizeof b),
                        reply_cors_on(x->s) ? ""
                                            : " (--cors-origin is not set)");
}

static enum MHD_Result first_call(req_ctx *x, const char *url,
                                  const char *method)
{
    tv_server *s = x->s;
    int post = !strcmp(method, "POST");
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    int posts = x->route == TV_ROUTE_EMBED || x->route == TV_ROUTE_SIMILAR ||
                x->route == TV_ROUTE_TOKENIZE || x->route == TV_ROUTE_DECODE ||
                x->route == TV_ROUTE_V1_EMBEDDINGS;
    /* the routes that do work: every POST route and the keyed GETs */
    int work = posts || x->route == TV_ROUTE_TOKENS ||
               x->route == TV_ROUTE_INFO || x->route == TV_ROUTE_V1_MODELS;
    tv_error e;

    if (host_check(x, &e) < 0)
        return reply_error(x, &e);
    if (!strcmp(method, "OPTIONS") && x->route != TV_ROUTE_OTHER &&
        reply_cors_on(s)) {
        if (work && origin_check(x, &e) < 0)
            return reply_error(x, &e);
        struct MHD_Response *r = MHD_create_response_from_buffer(
            0, "", MHD_RESPMEM_PERSISTENT);
        if (r) {
            MHD_add_response_header(r, "Access-Control-Allow-Methods",
                                    reply_allowed(x));
            MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                    "Authorization, Content-Type, Accept, "
                                    "X-Tokvec-Shape, X-Request-Id");
            MHD_add_response_header(r, "Access-Control-Expose-Headers",
                                    REPLY_EXPOSED_HEADERS);
            MHD_add_response_header(r, "Access-Control-Max-Age", "600");
        }
        return reply_queue(x, 204, r, NULL, 0);
    }
    if (x->route == TV_ROUTE_OTHER)
        return reply_fail(x, 404, "not_found",
                          "no such path; routes: POST /embed, POST "
                          "/similar, POST /tokenize, POST /decode, POST "
                          "/v1/embeddings, GET /v1/models, GET "
                          "/tokens/{id}, /info, /health, /ready, /metrics, "
                          "/openapi.json, /, /docs");
    if (posts ? !post : !get)
        return reply_fail(x, 405, "method_not_allowed",
                          "method %s is not allowed on %.64s (allowed: %s)",
                          x->method, x->path, reply_allowed(x));
    if (work && origin_check(x, &e) < 0)
        return reply_error(x, &e);
    if (work && !authorized(s, x->conn))
        return reply_fail(x, 401, "unauthorized",
                          "missing or wrong Authorization: Bearer key");
    if (post) {
        const char *cl = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
                                                     "Content-Length");
        if (!cl)
            quick_ack(x->fd); /* chunked, or no body at all */
        else {
            char *end;
            unsigned long long n = strtoull(cl, &end, 10);
            if (*end || n > (unsigned long long)s->cfg->max_body_bytes)
                return reply_fail(x, 413, "payload_too_large",
                                  "Content-Length is over max_body_bytes "
                                  "%" PRId64,
                                  s->cfg->max_body_bytes);
            x->expect = (size_t)n;
            if (n)
                quick_ack(x->fd);
            if (n && http_body_reserve(x, (size_t)n + 1) < 0)
                return reply_fail(x, 429, "overloaded",
                                  "request bodies being received hold "
                                  "max_buffered_bytes (%" PRId64 "); retry",
                                  s->cfg->max_buffered_bytes);
        }
    }
    (void)url;
    x->state = ST_BODY;
    return MHD_YES;
}

/* The checks of a JSON-only POST route before its body is parsed: 503
 * draining, 415, 406 (a body past max_body_bytes never gets here: 413
 * from first_call or, chunked, as it passes the limit). 0, or -1 with *e
 * filled. */
static int json_post_check(req_ctx *x, tv_error *e)
{
    if (atomic_load(&x->s->draining))
        return tv_error_set(e, 503, "draining", "the server is shutting down");
    const char *ct = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
                                                 "Content-Type");
    if (tv_body_kind_of(ct) != TV_BODY_JSON)
        return tv_body_kind_error(ct, 0, e);
    const char *accept = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
                                                     "Accept");
    if (!tv_accepts_json(accept))
        return tv_error_set(e, 406, "not_acceptable",
                            "this route answers only application/json");
    return 0;
}

/* The end of a worker route's parse: submitted is what its submit
 * returned (< 0: the queue is full, 429); else the connection waits for
 * the worker. */
static enum MHD_Result queued(req_ctx *x, int submitted)
{
    if (submitted < 0)
        return reply_queue_full(x);
    x->state = ST_QUEUED;
    return MHD_YES;
}

static enum MHD_Result text_reply(req_ctx *x);

/* POST /tokenize and /decode (text.h): as /similar below; a small call
 * runs at once on this thread. */
static enum MHD_Result text_route(req_ctx *x)
{
    tv_error e;
    if (json_post_check(x, &e) < 0)
        return reply_error(x, &e);
    /* The table's tokenizer (a reload may bring another with --model):
     * the reference keeps it until http_completed. */
    x->sim_ref = table_acquire(x->s);
    int rc = tv_text_parse(x->route == TV_ROUTE_DECODE ? TV_TEXT_DECODE
                                                       : TV_TEXT_TOKENIZE,
                           x->body ? x->body : "", x->len, x->sim_ref->tok,
                           &x->s->lim, &x->text, &e);
    http_body_drop(x);
    if (rc < 0)
        return reply_error(x, &e);
    rc = tv_text_submit(x->text, x->s->pool, x->conn);
    if (rc == 1) /* small: ran at once */
        return text_reply(x);
    return queued(x, rc);
}

static enum MHD_Result text_reply(req_ctx *x)
{
    const char *body;
    size_t n;
    tv_error e;
    size_t charged;
    if (tv_text_result(x->text, &body, &n, &x->tokens, &e) < 0)
        return reply_error(x, &e);
    char *owned = tv_text_take_body(x->text, &charged);
    return reply_counted(x, "application/json", owned, n, charged);
}

/* POST /similar (pages.h): parsed here, the scan on the worker pool, the
 * answer in similar_reply() when the worker resumes the connection. */
static enum MHD_Result similar_route(req_ctx *x)
{
    tv_error e;
    if (json_post_check(x, &e) < 0)
        return reply_error(x, &e);
    x->sim_ref = table_acquire(x->s); /* released in http_completed */
    tv_similar_text_hook hook = {.text = tv_text_token_text,
                                 .ctx = x->sim_ref->tok};
    int rc = tv_similar_parse(x->body ? x->body : "", x->len, x->sim_ref->t,
                              x->sim_ref->sim, x->sim_ref->tok ? &hook : NULL,
                              &x->sim, &e);
    http_body_drop(x);
    if (rc < 0)
        return reply_error(x, &e);
    return queued(x, tv_similar_submit(x->sim, x->s->pool, x->conn));
}

static enum MHD_Result similar_reply(req_ctx *x)
{
    const char *body;
    size_t n;
    tv_error e;
    size_t charged;
    if (tv_similar_result(x->sim, &body, &n, &e) < 0)
        return reply_error(x, &e);
    char *owned = tv_similar_take_body(x->sim, &charged);
    return reply_counted(x, "application/json", owned, n, charged);
}

enum MHD_Result http_handler(void *cls, struct MHD_Connection *c,
                             const char *url, const char *method,
                             const char *version, const char *upload,
                             size_t *upload_size, void **con_cls)
{
    tv_server *s = cls;
    req_ctx *x = *con_cls;

    if (!x || framing_uri_mark(x)) { /* the first call (may be marked) */
        int verdict = framing_uri_verdict(x);
        x = tv_calloc(1, sizeof *x);
        if (!x)
            return MHD_NO;
        x->s = s;
        x->uri_verdict = verdict;
        x->conn = c;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
            c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        x->watch = ci ? ci->socket_context : NULL;
        ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        x->fd = ci ? ci->connect_fd : -1;
        ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        x->unix_peer = ci && ci->client_addr &&
                       ci->client_addr->sa_family == AF_UNIX;
        reply_request_id(x);
        reply_cors_origin(x);
        x->route = tv_route_of(url);
        snprintf(x->method, sizeof x->method, "%s", method);
        snprintf(x->path, sizeof x->path, "%s", url);
        x->path_len = strlen(url);
        atomic_fetch_add(&s->requests, 1);
        embed_job_init(&x->job);
        clock_gettime(CLOCK_MONOTONIC, &x->t0);
        tv_metrics_inflight_add(1);
        *con_cls = x;
        tv_error fe;
        if (framing_check(x, method, version, &fe) < 0) {
            x->must_close = 1;
            return reply_error(x, &fe);
        }
        return first_call(x, url, method);
    }
    if (x->state == ST_QUEUED) /* resumed: the job is done */
        return x->sim    ? similar_reply(x)
               : x->text ? text_reply(x)
                         : embed_reply(x);
    if (x->state == ST_DONE && x->raw_replied) {
        /* The 413 is out (reply_error_and_close): drop a little more of
         * the body, then close; at its end, close too (no response is
         * queued, none may be). */
        size_t n = *upload_size;
        *upload_size = 0;
        x->lingered += n;
        return n && x->lingered <= REPLY_LINGER_BYTES ? MHD_YES : MHD_NO;
    }
    if (x->state == ST_DONE) {
        *upload_size = 0; /* a response is queued; ignore the rest */
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (x->too_busy)
            return MHD_YES;
        if (x->len + n > (size_t)s->cfg->max_body_bytes) {
            /* A chunked body past the limit (a Content-Length over it was
             * refused in first_call): answer now and close the connection
             * rather than read the rest only to drop it. */
            tv_error e;
            http_body_drop(x);
            tv_error_set(&e, 413, "payload_too_large",
                         "body is over max_body_bytes %" PRId64,
                         s->cfg->max_body_bytes);
            return reply_error_and_close(x, &e);
        }
        if (x->len + n + 1 > x->cap) {
            /* Content-Length known: that, at once; else doubling. */
            size_t cap = x->expect >= x->len + n ? x->expect + 1
                         : x->cap                ? x->cap
                                                 : 4096;
            while (cap < x->len + n + 1)
                cap *= 2;
            if (http_body_reserve(x, cap) < 0) {
                x->too_busy = 1;
                http_body_drop(x);
                return MHD_YES;
            }
            char *b = tv_realloc(x->body, cap);
            if (!b)
                return MHD_NO;
            x->body = b;
            x->cap = cap;
        }
        memcpy(x->body + x->len, upload, n);
        x->len += n;
        return MHD_YES;
    }
    deadline_arm(s, x->watch, 0); /* the whole request is in */
    if (x->too_busy)
        return reply_fail(x, 429, "overloaded",
                          "request bodies being received hold "
                          "max_buffered_bytes (%" PRId64 "); retry",
                          s->cfg->max_buffered_bytes);
    switch (x->route) {
    case TV_ROUTE_EMBED:
    case TV_ROUTE_V1_EMBEDDINGS:
        return embed_route(x);
    case TV_ROUTE_V1_MODELS:
        return route_models(x);
    case TV_ROUTE_TOKENS:
        return route_token(x, url + 8);
    case TV_ROUTE_INFO:
        return route_info(x);
    case TV_ROUTE_HEALTH:
        return reply_copy(x, 200, "application/json", "{\"status\":\"ok\"}",
                          15);
    case TV_ROUTE_READY:
        if (atomic_load(&s->draining))
            return reply_copy(x, 503, "application/json",
                              "{\"status\":\"draining\"}", 21);
        return reply_copy(x, 200, "application/json", "{\"status\":\"ready\"}",
                          18);
    case TV_ROUTE_METRICS:
        return route_metrics(x);
    case TV_ROUTE_SIMILAR:
        return similar_route(x);
    case TV_ROUTE_TOKENIZE:
    case TV_ROUTE_DECODE:
        return text_route(x);
    case TV_ROUTE_PAGES: {
        size_t n = 0;
        const char *key = s->cfg->api_key;
        struct MHD_Response *r = tv_pages_response(url, key && *key, &n);
        return r ? reply_queue(x, 200, r, NULL, n)
                 : reply_fail(x, 404, "not_found", "no such file");
    }
    case TV_ROUTE_OPENAPI:
        return reply_queue(
            x, 200,
            MHD_create_response_from_buffer(s->openapi_len, s->openapi,
                                            MHD_RESPMEM_PERSISTENT),
            "application/json", s->openapi_len);
    default:
        return reply_fail(x, 404, "not_found", "no such path");
    }
}

/* The peer's address as text, "unix" for the Unix socket. */
static const char *client_address(struct MHD_Connection *c, char *buf,
                                  size_t n)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
        c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    const void *a = NULL;
    if (sa && sa->sa_family == AF_INET)
        a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    else if (sa && sa->sa_family == AF_INET6)
        a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (a && inet_ntop(sa->sa_family, a, buf, (socklen_t)n))
        return buf;
    return sa && sa->sa_family == AF_UNIX ? "unix" : "-";
}

/* MHD: the request is over (answered, or the client went away). */
void http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
    req_ctx *x = *con_cls;
    (void)cls;
    if (!x || framing_uri_mark(x)) { /* no first call: no request to log */
        *con_cls = NULL;
        return;
    }
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - x->t0.tv_sec) +
                  (double)(t1.tv_nsec - x->t0.tv_nsec) * 1e-9;
    int status = x->status ? x->status : 500;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && !x->status)
        /* cut by the request deadline, the client broke off its request
         * (400), or left while its job ran (499) */
        status = x->watch && atomic_load(&x->watch->timed_out) ? 408
                 : x->state == ST_QUEUED                       ? 499
                                                               : 400;
    else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && status == 200) {
        /* The reply was cut: not a 200 (nginx's 499). Count what the
         * client acknowledged (TCP; headers included), at most the body. */
        unsigned long long got = x->acked_known ? reply_bytes_acked(x->fd) : 0;
        got = got > x->acked0 ? got - x->acked0 : 0;
        x->bytes = got < x->bytes ? got : x->bytes;
        /* 408: tokvec cut it (the reply's send deadline, or MHD's
         * inactivity limit), 499: the client did */
        status = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ||
                         (x->watch && atomic_load(&x->watch->timed_out))
                     ? 408
                     : 499;
    }
    deadline_arm(x->s, x->watch, 1); /* the next request's time starts */
    tv_metrics_request(x->route, status, secs, x->tokens, x->bytes);
    tv_metrics_inflight_add(-1);
    if (x->s->cfg->access_log) {
        char peer[INET6_ADDRSTRLEN];
        tv_access a = {.method = x->method,
                       .path = x->path,
                       .path_len = x->path_len,
                       .status = status,
                       .tokens = (long long)x->tokens,
                       .bytes = (long long)x->bytes,
                       .micros = (long long)(secs * 1e6),
                       .client = client_address(c, peer, sizeof peer),
                       .request_id = x->rid,
                       .error_type = status >= 400 ? x->error_type : NULL};
        tv_log_request(&a);
    }
    embed_job_fini(x->s, &x->job);
    tv_similar_free(x->sim);
    tv_text_free(x->text);
    table_release(x->sim_ref);
    http_body_drop(x);
    atomic_fetch_sub(&x->s->requests, 1);
    free(x);
    *con_cls = NULL;
}

/* GET /openapi.json: docs/openapi.json (compiled in) with `servers` set
 * to where this server listens: http://HOST:PORT for an address of one
 * interface, the relative "/" (the document's own origin, whatever name
 * the client used to reach it) for a wildcard (0.0.0.0, ::). Written as
 * the file is (jansson, indent 1), so only `servers` differs. 0 or
 * -ENOMEM. Main thread, in tv_server_start: before the listeners start when
 * the port is set (they answer at once), else right after them (port 0:
 * the unit tests' ephemeral port, which no client knows before start
 * returns; the settings allow 1..65535). */
static int openapi_build(tv_server *s, unsigned port)
{
    const char *h = s->cfg->host;
    unsigned char a[sizeof(struct in6_addr)] = {0}, zero[sizeof a] = {0};
    int v6 = strchr(h, ':') != NULL;
    int any = inet_pton(v6 ? AF_INET6 : AF_INET, h, a) == 1 &&
              !memcmp(a, zero, v6 ? 16 : 4);
    char url[INET6_ADDRSTRLEN + 32];
    if (any)
        snprintf(url, sizeof url, "/");
    else
        snprintf(url, sizeof url, v6 ? "http://[%s]:%u" : "http://%s:%u", h,
                 port);
    json_t *doc = json_loadb(tv_openapi_json, tv_openapi_len, 0, NULL);
    json_t *list = json_pack("[{s:s}]", "url", url);
    int rc = -ENOMEM;
    if (doc && list && json_object_set(doc, "servers", list) == 0) {
        char *text = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        size_t n = text ? strlen(text) : 0;
        s->openapi = text ? tv_malloc(n + 2) : NULL;
        if (s->openapi) { /* and the file's final newline */
            memcpy(s->openapi, text, n);
            memcpy(s->openapi + n, "\n", 2);
            s->openapi_len = n + 1;
            rc = 0;
        }
        free(text);
    }
    json_decref(list);
    json_decref(doc);
    return rc;
}

int tv_server_exit_status(int code)
{
    return code == TV_SERVER_E_INPUT ? 2 : code < 0 ? 1 : 0;
}

/* The settings the request path reads, from cfg. */
static void server_settings(tv_server *s, const tv_config *cfg)
{
    s->cfg = cfg;
    /* framing_check() reads MHD's raw header block: a layout checked
     * against 0.9.75 only (elsewhere the checks that need it are off). */
    s->raw_framing = !strcmp(MHD_get_version(), "0.9.75");
    s->loopback = tv_address_is_loopback(cfg->host);
    s->lim.max_body_bytes = (size_t)cfg->max_body_bytes;
    s->lim.max_tokens = cfg->max_tokens;
    s->lim.max_batch = cfg->max_batch;
    s->lim.max_sentence_tokens = cfg->max_sentence_tokens;
    s->topts.token_tensor = *cfg->token_tensor ? cfg->token_tensor : NULL;
    s->topts.position_tensor = *cfg->position_tensor ? cfg->position_tensor
                                                     : NULL;
    s->topts.position_path = *cfg->position_path ? cfg->position_path : NULL;
    if (tokvec_positional_parse(cfg->positional, &s->topts.positional) < 0)
        s->topts.positional = TOKVEC_POS_AUTO;
    /* /v1/'s model name: the flag, the model directory's, the table's file */
    if (*cfg->served_model_name) {
        snprintf(s->model_name, sizeof s->model_name, "%s",
                 cfg->served_model_name);
    } else if (*cfg->model) {
        tokvec_model_default_name(cfg->model, s->model_name,
                                  sizeof s->model_name);
    } else {
        const char *slash = strrchr(cfg->table, '/');
        snprintf(s->model_name, sizeof s->model_name, "%s",
                 slash && slash[1] ? slash + 1 : cfg->table);
    }
}

int tv_server_start(const tv_config *cfg, tv_server **out, char *err,
                    size_t errlen)
{
    tv_server *s = tv_calloc(1, sizeof *s);
    int rc;
    *out = NULL;
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return TV_SERVER_E_NOMEM;
    }
    pthread_mutex_init(&s->table_lock, NULL);
    if (getrandom(&s->rid_seed, sizeof s->rid_seed, GRND_NONBLOCK) !=
        (ssize_t)sizeof s->rid_seed)
        s->rid_seed = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
    deadline_init(s);
    server_settings(s, cfg);
    s->started = time(NULL);

    rc = table_open(s, &s->current, err, errlen);
    if (rc < 0) {
        rc = rc == -ENOMEM ? TV_SERVER_E_NOMEM : TV_SERVER_E_INPUT;
        goto fail;
    }
    rc = *cfg->model ? 0 : tokenizer_open(s, err, errlen);
    if (rc < 0) {
        rc = rc == -ENOMEM ? TV_SERVER_E_NOMEM : TV_SERVER_E_INPUT;
        goto fail;
    }
    table_publish(s->current->t);
    rc = tv_origins_parse(cfg->cors_origin, &s->cors, err, errlen);
    if (rc < 0) {
        rc = rc == -ENOMEM ? TV_SERVER_E_NOMEM : TV_SERVER_E_INPUT;
        goto fail;
    }

    int threads = (int)cfg->threads;
    s->workers_why = "--threads";
    if (threads <= 0)
        threads = tv_cpus_available(&s->workers_why);
    s->workers = (unsigned)threads;
    if (tv_bufcache_new(&s->bufs) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = TV_SERVER_E_NOMEM;
        goto fail;
    }
    int prc = tv_pool_start(&s->pool, threads, (size_t)cfg->max_queue,
                            (size_t)cfg->max_inflight_bytes);
    if (prc < 0) {
        snprintf(err, errlen, "cannot start the worker pool: %s",
                 strerror(-prc));
        rc = prc == -ENOMEM ? TV_SERVER_E_NOMEM : TV_SERVER_E_SYSTEM;
        goto fail;
    }
    /* HTTP threads: as many as workers unless set; each gets a share of
     * max_connections, so never more threads than connections. */
    int64_t http = cfg->http_threads > 0 ? cfg->http_threads : threads;
    if (http > cfg->max_connections)
        http = cfg->max_connections;
    s->http_threads = (unsigned)http;

    if (cfg->port && openapi_build(s, (unsigned)cfg->port) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = TV_SERVER_E_NOMEM;
        goto fail;
    }
    rc = listen_start(s, err, errlen);
    if (rc < 0)
        goto fail;
    const union MHD_DaemonInfo *di =
        s->ntcp ? MHD_get_daemon_info(s->tcp[0], MHD_DAEMON_INFO_BIND_PORT)
                : NULL;
    if (!cfg->port && openapi_build(s, di ? di->port : 0) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = TV_SERVER_E_NOMEM;
        goto fail;
    }
    *out = s;
    return 0;
fail:
    tv_server_stop(s);
    return rc;
}

void tv_server_drain_begin(tv_server *s)
{
    if (atomic_exchange(&s->draining, 1))
        return;
    /* Close the listening socket: new connections are refused at once
     * (a health probe sees that as not ready); connections already open
     * keep being served, and there /ready answers 503 and new /embed work
     * 503 draining, each with Connection: close. */
    MHD_socket fd;
    for (unsigned i = 0; i < s->ntcp; i++) {
        fd = MHD_quiesce_daemon(s->tcp[i]);
        if (fd != MHD_INVALID_SOCKET)
            close(fd);
    }
    if (s->mhd_unix) {
        fd = MHD_quiesce_daemon(s->mhd_unix);
        if (fd != MHD_INVALID_SOCKET)
            close(fd);
        unlink(s->cfg->unix_socket); /* new clients: ENOENT at once */
        s->unix_bound = 0;
    }
}

size_t tv_server_busy(tv_server *s, size_t *jobs)
{
    size_t j = tv_pool_unfinished(s->pool);
    long r = atomic_load(&s->requests);
    if (jobs)
        *jobs = j;
    return r > 0 ? (size_t)r : 0;
}

void tv_server_stop(tv_server *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < s->ntcp; i++) /* sends what is queued, */
        MHD_stop_daemon(s->tcp[i]);        /* closes the rest */
    free(s->tcp);
    if (s->mhd_unix)
        MHD_stop_daemon(s->mhd_unix);
    if (s->unix_bound)
        unlink(s->cfg->unix_socket);
    deadline_fini(s);
    tv_pool_stop(s->pool);
    tv_bufcache_free(s->bufs);
    table_release(s->current);
    tokvec_tokenizer_close(s->tok);
    free(s->openapi);
    tv_origins_free(&s->cors);
    pthread_mutex_destroy(&s->table_lock);
    free(s);
}
