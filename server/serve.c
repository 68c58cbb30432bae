/* serve.c -- `tokvec serve` and `tokvec probe`.
 *
 * This first version validates and describes the table (what `serve` will
 * serve) and implements the probe; the HTTP server lands with issue 4.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"

int cmd_serve(int argc, char **argv)
{
    const char *table = "data/gpt2-256.safetensors";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            puts("usage: tokvec serve [--table FILE]");
            return 0;
        }
        if (!strcmp(argv[i], "--table") && i + 1 < argc)
            table = argv[++i];
    }
    fprintf(stderr, "tokvec serve: the HTTP server is not built yet; "
                    "describing the table it would serve\n");
    char *args[] = {"inspect", (char *)table, NULL};
    return cmd_inspect(2, args);
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
