/* test_suggest.c -- "did you mean" (server/runtime/suggest.c): the distance
 * counts a swap of neighbours as one edit, '-' and '_' and case are the same,
 * only likely typos (or names cut short) are suggested, ties go to the first
 * name.
 * Single-threaded; no files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#include "suggest.h"

static size_t dist(const char *a, const char *b)
{
    return tv_edit_distance(a, strlen(a), b, strlen(b));
}

static const char *suggest(const char *w, const char *const *names, size_t n)
{
    return tv_suggest(w, strlen(w), names, n);
}

static void distance_counts_insertions_deletions_substitutions_swaps(
    void **state)
{
    (void)state;
    assert_int_equal(dist("port", "port"), 0);
    assert_int_equal(dist("prot", "port"), 1);  /* swap */
    assert_int_equal(dist("pot", "port"), 1);   /* insertion */
    assert_int_equal(dist("portt", "port"), 1); /* deletion */
    assert_int_equal(dist("pert", "port"), 1);  /* substitution */
    assert_int_equal(dist("", "host"), 4);
    assert_int_equal(dist("kitten", "sitting"), 3);
}

static void dash_underscore_and_case_are_the_same(void **state)
{
    (void)state;
    assert_int_equal(dist("max-body-bytes", "max_body_bytes"), 0);
    assert_int_equal(dist("MAX_BODY_BYTES", "max_body_bytes"), 0);
}

static void names_too_long_are_never_close(void **state)
{
    (void)state;
    char big[100];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(dist(big, "a"), SIZE_MAX);
    assert_int_equal(dist("a", big), SIZE_MAX); /* either side */
    const char *names[] = {big};
    assert_null(suggest(big, names, 1));
}

static void only_likely_typos_are_suggested(void **state)
{
    (void)state;
    const char *names[] = {"host", "port", "threads", "max_tokens",
                           "max_batch"};
    size_t n = sizeof names / sizeof names[0];
    assert_string_equal(suggest("prot", names, n), "port");
    assert_string_equal(suggest("treads", names, n), "threads");
    assert_string_equal(suggest("max-token", names, n), "max_tokens");
    assert_string_equal(suggest("MAX_BACTH", names, n), "max_batch");
    assert_string_equal(suggest("max_tok", names, n), "max_tokens");
    assert_null(suggest("foo", names, n));
    assert_null(suggest("thr", names, n)); /* under half of "threads" */
    assert_null(suggest("max", names, n));
    assert_null(suggest("p", names, n));
    assert_null(suggest("x", names, 0));
    /* two edits are a typo only in a word of six letters or more */
    const char *short_names[] = {"xy", "abcxyz"};
    assert_null(suggest("ab", short_names, 1));
    assert_string_equal(suggest("abcxzy", short_names, 2), "abcxyz");
    assert_string_equal(suggest("abdxyw", short_names, 2), "abcxyz");
}

static void ties_go_to_the_first_name(void **state)
{
    (void)state;
    const char *names[] = {"abcd", "abce"};
    assert_string_equal(suggest("abcf", names, 2), "abcd");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            distance_counts_insertions_deletions_substitutions_swaps),
        cmocka_unit_test(dash_underscore_and_case_are_the_same),
        cmocka_unit_test(names_too_long_are_never_close),
        cmocka_unit_test(only_likely_typos_are_suggested),
        cmocka_unit_test(ties_go_to_the_first_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
