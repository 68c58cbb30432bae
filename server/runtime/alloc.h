/* alloc.h -- the allocator of the request path, with a hook for tests.
 *
 * tv_malloc, tv_calloc, tv_realloc and tv_aligned_alloc are the C library's
 * functions, except that when a test has set tv_alloc_fault and it returns
 * nonzero, they fail (NULL, nothing allocated). The server never sets it:
 * it is there so a test can make the Nth allocation of a request fail and
 * check the answer (500 or 503) and that nothing leaks. The request path
 * (http.c, request*.c, embed_job.c, get_routes.c, bufcache.c) allocates
 * through these; start-up, the CLI and jansson do not.
 *
 * Threads: any. tv_alloc_fault is read with a relaxed atomic load; the
 * hook itself must be thread safe (workers and HTTP threads call it).
 */
#ifndef TV_ALLOC_H
#define TV_ALLOC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

typedef int (*tv_alloc_fault_fn)(size_t n);
extern _Atomic(tv_alloc_fault_fn) tv_alloc_fault;

/* Nonzero: the allocation of n bytes about to be made must fail. */
static inline int tv_alloc_faulted(size_t n)
{
    tv_alloc_fault_fn f = atomic_load_explicit(&tv_alloc_fault,
                                               memory_order_relaxed);
    return f && f(n);
}

static inline void *tv_malloc(size_t n)
{
    return tv_alloc_faulted(n) ? NULL : malloc(n);
}

static inline void *tv_calloc(size_t k, size_t n)
{
    return tv_alloc_faulted(k * n) ? NULL : calloc(k, n);
}

static inline void *tv_realloc(void *p, size_t n)
{
    return tv_alloc_faulted(n) ? NULL : realloc(p, n);
}

static inline void *tv_aligned_alloc(size_t align, size_t n)
{
    return tv_alloc_faulted(n) ? NULL : aligned_alloc(align, n);
}

#endif
