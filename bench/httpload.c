/* httpload.c -- a small closed-loop HTTP/1.1 keep-alive load generator for
 * the benchmarks, because wrk cannot use Unix domain sockets.
 *
 *   httpload (--unix PATH | --tcp HOST:PORT) [-c CONNS] [-t THREADS]
 *            [-d SECONDS] [-H 'Name: value']... --body FILE [--path /embed]
 *            [--timeout SECONDS]
 *
 * Each of CONNS connections (spread over THREADS threads, one epoll loop
 * each) sends a POST of FILE with Content-Length, reads the whole response
 * (status line, headers, then a Content-Length body, a chunked body, or a
 * body up to the close; any of it may arrive in pieces), and sends the next
 * request at once. A non-200 status, a failed connect, a read or write
 * error, a response that cannot be parsed and a request outstanding past
 * --timeout are errors; the connection is then opened anew. Requests still
 * outstanding when the time is up are not counted.
 *
 * Prints one line to stdout:
 *   HTTPLOAD {"transport":"unix",...,"rps":N,"p50_ms":X,"p99_ms":Y,
 *             "errors":N,...}
 * rps counts 200 responses per second; the latency percentiles are over
 * every complete response, from the first byte of the request written to
 * the last byte of the response read. Exit status 0 if the run completed
 * (whatever the error count), 2 on bad usage, 1 if it could not start.
 *
 * Content-Type: application/json is sent unless a -H names Content-Type;
 * Host: localhost unless a -H names Host.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HDR_MAX 16384     /* response status line + headers */
#define RBUF (256 * 1024) /* one read() per thread at most this */
#define MAX_HEADERS 64

/* ------------------------------------------------------------- settings */
static struct {
    int is_unix;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char target[512];
    int conns, threads;
    double duration, timeout;
    char *req; /* the whole request: head + body */
    size_t req_len;
} cfg;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------- per thread */
typedef struct {
    uint64_t *v;
    size_t n, cap;
} lat_vec;

static int lat_push(lat_vec *l, uint64_t ns)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 65536;
        uint64_t *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = ns;
    return 0;
}

typedef struct {
    uint64_t responses, ok, status_err, connect_err, read_err, write_err,
        parse_err, timeouts, bytes_read;
} counts;

enum conn_state { C_DOWN, C_SENDING, C_READING };
enum body_mode { B_LENGTH, B_CHUNKED, B_CLOSE };
enum chunk_state { K_SIZE, K_DATA, K_DATA_CRLF, K_TRAILER };

typedef struct {
    int fd;
    enum conn_state st;
    unsigned events; /* epoll interest now */
    size_t sent;
    uint64_t t0;       /* request start */
    uint64_t retry_at; /* C_DOWN: when to connect again */
    /* response parsing */
    char hdr[HDR_MAX];
    size_t hlen;
    int in_body;
    int status;
    int close_after;
    enum body_mode mode;
    uint64_t remaining; /* B_LENGTH / K_DATA: bytes left */
    enum chunk_state ks;
    char line[256]; /* chunk-size or trailer line */
    size_t llen;
} conn;

typedef struct {
    int nconn;
    conn *c;
    int ep;
    uint64_t deadline;
    counts k;
    lat_vec lat;
    char *rbuf;
    int failed;
} worker;

/* ------------------------------------------------------------- sockets */
static void conn_close(worker *w, conn *c, uint64_t now)
{
    if (c->fd >= 0) {
        epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->st = C_DOWN;
    c->retry_at = now;
}

static void reset_parser(conn *c)
{
    c->hlen = 0;
    c->in_body = 0;
    c->status = 0;
    c->close_after = 0;
    c->mode = B_LENGTH;
    c->remaining = 0;
    c->ks = K_SIZE;
    c->llen = 0;
}

static int set_events(worker *w, conn *c, unsigned ev)
{
    if (c->events == ev)
        return 0;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    if (epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &e) < 0)
        return -1;
    c->events = ev;
    return 0;
}

/* Writes what the socket takes. 1: all sent, 0: more to send, -1: error. */
static int send_some(conn *c)
{
    while (c->sent < cfg.req_len) {
        ssize_t n = send(c->fd, cfg.req + c->sent, cfg.req_len - c->sent,
                         MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        c->sent += (size_t)n;
    }
    return 1;
}

/* Starts the next request on an open connection. */
static int start_request(worker *w, conn *c, uint64_t now)
{
    c->sent = 0;
    c->t0 = now;
    reset_parser(c);
    c->st = C_SENDING;
    int r = send_some(c);
    if (r < 0) {
        w->k.write_err++;
        conn_close(w, c, now);
        return -1;
    }
    if (r == 1)
        c->st = C_READING;
    if (set_events(w, c, r == 1 ? EPOLLIN : EPOLLIN | EPOLLOUT) < 0) {
        w->k.write_err++;
        conn_close(w, c, now);
        return -1;
    }
    return 0;
}

static int conn_open(worker *w, conn *c, uint64_t now)
{
    int fd = socket(cfg.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    /* A blocking connect: on loopback it returns at once. */
    if (connect(fd, (struct sockaddr *)&cfg.addr, cfg.addrlen) < 0) {
        close(fd);
        goto fail;
    }
    if (!cfg.is_unix) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        close(fd);
        goto fail;
    }
    c->fd = fd;
    c->events = EPOLLIN;
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &e) < 0) {
        close(fd);
        c->fd = -1;
        goto fail;
    }
    return start_request(w, c, now);
fail:
    w->k.connect_err++;
    c->fd = -1;
    c->st = C_DOWN;
    c->retry_at = now + 10 * 1000000u; /* 10 ms: no busy loop */
    return -1;
}

/* ------------------------------------------------------------- parsing */
/* Status line and headers in c->hdr[0..len) (the blank line excluded). */
static int parse_head(conn *c, size_t len)
{
    char *p = c->hdr, *end = c->hdr + len;
    char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
    if (!eol)
        eol = end;
    /* HTTP/1.x SSS reason */
    if (eol - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
        !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
        !isdigit((unsigned char)p[11]))
        return -1;
    c->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    int http10 = p[7] == '0';
    int have_len = 0, chunked = 0, conn_close_hdr = 0, keep_alive = 0;
    uint64_t clen = 0;
    p = eol + 2;
    while (p < end) {
        eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (!eol)
            eol = end;
        char *colon = memchr(p, ':', (size_t)(eol - p));
        if (colon) {
            size_t nlen = (size_t)(colon - p);
            char *v = colon + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            size_t vlen = (size_t)(eol - v);
            if (nlen == 14 && !strncasecmp(p, "content-length", 14)) {
                clen = 0;
                if (vlen == 0)
                    return -1;
                for (size_t i = 0; i < vlen; i++) {
                    if (v[i] == ' ' || v[i] == '\t')
                        break;
                    if (!isdigit((unsigned char)v[i]) ||
                        clen > UINT64_MAX / 10 - 10)
                        return -1;
                    clen = clen * 10 + (uint64_t)(v[i] - '0');
                }
                have_len = 1;
            } else if (nlen == 17 &&
                       !strncasecmp(p, "transfer-encoding", 17)) {
                for (size_t i = 0; i + 7 <= vlen; i++)
                    if (!strncasecmp(v + i, "chunked", 7))
                        chunked = 1;
            } else if (nlen == 10 && !strncasecmp(p, "connection", 10)) {
                for (size_t i = 0; i + 5 <= vlen; i++)
                    if (!strncasecmp(v + i, "close", 5))
                        conn_close_hdr = 1;
                for (size_t i = 0; i + 10 <= vlen; i++)
                    if (!strncasecmp(v + i, "keep-alive", 10))
                        keep_alive = 1;
            }
        }
        p = eol + 2;
    }
    c->close_after = conn_close_hdr || (http10 && !keep_alive);
    /* 1xx, 204 and 304 have no body (we never send HEAD). */
    if ((c->status >= 100 && c->status < 200) || c->status == 204 ||
        c->status == 304) {
        c->mode = B_LENGTH;
        c->remaining = 0;
    } else if (chunked) {
        c->mode = B_CHUNKED;
        c->ks = K_SIZE;
        c->llen = 0;
    } else if (have_len) {
        c->mode = B_LENGTH;
        c->remaining = clen;
    } else {
        c->mode = B_CLOSE;
        c->close_after = 1;
    }
    return 0;
}

/* Feeds n bytes of body. Returns bytes used, or -1 on a bad chunked
 * encoding; sets *done when the body is complete. */
static ssize_t feed_body(conn *c, const char *b, size_t n, int *done)
{
    size_t i = 0;
    *done = 0;
    if (c->mode == B_CLOSE)
        return (ssize_t)n;
    if (c->mode == B_LENGTH) {
        size_t take = c->remaining < n ? (size_t)c->remaining : n;
        c->remaining -= take;
        if (c->remaining == 0)
            *done = 1;
        return (ssize_t)take;
    }
    while (i < n) {
        switch (c->ks) {
        case K_SIZE:
        case K_TRAILER: {
            char ch = b[i++];
            if (c->llen + 1 >= sizeof c->line)
                return -1;
            c->line[c->llen++] = ch;
            if (c->llen >= 2 && c->line[c->llen - 2] == '\r' && ch == '\n') {
                size_t l = c->llen - 2;
                c->llen = 0;
                if (c->ks == K_TRAILER) {
                    if (l == 0) {
                        *done = 1;
                        return (ssize_t)i;
                    }
                    break;
                }
                uint64_t sz = 0;
                size_t j = 0;
                for (; j < l && isxdigit((unsigned char)c->line[j]); j++) {
                    if (sz >> 60)
                        return -1;
                    char h = (char)tolower((unsigned char)c->line[j]);
                    sz = sz * 16 +
                         (uint64_t)(h <= '9' ? h - '0' : h - 'a' + 10);
                }
                if (j == 0)
                    return -1;
                if (sz == 0) {
                    c->ks = K_TRAILER;
                } else {
                    c->ks = K_DATA;
                    c->remaining = sz;
                }
            }
            break;
        }
        case K_DATA: {
            size_t take = n - i;
            if (take > c->remaining)
                take = (size_t)c->remaining;
            c->remaining -= take;
            i += take;
            if (c->remaining == 0) {
                c->ks = K_DATA_CRLF;
                c->llen = 0;
            }
            break;
        }
        case K_DATA_CRLF:
            if (b[i++] != (c->llen == 0 ? '\r' : '\n'))
                return -1;
            if (++c->llen == 2) {
                c->llen = 0;
                c->ks = K_SIZE;
            }
            break;
        }
    }
    return (ssize_t)i;
}

/* A whole response has been read. */
static void response_done(worker *w, conn *c, uint64_t now)
{
    if (now > w->deadline)
        return; /* past the end: not counted */
    w->k.responses++;
    if (c->status == 200)
        w->k.ok++;
    else
        w->k.status_err++;
    if (lat_push(&w->lat, now - c->t0) < 0)
        w->failed = 1;
}

/* Reads what is there. Returns 0 to go on, -1 if the connection was
 * closed (counted). */
static int on_readable(worker *w, conn *c)
{
    for (;;) {
        ssize_t n = recv(c->fd, w->rbuf, RBUF, 0);
        uint64_t now;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            w->k.read_err++;
            conn_close(w, c, now_ns());
            return -1;
        }
        if (n == 0) {
            now = now_ns();
            if (c->in_body && c->mode == B_CLOSE) {
                response_done(w, c, now);
            } else {
                w->k.read_err++; /* closed mid-response or before it */
            }
            conn_close(w, c, now);
            return -1;
        }
        w->k.bytes_read += (uint64_t)n;
        const char *b = w->rbuf;
        size_t len = (size_t)n;
        while (len > 0) {
            if (c->st != C_READING && c->st != C_SENDING) {
                /* bytes after a complete response that we did not ask
                 * for: the connection is out of step */
                w->k.parse_err++;
                conn_close(w, c, now_ns());
                return -1;
            }
            if (!c->in_body) {
                size_t old = c->hlen;
                size_t take = len < HDR_MAX - c->hlen ? len
                                                      : HDR_MAX - c->hlen;
                memcpy(c->hdr + c->hlen, b, take);
                c->hlen += take;
                size_t from = old >= 3 ? old - 3 : 0;
                char *e = memmem(c->hdr + from, c->hlen - from, "\r\n\r\n", 4);
                if (!e) {
                    if (c->hlen == HDR_MAX) {
                        w->k.parse_err++;
                        conn_close(w, c, now_ns());
                        return -1;
                    }
                    b += take;
                    len -= take;
                    continue;
                }
                size_t head = (size_t)(e - c->hdr);
                size_t used = head + 4 - old; /* of this piece */
                if (parse_head(c, head) < 0) {
                    w->k.parse_err++;
                    conn_close(w, c, now_ns());
                    return -1;
                }
                b += used;
                len -= used;
                if (c->status >= 100 && c->status < 200) {
                    /* interim response: the real one follows */
                    c->hlen = 0;
                    continue;
                }
                c->in_body = 1;
                if (c->mode == B_LENGTH && c->remaining == 0)
                    goto complete;
                continue;
            }
            int done;
            ssize_t used = feed_body(c, b, len, &done);
            if (used < 0) {
                w->k.parse_err++;
                conn_close(w, c, now_ns());
                return -1;
            }
            b += used;
            len -= (size_t)used;
            if (!done)
                continue;
        complete:
            now = now_ns();
            response_done(w, c, now);
            if (len > 0 || c->close_after || c->st == C_SENDING) {
                /* extra bytes, a server that closes, or an answer
                 * before the whole request was sent: start over */
                if (len > 0)
                    w->k.parse_err++;
                conn_close(w, c, now);
                return -1;
            }
            if (now >= w->deadline) {
                c->st = C_DOWN; /* stays idle; the loop ends */
                c->retry_at = UINT64_MAX;
                return 0;
            }
            if (start_request(w, c, now) < 0)
                return -1;
            break; /* rbuf is drained for this connection */
        }
    }
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    struct epoll_event ev[64];
    uint64_t tmo = (uint64_t)(cfg.timeout * 1e9);
    uint64_t next_scan = 0;
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    if (w->ep < 0) {
        w->failed = 1;
        return NULL;
    }
    for (int i = 0; i < w->nconn; i++) {
        w->c[i].fd = -1;
        conn_open(w, &w->c[i], now_ns());
    }
    for (;;) {
        uint64_t now = now_ns();
        if (now >= w->deadline)
            break;
        /* timeouts and reconnects, at most every 10 ms */
        int down = 0;
        if (now >= next_scan) {
            next_scan = now + 10 * 1000000u;
            for (int i = 0; i < w->nconn; i++) {
                conn *c = &w->c[i];
                if (c->st == C_DOWN) {
                    if (c->retry_at <= now)
                        conn_open(w, c, now);
                    if (c->st == C_DOWN)
                        down = 1;
                } else if (now - c->t0 > tmo) {
                    w->k.timeouts++;
                    conn_close(w, c, now);
                    down = 1;
                }
            }
        } else {
            for (int i = 0; i < w->nconn && !down; i++)
                down = w->c[i].st == C_DOWN;
        }
        uint64_t left = w->deadline - now;
        int ms = (int)((left + 999999) / 1000000);
        if (ms > 100)
            ms = 100;
        if (down && ms > 10)
            ms = 10;
        int n = epoll_wait(w->ep, ev, 64, ms);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            w->failed = 1;
            break;
        }
        for (int i = 0; i < n; i++) {
            conn *c = ev[i].data.ptr;
            if (c->fd < 0)
                continue;
            if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
                if (on_readable(w, c) < 0 || c->fd < 0)
                    continue;
            }
            if (c->st == C_SENDING &&
                (ev[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                int r = send_some(c);
                if (r < 0) {
                    w->k.write_err++;
                    conn_close(w, c, now_ns());
                } else if (r == 1) {
                    c->st = C_READING;
                    if (set_events(w, c, EPOLLIN) < 0) {
                        w->k.write_err++;
                        conn_close(w, c, now_ns());
                    }
                }
            }
        }
    }
    for (int i = 0; i < w->nconn; i++)
        if (w->c[i].fd >= 0)
            close(w->c[i].fd);
    close(w->ep);
    return NULL;
}

/* ------------------------------------------------------------- setup */
static void usage(void)
{
    fprintf(stderr,
            "usage: httpload (--unix PATH | --tcp HOST:PORT) [-c CONNS] "
            "[-t THREADS] [-d SECONDS]\n"
            "                [-H 'Name: value']... --body FILE "
            "[--path /embed] [--timeout SECONDS]\n");
    exit(2);
}

static int parse_tcp(const char *hp)
{
    char host[256];
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp || (size_t)(colon - hp) >= sizeof host ||
        !colon[1])
        return -1;
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    /* [::1]:port */
    char *h = host;
    size_t hl = strlen(h);
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
        h[hl - 1] = 0;
        h++;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai;
    if (getaddrinfo(h, colon + 1, &hints, &ai) != 0)
        return -1;
    memcpy(&cfg.addr, ai->ai_addr, ai->ai_addrlen);
    cfg.addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap) {
            if (ferror(f)) {
                free(b);
                b = NULL;
            }
            break;
        }
        char *nb = realloc(b, cap * 2);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    fclose(f);
    *len = n;
    return b;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile, in ms. */
static double pct_ms(const uint64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return (double)v[k - 1] / 1e6;
}

static int has_header(char **hv, int nh, const char *name)
{
    size_t l = strlen(name);
    for (int i = 0; i < nh; i++)
        if (!strncasecmp(hv[i], name, l) && hv[i][l] == ':')
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *unix_path = NULL, *tcp = NULL, *body_path = NULL;
    const char *path = "/embed";
    char *hv[MAX_HEADERS];
    int nh = 0;
    cfg.conns = 1;
    cfg.threads = 1;
    cfg.duration = 5;
    cfg.timeout = 30;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        char *endp;
        if (!strcmp(a, "--unix")) {
            unix_path = v;
        } else if (!strcmp(a, "--tcp")) {
            tcp = v;
        } else if (!strcmp(a, "-c")) {
            cfg.conns = (int)strtol(v, &endp, 10);
            if (*endp || cfg.conns < 1 || cfg.conns > 100000)
                usage();
        } else if (!strcmp(a, "-t")) {
            cfg.threads = (int)strtol(v, &endp, 10);
            if (*endp || cfg.threads < 1 || cfg.threads > 1024)
                usage();
        } else if (!strcmp(a, "-d")) {
            cfg.duration = strtod(v, &endp);
            if (*endp == 's')
                endp++;
            if (*endp || !(cfg.duration > 0 && cfg.duration <= 86400))
                usage();
        } else if (!strcmp(a, "--timeout")) {
            cfg.timeout = strtod(v, &endp);
            if (*endp == 's')
                endp++;
            if (*endp || !(cfg.timeout > 0 && cfg.timeout <= 86400))
                usage();
        } else if (!strcmp(a, "-H")) {
            const char *colon = strchr(v, ':');
            if (nh == MAX_HEADERS || !colon || colon == v ||
                strpbrk(v, "\r\n"))
                usage();
            hv[nh++] = (char *)v;
        } else if (!strcmp(a, "--body")) {
            body_path = v;
        } else if (!strcmp(a, "--path")) {
            if (v[0] != '/' || strpbrk(v, " \r\n"))
                usage();
            path = v;
        } else {
            usage();
        }
    }
    if (!!unix_path == !!tcp || !body_path)
        usage();
    if (cfg.threads > cfg.conns)
        cfg.threads = cfg.conns;

    if (unix_path) {
        struct sockaddr_un *su = (struct sockaddr_un *)&cfg.addr;
        if (strlen(unix_path) >= sizeof su->sun_path) {
            fprintf(stderr, "httpload: unix socket path too long\n");
            return 2;
        }
        su->sun_family = AF_UNIX;
        strcpy(su->sun_path, unix_path);
        cfg.addrlen = sizeof *su;
        cfg.is_unix = 1;
        snprintf(cfg.target, sizeof cfg.target, "%s", unix_path);
    } else {
        if (parse_tcp(tcp) < 0) {
            fprintf(stderr, "httpload: bad --tcp HOST:PORT: %s\n", tcp);
            return 2;
        }
        snprintf(cfg.target, sizeof cfg.target, "%s", tcp);
    }

    size_t blen;
    char *body = read_file(body_path, &blen);
    if (!body) {
        fprintf(stderr, "httpload: cannot read %s: %s\n", body_path,
                strerror(errno));
        return 1;
    }
    /* the request head */
    size_t hcap = 256 + strlen(path);
    for (int i = 0; i < nh; i++)
        hcap += strlen(hv[i]) + 2;
    cfg.req = malloc(hcap + blen);
    if (!cfg.req) {
        fprintf(stderr, "httpload: out of memory\n");
        return 1;
    }
    size_t o = (size_t)sprintf(cfg.req, "POST %s HTTP/1.1\r\n", path);
    if (!has_header(hv, nh, "host"))
        o += (size_t)sprintf(cfg.req + o, "Host: localhost\r\n");
    if (!has_header(hv, nh, "content-type"))
        o += (size_t)sprintf(cfg.req + o,
                             "Content-Type: application/json\r\n");
    for (int i = 0; i < nh; i++)
        o += (size_t)sprintf(cfg.req + o, "%s\r\n", hv[i]);
    o += (size_t)sprintf(cfg.req + o, "Content-Length: %zu\r\n\r\n", blen);
    memcpy(cfg.req + o, body, blen);
    cfg.req_len = o + blen;
    free(body);

    signal(SIGPIPE, SIG_IGN);
    worker *w = calloc((size_t)cfg.threads, sizeof *w);
    pthread_t *tid = calloc((size_t)cfg.threads, sizeof *tid);
    conn *all = calloc((size_t)cfg.conns, sizeof *all);
    if (!w || !tid || !all) {
        fprintf(stderr, "httpload: out of memory\n");
        free(w);
        free(tid);
        free(all);
        return 1;
    }
    uint64_t start = now_ns();
    uint64_t deadline = start + (uint64_t)(cfg.duration * 1e9);
    int off = 0;
    for (int t = 0; t < cfg.threads; t++) {
        w[t].nconn = cfg.conns / cfg.threads + (t < cfg.conns % cfg.threads);
        w[t].c = all + off;
        off += w[t].nconn;
        w[t].deadline = deadline;
        w[t].rbuf = malloc(RBUF);
        /* exit, not return: workers already started keep running. */
        if (!w[t].rbuf) {
            fprintf(stderr, "httpload: out of memory\n");
            exit(1);
        }
        if (pthread_create(&tid[t], NULL, run_worker, &w[t]) != 0) {
            fprintf(stderr, "httpload: pthread_create failed\n");
            exit(1);
        }
    }
    counts k = {0};
    size_t nlat = 0;
    int failed = 0;
    for (int t = 0; t < cfg.threads; t++) {
        pthread_join(tid[t], NULL);
        k.responses += w[t].k.responses;
        k.ok += w[t].k.ok;
        k.status_err += w[t].k.status_err;
        k.connect_err += w[t].k.connect_err;
        k.read_err += w[t].k.read_err;
        k.write_err += w[t].k.write_err;
        k.parse_err += w[t].k.parse_err;
        k.timeouts += w[t].k.timeouts;
        k.bytes_read += w[t].k.bytes_read;
        nlat += w[t].lat.n;
        failed |= w[t].failed;
    }
    double secs = (double)(now_ns() - start) / 1e9;
    if (secs > cfg.duration)
        secs = cfg.duration; /* nothing finished after the deadline counts */
    uint64_t *lat = malloc((nlat ? nlat : 1) * sizeof *lat);
    if (!lat) {
        fprintf(stderr, "httpload: out of memory\n");
        free(w);
        free(tid);
        free(all);
        return 1;
    }
    size_t at = 0;
    double sum = 0;
    for (int t = 0; t < cfg.threads; t++) {
        if (w[t].lat.n)
            memcpy(lat + at, w[t].lat.v, w[t].lat.n * sizeof *lat);
        at += w[t].lat.n;
        free(w[t].lat.v);
        free(w[t].rbuf);
    }
    for (size_t i = 0; i < nlat; i++)
        sum += (double)lat[i];
    qsort(lat, nlat, sizeof *lat, cmp_u64);
    uint64_t errors = k.status_err + k.connect_err + k.read_err + k.write_err +
                      k.parse_err + k.timeouts;
    printf("HTTPLOAD {\"transport\":\"%s\",\"conns\":%d,\"threads\":%d,"
           "\"duration_s\":%.3f,\"requests\":%" PRIu64 ",\"ok\":%" PRIu64
           ",\"rps\":%.1f,\"p50_ms\":%.4f,\"p90_ms\":%.4f,\"p99_ms\":%.4f,"
           "\"max_ms\":%.4f,\"mean_ms\":%.4f,\"errors\":%" PRIu64
           ",\"status\":%" PRIu64 ",\"connect\":%" PRIu64 ",\"read\":%" PRIu64
           ",\"write\":%" PRIu64 ",\"parse\":%" PRIu64 ",\"timeout\":%" PRIu64
           ",\"bytes_read\":%" PRIu64 "}\n",
           cfg.is_unix ? "unix" : "tcp", cfg.conns, cfg.threads, secs,
           k.responses, k.ok, secs > 0 ? (double)k.ok / secs : 0.0,
           pct_ms(lat, nlat, 50), pct_ms(lat, nlat, 90), pct_ms(lat, nlat, 99),
           nlat ? (double)lat[nlat - 1] / 1e6 : 0.0,
           nlat ? sum / (double)nlat / 1e6 : 0.0, errors, k.status_err,
           k.connect_err, k.read_err, k.write_err, k.parse_err, k.timeouts,
           k.bytes_read);
    free(lat);
    free(all);
    free(w);
    free(tid);
    free(cfg.req);
    return failed ? 1 : 0;
}
