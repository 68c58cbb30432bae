/* pool.c -- the worker pool (pool.h): a bounded FIFO of jobs and the
 * workers that run them. (Response buffers: bufcache.c.)
 *
 * What must hold: at most `threads` jobs run at once on the workers
 * (`busy`), at most max_queue wait, and the bytes of running jobs plus
 * responses not yet freed stay under max_inflight unless a job runs alone
 * (replies charged after they are built, tv_pool_charge, may step past it
 * by what the workers were building: then nothing new starts until enough
 * is released). Small jobs run inline on an HTTP thread beside busy
 * workers (tv_pool_try_inline): they take bytes, never a worker's slot. A job
 * is taken by the first free worker, which runs work() and done() itself, so
 * a job crosses threads twice in all: the HTTP thread pushes it, the worker
 * resumes the connection.
 *
 * Threads and locks: `lock` guards head, tail, waiting, idle, busy,
 * inflight_bytes and stopping; workers sleep on `ready` (signalled by
 * push, by release when a job waits, and by a worker that leaves more
 * work behind). `lock` is a leaf lock (nothing else is taken while it is
 * held; a job's work() and done() run without it).
 * `unfinished` and `activity` are atomic. threads, max_queue and
 * max_inflight never change after start.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pool.h"

struct tv_pool {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    tv_job *head, *tail;   /* waiting jobs, FIFO; lock */
    size_t waiting;        /* jobs reserved, not yet taken by a worker */
    size_t idle;           /* workers asleep on `ready`; lock */
    size_t busy;           /* jobs running, on workers or inline; lock */
    size_t inflight_bytes; /* lock */
    int stopping;          /* lock */
    size_t threads, started, max_queue, max_inflight;
    pthread_t *tids; /* main thread only */
    atomic_size_t unfinished;
    atomic_ulong activity; /* bumped by every push and inline attempt:
                            * tells the memory trim whether the pool was
                            * used (tv_pool_activity) */
};

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Under lock: `bytes` more fit under max_inflight (alone, anything fits:
 * the callers refuse what could never fit before it gets here). */
static int bytes_fit(const tv_pool *p, size_t bytes)
{
    return !p->inflight_bytes ||
           (p->inflight_bytes <= p->max_inflight &&
            bytes <= p->max_inflight - p->inflight_bytes);
}

/* Under lock: a job of `bytes` may start now on a worker. */
static int fits(const tv_pool *p, size_t bytes)
{
    return p->busy < p->threads && bytes_fit(p, bytes);
}

/* Under lock: the first waiting job may start now. */
static int can_start(const tv_pool *p)
{
    return p->head && fits(p, p->head->bytes);
}

static void *worker_main(void *arg)
{
    tv_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->stopping)
            break;
        if (!can_start(p)) {
            p->idle++;
            pthread_cond_wait(&p->ready, &p->lock);
            p->idle--;
            continue;
        }
        tv_job *job = p->head;
        p->head = job->next;
        if (!p->head)
            p->tail = NULL;
        p->waiting--;
        p->busy++;
        p->inflight_bytes += job->bytes;
        /* More work may fit: pass the wake-up on rather than leave a
         * job waiting beside a sleeping worker. */
        if (p->idle && can_start(p))
            pthread_cond_signal(&p->ready);
        pthread_mutex_unlock(&p->lock);
        job->work(job);
        job->done(job); /* may free the job: not touched after */
        atomic_fetch_sub(&p->unfinished, 1);
        pthread_mutex_lock(&p->lock);
        p->busy--;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int tv_pool_start(tv_pool **out, int threads, size_t max_queue,
                  size_t max_inflight_bytes)
{
    int rc = -ENOMEM;
    tv_pool *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return rc;
    threads = threads < 1 ? 1 : threads > 1024 ? 1024 : threads;
    p->threads = (size_t)threads;
    p->max_queue = max_queue;
    p->max_inflight = max_inflight_bytes;
    atomic_init(&p->unfinished, 0);
    atomic_init(&p->activity, 0);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->ready, NULL);
    p->tids = calloc(p->threads, sizeof *p->tids);
    if (!p->tids)
        goto out;
    for (size_t i = 0; i < p->threads; i++) {
        char name[16];
        rc = -pthread_create(&p->tids[i], NULL, worker_main, p);
        if (rc < 0)
            goto out;
        p->started++;
        snprintf(name, sizeof name, "tv-work-%u", (unsigned)i % 1024u);
        pthread_setname_np(p->tids[i], name);
    }
    rc = 0;
out:
    if (rc < 0) {
        tv_pool_stop(p);
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
    return 0;
}

void tv_pool_push(tv_pool *p, tv_job *job)
{
    job->next = NULL;
    job->expired = 0;
    job->pushed_ms = mono_ms();
    atomic_fetch_add_explicit(&p->activity, 1, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    if (p->idle)
        pthread_cond_signal(&p->ready);
    pthread_mutex_unlock(&p->lock);
}

size_t tv_pool_expire(tv_pool *p, long long now_ms, long long max_wait_ms)
{
    tv_job *first = NULL, **last = &first;
    size_t n = 0;
    pthread_mutex_lock(&p->lock);
    /* Oldest first: pushes append, so the first young job ends the run. */
    while (p->head && now_ms - p->head->pushed_ms >= max_wait_ms) {
        tv_job *job = p->head;
        p->head = job->next;
        if (!p->head)
            p->tail = NULL;
        p->waiting--;
        job->next = NULL;
        *last = job;
        last = &job->next;
        n++;
    }
    /* The new head may fit where the old one did not. */
    if (n && p->idle && can_start(p))
        pthread_cond_signal(&p->ready);
    pthread_mutex_unlock(&p->lock);
    for (tv_job *job = first, *next; job; job = next) {
        next = job->next;
        job->expired = 1;
        job->done(job); /* may free the job */
        atomic_fetch_sub(&p->unfinished, 1);
    }
    return n;
}

int tv_pool_try_inline(tv_pool *p, size_t bytes)
{
    int ok = 0;
    atomic_fetch_add_explicit(&p->activity, 1, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    /* Busy workers and waiting jobs do not hold a small job back (it
     * would wait for large ones to finish: the small-job lane); only its
     * own bytes must fit. A waiting job that needs the bytes small ones
     * hold a moment longer still ends at max_queue_wait. */
    if (!p->stopping && bytes_fit(p, bytes)) {
        p->inflight_bytes += bytes;
        ok = 1;
    }
    pthread_mutex_unlock(&p->lock);
    return ok;
}

int tv_pool_try_start(tv_pool *p, size_t bytes)
{
    int ok = 0;
    atomic_fetch_add_explicit(&p->activity, 1, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    /* Exactly when a pushed job would start now: FIFO order and the
     * worker count hold as for any job, without the two hand-offs. */
    if (!p->stopping && !p->head && fits(p, bytes)) {
        p->inflight_bytes += bytes;
        ok = 1;
    }
    pthread_mutex_unlock(&p->lock);
    return ok;
}

void tv_pool_inline_done(tv_pool *p)
{
    (void)p; /* the bytes stay until tv_pool_release; no slot was taken */
}

void tv_pool_charge(tv_pool *p, size_t bytes)
{
    pthread_mutex_lock(&p->lock);
    p->inflight_bytes = bytes > SIZE_MAX - p->inflight_bytes
                            ? SIZE_MAX
                            : p->inflight_bytes + bytes;
    pthread_mutex_unlock(&p->lock);
}

size_t tv_pool_budget(const tv_pool *p)
{
    return p->max_inflight; /* never changes after start */
}

size_t tv_pool_inflight(tv_pool *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->inflight_bytes;
    pthread_mutex_unlock(&p->lock);
    return n;
}

void tv_pool_release(tv_pool *p, size_t bytes)
{
    pthread_mutex_lock(&p->lock);
    p->inflight_bytes -= bytes < p->inflight_bytes ? bytes : p->inflight_bytes;
    if (p->idle && can_start(p))
        pthread_cond_signal(&p->ready);
    pthread_mutex_unlock(&p->lock);
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

unsigned long tv_pool_activity(tv_pool *p)
{
    return atomic_load_explicit(&p->activity, memory_order_relaxed);
}

void tv_pool_stop(tv_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->ready);
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < p->started; i++)
        pthread_join(p->tids[i], NULL);
    free(p->tids);
    pthread_cond_destroy(&p->ready);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
