/* embed_job.h -- private to the HTTP front end: POST /embed as one job
 * with one owner, from the parsed body to the reply. See embed_job.c.
 */
#ifndef TV_EMBED_JOB_H
#define TV_EMBED_JOB_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "encode.h"
#include "pool.h"
#include "request.h"
#include "tables.h"

typedef struct req_ctx req_ctx;
typedef struct tv_server tv_server;

/* The sizes of one reply, known before anything is computed: both what the
 * job reserves of max_inflight_bytes and what it allocates come from here
 * (embed_plan_reply), so the two cannot disagree. */
typedef struct embed_plan {
    unsigned flags; /* for tokvec_embed: positions, output dtype */
    size_t rows;    /* the bytes tokvec_embed writes (tokvec_embed_size) */
    size_t scratch; /* JSON: float32 rows before encoding (= rows); torch:
                     * the rows (rounded up to 64) + archive; else 0 */
    size_t archive; /* torch: one sequence's torch.save archive; else 0 */
    size_t header;  /* npy: the header before the rows; else 0 */
    size_t body;    /* the reply's buffer: JSON bound, or header + rows */
    size_t reserve; /* scratch + body: all the job allocates */
    size_t least;   /* the fewest bytes the job can hold: = reserve but for
                     * JSON floats, where the body is a bound and `least`
                     * counts the shortest encoding (one digit and a
                     * separator per float) */
} embed_plan;

/* Sizes the reply to request q (checked against t) in format fmt. 0, or
 * -1 when a size does not fit in size_t (413). Pure; any thread. */
int embed_plan_reply(const tokvec_table *t, const tv_request *q, tv_format fmt,
                     embed_plan *out);

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
