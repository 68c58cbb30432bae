/* serve.c -- `tokvec serve` (start-up, signals, reload, drain) and
 * `tokvec probe`.
 *
 * Signals: SIGTERM, SIGINT and SIGHUP are blocked in every thread (the mask
 * is set before any thread starts) and taken synchronously by the main
 * thread with sigtimedwait, so no work ever runs in a signal handler.
 * SIGPIPE is ignored (a client that goes away is an error code, not a
 * death).
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "http.h"
#include "log.h"

int cmd_serve(int argc, char **argv)
{
    tv_config cfg;
    tv_server *srv = NULL;
    char err[1024] = "", line[4096];
    sigset_t set;

    int rc = tv_config_load(&cfg, argc, argv, err, sizeof err);
    if (rc != TV_CONFIG_OK) {
        tv_config_free(&cfg);
        if (rc == TV_CONFIG_HELP)
            return 0;
        fprintf(stderr, "tokvec: %s\n", err);
        return 2;
    }
    if (tv_log_setup(cfg.log_format, cfg.log_level) < 0) {
        fprintf(stderr, "tokvec: bad log settings\n");
        tv_config_free(&cfg);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    rc = tv_server_start(&cfg, &srv, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "tokvec: %s\n", err);
        tv_log(TV_LOG_ERROR, "not started: %s", err);
        tv_config_free(&cfg);
        return rc == -2 ? 2 : 1;
    }
    tv_config_describe(&cfg, line, sizeof line);
    tv_log(TV_LOG_INFO, "tokvec %s started: %s", TOKVEC_VERSION, line);
    tv_log(TV_LOG_INFO,
           "listening on http://%s:%lld -- try: curl -d "
           "'{\"inputs\":[[40,1101,257]]}' http://%s:%lld/embed",
           cfg.host, (long long)cfg.port,
           strcmp(cfg.host, "0.0.0.0") ? cfg.host : "127.0.0.1",
           (long long)cfg.port);

    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        if (sig < 0)
            continue; /* EINTR */
        if (sig == SIGHUP) {
            tv_log(TV_LOG_INFO, "SIGHUP: reloading %s", cfg.table);
            tv_server_reload(srv);
            continue;
        }
        tv_log(TV_LOG_INFO, "%s: draining (up to %g s)",
               sig == SIGTERM ? "SIGTERM" : "SIGINT", cfg.drain_timeout);
        size_t left = tv_server_drain(srv, cfg.drain_timeout);
        if (left) {
            /* Jobs still hold suspended connections: MHD cannot be stopped
             * cleanly under them, so leave at once. */
            tv_log(TV_LOG_WARN, "drain timeout: %zu requests unfinished; "
                                "exiting", left);
            _exit(0);
        }
        break;
    }
    tv_server_stop(srv);
    tv_log(TV_LOG_INFO, "stopped");
    tv_config_free(&cfg);
    return 0;
}

/* GET over plain HTTP/1.0 with a 3 s budget; 0 on status 200. */
int cmd_probe(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "--help")) {
        fputs("usage: tokvec probe http://HOST:PORT/PATH\n"
              "exits 0 when the URL answers 200 (container health checks)\n",
              argc == 2 ? stdout : stderr);
        return argc == 2 ? 0 : 2;
    }
    char host[256], port[16] = "80";
    const char *u = argv[1], *path;
    if (strncmp(u, "http://", 7)) {
        fprintf(stderr, "tokvec: probe: '%s' is not an http:// URL\n", u);
        return 2;
    }
    u += 7;
    path = strchr(u, '/');
    size_t hl = path ? (size_t)(path - u) : strlen(u);
    if (!path)
        path = "/";
    const char *colon = memchr(u, ':', hl);
    size_t nl = colon ? (size_t)(colon - u) : hl;
    if (nl == 0 || nl >= sizeof host ||
        (colon && (hl - nl - 1 == 0 || hl - nl - 1 >= sizeof port))) {
        fprintf(stderr, "tokvec: probe: bad host or port in '%s'\n", argv[1]);
        return 2;
    }
    memcpy(host, u, nl);
    host[nl] = '\0';
    if (colon) {
        memcpy(port, colon + 1, hl - nl - 1);
        port[hl - nl - 1] = '\0';
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port, &hints, &ai)) {
        fprintf(stderr, "tokvec: probe: cannot resolve %s\n", host);
        return 1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), ok = 0;
    struct timeval tv = {3, 0};
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        char req[1024], resp[64];
        int n = snprintf(req, sizeof req,
                         "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, host);
        if (n > 0 && n < (int)sizeof req && write(fd, req, (size_t)n) == n) {
            ssize_t got = 0, r;
            while (got < 12 && (r = read(fd, resp + got,
                                         sizeof resp - 1 - (size_t)got)) > 0)
                got += r;
            resp[got > 0 ? got : 0] = '\0';
            ok = got >= 12 && !strncmp(resp, "HTTP/1.", 7) &&
                 !strncmp(resp + 8, " 200", 4);
        }
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return ok ? 0 : 1;
}
