/* deadline.h -- private to the HTTP front end: the request deadline of
 * each connection (conn_watch) and the per-IP connection limit. The tick
 * that enforces the deadline is reaper.h's. See deadline.c.
 */
#ifndef TV_DEADLINE_H
#define TV_DEADLINE_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct tv_server tv_server;

/* One per connection (MHD's socket context). */
typedef struct conn_watch {
    struct conn_watch *prev, *next; /* guarded by tv_server.watch_lock */
    int fd;
    atomic_llong deadline_ms; /* CLOCK_MONOTONIC ms; 0 = not reading */
    atomic_int timed_out;     /* set by the tick */
    unsigned char ip[17];     /* family byte + address, for the per-IP
                               * count; ip[0] == 0: not counted */
    unsigned unescapes;       /* this request's; see framing_unescape() */
} conn_watch;

/* Main thread: the locks and the list (deadline_init), all of it freed
 * (deadline_fini, after every daemon has stopped and the last tick). */
void deadline_init(tv_server *s);
void deadline_fini(tv_server *s);

/* How long a connection has for its next request, in ms: the idle time
 * (at most request_timeout) plus the request itself. Any thread. */
long long deadline_span_ms(const tv_server *s);

/* MHD's thread: the connection waits for a request (on) or has one in
 * full (off). w may be NULL (unwatched). */
void deadline_arm(tv_server *s, conn_watch *w, int on);

/* MHD's thread: an answer of len bytes is queued; it must be sent at
 * min_send_rate at least, never cut before request_timeout. */
void deadline_send(tv_server *s, conn_watch *w, size_t len);

/* MHD: MHD_OPTION_NOTIFY_CONNECTION (opened / about to be closed). */
void deadline_on_connection(void *cls, struct MHD_Connection *c,
                            void **socket_context,
                            enum MHD_ConnectionNotificationCode code);

#endif
