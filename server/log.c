/* log.c -- one line per event on stderr, text or JSON lines (see log.h).
 *
 * Formats:
 *   text  2026-11-22T10:00:00.123Z info table opened
 *         2026-11-22T10:00:00.123Z info request method=POST path=/embed
 *             status=200 tokens=3 bytes=412 duration_us=87   (one line)
 *   json  {"ts":"2026-11-22T10:00:00.123Z","level":"info","msg":"..."}
 *         access: ..."msg":"request","method":"POST","path":"/embed",
 *         "status":200,"tokens":3,"bytes":412,"duration_us":87}
 * Timestamps are UTC, ISO 8601, milliseconds.
 *
 * What must hold: the level is checked before anything is formatted; a line
 * is built in a bounded stack buffer (LINE_MAX bytes, at most PIPE_BUF so a
 * write to a pipe is atomic too) and written with one write(2), so lines of
 * different threads never interleave; a line never contains a newline but
 * its last byte (control bytes are escaped in both formats); a JSON line is
 * always valid JSON, whatever bytes the message holds (invalid UTF-8 becomes
 * U+FFFD, long messages are cut at a character boundary and marked with
 * "truncated":true; text lines end in "..." instead).
 *
 * Threads: fmt_json and min_level are written only by tv_log_setup, on the
 * main thread before other threads start; afterwards every thread only
 * reads them. Everything else is on the caller's stack.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

enum {
    LINE_MAX_ = 4096, /* whole line, newline included (<= PIPE_BUF) */
    TAIL = 160,       /* reserved for the end of a line: fields, } \n */
    MSG_MAX = 3072,   /* formatted message before escaping */
};

static bool fmt_json;
static int min_level = TV_LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

int tv_log_setup(const char *format, const char *level)
{
    int lv = -1;
    bool json;
    if (!format || !level)
        return -1;
    if (!strcmp(format, "json"))
        json = true;
    else if (!strcmp(format, "text"))
        json = false;
    else
        return -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(level, level_names[i]))
            lv = i;
    if (lv < 0)
        return -1;
    fmt_json = json;
    min_level = lv;
    return 0;
}

int tv_log_enabled(int level)
{
    return level >= min_level;
}

/* A line being built: b[0..n), never more than lim bytes of content
 * (lim = LINE_MAX_ - TAIL while the message goes in, then LINE_MAX_). */
typedef struct line {
    char b[LINE_MAX_];
    size_t n, lim;
    bool cut; /* something did not fit */
} line;

static void put(line *l, const char *s, size_t k)
{
    if (l->n + k > l->lim) {
        l->cut = true;
        return;
    }
    memcpy(l->b + l->n, s, k);
    l->n += k;
}

static void putf(line *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void putf(line *l, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof tmp)
        l->cut = true;
    else
        put(l, tmp, (size_t)k);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
                       (s[3] & 0xc0) == 0x80
                   ? 4
                   : 0;
    }
    return 0;
}

/* s as the inside of a JSON string; stops at the first unit that does not
 * fit, so the result is always a well-formed string body. */
static void put_json_str(line *l, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s && !l->cut) {
        char esc[8];
        size_t k = utf8_len(s);
        if (k == 0) {
            put(l, "\\ufffd", 6);
            s++;
            continue;
        }
        if (k > 1) {
            put(l, (const char *)s, k);
        } else if (*s == '"' || *s == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*s;
            put(l, esc, 2);
        } else if (*s == '\n') {
            put(l, "\\n", 2);
        } else if (*s == '\t') {
            put(l, "\\t", 2);
        } else if (*s == '\r') {
            put(l, "\\r", 2);
        } else if (*s < 0x20 || *s == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", *s);
            put(l, esc, 6);
        } else {
            put(l, (const char *)s, 1);
        }
        s += k;
    }
}

/* s for a text line: control bytes as \n, \t, \r or \xHH. As a key=value
 * value (logfmt), it is quoted when empty or holding a space, '"', '\\' or
 * '='. Stops at the first unit that does not fit. */
static void put_text_str(line *l, const char *str, bool value)
{
    const unsigned char *s = (const unsigned char *)str;
    bool quote = false;
    if (value) {
        quote = !*s;
        for (const unsigned char *p = s; *p; p++)
            if (*p <= ' ' || *p == '"' || *p == '\\' || *p == '=')
                quote = true;
    }
    if (quote)
        put(l, "\"", 1);
    for (; *s && !l->cut; s++) {
        char esc[8];
        if (*s == '\n')
            put(l, "\\n", 2);
        else if (*s == '\t')
            put(l, "\\t", 2);
        else if (*s == '\r')
            put(l, "\\r", 2);
        else if (*s < 0x20 || *s == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", *s);
            put(l, esc, 4);
        } else if (quote && (*s == '"' || *s == '\\')) {
            esc[0] = '\\';
            esc[1] = (char)*s;
            put(l, esc, 2);
        } else {
            put(l, (const char *)s, 1);
        }
    }
    if (quote) {
        size_t lim = l->lim;
        l->lim = LINE_MAX_; /* the closing quote always goes in */
        put(l, "\"", 1);
        l->lim = lim;
    }
}

/* Starts a line: timestamp and level, up to the message. */
static void begin(line *l, int level)
{
    struct timespec ts;
    struct tm tm;
    char stamp[32];
    l->n = 0;
    l->lim = LINE_MAX_ - TAIL;
    l->cut = false;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp + k, sizeof stamp - k, ".%03ldZ", ts.tv_nsec / 1000000);
    if (fmt_json)
        putf(l, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"", stamp,
             level_names[level]);
    else
        putf(l, "%s %s ", stamp, level_names[level]);
}

/* Writes the line; one write(2) unless interrupted or cut short. */
static void emit(line *l)
{
    const char *p = l->b;
    size_t left = l->n;
    while (left > 0) {
        ssize_t w = write(STDERR_FILENO, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* nowhere to report a failing stderr */
        p += w;
        left -= (size_t)w;
    }
}

void tv_log(int level, const char *fmt, ...)
{
    assert(level >= TV_LOG_DEBUG && level <= TV_LOG_ERROR);
    if (level < min_level)
        return;
    char msg[MSG_MAX];
    line l;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (k < 0)
        snprintf(msg, sizeof msg, "(bad log format '%s')", fmt);
    begin(&l, level);
    bool cut = k >= (int)sizeof msg;
    if (fmt_json) {
        put_json_str(&l, msg);
        cut = cut || l.cut;
        l.lim = LINE_MAX_;
        l.cut = false;
        put(&l, cut ? "\",\"truncated\":true}\n" : "\"}\n",
            cut ? 20 : 3);
    } else {
        put_text_str(&l, msg, false);
        cut = cut || l.cut;
        l.lim = LINE_MAX_;
        l.cut = false;
        put(&l, cut ? "...\n" : "\n", cut ? 4 : 1);
    }
    emit(&l);
}

size_t tv_log_prepare_fatal(char *buf, size_t len, const char *fmt, ...)
{
    char msg[MSG_MAX];
    line l;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (k < 0)
        snprintf(msg, sizeof msg, "(bad log format '%s')", fmt);
    l.n = 0;
    l.lim = LINE_MAX_ - TAIL;
    l.cut = false;
    if (fmt_json) {
        put(&l, "{\"level\":\"fatal\",\"msg\":\"", 24);
        put_json_str(&l, msg);
        l.lim = LINE_MAX_;
        l.cut = false;
        put(&l, "\"}\n", 3);
    } else {
        put(&l, "fatal ", 6);
        put_text_str(&l, msg, false);
        l.lim = LINE_MAX_;
        l.cut = false;
        put(&l, "\n", 1);
    }
    if (len == 0)
        return 0;
    size_t n = l.n < len ? l.n : len - 1;
    if (n && l.b[n - 1] != '\n')
        l.b[n - 1] = '\n'; /* cut by a small buf: still one line */
    memcpy(buf, l.b, n);
    buf[n] = '\0';
    return n;
}

void tv_log_access(const char *method, const char *path, int status,
                   long long tokens, long long bytes, long long micros)
{
    if (TV_LOG_INFO < min_level)
        return;
    line l;
    begin(&l, TV_LOG_INFO);
    method = method ? method : "";
    path = path ? path : "";
    if (fmt_json) {
        put(&l, "request\",\"method\":\"", 19);
        l.lim = LINE_MAX_ - TAIL - 1024; /* leave room for the path */
        put_json_str(&l, method);
        l.lim = LINE_MAX_ - TAIL;
        put(&l, "\",\"path\":\"", 10);
        put_json_str(&l, path);
        bool cut = l.cut;
        l.lim = LINE_MAX_;
        l.cut = false;
        putf(&l,
             "\",\"status\":%d,\"tokens\":%lld,\"bytes\":%lld,"
             "\"duration_us\":%lld%s}\n",
             status, tokens, bytes, micros, cut ? ",\"truncated\":true" : "");
    } else {
        put(&l, "request method=", 15);
        l.lim = LINE_MAX_ - TAIL - 1024;
        put_text_str(&l, method, true);
        l.lim = LINE_MAX_ - TAIL;
        put(&l, " path=", 6);
        put_text_str(&l, path, true);
        bool cut = l.cut;
        l.lim = LINE_MAX_;
        l.cut = false;
        putf(&l, " status=%d tokens=%lld bytes=%lld duration_us=%lld%s\n",
             status, tokens, bytes, micros, cut ? " truncated=true" : "");
    }
    emit(&l);
}
