/* embed_job.h -- private to the HTTP front end: POST /embed as one job
 * with one owner, from the parsed body to the reply. See embed_job.c.
 */
#ifndef TV_EMBED_JOB_H
#define TV_EMBED_JOB_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "embed_plan.h"
#include "encode.h"
#include "pool.h"
#include "request.h"
#include "tables.h"

typedef struct req_ctx req_ctx;
typedef struct tv_server tv_server;

/* One /embed request's job, inside its req_ctx. The HTTP thread owns it
 * but from tv_pool_push until done() (embed_job.c, "Ownership"). */
typedef struct embed_job {
    tv_job task;    /* the pool's part: work(), done(), bytes */
    table_ref *ref; /* the table, from the check until the reply owns it */
    tv_request req;
    tv_format fmt;
    int64_t dim;
    embed_plan plan;
    char *out; /* the reply's body, plan.body bytes (bufcache) */
    size_t out_len;
    size_t reserved; /* of max_inflight_bytes, until the reply owns it */
    int failed;      /* embedding or allocation failed: 500 */
    int gone;        /* the client left before its job ran: 499 */
    int inline_job;  /* ran on the HTTP thread: see small_job() */
    int chunked;     /* a large raw/npy reply made as it is sent: the
                      * job only admits it (embed_job.c, "Large
                      * replies") */
    int text_stage;  /* text inputs: 1 while they are tokenized on a
                      * worker (embed_text.h), 2 after */
    int text_bad;    /* tokenizing answered text_err */
    tv_error text_err;
    long long t_push, t_start, t_end; /* ns, for tokvec_job_phase_* */
} embed_job;

/* A fresh job (the request's first call), and what a job still holds
 * given back (the request's end, whatever happened). HTTP thread. */
void embed_job_init(embed_job *j);
void embed_job_fini(tv_server *s, embed_job *j);

/* HTTP thread, the whole body in: parses and checks the request, plans
 * and reserves its reply, then runs the job at once (small) or queues it
 * and suspends the connection. Answers any error itself. */
enum MHD_Result embed_route(req_ctx *x);

/* HTTP thread, after a queued job is done (the connection resumed): hands
 * the reply to MHD, or answers 503 (expired), 500, or closes (client
 * gone). */
enum MHD_Result embed_reply(req_ctx *x);

#endif
