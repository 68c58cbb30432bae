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
 *           [--mode MODE] [--hugepage 0|1]
 *
 * --mode picks how the body is handed to the kernel (enum mode below: send,
 * sendfile, memfd, memfd-pwrite, zerocopy, zerocopy-chunked, vmsplice,
 * send-chunked, memfd-pool, vmsplice-fresh), to measure what each way costs
 * the server per request (env LARGE_MODES of bench/loadbench.py;
 * docs/performance.md, "Large replies"). The default, send, is the
 * ceiling. Modes that stand for a server computing its reply copy the body
 * into the memory they send from, chunk by chunk, as the computing would
 * write it. memfd-pool is a measurement only: it rewrites pages that the
 * kernel may still hold.
 *
 * N threads (default 2), each with its own epoll loop and its own
 * connections, accept from one listening socket (EPOLLEXCLUSIVE). A request
 * is read whole (headers, then a Content-Length body, which is dropped),
 * then answered: the header and the body in one sendmsg (other modes: the
 * header with MSG_MORE, then the body), the rest as the socket drains
 * (non-blocking, EPOLLOUT; zerocopy modes also wake on the completions of
 * the error queue). Requests pipelined behind one wait until its reply is
 * out. GET /health is answered the same way (200 with the body): good
 * enough for a readiness probe.
 *
 * Threads: the buffer (and, for sendfile, its memfd) is written once before
 * the threads start and only read after; each connection, with its pipe,
 * memfd, chunk or ring, belongs to the thread that accepted it; the
 * memfd-pool pool is per thread.
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
#include <linux/errqueue.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define REQ_MAX (1u << 20) /* request head + body we keep at most */
#define CHUNK (128u << 10) /* what --mode memfd*, vmsplice fill at a time */
#define POOL_N 16          /* M_MEMFD_POOL: memfds per thread */
#define ZC_RING 8          /* M_ZC_CHUNKED: chunk buffers per connection */
#define ZC_IDS 64          /* M_ZC_CHUNKED: zerocopy sends in flight, most */

/* How the body goes out (--mode): the ways a server could hand the kernel
 * a reply, to measure what each costs the server per request. */
enum mode {
    M_SEND,         /* send() from the reused buffer (copies into the skb) */
    M_SENDFILE,     /* sendfile() from one memfd filled once (as nginx's
                       cached file: the page cache pages go by reference) */
    M_MEMFD,        /* per reply: a fresh memfd, mmap, filled from the buffer
                       (what computing the reply into it would write), munmap,
                       sendfile; closed when sent (the kernel frees the pages
                       when the last skb lets go of them) */
    M_MEMFD_PW,     /* per reply: a fresh memfd filled with pwrite (shmem does
                       not zero pages a write fills whole; still a copy) */
    M_ZEROCOPY,     /* send(MSG_ZEROCOPY) from the reused buffer */
    M_ZC_CHUNKED,   /* each CHUNK copied into one of ZC_RING per-connection
                       buffers, send(MSG_ZEROCOPY) from it; a buffer is
                       reused only once the kernel's completion says it let
                       go of every send that referenced it (safe) */
    M_VMSPLICE,     /* vmsplice() the reused buffer into a pipe, splice() the
                       pipe into the socket */
    M_SEND_CHUNKED, /* each CHUNK copied into a per-connection buffer, then
                       send() from it: a server that makes its reply a chunk
                       at a time in cache (tokvec's chunked replies) */
    M_MEMFD_POOL,   /* POOL_N memfds per thread, mapped once, taken in turn
                       and rewritten for every reply (what computing the
                       reply into them would write), then sendfile: what a
                       pool of reply pages would cost if their release could
                       be proven. NOT SAFE in general: pages are rewritten
                       while an skb may still hold them (here every reply has
                       the same bytes, so nothing shows) */
    M_VMSPLICE_FRESH, /* per reply: fresh anonymous memory (MADV_HUGEPAGE
                         with --hugepage 1), filled from the buffer, then
                         as M_VMSPLICE; unmapped when the reply is out (the
                         pipe and the skbs hold their own page references) */
};
static const char *const mode_names[] = {
    [M_SEND] = "send",
    [M_SENDFILE] = "sendfile",
    [M_MEMFD] = "memfd",
    [M_MEMFD_PW] = "memfd-pwrite",
    [M_ZEROCOPY] = "zerocopy",
    [M_ZC_CHUNKED] = "zerocopy-chunked",
    [M_VMSPLICE] = "vmsplice",
    [M_SEND_CHUNKED] = "send-chunked",
    [M_MEMFD_POOL] = "memfd-pool",
    [M_VMSPLICE_FRESH] = "vmsplice-fresh",
};

static struct {
    int lfd;
    enum mode mode;
    int hugepage; /* --hugepage 1: madvise(MADV_HUGEPAGE) the fresh memfd */
    int file;     /* M_SENDFILE: the memfd holding the body */
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
    int file;    /* M_MEMFD*: this reply's memfd (-1: none) */
    int pipe[2]; /* M_VMSPLICE: the pipe, and the bytes now in it */
    size_t in_pipe;
    char *fresh; /* M_VMSPLICE_FRESH: this reply's pages, their mapping */
    char *fresh_map;
    size_t fresh_len;
    char *chunk;                /* M_SEND_CHUNKED: the chunk */
    size_t chunk_at, chunk_len; /* body offset and bytes of the chunk */
    /* M_ZC_CHUNKED: the ring; zc_pending[i]: the zerocopy sends from
     * ring[i] not completed yet; zc_slot[id % ZC_IDS]: the slot the send
     * with that id went from; zc_next: the next send's id (the kernel
     * numbers a socket's zerocopy sends 0, 1, ...); zc_out: sends not
     * completed yet */
    char *ring[ZC_RING];
    unsigned zc_pending[ZC_RING], zc_out;
    unsigned char zc_slot[ZC_IDS];
    uint32_t zc_next;
    unsigned cur; /* the ring slot holding the chunk being sent */
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
    if (c->file >= 0 && g.mode != M_MEMFD_POOL)
        close(c->file);
    if (c->pipe[0] >= 0) {
        close(c->pipe[0]);
        close(c->pipe[1]);
    }
    if (c->fresh_map)
        munmap(c->fresh_map, c->fresh_len);
    free(c->chunk);
    for (unsigned i = 0; i < ZC_RING; i++)
        free(c->ring[i]);
    free(c->in);
    free(c);
}

/* M_MEMFD_POOL: the next of this thread's memfds (made on first use), its
 * mapping, and its fd in *fd. NULL on error. */
static char *pool_take(int *fd)
{
    static _Thread_local struct {
        int fd;
        char *map;
    } pool[POOL_N];
    static _Thread_local unsigned next;
    unsigned i = next++ % POOL_N;
    if (!pool[i].map) {
        int f = memfd_create("pool", MFD_CLOEXEC);
        char *m = MAP_FAILED;
        if (f >= 0 && ftruncate(f, (off_t)g.len) == 0)
            m = mmap(NULL, g.len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
        if (m == MAP_FAILED) {
            if (f >= 0)
                close(f);
            return NULL;
        }
        if (g.hugepage)
            madvise(m, g.len, MADV_HUGEPAGE);
        pool[i].fd = f;
        pool[i].map = m;
    }
    *fd = pool[i].fd;
    return pool[i].map;
}

/* M_MEMFD*: a fresh memfd holding the body, made the way a server would
 * compute its reply into it (CHUNK at a time). -1 on error. */
static int fresh_memfd(void)
{
    int fd = memfd_create("reply", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (g.mode == M_MEMFD_PW) {
        for (size_t o = 0; o < g.len; o += CHUNK) {
            size_t n = g.len - o < CHUNK ? g.len - o : CHUNK;
            if (pwrite(fd, g.body + o, n, (off_t)o) != (ssize_t)n) {
                close(fd);
                return -1;
            }
        }
        return fd;
    }
    if (ftruncate(fd, (off_t)g.len) < 0) {
        close(fd);
        return -1;
    }
    char *m = mmap(NULL, g.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        close(fd);
        return -1;
    }
    if (g.hugepage)
        madvise(m, g.len, MADV_HUGEPAGE);
    for (size_t o = 0; o < g.len; o += CHUNK)
        memcpy(m + o, g.body + o, g.len - o < CHUNK ? g.len - o : CHUNK);
    munmap(m, g.len);
    return fd;
}

/* M_VMSPLICE_FRESH: fresh anonymous pages holding the body, 2 MiB aligned
 * (so that MADV_HUGEPAGE can give huge pages). -1 on error. */
static int fresh_anon(conn *c)
{
    size_t al = 2u << 20;
    c->fresh_len = g.len + al;
    c->fresh_map = mmap(NULL, c->fresh_len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->fresh_map == MAP_FAILED) {
        c->fresh_map = NULL;
        return -1;
    }
    c->fresh = (char *)(((uintptr_t)c->fresh_map + al - 1) & ~(al - 1));
    if (g.hugepage)
        madvise(c->fresh, g.len, MADV_HUGEPAGE);
    for (size_t o = 0; o < g.len; o += CHUNK)
        memcpy(c->fresh + o, g.body + o,
               g.len - o < CHUNK ? g.len - o : CHUNK);
    return 0;
}

/* M_ZEROCOPY, M_ZC_CHUNKED: reads the completions off the error queue
 * (they hold socket memory until read). M_ZEROCOPY never rewrites its
 * buffer, so they say nothing it needs; M_ZC_CHUNKED counts each ring
 * slot's sends back down. */
static void zc_drain(conn *c)
{
    char ctl[256];
    for (;;) {
        struct msghdr m = {.msg_control = ctl, .msg_controllen = sizeof ctl};
        if (recvmsg(c->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            return;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm;
             cm = CMSG_NXTHDR(&m, cm)) {
            struct sock_extended_err ee;
            if (cm->cmsg_level != SOL_IP || cm->cmsg_type != IP_RECVERR)
                continue;
            memcpy(&ee, CMSG_DATA(cm), sizeof ee);
            if (ee.ee_origin != SO_EE_ORIGIN_ZEROCOPY ||
                g.mode != M_ZC_CHUNKED)
                continue;
            /* the sends ee_info..ee_data (in any order among ranges) */
            for (uint32_t id = ee.ee_info;; id++) {
                c->zc_pending[c->zc_slot[id % ZC_IDS]]--;
                c->zc_out--;
                if (id == ee.ee_data)
                    break;
            }
        }
    }
}

/* M_ZC_CHUNKED: a ring slot the kernel no longer references, or -1. */
static int zc_free_slot(const conn *c)
{
    for (unsigned i = 0; i < ZC_RING; i++)
        if (!c->zc_pending[i])
            return (int)i;
    return -1;
}

/* Sends the body from offset off, as g.mode says: bytes taken, or -1 with
 * errno. */
static ssize_t body_send(conn *c, size_t off)
{
    size_t left = g.len - off;
    switch (g.mode) {
    case M_SEND:
        return send(c->fd, g.body + off, left, MSG_NOSIGNAL);
    case M_ZEROCOPY:
        zc_drain(c);
        return send(c->fd, g.body + off, left, MSG_NOSIGNAL | MSG_ZEROCOPY);
    case M_ZC_CHUNKED: {
        zc_drain(c);
        if (off < c->chunk_at || off >= c->chunk_at + c->chunk_len) {
            int i = zc_free_slot(c);
            if (i < 0) { /* all referenced: a completion wakes us */
                errno = EAGAIN;
                return -1;
            }
            c->cur = (unsigned)i;
            c->chunk_at = off;
            c->chunk_len = left < CHUNK ? left : CHUNK;
            memcpy(c->ring[i], g.body + off, c->chunk_len);
        }
        if (c->zc_out == ZC_IDS) { /* ids to track: wait for completions */
            errno = EAGAIN;
            return -1;
        }
        ssize_t w = send(c->fd, c->ring[c->cur] + (off - c->chunk_at),
                         c->chunk_at + c->chunk_len - off,
                         MSG_NOSIGNAL | MSG_ZEROCOPY);
        if (w > 0) { /* each send that queued bytes takes the next id */
            c->zc_slot[c->zc_next++ % ZC_IDS] = (unsigned char)c->cur;
            c->zc_pending[c->cur]++;
            c->zc_out++;
        }
        return w;
    }
    case M_SENDFILE:
    case M_MEMFD:
    case M_MEMFD_PW: {
        off_t o = (off_t)off;
        return sendfile(c->fd, g.mode == M_SENDFILE ? g.file : c->file, &o,
                        left);
    }
    case M_SEND_CHUNKED:
        if (off < c->chunk_at || off >= c->chunk_at + c->chunk_len) {
            c->chunk_at = off;
            c->chunk_len = left < CHUNK ? left : CHUNK;
            memcpy(c->chunk, g.body + off, c->chunk_len);
        }
        return send(c->fd, c->chunk + (off - c->chunk_at),
                    c->chunk_at + c->chunk_len - off, MSG_NOSIGNAL);
    case M_MEMFD_POOL: {
        off_t o = (off_t)off;
        return sendfile(c->fd, c->file, &o, left);
    }
    case M_VMSPLICE:
    case M_VMSPLICE_FRESH:
        if (!c->in_pipe) {
            char *b = g.mode == M_VMSPLICE ? g.body : c->fresh;
            struct iovec v = {b + off, left < CHUNK ? left : CHUNK};
            ssize_t n = vmsplice(c->pipe[1], &v, 1, SPLICE_F_NONBLOCK);
            if (n < 0)
                return -1;
            c->in_pipe = (size_t)n;
        }
        ssize_t w = splice(c->pipe[0], NULL, c->fd, NULL, c->in_pipe,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE);
        if (w > 0)
            c->in_pipe -= (size_t)w;
        return w;
    }
    errno = EINVAL;
    return -1;
}

/* Sends what is left of the reply: 0 when it is out or the socket is full
 * (EPOLLOUT brings us back), -1 on error. */
static int reply_more(conn *c)
{
    size_t total = g.head_len + g.len;
    if (c->sent == 0 && (g.mode == M_MEMFD || g.mode == M_MEMFD_PW) &&
        c->file < 0) {
        c->file = fresh_memfd();
        if (c->file < 0)
            return -1;
    }
    if (c->sent == 0 && g.mode == M_MEMFD_POOL && c->file < 0) {
        char *m = pool_take(&c->file);
        if (!m)
            return -1;
        for (size_t o = 0; o < g.len; o += CHUNK)
            memcpy(m + o, g.body + o, g.len - o < CHUNK ? g.len - o : CHUNK);
    }
    if (c->sent == 0 && (g.mode == M_SEND_CHUNKED || g.mode == M_ZC_CHUNKED))
        c->chunk_len = 0;
    if (c->sent == 0 && g.mode == M_VMSPLICE_FRESH && !c->fresh_map &&
        fresh_anon(c) < 0)
        return -1;
    while (c->sent < total) {
        ssize_t w;
        if (c->sent < g.head_len && g.mode == M_SEND) {
            struct iovec v[2] = {
                {g.head + c->sent, g.head_len - c->sent},
                {g.body, g.len},
            };
            struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
            w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        } else if (c->sent < g.head_len) {
            w = send(c->fd, g.head + c->sent, g.head_len - c->sent,
                     MSG_NOSIGNAL | MSG_MORE);
        } else {
            w = body_send(c, c->sent - g.head_len);
        }
        if (w < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->sent += (size_t)w;
    }
    c->sent = SIZE_MAX;
    if (c->file >= 0 && g.mode != M_MEMFD_POOL)
        close(c->file);
    c->file = -1;
    if (c->fresh_map) {
        munmap(c->fresh_map, c->fresh_len);
        c->fresh_map = NULL;
    }
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

/* M_SEND_CHUNKED, M_ZC_CHUNKED: the connection's chunk or ring. -1 on
 * error. */
static int conn_buffers(conn *c)
{
    if (g.mode == M_SEND_CHUNKED) {
        c->chunk = malloc(CHUNK);
        return c->chunk ? 0 : -1;
    }
    for (unsigned i = 0; g.mode == M_ZC_CHUNKED && i < ZC_RING; i++) {
        c->ring[i] = malloc(CHUNK);
        if (!c->ring[i])
            return -1;
    }
    return 0;
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
                c->file = c->pipe[0] = c->pipe[1] = -1;
                if (g.mode == M_ZEROCOPY || g.mode == M_ZC_CHUNKED)
                    setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one);
                if (conn_buffers(c) < 0) {
                    conn_close(ep, c);
                    continue;
                }
                if ((g.mode == M_VMSPLICE || g.mode == M_VMSPLICE_FRESH) &&
                    pipe2(c->pipe, O_NONBLOCK | O_CLOEXEC) == 0)
                    fcntl(c->pipe[1], F_SETPIPE_SZ, (int)CHUNK);
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
            uint32_t e = evs[i].events;
            if ((g.mode == M_ZEROCOPY || g.mode == M_ZC_CHUNKED) &&
                (e & EPOLLERR)) {
                int err = 0;
                socklen_t el = sizeof err;
                zc_drain(c); /* completions raise EPOLLERR too */
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
                if (!err)
                    e &= ~(uint32_t)EPOLLERR;
            }
            if (serve(c) < 0 || (e & (EPOLLERR | EPOLLHUP)))
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
                    " (--body FILE | --bytes N) [--type CONTENT-TYPE]\n"
                    "  [--mode send|sendfile|memfd|memfd-pwrite|zerocopy|"
                    "vmsplice|send-chunked|memfd-pool|zerocopy-chunked|"
                    "vmsplice-fresh]\n"
                    "  [--hugepage 0|1]\n");
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
        else if (!strcmp(argv[i], "--hugepage"))
            g.hugepage = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--mode")) {
            size_t k = 0, nm = sizeof mode_names / sizeof *mode_names;
            while (k < nm && strcmp(argv[i + 1], mode_names[k]))
                k++;
            if (k == nm)
                usage();
            g.mode = (enum mode)k;
        } else
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
    if (g.mode == M_SENDFILE) {
        g.file = memfd_create("body", MFD_CLOEXEC);
        if (g.file < 0 || write(g.file, g.body, g.len) != (ssize_t)g.len) {
            perror("ceiling: memfd");
            return 1;
        }
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
