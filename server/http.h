/* http.h -- the HTTP front end: libmicrohttpd daemon, routes, auth, limits,
 * and the current table (swapped atomically on reload).
 *
 * Threads: tv_server_* are called from the main thread only (serve.c).
 * Requests run on MHD's polling thread (parse, validate, cheap routes) and
 * on libuv workers (embed + serialize, see pool.h); a request's connection
 * is suspended while its job runs and resumed from the loop thread.
 */
#ifndef TV_HTTP_H
#define TV_HTTP_H

#include <stddef.h>

#include "config.h"

typedef struct tv_server tv_server;

/* Opens the configured table, starts the pool and the daemon. On failure
 * err holds one line (the table error names the file) and returns -2 for a
 * bad table (exit 2) or -1 for anything else. cfg must outlive the server.
 */
int tv_server_start(const tv_config *cfg, tv_server **out, char *err,
                    size_t errlen);

/* Re-opens the table path; on success swaps it in (requests in flight
 * finish on the old one, closed when its last request ends). 0 or -1;
 * logs either way and counts tokvec_reloads_total. */
int tv_server_reload(tv_server *s);

/* Stops accepting connections, answers new work with 503 and /ready with
 * 503, waits for jobs in flight up to timeout seconds. Returns the number
 * of jobs still unfinished (0 = clean). */
size_t tv_server_drain(tv_server *s, double timeout);

/* Stops the daemon and the pool, closes the table, frees. */
void tv_server_stop(tv_server *s);

#endif
