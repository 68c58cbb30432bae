/* server_fixture.h -- for the tests of the HTTP front end (test_http.c,
 * test_embed_job.c, test_framing.c, ...): a small table in a temporary
 * directory, a server started in this process with tv_server_start on an
 * ephemeral loopback port, and raw HTTP/1.1 spoken over a socket.
 *
 * The table: vocab FX_VOCAB, dim FX_DIM, context FX_CONTEXT, learned
 * positions; token row i holds i*FX_DIM + j (j the column), position row p
 * holds (p*FX_DIM + j) / 4 -- small integers and quarters, exact in float32
 * and in any decimal spelling.
 *
 * Each test program includes this once; the functions are static (unused
 * ones are fine: __attribute__((unused))).
 */
#ifndef TV_SERVER_FIXTURE_H
#define TV_SERVER_FIXTURE_H

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "http.h"
#include "log.h"
#include "server.h"
#include "tokvec_write.h"

#define FX_VOCAB 16
#define FX_DIM 4
#define FX_CONTEXT 8
#define FX_UNUSED __attribute__((unused))

typedef struct fixture {
    char dir[64];
    char table[128];
    tv_config cfg;
    int cfg_loaded;
    tv_server *srv;
    int port;
} fixture;

/* A table of vocab x dim (positions context x dim) at path. */
static FX_UNUSED int fx_write_table(const char *path, int64_t vocab,
                                    int64_t dim, int64_t context)
{
    float *tok = malloc((size_t)(vocab * dim) * sizeof *tok);
    float *pos = malloc((size_t)(context * dim) * sizeof *pos);
    int rc = -1;
    if (tok && pos) {
        for (int64_t i = 0; i < vocab * dim; i++)
            tok[i] = (float)i;
        for (int64_t i = 0; i < context * dim; i++)
            pos[i] = (float)i / 4;
        tokvec_write_tensor w[2] = {
            {"tok_emb.weight", TOKVEC_F32, vocab, dim, tok},
            {"pos_emb.weight", TOKVEC_F32, context, dim, pos}};
        rc = tokvec_safetensors_write(path, w, 2, NULL);
    }
    free(tok);
    free(pos);
    return rc;
}

/* The temporary directory and the table in it. */
static FX_UNUSED int fx_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/tokvec-test-http-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->table, sizeof f->table, "%s/t.safetensors", f->dir);
    return fx_write_table(f->table, FX_VOCAB, FX_DIM, FX_CONTEXT);
}

/* The settings: the table, one worker, one HTTP thread, no access log,
 * then the extra flags (NULL-terminated, may be NULL); port 0 (the kernel
 * picks one: the flag's bounds do not allow 0, the server does). */
static FX_UNUSED int fx_config(fixture *f, const char *const *extra)
{
    char *argv[64] = {"serve",          f->table, "--threads",    "1",
                      "--http-threads", "1",      "--access-log", "false",
                      "--log-level",    "error"};
    int argc = 10;
    for (; extra && *extra && argc < 63; extra++)
        argv[argc++] = (char *)*extra;
    char err[512];
    int rc = tv_config_load(&f->cfg, argc, argv, err, sizeof err);
    if (rc != TV_CONFIG_OK) {
        fprintf(stderr, "fx_config: %s\n", err);
        return -1;
    }
    f->cfg_loaded = 1;
    f->cfg.port = 0;
    return tv_log_setup(f->cfg.log_format, f->cfg.log_level);
}

/* Starts the server; 0, or the tv_server_start code (err printed). */
static FX_UNUSED int fx_start(fixture *f)
{
    char err[512] = "";
    int rc = tv_server_start(&f->cfg, &f->srv, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "fx_start: %s\n", err);
        return rc;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(
        f->srv->tcp[0], MHD_DAEMON_INFO_BIND_PORT);
    f->port = di ? di->port : 0;
    return f->port ? 0 : -1;
}

/* fx_init + fx_config(extra) + fx_start. */
static FX_UNUSED int fx_up(fixture *f, const char *const *extra)
{
    if (fx_init(f) < 0 || fx_config(f, extra) < 0)
        return -1;
    return fx_start(f);
}

/* Waits (5 s at most) until every request has been answered and every job
 * is done: tv_server_stop must not run under a suspended connection. */
static FX_UNUSED int fx_idle(fixture *f)
{
    for (int i = 0; i < 5000; i++) {
        size_t jobs = 0;
        if (tv_server_busy(f->srv, &jobs) == 0 && jobs == 0)
            return 0;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return -1;
}

static FX_UNUSED void fx_down(fixture *f)
{
    if (f->srv) {
        fx_idle(f);
        tv_server_stop(f->srv);
        f->srv = NULL;
    }
    if (f->cfg_loaded)
        tv_config_free(&f->cfg);
    f->cfg_loaded = 0;
    if (f->dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "fx_down: could not remove %s\n", f->dir);
        f->dir[0] = '\0';
    }
}

/* cmocka setup and teardown around a fixture in *state: fx_setup leaves
 * it zeroed (the test configures and starts its server), fx_setup_up
 * starts the server with the defaults, fx_teardown stops and frees. */
static FX_UNUSED int fx_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    *state = f;
    return f ? 0 : -1;
}

static FX_UNUSED int fx_setup_up(void **state)
{
    if (fx_setup(state) < 0 || fx_up(*state, NULL) < 0)
        return -1;
    return 0;
}

static FX_UNUSED int fx_teardown(void **state)
{
    fx_down(*state);
    free(*state);
    return 0;
}

static FX_UNUSED int fx_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static FX_UNUSED int fx_send(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Whether buf holds one whole response (headers and Content-Length). */
static FX_UNUSED int fx_complete(const char *buf, size_t n)
{
    const char *end = strstr(buf, "\r\n\r\n");
    if (!end)
        return 0;
    size_t head = (size_t)(end - buf) + 4;
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (!cl || cl > end)
        return 0; /* no length: read to the end */
    return n >= head + strtoull(cl + 17, NULL, 10);
}

/* Reads one whole response, or until the peer closes, cap - 1 bytes, or
 * 5 s pass; NUL-terminates. Returns the bytes read. */
static FX_UNUSED size_t fx_read_all(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (n + 1 < cap) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = 5000 - (long)((t.tv_sec - t0.tv_sec) * 1000 +
                                  (t.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = '\0';
        if (fx_complete(buf, n))
            break;
    }
    buf[n] = '\0';
    return n;
}

/* The status code of a response, 0 if there is none. */
static FX_UNUSED int fx_status(const char *resp)
{
    int code = 0;
    if (sscanf(resp, "HTTP/1.%*d %d", &code) != 1)
        return 0;
    return code;
}

/* The body of a response (after the blank line), "" if none. */
static FX_UNUSED const char *fx_body(const char *resp)
{
    const char *b = strstr(resp, "\r\n\r\n");
    return b ? b + 4 : "";
}

/* Whether the response's header block has the line "name: value"
 * (value NULL: any value). */
static FX_UNUSED int fx_has_header(const char *resp, const char *name,
                                   const char *value)
{
    const char *end = strstr(resp, "\r\n\r\n");
    size_t nl = strlen(name);
    for (const char *p = strstr(resp, "\r\n"); p && end && p < end;
         p = strstr(p + 2, "\r\n")) {
        const char *h = p + 2;
        if (!strncasecmp(h, name, nl) && h[nl] == ':') {
            const char *v = h + nl + 1;
            while (*v == ' ')
                v++;
            if (!value || !strncmp(v, value, strlen(value)))
                return 1;
        }
    }
    return 0;
}

/* A connection the server has accepted (it answered a request on it):
 * one still in the listen backlog would be reset by a drain. -1 on
 * failure. */
static FX_UNUSED int fx_connect_accepted(int port)
{
    static const char req[] =
        "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n";
    char r[1024];
    int fd = fx_connect(port);
    if (fd < 0 || fx_send(fd, req, sizeof req - 1) < 0)
        goto bad;
    fx_read_all(fd, r, sizeof r);
    if (fx_status(r) == 200)
        return fd;
bad:
    if (fd >= 0)
        close(fd);
    return -1;
}

/* One request (raw bytes, n of them) on a new connection; the whole
 * response (the server closes: send "Connection: close") into resp.
 * Returns the status, 0 if the connection closed without one. */
static FX_UNUSED int fx_raw(fixture *f, const void *req, size_t n, char *resp,
                            size_t cap)
{
    int fd = fx_connect(f->port);
    if (fd < 0)
        return -1;
    resp[0] = '\0';
    if (fx_send(fd, req, n) == 0)
        fx_read_all(fd, resp, cap);
    close(fd);
    return fx_status(resp);
}

/* method path, with a body of blen bytes (body NULL: none) of content
 * type ctype and extra header lines (each ending in \r\n, may be NULL). */
static FX_UNUSED int fx_http_n(fixture *f, const char *method,
                               const char *path, const char *ctype,
                               const char *body, size_t blen,
                               const char *headers, char *resp, size_t cap)
{
    size_t n = 512 + strlen(path) + blen + (headers ? strlen(headers) : 0);
    char *req = malloc(n);
    if (!req)
        return -1;
    int len = snprintf(
        req, n,
        "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        "%s%s%s%s",
        method, path, headers ? headers : "", ctype ? "Content-Type: " : "",
        ctype ? ctype : "", ctype ? "\r\n" : "");
    if (body)
        len += snprintf(req + len, n - (size_t)len, "Content-Length: %zu\r\n",
                        blen);
    len += snprintf(req + len, n - (size_t)len, "\r\n");
    if (body) {
        memcpy(req + len, body, blen);
        len += (int)blen;
    }
    int st = fx_raw(f, req, (size_t)len, resp, cap);
    free(req);
    return st;
}

/* fx_http_n with a NUL-terminated body. */
static FX_UNUSED int fx_http(fixture *f, const char *method, const char *path,
                             const char *ctype, const char *body,
                             const char *headers, char *resp, size_t cap)
{
    return fx_http_n(f, method, path, ctype, body, body ? strlen(body) : 0,
                     headers, resp, cap);
}

/* GET path, no body, no extra headers. */
static FX_UNUSED int fx_get(fixture *f, const char *path, char *resp,
                            size_t cap)
{
    return fx_http(f, "GET", path, NULL, NULL, NULL, resp, cap);
}

/* GET path: asserts its status and that the body holds says. */
static FX_UNUSED void fx_get_says(fixture *f, const char *path, int status,
                                  const char *says)
{
    char r[65536];
    assert_int_equal(fx_get(f, path, r, sizeof r), status);
    assert_non_null(strstr(fx_body(r), says));
}

#endif
