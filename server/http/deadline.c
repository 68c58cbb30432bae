/* deadline.c -- the request deadline of each connection and the per-IP
 * connection limit (deadline.h).
 *
 * Request deadline: MHD's own timeout counts inactivity only, so a client
 * sending a header byte every few seconds would keep its connection (and
 * one of max_connections) forever. Each connection therefore has a
 * conn_watch (MHD's socket context): from the moment it opens, or its
 * previous response is done, the next request -- headers and body -- must
 * arrive within 2 x request_timeout. (What we mean is request_timeout from
 * the request's first byte, which MHD does not show us; the idle time
 * before that byte is itself at most request_timeout, MHD's inactivity
 * limit, so no request that takes less than request_timeout is cut.) The
 * deadline is off from the moment an answer is queued or the whole request
 * is in. Here the deadlines are set; the reaper's tick (reaper.c, run by
 * the control loop of `tokvec serve`) checks them a few times per timeout
 * and shuts down (shutdown(2), never close) the socket of a late one; MHD
 * then sees EOF and closes it on its own thread.
 *
 * Threads and locks: deadline_arm, deadline_send and
 * deadline_on_connection run on MHD's HTTP threads; init and fini on the
 * main thread. The list of watches is guarded by watch_lock (the tick
 * walks it under that lock); `deadline_ms` is atomic (MHD's thread arms
 * and disarms it, the tick reads it and takes it back to 0 when it cuts).
 * MHD calls the CLOSED notification before it closes the fd, and it
 * unlinks under watch_lock, so the tick never shuts down a descriptor
 * number that was reused. ip_lock guards the per-address counts; it is a
 * leaf lock.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"
#include "server.h"

/* Open TCP connections of one client address (--max-connections-per-ip).
 * Kept here, not by MHD, because each HTTP thread is its own MHD daemon
 * and MHD counts per daemon. */
typedef struct ip_count {
    struct ip_count *next;
    unsigned char key[17];
    unsigned n;
} ip_count;

/* Idle (at most request_timeout) plus the request itself. */
long long deadline_span_ms(const tv_server *s)
{
    double ms = 2 * s->cfg->request_timeout * 1e3;
    return ms < 1 ? 1 : (long long)ms;
}

void deadline_arm(tv_server *s, conn_watch *w, int on)
{
    if (w)
        atomic_store(&w->deadline_ms, on ? now_ms() + deadline_span_ms(s) : 0);
}

/* A client that reads slowly cannot hold its reply (and the reply's share
 * of max_inflight_bytes) for longer than its size at min_send_rate. */
void deadline_send(tv_server *s, conn_watch *w, size_t len)
{
    double ms = s->cfg->request_timeout * 1e3,
           rate = (double)s->cfg->min_send_rate;
    if ((double)len / rate * 1e3 > ms)
        ms = (double)len / rate * 1e3;
    if (w)
        atomic_store(&w->deadline_ms, now_ms() + (long long)ms + 1);
}
/* --- connections per client address ------------------------------------- */

static unsigned ip_hash(const unsigned char *k)
{
    unsigned h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < 17; i++)
        h = (h ^ k[i]) * 16777619u;
    return h & 255;
}

/* A new TCP connection: counts it against its address; 0 if that address
 * already holds max_connections_per_ip (the connection is not counted and
 * must be closed). Unix-socket connections have no address: always 1. */
static int ip_take(tv_server *s, struct MHD_Connection *c, conn_watch *w)
{
    unsigned limit = (unsigned)s->cfg->max_connections_per_ip;
    if (!limit)
        return 1;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
        c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci)
        return 1;
    const struct sockaddr *sa = ci->client_addr;
    unsigned char key[17] = {0};
    if (sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        key[0] = 6;
        memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    } else {
        return 1;
    }
    int ok = 1;
    pthread_mutex_lock(&s->ip_lock);
    ip_count **b = &s->ip_buckets[ip_hash(key)], *e = *b;
    while (e && memcmp(e->key, key, sizeof key))
        e = e->next;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e) {
            memcpy(e->key, key, sizeof key);
            e->next = *b;
            *b = e;
        }
    }
    if (!e || e->n >= limit) {
        ok = 0; /* out of memory counts as over the limit */
    } else {
        e->n++;
        memcpy(w->ip, key, sizeof key);
    }
    pthread_mutex_unlock(&s->ip_lock);
    return ok;
}

static void ip_give(tv_server *s, conn_watch *w)
{
    if (!w->ip[0])
        return;
    pthread_mutex_lock(&s->ip_lock);
    ip_count **b = &s->ip_buckets[ip_hash(w->ip)];
    while (*b && memcmp((*b)->key, w->ip, sizeof w->ip))
        b = &(*b)->next;
    if (*b && --(*b)->n == 0) {
        ip_count *e = *b;
        *b = e->next;
        free(e);
    }
    pthread_mutex_unlock(&s->ip_lock);
}

/* MHD: a connection opened or is about to be closed (MHD's thread). */
void deadline_on_connection(void *cls, struct MHD_Connection *c,
                            void **socket_context,
                            enum MHD_ConnectionNotificationCode code)
{
    tv_server *s = cls;
    conn_watch *w = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
            c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci)
            return; /* unwatched: MHD's inactivity timeout still applies */
        w = calloc(1, sizeof *w);
        if (!w) {
            if (s->cfg->max_connections_per_ip) /* cannot be counted */
                shutdown(ci->connect_fd, SHUT_RDWR);
            return;
        }
        w->fd = ci->connect_fd;
        deadline_arm(s, w, 1);
        if (!ip_take(s, c, w))
            shutdown(w->fd, SHUT_RDWR); /* over the limit: MHD closes it */
        pthread_mutex_lock(&s->watch_lock);
        w->prev = &s->watches;
        w->next = s->watches.next;
        w->next->prev = w;
        s->watches.next = w;
        pthread_mutex_unlock(&s->watch_lock);
        *socket_context = w;
    } else if (w) {
        ip_give(s, w);
        pthread_mutex_lock(&s->watch_lock);
        w->prev->next = w->next;
        w->next->prev = w->prev;
        pthread_mutex_unlock(&s->watch_lock);
        free(w);
        *socket_context = NULL;
    }
}

void deadline_init(tv_server *s)
{
    pthread_mutex_init(&s->watch_lock, NULL);
    pthread_mutex_init(&s->ip_lock, NULL);
    s->watches.next = s->watches.prev = &s->watches;
    s->last_trim = now_ms(); /* reaper.c's */
}

void deadline_fini(tv_server *s)
{
    pthread_mutex_destroy(&s->watch_lock);
    for (int i = 0; i < 256; i++) /* empty once every daemon has stopped */
        for (ip_count *e = s->ip_buckets[i], *n; e; e = n) {
            n = e->next;
            free(e);
        }
    pthread_mutex_destroy(&s->ip_lock);
}
