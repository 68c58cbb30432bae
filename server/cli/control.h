/* control.h -- the control loop of `tokvec serve` (control.c, libuv):
 * signals, --watch, the drain. Main thread only.
 */
#ifndef TOKVEC_CONTROL_H
#define TOKVEC_CONTROL_H

#include <stddef.h>

#include "config.h"
#include "http.h"

/* Runs the loop on the main thread, with SIGHUP, SIGTERM and SIGINT
 * blocked on entry (in every thread: serve.c blocks them before any
 * starts): SIGHUP reloads, cfg->watch reloads when the served files
 * change, SIGTERM or SIGINT begins the drain (tv_server_drain_begin) and
 * waits for it (up to cfg->drain_timeout; a second signal stops the
 * wait). *open gets the requests still unanswered when it returned.
 * 0, or -1 when the loop could not start (logged; nothing drained). */
int tv_control_run(tv_server *srv, const tv_config *cfg, size_t *open);

#endif
