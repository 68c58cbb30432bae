/* test_origin_edges.c -- server/http/origin.c at its edges: origins with
 * an empty host ("http://:80", "http://[]") are refused; Host values with
 * an unclosed bracket, an address too long for one, or a bad IPv6 literal
 * are not loopback, IPv4-mapped loopback is; an allocation that fails while
 * parsing --cors-origin (tests/fault_inject.h) is "out of memory" with
 * nothing kept. Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "fault_inject.h"
#include "origin.h"

static void origins_without_a_host_are_refused(void **s)
{
    (void)s;
    static const char *const bad[] = {"http://:80", "http://[]",
                                      "https://[::1", "http://a.b,http://"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        tv_origins o;
        char err[512] = "";
        assert_int_equal(tv_origins_parse(bad[k], &o, err, sizeof err), -1);
        assert_non_null(strstr(err, "is not an origin"));
        assert_int_equal(o.n, 0);
    }
}

static void odd_hosts_are_not_loopback(void **s)
{
    (void)s;
    char longhost[128];
    memset(longhost, '1', sizeof longhost - 1);
    longhost[sizeof longhost - 1] = '\0';
    longhost[0] = '[';
    assert_false(tv_host_is_loopback("[::1"));
    assert_false(tv_host_is_loopback(longhost));
    assert_false(tv_host_is_loopback("[::g]"));
    assert_false(tv_host_is_loopback(NULL));
    assert_false(tv_host_is_loopback(""));
    assert_true(tv_host_is_loopback("[::ffff:127.0.0.1]:8080"));
    assert_false(tv_host_is_loopback("[::ffff:10.0.0.1]"));
    assert_false(tv_address_is_loopback(NULL));
    assert_true(tv_address_is_loopback("::ffff:127.1.2.3"));
}

static void no_memory_for_the_origins_is_out_of_memory(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    for (long nth = 1; nth <= 3; nth++) {
        tv_origins o;
        char err[512] = "";
        fi_arm(FI_ALLOC, nth, ENOMEM); /* the list, then each origin */
        int rc = tv_origins_parse("http://a.example, https://B.example:8443",
                                  &o, err, sizeof err);
        fi_reset();
        assert_int_equal(rc, -ENOMEM);
        assert_string_equal(err, "out of memory");
        assert_int_equal(o.n, 0);
        assert_null(o.list);
    }
    tv_origins o;
    char err[512] = "";
    assert_int_equal(tv_origins_parse("http://a.example, https://B.example"
                                      ":8443",
                                      &o, err, sizeof err),
                     0);
    assert_int_equal(o.n, 2);
    assert_string_equal(o.list[1], "https://b.example:8443");
    tv_origins_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(origins_without_a_host_are_refused),
        cmocka_unit_test(odd_hosts_are_not_loopback),
        cmocka_unit_test(no_memory_for_the_origins_is_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
