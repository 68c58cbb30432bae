/* listen.c -- the listeners: MHD daemons on the TCP port (one per HTTP
 * thread, each with its own SO_REUSEPORT socket) and on --unix-socket (one
 * daemon with a thread pool), every one with the same callbacks (http.c's
 * handler and completion, deadline.c's connection notification,
 * framing.c's URI and unescape callbacks), and the names of their threads
 * (tv-http-N, tv-unix-N).
 *
 * Threads: listen_start runs on the main thread, from tv_server_start;
 * MHD's log callback (mhd_log) on any of MHD's threads, at --log-level
 * debug only (MHD_USE_ERROR_LOG).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "framing.h"
#include "log.h"
#include "server.h"
#include "server_codes.h"

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    tv_log(TV_LOG_DEBUG, "libmicrohttpd: %s", msg);
}

size_t tv_threads_named(const char *name, int exact, pid_t *tids, size_t cap)
{
    DIR *d = opendir("/proc/self/task");
    size_t n = 0, len = strlen(name);
    if (!d)
        return 0;
    for (struct dirent *e = readdir(d); e && (!tids || n < cap);
         e = readdir(d)) {
        char path[300], comm[32] = "";
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* exited meanwhile */
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
        if (strncmp(comm, name, len) || (exact && comm[len]))
            continue;
        if (tids)
            tids[n] = (pid_t)strtol(e->d_name, NULL, 10);
        n++;
    }
    closedir(d);
    for (size_t i = 1; tids && i < n; i++) /* insertion sort: a few dozen */
        for (size_t j = i; j > 0 && tids[j - 1] > tids[j]; j--) {
            pid_t t = tids[j];
            tids[j] = tids[j - 1];
            tids[j - 1] = t;
        }
    return n;
}

/* Names the polling threads of the daemons just started stem-0..N-1. MHD
 * names its threads "MHD-worker" / "MHD-single" itself, from inside each
 * new thread, and does not hand out their pthread_t: so wait (up to 10 s:
 * threads start slowly under valgrind) until all `expect` of them carry
 * MHD's name -- after that MHD never renames them -- then rename each
 * through /proc/self/task/TID/comm, which is what pthread_setname_np does
 * for another thread of the process. Run after each listener's daemons
 * have started, before the next listener's. */
static void name_http_threads(const char *stem, size_t expect)
{
    pid_t tids[1024];
    size_t n = 0;
    for (int i = 0; i < 10000; i++) {
        n = tv_threads_named("MHD-", 0, tids, 1024);
        if (n >= expect)
            break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    for (size_t i = 0; i < n; i++) {
        char path[64], name[32];
        snprintf(path, sizeof path, "/proc/self/task/%ld/comm", (long)tids[i]);
        snprintf(name, sizeof name, "%s-%zu", stem, i); /* cut to 15 */
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(name, f);
            fclose(f);
        }
    }
}

/* Starts one MHD daemon with the server's handlers: `threads` polling
 * threads (each with its own epoll; 1 = MHD's single thread), at most
 * `limit` connections, on address sa (with SO_REUSEPORT when reuse) or on
 * the listening socket fd (sa NULL). NULL on failure (errno as MHD leaves
 * it). */
static struct MHD_Daemon *start_daemon(tv_server *s, unsigned threads,
                                       unsigned flags,
                                       const struct sockaddr *sa, int reuse,
                                       int fd, unsigned limit)
{
    const tv_config *cfg = s->cfg;
    double rt = cfg->request_timeout;
    unsigned timeout_s = rt >= 1e6 ? 1000000u : (unsigned)rt;
    if ((double)timeout_s < rt || timeout_s == 0)
        timeout_s++; /* MHD counts whole seconds: rounded up */
    struct MHD_OptionItem where[4];
    int n = 0;
    if (sa) {
        where[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0,
                                             (void *)sa};
        where[n++] = (struct MHD_OptionItem){
            MHD_OPTION_LISTENING_ADDRESS_REUSE, reuse ? 1 : 0, NULL};
    } else {
        where[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, fd,
                                             NULL};
    }
    if (threads > 1)
        where[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE,
                                             (intptr_t)threads, NULL};
    where[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, sa ? (uint16_t)cfg->port : 0, NULL, NULL, http_handler, s,
        MHD_OPTION_ARRAY, where, MHD_OPTION_CONNECTION_LIMIT, limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_s, MHD_OPTION_NOTIFY_COMPLETED,
        http_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
        deadline_on_connection, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
        MHD_OPTION_UNESCAPE_CALLBACK, framing_unescape, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, framing_uri_check, NULL,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, MHD_OPTION_END);
    return d;
}

/* The TCP address is free: bound by nobody, or only by sockets in
 * TIME_WAIT. The HTTP threads bind it with SO_REUSEPORT, which would also
 * let them share it silently with another server already listening there
 * (with SO_REUSEPORT set, as a second tokvec would); this bind, without
 * it, fails in that case. 0 or an errno. */
static int address_free(const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (sa->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    int rc = bind(fd, sa, len) < 0 ? errno : 0;
    close(fd);
    return rc;
}

/* A listening Unix domain socket at path, for MHD. A stale socket file
 * (nobody accepts on it) is replaced; a live one or any other file is an
 * error. 0, TV_SERVER_E_INPUT (bad path) or TV_SERVER_E_SYSTEM, with err
 * filled. */
static int unix_listen(const char *path, int *out, char *err, size_t errlen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    struct stat st;
    *out = -1;
    if (strlen(path) >= sizeof sun.sun_path) {
        snprintf(err, errlen, "--unix-socket '%s' is longer than %zu bytes",
                 path, sizeof sun.sun_path - 1);
        return TV_SERVER_E_INPUT;
    }
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a Unix socket: %s",
                 strerror(errno));
        return TV_SERVER_E_SYSTEM;
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen,
                     "--unix-socket '%s' exists and is not a socket", path);
            close(fd);
            return TV_SERVER_E_INPUT;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int live = probe >= 0 &&
                   connect(probe, (struct sockaddr *)&sun, sizeof sun) == 0;
        if (probe >= 0)
            close(probe);
        if (live) {
            snprintf(err, errlen,
                     "--unix-socket '%s' is in use by another server", path);
            close(fd);
            return TV_SERVER_E_SYSTEM;
        }
        unlink(path); /* stale: left by a process that died */
    }
    int bound = bind(fd, (struct sockaddr *)&sun, sizeof sun) == 0;
    if (!bound || listen(fd, 1024) < 0) {
        int e = errno;
        if (bound)
            unlink(path); /* the file bind() made: nobody will accept */
        snprintf(err, errlen, "cannot listen on the Unix socket %s: %s", path,
                 strerror(e));
        close(fd);
        return e == ENOENT || e == ENOTDIR || e == EACCES ? TV_SERVER_E_INPUT
                                                          : TV_SERVER_E_SYSTEM;
    }
    *out = fd;
    return 0;
}

/* The TCP listener -- one MHD daemon per HTTP thread, each with its own
 * listening socket on the same port (SO_REUSEPORT), so the kernel spreads
 * new connections over them evenly (with one shared socket, MHD's thread
 * pool, the first thread to wake accepts bursts of up to 10, and one thread
 * was seen holding all 32 of a benchmark's connections); each daemon gets
 * its share of max_connections -- and the Unix socket's daemon, whose
 * threads share one socket (MHD's thread pool). 0 or a TV_SERVER_E_*
 * code (http.h), err filled. */
int listen_start(tv_server *s, char *err, size_t errlen)
{
    const tv_config *cfg = s->cfg;
    int64_t http = s->http_threads;
    struct sockaddr_in sa4 = {.sin_family = AF_INET};
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6};
    const struct sockaddr *sa;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    if (tv_log_enabled(TV_LOG_DEBUG))
        flags |= MHD_USE_ERROR_LOG; /* else MHD never calls mhd_log */
    if (inet_pton(AF_INET, cfg->host, &sa4.sin_addr) == 1) {
        sa4.sin_port = htons((uint16_t)cfg->port);
        sa = (const struct sockaddr *)&sa4;
    } else if (inet_pton(AF_INET6, cfg->host, &sa6.sin6_addr) == 1) {
        sa6.sin6_port = htons((uint16_t)cfg->port);
        sa = (const struct sockaddr *)&sa6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, errlen, "--host '%s' is not an IPv4 or IPv6 address",
                 cfg->host);
        return TV_SERVER_E_INPUT;
    }
    int ufd = -1;
    if (*cfg->unix_socket) {
        int urc = unix_listen(cfg->unix_socket, &ufd, err, errlen);
        if (urc < 0) {
            return urc;
        }
        s->unix_bound = 1;
    }
    int e = address_free(sa, sa == (const struct sockaddr *)&sa4 ? sizeof sa4
                                                                 : sizeof sa6);
    if (!e)
        s->tcp = tv_calloc(s->http_threads, sizeof *s->tcp);
    if (!e && !s->tcp) {
        snprintf(err, errlen, "out of memory");
        if (ufd >= 0)
            close(ufd);
        return TV_SERVER_E_NOMEM;
    }
    if (e) {
        snprintf(err, errlen, "cannot listen on %s:%" PRId64 ": %s", cfg->host,
                 cfg->port, strerror(e));
        if (ufd >= 0)
            close(ufd);
        return TV_SERVER_E_SYSTEM;
    }
    for (unsigned i = 0; i < s->http_threads; i++) {
        unsigned share = (unsigned)(cfg->max_connections / http) +
                         (i < (unsigned)(cfg->max_connections % http));
        errno = 0;
        s->tcp[i] = start_daemon(s, 1, flags, sa, 1, -1, share);
        if (!s->tcp[i]) {
            e = errno; /* from bind() or listen(), as MHD leaves it */
            snprintf(err, errlen, "cannot listen on %s:%" PRId64 ": %s",
                     cfg->host, cfg->port,
                     e ? strerror(e) : "address in use or not permitted");
            if (ufd >= 0)
                close(ufd);
            return TV_SERVER_E_SYSTEM;
        }
        s->ntcp++;
    }
    name_http_threads("tv-http", s->ntcp);
    if (ufd >= 0) {
        s->mhd_unix = start_daemon(s, s->http_threads,
                                   flags & ~(unsigned)MHD_USE_IPv6, NULL, 0,
                                   ufd, (unsigned)cfg->max_connections);
        if (!s->mhd_unix) {
            snprintf(err, errlen, "cannot serve on the Unix socket %s",
                     cfg->unix_socket);
            close(ufd);
            return TV_SERVER_E_SYSTEM;
        }
        name_http_threads("tv-unix", s->http_threads);
    }
    return 0;
}
