/* pool.c -- bounded FIFO in front of libuv's thread pool (pool.h).
 *
 * Fields under `lock`: head, tail, waiting, inflight_bytes, stopping.
 * `unfinished` is atomic. The loop, the async handle and every uv_* call
 * belong to the loop thread, except uv_async_send (thread-safe).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "metrics.h"
#include "pool.h"

struct tv_pool {
    uv_loop_t loop;
    uv_async_t wake;
    pthread_t thread;
    pthread_mutex_t lock;
    tv_job *head, *tail; /* waiting jobs, FIFO */
    size_t waiting, max_queue;
    size_t inflight_bytes, max_inflight;
    int stopping;
    atomic_size_t unfinished;
};

static void work_cb(uv_work_t *req)
{
    tv_job *job = req->data;
    job->work(job);
}

static void after_cb(uv_work_t *req, int status)
{
    tv_job *job = req->data;
    tv_pool *p = job->pool;
    (void)status; /* jobs are never cancelled */
    atomic_fetch_sub(&p->unfinished, 1);
    job->done(job);
}

/* Loop thread: hand waiting jobs to libuv while their bytes fit. */
static void on_wake(uv_async_t *h)
{
    tv_pool *p = h->data;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        tv_job *job = p->head;
        if (p->stopping) {
            pthread_mutex_unlock(&p->lock);
            uv_close((uv_handle_t *)&p->wake, NULL);
            return;
        }
        if (!job || (p->inflight_bytes &&
                     p->inflight_bytes + job->bytes > p->max_inflight)) {
            pthread_mutex_unlock(&p->lock);
            return;
        }
        p->head = job->next;
        if (!p->head)
            p->tail = NULL;
        p->waiting--;
        p->inflight_bytes += job->bytes;
        pthread_mutex_unlock(&p->lock);
        tv_metrics_queue_add(-1);
        job->req.data = job;
        if (uv_queue_work(&p->loop, &job->req, work_cb, after_cb) < 0)
            abort(); /* only fails for a NULL callback: a programmer bug */
    }
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
    int rc;
    tv_pool *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return -ENOMEM;
    snprintf(n, sizeof n, "%d", threads);
    setenv("UV_THREADPOOL_SIZE", n, 1);
    p->max_queue = max_queue;
    p->max_inflight = max_inflight_bytes;
    pthread_mutex_init(&p->lock, NULL);
    if ((rc = uv_loop_init(&p->loop)) < 0) {
        free(p);
        return rc;
    }
    if ((rc = uv_async_init(&p->loop, &p->wake, on_wake)) < 0) {
        uv_loop_close(&p->loop);
        free(p);
        return rc;
    }
    p->wake.data = p;
    if ((rc = pthread_create(&p->thread, NULL, loop_main, p)) != 0) {
        uv_close((uv_handle_t *)&p->wake, NULL);
        uv_run(&p->loop, UV_RUN_DEFAULT);
        uv_loop_close(&p->loop);
        free(p);
        return -rc;
    }
    *out = p;
    return 0;
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
    pthread_mutex_destroy(&p->lock);
    free(p);
}
