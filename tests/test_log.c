/* test_log.c -- server/runtime/log.c: JSON lines parse (jansson) whatever the
 * message holds, text lines stay one line, level filtering, the access
 * line, truncation of long messages, no interleaving between threads;
 * every line is printable ASCII (C1 controls, U+2028/U+2029, raw high
 * bytes escaped in both formats), text values decode back to the bytes
 * logged, cut paths are marked.
 * stderr is captured through a pipe (dup2) drained by a reader thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
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

/* The string and the integer field `key` of a JSON log line. */
#define JSTR(j, key) json_string_value(json_object_get(j, key))
#define JINT(j, key) json_integer_value(json_object_get(j, key))

/* Fails the test unless out[0..len) is lines of printable ASCII, each
 * ending in '\n': no control byte (C0, DEL, C1 in either encoding), no
 * byte >= 0x80, no NUL, nothing after the last newline. */
static void assert_printable_ascii_lines(const char *out, size_t len)
{
    assert_true(len > 0);
    assert_int_equal(out[len - 1], '\n');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)out[i];
        if (c != '\n' && (c < 0x20 || c > 0x7e))
            fail_msg("byte 0x%02x at %zu, after: %.*s", c, i, (int)i, out);
    }
}

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
}

/* The value of ` key=` in a text line, decoded: a quoted value with the
 * escapes \n \t \r \\ \" \xHH undone, an unquoted one up to the next
 * space (and then it must hold no backslash: escapes force quotes).
 * Returns a malloc'd buffer of *n bytes (NUL-terminated too). */
static char *text_value(const char *line, const char *key, size_t *n)
{
    char pat[32];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    if (!p)
        fail_msg("no %s in: %s", pat, line);
    p += strlen(pat);
    char *v = malloc(strlen(p) + 1);
    size_t k = 0;
    assert_non_null(v);
    if (*p != '"') {
        while (*p && *p != ' ' && *p != '\n') {
            if (*p == '\\')
                fail_msg("unquoted value with an escape: %s", line);
            v[k++] = *p++;
        }
    } else {
        for (p++; *p != '"'; p++) {
            if (!*p || *p == '\n')
                fail_msg("unterminated value: %s", line);
            if (*p != '\\') {
                v[k++] = *p;
                continue;
            }
            p++;
            switch (*p) {
            case 'n':
                v[k++] = '\n';
                break;
            case 't':
                v[k++] = '\t';
                break;
            case 'r':
                v[k++] = '\r';
                break;
            case '\\':
                v[k++] = '\\';
                break;
            case '"':
                v[k++] = '"';
                break;
            case 'x': {
                int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
                if (lo < 0)
                    fail_msg("bad \\x escape: %s", line);
                v[k++] = (char)(hi * 16 + lo);
                p += 2;
                break;
            }
            default:
                fail_msg("unknown escape \\%c: %s", *p, line);
            }
        }
    }
    v[k] = '\0';
    *n = k;
    return v;
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
        const char *ts = JSTR(j, "ts");
        const char *lv = JSTR(j, "level");
        const char *msg = JSTR(j, "msg");
        assert_non_null(ts);
        assert_non_null(msg);
        assert_string_equal(lv, i < 4 ? "info" : "warn");
        if (i < 4)
            assert_string_equal(msg, msgs[i]);
        else /* each byte of invalid UTF-8 as the four characters \xHH */
            assert_string_equal(msg, "bad utf-8: \\xff\\xfe \\xc3 "
                                     "\\xed\\xa0\\x80 end");
        json_decref(j);
        line = strchr(line, '\n') + 1;
    }
    free(out);
}

/* CLOCK_REALTIME seconds, the clock log.c stamps lines with. Not time(NULL):
 * glibc reads that from the coarse clock, which can lag a tick behind, so a
 * stamp taken between two time() calls could be a second past the second. */
static time_t realtime_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec;
}

static void timestamps_are_utc_iso8601_with_milliseconds(void **state)
{
    (void)state;
    assert_int_equal(tv_log_setup("json", "info"), 0);
    time_t before = realtime_s();
    capture_start();
    tv_log(TV_LOG_INFO, "tick");
    char *out = capture_end();
    time_t after = realtime_s();
    json_t *j = parse_line(out);
    const char *ts = JSTR(j, "ts");
    assert_non_null(ts);
    /* 2026-11-22T10:00:00.123Z */
    assert_int_equal(strlen(ts), 24);
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
    for (int i = 0; i < 24; i++)
        if (shape[i] == 'd' ? (ts[i] < '0' || ts[i] > '9') : ts[i] != shape[i])
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
    tv_log_access("GET", "/health", 0, 200, 0, 15, 10); /* info: dropped */
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
    tv_log_access("POST", "/embed?x=\"1\"", 0, 200, 6, 1234, 87);
    char *out = capture_end();
    json_t *j = parse_line(out);
    assert_string_equal(JSTR(j, "level"), "info");
    assert_string_equal(JSTR(j, "msg"), "request");
    assert_string_equal(JSTR(j, "method"), "POST");
    assert_string_equal(JSTR(j, "path"), "/embed?x=\"1\"");
    assert_int_equal(JINT(j, "status"), 200);
    assert_int_equal(JINT(j, "tokens"), 6);
    assert_int_equal(JINT(j, "bytes"), 1234);
    assert_int_equal(JINT(j, "duration_us"), 87);
    json_decref(j);
    free(out);

    assert_int_equal(tv_log_setup("text", "info"), 0);
    capture_start();
    tv_log_access("GET", "/a path", 0, 404, 0, 10, 5);
    out = capture_end();
    assert_int_equal(count_lines(out), 1);
    assert_non_null(strstr(out, " info request method=GET path=\"/a path\" "
                                "status=404 tokens=0 bytes=10 "
                                "duration_us=5\n"));
    free(out);

    /* no method and no path (a request cut before them): empty values; a
     * method that needs quotes gets them */
    capture_start();
    tv_log_access(NULL, NULL, 0, 400, 0, 0, 1);
    tv_log_access("G T", "/p", 0, 405, 0, 0, 1);
    out = capture_end();
    assert_int_equal(count_lines(out), 2);
    assert_non_null(
        strstr(out, " info request method=\"\" path=\"\" status=400 "));
    assert_non_null(strstr(out, " info request method=\"G T\" path=/p "
                                "status=405 "));
    free(out);
    assert_int_equal(tv_log_setup("json", "info"), 0);
    capture_start();
    tv_log_access(NULL, NULL, 0, 400, 0, 0, 1);
    out = capture_end();
    j = parse_line(out);
    assert_string_equal(JSTR(j, "method"), "");
    assert_string_equal(JSTR(j, "path"), "");
    json_decref(j);
    free(out);
}

/* The fields a server adds: client, request_id, error_type, in both
 * formats, escaped like any value; left out when NULL. */
static void access_line_names_client_request_id_and_error_type(void **state)
{
    (void)state;
    tv_access a = {.method = "POST",
                   .path = "/embed",
                   .status = 415,
                   .tokens = 0,
                   .bytes = 90,
                   .micros = 7,
                   .client = "127.0.0.1",
                   .request_id = "job-\"42\"",
                   .error_type = "unsupported_media_type"};
    assert_int_equal(tv_log_setup("json", "info"), 0);
    capture_start();
    tv_log_request(&a);
    char *out = capture_end();
    json_t *j = parse_line(out);
    assert_string_equal(JSTR(j, "client"), "127.0.0.1");
    assert_string_equal(JSTR(j, "request_id"), "job-\"42\"");
    assert_string_equal(JSTR(j, "error_type"), "unsupported_media_type");
    assert_int_equal(JINT(j, "status"), 415);
    json_decref(j);
    free(out);

    assert_int_equal(tv_log_setup("text", "info"), 0);
    capture_start();
    tv_log_request(&a);
    a.request_id = "abc";
    a.error_type = NULL;
    a.status = 200;
    tv_log_request(&a);
    out = capture_end();
    assert_int_equal(count_lines(out), 2);
    assert_non_null(strstr(out, " status=415 tokens=0 bytes=90 duration_us=7 "
                                "client=127.0.0.1 "
                                "request_id=\"job-\\\"42\\\"\" "
                                "error_type=unsupported_media_type\n"));
    assert_non_null(strstr(out, " status=200 tokens=0 bytes=90 duration_us=7 "
                                "client=127.0.0.1 request_id=abc\n"));
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
    tv_log_access("GET", big, 0, 200, 1, 2, 3);
    char *out = capture_end();
    assert_int_equal(count_lines(out), 2);
    const char *line = out;
    for (int i = 0; i < 2; i++) {
        size_t n = strcspn(line, "\n");
        assert_true(n + 1 <= 4096);
        json_t *j = parse_line(line);
        assert_true(json_is_true(json_object_get(j, "truncated")));
        if (i == 1)
            assert_int_equal(JINT(j, "status"), 200);
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
        const char *msg = JSTR(j, "msg");
        assert_int_equal(sscanf(msg, "thread %d line %d", &id, &n), 2);
        assert_true(id >= 0 && id < THREADS);
        assert_int_equal(n, seen[id]); /* in order per thread */
        seen[id]++;
        json_decref(j);
    }
    free(out);
}

/* Finding 8 of issue 15: U+009B (c2 9b, what `%c2%9b` decodes to), raw
 * 0x9b (the 8-bit CSI), U+2028, U+0085 (NEL), DEL, invalid UTF-8 and even
 * valid UTF-8 (e-acute) are written as \xHH: a text line is printable
 * ASCII. */
static const char hostile_path[] = "/\xc2\x9b[2J\x9b"
                                   "31m\xe2\x80\xa8\xe2\x80\xa9\xc2\x85\x7f"
                                   "caf\xc3\xa9\xff\xc3";

static void text_format_escapes_c1_controls_and_raw_high_bytes(void **state)
{
    (void)state;
    capture_start();
    tv_log_access("GET", hostile_path, sizeof hostile_path - 1, 404, 0, 10, 5);
    tv_log(TV_LOG_WARN, "msg %s", hostile_path);
    char *out = capture_end();
    assert_printable_ascii_lines(out, cap.len);
    assert_int_equal(count_lines(out), 2);
    assert_non_null(strstr(out,
                           " info request method=GET path=\"/\\xc2\\x9b[2J"
                           "\\x9b31m\\xe2\\x80\\xa8\\xe2\\x80\\xa9\\xc2\\x85"
                           "\\x7fcaf\\xc3\\xa9\\xff\\xc3\" status=404 "
                           "tokens=0 bytes=10 duration_us=5\n"));
    assert_non_null(strstr(out, " warn msg /\\xc2\\x9b[2J\\x9b31m"));
    size_t n;
    char *v = text_value(out, "path", &n);
    assert_int_equal(n, sizeof hostile_path - 1);
    assert_memory_equal(v, hostile_path, n);
    free(v);
    free(out);

    /* A backslash or a quote is escaped inside the quotes, so \xHH in a
     * value is always an escape, never bytes of the path. */
    capture_start();
    tv_log_access("GET", "/a\\x9b\"b", 0, 404, 0, 10, 5);
    tv_log_access("GET", "/\x9b", 0, 404, 0, 10, 5);
    out = capture_end();
    assert_printable_ascii_lines(out, cap.len);
    assert_non_null(strstr(out, " path=\"/a\\\\x9b\\\"b\" status=404"));
    assert_non_null(strstr(out, " path=\"/\\x9b\" status=404"));
    free(out);
}

/* JSON: every code point past ASCII as \uXXXX (a surrogate pair above
 * U+FFFF), so U+0080..U+009F, U+2028 and U+2029 never appear raw; the
 * string decodes to the bytes logged when they are valid UTF-8. */
static void json_format_escapes_u2028_u2029_and_c1(void **state)
{
    (void)state;
    static const char valid[] = "/\xc2\x9b\xc2\x85\xe2\x80\xa8\xe2\x80\xa9"
                                "caf\xc3\xa9\xf0\x9f\x98\x80\x7f\x01";
    assert_int_equal(tv_log_setup("json", "info"), 0);
    capture_start();
    tv_log_access("GET", valid, 0, 404, 0, 10, 5);
    tv_log(TV_LOG_INFO, "%s", valid);
    tv_log_access("GET", hostile_path, 0, 404, 0, 10, 5);
    char *out = capture_end();
    assert_printable_ascii_lines(out, cap.len);
    assert_int_equal(count_lines(out), 3);
    assert_non_null(strstr(out, "\"path\":\"/\\u009b\\u0085\\u2028\\u2029caf"
                                "\\u00e9\\ud83d\\ude00\\u007f\\u0001\""));
    const char *line = out;
    for (int i = 0; i < 2; i++) {
        json_t *j = parse_line(line);
        const char *got = json_string_value(
            json_object_get(j, i ? "msg" : "path"));
        assert_string_equal(got, valid);
        json_decref(j);
        line = strchr(line, '\n') + 1;
    }
    /* Invalid UTF-8 (0x9b alone, 0xff, a cut c3) as the characters \xHH. */
    json_t *j = parse_line(line);
    assert_string_equal(JSTR(j, "path"),
                        "/\xc2\x9b[2J\\x9b31m\xe2\x80\xa8\xe2\x80\xa9\xc2\x85"
                        "\x7f"
                        "caf\xc3\xa9\\xff\\xc3");
    json_decref(j);
    free(out);
}

/* server/http/http.c keeps the first 255 bytes of the path and passes the
 * whole length: the logged path ends in "...[+N bytes]" and the line says
 * path_truncated. A path the line itself cannot hold is marked the same
 * way, N counting the bytes of the path not logged. */
static void cut_paths_are_marked(void **state)
{
    (void)state;
    char path[256];
    memset(path, 'a', 255);
    path[0] = '/';
    path[255] = '\0';

    capture_start();
    tv_log_access("GET", path, 300, 404, 0, 10, 5);
    tv_log_access("GET", "/whole", 6, 404, 0, 10, 5);
    char *out = capture_end();
    assert_printable_ascii_lines(out, cap.len);
    char want[512];
    snprintf(want, sizeof want,
             " path=\"%s...[+45 bytes]\" status=404 tokens=0 bytes=10 "
             "duration_us=5 path_truncated=true\n",
             path);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, " path=/whole status=404 tokens=0 bytes=10 "
                                "duration_us=5\n"));
    free(out);

    assert_int_equal(tv_log_setup("json", "info"), 0);
    capture_start();
    tv_log_access("GET", path, 300, 404, 0, 10, 5);
    tv_log_access("GET", "/whole", 6, 404, 0, 10, 5);
    out = capture_end();
    assert_printable_ascii_lines(out, cap.len);
    json_t *j = parse_line(out);
    snprintf(want, sizeof want, "%s...[+45 bytes]", path);
    assert_string_equal(JSTR(j, "path"), want);
    assert_true(json_is_true(json_object_get(j, "path_truncated")));
    assert_null(json_object_get(j, "truncated")); /* the line is whole */
    assert_int_equal(JINT(j, "status"), 404);
    json_decref(j);
    j = parse_line(strchr(out, '\n') + 1);
    assert_string_equal(JSTR(j, "path"), "/whole");
    assert_null(json_object_get(j, "path_truncated"));
    json_decref(j);
    free(out);

    /* Longer than a line: 3000 x "\xc3\xa9" is 6000 bytes, 18000 escaped
     * in JSON, 24000 in text. What is logged plus N is the whole path. */
    static char big[6001];
    for (size_t i = 0; i < 6000; i += 2) {
        big[i] = (char)0xc3;
        big[i + 1] = (char)0xa9;
    }
    for (int json = 1; json >= 0; json--) {
        assert_int_equal(tv_log_setup(json ? "json" : "text", "info"), 0);
        capture_start();
        tv_log_access("GET", big, 6000, 200, 1, 2, 3);
        out = capture_end();
        assert_printable_ascii_lines(out, cap.len);
        assert_true(cap.len <= 4096);
        size_t logged, missing;
        char *v;
        if (json) {
            j = parse_line(out);
            assert_true(json_is_true(json_object_get(j, "path_truncated")));
            assert_true(json_is_true(json_object_get(j, "truncated")));
            assert_int_equal(JINT(j, "status"), 200);
            v = strdup(JSTR(j, "path"));
            json_decref(j);
        } else {
            assert_non_null(strstr(out, " status=200 tokens=1 bytes=2 "
                                        "duration_us=3 path_truncated=true "
                                        "truncated=true\n"));
            v = text_value(out, "path", &logged);
        }
        char *mark = strstr(v, "...[+");
        assert_non_null(mark);
        assert_int_equal(sscanf(mark, "...[+%zu bytes]", &missing), 1);
        *mark = '\0';
        logged = strlen(v);
        assert_true(logged > 800);
        if (json) /* JSON cuts between characters, text between bytes */
            assert_int_equal(logged % 2, 0);
        assert_memory_equal(v, big, logged);
        assert_int_equal(logged + missing, 6000);
        free(v);
        free(out);
    }
}

/* Random bytes, weighted towards the ones that matter, through both
 * formats: every line printable ASCII, JSON valid, text values decode
 * back to the exact bytes, valid UTF-8 comes back from JSON unchanged. */
static void every_line_is_printable_ascii_whatever_the_bytes(void **state)
{
    (void)state;
    static const unsigned char pick[] = {
        0x01, 0x09, 0x0a, 0x0d, 0x1b, 0x20, '"',  '\\', '=',  0x7f, 0x80,
        0x85, 0x9b, 0x9f, 0xa0, 0xa8, 0xa9, 0xbf, 0xc0, 0xc2, 0xc3, 0xe2,
        0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 'a',  '/',  '%',  'x'};
    unsigned seed = 12345;
    char path[400];
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(rand_r(&seed) % 300);
        for (size_t i = 0; i < n; i++) {
            int r = rand_r(&seed);
            path[i] = (char)(r % 3 ? pick[(r >> 4) % sizeof pick]
                                   : 1 + (r >> 4) % 255);
        }
        path[n] = '\0';
        bool json = round % 2;
        assert_int_equal(tv_log_setup(json ? "json" : "text", "info"), 0);
        capture_start();
        tv_log_access("GET", path, n, 200, 1, 2, 3);
        tv_log(TV_LOG_INFO, "m %s", path);
        char *out = capture_end();
        assert_printable_ascii_lines(out, cap.len);
        assert_int_equal(count_lines(out), 2);
        if (json) {
            json_t *j = parse_line(out);
            json_t *j2 = parse_line(strchr(out, '\n') + 1);
            json_t *str = json_stringn(path, n); /* NULL: not UTF-8 */
            if (str) {
                assert_string_equal(JSTR(j, "path"), path);
                json_decref(str);
            }
            json_decref(j);
            json_decref(j2);
        } else {
            size_t k;
            char *v = text_value(out, "path", &k);
            assert_int_equal(k, n);
            assert_memory_equal(v, path, n);
            free(v);
        }
        free(out);
    }
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
        cmocka_unit_test_setup(
            access_line_names_client_request_id_and_error_type, reset),
        cmocka_unit_test_setup(long_messages_are_cut_and_stay_valid, reset),
        cmocka_unit_test_setup(lines_of_threads_never_interleave, reset),
        cmocka_unit_test_setup(
            text_format_escapes_c1_controls_and_raw_high_bytes, reset),
        cmocka_unit_test_setup(json_format_escapes_u2028_u2029_and_c1, reset),
        cmocka_unit_test_setup(cut_paths_are_marked, reset),
        cmocka_unit_test_setup(
            every_line_is_printable_ascii_whatever_the_bytes, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
