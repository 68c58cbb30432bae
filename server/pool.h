/* pool.h -- the worker pool: a bounded FIFO of /embed jobs and the
 * `threads` worker threads (tv-work-0..N-1) that run them, plus the cache
 * of large response buffers.
 *
 * Any thread reserves a place and pushes a job; the job waits in a FIFO of
 * at most max_queue jobs until (a) fewer than `threads` jobs run and (b)
 * the response bytes it will hold fit under max_inflight_bytes (a job
 * alone is always let through, so one large request cannot wedge the
 * queue). The worker
 * that takes it runs work() and then done(), both on that worker; done()
 * typically resumes the client's connection, which wakes the HTTP thread
 * that owns it. There is no other hop: no loop thread, no second queue.
 * The bytes stay reserved until tv_pool_release() (when the response is
 * freed).
 *
 * Threads: tv_pool_reserve, tv_pool_push, tv_pool_release,
 * tv_pool_try_inline, tv_pool_inline_done, tv_pool_waiting,
 * tv_pool_unfinished, tv_pool_trim and the tv_pool_buf_* calls may be
 * called from any thread; tv_pool_start and tv_pool_stop from
 * the main thread only.
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

/* For a job too small to be worth a hand-off: 1 if the caller may run it
 * at once on its own thread -- no job waits, reserved or pushed (so none
 * is overtaken), fewer
 * than `threads` jobs run and its bytes fit -- with a running slot and the
 * bytes taken: call tv_pool_inline_done when the work is done, and
 * tv_pool_release the bytes as for any job. 0: queue it as usual. */
int tv_pool_try_inline(tv_pool *p, size_t bytes);
void tv_pool_inline_done(tv_pool *p);

/* Jobs that have waited max_wait_ms or more since their push leave the
 * queue unstarted: expired is set and done() runs on the calling thread
 * (the reaper), so a request cannot wait behind others without bound.
 * now_ms on CLOCK_MONOTONIC. Returns how many expired. Any thread. */
size_t tv_pool_expire(tv_pool *p, long long now_ms, long long max_wait_ms);

/* Gives back bytes reserved by a job whose response is gone. */
void tv_pool_release(tv_pool *p, size_t bytes);

/* Response buffers, 64-byte aligned. Below 64 KiB they come from malloc;
 * from 64 KiB they are mmap'd in power-of-two sizes and, when freed, kept
 * for reuse in a cache of at most TV_POOL_BUF_CACHE bytes, per size at
 * most half of that and TV_POOL_BUF_PER_CLASS buffers (at least 2): a fresh
 * mapping costs a page fault and a zeroed page per 4 KiB, which profiling
 * showed as ~25% of the server's CPU on 4 MiB raw replies, and unmapping
 * one interrupts every core the process runs on (TLB shootdown: 17% of an
 * HTTP thread on 8x4 JSON at 32 connections when only 8 buffers of a size
 * were kept). A cached buffer nobody took for TV_POOL_BUF_IDLE_MS is
 * unmapped by tv_pool_trim, so an idle process keeps little besides the
 * table. tv_pool_buf_free takes the size given to tv_pool_buf_get. Any
 * thread. */
#define TV_POOL_BUF_CACHE ((size_t)256 << 20)
#define TV_POOL_BUF_PER_CLASS 64
#define TV_POOL_BUF_CLASSES 32 /* 64 KiB .. 2^47 bytes */
#define TV_POOL_BUF_IDLE_MS 1500
void *tv_pool_buf_get(tv_pool *p, size_t n);
void tv_pool_buf_free(tv_pool *p, void *buf, size_t n);

/* Gives cached memory back to the OS: unmaps cached buffers idle for
 * TV_POOL_BUF_IDLE_MS or more (now_ms on CLOCK_MONOTONIC), and once the
 * pool has been idle that long after some work, asks malloc to return its
 * free pages (malloc_trim). Call it periodically (the reaper does, about
 * once a second). Returns the bytes unmapped. */
size_t tv_pool_trim(tv_pool *p, long long now_ms);

/* Jobs waiting in the FIFO, and jobs reserved but whose done() has not
 * returned yet. */
size_t tv_pool_waiting(tv_pool *p);
size_t tv_pool_unfinished(tv_pool *p);

/* Cached response bytes (for tests and the idle check). */
size_t tv_pool_cached_bytes(tv_pool *p);

/* Stops the workers after the jobs they are running finish; jobs still
 * waiting are dropped without done() (call after draining). Joins the
 * threads; frees. NULL is a no-op. */
void tv_pool_stop(tv_pool *p);

#endif
