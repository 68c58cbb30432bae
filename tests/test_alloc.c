/* test_alloc.c -- server/runtime/alloc.h: without a hook the allocators are
 * the C library's; with one, an allocation it refuses is NULL and the hook
 * sees the bytes asked for.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#include "alloc.h"

static size_t asked;

static int refuse_over_100(size_t n)
{
    asked = n;
    return n > 100;
}

static int reset(void **state)
{
    (void)state;
    tv_alloc_fault = NULL;
    return 0;
}

static void without_a_hook_every_allocator_allocates(void **state)
{
    (void)state;
    char *a = tv_malloc(1000), *b = tv_calloc(10, 100);
    char *c = tv_aligned_alloc(64, 128);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_int_equal((uintptr_t)c % 64, 0);
    assert_int_equal(b[999], 0);
    a = tv_realloc(a, 5000);
    assert_non_null(a);
    free(a);
    free(b);
    free(c);
}

static void an_allocation_the_hook_refuses_is_null(void **state)
{
    (void)state;
    tv_alloc_fault = refuse_over_100;
    assert_null(tv_malloc(101));
    assert_int_equal(asked, 101);
    assert_null(tv_calloc(3, 50));
    assert_int_equal(asked, 150);
    assert_null(tv_aligned_alloc(64, 128));
    char *p = tv_malloc(100);
    assert_non_null(p);
    assert_null(tv_realloc(p, 200)); /* p is left as it was */
    p[99] = 'x';
    p = tv_realloc(p, 50);
    assert_non_null(p);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(without_a_hook_every_allocator_allocates,
                                  reset),
        cmocka_unit_test_teardown(an_allocation_the_hook_refuses_is_null,
                                  reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
