/* test_init_edges.c -- core/init.c's argument rules, what test_init.c's
 * bit-exact draws leave: empty tables (no rows, or rows of no width) with
 * no memory to write, negative sizes and out-of-range padding rows
 * refused before any draw (the generator's state unchanged), a size past
 * what memory can hold, and a generator that cannot be allocated
 * (tests/fault_inject.h). Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>

#include "fault_inject.h"
#include "tokvec_error.h"
#include "tokvec_init.h"

static void empty_and_invalid_tables_draw_nothing(void **s)
{
    (void)s;
    tokvec_rng *a = NULL, *b = NULL;
    assert_int_equal(tokvec_rng_new(7, &a), 0);
    assert_int_equal(tokvec_rng_new(7, &b), 0);
    float one[4] = {0};
    tokvec_rng_normal(a, NULL, 0, 0.0f, 1.0f);
    assert_int_equal(tokvec_init_embedding(a, NULL, 0, 5, TOKVEC_NO_PADDING),
                     0);
    assert_int_equal(tokvec_init_embedding(a, NULL, 5, 0, TOKVEC_NO_PADDING),
                     0);
    assert_int_equal(tokvec_init_embedding(a, one, -1, 2, TOKVEC_NO_PADDING),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_init_embedding(a, one, 2, -1, TOKVEC_NO_PADDING),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_init_embedding(a, one, INT64_MAX / 2, 4,
                                           TOKVEC_NO_PADDING),
                     TOKVEC_E_TOO_LARGE);
    assert_int_equal(tokvec_init_embedding(a, one, 2, 2, 2), TOKVEC_E_INVAL);
    assert_int_equal(tokvec_init_embedding(a, one, 2, 2, -3), TOKVEC_E_INVAL);
    /* nothing was drawn: a and b are still in step */
    for (int k = 0; k < 8; k++)
        assert_int_equal(tokvec_rng_u32(a), tokvec_rng_u32(b));
    /* padding -1 is the last row, zeroed */
    assert_int_equal(tokvec_init_embedding(a, one, 2, 2, -1), 0);
    assert_true(one[2] == 0.0f && one[3] == 0.0f);
    assert_true(one[0] != 0.0f || one[1] != 0.0f);
    tokvec_rng_free(a);
    tokvec_rng_free(b);
    tokvec_rng_free(NULL);
}

static void a_generator_without_memory_is_no_memory(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    tokvec_rng *r = (tokvec_rng *)1;
    fi_arm(FI_MALLOC, 1, ENOMEM);
    int rc = tokvec_rng_new(1, &r);
    fi_reset();
    assert_int_equal(rc, -ENOMEM);
    assert_null(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_and_invalid_tables_draw_nothing),
        cmocka_unit_test(a_generator_without_memory_is_no_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
