/* http.h -- the HTTP front end: libmicrohttpd daemon, routes, auth, limits,
 * and the current table (swapped atomically on reload).
 *
 * Threads: tv_server_start, _reload, _drain_begin, _summary and _stop are
 * called from the main thread only (serve.c, control.c); tv_server_busy
 * from any. The reaper (request deadlines, max_queue_wait) has no thread:
 * the caller ticks it, reaper.h.
 * Requests run on MHD's N HTTP threads per listener (I/O, parse, validate,
 * cheap routes; tv-http-N, tv-unix-N) and on the worker pool (embed +
 * serialize, tv-work-N, see pool.h); a request's connection is suspended
 * while its job runs and resumed by the worker that ran it.
 */
#ifndef TV_HTTP_H
#define TV_HTTP_H

#include <stddef.h>

#include "config.h"
#include "server_codes.h"
#include "tables.h" /* tv_server_reload, tv_server_summary */

typedef struct tv_server tv_server;

/* The exit status for a tv_server_start code: 2 for bad input (fix the
 * command line or the table), 1 for the rest (try again later). */
int tv_server_exit_status(int code);

/* Opens the configured table, starts the pool and the daemon. 0, or a
 * TV_SERVER_E_* code with one line in err that says what failed (a table
 * error names the file; out of memory says "out of memory"). cfg must
 * outlive the server. */
int tv_server_start(const tv_config *cfg, tv_server **out, char *err,
                    size_t errlen);

/* Starts the shutdown: /ready answers 503, new /embed work 503 draining,
 * and the listening socket is closed (new connections are refused;
 * connections already open are still served). Idempotent. */
void tv_server_drain_begin(tv_server *s);

/* Requests begun whose response has not been fully sent yet (the drain is
 * over when this is 0); *jobs (if not NULL) gets the /embed jobs queued or
 * running. Any thread. */
size_t tv_server_busy(tv_server *s, size_t *jobs);

/* Stops the daemon and the pool, closes the table, frees. Only once
 * tv_server_busy() reports no jobs: MHD cannot be stopped under a suspended
 * connection. NULL is a no-op. */
void tv_server_stop(tv_server *s);

#endif
