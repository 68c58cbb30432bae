/* bufcache.h -- response buffers and the cache that keeps large ones for
 * reuse.
 *
 * Buffers are 64-byte aligned. Below 64 KiB they come from malloc; from
 * 64 KiB they are mmap'd in power-of-two sizes and, when put back, kept
 * for reuse in a cache of at most TV_BUFCACHE_BYTES, per size at most half
 * of that and TV_BUFCACHE_PER_CLASS buffers (at least 2): a fresh mapping
 * costs a page fault and a zeroed page per 4 KiB, which profiling showed
 * as ~25% of the server's CPU on 4 MiB raw replies, and unmapping one
 * interrupts every core the process runs on (TLB shootdown: 17% of an
 * HTTP thread on 8x4 JSON at 32 connections when only 8 buffers of a size
 * were kept). A cached buffer nobody took for TV_BUFCACHE_IDLE_MS is
 * unmapped by tv_bufcache_trim, so an idle process keeps little besides
 * the table.
 *
 * Threads: every function but _new and _free may be called from any
 * thread (one leaf lock inside); _new and _free from the main thread.
 */
#ifndef TV_BUFCACHE_H
#define TV_BUFCACHE_H

#include <stddef.h>

typedef struct tv_bufcache tv_bufcache;

#define TV_BUFCACHE_BYTES ((size_t)256 << 20)
#define TV_BUFCACHE_PER_CLASS 64
#define TV_BUFCACHE_CLASSES 32 /* 64 KiB .. 2^47 bytes */
#define TV_BUFCACHE_IDLE_MS 1500

/* 0, or -ENOMEM. */
int tv_bufcache_new(tv_bufcache **out);

/* Unmaps every cached buffer and frees the cache. NULL is a no-op. */
void tv_bufcache_free(tv_bufcache *c);

/* A buffer of at least n bytes, or NULL (out of memory, or n past the
 * last class). */
void *tv_bufcache_get(tv_bufcache *c, size_t n);

/* Gives back a buffer from tv_bufcache_get with the same n: cached, or
 * freed (unmapped). NULL is a no-op. */
void tv_bufcache_put(tv_bufcache *c, void *buf, size_t n);

/* Cached bytes (for tests and the idle check). */
size_t tv_bufcache_bytes(tv_bufcache *c);

/* Gives cached memory back to the OS: unmaps cached buffers idle for
 * TV_BUFCACHE_IDLE_MS or more (now_ms on CLOCK_MONOTONIC), and once
 * `activity` (a counter the caller bumps with every use of the server,
 * tv_pool_activity) has stood still that long after moving, asks malloc
 * to return its free pages (malloc_trim), once. Call it periodically (the
 * reaper does, about twice a second). Returns the bytes unmapped. */
size_t tv_bufcache_trim(tv_bufcache *c, long long now_ms,
                        unsigned long activity);

#endif
