/* control.c -- the control loop of `tokvec serve` (control.h), on libuv:
 * the signals (uv_signal: SIGHUP reloads, SIGTERM and SIGINT drain, a
 * second one stops the waiting), the reaper's tick (a repeating uv_timer
 * that calls tv_server_tick every tv_server_tick_ms: request deadlines,
 * max_queue_wait, the trim of idle memory), --watch (uv_fs_event on the
 * served files, debounced by a uv_timer: one reload per burst of changes,
 * an atomic rename of a new file included) and the drain's waits (a
 * uv_timer, so that a signal still ends a wait at once).
 *
 * No request waits on this loop: requests stay on the HTTP threads and
 * the pool; the loop only calls what SIGHUP called before it
 * (tv_server_reload: a broken file keeps the old table and logs why), the
 * drain and the tick, which only cuts late connections and answers jobs
 * queued too long (it takes no lock a request holds for long). The tick
 * keeps running while the drain waits (each wait runs the loop), and stops
 * before tv_control_run returns: the server is stopped after the last
 * one. While a reload reads its files the tick waits for it, so a cut or
 * a 503 for max_queue_wait may come that much later; the requests
 * themselves are served meanwhile.
 *
 * Watching a file watches its directory for that name, so a new file
 * renamed over the old one (a new inode) is seen, and so is one written in
 * place; a directory (--model, a sharded checkpoint's, an encoder.json
 * directory) is watched for any name in it.
 *
 * Threads: everything here runs on the main thread, the loop's only
 * thread. The signals stay blocked in every other thread (serve.c blocks
 * them before any thread starts); libuv's handler only writes to its pipe.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <uv.h>

#include "control.h"
#include "log.h"
#include "reaper.h"

/* A burst of changes (a copy written in place, a rename after a write)
 * is one reload once it has been quiet this long. */
#define WATCH_QUIET_MS 200
#define WATCH_MAX 4

typedef struct watch {
    uv_fs_event_t ev;
    char name[NAME_MAX + 1]; /* the file watched in the directory; "" any */
    char what[PATH_MAX];     /* the path given, for the log */
} watch;

struct control {
    uv_loop_t loop;
    uv_signal_t sig[3];
    uv_timer_t pause; /* the drain's waits */
    uv_timer_t quiet; /* --watch: the debounce */
    uv_timer_t tick;  /* the reaper: tv_server_tick */
    watch w[WATCH_MAX];
    int nw;
    tv_server *srv;
    const tv_config *cfg;
    int draining;     /* set by the first SIGTERM/SIGINT */
    int stop_waiting; /* set by a second one */
    int term_sig;
    const char *waiting_for; /* what the drain waits for now, for the log */
    char changed[PATH_MAX];  /* the last watched path that changed */
};
typedef struct control control;

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *signame(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";
}

static const char *served(const tv_config *cfg)
{
    return *cfg->model ? cfg->model : cfg->table;
}

static void reload(control *c)
{
    if (tv_server_reload(c->srv) < 0)
        tv_log(TV_LOG_WARN, "still serving the previous table");
}

static void on_signal(uv_signal_t *h, int sig)
{
    control *c = h->data;
    if (sig == SIGHUP) {
        if (c->draining) {
            tv_log(TV_LOG_INFO, "SIGHUP ignored while draining");
            return;
        }
        tv_log(TV_LOG_INFO, "SIGHUP: reloading %s%s",
               *c->cfg->model ? "model " : "", served(c->cfg));
        reload(c);
        return;
    }
    if (c->draining) {
        tv_log(TV_LOG_WARN, "%s again: not waiting for %s", signame(sig),
               c->waiting_for ? c->waiting_for : "the drain");
        c->stop_waiting = 1;
        return;
    }
    c->draining = 1;
    c->term_sig = sig;
    tv_log(TV_LOG_INFO, "%s: draining (up to %g s)", signame(sig),
           c->cfg->drain_timeout);
    /* No reload from here on: the watch ends with the serving. */
    for (int i = 0; i < c->nw; i++)
        uv_fs_event_stop(&c->w[i].ev);
    uv_timer_stop(&c->quiet);
    uv_stop(&c->loop);
}

static void on_tick(uv_timer_t *t)
{
    control *c = t->data;
    tv_server_tick(c->srv);
}

static void on_quiet(uv_timer_t *t)
{
    control *c = t->data;
    tv_log(TV_LOG_INFO, "watch: %s changed: reloading %s%s", c->changed,
           *c->cfg->model ? "model " : "", served(c->cfg));
    reload(c);
}

static void on_change(uv_fs_event_t *h, const char *filename, int events,
                      int status)
{
    watch *w = h->data;
    control *c = h->loop->data;
    (void)events;
    if (status < 0 || c->draining)
        return;
    if (*w->name && (!filename || strcmp(filename, w->name)))
        return; /* another file of the directory */
    snprintf(c->changed, sizeof c->changed, "%s", w->what);
    uv_timer_start(&c->quiet, on_quiet, WATCH_QUIET_MS, 0);
}

/* Watches path: a directory for any change in it, a file (or a link, or
 * a name not there yet) for changes of its name in its directory. 0, or -1
 * after a warning (serving goes on, unwatched). */
static int watch_path(control *c, const char *path)
{
    if (!path || !*path || c->nw == WATCH_MAX)
        return 0;
    watch *w = &c->w[c->nw];
    char dir[PATH_MAX];
    struct stat st;
    snprintf(w->what, sizeof w->what, "%s", path);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(dir, sizeof dir, "%s", path);
        w->name[0] = '\0';
    } else {
        const char *slash = strrchr(path, '/');
        const char *name = slash ? slash + 1 : path;
        if (!*name || strlen(name) > NAME_MAX) {
            tv_log(TV_LOG_WARN, "watch: cannot watch %s: not a file name",
                   path);
            return -1;
        }
        snprintf(w->name, sizeof w->name, "%s", name);
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == path)
            snprintf(dir, sizeof dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    }
    int rc = uv_fs_event_init(&c->loop, &w->ev);
    if (rc == 0) {
        w->ev.data = w;
        rc = uv_fs_event_start(&w->ev, on_change, dir, 0);
        if (rc < 0)
            uv_close((uv_handle_t *)&w->ev, NULL);
    }
    if (rc < 0) {
        tv_log(TV_LOG_WARN, "watch: cannot watch %s: %s", dir,
               uv_strerror(rc));
        return -1;
    }
    c->nw++;
    return 0;
}

static void watch_start(control *c)
{
    const tv_config *cfg = c->cfg;
    if (*cfg->model) {
        watch_path(c, cfg->model);
    } else {
        watch_path(c, cfg->table);
        watch_path(c, cfg->position_path);
        watch_path(c, cfg->tokenizer);
    }
    for (int i = 0; i < c->nw; i++)
        tv_log(TV_LOG_INFO, "watch: %s%s%s", c->w[i].what,
               *c->w[i].name ? "" : " (the directory)",
               " -- a change reloads, as SIGHUP does");
}

/* Bytes sent from TCP port `port` that the peers have not acknowledged
 * yet: the tx_queue of every connection of /proc/net/tcp and tcp6 with that
 * local port (closed ones still sending included), listeners left out. */
static unsigned long long unacked_bytes(unsigned long port)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    unsigned long long sum = 0;
    char line[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f = fopen(files[i], "re");
        if (!f)
            continue;
        /* "N: LOCALADDR:PORT REMADDR:PORT ST TXQ:RXQ ...", all hex; the
         * header line has no ':' in its second field. */
        while (fgets(line, sizeof line, f)) {
            char *save = NULL, *tok[5];
            int n = 0;
            for (char *t = strtok_r(line, " \t", &save); t && n < 5;
                 t = strtok_r(NULL, " \t", &save))
                tok[n++] = t;
            char *colon = n == 5 ? strrchr(tok[1], ':') : NULL;
            if (!colon || strtoul(colon + 1, NULL, 16) != port ||
                strtoul(tok[3], NULL, 16) == 0x0A) /* TCP_LISTEN */
                continue;
            sum += strtoull(tok[4], NULL, 16);
        }
        fclose(f);
    }
    return sum;
}

static void on_pause(uv_timer_t *t)
{
    (void)t; /* waking the loop is all it does */
}

/* Waits up to 20 ms (less when `left` is less) on the loop, where a signal
 * may come; 1 when a second SIGTERM/SIGINT says to stop waiting, else 0. */
static int drain_pause(control *c, double left, const char *what)
{
    if (left > 0.02)
        left = 0.02;
    c->waiting_for = what;
    /* Repeating: one run may take a timer that is due at its start and
     * then poll; the repeat bounds that poll too. */
    uint64_t ms = (uint64_t)(left * 1e3);
    ms = ms ? ms : 1;
    uv_timer_start(&c->pause, on_pause, ms, ms);
    uv_run(&c->loop, UV_RUN_ONCE);
    uv_timer_stop(&c->pause);
    c->waiting_for = NULL;
    return c->stop_waiting;
}

/* Waits, up to `timeout` after t0, until the peers of TCP port `port`
 * have acknowledged every byte sent (see serve.c). Gives up early when
 * nothing was acknowledged for 5 s: a peer that stopped reading must not
 * hold the exit for the whole drain_timeout (one that reads slowly, with a
 * large receive buffer, may open its window only every second or so). */
static void drain_sent(control *c, unsigned long port, double t0,
                       double timeout)
{
    unsigned long long left_bytes = unacked_bytes(port), was = left_bytes;
    double moved = now_seconds();
    while (left_bytes > 0) {
        double now = now_seconds(), left = timeout - (now - t0);
        if (left_bytes < was)
            moved = now;
        was = left_bytes;
        if (left <= 0 || now - moved > 5.0) {
            tv_log(TV_LOG_WARN,
                   "drain: %llu bytes sent but not acknowledged by the "
                   "clients at exit",
                   left_bytes);
            return;
        }
        if (drain_pause(c, left, "the clients to receive the answers"))
            return;
        left_bytes = unacked_bytes(port);
    }
}

/* Waits for the requests in flight, then for the bytes sent on TCP port
 * `port` (0: not known, not waited for) to be acknowledged. Returns the
 * number of requests still open when it gave up (0: all answered). */
static size_t drain(control *c, double timeout, unsigned long port)
{
    double t0 = now_seconds();
    size_t jobs = 0;
    char what[64];
    for (size_t busy = tv_server_busy(c->srv, &jobs); busy > 0;
         busy = tv_server_busy(c->srv, &jobs)) {
        double left = timeout - (now_seconds() - t0);
        if (left <= 0) {
            tv_log(TV_LOG_WARN,
                   "drain timeout: %zu requests unanswered (%zu jobs)", busy,
                   jobs);
            break;
        }
        snprintf(what, sizeof what, "%zu requests", busy);
        if (drain_pause(c, left, what))
            return tv_server_busy(c->srv, &jobs);
    }
    /* Requests, not jobs: a finished job's connection stays suspended
     * until MHD's thread has processed the resume, and MHD aborts if it is
     * stopped with a suspended connection (seen under valgrind after a
     * second SIGTERM). Any request still open means exiting without
     * stopping MHD. */
    size_t open = tv_server_busy(c->srv, &jobs);
    if (!open && port)
        drain_sent(c, port, t0, timeout);
    return open;
}

static void close_one(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

int tv_control_open(const tv_config *cfg, tv_control **out)
{
    control *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c) {
        tv_log(TV_LOG_ERROR, "control loop: out of memory");
        return -1;
    }
    c->cfg = cfg;
    int rc = uv_loop_init(&c->loop);
    if (rc < 0) {
        tv_log(TV_LOG_ERROR, "control loop: %s", uv_strerror(rc));
        free(c);
        return -1;
    }
    c->loop.data = c;
    uv_timer_init(&c->loop, &c->pause);
    uv_timer_init(&c->loop, &c->quiet);
    uv_timer_init(&c->loop, &c->tick);
    c->pause.data = c->quiet.data = c->tick.data = c;
    /* Before the server starts: a change from the moment it answers on
     * is seen (the kernel queues it until the loop runs). */
    if (cfg->watch)
        watch_start(c);
    *out = c;
    return 0;
}

void tv_control_close(tv_control *c)
{
    if (!c)
        return;
    uv_walk(&c->loop, close_one, NULL);
    uv_run(&c->loop, UV_RUN_DEFAULT); /* the close callbacks */
    uv_loop_close(&c->loop);
    free(c);
}

int tv_control_run(tv_control *c, tv_server *srv, size_t *open)
{
    static const int sigs[3] = {SIGHUP, SIGTERM, SIGINT};
    sigset_t set;
    int rc = 0;
    c->srv = srv;
    *open = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
        rc = uv_signal_init(&c->loop, &c->sig[i]);
        c->sig[i].data = c;
        if (rc == 0)
            rc = uv_signal_start(&c->sig[i], on_signal, sigs[i]);
    }
    if (rc < 0) {
        tv_log(TV_LOG_ERROR, "control loop: signals: %s", uv_strerror(rc));
        return -1;
    }
    /* libuv's handlers are in place: the signals may come to this thread
     * now (one sent during start-up was pending, and arrives here). */
    sigemptyset(&set);
    for (int i = 0; i < 3; i++)
        sigaddset(&set, sigs[i]);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);

    uint64_t tick = (uint64_t)tv_server_tick_ms(srv);
    uv_timer_start(&c->tick, on_tick, tick, tick);
    uv_run(&c->loop, UV_RUN_DEFAULT); /* until SIGTERM or SIGINT */
    tv_server_drain_begin(srv);
    *open = drain(c, c->cfg->drain_timeout, (unsigned long)c->cfg->port);
    uv_timer_stop(&c->tick);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    return 0;
}
