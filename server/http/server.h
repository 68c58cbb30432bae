/* server.h -- private to the HTTP front end (http.c and the files it was
 * split into): the server's state (struct tv_server) and the per-request
 * context (req_ctx). Not for the rest of the program: http.h is the API.
 *
 * Who owns what, file by file (each file's comment says more):
 *   http.c      the MHD handler: a request's first call, its body, the
 *               dispatch to a route, completion (log, metrics, cleanup);
 *               tv_server_start / _drain_begin / _busy / _stop
 *   listen.c    the listeners: MHD daemons on TCP and the Unix socket
 *   framing.c   RFC 9112 framing and URI checks before any body is read
 *   deadline.c  conn_watch (the per-connection request deadline), the
 *               per-IP connection limit
 *   reaper.c    the reaper's tick: deadlines, max_queue_wait, trim (run
 *               by the control loop's timer, main thread)
 *   tables.c    table references, reload and publishing the table's info
 *   routes.c    the route table: which path is which route
 *   get_routes.c  GET /info, /tokens/{id}, /metrics, answered at once
 *   embed_job.c POST /embed from parse to reply (one owner, start to end)
 *   text.c      POST /tokenize and /decode (jobs), /embed's text options
 *   reply.c     queueing responses: headers, errors, what the log sees
 *   origin.c    the Origin and Host checks (cross-site requests, DNS
 *               rebinding) and the --cors-origin list
 *
 * Threads: a req_ctx belongs to its connection's HTTP thread, except while
 * its /embed job is queued or running (embed_job.c). cfg, lim and topts
 * never change after start.
 */
#ifndef TV_SERVER_H
#define TV_SERVER_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "bufcache.h"
#include "config.h"
#include "deadline.h"
#include "embed_job.h"
#include "encode.h"
#include "origin.h"
#include "pool.h"
#include "request.h"
#include "routes.h"
#include "tokvec_table.h"
#include "tokvec_tokenizer.h"

struct ip_count;  /* deadline.c */
struct table_ref; /* tables.h */
typedef struct tv_server tv_server;

struct tv_server {
    const tv_config *cfg;
    struct MHD_Daemon **tcp;     /* TCP: one per HTTP thread, tv-http-N */
    unsigned ntcp;               /* daemons started */
    struct MHD_Daemon *mhd_unix; /* --unix-socket: tv-unix-0..N-1, or NULL */
    pthread_mutex_t ip_lock;     /* guards ip_buckets */
    struct ip_count *ip_buckets[256]; /* open connections per address */
    int unix_bound; /* we created cfg->unix_socket: unlink it */
    tv_pool *pool;
    tv_bufcache *bufs; /* response buffers */
    pthread_mutex_t watch_lock;
    conn_watch watches;      /* list head, guarded by watch_lock */
    long long last_trim;     /* reaper.c's tick, main thread */
    unsigned http_threads;   /* per daemon: tv-http-N (and tv-unix-N) */
    unsigned workers;        /* tv-work-N */
    const char *workers_why; /* "--threads", "cores", "cgroup quota" */
    pthread_mutex_t table_lock;
    struct table_ref *current; /* guarded by table_lock */
    atomic_int draining;       /* set once by tv_server_drain_begin */
    atomic_long requests;   /* req_ctx alive: begun, response not yet sent */
    atomic_size_t buffered; /* request body bytes held, all connections */
    int raw_framing;        /* libmicrohttpd 0.9.75: see framing_check() */
    tv_origins cors;        /* --cors-origin, parsed at start (origin.h) */
    int loopback;           /* --host is a loopback address: Host checked */
    tv_limits lim;
    tokvec_table_opts topts;
    tokvec_tokenizer *tok; /* --tokenizer, or NULL: never changes (with
                            * --model: NULL, see table_ref.tok) */
    tokvec_tokenizer_info tok_info;
    char model_name[256];   /* /v1/'s model name (tables_model_name) */
    time_t started;         /* tv_server_start's time: /v1/models' created */
    uint64_t rid_seed;      /* request ids: random at start, */
    atomic_ullong rid_next; /* then a counter (reply.c) */
    char *openapi;          /* GET /openapi.json with this server's */
    size_t openapi_len;     /* `servers` (http.c), set at start */
};

enum { ST_NEW, ST_BODY, ST_QUEUED, ST_DONE };

/* A client's X-Request-Id is kept when it is 1..TV_REQUEST_ID_MAX bytes of
 * visible ASCII (0x21-0x7e); otherwise tokvec makes one (reply.c). */
#define TV_REQUEST_ID_MAX 128

/* One per request; owned by MHD's connection (*con_cls), freed in
 * http_completed(). While its /embed job runs, the worker owns the job
 * (embed_job.c). */
typedef struct req_ctx {
    tv_server *s;
    struct MHD_Connection *conn;
    conn_watch *watch; /* NULL if it could not be allocated */
    tv_route route;
    int state;
    struct timespec t0;
    char *body;
    size_t len, cap;
    int too_busy;              /* max_buffered_bytes reached: 429 at the end */
    size_t held;               /* bytes of `buffered` this body holds */
    size_t expect;             /* Content-Length, 0 if none */
    int fd;                    /* the client's socket (for the gone check) */
    unsigned long long acked0; /* TCP bytes acked when the reply was queued
                                * (large replies only: see reply_queue()) */
    int acked_known;
    int status;
    uint64_t tokens, bytes;
    embed_job job;               /* POST /embed (embed_job.c) */
    struct tv_similar_call *sim; /* POST /similar's job (pages.h), or NULL */
    struct table_ref *sim_ref;   /* the table it scans, until completed */
    struct tv_text_call *text;   /* POST /tokenize, /decode (text.h) */
    int uri_verdict;             /* from framing_uri_check(): URI_OK, ... */
    int must_close;         /* answer with Connection: close (bad framing) */
    int unix_peer;          /* came in on --unix-socket (no Host check) */
    const char *acao;       /* Access-Control-Allow-Origin, or NULL */
    int raw_replied;        /* reply_error_and_close wrote the answer itself */
    size_t lingered;        /* body bytes dropped since (REPLY_LINGER_BYTES) */
    const char *error_type; /* an error answer's (static), for the log */
    char rid[TV_REQUEST_ID_MAX + 1]; /* X-Request-Id, sent back and logged */
    char method[8];                  /* for the access log */
    char path[256];                  /* for the access log (cut if longer) */
    size_t path_len; /* the whole path's length: the log marks a cut */
} req_ctx;

static inline long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline long long now_ms(void)
{
    return now_ns() / 1000000;
}

/* http.c: the MHD callbacks every daemon gets (listen.c). */
enum MHD_Result http_handler(void *cls, struct MHD_Connection *c,
                             const char *url, const char *method,
                             const char *version, const char *upload,
                             size_t *upload_size, void **con_cls);
void http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe);

/* get_routes.c: the cheap routes, on the HTTP thread once the request is in;
 * idtext is what follows "/tokens/" in the path. */
enum MHD_Result route_info(req_ctx *x);
enum MHD_Result route_token(req_ctx *x, const char *idtext);
enum MHD_Result route_metrics(req_ctx *x);
enum MHD_Result route_models(req_ctx *x); /* GET /v1/models */

/* listen.c: starts the TCP daemons (one per HTTP thread) and the Unix
 * socket's. 0 or a TV_SERVER_E_* code (http.h), err filled. */
int listen_start(tv_server *s, char *err, size_t errlen);

/* listen.c: how many threads of this process are named name (exact) or
 * whose name starts with name (!exact), from /proc/self/task; with tids,
 * at most cap of their ids, sorted. Any thread; the tests use it too. */
size_t tv_threads_named(const char *name, int exact, pid_t *tids, size_t cap);

#endif
