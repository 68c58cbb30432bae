/* fault_inject.h -- system-call fault injection for unit tests: included by
 * one test file of a test program, it defines malloc, calloc, realloc,
 * asprintf, mkstemp, write, fchmod, fsync, close, rename, socket, bind,
 * listen, epoll_create1, fstat and mmap in the program itself, so that the
 * calls of the code under test (the core and server objects linked in, and the
 * shared libraries they use, such as jansson's malloc and libmicrohttpd's
 * socket calls) come here first. The C library's own internal calls do not.
 *
 * Unarmed, each one is the C library's. fi_arm(FI_X, n, err) makes the n-th
 * call of X from now (1: the next) fail once with errno err (the
 * allocators and asprintf: no memory; FI_ALLOC is any of malloc, calloc
 * and realloc; the allocators only where FI_HAVE_MALLOC); fi_write_cap(k)
 * makes every write() write at most k bytes (a short write); fi_reset()
 * disarms all. fi_calls(FI_X) counts the calls of X since the last
 * fi_arm/fi_reset of it. fi_spare_library(name) exempts the allocations
 * a shared library makes itself (libjansson 2.14's json_loadb frees an
 * uninitialised pointer when one of its allocations fails).
 *
 * This is the allocation hook of server/runtime/alloc.h carried to the
 * system calls, without a hook in the code: tests arm it around one call.
 * Threads: any (counters are atomic); arm and reset from the test's thread
 * while no other thread of the code under test runs an injected call.
 */
#ifndef TV_FAULT_INJECT_H
#define TV_FAULT_INJECT_H

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
    FI_ALLOC, /* any of malloc, calloc, realloc */
    FI_MALLOC,
    FI_CALLOC,
    FI_REALLOC,
    FI_ASPRINTF,
    FI_MKSTEMP,
    FI_WRITE,
    FI_FCHMOD,
    FI_FSYNC,
    FI_CLOSE,
    FI_RENAME,
    FI_SOCKET,
    FI_BIND,
    FI_LISTEN,
    FI_EPOLL_CREATE1,
    FI_FSTAT,
    FI_MMAP,
    FI_N
};

static _Atomic long fi_nth[FI_N], fi_count[FI_N];
static _Atomic int fi_err[FI_N];
static _Atomic size_t fi_cap;
static uintptr_t fi_spared_lo, fi_spared_hi;

static int fi_find_lib(struct dl_phdr_info *info, size_t size, void *name)
{
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, (const char *)name))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!fi_spared_lo || lo < fi_spared_lo)
            fi_spared_lo = lo;
        if (hi > fi_spared_hi)
            fi_spared_hi = hi;
    }
    return 1;
}

/* Allocations called from the shared library whose file name contains
 * name are never failed (until fi_reset): for a library that does not
 * survive its own allocation failures. 0, or -1 when not loaded. */
static inline int fi_spare_library(const char *name)
{
    fi_spared_lo = fi_spared_hi = 0;
    return dl_iterate_phdr(fi_find_lib, (void *)name) ? 0 : -1;
}

static inline int fi_spared(const void *caller)
{
    uintptr_t a = (uintptr_t)caller;
    return a >= fi_spared_lo && a < fi_spared_hi;
}

static inline void fi_arm(int call, long nth, int err)
{
    atomic_store(&fi_count[call], 0);
    atomic_store(&fi_err[call], err);
    atomic_store(&fi_nth[call], nth);
}

static inline void fi_write_cap(size_t k)
{
    atomic_store(&fi_cap, k);
}

static inline void fi_reset(void)
{
    for (int i = 0; i < FI_N; i++) {
        atomic_store(&fi_nth[i], 0);
        atomic_store(&fi_count[i], 0);
    }
    atomic_store(&fi_cap, 0);
    fi_spared_lo = fi_spared_hi = 0;
}

static inline long fi_calls(int call)
{
    return atomic_load(&fi_count[call]);
}

/* 1 (errno set) when this call of `call` is the one armed to fail. */
static inline int fi_fails(int call)
{
    long n = atomic_fetch_add(&fi_count[call], 1) + 1;
    long want = atomic_load(&fi_nth[call]);
    if (!want || n != want)
        return 0;
    atomic_store(&fi_nth[call], 0); /* once */
    errno = atomic_load(&fi_err[call]);
    return 1;
}

/* Under AddressSanitizer, which owns malloc, allocations are not
 * injected: FI_HAVE_MALLOC is 0 and tests of them skip. */
#if defined(__SANITIZE_ADDRESS__)
#define FI_HAVE_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FI_HAVE_MALLOC 0
#endif
#endif
#ifndef FI_HAVE_MALLOC
#define FI_HAVE_MALLOC 1
extern void *__libc_malloc(size_t n);

void *malloc(size_t n)
{
    if (!fi_spared(__builtin_return_address(0)) &&
        (fi_fails(FI_ALLOC) || fi_fails(FI_MALLOC))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

extern void *__libc_calloc(size_t k, size_t n);

void *calloc(size_t k, size_t n)
{
    if (!fi_spared(__builtin_return_address(0)) &&
        (fi_fails(FI_ALLOC) || fi_fails(FI_CALLOC))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(k, n);
}

extern void *__libc_realloc(void *p, size_t n);

void *realloc(void *p, size_t n)
{
    if (!fi_spared(__builtin_return_address(0)) &&
        (fi_fails(FI_ALLOC) || fi_fails(FI_REALLOC))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}
#endif

int asprintf(char **out, const char *fmt, ...)
{
    if (fi_fails(FI_ASPRINTF))
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(out, fmt, ap);
    va_end(ap);
    return rc;
}

int mkstemp(char *tmpl)
{
    if (fi_fails(FI_MKSTEMP))
        return -1;
    return mkostemp(tmpl, 0);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (fi_fails(FI_WRITE))
        return -1;
    size_t cap = atomic_load(&fi_cap);
    if (cap && n > cap)
        n = cap;
    return syscall(SYS_write, fd, buf, n);
}

int fchmod(int fd, mode_t mode)
{
    if (fi_fails(FI_FCHMOD))
        return -1;
    return (int)syscall(SYS_fchmod, fd, mode);
}

int fsync(int fd)
{
    if (fi_fails(FI_FSYNC))
        return -1;
    return (int)syscall(SYS_fsync, fd);
}

/* A close that fails has closed the descriptor all the same (Linux). */
int close(int fd)
{
    int fail = fi_fails(FI_CLOSE), e = errno;
    int rc = (int)syscall(SYS_close, fd);
    if (fail) {
        errno = e;
        return -1;
    }
    return rc;
}

int rename(const char *from, const char *to)
{
    if (fi_fails(FI_RENAME))
        return -1;
    return renameat(AT_FDCWD, from, AT_FDCWD, to);
}

int socket(int domain, int type, int protocol)
{
    if (fi_fails(FI_SOCKET))
        return -1;
    return (int)syscall(SYS_socket, domain, type, protocol);
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
    if (fi_fails(FI_BIND))
        return -1;
    return (int)syscall(SYS_bind, fd, sa, len);
}

int listen(int fd, int backlog)
{
    if (fi_fails(FI_LISTEN))
        return -1;
    return (int)syscall(SYS_listen, fd, backlog);
}

int epoll_create1(int flags)
{
    if (fi_fails(FI_EPOLL_CREATE1))
        return -1;
    return (int)syscall(SYS_epoll_create1, flags);
}

int fstat(int fd, struct stat *st)
{
    if (fi_fails(FI_FSTAT))
        return -1;
    return (int)syscall(SYS_fstat, fd, st);
}

void *mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off)
{
    if (fi_fails(FI_MMAP))
        return MAP_FAILED;
    return (void *)syscall(SYS_mmap, addr, n, prot, flags, fd, off);
}

#endif
