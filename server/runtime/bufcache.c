/* bufcache.c -- response buffers and the cache of large ones
 * (bufcache.h).
 *
 * What must hold: cached buffers of a class are kept oldest first (trim
 * drops from the front, get takes from the back); buf_bytes is the sum of
 * the cached buffers' sizes and never exceeds TV_BUFCACHE_BYTES.
 *
 * Threads and locks: `lock` guards the cache (bufs, buf_bytes) and the
 * trim state; a leaf lock, never held across mmap, munmap or malloc_trim.
 */
#include <assert.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "alloc.h"
#include "bufcache.h"

/* Cached buffers of one size class (2^(16+i) bytes), oldest first. */
struct buf_class {
    void *p[TV_BUFCACHE_PER_CLASS];
    long long since[TV_BUFCACHE_PER_CLASS]; /* CLOCK_MONOTONIC ms cached */
    size_t n;
};

struct tv_bufcache {
    pthread_mutex_t lock;
    struct buf_class bufs[TV_BUFCACHE_CLASSES]; /* lock */
    size_t buf_bytes;                           /* lock */
    unsigned long seen_activity; /* lock: activity at the last trim */
    long long quiet_since;       /* lock: when activity last moved */
    int heap_trimmed;            /* lock: malloc_trim done since */
};

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tv_bufcache_new(tv_bufcache **out)
{
    tv_bufcache *p = tv_calloc(1, sizeof *p);
    *out = p;
    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    p->quiet_since = mono_ms();
    p->heap_trimmed = 1;
    return 0;
}

void tv_bufcache_free(tv_bufcache *p)
{
    if (!p)
        return;
    for (int k = 0; k < TV_BUFCACHE_CLASSES; k++)
        for (size_t i = 0; i < p->bufs[k].n; i++)
            munmap(p->bufs[k].p[i], (size_t)1 << (16 + k));
    pthread_mutex_destroy(&p->lock);
    free(p);
}

#define BUF_BIG ((size_t)1 << 16)

/* The class for n >= BUF_BIG: the next power of two, as a shift from
 * BUF_BIG (-1 if none fits in size_t). */
static int buf_class_of(size_t n, size_t *size)
{
    size_t c = BUF_BIG;
    int i = 0;
    while (c < n) {
        if (c > SIZE_MAX / 2)
            return -1;
        c <<= 1;
        i++;
    }
    *size = c;
    return i;
}

/* How many buffers of one size the cache keeps: at most half its bytes in
 * one size, so one burst cannot crowd out the others, and at least 2. */
static size_t class_limit(size_t size)
{
    size_t n = TV_BUFCACHE_BYTES / 2 / size;
    return n < 2 ? 2 : n > TV_BUFCACHE_PER_CLASS ? TV_BUFCACHE_PER_CLASS : n;
}

void *tv_bufcache_get(tv_bufcache *p, size_t n)
{
    if (n < BUF_BIG)
        return tv_aligned_alloc(64, (n + 63) / 64 * 64);
    size_t c;
    int k = buf_class_of(n, &c);
    if (k < 0 || k >= TV_BUFCACHE_CLASSES)
        return NULL;
    pthread_mutex_lock(&p->lock);
    struct buf_class *bc = &p->bufs[k];
    if (bc->n) { /* the most recently cached: the others age out */
        void *b = bc->p[--bc->n];
        p->buf_bytes -= c;
        pthread_mutex_unlock(&p->lock);
        return b;
    }
    pthread_mutex_unlock(&p->lock);
    if (tv_alloc_faulted(c))
        return NULL;
    void *b = mmap(NULL, c, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED)
        return NULL;
    /* From 2 MiB: transparent huge pages where the system allows them on
     * request -- one fault per 2 MiB instead of 512. */
    if (c >= ((size_t)2 << 20))
        madvise(b, c, MADV_HUGEPAGE);
    return b;
}

void tv_bufcache_put(tv_bufcache *p, void *buf, size_t n)
{
    if (!buf)
        return;
    if (n < BUF_BIG) {
        free(buf);
        return;
    }
    size_t c = 0;
    int k = buf_class_of(n, &c);
    assert(k >= 0 && k < TV_BUFCACHE_CLASSES); /* n was given to _get */
    pthread_mutex_lock(&p->lock);
    long long now = mono_ms(); /* under the lock: oldest first holds */
    struct buf_class *bc = &p->bufs[k];
    if (bc->n < class_limit(c) && p->buf_bytes + c <= TV_BUFCACHE_BYTES) {
        bc->p[bc->n] = buf;
        bc->since[bc->n++] = now;
        p->buf_bytes += c;
        buf = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    if (buf)
        munmap(buf, c);
}

size_t tv_bufcache_bytes(tv_bufcache *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->buf_bytes;
    pthread_mutex_unlock(&p->lock);
    return n;
}

size_t tv_bufcache_trim(tv_bufcache *p, long long now_ms, unsigned long act)
{
    void *drop[TV_BUFCACHE_PER_CLASS];
    size_t bytes = 0;
    int heap = 0;
    for (int k = 0; k < TV_BUFCACHE_CLASSES; k++) {
        size_t ndrop = 0, c = BUF_BIG << k;
        pthread_mutex_lock(&p->lock);
        struct buf_class *bc = &p->bufs[k];
        while (ndrop < bc->n &&
               now_ms - bc->since[ndrop] >= TV_BUFCACHE_IDLE_MS) {
            drop[ndrop] = bc->p[ndrop];
            ndrop++;
        }
        if (ndrop) { /* the oldest are first: keep the rest in order */
            bc->n -= ndrop;
            memmove(bc->p, bc->p + ndrop, bc->n * sizeof bc->p[0]);
            memmove(bc->since, bc->since + ndrop, bc->n * sizeof bc->since[0]);
            p->buf_bytes -= ndrop * c;
        }
        pthread_mutex_unlock(&p->lock);
        for (size_t i = 0; i < ndrop; i++)
            munmap(drop[i], c);
        bytes += ndrop * c;
    }
    pthread_mutex_lock(&p->lock);
    if (act != p->seen_activity) {
        p->seen_activity = act;
        p->quiet_since = now_ms;
        p->heap_trimmed = 0;
    } else if (!p->heap_trimmed &&
               now_ms - p->quiet_since >= TV_BUFCACHE_IDLE_MS) {
        p->heap_trimmed = heap = 1;
    }
    pthread_mutex_unlock(&p->lock);
    /* Request bodies and small replies live in malloc's per-thread arenas;
     * after a quiet spell, hand their free pages back too. */
    if (heap)
        malloc_trim(0);
    return bytes;
}
