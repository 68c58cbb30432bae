/* ceiling.c -- the loopback ceiling for large replies: a small HTTP/1.1
 * keep-alive server that answers every request (any method, any path) with
 * the same body from one buffer it reuses, written with send() on the
 * socket. No computing, no per-request allocation: what a server that had
 * its reply ready in memory could do at best on this machine, for the
 * benchmarks to compare tokvec's large replies against (bench/loadbench.py,
 * section "large").
 *
 *   ceiling --port PORT [--host 127.0.0.1] [--threads N]
 *           (--body FILE | --bytes N) [--type CONTENT-TYPE]
 *
 * N threads (default 2), each with its own epoll loop and its own
 * connections, accept from one listening socket (EPOLLEXCLUSIVE). A request
 * is read whole (headers, then a Content-Length body, which is dropped),
 * then answered: the header and the body in one sendmsg, the rest with
 * send() as the socket drains (non-blocking, EPOLLOUT). Requests pipelined
 * behind one wait until its reply is out. GET /health is answered the same
 * way (200 with the body): good enough for a readiness probe.
 *
 * Threads: the buffer is written once before the threads start and only
 * read after; each connection belongs to the thread that accepted it.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
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
#include <sys/uio.h>
#include <unistd.h>

#define REQ_MAX (1u << 20) /* request head + body we keep at most */

static struct {
    int lfd;
    char *body;
    size_t len;
    char head[256];
    size_t head_len;
} g;

typedef struct conn {
    int fd;
    char *in; /* what the client sent, not yet answered */
    size_t in_len;
    size_t need; /* bytes the request being read takes (0: unknown) */
    size_t sent; /* of head + body, the reply being sent (SIZE_MAX: none) */
} conn;

/* The length of the request at the start of c->in (head + body), or 0
 * while its head is incomplete. */
static size_t request_len(const conn *c)
{
    const char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head = (size_t)(end - c->in) + 4, body = 0;
    for (const char *p = c->in; p && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        if (!strncasecmp(p, "content-length:", 15))
            body = strtoull(p + 15, NULL, 10);
        p = nl + 1;
    }
    return head + body;
}

static void conn_close(int ep, conn *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c);
}

/* Sends what is left of the reply: 0 when it is out or the socket is full
 * (EPOLLOUT brings us back), -1 on error. */
static int reply_more(conn *c)
{
    size_t total = g.head_len + g.len;
    while (c->sent < total) {
        ssize_t w;
        if (c->sent < g.head_len) {
            struct iovec v[2] = {
                {g.head + c->sent, g.head_len - c->sent},
                {g.body, g.len},
            };
            struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
            w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        } else {
            size_t off = c->sent - g.head_len;
            w = send(c->fd, g.body + off, g.len - off, MSG_NOSIGNAL);
        }
        if (w < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->sent += (size_t)w;
    }
    c->sent = SIZE_MAX;
    return 0;
}

/* Reads, answers the complete requests in order. -1: close it. */
static int serve(conn *c)
{
    for (;;) {
        if (c->sent != SIZE_MAX) {
            if (reply_more(c) < 0)
                return -1;
            if (c->sent != SIZE_MAX)
                return 0; /* the socket is full: wait for EPOLLOUT */
        }
        size_t n = request_len(c);
        if (n && n <= c->in_len) { /* one request in: answer it */
            memmove(c->in, c->in + n, c->in_len - n);
            c->in_len -= n;
            c->sent = 0;
            continue;
        }
        if (n > REQ_MAX || c->in_len == REQ_MAX)
            return -1;
        ssize_t r = read(c->fd, c->in + c->in_len, REQ_MAX - c->in_len);
        if (r == 0)
            return -1;
        if (r < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->in_len += (size_t)r;
    }
}

static void *loop(void *arg)
{
    (void)arg;
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE,
                             .data.ptr = NULL};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, g.lfd, &ev) < 0) {
        perror("ceiling: epoll");
        exit(1);
    }
    for (;;) {
        struct epoll_event evs[64];
        int n = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (!c) {
                int fd = accept4(g.lfd, NULL, NULL, SOCK_NONBLOCK);
                if (fd < 0)
                    continue;
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                c = calloc(1, sizeof *c);
                if (c)
                    c->in = malloc(REQ_MAX);
                if (!c || !c->in) {
                    free(c);
                    close(fd);
                    continue;
                }
                c->fd = fd;
                c->sent = SIZE_MAX;
                struct epoll_event ce = {.events = EPOLLIN | EPOLLOUT |
                                                   EPOLLRDHUP | EPOLLET,
                                         .data.ptr = c};
                if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ce) < 0) {
                    close(fd);
                    free(c->in);
                    free(c);
                }
                continue;
            }
            if (serve(c) < 0 || (evs[i].events & (EPOLLERR | EPOLLHUP)))
                conn_close(ep, c);
        }
    }
    return NULL;
}

static int load_body(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) < 0) {
        perror(path);
        return -1;
    }
    g.len = (size_t)st.st_size;
    g.body = malloc(g.len ? g.len : 1);
    int ok = g.body && fread(g.body, 1, g.len, f) == g.len;
    fclose(f);
    return ok ? 0 : -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: ceiling --port PORT [--host ADDR] [--threads N]"
                    " (--body FILE | --bytes N) [--type CONTENT-TYPE]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *type = "application/octet-stream";
    const char *file = NULL;
    long port = -1, threads = 2;
    long long bytes = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port"))
            port = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--host"))
            host = argv[i + 1];
        else if (!strcmp(argv[i], "--threads"))
            threads = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--body"))
            file = argv[i + 1];
        else if (!strcmp(argv[i], "--bytes"))
            bytes = strtoll(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--type"))
            type = argv[i + 1];
        else
            usage();
    }
    if (argc % 2 == 0 || port < 0 || port > 65535 || threads < 1 ||
        threads > 256 || (!file) == (bytes < 0))
        usage();
    if (file && load_body(file) < 0)
        return 1;
    if (!file) {
        g.len = (size_t)bytes;
        g.body = malloc(g.len ? g.len : 1);
        if (!g.body)
            return 1;
        for (size_t i = 0; i < g.len; i++)
            g.body[i] = (char)(i * 131u >> 3);
    }
    g.head_len = (size_t)snprintf(g.head, sizeof g.head,
                                  "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
                                  "Content-Length: %zu\r\n\r\n",
                                  type, g.len);
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port)};
    int one = 1;
    g.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (g.lfd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
        setsockopt(g.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(g.lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(g.lfd, 4096) < 0) {
        perror("ceiling: listen");
        return 1;
    }
    pthread_t t[256];
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, loop, NULL)) {
            fprintf(stderr, "ceiling: cannot start threads\n");
            return 1;
        }
    pthread_join(t[0], NULL);
    return 0;
}
