/* http.c -- the routes of the contract on libmicrohttpd (http.h).
 *
 * Threads: MHD runs N polling threads per listener (tv-http-0..N-1 for
 * TCP, tv-unix-0..N-1 for --unix-socket), each with its own epoll and its
 * own connections; a connection stays on the thread that accepted it.
 * Workers (tv-work-0..M-1, pool.h) build /embed replies; tv-reaper enforces
 * the request deadline and trims idle memory. Nothing per request runs on
 * a thread that exists once.
 *
 * A request's life: MHD calls handler() on the connection's HTTP thread:
 * first with the headers (route, method, auth and Content-Length are
 * checked here, so an oversized body is refused before it is read), then
 * with body pieces (appended up to max_body_bytes), then once more to
 * finish. Cheap routes answer at once. POST /embed is parsed and validated
 * on that thread, then becomes a job (pool.h): the connection is
 * suspended, a worker embeds and serializes into one buffer sized in
 * advance (binary bodies are written in place by tokvec_embed) and resumes
 * the connection itself; handler() then runs again on the HTTP thread and
 * hands that buffer to MHD as the response (no copy; freed by MHD through
 * free_response()). Two hand-offs in all (HTTP thread -> worker -> HTTP
 * thread), each timed in tokvec_job_phase_seconds_total. A job too small
 * to be worth them (small_job()) runs at once on the HTTP thread when no
 * job waits in the queue.
 *
 * The table: `current` is a refcounted holder (table_ref). The pointer
 * `current` is guarded by table_lock; `refs` is atomic. The server holds
 * one reference to the current table; each /embed job takes one when it is
 * created and gives it back when its response is freed (cheap routes hold
 * one only while they run). SIGHUP swaps `current` under table_lock and
 * drops the server's reference, so the old table is closed (unmapped) by
 * whoever drops its last reference -- after the last response made from it
 * is gone.
 *
 * Ownership: a req_ctx belongs to its connection's HTTP thread, except
 * while its job is queued or running: from tv_pool_push until embed_done()
 * the worker owns out/out_len/failed/t_* and nobody else touches the
 * context (the connection is suspended). The worker's MHD_resume_connection
 * hands it back (the pool's mutex and MHD's resume lock order the writes).
 * `draining` and `requests` are atomics; cfg, lim, topts never change
 * after start. Lock order: table_lock, then the pool's lock (never held
 * together today).
 *
 * Request deadline: MHD's own timeout counts inactivity only, so a client
 * sending a header byte every few seconds would keep its connection (and
 * one of max_connections) forever. Each connection therefore has a
 * conn_watch (MHD's socket context): from the moment it opens, or its
 * previous response is done, the next request -- headers and body -- must
 * arrive within 2 x request_timeout. (What we mean is request_timeout from
 * the request's first byte, which MHD does not show us; the idle time
 * before that byte is itself at most request_timeout, MHD's inactivity
 * limit, so no request that takes less than request_timeout is cut.) The
 * deadline is off from the moment an answer is queued or the whole request
 * is in. The reaper thread checks the watches a few times per timeout and
 * shuts down (shutdown(2), never close) the socket of a late one; MHD then
 * sees EOF and closes it on its own thread. The list is guarded by
 * watch_lock; `deadline_ms` is atomic (MHD's thread arms and disarms it,
 * the reaper reads it and takes it back to 0 when it cuts). MHD calls the
 * CLOSED notification before it closes the fd, and it unlinks under
 * watch_lock, so the reaper never shuts down a descriptor number that was
 * reused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_acked */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "pool.h"
#include "request.h"
#include "tokvec_embed.h"
#include "tokvec_table.h"

/* docs/openapi.json, compiled in by the Makefile (build/gen/openapi.c). */
extern const char tv_openapi_json[];
extern const unsigned long tv_openapi_len;

typedef struct table_ref {
    tokvec_table *t;
    atomic_int refs;
} table_ref;

/* One per connection (MHD's socket context); see "Request deadline". */
typedef struct conn_watch {
    struct conn_watch *prev, *next; /* guarded by tv_server.watch_lock */
    int fd;
    atomic_llong deadline_ms; /* CLOCK_MONOTONIC ms; 0 = not reading */
    atomic_int timed_out;     /* set by the reaper */
    unsigned char ip[17];     /* family byte + address, for the per-IP
                               * count; ip[0] == 0: not counted */
    unsigned unescapes;       /* this request's; see framing_unescaped() */
} conn_watch;

/* Open TCP connections of one client address (--max-connections-per-ip).
 * Kept here, not by MHD, because each HTTP thread is its own MHD daemon
 * and MHD counts per daemon. */
typedef struct ip_count {
    struct ip_count *next;
    unsigned char key[17];
    unsigned n;
} ip_count;

struct tv_server {
    const tv_config *cfg;
    struct MHD_Daemon **tcp;     /* TCP: one per HTTP thread, tv-http-N */
    unsigned ntcp;               /* daemons started */
    struct MHD_Daemon *mhd_unix; /* --unix-socket: tv-unix-0..N-1, or NULL */
    pthread_mutex_t ip_lock;     /* guards ip_buckets */
    struct ip_count *ip_buckets[256]; /* open connections per address */
    int unix_bound;              /* we created cfg->unix_socket: unlink it */
    tv_pool *pool;
    pthread_mutex_t watch_lock;
    pthread_cond_t reaper_wake;
    conn_watch watches; /* list head, guarded by watch_lock */
    int reaper_stop;    /* guarded by watch_lock */
    int reaper_started;
    pthread_t reaper;
    unsigned http_threads; /* per daemon: tv-http-N (and tv-unix-N) */
    pthread_mutex_t table_lock;
    table_ref *current;   /* guarded by table_lock */
    atomic_int draining;  /* set once by tv_server_drain_begin */
    atomic_long requests; /* req_ctx alive: begun, response not yet sent */
    atomic_size_t buffered; /* request body bytes held, all connections */
    int raw_framing;      /* libmicrohttpd 0.9.75: see framing_check() */
    tv_limits lim;
    tokvec_table_opts topts;
};

enum { ST_NEW, ST_BODY, ST_QUEUED, ST_DONE };

/* One per request; owned by MHD's connection (*con_cls), freed in
 * completed(). While a job runs, only the worker touches out/out_len. */
typedef struct req_ctx {
    tv_server *s;
    struct MHD_Connection *conn;
    conn_watch *watch; /* NULL if it could not be allocated */
    tv_route route;
    int state;
    struct timespec t0;
    char *body;
    size_t len, cap;
    int too_large;
    int too_busy;        /* max_buffered_bytes reached: 429 at the end */
    size_t held;         /* bytes of `buffered` this body holds */
    size_t expect;       /* Content-Length, 0 if none */
    int fd;              /* the client's socket (for the gone check) */
    int gone;            /* the client left before its job ran: 499 */
    unsigned long long acked0; /* TCP bytes acked when the reply was queued
                                * (large replies only: see queue()) */
    int acked_known;
    int status;
    uint64_t tokens, bytes;
    /* /embed job */
    tv_job job;
    table_ref *ref;
    tv_request req;
    tv_format fmt;
    int64_t dim;
    char *out;      /* from tv_pool_buf_get(out_cap) */
    size_t out_len, out_cap;
    size_t reserved; /* max_inflight_bytes held until the response owns it */
    int failed;
    long long t_push, t_start, t_end; /* ns, for tokvec_job_phase_* */
    int inline_job; /* ran on the HTTP thread: see small_job() */
    int uri_verdict; /* from uri_check(): URI_OK, URI_TOO_LONG, URI_NUL */
    int must_close;  /* answer with Connection: close (bad framing) */
    char method[8]; /* for the access log */
    char path[256]; /* for the access log (cut if longer) */
    size_t path_len; /* the whole path's length: the log marks a cut */
} req_ctx;

static unsigned long long bytes_acked(int fd);

/* --- request deadline ---------------------------------------------------- */

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long now_ms(void)
{
    return now_ns() / 1000000;
}

/* Idle (at most request_timeout) plus the request itself. */
static long long deadline_span_ms(const tv_server *s)
{
    double ms = 2 * s->cfg->request_timeout * 1e3;
    return ms < 1 ? 1 : (long long)ms;
}

/* MHD's thread: the connection waits for a request (on) or has one in
 * full (off). */
static void watch_arm(tv_server *s, conn_watch *w, int on)
{
    if (w)
        atomic_store(&w->deadline_ms, on ? now_ms() + deadline_span_ms(s)
                                         : 0);
}

/* MHD's thread: an answer of len bytes is queued. It must be sent at
 * min_send_rate at least, and is never cut before request_timeout: a
 * client that reads slowly cannot hold its reply (and the reply's share
 * of max_inflight_bytes) for longer. */
static void watch_send(tv_server *s, conn_watch *w, size_t len)
{
    double ms = s->cfg->request_timeout * 1e3,
           rate = (double)s->cfg->min_send_rate;
    if ((double)len / rate * 1e3 > ms)
        ms = (double)len / rate * 1e3;
    if (w)
        atomic_store(&w->deadline_ms, now_ms() + (long long)ms + 1);
}

/* --- connections per client address ------------------------------------- */

static unsigned ip_hash(const unsigned char *k)
{
    unsigned h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < 17; i++)
        h = (h ^ k[i]) * 16777619u;
    return h & 255;
}

/* A new TCP connection: counts it against its address; 0 if that address
 * already holds max_connections_per_ip (the connection is not counted and
 * must be closed). Unix-socket connections have no address: always 1. */
static int ip_take(tv_server *s, struct MHD_Connection *c, conn_watch *w)
{
    unsigned limit = (unsigned)s->cfg->max_connections_per_ip;
    const union MHD_ConnectionInfo *ci;
    if (!limit || !(ci = MHD_get_connection_info(
                        c, MHD_CONNECTION_INFO_CLIENT_ADDRESS)))
        return 1;
    const struct sockaddr *sa = ci->client_addr;
    unsigned char key[17] = {0};
    if (sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        key[0] = 6;
        memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    } else {
        return 1;
    }
    int ok = 1;
    pthread_mutex_lock(&s->ip_lock);
    ip_count **b = &s->ip_buckets[ip_hash(key)], *e = *b;
    while (e && memcmp(e->key, key, sizeof key))
        e = e->next;
    if (!e && (e = calloc(1, sizeof *e)) != NULL) {
        memcpy(e->key, key, sizeof key);
        e->next = *b;
        *b = e;
    }
    if (!e || e->n >= limit) {
        ok = 0; /* out of memory counts as over the limit */
    } else {
        e->n++;
        memcpy(w->ip, key, sizeof key);
    }
    pthread_mutex_unlock(&s->ip_lock);
    return ok;
}

static void ip_give(tv_server *s, conn_watch *w)
{
    if (!w->ip[0])
        return;
    pthread_mutex_lock(&s->ip_lock);
    ip_count **b = &s->ip_buckets[ip_hash(w->ip)];
    while (*b && memcmp((*b)->key, w->ip, sizeof w->ip))
        b = &(*b)->next;
    if (*b && --(*b)->n == 0) {
        ip_count *e = *b;
        *b = e->next;
        free(e);
    }
    pthread_mutex_unlock(&s->ip_lock);
}

/* MHD: a connection opened or is about to be closed (MHD's thread). */
static void on_connection(void *cls, struct MHD_Connection *c,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    tv_server *s = cls;
    conn_watch *w = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci)
            return; /* unwatched: MHD's inactivity timeout still applies */
        if (!(w = calloc(1, sizeof *w))) {
            if (s->cfg->max_connections_per_ip) /* cannot be counted */
                shutdown(ci->connect_fd, SHUT_RDWR);
            return;
        }
        w->fd = ci->connect_fd;
        watch_arm(s, w, 1);
        if (!ip_take(s, c, w))
            shutdown(w->fd, SHUT_RDWR); /* over the limit: MHD closes it */
        pthread_mutex_lock(&s->watch_lock);
        w->prev = &s->watches;
        w->next = s->watches.next;
        w->next->prev = w;
        s->watches.next = w;
        pthread_mutex_unlock(&s->watch_lock);
        *socket_context = w;
    } else if (w) {
        ip_give(s, w);
        pthread_mutex_lock(&s->watch_lock);
        w->prev->next = w->next;
        w->next->prev = w->prev;
        pthread_mutex_unlock(&s->watch_lock);
        free(w);
        *socket_context = NULL;
    }
}

/* The reaper thread (tv-reaper): a few times per request_timeout (10 ms ..
 * 0.5 s), shuts down the sockets whose deadline has passed; twice a second
 * it gives idle cached memory back (tv_pool_trim). */
static void *reaper_main(void *arg)
{
    tv_server *s = arg;
    long long period = deadline_span_ms(s) / 8, last_trim = now_ms();
    period = period < 10 ? 10 : period > 500 ? 500 : period;
    pthread_mutex_lock(&s->watch_lock);
    while (!s->reaper_stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)(period / 1000);
        until.tv_nsec += (long)(period % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->reaper_wake, &s->watch_lock, &until);
        long long now = now_ms();
        int cut = 0;
        for (conn_watch *w = s->watches.next; w != &s->watches;
             w = w->next) {
            long long d = atomic_load(&w->deadline_ms);
            if (d && now >= d &&
                atomic_compare_exchange_strong(&w->deadline_ms, &d, 0)) {
                atomic_store(&w->timed_out, 1);
                shutdown(w->fd, SHUT_RDWR);
                cut++;
            }
        }
        if (cut) { /* not under watch_lock: a slow stderr must not stall
                    * MHD's thread on it */
            pthread_mutex_unlock(&s->watch_lock);
            tv_log(TV_LOG_INFO, "closed %d connection%s that did not send "
                   "a whole request within 2 x request_timeout (%gs)", cut,
                   cut == 1 ? "" : "s", s->cfg->request_timeout);
            pthread_mutex_lock(&s->watch_lock);
        }
        if (s->pool) { /* not under watch_lock: done() resumes */
            pthread_mutex_unlock(&s->watch_lock);
            tv_pool_expire(s->pool, now,
                           (long long)(s->cfg->max_queue_wait * 1e3));
            pthread_mutex_lock(&s->watch_lock);
        }
        if (now - last_trim >= 500) { /* not under watch_lock either:
                                       * munmap and malloc_trim take time */
            pthread_mutex_unlock(&s->watch_lock);
            tv_pool_trim(s->pool, now);
            last_trim = now;
            pthread_mutex_lock(&s->watch_lock);
        }
    }
    pthread_mutex_unlock(&s->watch_lock);
    return NULL;
}

/* --- table references ---------------------------------------------------- */

static table_ref *ref_acquire(tv_server *s)
{
    pthread_mutex_lock(&s->table_lock);
    table_ref *r = s->current;
    atomic_fetch_add(&r->refs, 1);
    pthread_mutex_unlock(&s->table_lock);
    return r;
}

static void ref_release(table_ref *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
        tokvec_table_close(r->t);
        free(r);
    }
}

static int open_table(tv_server *s, table_ref **out, char *err, size_t len)
{
    tokvec_table_opts o = s->topts;
    o.errbuf = err;
    o.errlen = len;
    tokvec_table *t;
    *out = NULL;
    int rc = tokvec_table_open(s->cfg->table, &o, &t);
    if (rc < 0)
        return rc;
    table_ref *r = malloc(sizeof *r);
    if (!r) {
        tokvec_table_close(t);
        snprintf(err, len, "out of memory");
        return -1;
    }
    r->t = t;
    atomic_init(&r->refs, 1); /* the server's own reference */
    *out = r;
    return 0;
}

static void publish_table(const tokvec_table *t)
{
    const tokvec_table_info *in = tokvec_table_get_info(t);
    tv_metrics_set_table(in->vocab_size, in->dim,
                         tokvec_dtype_numpy_name(in->dtype),
                         tokvec_positional_name(in->positional));
}

/* --- responses ----------------------------------------------------------- */

static int cors_on(const tv_server *s)
{
    return s->cfg->cors_origin && *s->cfg->cors_origin;
}

static void common_headers(req_ctx *x, struct MHD_Response *r)
{
    if (cors_on(x->s)) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin",
                                x->s->cfg->cors_origin);
        if (strcmp(x->s->cfg->cors_origin, "*"))
            MHD_add_response_header(r, "Vary", "Origin");
    }
    /* While draining, tell keep-alive clients to go elsewhere; after bad
     * framing, the rest of what the client sent is not a request. */
    if (atomic_load(&x->s->draining) || x->must_close)
        MHD_add_response_header(r, "Connection", "close");
}

/* The methods a route answers (the Allow header). */
static const char *allowed(const req_ctx *x)
{
    int cors = cors_on(x->s);
    if (x->route == TV_ROUTE_EMBED)
        return cors ? "POST, OPTIONS" : "POST";
    return cors ? "GET, HEAD, OPTIONS" : "GET, HEAD";
}

static enum MHD_Result queue(req_ctx *x, int status, struct MHD_Response *r,
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
        x->acked0 = bytes_acked(x->fd);
        x->acked_known = 1;
    }
    watch_send(x->s, x->watch, len);
    enum MHD_Result ok = MHD_queue_response(x->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result reply_copy(req_ctx *x, int status, const char *ctype,
                                  const char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, MHD_RESPMEM_MUST_COPY);
    return queue(x, status, r, ctype, len);
}

static enum MHD_Result reply_error(req_ctx *x, const tv_error *e)
{
    char body[TV_ERROR_BODY_MAX];
    size_t n = tv_error_body(e, body);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        n, body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (e->status == 429 || e->status == 503)
        MHD_add_response_header(r, "Retry-After", "1");
    if (e->status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (e->status == 405)
        MHD_add_response_header(r, "Allow", allowed(x));
    return queue(x, e->status, r, "application/json", n);
}

static enum MHD_Result fail(req_ctx *x, int status, const char *type,
                            const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum MHD_Result fail(req_ctx *x, int status, const char *type,
                            const char *fmt, ...)
{
    tv_error e = {.status = status, .type = type};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    return reply_error(x, &e);
}

/* What an /embed response owns until MHD is done with it (any MHD
 * thread, once): the buffer, its reserved bytes and the table reference
 * the request took when its job was created. */
typedef struct out_hold {
    tv_pool *pool;
    size_t reserved;
    char *buf;
    size_t cap; /* as given to tv_pool_buf_get */
    table_ref *ref;
} out_hold;

static void free_response(void *cls)
{
    out_hold *h = cls;
    tv_pool_buf_free(h->pool, h->buf, h->cap);
    tv_pool_release(h->pool, h->reserved);
    ref_release(h->ref);
    free(h);
}

/* --- request bodies: the max_buffered_bytes budget ---------------------- */

/* Grows the body's share of the server-wide budget to `want` bytes. 0, or
 * -1 when the budget would be exceeded (nothing taken). Any HTTP thread. */
static int body_reserve(req_ctx *x, size_t want)
{
    tv_server *s = x->s;
    if (want <= x->held)
        return 0;
    size_t more = want - x->held, max = (size_t)s->cfg->max_buffered_bytes;
    size_t cur = atomic_load(&s->buffered);
    do {
        if (cur > max || more > max - cur)
            return -1;
    } while (!atomic_compare_exchange_weak(&s->buffered, &cur, cur + more));
    x->held = want;
    return 0;
}

/* Frees the body and gives its share back (after parsing, or at the end). */
static void body_drop(req_ctx *x)
{
    free(x->body);
    x->body = NULL;
    x->len = x->cap = 0;
    atomic_fetch_sub(&x->s->buffered, x->held);
    x->held = 0;
}

/* TCP bytes the peer has acknowledged on this socket so far (headers
 * included); 0 where unknown (a Unix socket). */
static unsigned long long bytes_acked(int fd)
{
    struct tcp_info ti;
    socklen_t n = sizeof ti;
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &n) < 0 ||
        n < offsetof(struct tcp_info, tcpi_bytes_acked) +
                sizeof ti.tcpi_bytes_acked)
        return 0;
    return ti.tcpi_bytes_acked;
}

/* The client has gone: it closed or shut down its side (a reply could no
 * longer be read), or the socket failed. Any thread; never blocks. */
static int client_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&p, 1, 0) == 1 &&
           (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* --- cheap routes ---------------------------------------------------------- */

static enum MHD_Result route_info(req_ctx *x)
{
    const tv_config *c = x->s->cfg;
    table_ref *ref = ref_acquire(x->s);
    const tokvec_table_info *in = tokvec_table_get_info(ref->t);
    json_t *j = json_pack(
        "{s:s, s:s, s:I, s:I, s:I, s:s, s:s, s:{s:s, s:s?}, s:{s:I, s:I, "
        "s:I, s:I, s:I, s:I}}",
        "name", "tokvec", "version", TOKVEC_VERSION, "vocab_size",
        (json_int_t)in->vocab_size, "dim", (json_int_t)in->dim,
        "context_length", (json_int_t)in->context_length, "dtype",
        tokvec_dtype_numpy_name(in->dtype), "positional",
        tokvec_positional_name(in->positional), "tensors", "token",
        in->token_tensor, "position", in->position_tensor, "limits",
        "max_body_bytes", (json_int_t)c->max_body_bytes, "max_tokens",
        (json_int_t)c->max_tokens, "max_batch", (json_int_t)c->max_batch,
        "max_queue", (json_int_t)c->max_queue, "max_connections",
        (json_int_t)c->max_connections, "max_inflight_bytes",
        (json_int_t)c->max_inflight_bytes);
    ref_release(ref);
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!text)
        return fail(x, 500, "internal", "out of memory");
    size_t n = strlen(text);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
    return queue(x, 200, r, "application/json", n);
}

static enum MHD_Result route_token(req_ctx *x, const char *idtext)
{
    /* Strict decimal: an optional '-', then 1 to 18 digits (no '+',
     * spaces or hex); the path must end there. */
    int neg = idtext[0] == '-';
    const char *d = idtext + neg;
    size_t n = strlen(d);
    int64_t id = 0;
    if (n == 0 || n > 18)
        return fail(x, 400, "invalid_request",
                    "token id must be a decimal integer of at most 18 "
                    "digits");
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9')
            return fail(x, 400, "invalid_request",
                        "token id must be a decimal integer");
        id = id * 10 + (d[i] - '0');
    }
    if (neg)
        id = -id;
    table_ref *ref = ref_acquire(x->s);
    const tokvec_table_info *in = tokvec_table_get_info(ref->t);
    struct MHD_Response *r = NULL;
    enum MHD_Result ret;
    float *vec = NULL;
    char *buf = NULL;
    size_t len = 0;
    tokvec_row row;
    if (tokvec_table_token_row(ref->t, id, &row) < 0) {
        ret = fail(x, 422, "token_out_of_range",
                   "token id %" PRId64 " is out of range [0, %" PRId64 ")",
                   id, in->vocab_size);
        goto out;
    }
    vec = malloc((size_t)row.dim * sizeof *vec);
    buf = malloc(tv_token_json_bound(row.dim));
    if (vec && buf) {
        tokvec_row_to_f32(&row, vec);
        len = tv_token_json(buf, id, vec, row.dim);
        r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
    }
    if (!r) {
        free(buf);
        ret = fail(x, 500, "internal", "out of memory");
        goto out;
    }
    x->tokens = 1;
    ret = queue(x, 200, r, "application/json", len);
out:
    free(vec);
    ref_release(ref);
    return ret;
}

static enum MHD_Result route_metrics(req_ctx *x)
{
    size_t n;
    char *text = tv_metrics_render(&n);
    if (!text)
        return fail(x, 500, "internal", "out of memory");
    struct MHD_Response *r =
        MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
    return queue(x, 200, r, "text/plain; version=0.0.4", n);
}

/* --- /embed ------------------------------------------------------------------ */

/* Worker thread: embed into the response buffer and serialize. */
static void embed_compute(req_ctx *x);
static void embed_work(tv_job *job)
{
    req_ctx *x = (req_ctx *)((char *)job - offsetof(req_ctx, job));
    /* A client that left while its job waited gets nothing: computing
     * its reply would only delay everyone behind it. (Inline jobs run
     * right after their request arrived: not checked.) */
    if (!x->inline_job && client_gone(x->fd)) {
        x->gone = 1;
        x->t_start = x->t_end = now_ns();
        return;
    }
    embed_compute(x);
    x->t_end = now_ns();
}

static void embed_compute(req_ctx *x)
{
    const tv_request *q = &x->req;
    unsigned flags = q->positions ? 0 : TOKVEC_EMBED_NO_POSITIONS;
    const tokvec_table *t = x->ref->t;
    int64_t B = q->batch, S = q->seq, D = x->dim;

    x->t_start = now_ns();
    if (x->fmt.kind != TV_OUT_JSON) {
        if (x->fmt.dtype == TOKVEC_F16)
            flags |= TOKVEC_EMBED_OUT_F16;
        else if (x->fmt.dtype == TOKVEC_BF16)
            flags |= TOKVEC_EMBED_OUT_BF16;
        size_t hdr = 0, n = tokvec_embed_size(t, B, S, flags);
        char npy[TV_NPY_HEADER_MAX];
        if (x->fmt.kind == TV_OUT_NPY)
            hdr = tv_npy_header(npy, x->fmt.dtype, B, S, D);
        /* 64-byte aligned so the float32 rows are aligned after the npy
         * header (a multiple of 64) as well. */
        x->out_cap = hdr + n;
        x->out = tv_pool_buf_get(x->s->pool, x->out_cap);
        if (!x->out) {
            x->failed = 1;
            return;
        }
        memcpy(x->out, npy, hdr);
        if (tokvec_embed(t, q->ids, B, S, q->start_position, flags,
                         x->out + hdr) < 0) {
            x->failed = 1;
            return;
        }
        x->out_len = hdr + n;
        return;
    }
    size_t n = tokvec_embed_size(t, B, S, flags);
    float *vec = tv_pool_buf_get(x->s->pool, n);
    x->out_cap = tv_embed_json_bound(B, S, D, q->base64);
    x->out = tv_pool_buf_get(x->s->pool, x->out_cap);
    if (!vec || !x->out ||
        tokvec_embed(t, q->ids, B, S, q->start_position, flags, vec) < 0) {
        tv_pool_buf_free(x->s->pool, vec, n);
        x->failed = 1;
        return;
    }
    x->out_len = tv_embed_json(x->out, vec, B, S, D, q->base64);
    tv_pool_buf_free(x->s->pool, vec, n);
}

/* The same worker, right after: the body is built; let the connection's
 * HTTP thread call handler() again. From MHD_resume_connection on, the
 * worker must not touch the context. */
static void embed_done(tv_job *job)
{
    req_ctx *x = (req_ctx *)((char *)job - offsetof(req_ctx, job));
    MHD_resume_connection(x->conn);
}

/* MHD's thread, after the job: hands the buffer to MHD (no copy). From
 * here the response owns the buffer, the reserved bytes and the table
 * reference (free_response gives them back); on failure they go at once. */
static enum MHD_Result embed_reply(req_ctx *x)
{
    struct MHD_Response *r = NULL;
    out_hold *h = NULL;
    if (x->job.expired) { /* waited past max_queue_wait: never started */
        x->reserved = 0;      /* so its bytes were never taken */
        return fail(x, 503, "overloaded",
                    "the request waited max_queue_wait (%gs) in the queue; "
                    "retry", x->s->cfg->max_queue_wait);
    }
    if (x->gone) { /* no reply: close the connection (logged as 499) */
        tv_pool_release(x->s->pool, x->reserved);
        x->reserved = 0;
        x->status = 499;
        x->state = ST_DONE;
        return MHD_NO;
    }
    if (x->inline_job)
        tv_metrics_job(1, 0, (double)(x->t_end - x->t_start) * 1e-9, 0);
    else
        tv_metrics_job(0, (double)(x->t_start - x->t_push) * 1e-9,
                       (double)(x->t_end - x->t_start) * 1e-9,
                       (double)(now_ns() - x->t_end) * 1e-9);
    if (x->failed || !x->out)
        goto bad;
    /* Reserved: a bound (JSON: ~25 bytes a float); held from now on: the
     * reply's real size. Give the rest back, or slow readers of large JSON
     * replies would pin twice what they hold. */
    if (x->out_len < x->reserved) {
        tv_pool_release(x->s->pool, x->reserved - x->out_len);
        x->reserved = x->out_len;
    }
    h = malloc(sizeof *h);
    if (!h)
        goto bad;
    *h = (out_hold){.pool = x->s->pool, .reserved = x->reserved,
                    .buf = x->out, .cap = x->out_cap, .ref = x->ref};
    r = MHD_create_response_from_buffer_with_free_callback_cls(
        x->out_len, h->buf, free_response, h);
    if (!r)
        goto bad;
    x->out = NULL;
    x->ref = NULL;
    x->reserved = 0; /* the response's now: free_response gives it back */
    if (x->fmt.kind != TV_OUT_JSON) {
        char shape[96];
        snprintf(shape, sizeof shape, "%" PRId64 ",%" PRId64 ",%" PRId64,
                 x->req.batch, x->req.seq, x->dim);
        MHD_add_response_header(r, "X-Tokvec-Shape", shape);
        MHD_add_response_header(r, "X-Tokvec-Dtype",
                                tokvec_dtype_numpy_name(x->fmt.dtype));
    }
    return queue(x, 200, r, tv_content_type(x->fmt.kind), x->out_len);
bad:
    free(h);
    tv_pool_buf_free(x->s->pool, x->out, x->out_cap);
    x->out = NULL; /* the table reference goes in completed() */
    tv_pool_release(x->s->pool, x->reserved);
    x->reserved = 0;
    return fail(x, 500, "internal", "could not build the response");
}

typedef struct {
    tv_request *req;
    int json;
    const char *dtype;
    tv_error err;
    int bad;
} query_state;

static enum MHD_Result on_query(void *cls, enum MHD_ValueKind kind,
                                const char *key, const char *value)
{
    query_state *q = cls;
    (void)kind;
    if (!strcmp(key, "dtype")) {
        q->dtype = value;
        return MHD_YES;
    }
    if (q->json) {
        tv_error_set(&q->err, 400, "invalid_request",
                     "JSON requests take options in the body; only ?dtype= "
                     "goes in the query");
        q->bad = 1;
        return MHD_NO;
    }
    if (tv_request_set_option(q->req, key, value, &q->err) < 0) {
        q->bad = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

/* Small enough to run at once on the HTTP thread that parsed it: the two
 * hand-offs to a worker and back cost ~10-40 us of wake-ups (measured with
 * tokvec_job_phase_seconds_total at one connection: queue 27 us, resume
 * 12 us, for 0.35 us of work on a 1x1 request), more than the work itself.
 * The bounds keep the work to a few tens of microseconds, so the thread's
 * other connections barely notice: binary replies of at most 256 KiB (a
 * gather at memory speed), JSON of at most 1024 floats (the formatter does
 * ~30 M floats/s), base64 of at most 16 Ki floats. */
#define INLINE_BINARY_BYTES ((size_t)256 << 10)
#define INLINE_JSON_FLOATS 1024
#define INLINE_BASE64_FLOATS 16384
static int small_job(const req_ctx *x)
{
    int64_t floats = x->req.batch * x->req.seq * x->dim;
    if (x->fmt.kind != TV_OUT_JSON)
        return x->reserved <= INLINE_BINARY_BYTES;
    return floats <= (x->req.base64 ? INLINE_BASE64_FLOATS
                                     : INLINE_JSON_FLOATS);
}

static enum MHD_Result route_embed(req_ctx *x)
{
    struct MHD_Connection *c = x->conn;
    tv_server *s = x->s;
    tv_error e;

    if (atomic_load(&s->draining))
        return fail(x, 503, "draining", "the server is shutting down");
    if (x->too_large)
        return fail(x, 413, "payload_too_large",
                    "body is over max_body_bytes %" PRId64,
                    s->cfg->max_body_bytes);
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 "Content-Type");
    tv_body_kind kind = tv_body_kind_of(ct);
    if (kind == TV_BODY_UNSUPPORTED)
        return fail(x, 415, "unsupported_media_type",
                    "Content-Type must be application/json or "
                    "application/octet-stream");
    int rc = kind == TV_BODY_JSON
                 ? tv_request_parse_json(x->body ? x->body : "", x->len,
                                         &s->lim, &x->req, &e)
                 : tv_request_parse_binary(
                       x->body, x->len,
                       MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   "X-Tokvec-Shape"),
                       &s->lim, &x->req, &e);
    body_drop(x); /* parsed: the ids are in x->req */
    if (rc < 0)
        return reply_error(x, &e);
    query_state qs = {.req = &x->req, .json = kind == TV_BODY_JSON};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_query, &qs);
    if (qs.bad)
        return reply_error(x, &qs.err);
    if (tv_negotiate(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 "Accept"),
                     qs.dtype, &x->fmt, &e) < 0)
        return reply_error(x, &e);

    x->ref = ref_acquire(s);
    if (tv_request_check(&x->req, x->ref->t, &e) < 0) {
        ref_release(x->ref);
        x->ref = NULL;
        return reply_error(x, &e);
    }
    const tokvec_table_info *in = tokvec_table_get_info(x->ref->t);
    x->dim = in->dim;
    x->tokens = (uint64_t)(x->req.batch * x->req.seq);
    size_t raw = tokvec_embed_size(x->ref->t, x->req.batch, x->req.seq, 0);
    size_t json = x->fmt.kind == TV_OUT_JSON
                      ? tv_embed_json_bound(x->req.batch, x->req.seq, x->dim,
                                            x->req.base64)
                      : 0;
    if (raw == 0 || (x->fmt.kind == TV_OUT_JSON && json == 0) ||
        raw > SIZE_MAX - json - TV_NPY_HEADER_MAX - 64) {
        ref_release(x->ref);
        x->ref = NULL;
        return fail(x, 413, "payload_too_large",
                    "the response would be too large");
    }
    if (x->fmt.kind == TV_OUT_JSON)
        x->reserved = json + raw;
    else
        x->reserved = raw + TV_NPY_HEADER_MAX;
    if (small_job(x) && tv_pool_try_inline(s->pool, x->reserved)) {
        x->inline_job = 1;
        embed_work(&x->job);
        tv_pool_inline_done(s->pool);
        return embed_reply(x);
    }
    x->job.work = embed_work;
    x->job.done = embed_done;
    x->job.bytes = x->reserved;
    if (tv_pool_reserve(s->pool) < 0) {
        ref_release(x->ref);
        x->ref = NULL;
        return fail(x, 429, "overloaded",
                    "the work queue is full (%" PRId64 " jobs); retry",
                    s->cfg->max_queue);
    }
    x->state = ST_QUEUED;
    MHD_suspend_connection(c);
    x->t_push = now_ns();
    tv_pool_push(s->pool, &x->job);
    return MHD_YES;
}

/* --- dispatch ------------------------------------------------------------ */

static tv_route route_of(const char *url)
{
    if (!strcmp(url, "/embed"))
        return TV_ROUTE_EMBED;
    if (!strncmp(url, "/tokens/", 8))
        return TV_ROUTE_TOKENS;
    if (!strcmp(url, "/info"))
        return TV_ROUTE_INFO;
    if (!strcmp(url, "/health"))
        return TV_ROUTE_HEALTH;
    if (!strcmp(url, "/ready"))
        return TV_ROUTE_READY;
    if (!strcmp(url, "/metrics"))
        return TV_ROUTE_METRICS;
    if (!strcmp(url, "/openapi.json"))
        return TV_ROUTE_OPENAPI;
    return TV_ROUTE_OTHER;
}

/* Constant-time comparison of the Authorization header with the key. */
static int authorized(const tv_server *s, struct MHD_Connection *c)
{
    const char *key = s->cfg->api_key;
    if (!key || !*key)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                "Authorization");
    if (!h || strncmp(h, "Bearer ", 7))
        return 0;
    h += 7;
    size_t hl = strlen(h), kl = strlen(key);
    unsigned char diff = (unsigned char)(hl != kl);
    for (size_t i = 0; i < kl; i++)
        diff |= (unsigned char)(key[i] ^ (i < hl ? h[i] : 0));
    return diff == 0;
}

/* --- request framing (issue 15, findings 4 and 5) ------------------------ */

/* libmicrohttpd 0.9.75 stalls on some framing and accepts framing that
 * RFC 9112 rejects (request-smuggling primitives behind a proxy). What MHD
 * does with each case, and what tokvec does about it, is listed in
 * tests/e2e/test_hostile.py (class Framing). Here:
 *
 * - The query. MHD stores each query parameter in the connection's memory
 *   pool (32 KiB) while it parses the request line; when the pool runs out
 *   there (~450 short parameters, far fewer in a long URI) it neither
 *   answers nor calls the handler, and the connection hangs until the
 *   request deadline. Only the URI log callback runs before that parse:
 *   uri_check() refuses a URI of more than URI_MAX bytes or with more than
 *   QUERY_PARAMS_MAX parameters, cuts its query so that MHD stores none,
 *   and the first call answers 414. A query hidden behind a NUL byte that
 *   uri_check cannot safely look past is caught by framing_unescaped().
 * - The header fields, at the first call (framing_check()), before MHD
 *   reads any body: a Transfer-Encoding other than "chunked" (MHD would
 *   read the body until the client closes) is 501; two Hosts, none in
 *   HTTP/1.1, two Content-Lengths, Content-Length with Transfer-Encoding,
 *   Transfer-Encoding in HTTP/1.0, a field name that is not a token
 *   (whitespace before the colon, a leading space) and a CR in a value
 *   are 400. MHD keeps the raw header block in place (CRLF and the colon
 *   turned into NULs, `method` at its start, header_size long), so with
 *   0.9.75 (raw_framing) we also read what MHD hides: an obs-fold line
 *   (MHD moves the name elsewhere in its pool and appends the continuation
 *   to the name) and a NUL inside a value (MHD cuts the value there).
 *
 * Out of sight here (a proxy's job; nginx handles each): the chunk lines
 * of a chunked body (MHD parses them, bare LF accepted, and hands over
 * only the data); a NUL as the last byte of a value ended by a bare LF
 * (it leaves the same NULs as a CRLF; it hides nothing). Accepted on
 * purpose, as nginx does: bare-LF line ends in the header block (RFC 9112
 * allows it) and control bytes other than CR and NUL in values.
 *
 * Every such answer has Connection: close and MHD closes the connection,
 * so whatever the client sent after it is never read as a request. */

#define URI_MAX 8192         /* bytes, as nginx's large_client_header_buffers */
#define QUERY_PARAMS_MAX 64  /* a valid request uses a handful */

enum { URI_OK, URI_TOO_LONG, URI_NUL };
static char uri_marks[3]; /* &uri_marks[v]: uri_check's verdict v as the
                           * request's first *con_cls (never URI_OK) */

static int uri_mark(const void *p)
{
    return p == &uri_marks[URI_TOO_LONG] || p == &uri_marks[URI_NUL];
}

/* Is p a NUL that MHD put where the space before "HTTP/d.d" was? Reading
 * p[1..8] is safe either way: if p is not that NUL, the request line goes
 * on past it to at least " HTTP/d.d" (MHD has checked the version). */
static int uri_end(const char *p)
{
    return !p[0] && !memcmp(p + 1, "HTTP/", 5) && p[6] >= '0' &&
           p[6] <= '9' && p[7] == '.' && p[8] >= '0' && p[8] <= '9';
}

/* MHD: the URI log callback, with the request line's URI before MHD parses
 * its query (and before the handler's first call). Returns the request's
 * first *con_cls: NULL, or a mark that makes the first call refuse it. */
static void *uri_check(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_watch *w = ci ? ci->socket_context : NULL;
    if (w)
        w->unescapes = 0;
    if (!uri)
        return NULL;
    /* The URI runs to the NUL MHD put before the version; a NUL before
     * that one was in the request. Scan up to the first NUL that could be
     * the end: past it the buffer is MHD's and may end. */
    const char *p = uri, *q = NULL;
    size_t params = 0;
    int nul = 0;
    for (; !uri_end(p); p++) {
        if (!*p)
            nul = 1;
        else if (*p == '?' && !q)
            q = p, params = 1;
        else if (*p == '&' && q)
            params++;
    }
    if (!nul && (size_t)(p - uri) <= URI_MAX && params <= QUERY_PARAMS_MAX)
        return NULL;
    /* MHD parses the query from the first '?' to the end right after this
     * call, in this same writable buffer (it writes NULs into it itself):
     * end the query at once, and MHD stores no parameter. */
    if (q)
        ((char *)q)[1] = '\0';
    return &uri_marks[nul ? URI_NUL : URI_TOO_LONG];
}

/* MHD's unescape callback runs twice per query parameter (name, value)
 * and once for the path. More than that for QUERY_PARAMS_MAX means a query
 * uri_check() could not find (a NUL byte, then what looks like the
 * version, inside the URI): MHD is about to run out of pool and hang, so
 * shut the socket down (MHD then closes it at once, with no answer). */
static void framing_unescaped(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_watch *w = ci ? ci->socket_context : NULL;
    if (w && ++w->unescapes == 2 * QUERY_PARAMS_MAX + 2) {
        shutdown(w->fd, SHUT_RDWR);
        tv_log(TV_LOG_INFO, "closed a connection whose request line hid "
               "more than %d query parameters behind a NUL byte",
               QUERY_PARAMS_MAX);
    }
}

typedef struct {
    const char *lo, *hi; /* the raw header block (raw_framing) */
    const char *end;     /* where the previous line's text ended */
    int raw;
    unsigned hosts, lengths, encodings;
    const char *te;      /* the first Transfer-Encoding value */
    const char *bad;     /* why the request is refused (400), or NULL */
} framing_scan;

/* [from, to): the end of one line, or (lines 2) of the last header line
 * and the empty line. MHD turned each CRLF or LF there into NULs; anything
 * else was in the request behind a NUL in the line (MHD cut it there). */
static int line_end_ok(const char *from, const char *to, size_t lines)
{
    uintptr_t a = (uintptr_t)from, b = (uintptr_t)to;
    if (b < a + lines || b > a + 2 * lines)
        return 0;
    for (; from < to; from++)
        if (*from)
            return 0;
    return 1;
}

static int tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static enum MHD_Result framing_field(void *cls, enum MHD_ValueKind kind,
                                     const char *key, size_t klen,
                                     const char *val, size_t vlen)
{
    framing_scan *f = cls;
    (void)kind;
    if (f->raw) {
        uintptr_t k = (uintptr_t)key, v = (uintptr_t)val;
        if (!val || k < (uintptr_t)f->lo || v < k ||
            v + vlen > (uintptr_t)f->hi) {
            f->bad = "a header line continued on the next (obs-fold)";
            return MHD_NO;
        }
        if (!line_end_ok(f->end, key, 1)) {
            f->bad = "a NUL byte in a header line";
            return MHD_NO;
        }
        f->end = val + vlen;
    }
    if (!klen) {
        f->bad = "a header field with an empty name";
        return MHD_NO;
    }
    for (size_t i = 0; i < klen; i++)
        if (!tchar((unsigned char)key[i])) {
            f->bad = "a header field name with whitespace or another byte "
                     "that is not allowed (before the colon, or a line "
                     "starting with whitespace)";
            return MHD_NO;
        }
    if (val && memchr(val, '\r', vlen)) {
        f->bad = "a CR byte in a header value";
        return MHD_NO;
    }
    if (!strcasecmp(key, "Host"))
        f->hosts++;
    else if (!strcasecmp(key, "Content-Length"))
        f->lengths++;
    else if (!strcasecmp(key, "Transfer-Encoding") && !f->encodings++)
        f->te = val;
    return MHD_YES;
}

/* The first call: 0 if the request's framing is fine, else -1 with the
 * answer in e (the connection is then closed after it). */
static int framing_check(req_ctx *x, const char *method, const char *version,
                         tv_error *e)
{
    struct MHD_Connection *c = x->conn;
    int http10 = !strcmp(version, "HTTP/1.0");
    if (x->uri_verdict == URI_TOO_LONG)
        return tv_error_set(e, 414, "invalid_request",
                            "the request URI is over %d bytes or has more "
                            "than %d query parameters", URI_MAX,
                            QUERY_PARAMS_MAX);
    if (x->uri_verdict == URI_NUL)
        return tv_error_set(e, 400, "invalid_request",
                            "a NUL byte in the request line");
    framing_scan f = {.raw = x->s->raw_framing};
    if (f.raw) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
            c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        f.lo = method;
        f.hi = ci ? method + ci->header_size : method;
        f.end = version + strlen(version);
        f.raw = ci && (uintptr_t)f.end <= (uintptr_t)f.hi;
    }
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, framing_field, &f);
    if (!f.bad && f.raw && !line_end_ok(f.end, f.hi, 2))
        f.bad = "a NUL byte in a header line";
    if (f.bad)
        return tv_error_set(e, 400, "invalid_request", "bad framing: %s",
                            f.bad);
    if (f.hosts > 1 || (!f.hosts && !http10))
        return tv_error_set(e, 400, "invalid_request",
                            "%s", f.hosts ? "more than one Host header"
                                          : "an HTTP/1.1 request without "
                                            "Host");
    if (f.lengths > 1)
        return tv_error_set(e, 400, "invalid_request",
                            "more than one Content-Length header");
    if (!f.encodings)
        return 0;
    if (http10)
        return tv_error_set(e, 400, "invalid_request",
                            "Transfer-Encoding in an HTTP/1.0 request");
    if (f.lengths)
        return tv_error_set(e, 400, "invalid_request",
                            "both Content-Length and Transfer-Encoding");
    if (f.encodings > 1 || strcasecmp(f.te ? f.te : "", "chunked"))
        return tv_error_set(e, 501, "invalid_request",
                            "Transfer-Encoding must be exactly \"chunked\" "
                            "(the only coding supported)");
    return 0;
}

static enum MHD_Result first_call(req_ctx *x, const char *url,
                                  const char *method)
{
    tv_server *s = x->s;
    int post = !strcmp(method, "POST");
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

    if (!strcmp(method, "OPTIONS") && x->route != TV_ROUTE_OTHER &&
        cors_on(s)) {
        struct MHD_Response *r =
            MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
        if (r) {
            MHD_add_response_header(r, "Access-Control-Allow-Methods",
                                    allowed(x));
            MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                    "Authorization, Content-Type, Accept, "
                                    "X-Tokvec-Shape");
            MHD_add_response_header(r, "Access-Control-Expose-Headers",
                                    "X-Tokvec-Shape, X-Tokvec-Dtype");
            MHD_add_response_header(r, "Access-Control-Max-Age", "600");
        }
        return queue(x, 204, r, NULL, 0);
    }
    if (x->route == TV_ROUTE_OTHER)
        return fail(x, 404, "not_found", "no such path; routes: POST /embed,"
                    " GET /tokens/{id}, /info, /health, /ready, /metrics, "
                    "/openapi.json");
    if (x->route == TV_ROUTE_EMBED ? !post : !get)
        return fail(x, 405, "method_not_allowed",
                    "method %s is not allowed on %.64s (allowed: %s)",
                    x->method, x->path, allowed(x));
    if ((x->route == TV_ROUTE_EMBED || x->route == TV_ROUTE_TOKENS ||
         x->route == TV_ROUTE_INFO) && !authorized(s, x->conn))
        return fail(x, 401, "unauthorized",
                    "missing or wrong Authorization: Bearer key");
    if (post) {
        const char *cl = MHD_lookup_connection_value(
            x->conn, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end;
            unsigned long long n = strtoull(cl, &end, 10);
            if (*end || n > (unsigned long long)s->cfg->max_body_bytes)
                return fail(x, 413, "payload_too_large",
                            "Content-Length is over max_body_bytes %" PRId64,
                            s->cfg->max_body_bytes);
            x->expect = (size_t)n;
            if (n && body_reserve(x, (size_t)n + 1) < 0)
                return fail(x, 429, "overloaded",
                            "request bodies being received hold "
                            "max_buffered_bytes (%" PRId64 "); retry",
                            s->cfg->max_buffered_bytes);
        }
    }
    (void)url;
    x->state = ST_BODY;
    return MHD_YES;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    tv_server *s = cls;
    req_ctx *x = *con_cls;

    if (!x || uri_mark(x)) { /* the first call (uri_check() may mark it) */
        int verdict = x ? (int)((char *)x - uri_marks) : URI_OK;
        x = calloc(1, sizeof *x);
        if (!x)
            return MHD_NO;
        x->s = s;
        x->uri_verdict = verdict;
        x->conn = c;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        x->watch = ci ? ci->socket_context : NULL;
        ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        x->fd = ci ? ci->connect_fd : -1;
        x->route = route_of(url);
        snprintf(x->method, sizeof x->method, "%s", method);
        snprintf(x->path, sizeof x->path, "%s", url);
        x->path_len = strlen(url);
        atomic_fetch_add(&s->requests, 1);
        tv_request_init(&x->req);
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
        return embed_reply(x);
    if (x->state == ST_DONE) {
        *upload_size = 0; /* a response is queued; ignore the rest */
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (x->too_large || x->too_busy)
            return MHD_YES;
        if (x->len + n > (size_t)s->cfg->max_body_bytes) {
            x->too_large = 1;
            body_drop(x);
            return MHD_YES;
        }
        if (x->len + n + 1 > x->cap) {
            /* Content-Length known: that, at once; else doubling. */
            size_t cap = x->expect >= x->len + n ? x->expect + 1
                         : x->cap                ? x->cap
                                                 : 4096;
            while (cap < x->len + n + 1)
                cap *= 2;
            if (body_reserve(x, cap) < 0) {
                x->too_busy = 1;
                body_drop(x);
                return MHD_YES;
            }
            char *b = realloc(x->body, cap);
            if (!b)
                return MHD_NO;
            x->body = b;
            x->cap = cap;
        }
        memcpy(x->body + x->len, upload, n);
        x->len += n;
        return MHD_YES;
    }
    watch_arm(s, x->watch, 0); /* the whole request is in */
    if (x->too_busy)
        return fail(x, 429, "overloaded",
                    "request bodies being received hold max_buffered_bytes "
                    "(%" PRId64 "); retry", s->cfg->max_buffered_bytes);
    switch (x->route) {
    case TV_ROUTE_EMBED:
        return route_embed(x);
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
        return reply_copy(x, 200, "application/json",
                          "{\"status\":\"ready\"}", 18);
    case TV_ROUTE_METRICS:
        return route_metrics(x);
    case TV_ROUTE_OPENAPI:
        return queue(x, 200,
                     MHD_create_response_from_buffer(
                         tv_openapi_len, (void *)tv_openapi_json,
                         MHD_RESPMEM_PERSISTENT),
                     "application/json", tv_openapi_len);
    default:
        return fail(x, 404, "not_found", "no such path");
    }
}

/* MHD: the request is over (answered, or the client went away). */
static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    req_ctx *x = *con_cls;
    (void)cls;
    (void)c;
    if (!x || uri_mark(x)) { /* no first call: no request to log */
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
                 : x->state == ST_QUEUED                        ? 499
                                                                : 400;
    else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && status == 200) {
        /* The reply was cut: not a 200 (nginx's 499). Count what the
         * client acknowledged (TCP; headers included), at most the body. */
        unsigned long long got = x->acked_known ? bytes_acked(x->fd) : 0;
        got = got > x->acked0 ? got - x->acked0 : 0;
        x->bytes = got < x->bytes ? got : x->bytes;
        /* 408: tokvec cut it (the reply's send deadline, or MHD's
         * inactivity limit), 499: the client did */
        status = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ||
                         (x->watch && atomic_load(&x->watch->timed_out))
                     ? 408
                     : 499;
    }
    watch_arm(x->s, x->watch, 1); /* the next request's time starts */
    tv_metrics_request(x->route, status, secs, x->tokens, x->bytes);
    tv_metrics_inflight_add(-1);
    if (x->s->cfg->access_log)
        tv_log_access(x->method, x->path, x->path_len, status,
                      (long long)x->tokens, (long long)x->bytes,
                      (long long)(secs * 1e6));
    /* A job's bytes of max_inflight_bytes stay reserved until its response
     * owns them; a connection MHD closed after the job (the client left)
     * never got one: give them back here, or the budget leaks. */
    if (x->reserved)
        tv_pool_release(x->s->pool, x->reserved);
    ref_release(x->ref);
    tv_request_free(&x->req);
    tv_pool_buf_free(x->s->pool, x->out, x->out_cap);
    body_drop(x);
    atomic_fetch_sub(&x->s->requests, 1);
    free(x);
    *con_cls = NULL;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* MHD: percent-decoding of the path and query (as MHD's own, "%HH"),
 * except that "%00" stays as it is: a decoded NUL would end the C string
 * and hide what follows ("/tokens/1%00x" would read as "/tokens/1"), so
 * the parsers see the literal "%00" and reject it. Never lengthens s. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    framing_unescaped(c);
    char *w = s;
    for (const char *r = s; *r; r++) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 &&
            (lo = hexval(r[2])) >= 0 && (hi | lo) != 0) {
            *w++ = (char)(hi << 4 | lo);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    tv_log(TV_LOG_DEBUG, "libmicrohttpd: %s", msg);
}

/* --- lifecycle ------------------------------------------------------------- */

/* Thread ids of this process whose name starts with prefix, sorted; at
 * most cap. */
static size_t threads_named(const char *prefix, pid_t *tids, size_t cap)
{
    DIR *d = opendir("/proc/self/task");
    size_t n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < cap;) {
        char path[300], comm[32] = "";
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
        if (!strncmp(comm, prefix, strlen(prefix)))
            tids[n++] = (pid_t)atol(e->d_name);
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a few dozen */
        for (size_t j = i; j > 0 && tids[j - 1] > tids[j]; j--) {
            pid_t t = tids[j];
            tids[j] = tids[j - 1];
            tids[j - 1] = t;
        }
    return n;
}

/* Names the polling threads of the daemons just started stem-0..N-1. MHD
 * names its threads "MHD-worker" / "MHD-single" itself, from inside each
 * new thread, and does not hand out their pthread_t: so wait (up to 10 s:
 * threads start slowly under valgrind) until all `expect` of them carry
 * MHD's name -- after that MHD never renames them -- then rename each
 * through /proc/self/task/TID/comm, which is what pthread_setname_np does
 * for another thread of the process. Run after each listener's daemons
 * have started, before the next listener's. */
static void name_http_threads(const char *stem, size_t expect)
{
    pid_t tids[1024];
    size_t n = 0;
    for (int i = 0; i < 10000; i++) {
        if ((n = threads_named("MHD-", tids, 1024)) >= expect)
            break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    for (size_t i = 0; i < n; i++) {
        char path[64], name[32];
        snprintf(path, sizeof path, "/proc/self/task/%ld/comm",
                 (long)tids[i]);
        snprintf(name, sizeof name, "%s-%zu", stem, i); /* cut to 15 */
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(name, f);
            fclose(f);
        }
    }
}

/* Starts one MHD daemon with the server's handlers: `threads` polling
 * threads (each with its own epoll; 1 = MHD's single thread), at most
 * `limit` connections, on address sa (with SO_REUSEPORT when reuse) or on
 * the listening socket fd (sa NULL). NULL on failure (errno as MHD leaves
 * it). */
static struct MHD_Daemon *start_daemon(tv_server *s, unsigned threads,
                                       unsigned flags,
                                       const struct sockaddr *sa, int reuse,
                                       int fd, unsigned limit)
{
    const tv_config *cfg = s->cfg;
    double rt = cfg->request_timeout;
    unsigned timeout_s = rt >= 1e6 ? 1000000u : (unsigned)rt;
    if ((double)timeout_s < rt || timeout_s == 0)
        timeout_s++; /* MHD counts whole seconds: rounded up */
    struct MHD_OptionItem where[4];
    int n = 0;
    if (sa) {
        where[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0,
                                             (void *)sa};
        where[n++] = (struct MHD_OptionItem){
            MHD_OPTION_LISTENING_ADDRESS_REUSE, reuse ? 1 : 0, NULL};
    } else {
        where[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, fd,
                                             NULL};
    }
    if (threads > 1)
        where[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE,
                                             (intptr_t)threads, NULL};
    where[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, sa ? (uint16_t)cfg->port : 0, NULL, NULL, handler, s,
        MHD_OPTION_ARRAY, where,
        MHD_OPTION_CONNECTION_LIMIT, limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, uri_check, NULL,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, MHD_OPTION_END);
    return d;
}

/* The TCP address is free: bound by nobody, or only by sockets in
 * TIME_WAIT. The HTTP threads bind it with SO_REUSEPORT, which would also
 * let them share it silently with another server already listening there
 * (with SO_REUSEPORT set, as a second tokvec would); this bind, without
 * it, fails in that case. 0 or an errno. */
static int address_free(const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (sa->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    int rc = bind(fd, sa, len) < 0 ? errno : 0;
    close(fd);
    return rc;
}

/* A listening Unix domain socket at path, for MHD. A stale socket file
 * (nobody accepts on it) is replaced; a live one or any other file is an
 * error. 0, -2 (bad path: exit 2) or -1 (exit 1), with err filled. */
static int unix_listen(const char *path, int *out, char *err, size_t errlen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    struct stat st;
    *out = -1;
    if (strlen(path) >= sizeof sun.sun_path) {
        snprintf(err, errlen, "--unix-socket '%s' is longer than %zu bytes",
                 path, sizeof sun.sun_path - 1);
        return -2;
    }
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a Unix socket: %s",
                 strerror(errno));
        return -1;
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "--unix-socket '%s' exists and is not a "
                     "socket", path);
            close(fd);
            return -2;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int live = probe >= 0 &&
                   connect(probe, (struct sockaddr *)&sun, sizeof sun) == 0;
        if (probe >= 0)
            close(probe);
        if (live) {
            snprintf(err, errlen, "--unix-socket '%s' is in use by another "
                     "server", path);
            close(fd);
            return -1;
        }
        unlink(path); /* stale: left by a process that died */
    }
    if (bind(fd, (struct sockaddr *)&sun, sizeof sun) < 0 ||
        listen(fd, 1024) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot listen on the Unix socket %s: %s",
                 path, strerror(e));
        close(fd);
        return e == ENOENT || e == ENOTDIR || e == EACCES ? -2 : -1;
    }
    *out = fd;
    return 0;
}


/* The TCP listener -- one MHD daemon per HTTP thread, each with its own
 * listening socket on the same port (SO_REUSEPORT), so the kernel spreads
 * new connections over them evenly (with one shared socket, MHD's thread
 * pool, the first thread to wake accepts bursts of up to 10, and one thread
 * was seen holding all 32 of a benchmark's connections); each daemon gets
 * its share of max_connections -- and the Unix socket's daemon, whose
 * threads share one socket (MHD's thread pool). 0, -2 (bad --host or
 * --unix-socket: exit 2) or -1 (exit 1), err filled. */
static int start_listeners(tv_server *s, char *err, size_t errlen)
{
    const tv_config *cfg = s->cfg;
    int64_t http = s->http_threads;
    struct sockaddr_in sa4 = {.sin_family = AF_INET};
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6};
    const struct sockaddr *sa;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    if (inet_pton(AF_INET, cfg->host, &sa4.sin_addr) == 1) {
        sa4.sin_port = htons((uint16_t)cfg->port);
        sa = (const struct sockaddr *)&sa4;
    } else if (inet_pton(AF_INET6, cfg->host, &sa6.sin6_addr) == 1) {
        sa6.sin6_port = htons((uint16_t)cfg->port);
        sa = (const struct sockaddr *)&sa6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, errlen, "--host '%s' is not an IPv4 or IPv6 address",
                 cfg->host);
        return -2;
    }
    int ufd = -1;
    if (*cfg->unix_socket) {
        int urc = unix_listen(cfg->unix_socket, &ufd, err, errlen);
        if (urc < 0) {
            return urc;
        }
        s->unix_bound = 1;
    }
    int e = address_free(sa, sa == (const struct sockaddr *)&sa4
                                 ? sizeof sa4 : sizeof sa6);
    s->tcp = calloc(s->http_threads, sizeof *s->tcp);
    if (e || !s->tcp) {
        snprintf(err, errlen, "cannot listen on %s:%" PRId64 ": %s",
                 cfg->host, cfg->port, strerror(e ? e : ENOMEM));
        if (ufd >= 0)
            close(ufd);
        return -1;
    }
    for (unsigned i = 0; i < s->http_threads; i++) {
        unsigned share = (unsigned)(cfg->max_connections / http) +
                         (i < (unsigned)(cfg->max_connections % http));
        errno = 0;
        s->tcp[i] = start_daemon(s, 1, flags, sa, 1, -1, share);
        if (!s->tcp[i]) {
            e = errno; /* from bind() or listen(), as MHD leaves it */
            snprintf(err, errlen, "cannot listen on %s:%" PRId64 ": %s",
                     cfg->host, cfg->port,
                     e ? strerror(e) : "address in use or not permitted");
            if (ufd >= 0)
                close(ufd);
            return -1;
        }
        s->ntcp++;
    }
    name_http_threads("tv-http", s->ntcp);
    if (ufd >= 0) {
        s->mhd_unix = start_daemon(s, s->http_threads,
                                   flags & ~(unsigned)MHD_USE_IPv6, NULL, 0,
                                   ufd, (unsigned)cfg->max_connections);
        if (!s->mhd_unix) {
            snprintf(err, errlen, "cannot serve on the Unix socket %s",
                     cfg->unix_socket);
            close(ufd);
            return -1;
        }
        name_http_threads("tv-unix", s->http_threads);
    }
    return 0;
}

int tv_server_start(const tv_config *cfg, tv_server **out, char *err,
                    size_t errlen)
{
    tv_server *s = calloc(1, sizeof *s);
    int rc = -1;
    *out = NULL;
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->cfg = cfg;
    pthread_mutex_init(&s->table_lock, NULL);
    pthread_mutex_init(&s->watch_lock, NULL);
    pthread_mutex_init(&s->ip_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->reaper_wake, &ca);
    pthread_condattr_destroy(&ca);
    s->watches.next = s->watches.prev = &s->watches;
    /* framing_check() reads MHD's raw header block: a layout checked
     * against 0.9.75 only (elsewhere the checks that need it are off). */
    s->raw_framing = !strcmp(MHD_get_version(), "0.9.75");
    s->lim.max_body_bytes = (size_t)cfg->max_body_bytes;
    s->lim.max_tokens = cfg->max_tokens;
    s->lim.max_batch = cfg->max_batch;
    s->topts.token_tensor = *cfg->token_tensor ? cfg->token_tensor : NULL;
    s->topts.position_tensor =
        *cfg->position_tensor ? cfg->position_tensor : NULL;
    s->topts.position_path = *cfg->position_path ? cfg->position_path : NULL;
    if (tokvec_positional_parse(cfg->positional, &s->topts.positional) < 0)
        s->topts.positional = TOKVEC_POS_AUTO;

    if (open_table(s, &s->current, err, errlen) < 0) {
        rc = -2;
        goto fail;
    }
    publish_table(s->current->t);

    int threads = (int)cfg->threads;
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    int prc = tv_pool_start(&s->pool, threads, (size_t)cfg->max_queue,
                            (size_t)cfg->max_inflight_bytes);
    if (prc < 0) {
        snprintf(err, errlen, "cannot start the worker pool: %s",
                 strerror(-prc));
        goto fail;
    }
    /* HTTP threads: as many as workers unless set; each gets a share of
     * max_connections, so never more threads than connections. */
    int64_t http = cfg->http_threads > 0 ? cfg->http_threads : threads;
    if (http > cfg->max_connections)
        http = cfg->max_connections;
    s->http_threads = (unsigned)http;

    if ((errno = pthread_create(&s->reaper, NULL, reaper_main, s)) != 0) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
        goto fail;
    }
    pthread_setname_np(s->reaper, "tv-reaper");
    s->reaper_started = 1;
    if ((rc = start_listeners(s, err, errlen)) < 0)
        goto fail;
    *out = s;
    return 0;
fail:
    tv_server_stop(s);
    return rc;
}

int tv_server_reload(tv_server *s)
{
    char err[512] = "";
    table_ref *fresh;
    if (open_table(s, &fresh, err, sizeof err) < 0) {
        tv_metrics_reload(0);
        tv_log(TV_LOG_ERROR, "reload failed, still serving the old table: "
                             "%s", err);
        return -1;
    }
    /* Clients size their buffers by dim (and /info promised it): a table
     * of another width needs a restart, not a reload. Reloads run on the main
     * thread, the only one that swaps s->current: reading it needs no lock. */
    int64_t dim_now = tokvec_table_get_info(s->current->t)->dim;
    const tokvec_table_info *fi = tokvec_table_get_info(fresh->t);
    if (fi->dim != dim_now) {
        tv_metrics_reload(0);
        tv_log(TV_LOG_ERROR, "reload failed, still serving the old table: "
                             "%s has dim %" PRId64 ", the serving table "
                             "has dim %" PRId64 " (a new dim needs a "
                             "restart)", fi->path, fi->dim, dim_now);
        ref_release(fresh);
        return -1;
    }
    pthread_mutex_lock(&s->table_lock);
    table_ref *old = s->current;
    s->current = fresh;
    pthread_mutex_unlock(&s->table_lock);
    ref_release(old);
    publish_table(fresh->t);
    tv_metrics_reload(1);
    const tokvec_table_info *in = tokvec_table_get_info(fresh->t);
    tv_log(TV_LOG_INFO, "reloaded %s: vocab_size=%" PRId64 " dim=%" PRId64
                        " dtype=%s positional=%s", in->path, in->vocab_size,
           in->dim, tokvec_dtype_numpy_name(in->dtype),
           tokvec_positional_name(in->positional));
    return 0;
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
    for (unsigned i = 0; i < s->ntcp; i++)
        if ((fd = MHD_quiesce_daemon(s->tcp[i])) != MHD_INVALID_SOCKET)
            close(fd);
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

size_t tv_server_summary(tv_server *s, char *buf, size_t len)
{
    table_ref *ref = ref_acquire(s);
    const tokvec_table_info *in = tokvec_table_get_info(ref->t);
    int n = snprintf(buf, len,
                     "table %s (%s): vocab_size=%" PRId64 " dim=%" PRId64
                     " dtype=%s positional=%s context_length=%" PRId64
                     " token=%s position=%s",
                     in->path, in->format, in->vocab_size, in->dim,
                     tokvec_dtype_numpy_name(in->dtype),
                     tokvec_positional_name(in->positional),
                     in->context_length,
                     *in->token_tensor ? in->token_tensor : "-",
                     in->position_tensor ? in->position_tensor : "-");
    ref_release(ref);
    if (n < 0)
        return 0;
    return (size_t)n < len ? (size_t)n : len ? len - 1 : 0;
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
    if (s->reaper_started) {
        pthread_mutex_lock(&s->watch_lock);
        s->reaper_stop = 1;
        pthread_cond_signal(&s->reaper_wake);
        pthread_mutex_unlock(&s->watch_lock);
        pthread_join(s->reaper, NULL);
    }
    pthread_cond_destroy(&s->reaper_wake);
    pthread_mutex_destroy(&s->watch_lock);
    for (int i = 0; i < 256; i++) /* empty once every daemon has stopped */
        for (ip_count *e = s->ip_buckets[i], *n; e; e = n) {
            n = e->next;
            free(e);
        }
    pthread_mutex_destroy(&s->ip_lock);
    tv_pool_stop(s->pool);
    ref_release(s->current);
    pthread_mutex_destroy(&s->table_lock);
    free(s);
}
