/* embed_job.h -- private to the HTTP front end: POST /embed as one job,
 * from the parsed body to the reply. See embed_job.c.
 */
#ifndef TV_EMBED_JOB_H
#define TV_EMBED_JOB_H

#include <microhttpd.h>

typedef struct req_ctx req_ctx;

/* HTTP thread, the whole body in: parses and checks the request, plans
 * and reserves its reply, then runs the job at once (small) or queues it
 * and suspends the connection. Answers any error itself. */
enum MHD_Result embed_route(req_ctx *x);

/* HTTP thread, after a queued job is done (the connection resumed): hands
 * the reply to MHD, or answers 503 (expired), 500, or closes (client
 * gone). */
enum MHD_Result embed_reply(req_ctx *x);

#endif
