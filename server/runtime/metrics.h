/* metrics.h -- counters and the request-duration histogram, rendered in
 * Prometheus text format for GET /metrics. Names are part of the contract:
 *   tokvec_requests_total{route,code}   tokvec_request_duration_seconds{route}
 *   tokvec_tokens_total                 tokvec_response_bytes_total
 *   tokvec_tokenized_bytes_total
 *   tokvec_inflight_requests            tokvec_queue_depth
 *   tokvec_inflight_reply_bytes
 *   tokvec_reloads_total{result}        tokvec_table_info{vocab_size,dim,
 *                                                          dtype,positional}
 * Threads: any thread may call any function. The request path's updates
 * (requests, inflight, queue, jobs, tokens, bytes, reloads) are lock-free
 * relaxed atomics; tv_metrics_set_table and tv_metrics_render take one
 * lock (the table_info labels), never held across anything else.
 */
#ifndef TV_METRICS_H
#define TV_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "routes.h"

void tv_metrics_request(tv_route r, int status, double seconds,
                        uint64_t tokens, uint64_t bytes);
void tv_metrics_inflight_add(int delta);
/* One finished /embed job's three phases, in seconds: queue (pushed by
 * the HTTP thread until a worker takes it: the hand-off plus any wait),
 * work (lookup and encoding), resume (the worker resumes the connection
 * until its HTTP thread hands the reply to MHD: the hand-off back). A job
 * run inline on its HTTP thread has work only.
 * tokvec_job_phase_seconds_total{phase}, tokvec_jobs_total{where}. */
void tv_metrics_job(int inline_, double queue, double work, double resume);
void tv_metrics_reload(int ok);
/* Bytes of text tokenized (/tokenize, text in /embed):
 * tokvec_tokenized_bytes_total. */
void tv_metrics_tokenized(uint64_t bytes);
/* Labels of tokvec_table_info; called at start and after each reload. */
void tv_metrics_set_table(int64_t vocab_size, int64_t dim, const char *dtype,
                          const char *positional);

/* Renders everything; returns a malloc'd NUL-terminated string (caller
 * frees) and its length in *len, or NULL on out of memory. The pool's
 * gauges (tokvec_queue_depth: jobs reserved and not yet started;
 * tokvec_inflight_reply_bytes) are read from pool as it renders (0 when
 * pool is NULL): the pool knows nothing of metrics. */
char *tv_metrics_render(tv_pool *pool, size_t *len);

#endif
