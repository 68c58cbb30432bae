/* pool.h -- the worker pool: a bounded FIFO of /embed jobs and the
 * `threads` worker threads (tv-work-0..N-1) that run them. (The response
 * buffers they fill: bufcache.h.)
 *
 * Any thread reserves a place and pushes a job; the job waits in a FIFO of
 * at most max_queue jobs until (a) fewer than `threads` jobs run and (b)
 * the response bytes it will hold fit under max_inflight_bytes (a job
 * alone is always let through, so one large request cannot wedge the
 * queue; the routes refuse, 413, a reply that could not fit even alone). The
 * worker that takes it runs work() and then done(), both on that worker;
 * done() typically resumes the client's connection, which wakes the HTTP
 * thread that owns it. There is no other hop: no loop thread, no second queue.
 * The bytes stay reserved until tv_pool_release() (when the response is
 * freed).
 *
 * Threads: tv_pool_reserve, tv_pool_push, tv_pool_release,
 * tv_pool_try_inline, tv_pool_inline_done, tv_pool_try_start,
 * tv_pool_waiting,
 * tv_pool_unfinished and tv_pool_activity may be called from any thread;
 * tv_pool_start and tv_pool_stop from the main thread only.
 */
#ifndef TV_POOL_H
#define TV_POOL_H

#include <stddef.h>

typedef struct tv_pool tv_pool;
typedef struct tv_job tv_job;

/* Owned by the caller (embedded in its request context); must stay alive
 * from tv_pool_push until done() has returned. */
struct tv_job {
    void (*work)(tv_job *job); /* on a worker thread */
    void (*done)(tv_job *job); /* on the same worker, after work() -- or,
                                * for an expired job, without work() on
                                * the thread that called tv_pool_expire */
    size_t bytes;              /* response bytes reserved while in flight */
    int expired;               /* set by tv_pool_expire before done() */
    long long pushed_ms;       /* CLOCK_MONOTONIC, set by tv_pool_push */
    tv_job *next;              /* FIFO link, guarded by the pool's lock */
};

/* Starts `threads` workers (clamped to 1..1024), named tv-work-0..N-1.
 * 0 or a negative errno. */
int tv_pool_start(tv_pool **out, int threads, size_t max_queue,
                  size_t max_inflight_bytes);

/* Takes a place in the queue: -1 when max_queue jobs already wait (answer
 * 429) or the pool is stopping. A successful reserve must be followed by
 * exactly one push. Split in two so a caller can suspend its connection
 * between them: once pushed, a job may finish at any moment. */
int tv_pool_reserve(tv_pool *p);
void tv_pool_push(tv_pool *p, tv_job *job);

/* For a job too small to be worth a hand-off (microseconds of work): 1 if
 * the caller may run it at once on its own thread -- its bytes fit --
 * with the bytes taken:
 * call tv_pool_inline_done when the work is done, and tv_pool_release the
 * bytes as for any job. Busy workers and jobs waiting for a worker do not
 * stop it: a small request never waits behind large ones (the small-job
 * lane; it takes no worker's slot). 0: queue it as usual. */
int tv_pool_try_inline(tv_pool *p, size_t bytes);
void tv_pool_inline_done(tv_pool *p);

/* For a job that needs no worker (a large reply made as it is sent, on
 * the HTTP thread): 1 if it would start at once if pushed -- no job
 * waits, a worker is free, its bytes fit -- with the bytes taken (give
 * them back with tv_pool_release); 0: push it as usual, and it waits its
 * turn. Takes no worker's slot. */
int tv_pool_try_start(tv_pool *p, size_t bytes);

/* Counts bytes of a reply built without a reservation (its size known
 * only once built: /tokenize, /decode, /similar, GET /tokens) in the
 * in-flight total, even past max_inflight; tv_pool_release gives them
 * back. While the total is over max_inflight no new job starts. */
void tv_pool_charge(tv_pool *p, size_t bytes);

/* max_inflight_bytes as given to tv_pool_start. Any thread. */
size_t tv_pool_budget(const tv_pool *p);

/* The bytes in flight now (reserved, charged, not yet released). */
size_t tv_pool_inflight(tv_pool *p);

/* Jobs that have waited max_wait_ms or more since their push leave the
 * queue unstarted: expired is set and done() runs on the calling thread
 * (the reaper's tick: the control loop's, main thread), so a request cannot
 * wait behind others without bound. now_ms on CLOCK_MONOTONIC. Returns how
 * many expired. Any thread. */
size_t tv_pool_expire(tv_pool *p, long long now_ms, long long max_wait_ms);

/* Gives back bytes reserved by a job whose response is gone. */
void tv_pool_release(tv_pool *p, size_t bytes);

/* Jobs waiting in the FIFO, and jobs reserved but whose done() has not
 * returned yet. */
size_t tv_pool_waiting(tv_pool *p);
size_t tv_pool_unfinished(tv_pool *p);

/* A counter bumped by every push and inline attempt: whether the pool
 * was used since the last look (tv_bufcache_trim's `activity`). */
unsigned long tv_pool_activity(tv_pool *p);

/* Stops the workers after the jobs they are running finish; jobs still
 * waiting are dropped without done() (call after draining). Joins the
 * threads; frees. NULL is a no-op. */
void tv_pool_stop(tv_pool *p);

#endif
