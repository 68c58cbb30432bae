/* test_metrics.c -- server/runtime/metrics.c: the contract's family names,
 * exact counts under concurrent updates from several threads, cumulative
 * histogram buckets, code and route labels, table_info escaping.
 * The metrics are process-global: tests run in order and compare against
 * what earlier tests added (each reads values before and after).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* Value of the exact series line "name{labels}" (or "name"), -1 if absent. */
static double value_of(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
        if (!strncmp(p, series, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

static char *render(void)
{
    size_t len = 0;
    char *t = tv_metrics_render(NULL, &len);
    assert_non_null(t);
    assert_int_equal(strlen(t), len);
    assert_int_equal(t[len - 1], '\n');
    return t;
}

static void render_has_every_contract_family(void **state)
{
    (void)state;
    char *t = render();
    static const char *const fam[][2] = {
        {"tokvec_requests_total", "counter"},
        {"tokvec_request_duration_seconds", "histogram"},
        {"tokvec_tokens_total", "counter"},
        {"tokvec_response_bytes_total", "counter"},
        {"tokvec_inflight_requests", "gauge"},
        {"tokvec_queue_depth", "gauge"},
        {"tokvec_reloads_total", "counter"},
        {"tokvec_table_info", "gauge"},
    };
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
        char help[128], type[128];
        snprintf(help, sizeof help, "# HELP %s ", fam[i][0]);
        snprintf(type, sizeof type, "# TYPE %s %s\n", fam[i][0], fam[i][1]);
        if (!strstr(t, help) || !strstr(t, type))
            fail_msg("family %s missing", fam[i][0]);
    }
    /* Nothing counted yet: no requests_total series, gauges at 0, no
     * table_info series before a table is set. */
    assert_null(strstr(t, "tokvec_requests_total{"));
    assert_true(value_of(t, "tokvec_inflight_requests") == 0);
    assert_true(value_of(t, "tokvec_reloads_total{result=\"ok\"}") == 0);
    assert_true(value_of(t, "tokvec_reloads_total{result=\"failed\"}") == 0);
    assert_null(strstr(t, "tokvec_table_info{"));
    free(t);
}

static void route_names_are_paths(void **state)
{
    (void)state;
    assert_string_equal(tv_route_name(TV_ROUTE_EMBED), "/embed");
    assert_string_equal(tv_route_name(TV_ROUTE_TOKENS), "/tokens");
    assert_string_equal(tv_route_name(TV_ROUTE_METRICS), "/metrics");
    assert_string_equal(tv_route_name(TV_ROUTE_OTHER), "other");
    for (int r = 0; r < TV_ROUTE_COUNT; r++)
        assert_non_null(tv_route_name((tv_route)r));
}

static void requests_are_counted_by_route_and_code(void **state)
{
    (void)state;
    tv_metrics_request(TV_ROUTE_EMBED, 200, 0.002, 6, 100);
    tv_metrics_request(TV_ROUTE_EMBED, 200, 0.003, 3, 50);
    tv_metrics_request(TV_ROUTE_EMBED, 422, 0.001, 0, 20);
    tv_metrics_request(TV_ROUTE_OTHER, 404, 0.0001, 0, 10);
    tv_metrics_request(TV_ROUTE_INFO, 418, 0.0001, 0, 10);
    char *t = render();
    assert_true(value_of(t, "tokvec_requests_total{route=\"/embed\","
                            "code=\"200\"}") == 2);
    assert_true(value_of(t, "tokvec_requests_total{route=\"/embed\","
                            "code=\"422\"}") == 1);
    assert_true(value_of(t, "tokvec_requests_total{route=\"other\","
                            "code=\"404\"}") == 1);
    assert_true(value_of(t, "tokvec_requests_total{route=\"/info\","
                            "code=\"other\"}") == 1);
    assert_true(value_of(t, "tokvec_requests_total{route=\"/embed\","
                            "code=\"500\"}") == -1);
    assert_true(value_of(t, "tokvec_tokens_total") == 9);
    assert_true(value_of(t, "tokvec_response_bytes_total") == 190);
    assert_true(value_of(t, "tokvec_request_duration_seconds_count{route="
                            "\"/embed\"}") == 3);
    double sum = value_of(t, "tokvec_request_duration_seconds_sum{route="
                             "\"/embed\"}");
    assert_true(sum > 0.00599 && sum < 0.00601);
    free(t);
}

/* 204 (CORS preflight), 403 (another web page's Origin, a Host not of
 * the loopback), 414 (a URI or query too long) and 501 (a transfer coding
 * other than chunked) are answered by the server: each is its own series,
 * not "other". */
static void every_status_the_server_answers_has_its_label(void **state)
{
    (void)state;
    static const int answered[] = {204, 403, 414, 501};
    char want[128];
    for (size_t i = 0; i < sizeof answered / sizeof answered[0]; i++)
        tv_metrics_request(TV_ROUTE_OTHER, answered[i], 0.0001, 0, 1);
    char *t = render();
    for (size_t i = 0; i < sizeof answered / sizeof answered[0]; i++) {
        snprintf(want, sizeof want,
                 "tokvec_requests_total{route=\"other\",code=\"%d\"}",
                 answered[i]);
        assert_true(value_of(t, want) == 1);
    }
    free(t);
}

static void histogram_buckets_are_cumulative(void **state)
{
    (void)state;
    /* Route /ready only here: 0.0005 is in le=0.0005 (le is inclusive). */
    static const double obs[] = {0.0001, 0.0005, 0.0007, 0.02, 0.3,
                                 3,      11,     1e6,    -1};
    for (size_t i = 0; i < sizeof obs / sizeof obs[0]; i++)
        tv_metrics_request(TV_ROUTE_READY, 200, obs[i], 0, 0);
    char *t = render();
    static const struct {
        const char *le;
        double want;
    } b[] = {{"0.0005", 3}, {"0.001", 4}, {"0.0025", 4}, {"0.005", 4},
             {"0.01", 4},   {"0.025", 5}, {"0.05", 5},   {"0.1", 5},
             {"0.25", 5},   {"0.5", 6},   {"1", 6},      {"2.5", 6},
             {"5", 7},      {"10", 7},    {"+Inf", 9}};
    double prev = 0;
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        char series[128];
        snprintf(series, sizeof series,
                 "tokvec_request_duration_seconds_bucket{route=\"/ready\","
                 "le=\"%s\"}",
                 b[i].le);
        double v = value_of(t, series);
        if (v != b[i].want)
            fail_msg("%s = %g, want %g", series, v, b[i].want);
        assert_true(v >= prev);
        prev = v;
    }
    assert_true(value_of(t, "tokvec_request_duration_seconds_count{route="
                            "\"/ready\"}") == 9);
    /* Routes without requests have no histogram series. */
    assert_null(strstr(t, "_bucket{route=\"/openapi.json\""));
    free(t);
}

enum { THREADS = 4, PER_THREAD = 50000 };

static void *hammer(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        tv_metrics_inflight_add(1);
        tv_metrics_request(TV_ROUTE_TOKENS, i % 2 ? 200 : 429,
                           (double)(i % 7) * 0.001, 2, 3);
        tv_metrics_inflight_add(-1);
        if (i % 1000 == 0)
            tv_metrics_reload(id % 2);
        if (i % 10000 == 0) {
            size_t len;
            free(
                tv_metrics_render(NULL, &len)); /* renders race with updates */
        }
    }
    return NULL;
}

static void counts_add_up_under_concurrent_updates(void **state)
{
    (void)state;
    char *before = render();
    double tok0 = value_of(before, "tokvec_tokens_total");
    double bytes0 = value_of(before, "tokvec_response_bytes_total");
    double ok0 = value_of(before, "tokvec_reloads_total{result=\"ok\"}");
    double bad0 = value_of(before, "tokvec_reloads_total{result=\"failed\"}");
    free(before);

    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(
            pthread_create(&th[i], NULL, hammer, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);

    char *t = render();
    double n = (double)THREADS * PER_THREAD;
    assert_true(value_of(t, "tokvec_requests_total{route=\"/tokens\","
                            "code=\"200\"}") == n / 2);
    assert_true(value_of(t, "tokvec_requests_total{route=\"/tokens\","
                            "code=\"429\"}") == n / 2);
    assert_true(value_of(t, "tokvec_request_duration_seconds_count{route="
                            "\"/tokens\"}") == n);
    assert_true(value_of(t, "tokvec_request_duration_seconds_bucket{route="
                            "\"/tokens\",le=\"+Inf\"}") == n);
    assert_true(value_of(t, "tokvec_tokens_total") - tok0 == 2 * n);
    assert_true(value_of(t, "tokvec_response_bytes_total") - bytes0 == 3 * n);
    assert_true(value_of(t, "tokvec_inflight_requests") == 0);
    assert_true(value_of(t, "tokvec_queue_depth") == 0);
    double reloads = PER_THREAD / 1000 * (THREADS / 2);
    assert_true(value_of(t, "tokvec_reloads_total{result=\"ok\"}") - ok0 ==
                reloads);
    assert_true(value_of(t, "tokvec_reloads_total{result=\"failed\"}") -
                    bad0 ==
                reloads);
    free(t);
}

static void gauges_go_up_and_down(void **state)
{
    (void)state;
    tv_metrics_inflight_add(3);
    char *t = render();
    assert_true(value_of(t, "tokvec_inflight_requests") == 3);
    assert_true(value_of(t, "tokvec_queue_depth") == 0); /* no pool */
    free(t);
    tv_metrics_inflight_add(-3);
}

static void table_info_has_escaped_labels_and_value_one(void **state)
{
    (void)state;
    tv_metrics_set_table(50257, 256, "float32", "learned");
    char *t = render();
    assert_true(value_of(t, "tokvec_table_info{vocab_size=\"50257\","
                            "dim=\"256\",dtype=\"float32\","
                            "positional=\"learned\"}") == 1);
    free(t);
    tv_metrics_set_table(6, 3, "bf\"16\\", "none\n");
    t = render();
    assert_true(value_of(t, "tokvec_table_info{vocab_size=\"6\",dim=\"3\","
                            "dtype=\"bf\\\"16\\\\\","
                            "positional=\"none\\n\"}") == 1);
    /* One series only: the old labels are gone. */
    assert_null(strstr(t, "50257"));
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(render_has_every_contract_family),
        cmocka_unit_test(route_names_are_paths),
        cmocka_unit_test(requests_are_counted_by_route_and_code),
        cmocka_unit_test(every_status_the_server_answers_has_its_label),
        cmocka_unit_test(histogram_buckets_are_cumulative),
        cmocka_unit_test(counts_add_up_under_concurrent_updates),
        cmocka_unit_test(gauges_go_up_and_down),
        cmocka_unit_test(table_info_has_escaped_labels_and_value_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
