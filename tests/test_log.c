/* test_log.c -- server/log.c: JSON lines parse (jansson) whatever the
 * message holds, text lines stay one line, level filtering, the access
 * line, truncation of long messages, no interleaving between threads.
 * stderr is captured through a pipe (dup2) drained by a reader thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* --- capturing stderr --------------------------------------------------- */

static struct {
    int saved, rd;
    pthread_t reader;
    char *buf;
    size_t len, cap;
} cap;

static void *drain(void *arg)
{
    (void)arg;
    for (;;) {
        if (cap.len + 4096 + 1 > cap.cap) {
            cap.cap = cap.cap * 2 + 8192;
            cap.buf = realloc(cap.buf, cap.cap);
            if (!cap.buf)
                abort();
        }
        ssize_t n = read(cap.rd, cap.buf + cap.len, 4096);
        if (n <= 0)
            break;
        cap.len += (size_t)n;
    }
    cap.buf[cap.len] = '\0';
    return NULL;
}

static void capture_start(void)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    cap.saved = dup(2);
    cap.rd = p[0];
    cap.buf = NULL;
    cap.len = cap.cap = 0;
    dup2(p[1], 2);
    close(p[1]);
    assert_int_equal(pthread_create(&cap.reader, NULL, drain, NULL), 0);
}

/* Restores stderr; returns what was written (caller frees). */
static char *capture_end(void)
{
    dup2(cap.saved, 2);
    close(cap.saved);
    pthread_join(cap.reader, NULL);
    close(cap.rd);
    return cap.buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Parses one JSON line (up to '\n'); fails the test if it is not JSON. */
static json_t *parse_line(const char *line)
{
    json_error_t e;
    size_t n = strcspn(line, "\n");
    json_t *j = json_loadb(line, n, 0, &e);
    if (!j)
        fail_msg("not JSON (%s): %.*s", e.text, (int)n, line);
    assert_true(json_is_object(j));
    return j;
}

static int reset(void **state)
{
    (void)state;
    return tv_log_setup("text", "info");
}

/* --- tests -------------------------------------------------------------- */

static void json_lines_parse_and_keep_the_message(void **state)
{
    (void)state;
    static const char *const msgs[] = {
        "plain",
        "quote \" backslash \\ slash /",
        "newline\nand tab\tand cr\r and bell\a and del\x7f",
        "utf-8: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
    };
    assert_int_equal(tv_log_setup("json", "debug"), 0);
    capture_start();
    for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++)
        tv_log(TV_LOG_INFO, "%s", msgs[i]);
    tv_log(TV_LOG_WARN, "bad utf-8: \xff\xfe \xc3 \xed\xa0\x80 end");
    char *out = capture_end();
    assert_int_equal(count_lines(out), 5);

    const char *line = out;
    for (size_t i = 0; i < 5; i++) {
        json_t *j = parse_line(line);
        const char *ts = json_string_value(json_object_get(j, "ts"));
        const char *lv = json_string_value(json_object_get(j, "level"));
        const char *msg = json_string_value(json_object_get(j, "msg"));
        assert_non_null(ts);
        assert_non_null(msg);
        assert_string_equal(lv, i < 4 ? "info" : "warn");
        if (i < 4)
            assert_string_equal(msg, msgs[i]);
        else
            assert_non_null(strstr(msg, "\xef\xbf\xbd")); /* U+FFFD */
        json_decref(j);
        line = strchr(line, '\n') + 1;
    }
    free(out);
}

static void timestamps_are_utc_iso8601_with_milliseconds(void **state)
{
    (void)state;
    assert_int_equal(tv_log_setup("json", "info"), 0);
    time_t before = time(NULL);
    capture_start();
    tv_log(TV_LOG_INFO, "tick");
    char *out = capture_end();
    time_t after = time(NULL);
    json_t *j = parse_line(out);
    const char *ts = json_string_value(json_object_get(j, "ts"));
    assert_non_null(ts);
    /* 2026-11-22T10:00:00.123Z */
    assert_int_equal(strlen(ts), 24);
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
    for (int i = 0; i < 24; i++)
        if (shape[i] == 'd' ? (ts[i] < '0' || ts[i] > '9')
                            : ts[i] != shape[i])
            fail_msg("bad timestamp %s", ts);
    struct tm tm = {0};
    assert_non_null(strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm));
    time_t t = timegm(&tm);
    assert_true(t >= before && t <= after);
    json_decref(j);
    free(out);
}

static void level_filtering_drops_lower_levels(void **state)
{
    (void)state;
    assert_int_equal(tv_log_setup("text", "warn"), 0);
    assert_false(tv_log_enabled(TV_LOG_DEBUG));
    assert_false(tv_log_enabled(TV_LOG_INFO));
    assert_true(tv_log_enabled(TV_LOG_WARN));
    assert_true(tv_log_enabled(TV_LOG_ERROR));
    capture_start();
    tv_log(TV_LOG_DEBUG, "d");
    tv_log(TV_LOG_INFO, "i");
    tv_log_access("GET", "/health", 200, 0, 15, 10); /* info: dropped */
    tv_log(TV_LOG_WARN, "w");
    tv_log(TV_LOG_ERROR, "e");
    char *out = capture_end();
    assert_int_equal(count_lines(out), 2);
    assert_non_null(strstr(out, " warn w\n"));
    assert_non_null(strstr(out, " error e\n"));
    free(out);

    assert_int_equal(tv_log_setup("text", "debug"), 0);
    capture_start();
    tv_log(TV_LOG_DEBUG, "d");
    out = capture_end();
    assert_non_null(strstr(out, " debug d\n"));
    free(out);
}

static void setup_rejects_bad_names_and_keeps_the_old_settings(void **state)
{
    (void)state;
    assert_int_equal(tv_log_setup("text", "error"), 0);
    assert_int_equal(tv_log_setup("xml", "info"), -1);
    assert_int_equal(tv_log_setup("json", "loud"), -1);
    assert_int_equal(tv_log_setup(NULL, "info"), -1);
    assert_false(tv_log_enabled(TV_LOG_WARN)); /* still error */
    capture_start();
    tv_log(TV_LOG_ERROR, "still text");
    char *out = capture_end();
    assert_non_null(strstr(out, "Z error still text\n"));
    free(out);
}

static void text_lines_stay_one_line(void **state)
{
    (void)state;
    capture_start();
    tv_log(TV_LOG_INFO, "two\nlines and \x01 control");
    char *out = capture_end();
    assert_int_equal(count_lines(out), 1);
    assert_non_null(strstr(out, " info two\\nlines and \\x01 control\n"));
    free(out);
}

static void access_line_has_every_field(void **state)
{
    (void)state;
    assert_int_equal(tv_log_setup("json", "info"), 0);
    capture_start();
    tv_log_access("POST", "/embed?x=\"1\"", 200, 6, 1234, 87);
    char *out = capture_end();
    json_t *j = parse_line(out);
    assert_string_equal(json_string_value(json_object_get(j, "level")),
                        "info");
    assert_string_equal(json_string_value(json_object_get(j, "msg")),
                        "request");
    assert_string_equal(json_string_value(json_object_get(j, "method")),
                        "POST");
    assert_string_equal(json_string_value(json_object_get(j, "path")),
                        "/embed?x=\"1\"");
    assert_int_equal(json_integer_value(json_object_get(j, "status")), 200);
    assert_int_equal(json_integer_value(json_object_get(j, "tokens")), 6);
    assert_int_equal(json_integer_value(json_object_get(j, "bytes")), 1234);
    assert_int_equal(json_integer_value(json_object_get(j, "duration_us")),
                     87);
    json_decref(j);
    free(out);

    assert_int_equal(tv_log_setup("text", "info"), 0);
    capture_start();
    tv_log_access("GET", "/a path", 404, 0, 10, 5);
    out = capture_end();
    assert_int_equal(count_lines(out), 1);
    assert_non_null(strstr(out, " info request method=GET path=\"/a path\" "
                                "status=404 tokens=0 bytes=10 "
                                "duration_us=5\n"));
    free(out);
}

static void long_messages_are_cut_and_stay_valid(void **state)
{
    (void)state;
    static char big[20000];
    /* Two-byte characters and escapes, so a cut could land mid-unit. */
    for (size_t i = 0; i + 2 < sizeof big; i += 2) {
        big[i] = (char)(i % 6 ? 0xc3 : '\\');
        big[i + 1] = (char)(i % 6 ? 0xa9 : '"');
    }
    big[sizeof big - 2] = '\0';

    assert_int_equal(tv_log_setup("json", "info"), 0);
    capture_start();
    tv_log(TV_LOG_INFO, "%s", big);
    tv_log_access("GET", big, 200, 1, 2, 3);
    char *out = capture_end();
    assert_int_equal(count_lines(out), 2);
    const char *line = out;
    for (int i = 0; i < 2; i++) {
        size_t n = strcspn(line, "\n");
        assert_true(n + 1 <= 4096);
        json_t *j = parse_line(line);
        assert_true(json_is_true(json_object_get(j, "truncated")));
        if (i == 1)
            assert_int_equal(
                json_integer_value(json_object_get(j, "status")), 200);
        json_decref(j);
        line += n + 1;
    }
    free(out);

    assert_int_equal(tv_log_setup("text", "info"), 0);
    capture_start();
    tv_log(TV_LOG_INFO, "%s", big);
    out = capture_end();
    assert_int_equal(count_lines(out), 1);
    assert_true(strlen(out) <= 4096);
    assert_non_null(strstr(out, "...\n"));
    free(out);
}

enum { THREADS = 4, LINES = 300 };

static void *writer(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < LINES; i++)
        tv_log(TV_LOG_INFO, "thread %d line %d %0200d", id, i, 0);
    return NULL;
}

static void lines_of_threads_never_interleave(void **state)
{
    (void)state;
    assert_int_equal(tv_log_setup("json", "info"), 0);
    capture_start();
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(
            pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    char *out = capture_end();
    assert_int_equal(count_lines(out), THREADS * LINES);
    int seen[THREADS] = {0};
    for (const char *line = out; *line; line = strchr(line, '\n') + 1) {
        json_t *j = parse_line(line);
        int id, n;
        const char *msg = json_string_value(json_object_get(j, "msg"));
        assert_int_equal(sscanf(msg, "thread %d line %d", &id, &n), 2);
        assert_true(id >= 0 && id < THREADS);
        assert_int_equal(n, seen[id]); /* in order per thread */
        seen[id]++;
        json_decref(j);
    }
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(json_lines_parse_and_keep_the_message, reset),
        cmocka_unit_test_setup(timestamps_are_utc_iso8601_with_milliseconds,
                               reset),
        cmocka_unit_test_setup(level_filtering_drops_lower_levels, reset),
        cmocka_unit_test_setup(
            setup_rejects_bad_names_and_keeps_the_old_settings, reset),
        cmocka_unit_test_setup(text_lines_stay_one_line, reset),
        cmocka_unit_test_setup(access_line_has_every_field, reset),
        cmocka_unit_test_setup(long_messages_are_cut_and_stay_valid, reset),
        cmocka_unit_test_setup(lines_of_threads_never_interleave, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
