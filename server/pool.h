/* pool.h -- the bounded work queue between MHD's threads and libuv's pool.
 *
 * One loop thread runs a private libuv loop. Any thread reserves a place
 * and pushes a job; the job waits in a FIFO of at most max_queue jobs until
 * (a) one of the `threads` workers is free and (b) the response bytes it
 * will hold fit under max_inflight_bytes (a job alone is always let
 * through, so one large request cannot wedge the queue). The loop thread
 * then hands it to uv_queue_work, so libuv's own queue never holds more
 * jobs than there are workers: the FIFO is the only place jobs wait, and
 * its bound is what answers 429. work() runs on a libuv worker; done() runs
 * on the loop thread after work() returns. The bytes stay reserved until
 * tv_pool_release() (when the response is freed).
 *
 * Threads: tv_pool_reserve, tv_pool_push, tv_pool_release,
 * tv_pool_waiting, tv_pool_unfinished and the tv_pool_buf_* calls may be
 * called from any thread;
 * tv_pool_start and tv_pool_stop from the main thread only.
 */
#ifndef TV_POOL_H
#define TV_POOL_H

#include <stddef.h>
#include <uv.h>

typedef struct tv_pool tv_pool;
typedef struct tv_job tv_job;

/* Owned by the caller (embedded in its request context); must stay alive
 * from tv_pool_push until done() has run. */
struct tv_job {
    uv_work_t req;             /* libuv's; req.data is the job */
    void (*work)(tv_job *job); /* on a worker thread */
    void (*done)(tv_job *job); /* on the loop thread */
    size_t bytes;              /* response bytes reserved while in flight */
    tv_pool *pool;             /* set by tv_pool_push */
    tv_job *next;              /* FIFO link, guarded by the pool's lock */
};

/* Starts the loop thread. threads (>= 1) sets UV_THREADPOOL_SIZE, which
 * libuv reads once when its pool first starts: call before any other use
 * of uv_queue_work in the process. 0 or a negative errno. */
int tv_pool_start(tv_pool **out, int threads, size_t max_queue,
                  size_t max_inflight_bytes);

/* Takes a place in the queue: -1 when max_queue jobs already wait (answer
 * 429) or the pool is stopping. A successful reserve must be followed by
 * exactly one push. Split in two so a caller can suspend its connection
 * between them: once pushed, a job may finish at any moment. */
int tv_pool_reserve(tv_pool *p);
void tv_pool_push(tv_pool *p, tv_job *job);

/* Gives back bytes reserved by a job whose response is gone. */
void tv_pool_release(tv_pool *p, size_t bytes);

/* Response buffers, 64-byte aligned. Below 64 KiB they come from malloc;
 * from 64 KiB they are mmap'd in power-of-two sizes and, when freed, kept
 * for reuse in a small cache (at most TV_POOL_BUF_CACHE bytes, 32 buffers,
 * 8 of one size): a fresh mapping costs a page fault and a zeroed page per
 * 4 KiB, which profiling showed as ~25% of the server's CPU on 4 MiB raw
 * replies (and malloc's arenas trimming and refaulting ~100 KiB JSON
 * replies cost ~10% of 8x4 JSON throughput), and freeing it gives the
 * memory back (RSS stays at most the cache above the working set).
 * tv_pool_buf_free takes the size given to tv_pool_buf_get. Any thread. */
#define TV_POOL_BUF_CACHE ((size_t)64 << 20)
#define TV_POOL_BUF_SLOTS 32
void *tv_pool_buf_get(tv_pool *p, size_t n);
void tv_pool_buf_free(tv_pool *p, void *buf, size_t n);

/* Jobs waiting in the FIFO, and jobs reserved but whose done() has not
 * run yet. */
size_t tv_pool_waiting(tv_pool *p);
size_t tv_pool_unfinished(tv_pool *p);

/* Stops the loop after the jobs already handed to libuv finish; jobs still
 * waiting are dropped without done() (call after draining). Joins the
 * thread; frees. NULL is a no-op. */
void tv_pool_stop(tv_pool *p);

#endif
