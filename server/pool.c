/* pool.c -- a bounded FIFO in front of libuv's thread pool (pool.h).
 *
 * What must hold: at most `threads` jobs are inside libuv at once (so
 * libuv's unbounded internal queue stays empty and `waiting` is the real
 * backlog), at most max_queue jobs wait, and the bytes of jobs handed to
 * libuv plus responses not yet freed stay under max_inflight unless a job
 * runs alone.
 *
 * Threads and locks: `lock` guards head, tail, waiting, running,
 * inflight_bytes and stopping; `buf_lock` guards the buffer cache (bufs,
 * nbufs, buf_bytes). Both are leaf locks (nothing else is taken
 * while it is held). `unfinished` is atomic. The loop, the async handle,
 * `closed` and every uv_* call belong to the loop thread, except
 * uv_async_send, which any thread may call. threads, max_queue and
 * max_inflight never change after start.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "metrics.h"
#include "pool.h"

struct tv_pool {
    uv_loop_t loop;
    uv_async_t wake;
    pthread_t thread;
    pthread_mutex_t lock;
    tv_job *head, *tail;   /* waiting jobs, FIFO; lock */
    size_t waiting;        /* jobs reserved, not yet handed to libuv; lock */
    size_t running;        /* jobs inside libuv; lock */
    size_t inflight_bytes; /* lock */
    int stopping;          /* lock */
    int closed;            /* loop thread only */
    size_t threads, max_queue, max_inflight;
    atomic_size_t unfinished;
    pthread_mutex_t buf_lock;
    struct {
        void *p;
        size_t size;
    } bufs[TV_POOL_BUF_SLOTS]; /* cached mappings; buf_lock */
    size_t nbufs, buf_bytes; /* buf_lock */
};

static void dispatch(tv_pool *p);

static void work_cb(uv_work_t *req)
{
    tv_job *job = req->data;
    job->work(job);
}

/* Loop thread. done() may free the job (it resumes the connection, whose
 * completion frees the request holding it): the job is not touched after.
 */
static void after_cb(uv_work_t *req, int status)
{
    tv_job *job = req->data;
    tv_pool *p = job->pool;
    (void)status; /* jobs are never cancelled */
    pthread_mutex_lock(&p->lock);
    p->running--;
    pthread_mutex_unlock(&p->lock);
    job->done(job);
    atomic_fetch_sub(&p->unfinished, 1);
    dispatch(p);
}

/* Loop thread: hand waiting jobs to libuv while a worker is free and their
 * bytes fit. */
static void dispatch(tv_pool *p)
{
    for (;;) {
        pthread_mutex_lock(&p->lock);
        tv_job *job = p->head;
        if (p->stopping) {
            pthread_mutex_unlock(&p->lock);
            if (!p->closed) {
                p->closed = 1;
                uv_close((uv_handle_t *)&p->wake, NULL);
            }
            return;
        }
        if (!job || p->running >= p->threads ||
            (p->inflight_bytes &&
             p->inflight_bytes + job->bytes > p->max_inflight)) {
            pthread_mutex_unlock(&p->lock);
            return;
        }
        p->head = job->next;
        if (!p->head)
            p->tail = NULL;
        p->waiting--;
        p->running++;
        p->inflight_bytes += job->bytes;
        pthread_mutex_unlock(&p->lock);
        tv_metrics_queue_add(-1);
        job->req.data = job;
        if (uv_queue_work(&p->loop, &job->req, work_cb, after_cb) < 0)
            abort(); /* fails only for a NULL callback: a programmer bug */
    }
}

static void on_wake(uv_async_t *h)
{
    dispatch(h->data);
}

static void *loop_main(void *arg)
{
    tv_pool *p = arg;
    uv_run(&p->loop, UV_RUN_DEFAULT);
    return NULL;
}

int tv_pool_start(tv_pool **out, int threads, size_t max_queue,
                  size_t max_inflight_bytes)
{
    char n[16];
    int rc = -ENOMEM, have_lock = 0, have_loop = 0, have_async = 0;
    tv_pool *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        goto out;
    /* libuv clamps its pool to 1..1024; `running` must use the same. */
    threads = threads < 1 ? 1 : threads > 1024 ? 1024 : threads;
    snprintf(n, sizeof n, "%d", threads);
    if (setenv("UV_THREADPOOL_SIZE", n, 1) < 0) {
        rc = -errno;
        goto out;
    }
    p->threads = (size_t)threads;
    p->max_queue = max_queue;
    p->max_inflight = max_inflight_bytes;
    atomic_init(&p->unfinished, 0);
    if ((rc = -pthread_mutex_init(&p->lock, NULL)) < 0)
        goto out;
    if ((rc = -pthread_mutex_init(&p->buf_lock, NULL)) < 0) {
        pthread_mutex_destroy(&p->lock);
        goto out;
    }
    have_lock = 1;
    if ((rc = uv_loop_init(&p->loop)) < 0)
        goto out;
    have_loop = 1;
    if ((rc = uv_async_init(&p->loop, &p->wake, on_wake)) < 0)
        goto out;
    have_async = 1;
    p->wake.data = p;
    rc = -pthread_create(&p->thread, NULL, loop_main, p);
out:
    if (rc < 0 && p) {
        if (have_async) {
            uv_close((uv_handle_t *)&p->wake, NULL);
            uv_run(&p->loop, UV_RUN_DEFAULT);
        }
        if (have_loop)
            uv_loop_close(&p->loop);
        if (have_lock) {
            pthread_mutex_destroy(&p->lock);
            pthread_mutex_destroy(&p->buf_lock);
        }
        free(p);
        p = NULL;
    }
    *out = p;
    return rc;
}

int tv_pool_reserve(tv_pool *p)
{
    pthread_mutex_lock(&p->lock);
    if (p->stopping || p->waiting >= p->max_queue) {
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    p->waiting++;
    atomic_fetch_add(&p->unfinished, 1);
    pthread_mutex_unlock(&p->lock);
    tv_metrics_queue_add(1);
    return 0;
}

void tv_pool_push(tv_pool *p, tv_job *job)
{
    job->pool = p;
    job->next = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    pthread_mutex_unlock(&p->lock);
    uv_async_send(&p->wake);
}

void tv_pool_release(tv_pool *p, size_t bytes)
{
    pthread_mutex_lock(&p->lock);
    p->inflight_bytes -= bytes < p->inflight_bytes ? bytes
                                                   : p->inflight_bytes;
    int more = p->head != NULL && !p->stopping;
    pthread_mutex_unlock(&p->lock);
    if (more)
        uv_async_send(&p->wake);
}

size_t tv_pool_waiting(tv_pool *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->waiting;
    pthread_mutex_unlock(&p->lock);
    return n;
}

size_t tv_pool_unfinished(tv_pool *p)
{
    return atomic_load(&p->unfinished);
}

void tv_pool_stop(tv_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_mutex_unlock(&p->lock);
    uv_async_send(&p->wake);
    pthread_join(p->thread, NULL);
    uv_loop_close(&p->loop);
    for (size_t i = 0; i < p->nbufs; i++)
        munmap(p->bufs[i].p, p->bufs[i].size);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->buf_lock);
    free(p);
}

/* --- response buffers ---------------------------------------------------- */

#define BUF_BIG ((size_t)1 << 16)
#define BUF_PER_SIZE 8 /* cached buffers of one size at most */

/* The mapping size for n >= BUF_BIG: the next power of two (0 if none). */
static size_t buf_size(size_t n)
{
    size_t c = BUF_BIG;
    while (c < n) {
        if (c > SIZE_MAX / 2)
            return 0;
        c <<= 1;
    }
    return c;
}

void *tv_pool_buf_get(tv_pool *p, size_t n)
{
    if (n < BUF_BIG)
        return aligned_alloc(64, (n + 63) / 64 * 64);
    size_t c = buf_size(n);
    if (!c)
        return NULL;
    pthread_mutex_lock(&p->buf_lock);
    for (size_t i = 0; i < p->nbufs; i++) {
        if (p->bufs[i].size == c) {
            void *b = p->bufs[i].p;
            p->bufs[i] = p->bufs[--p->nbufs];
            p->buf_bytes -= c;
            pthread_mutex_unlock(&p->buf_lock);
            return b;
        }
    }
    pthread_mutex_unlock(&p->buf_lock);
    void *b = mmap(NULL, c, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return b == MAP_FAILED ? NULL : b;
}

void tv_pool_buf_free(tv_pool *p, void *buf, size_t n)
{
    if (!buf)
        return;
    if (n < BUF_BIG) {
        free(buf);
        return;
    }
    size_t c = buf_size(n), same = 0;
    pthread_mutex_lock(&p->buf_lock);
    for (size_t i = 0; i < p->nbufs; i++)
        same += p->bufs[i].size == c;
    /* Per-size limit: a burst of one size cannot take every slot from
     * the others. */
    if (p->nbufs < TV_POOL_BUF_SLOTS && same < BUF_PER_SIZE &&
        p->buf_bytes + c <= TV_POOL_BUF_CACHE) {
        p->bufs[p->nbufs].p = buf;
        p->bufs[p->nbufs++].size = c;
        p->buf_bytes += c;
        buf = NULL;
    }
    pthread_mutex_unlock(&p->buf_lock);
    if (buf)
        munmap(buf, c);
}
