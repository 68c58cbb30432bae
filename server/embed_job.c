/* embed_job.c -- POST /embed, start to finish (embed_job.h).
 *
 * A request's life: MHD calls the handler on the connection's HTTP
 * thread; once the whole body is in, embed_route() parses and validates
 * it there, then it becomes a job (pool.h): the connection is suspended,
 * a worker embeds and serializes into one buffer sized in advance (binary
 * bodies are written in place by tokvec_embed) and resumes the connection
 * itself; the handler then runs again on the HTTP thread and embed_reply()
 * hands that buffer to MHD as the response (no copy; freed by MHD through
 * free_response()). Two hand-offs in all (HTTP thread -> worker -> HTTP
 * thread), each timed in tokvec_job_phase_seconds_total. A job too small
 * to be worth them (small_job()) runs at once on the HTTP thread when no
 * job waits in the queue.
 *
 * Ownership: a req_ctx belongs to its connection's HTTP thread, except
 * while its job is queued or running: from tv_pool_push until embed_done()
 * the worker owns out/out_len/failed/t_* and nobody else touches the
 * context (the connection is suspended). The worker's MHD_resume_connection
 * hands it back (the pool's mutex and MHD's resume lock order the writes).
 * Lock order: table_lock, then the pool's lock (never held together
 * today).
 */
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_job.h"
#include "metrics.h"
#include "reply.h"
#include "tokvec_embed.h"

/* What an /embed response owns until MHD is done with it (any MHD
 * thread, once): the buffer, its reserved bytes and the table reference
 * the request took when its job was created. */
typedef struct out_hold {
    tv_pool *pool;
    tv_bufcache *bufs;
    size_t reserved;
    char *buf;
    size_t cap; /* as given to tv_bufcache_get */
    table_ref *ref;
} out_hold;

static void free_response(void *cls)
{
    out_hold *h = cls;
    tv_bufcache_put(h->bufs, h->buf, h->cap);
    tv_pool_release(h->pool, h->reserved);
    table_release(h->ref);
    free(h);
}

/* The client has gone: it closed or shut down its side (a reply could no
 * longer be read), or the socket failed. Any thread; never blocks. */
static int client_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&p, 1, 0) == 1 &&
           (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

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
        x->out = tv_bufcache_get(x->s->bufs, x->out_cap);
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
    float *vec = tv_bufcache_get(x->s->bufs, n);
    x->out_cap = tv_embed_json_bound(B, S, D, q->base64);
    x->out = tv_bufcache_get(x->s->bufs, x->out_cap);
    if (!vec || !x->out ||
        tokvec_embed(t, q->ids, B, S, q->start_position, flags, vec) < 0) {
        tv_bufcache_put(x->s->bufs, vec, n);
        x->failed = 1;
        return;
    }
    x->out_len = tv_embed_json(x->out, vec, B, S, D, q->base64);
    tv_bufcache_put(x->s->bufs, vec, n);
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
enum MHD_Result embed_reply(req_ctx *x)
{
    struct MHD_Response *r = NULL;
    out_hold *h = NULL;
    if (x->job.expired) { /* waited past max_queue_wait: never started */
        x->reserved = 0;      /* so its bytes were never taken */
        return reply_fail(x, 503, "overloaded",
                          "the request waited max_queue_wait (%gs) in the "
                          "queue; retry", x->s->cfg->max_queue_wait);
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
    *h = (out_hold){.pool = x->s->pool, .bufs = x->s->bufs,
                    .reserved = x->reserved,
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
    return reply_queue(x, 200, r, tv_content_type(x->fmt.kind), x->out_len);
bad:
    free(h);
    tv_bufcache_put(x->s->bufs, x->out, x->out_cap);
    x->out = NULL; /* the table reference goes in completed() */
    tv_pool_release(x->s->pool, x->reserved);
    x->reserved = 0;
    return reply_fail(x, 500, "internal", "could not build the response");
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

enum MHD_Result embed_route(req_ctx *x)
{
    struct MHD_Connection *c = x->conn;
    tv_server *s = x->s;
    tv_error e;

    if (atomic_load(&s->draining))
        return reply_fail(x, 503, "draining", "the server is shutting down");
    if (x->too_large)
        return reply_fail(x, 413, "payload_too_large",
                          "body is over max_body_bytes %" PRId64,
                          s->cfg->max_body_bytes);
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 "Content-Type");
    tv_body_kind kind = tv_body_kind_of(ct);
    if (kind == TV_BODY_UNSUPPORTED)
        return reply_fail(x, 415, "unsupported_media_type",
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
    http_body_drop(x); /* parsed: the ids are in x->req */
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

    x->ref = table_acquire(s);
    if (tv_request_check(&x->req, x->ref->t, &e) < 0) {
        table_release(x->ref);
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
        table_release(x->ref);
        x->ref = NULL;
        return reply_fail(x, 413, "payload_too_large",
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
        table_release(x->ref);
        x->ref = NULL;
        return reply_fail(x, 429, "overloaded",
                          "the work queue is full (%" PRId64 " jobs); retry",
                          s->cfg->max_queue);
    }
    x->state = ST_QUEUED;
    MHD_suspend_connection(c);
    x->t_push = now_ns();
    tv_pool_push(s->pool, &x->job);
    return MHD_YES;
}
