/* test_bufcache.c -- server/runtime/bufcache.c: response buffers (malloc below
 * 64 KiB, 64-byte aligned; from 64 KiB reuse by power-of-two class, most
 * recent first, at most TV_BUFCACHE_PER_CLASS and half the cache per size
 * but always 2, TV_BUFCACHE_BYTES in all; trim of buffers idle
 * TV_BUFCACHE_IDLE_MS).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "bufcache.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(int ms)
{
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L},
              NULL);
}

/* Trims with the activity counter standing still (the heap trim is not
 * what these tests look at). */
static size_t trim(tv_bufcache *c, long long now)
{
    return tv_bufcache_trim(c, now, 0);
}

static int setup(void **state)
{
    tv_bufcache *c;
    if (tv_bufcache_new(&c) < 0)
        return -1;
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    tv_bufcache_free(*state);
    return 0;
}

static int aligned64(const void *b)
{
    return ((uintptr_t)b & 63) == 0;
}

static void small_buffers_come_from_malloc_aligned_and_are_not_cached(
    void **state)
{
    tv_bufcache *cache = *state;
    static const size_t sizes[] = {1, 63, 64, 65, 1000, 64 * KiB - 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *b = tv_bufcache_get(cache, sizes[i]);
        assert_non_null(b);
        assert_true(aligned64(b));
        memset(b, 0xa5, sizes[i]);
        tv_bufcache_put(cache, b, sizes[i]);
        assert_int_equal(tv_bufcache_bytes(cache), 0);
    }
    tv_bufcache_put(cache, NULL, 100);
    tv_bufcache_put(cache, NULL, MiB);
    assert_int_equal(tv_bufcache_bytes(cache), 0);
}

static void buffers_from_64KiB_are_reused_from_the_cache(void **state)
{
    tv_bufcache *cache = *state;
    char *a = tv_bufcache_get(cache, 64 * KiB);
    assert_non_null(a);
    assert_true(aligned64(a));
    memset(a, 1, 64 * KiB);
    tv_bufcache_put(cache, a, 64 * KiB);
    assert_int_equal(tv_bufcache_bytes(cache), 64 * KiB);
    assert_ptr_equal(tv_bufcache_get(cache, 64 * KiB), a);
    assert_int_equal(tv_bufcache_bytes(cache), 0);
    assert_int_equal(a[64 * KiB - 1], 1); /* the same mapping, kept */

    /* Sizes are rounded up to a power of two: 64 KiB + 1 is a 128 KiB
     * buffer, handed out again for any size in (64 KiB, 128 KiB]. */
    char *b = tv_bufcache_get(cache, 64 * KiB + 1);
    assert_non_null(b);
    assert_true(aligned64(b));
    memset(b, 2, 128 * KiB); /* the whole class is usable */
    tv_bufcache_put(cache, b, 64 * KiB + 1);
    assert_int_equal(tv_bufcache_bytes(cache), 128 * KiB);
    /* Another class does not take it. */
    char *c = tv_bufcache_get(cache, 256 * KiB);
    assert_non_null(c);
    assert_ptr_not_equal(c, b);
    assert_int_equal(tv_bufcache_bytes(cache), 128 * KiB);
    assert_ptr_equal(tv_bufcache_get(cache, 128 * KiB), b);
    assert_int_equal(tv_bufcache_bytes(cache), 0);

    tv_bufcache_put(cache, a, 64 * KiB);
    tv_bufcache_put(cache, b, 100 * KiB);
    tv_bufcache_put(cache, c, 200 * KiB);
    assert_int_equal(tv_bufcache_bytes(cache), 448 * KiB);
}

static void the_most_recently_freed_buffer_of_a_size_is_taken_first(
    void **state)
{
    tv_bufcache *cache = *state;
    void *a = tv_bufcache_get(cache, MiB);
    void *b = tv_bufcache_get(cache, MiB);
    void *o = tv_bufcache_get(cache, 2 * MiB);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(o);
    tv_bufcache_put(cache, a, MiB);
    tv_bufcache_put(cache, o, 2 * MiB); /* another size between */
    tv_bufcache_put(cache, b, MiB);
    assert_ptr_equal(tv_bufcache_get(cache, MiB), b);
    assert_ptr_equal(tv_bufcache_get(cache, MiB), a);
    assert_ptr_equal(tv_bufcache_get(cache, 2 * MiB), o);
    tv_bufcache_put(cache, a, MiB);
    tv_bufcache_put(cache, b, MiB);
    tv_bufcache_put(cache, o, 2 * MiB);
}

/* Gets n buffers of `size`, frees them in order; returns them in b. */
static void cycle(tv_bufcache *cache, void **b, int n, size_t size)
{
    for (int i = 0; i < n; i++) {
        b[i] = tv_bufcache_get(cache, size);
        assert_non_null(b[i]);
    }
    for (int i = 0; i < n; i++)
        tv_bufcache_put(cache, b[i], size);
}

static void cache_holds_at_most_TV_BUFCACHE_PER_CLASS_buffers_of_a_size(
    void **state)
{
    tv_bufcache *cache = *state;
    enum { N = TV_BUFCACHE_PER_CLASS };
    /* Sizes small enough that neither half the cache nor its bytes bind. */
    assert_true(TV_BUFCACHE_BYTES / 2 / (128 * KiB) >= N);
    void *b[N + 1], *o[N];
    cycle(cache, b, N + 1, 64 * KiB); /* the last one freed does not fit */
    assert_int_equal(tv_bufcache_bytes(cache), N * 64 * KiB);
    /* The limit is per size: another size gets its own N. */
    cycle(cache, o, N, 128 * KiB);
    assert_int_equal(tv_bufcache_bytes(cache), N * 192 * KiB);
    /* The cached ones are the first N freed, most recent first. */
    for (int i = N; i-- > 0;)
        assert_ptr_equal(tv_bufcache_get(cache, 64 * KiB), b[i]);
    assert_int_equal(tv_bufcache_bytes(cache), N * 128 * KiB);
    for (int i = 0; i < N; i++)
        tv_bufcache_put(cache, b[i], 64 * KiB);
}

static void one_size_holds_at_most_half_the_cache(void **state)
{
    tv_bufcache *cache = *state;
    /* 16 of this size make half the cache (2 MiB for a 64 MiB cache). */
    size_t size = TV_BUFCACHE_BYTES / 32;
    assert_true(16 < TV_BUFCACHE_PER_CLASS && size >= 64 * KiB);
    void *b[17];
    cycle(cache, b, 17, size);
    assert_int_equal(tv_bufcache_bytes(cache), TV_BUFCACHE_BYTES / 2);
    /* The other half is there for other sizes. */
    cycle(cache, b, 4, TV_BUFCACHE_BYTES / 8);
    assert_int_equal(tv_bufcache_bytes(cache), TV_BUFCACHE_BYTES);
}

static void a_size_may_keep_2_buffers_even_past_half_the_cache(void **state)
{
    tv_bufcache *cache = *state;
    void *b[3];
    size_t size = TV_BUFCACHE_BYTES / 2; /* half: 1 by the half rule */
    cycle(cache, b, 3, size);
    assert_int_equal(tv_bufcache_bytes(cache), TV_BUFCACHE_BYTES);
    assert_ptr_equal(tv_bufcache_get(cache, size), b[1]);
    assert_ptr_equal(tv_bufcache_get(cache, size), b[0]);
    assert_int_equal(tv_bufcache_bytes(cache), 0);
    tv_bufcache_put(cache, b[0], size);
    tv_bufcache_put(cache, b[1], size);
}

static void cache_holds_at_most_TV_BUFCACHE_BYTES_bytes(void **state)
{
    tv_bufcache *cache = *state;
    /* Larger than the whole cache: never kept. */
    void *b[4];
    cycle(cache, b, 1, 2 * TV_BUFCACHE_BYTES);
    assert_int_equal(tv_bufcache_bytes(cache), 0);
    /* As large as the cache: one is kept, a second is not. */
    cycle(cache, b, 2, TV_BUFCACHE_BYTES);
    assert_int_equal(tv_bufcache_bytes(cache), TV_BUFCACHE_BYTES);
    assert_ptr_equal(tv_bufcache_get(cache, TV_BUFCACHE_BYTES), b[0]);
    assert_int_equal(tv_bufcache_bytes(cache), 0);
    tv_bufcache_put(cache, b[0], TV_BUFCACHE_BYTES);
    assert_int_equal(trim(cache, mono_ms() + 2 * TV_BUFCACHE_IDLE_MS),
                     TV_BUFCACHE_BYTES);
    assert_int_equal(tv_bufcache_bytes(cache), 0);

    /* Two sizes fill it exactly (each within its half); then nothing more
     * fits, whatever its size. */
    size_t q = TV_BUFCACHE_BYTES / 4;
    void *big[2], *mid[4];
    cycle(cache, big, 2, q);
    cycle(cache, mid, 4, q / 2);
    assert_int_equal(tv_bufcache_bytes(cache), TV_BUFCACHE_BYTES);
    cycle(cache, b, 1, 64 * KiB);
    assert_int_equal(tv_bufcache_bytes(cache), TV_BUFCACHE_BYTES);
    /* Taking one out makes room again. */
    void *g = tv_bufcache_get(cache, q / 2);
    assert_ptr_equal(g, mid[3]);
    assert_int_equal(tv_bufcache_bytes(cache), TV_BUFCACHE_BYTES - q / 2);
    cycle(cache, b, 1, 64 * KiB);
    assert_int_equal(tv_bufcache_bytes(cache),
                     TV_BUFCACHE_BYTES - q / 2 + 64 * KiB);
    tv_bufcache_put(cache, g, q / 2); /* no longer fits: unmapped */
    assert_int_equal(tv_bufcache_bytes(cache),
                     TV_BUFCACHE_BYTES - q / 2 + 64 * KiB);
}

static void sizes_past_the_last_class_give_NULL(void **state)
{
    tv_bufcache *cache = *state;
    size_t last = (64 * KiB) << (TV_BUFCACHE_CLASSES - 1);
    assert_null(tv_bufcache_get(cache, last + 1));
    assert_null(tv_bufcache_get(cache, SIZE_MAX / 2 + 2));
    assert_null(tv_bufcache_get(cache, SIZE_MAX));
    assert_int_equal(tv_bufcache_bytes(cache), 0);
}

static void trim_unmaps_buffers_idle_for_TV_BUFCACHE_IDLE_MS_keeps_fresh_ones(
    void **state)
{
    tv_bufcache *cache = *state;
    void *a1 = tv_bufcache_get(cache, 64 * KiB);
    void *a2 = tv_bufcache_get(cache, 64 * KiB);
    void *b = tv_bufcache_get(cache, 128 * KiB);
    assert_non_null(a1);
    assert_non_null(a2);
    assert_non_null(b);
    assert_int_equal(trim(cache, mono_ms()), 0); /* empty */

    /* The cache stamps a buffer with CLOCK_MONOTONIC ms when it is freed:
     * a1 in [t0, t1]; b and a2 in [t2, t3], and t2 > t1. */
    long long t0 = mono_ms();
    tv_bufcache_put(cache, a1, 64 * KiB);
    long long t1 = mono_ms();
    while (mono_ms() <= t1)
        nap_ms(1);
    long long t2 = mono_ms();
    tv_bufcache_put(cache, b, 128 * KiB);
    tv_bufcache_put(cache, a2, 64 * KiB);
    long long t3 = mono_ms();
    assert_true(t2 > t1);
    assert_int_equal(tv_bufcache_bytes(cache), 256 * KiB);

    /* Idle for less than TV_BUFCACHE_IDLE_MS: all stay. */
    assert_int_equal(trim(cache, t0 + TV_BUFCACHE_IDLE_MS - 1), 0);
    assert_int_equal(tv_bufcache_bytes(cache), 256 * KiB);
    /* a1 idle for TV_BUFCACHE_IDLE_MS or more, b and a2 (one of its size)
     * not yet. */
    assert_int_equal(trim(cache, t1 + TV_BUFCACHE_IDLE_MS), 64 * KiB);
    assert_int_equal(tv_bufcache_bytes(cache), 192 * KiB);
    assert_ptr_equal(tv_bufcache_get(cache, 64 * KiB), a2);
    assert_ptr_equal(tv_bufcache_get(cache, 128 * KiB), b);
    assert_int_equal(tv_bufcache_bytes(cache), 0);

    /* A buffer freed again is fresh again, however old it is. */
    tv_bufcache_put(cache, b, 128 * KiB);
    tv_bufcache_put(cache, a2, 64 * KiB);
    long long t4 = mono_ms();
    assert_int_equal(trim(cache, t3 + TV_BUFCACHE_IDLE_MS - 1), 0);
    assert_int_equal(tv_bufcache_bytes(cache), 192 * KiB);
    assert_int_equal(trim(cache, t4 + TV_BUFCACHE_IDLE_MS), 192 * KiB);
    assert_int_equal(tv_bufcache_bytes(cache), 0);
    assert_int_equal(trim(cache, t4 + 10 * TV_BUFCACHE_IDLE_MS), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(small_buffers_come_from_malloc_aligned_and_are_not_cached),
        T(buffers_from_64KiB_are_reused_from_the_cache),
        T(the_most_recently_freed_buffer_of_a_size_is_taken_first),
        T(cache_holds_at_most_TV_BUFCACHE_PER_CLASS_buffers_of_a_size),
        T(one_size_holds_at_most_half_the_cache),
        T(a_size_may_keep_2_buffers_even_past_half_the_cache),
        T(cache_holds_at_most_TV_BUFCACHE_BYTES_bytes),
        T(sizes_past_the_last_class_give_NULL),
        T(trim_unmaps_buffers_idle_for_TV_BUFCACHE_IDLE_MS_keeps_fresh_ones),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
