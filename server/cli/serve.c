/* serve.c -- `tokvec serve` (start-up, signals, reload, drain) and
 * `tokvec probe` (the container health check).
 *
 * Start-up is all or nothing: the settings and the table are validated
 * completely before the socket opens; any failure is one line
 * "tokvec: <message>" on stderr (with --log-format json, a JSON line at
 * level error), its message escaped as every log line is (tv_log_fail: it
 * can carry a tokenizer's key or a shard's name), and exit 2 (bad
 * settings or table) or 1 (the port cannot be bound, out of memory).
 *
 * Signals: SIGTERM, SIGINT and SIGHUP are blocked before any thread starts
 * (so every thread -- MHD's HTTP threads, the workers -- inherits the
 * mask); once the server runs, the main thread's control loop (control.c,
 * libuv, which also runs the reaper's tick) takes them: libuv's handler only
 * writes to its pipe, so a reload (which opens and validates a file, allocates
 * and logs) is ordinary main-thread code, and so is --watch's. SIGPIPE is
 * ignored: a client that goes away is an error code, not a death. The one
 * handler is for SIGBUS (a table file truncated or rewritten in place under
 * the mapping, SECURITY.md; sigbus.c): it writes one prepared log line naming
 * the file mapped at the faulting address (the table, or the shard of a
 * sharded checkpoint) and lets the default action kill the process -- crash
 * loudly rather than serve rows that changed underneath us.
 *
 * Shutdown (SIGTERM/SIGINT): tv_server_drain_begin closes the listening
 * socket and turns /ready and new /embed work into 503; the main thread
 * (control.c) then waits until every request begun has been answered
 * completely, up to
 * drain_timeout seconds (a second SIGTERM/SIGINT stops waiting), then, in
 * the same time, until the peers have acknowledged what was sent on the
 * TCP port (/proc/net/tcp's tx_queue; answers MHD has handed to the kernel
 * are not yet delivered, and where the exit tears down the network, as
 * when the last container of a pod exits, queued bytes would be lost), and
 * exits 0. If requests are still open when the wait ends the process
 * leaves with _exit(0) at once: MHD cannot be stopped under a suspended
 * connection (and a finished job's connection stays suspended until MHD's
 * thread has seen the resume).
 *
 * Threads: everything here runs on the main thread; the server's own
 * threads are described in http.h and pool.h.
 */
#include <errno.h>
#include <netdb.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"
#include "cli_opts.h"
#include "config.h"
#include "control.h"
#include "datadir.h"
#include "http.h"
#include "log.h"
#include "origin.h"
#include "sigbus.h"

/* Whether this process runs in a container (docker's and podman's marks). */
static int in_container(void)
{
    return access("/.dockerenv", F_OK) == 0 ||
           access("/run/.containerenv", F_OK) == 0;
}

/* The start-up line: where it listens, and a curl that works from where
 * the reader is: on every interface (as in a container) that is localhost
 * and, from outside a container, the port published for ours. */
static void listening_hint(const tv_config *cfg)
{
    int any = !strcmp(cfg->host, "0.0.0.0") || !strcmp(cfg->host, "::");
    const char *lb = strchr(cfg->host, ':') ? "[" : "", *rb = *lb ? "]" : "";
    const char *host = any ? "localhost" : cfg->host;
    const char *hlb = any ? "" : lb, *hrb = any ? "" : rb;
    long long port = (long long)cfg->port;
    char note[160] = "";
    if (any)
        snprintf(note, sizeof note,
                 " (in a container: the port published for %lld, e.g. "
                 "-p %lld:%lld)",
                 port, port, port);
    else if (in_container() && tv_address_is_loopback(cfg->host))
        snprintf(note, sizeof note,
                 " (in a container: from inside it only; --host 0.0.0.0 "
                 "and a published port reach it from outside)");
    tv_log(TV_LOG_INFO,
           "listening on http://%s%s%s:%lld -- try: curl -d "
           "'{\"inputs\":[[40,1101,257]]}' http://%s%s%s:%lld/embed%s",
           lb, cfg->host, rb, port, hlb, host, hrb, port, note);
}

int cmd_serve(int argc, char **argv)
{
    tv_config cfg;
    tv_server *srv = NULL;
    tv_control *ctl = NULL;
    char err[1024] = "", line[4096], table[1024];
    sigset_t set;
    int exit_code = 0;

    int rc = tv_config_load(&cfg, argc, argv, err, sizeof err);
    if (rc != TV_CONFIG_OK) {
        exit_code = rc == TV_CONFIG_HELP ? 0 : 2;
        if (rc != TV_CONFIG_HELP)
            tv_log_fail("%s", err);
        goto out;
    }
    if (tv_log_setup(cfg.log_format, cfg.log_level) < 0) {
        tv_log_fail("bad --log-format '%s' or --log-level '%s'",
                    cfg.log_format, cfg.log_level);
        exit_code = 2;
        goto out;
    }
    const char *w = cfg.warnings ? cfg.warnings : "";
    for (const char *nl = strchr(w, '\n'); nl; nl = strchr(w, '\n')) {
        tv_log(TV_LOG_WARN, "%.*s", (int)(nl - w), w);
        w = nl + 1;
    }
    /* No tokenizer named: the built-in default, when installed (datadir.h;
     * tables.c drops it with a warning where it does not fit the table) --
     * but for a model directory, which brings its own. */
    char builtin[4096];
    if (!cfg.tokenizer_given && !*cfg.model &&
        tv_builtin_tokenizer(builtin, sizeof builtin)) {
        char *dup = strdup(builtin);
        if (dup) {
            free(cfg.tokenizer);
            cfg.tokenizer = dup;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    /* Response buffers of a MiB or more come from mmap and go back to the
     * OS when freed; otherwise glibc keeps bursts of large replies in its
     * arenas and RSS stays at the high-water mark (measured: ~380 MB after
     * 16 MiB replies, 13 MB with this). */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    /* Before the server starts: its first request may read the map. Each
     * table opened registers its mappings (tables.c), so the line names
     * the file at the faulting address: the table or its shard. */
    tv_sigbus_install(cfg.table);

    if (tv_control_open(&cfg, &ctl) < 0) {
        exit_code = 1;
        goto out;
    }
    rc = tv_server_start(&cfg, &srv, err, sizeof err);
    if (rc < 0) {
        /* A missing table: say how to make one (the default table is not
         * shipped; `make run` creates it). */
        int missing = rc == TV_SERVER_E_INPUT && access(cfg.table, F_OK) < 0;
        tv_log_fail("%s%s", err,
                    missing ? " (create one with: tokvec init --vocab 50257 "
                              "--dim 256 --context 1024 --seed 123 -o FILE, "
                              "or `make run` for the default table)"
                            : "");
        exit_code = tv_server_exit_status(rc);
        goto out;
    }
    tv_config_describe(&cfg, line, sizeof line);
    tv_server_summary(srv, table, sizeof table);
    tv_log(TV_LOG_INFO, "tokvec %s started: %s; %s", TOKVEC_VERSION, line,
           table);
    listening_hint(&cfg);

    size_t open_requests = 0;
    if (tv_control_run(ctl, srv, &open_requests) < 0) {
        exit_code = 1;
        goto out;
    }
    if (open_requests > 0) {
        tv_log(TV_LOG_WARN, "exiting with %zu requests unanswered",
               open_requests);
        _exit(0);
    }
    tv_server_stop(srv);
    srv = NULL;
    tv_log(TV_LOG_INFO, "stopped");
out:
    tv_server_stop(srv);
    tv_control_close(ctl);
    tv_config_free(&cfg);
    return exit_code;
}

/* --- probe ------------------------------------------------------------ */

static void probe_usage(FILE *f)
{
    fputs("usage: tokvec probe http://HOST[:PORT][/PATH]\n"
          "GETs the URL over plain HTTP/1.0 (3 s timeout) and exits 0 when\n"
          "it answers 200, 1 otherwise (no answer, other status), 2 for a\n"
          "bad URL. For container health checks: tokvec probe "
          "http://127.0.0.1:8080/ready\n"
          "\n"
          "  -h, --help   this text\n",
          f);
}

/* Splits http://host[:port][/path] (host may be an [IPv6] literal).
 * 0, or -1 for a URL probe cannot use. */
static int split_url(const char *url, char *host, size_t hostlen, char *port,
                     size_t portlen, const char **path)
{
    const char *u, *h, *hend, *p;
    if (strncmp(url, "http://", 7))
        return -1;
    u = url + 7;
    *path = strchr(u, '/');
    const char *end = *path ? *path : u + strlen(u);
    if (!*path)
        *path = "/";
    if (*u == '[') {
        h = u + 1;
        hend = memchr(h, ']', (size_t)(end - h));
        if (!hend)
            return -1;
        p = hend + 1;
    } else {
        h = u;
        hend = memchr(u, ':', (size_t)(end - u));
        if (!hend)
            hend = end;
        p = hend;
    }
    if (hend == h || (size_t)(hend - h) >= hostlen ||
        memchr(h, '@', (size_t)(hend - h)))
        return -1;
    memcpy(host, h, (size_t)(hend - h));
    host[hend - h] = '\0';
    if (p == end) {
        snprintf(port, portlen, "80");
        return 0;
    }
    if (*p != ':' || end - p < 2 || end - p > 6 || (size_t)(end - p) > portlen)
        return -1;
    long v = 0;
    for (const char *c = p + 1; c < end; c++) {
        if (*c < '0' || *c > '9')
            return -1;
        v = v * 10 + (*c - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    snprintf(port, portlen, "%ld", v);
    return 0;
}

int cmd_probe(int argc, char **argv)
{
    char host[256], port[8], req[2048], resp[64];
    const char *path;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    int fd = -1, rc = 1;

    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        probe_usage(stdout);
        return 0;
    }
    if (argc != 2) {
        probe_usage(stderr);
        return 2;
    }
    if (argv[1][0] == '-') { /* an option, and --help is its only one */
        static const char *const known[] = {"help", NULL};
        return tv_cli_unknown_option("probe",
                                     argv[1] + (argv[1][1] == '-' ? 2 : 1),
                                     known);
    }
    if (split_url(argv[1], host, sizeof host, port, sizeof port, &path) < 0) {
        fprintf(stderr,
                "tokvec: probe: '%s' is not an http://HOST:PORT/PATH URL\n",
                argv[1]);
        return 2;
    }
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n",
                     path, host);
    if (n < 0 || n >= (int)sizeof req || strpbrk(path, " \r\n")) {
        fprintf(stderr, "tokvec: probe: bad path in '%s'\n", argv[1]);
        return 2;
    }
    if (getaddrinfo(host, port, &hints, &ai)) {
        fprintf(stderr, "tokvec: probe: cannot resolve '%s'\n", host);
        goto out;
    }
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto out;
    struct timeval tv = {3, 0}; /* connect, each write and each read */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
        send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
        goto out;
    size_t got = 0;
    while (got < 12) {
        ssize_t r = recv(fd, resp + got, sizeof resp - 1 - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    resp[got] = '\0';
    /* "HTTP/1.x 200" */
    if (got >= 12 && !strncmp(resp, "HTTP/1.", 7) &&
        !strncmp(resp + 8, " 200", 4))
        rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (ai)
        freeaddrinfo(ai);
    return rc;
}
