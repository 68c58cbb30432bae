/* test_error.c -- core/error.c: every TOKVEC_E_* code has its own message
 * and its own name, the codes run without a gap, -errno codes read as the
 * system's message, and anything else is "unknown error".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "tokvec_error.h"

static void every_code_has_its_own_message_and_name(void **state)
{
    (void)state;
    for (int c = TOKVEC_E_FORMAT; c >= TOKVEC_E_TOKENIZER; c--) {
        const char *m = tokvec_strerror(c), *n = tokvec_errname(c);
        assert_non_null(m);
        assert_string_not_equal(m, "unknown error");
        assert_true(strlen(m) > 5);
        assert_int_equal(strncmp(n, "TOKVEC_E_", 9), 0);
        for (int d = TOKVEC_E_FORMAT; d > c; d--) {
            assert_string_not_equal(tokvec_strerror(d), m);
            assert_string_not_equal(tokvec_errname(d), n);
        }
    }
}

static void names_are_the_identifiers_of_the_header(void **state)
{
    (void)state;
    assert_string_equal(tokvec_errname(TOKVEC_E_FORMAT), "TOKVEC_E_FORMAT");
    assert_string_equal(tokvec_errname(TOKVEC_E_TOKEN_RANGE),
                        "TOKVEC_E_TOKEN_RANGE");
    assert_string_equal(tokvec_errname(TOKVEC_E_METADATA),
                        "TOKVEC_E_METADATA");
    assert_string_equal(tokvec_errname(TOKVEC_OK), "TOKVEC_OK");
}

/* The code after the last has no message: a code appended to the header
 * without one in error.c shows here as the range ending early. */
static void the_codes_end_at_the_last_one_declared(void **state)
{
    (void)state;
    assert_string_equal(tokvec_strerror(TOKVEC_E_MODEL - 1), "unknown error");
    assert_string_equal(tokvec_strerror(TOKVEC_E_FORMAT + 1), "unknown error");
}

static void errno_codes_read_as_the_system_message(void **state)
{
    (void)state;
    assert_string_equal(tokvec_strerror(-ENOENT), strerror(ENOENT));
    assert_string_equal(tokvec_strerror(-ENOMEM), strerror(ENOMEM));
    assert_string_equal(tokvec_errname(-ENOENT), "errno");
}

static void zero_is_success_and_other_values_unknown(void **state)
{
    (void)state;
    assert_string_equal(tokvec_strerror(0), "success");
    assert_string_equal(tokvec_strerror(1), "unknown error");
    assert_string_equal(tokvec_strerror(-5000), "unknown error");
    assert_string_equal(tokvec_errname(1), "errno");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_has_its_own_message_and_name),
        cmocka_unit_test(names_are_the_identifiers_of_the_header),
        cmocka_unit_test(the_codes_end_at_the_last_one_declared),
        cmocka_unit_test(errno_codes_read_as_the_system_message),
        cmocka_unit_test(zero_is_success_and_other_values_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
