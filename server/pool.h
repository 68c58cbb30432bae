/* pool.h -- the work queue between MHD's threads and the libuv pool.
 *
 * One loop thread runs a libuv loop. Any thread submits a job; the job
 * waits in a bounded FIFO until the bytes its response will hold fit under
 * max_inflight_bytes, then goes to uv_queue_work. work() runs on a libuv
 * worker; done() runs on the loop thread when work() returns. The bytes
 * stay reserved until tv_pool_release() (when the response is freed).
 * tv_pool_submit, tv_pool_release and tv_pool_waiting are thread-safe.
 */
#ifndef TV_POOL_H
#define TV_POOL_H

#include <stddef.h>
#include <uv.h>

typedef struct tv_pool tv_pool;
typedef struct tv_job tv_job;

struct tv_job {
    uv_work_t req;             /* libuv's; req.data is the job */
    void (*work)(tv_job *job); /* on a worker thread */
    void (*done)(tv_job *job); /* on the loop thread */
    size_t bytes;              /* response bytes reserved while in flight */
    tv_pool *pool;
    tv_job *next; /* FIFO link, guarded by the pool's lock */
};

/* Starts the loop thread. threads sets UV_THREADPOOL_SIZE (call before any
 * other libuv use in the process). 0 or a negative errno. */
int tv_pool_start(tv_pool **out, int threads, size_t max_queue,
                  size_t max_inflight_bytes);

/* Takes a place in the queue: -1 when max_queue jobs already wait (answer
 * 429). A successful reserve must be followed by exactly one push. Split in
 * two so a caller can suspend its connection between them: once pushed, a
 * job may finish at any moment. */
int tv_pool_reserve(tv_pool *p);
void tv_pool_push(tv_pool *p, tv_job *job);

/* Gives back bytes reserved by a job whose response is gone. */
void tv_pool_release(tv_pool *p, size_t bytes);

/* Jobs waiting for a worker, and jobs submitted but not yet done. */
size_t tv_pool_waiting(tv_pool *p);
size_t tv_pool_unfinished(tv_pool *p);

/* Stops the loop after the jobs already handed to libuv finish; jobs still
 * waiting are dropped (call after draining). Joins the thread; frees. */
void tv_pool_stop(tv_pool *p);

#endif
