/* reaper.h -- the reaper: the request deadlines, max_queue_wait and the
 * trim of idle memory, as a tick with no thread of its own (reaper.c).
 *
 * Threads: main thread only, one call at a time, between tv_server_start
 * and tv_server_stop (`tokvec serve`: its control loop, control.c).
 */
#ifndef TV_REAPER_H
#define TV_REAPER_H

typedef struct tv_server tv_server;

/* The period the caller runs tv_server_tick at, in ms: a few times per
 * request_timeout and per max_queue_wait, 10 .. 500. */
long long tv_server_tick_ms(const tv_server *s);

/* One pass: shuts down the connections past their request deadline,
 * answers 503 to the jobs queued longer than max_queue_wait and gives idle
 * cached memory back; it never waits on a request. Without ticks the
 * server still answers, but nothing is cut or expired. */
void tv_server_tick(tv_server *s);

#endif
