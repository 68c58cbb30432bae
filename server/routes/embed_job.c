/* embed_job.c -- POST /embed, start to finish (embed_job.h): one owner
 * runs the job in one straight line,
 *
 *   text inputs first:   parse -> tokenize on a worker (embed_text.c)
 *                        -> resume, then on as an id request:
 *   on the HTTP thread:  parse (request.c) -> check (request.c, core)
 *                        -> plan the reply (embed_plan_reply, embed_plan.c)
 *                        -> reserve
 *                        -> queue (pool.c), or run at once if small
 *   on a worker:         embed (core) -> encode (embed_write: encode.c,
 *                        torchsave.c, embed_text.c) -> resume
 *   on the HTTP thread:  reply (MHD owns the buffer from here)
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
 * to be worth them (small_job(); texts: small_text()) runs at once on the
 * HTTP thread, even while every worker is busy and jobs wait for one (the
 * small-job lane, pool.h: tv_pool_try_inline). A reply that could not fit
 * max_inflight_bytes even alone is refused (413) before anything runs.
 *
 * Large replies (raw and npy past the small-job lane, not pooled:
 * embed_plan_chunked) are not built on a worker: the job only admits
 * them (at once when a pushed job would start now, tv_pool_try_start,
 * else through the queue, the worker doing nothing but resume), and the
 * response is libmicrohttpd's content callback (chunk_fill), which makes
 * each CHUNK_BYTES of the body on the connection's HTTP thread when the
 * socket has taken the last (embed_write_range). The response owns the
 * ids (a copy), the table reference and the reserved bytes (chunk_hold),
 * so a client that stops reading holds no worker and no reply-sized
 * buffer (docs/performance.md, "Large replies").
 *
 * Ownership: the embed_job belongs to its connection's HTTP thread,
 * except while it is queued or running: from tv_pool_push until
 * embed_done() the worker (or, for a job that expired in the queue, the
 * reaper) owns out/out_len/failed/gone/t_* and nobody else touches the
 * request (the connection is suspended). What orders the writes: the
 * HTTP thread's, before tv_pool_push, reach the worker through the pool's
 * lock (push appends under it, the worker takes the job under it); the
 * worker's reach the HTTP thread through MHD's resume lock
 * (MHD_resume_connection sets the connection's `resuming` flag under the
 * daemon's cleanup_connection_mutex, which the daemon's thread takes
 * before it resumes the connection and calls the handler again). From the
 * reply on, the response owns the buffer, its reserved bytes and the
 * table reference (out_hold), given back by MHD on whichever thread frees
 * it. Lock order: table_lock, then the pool's lock (never held together
 * today).
 */
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "body.h"
#include "embed_job.h"
#include "embed_text.h"
#include "metrics.h"
#include "text.h"
#include "reply.h"

#define JOB_OF(task) \
    ((req_ctx *)(((char *)(task)) - offsetof(req_ctx, job.task)))

/* --- the job's state ---------------------------------------------------- */

void embed_job_init(embed_job *j)
{
    memset(j, 0, sizeof *j);
    tv_request_init(&j->req);
}

void embed_job_fini(tv_server *s, embed_job *j)
{
    /* A job's bytes of max_inflight_bytes stay reserved until its response
     * owns them; a connection MHD closed after the job (the client left)
     * never got one: give them back here, or the budget leaks. */
    if (j->reserved)
        tv_pool_release(s->pool, j->reserved);
    j->reserved = 0;
    table_release(j->ref);
    j->ref = NULL;
    tv_request_free(&j->req);
    tv_bufcache_put(s->bufs, j->out, j->plan.body);
    j->out = NULL;
}

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

/* --- on the HTTP thread: parse, check, plan, reserve, queue ------------- */

/* The body, the query string and Accept (request.c, encode.c): 0, or -1
 * with the answer in e. */
typedef struct {
    tv_request *req;
    tv_body_kind kind;
    tv_error *err;
    int bad;
} query_state;

static enum MHD_Result on_query(void *cls, enum MHD_ValueKind kind,
                                const char *key, const char *value)
{
    query_state *q = cls;
    (void)kind;
    if (tv_request_query(q->req, q->kind, key, value, q->err) < 0) {
        q->bad = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

/* POST /v1/embeddings: a JSON body (OpenAI's), a JSON answer. */
static int openai_parse(req_ctx *x, const char *ct, tv_error *e)
{
    embed_job *j = &x->job;
    if (tv_body_kind_of(ct) != TV_BODY_JSON) {
        tv_body_kind_error(ct, 0, e);
        return -1;
    }
    int rc = tv_request_parse_openai(x->body ? x->body : "", x->len,
                                     &x->s->lim, &j->req, e);
    http_body_drop(x);
    if (rc < 0)
        return -1;
    j->fmt = (tv_format){.kind = TV_OUT_JSON, .dtype = TOKVEC_F32};
    if (!tv_accepts_json(
            MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, "Accept")))
        return tv_error_set(e, 406, "not_acceptable",
                            "/v1/embeddings answers application/json only");
    return 0;
}

static int embed_parse(req_ctx *x, tv_error *e)
{
    struct MHD_Connection *c = x->conn;
    embed_job *j = &x->job;
    const tv_limits *lim = &x->s->lim;
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 "Content-Type");
    if (x->route == TV_ROUTE_V1_EMBEDDINGS)
        return openai_parse(x, ct, e);
    tv_body_kind kind = tv_body_kind_of(ct);
    if (kind == TV_BODY_UNSUPPORTED)
        return tv_body_kind_error(ct, 1, e);
    int rc = kind == TV_BODY_JSON
                 ? tv_request_parse_json(x->body ? x->body : "", x->len, lim,
                                         &j->req, e)
                 : tv_request_parse_binary(
                       x->body, x->len,
                       MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   "X-Tokvec-Shape"),
                       lim, &j->req, e);
    http_body_drop(x); /* parsed: the ids are in j->req */
    if (rc < 0)
        return -1;
    query_state qs = {.req = &j->req, .kind = kind, .err = e};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_query, &qs);
    if (qs.bad)
        return -1;
    return tv_negotiate_embed(
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept"),
        j->req.dtype, j->req.body_dtype, j->req.torch, j->req.npz, &j->fmt, e);
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
static int small_job(const embed_job *j)
{
    int64_t floats = j->req.batch * j->req.seq * j->dim;
    if (j->req.pool) /* the rows summed, then the vectors encoded */
        floats = j->req.pooled * j->dim / 16 +
                 j->req.batch * (j->req.dims ? j->req.dims : j->dim);
    if (j->fmt.kind != TV_OUT_JSON)
        return j->plan.reserve <= INLINE_BINARY_BYTES;
    return floats <= (j->req.base64 || j->req.torch ? INLINE_BASE64_FLOATS
                                                    : INLINE_JSON_FLOATS);
}

static void embed_work(tv_job *task);
static void embed_done(tv_job *task);
static enum MHD_Result embed_start(req_ctx *x);

/* A worker: the texts of the request become ids (embed_text.h). */
static void text_work(tv_job *task)
{
    req_ctx *x = JOB_OF(task);
    embed_job *j = &x->job;
    if (tv_embed_text_resolve(j->ref->tok, j->ref->t, j->ref->model,
                              &x->s->lim, &j->req, &j->text_err) < 0)
        j->text_bad = 1;
}

/* Texts of at most this many bytes in all are tokenized at once on the
 * HTTP thread (~15 MB/s: under 100 us), never behind queued jobs. */
#define INLINE_TEXT_BYTES 1024
static int small_text(const tv_request *q)
{
    size_t n = 0;
    for (int64_t b = 0; b < q->nrows; b++)
        if (q->rows[b].text)
            n += q->rows[b].len;
    return n <= INLINE_TEXT_BYTES && !q->text.max_length;
}

/* Text inputs: tokenized on the pool first (small ones at once);
 * embed_reply() goes on with embed_start() once the worker resumed the
 * connection. */
static enum MHD_Result text_queue(req_ctx *x)
{
    tv_server *s = x->s;
    embed_job *j = &x->job;
    tv_error e;
    if (!j->ref->tok && j->req.has_text) {
        tv_text_no_tokenizer(&e);
        return reply_error(x, &e);
    }
    if (small_text(&j->req)) {
        j->text_stage = 2;
        if (tv_embed_text_resolve(j->ref->tok, j->ref->t, j->ref->model,
                                  &s->lim, &j->req, &e) < 0)
            return reply_error(x, &e);
        return embed_start(x);
    }
    j->text_stage = 1;
    j->task = (tv_job){.work = text_work, .done = embed_done};
    if (tv_pool_reserve(s->pool) < 0)
        return reply_queue_full(x);
    x->state = ST_QUEUED;
    MHD_suspend_connection(x->conn);
    tv_pool_push(s->pool, &j->task);
    return MHD_YES;
}

enum MHD_Result embed_route(req_ctx *x)
{
    tv_server *s = x->s;
    embed_job *j = &x->job;
    tv_error e;

    if (atomic_load(&s->draining))
        return reply_fail(x, 503, "draining", "the server is shutting down");
    if (embed_parse(x, &e) < 0)
        return reply_error(x, &e);
    j->ref = table_acquire(s); /* given back by embed_job_fini at the
                                * latest */
    if (j->req.pool) {
        j->req.model_name = s->model_name;
        if (j->req.normalize < 0) /* the model's (or --normalize's) */
            j->req.normalize = j->ref->normalize;
    }
    if (j->req.has_text || j->req.pool)
        return text_queue(x);
    return embed_start(x);
}

/* Check, plan, reserve, then run at once (small) or queue: an id request
 * (a text request once tokenized). */
static enum MHD_Result embed_start(req_ctx *x)
{
    tv_server *s = x->s;
    embed_job *j = &x->job;
    tv_error e;
    if (tv_request_check(&j->req, j->ref->t, &e) < 0)
        return reply_error(x, &e);
    j->dim = tokvec_table_get_info(j->ref->t)->dim;
    x->tokens = j->req.pool ? (uint64_t)j->req.pooled
                            : (uint64_t)(j->req.batch * j->req.seq);
    if (embed_plan_reply(j->ref->t, &j->req, j->fmt, &j->plan) < 0)
        return reply_fail(x, 413, "payload_too_large",
                          j->fmt.kind == TV_OUT_NPZ
                              ? "the response would be too large: an npz "
                                "answer stays under 4 GiB (no ZIP64)"
                              : "the response would be too large");
    /* A reply that could not fit max_inflight_bytes even alone would hold
     * every other job back while it is sent: refused now. JSON floats
     * count their shortest encoding, so a legal request is not refused
     * for the bound (its settled size counts once it is built). */
    size_t budget = tv_pool_budget(s->pool);
    if (j->plan.least > budget)
        return reply_fail(x, 413, "payload_too_large",
                          "the answer would hold at least %zu bytes while "
                          "it is built and sent, %zu over max_inflight_bytes "
                          "(%zu); ask for fewer tokens%s",
                          j->plan.least, j->plan.least - budget, budget,
                          j->fmt.kind == TV_OUT_JSON
                              ? ", or a binary answer (smaller per float)"
                              : "");
    if (small_job(j) && tv_pool_try_inline(s->pool, j->plan.reserve)) {
        j->reserved = j->plan.reserve;
        j->inline_job = 1;
        embed_work(&j->task);
        tv_pool_inline_done(s->pool);
        return embed_reply(x);
    }
    j->chunked = embed_plan_chunked(&j->req, j->fmt) && !small_job(j);
    /* A large reply made as it is sent needs no worker, only admission:
     * at once when a pushed job would start now, else it waits in the
     * queue like any job (FIFO, max_queue, max_queue_wait, the budget),
     * and the worker that takes it only hands it back. */
    if (j->chunked && tv_pool_try_start(s->pool, j->plan.reserve)) {
        j->reserved = j->plan.reserve;
        j->inline_job = 1;
        j->t_start = j->t_end = now_ns();
        return embed_reply(x);
    }
    j->task = (tv_job){.work = embed_work,
                       .done = embed_done,
                       .bytes = j->plan.reserve};
    if (tv_pool_reserve(s->pool) < 0)
        return reply_queue_full(x);
    j->reserved = j->plan.reserve; /* taken when a worker starts it */
    x->state = ST_QUEUED;
    MHD_suspend_connection(x->conn);
    j->t_push = now_ns();
    tv_pool_push(s->pool, &j->task);
    return MHD_YES;
}

/* --- on a worker: embed, encode, resume --------------------------------- */

/* The client has gone: it closed or shut down its side (a reply could no
 * longer be read), or the socket failed. Any thread; never blocks. */
static int client_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&p, 1, 0) == 1 &&
           (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Embeds into the reply's buffer (binary: in place after the npy header)
 * or into scratch rows that the JSON encoder then writes out
 * (embed_write). Every size is the plan's. */
static void embed_compute(req_ctx *x)
{
    embed_job *j = &x->job;
    const embed_plan *p = &j->plan;
    tv_bufcache *bufs = x->s->bufs;

    /* 64-byte aligned so the float32 rows are aligned after the npy
     * header (a multiple of 64) as well. */
    j->out = tv_bufcache_get(bufs, p->body);
    void *vec = p->scratch ? tv_bufcache_get(bufs, p->scratch) : NULL;
    if (j->out && (vec || !p->scratch))
        j->out_len = embed_write(j->ref->t, &j->req, j->fmt, p, j->out, vec);
    if (!j->out_len)
        j->failed = 1;
    tv_bufcache_put(bufs, vec, p->scratch);
}

static void embed_work(tv_job *task)
{
    req_ctx *x = JOB_OF(task);
    embed_job *j = &x->job;
    /* A client that left while its job waited gets nothing: computing
     * its reply would only delay everyone behind it. (Inline jobs run
     * right after their request arrived: not checked.) */
    if (!j->inline_job && client_gone(x->fd)) {
        j->gone = 1;
        j->t_start = j->t_end = now_ns();
        return;
    }
    j->t_start = now_ns();
    if (!j->chunked) /* else made as it is sent, on the HTTP thread */
        embed_compute(x);
    j->t_end = now_ns();
}

/* The same worker, right after: the body is built; let the connection's
 * HTTP thread call the handler again. From MHD_resume_connection on, the
 * worker must not touch the request. */
static void embed_done(tv_job *task)
{
    MHD_resume_connection(JOB_OF(task)->conn);
}

/* --- on the HTTP thread again: the reply -------------------------------- */

/* A binary answer's shape and dtype headers (none for JSON). */
static void binary_headers(const embed_job *j, struct MHD_Response *r)
{
    char shape[96];
    if (j->fmt.kind == TV_OUT_JSON)
        return;
    if (j->req.pool)
        snprintf(shape, sizeof shape, "%" PRId64 ",%" PRId64, j->req.batch,
                 j->req.dims ? j->req.dims : j->dim);
    else
        snprintf(shape, sizeof shape, "%" PRId64 ",%" PRId64 ",%" PRId64,
                 j->req.batch, j->req.seq, j->dim);
    MHD_add_response_header(r, "X-Tokvec-Shape", shape);
    MHD_add_response_header(r, "X-Tokvec-Dtype",
                            tokvec_dtype_numpy_name(j->fmt.dtype));
}

/* --- large replies, made as they are sent ------------------------------- */

/* Bytes per chunk: made by the HTTP thread when MHD needs the next one
 * (the socket took the last), written to the socket at once, while they
 * are still in the core's cache (1 MiB of L2 on the machine measured:
 * docs/performance.md, "Large replies"). */
#ifndef TV_CHUNK_KIB /* (-DTV_CHUNK_KIB=N: another size, to measure) */
#define TV_CHUNK_KIB 128
#endif
#define CHUNK_BYTES ((size_t)TV_CHUNK_KIB << 10)

/* What a chunked response owns until MHD frees it (any MHD thread,
 * once): its bytes of max_inflight_bytes, the table reference, the ids
 * and a row's scratch. MHD calls chunk_fill and chunk_free under the
 * response's own lock, on the connection's HTTP thread. */
typedef struct chunk_hold {
    tv_pool *pool;
    size_t reserved;
    table_ref *ref;
    int64_t *ids;
    char *tmp;
    embed_rows rows;
} chunk_hold;

static ssize_t chunk_fill(void *cls, uint64_t pos, char *buf, size_t max)
{
    chunk_hold *h = cls;
    size_t n = embed_write_range(&h->rows, pos, buf, max, h->tmp);
    return n ? (ssize_t)n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void chunk_hold_free(chunk_hold *h)
{
    if (!h)
        return;
    free(h->ids);
    free(h->tmp);
    free(h);
}

static void chunk_free(void *cls)
{
    chunk_hold *h = cls;
    tv_pool_release(h->pool, h->reserved);
    table_release(h->ref);
    chunk_hold_free(h);
}

/* The HTTP thread, the job admitted: the response that makes the reply a
 * chunk at a time (chunk_fill) as the client reads it. Owns the reserved
 * bytes and the table reference from here (chunk_free gives them back); a
 * client that stops reading holds no worker, only its connection and
 * those bytes until the send deadline closes it. */
static enum MHD_Result chunk_reply(req_ctx *x)
{
    embed_job *j = &x->job;
    tv_server *s = x->s;
    size_t nids = (size_t)(j->req.batch * j->req.seq);
    struct MHD_Response *r = NULL;
    chunk_hold *h = tv_calloc(1, sizeof *h);
    if (h) {
        h->ids = tv_malloc(nids * sizeof *h->ids);
        embed_rows_init(&h->rows, j->ref->t, &j->req, j->fmt, &j->plan,
                        h->ids);
        h->tmp = tv_malloc(h->rows.row);
    }
    if (!h || !h->ids || !h->tmp)
        goto bad;
    memcpy(h->ids, j->req.ids, nids * sizeof *h->ids);
    r = MHD_create_response_from_callback(j->plan.body, CHUNK_BYTES,
                                          chunk_fill, h, chunk_free);
    if (!r)
        goto bad;
    h->pool = s->pool;
    h->reserved = j->reserved;
    h->ref = j->ref;
    j->ref = NULL;
    j->reserved = 0; /* the response's now: chunk_free gives it back */
    binary_headers(j, r);
    return reply_queue(x, 200, r, tv_content_type(j->fmt.kind), j->plan.body);
bad:
    chunk_hold_free(h);
    tv_pool_release(s->pool, j->reserved); /* the table: embed_job_fini */
    j->reserved = 0;
    return reply_fail(x, 500, "internal", "could not build the response");
}

/* MHD's thread, after the job: hands the buffer to MHD (no copy). From
 * here the response owns the buffer, the reserved bytes and the table
 * reference (free_response gives them back); on failure they go at once. */
enum MHD_Result embed_reply(req_ctx *x)
{
    embed_job *j = &x->job;
    tv_server *s = x->s;
    struct MHD_Response *r = NULL;
    out_hold *h = NULL;
    if (j->text_stage == 1) { /* the texts are tokenized (or not) */
        j->text_stage = 2;
        if (j->task.expired)
            return reply_fail(x, 503, "overloaded",
                              "the request waited max_queue_wait (%gs) in "
                              "the queue; retry",
                              s->cfg->max_queue_wait);
        if (j->text_bad)
            return reply_error(x, &j->text_err);
        return embed_start(x);
    }
    if (j->task.expired) { /* waited past max_queue_wait: never started */
        j->reserved = 0;   /* so its bytes were never taken */
        return reply_fail(x, 503, "overloaded",
                          "the request waited max_queue_wait (%gs) in the "
                          "queue; retry",
                          s->cfg->max_queue_wait);
    }
    if (j->gone) { /* no reply: close the connection (logged as 499) */
        tv_pool_release(s->pool, j->reserved);
        j->reserved = 0;
        x->status = 499;
        x->state = ST_DONE;
        return MHD_NO;
    }
    if (j->inline_job)
        tv_metrics_job(1, 0, (double)(j->t_end - j->t_start) * 1e-9, 0);
    else
        tv_metrics_job(0, (double)(j->t_start - j->t_push) * 1e-9,
                       (double)(j->t_end - j->t_start) * 1e-9,
                       (double)(now_ns() - j->t_end) * 1e-9);
    if (j->chunked)
        return chunk_reply(x);
    if (j->failed || !j->out)
        goto bad;
    /* Reserved: the plan (JSON: a bound, ~25 bytes a float, and the
     * scratch rows); held from now on: the reply's real size. Give the
     * rest back, or slow readers of large JSON replies would pin twice
     * what they hold. */
    if (j->out_len < j->reserved) {
        tv_pool_release(s->pool, j->reserved - j->out_len);
        j->reserved = j->out_len;
    }
    h = tv_malloc(sizeof *h);
    if (!h)
        goto bad;
    *h = (out_hold){.pool = s->pool,
                    .bufs = s->bufs,
                    .reserved = j->reserved,
                    .buf = j->out,
                    .cap = j->plan.body,
                    .ref = j->ref};
    r = MHD_create_response_from_buffer_with_free_callback_cls(
        j->out_len, h->buf, free_response, h);
    if (!r)
        goto bad;
    j->out = NULL;
    j->ref = NULL;
    j->reserved = 0; /* the response's now: free_response gives it back */
    binary_headers(j, r);
    return reply_queue(x, 200, r, tv_content_type(j->fmt.kind), j->out_len);
bad:
    free(h);
    /* the buffer, the bytes and the table reference: embed_job_fini */
    tv_bufcache_put(s->bufs, j->out, j->plan.body);
    j->out = NULL;
    tv_pool_release(s->pool, j->reserved);
    j->reserved = 0;
    return reply_fail(x, 500, "internal", "could not build the response");
}
