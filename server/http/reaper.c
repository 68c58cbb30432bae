/* reaper.c -- the reaper's tick (reaper.h): the request deadlines
 * (deadline.c sets them), max_queue_wait, and idle cached memory given
 * back.
 *
 * The reaper has no thread of its own: `tokvec serve` runs tv_server_tick
 * from a repeating uv_timer of its control loop (server/cli/control.c),
 * every tv_server_tick_ms, on the main thread. What must hold: a tick is
 * cheap and never waits on a request -- it shuts down (shutdown(2), never
 * close) the sockets past their deadline, MHD sees EOF and closes them on
 * its own thread; it answers 503 to the jobs queued longer than
 * max_queue_wait (tv_pool_expire runs their done(), which queues the
 * reply and resumes the connection); it unmaps idle response buffers.
 *
 * Threads and locks: tv_server_tick runs on the control loop's thread (the
 * main thread), one call at a time, between tv_server_start and
 * tv_server_stop; `last_trim` is its alone. It holds watch_lock only while
 * it walks the watches (MHD's threads link and unlink them under it):
 * nothing that may take time or another lock (logging, tv_pool_expire,
 * tv_bufcache_trim) runs under it, so a slow stderr never stalls MHD's
 * thread on the lock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "deadline.h"
#include "log.h"
#include "reaper.h"
#include "server.h"

/* The reaper's period: a few times per request_timeout and per
 * max_queue_wait, 10 ms .. 0.5 s. */
long long tv_server_tick_ms(const tv_server *s)
{
    long long period = deadline_span_ms(s) / 8;
    long long qw = (long long)(s->cfg->max_queue_wait * 1e3) / 8;
    if (qw > 0 && qw < period)
        period = qw;
    return period < 10 ? 10 : period > 500 ? 500 : period;
}

void tv_server_tick(tv_server *s)
{
    long long now = now_ms();
    int cut = 0;
    pthread_mutex_lock(&s->watch_lock);
    for (conn_watch *w = s->watches.next; w != &s->watches; w = w->next) {
        long long d = atomic_load(&w->deadline_ms);
        if (d && now >= d &&
            atomic_compare_exchange_strong(&w->deadline_ms, &d, 0)) {
            atomic_store(&w->timed_out, 1);
            shutdown(w->fd, SHUT_RDWR);
            cut++;
        }
    }
    pthread_mutex_unlock(&s->watch_lock);
    if (cut)
        tv_log(TV_LOG_INFO,
               "closed %d connection%s that did not send "
               "a whole request within 2 x request_timeout (%gs)",
               cut, cut == 1 ? "" : "s", s->cfg->request_timeout);
    if (s->pool)
        tv_pool_expire(s->pool, now,
                       (long long)(s->cfg->max_queue_wait * 1e3));
    if (now - s->last_trim >= 500) {
        tv_bufcache_trim(s->bufs, now, tv_pool_activity(s->pool));
        s->last_trim = now;
    }
}
