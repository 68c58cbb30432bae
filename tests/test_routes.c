/* test_routes.c -- server/runtime/routes.c: which path is which route (exact
 * paths, /tokens/ as a prefix, everything else "other") and each route's
 * metrics label.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "routes.h"

static void each_contract_path_is_its_route(void **state)
{
    (void)state;
    assert_int_equal(tv_route_of("/embed"), TV_ROUTE_EMBED);
    assert_int_equal(tv_route_of("/tokens/12"), TV_ROUTE_TOKENS);
    assert_int_equal(tv_route_of("/tokens/"), TV_ROUTE_TOKENS);
    assert_int_equal(tv_route_of("/info"), TV_ROUTE_INFO);
    assert_int_equal(tv_route_of("/health"), TV_ROUTE_HEALTH);
    assert_int_equal(tv_route_of("/ready"), TV_ROUTE_READY);
    assert_int_equal(tv_route_of("/metrics"), TV_ROUTE_METRICS);
    assert_int_equal(tv_route_of("/openapi.json"), TV_ROUTE_OPENAPI);
    assert_int_equal(tv_route_of("/similar"), TV_ROUTE_SIMILAR);
    assert_int_equal(tv_route_of("/"), TV_ROUTE_PAGES);
    assert_int_equal(tv_route_of("/docs"), TV_ROUTE_PAGES);
}

static void near_misses_are_other(void **state)
{
    (void)state;
    static const char *const paths[] = {"",          "/embed/", "/embedx",
                                        "/Embed",    "/tokens", "/info/",
                                        "/health?x", "//embed", "/metrics.txt",
                                        "/openapi"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        assert_int_equal(tv_route_of(paths[i]), TV_ROUTE_OTHER);
}

static void every_route_has_its_metrics_label(void **state)
{
    (void)state;
    assert_string_equal(tv_route_name(TV_ROUTE_EMBED), "/embed");
    assert_string_equal(tv_route_name(TV_ROUTE_TOKENS), "/tokens");
    assert_string_equal(tv_route_name(TV_ROUTE_OPENAPI), "/openapi.json");
    assert_string_equal(tv_route_name(TV_ROUTE_OTHER), "other");
    for (int r = 0; r < TV_ROUTE_COUNT; r++)
        for (int q = 0; q < r; q++)
            assert_string_not_equal(tv_route_name((tv_route)r),
                                    tv_route_name((tv_route)q));
}

static void text_routes_are_their_routes(void **state)
{
    (void)state;
    assert_int_equal(tv_route_of("/tokenize"), TV_ROUTE_TOKENIZE);
    assert_int_equal(tv_route_of("/decode"), TV_ROUTE_DECODE);
    assert_int_equal(tv_route_of("/tokenize/"), TV_ROUTE_OTHER);
    assert_int_equal(tv_route_of("/decodes"), TV_ROUTE_OTHER);
    assert_int_equal(tv_route_of("/Decode"), TV_ROUTE_OTHER);
    assert_string_equal(tv_route_name(TV_ROUTE_TOKENIZE), "/tokenize");
    assert_string_equal(tv_route_name(TV_ROUTE_DECODE), "/decode");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_contract_path_is_its_route),
        cmocka_unit_test(near_misses_are_other),
        cmocka_unit_test(every_route_has_its_metrics_label),
        cmocka_unit_test(text_routes_are_their_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
