/* control.h -- the control loop of `tokvec serve` (control.c, libuv):
 * signals, the reaper's tick, --watch, the drain. Main thread only.
 */
#ifndef TOKVEC_CONTROL_H
#define TOKVEC_CONTROL_H

#include <stddef.h>

#include "config.h"
#include "http.h"

typedef struct control tv_control;

/* Makes the loop, its timers and, with cfg->watch, the watches on the
 * served files -- before the server starts, so that a change made once
 * it answers is seen. cfg must outlive it. 0, or -1 (logged). */
int tv_control_open(const tv_config *cfg, tv_control **out);

/* Runs the loop on the main thread, with SIGHUP, SIGTERM and SIGINT
 * blocked on entry (in every thread: serve.c blocks them before any
 * starts): it ticks srv's reaper (tv_server_tick) until it returns,
 * SIGHUP reloads srv, a change of a watched file reloads it,
 * SIGTERM or SIGINT begins the drain (tv_server_drain_begin) and waits
 * for it (up to cfg->drain_timeout; a second signal stops the wait).
 * *open gets the requests still unanswered when it returned. 0, or -1
 * when the signals could not be taken (logged; nothing drained). */
int tv_control_run(tv_control *c, tv_server *srv, size_t *open);

/* Closes the loop's handles and frees c; NULL is a no-op. */
void tv_control_close(tv_control *c);

#endif
