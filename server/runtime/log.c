/* log.c -- one line per event on stderr, text or JSON lines (see log.h).
 *
 * Formats:
 *   text  2026-11-22T10:00:00.123Z info table opened
 *         2026-11-22T10:00:00.123Z info request method=POST path=/embed
 *             status=200 tokens=3 bytes=412 duration_us=87   (one line)
 *   json  {"ts":"2026-11-22T10:00:00.123Z","level":"info","msg":"..."}
 *         access: ..."msg":"request","method":"POST","path":"/embed",
 *         "status":200,"tokens":3,"bytes":412,"duration_us":87,
 *         "client":"127.0.0.1","request_id":"9f..."}, and for an error
 *         "error_type":"invalid_request" (text: the same as key=value)
 * Timestamps are UTC, ISO 8601, milliseconds. A failed start
 * (tv_log_fail) is "tokvec: <msg>" without a timestamp in text, a JSON
 * line at level error in JSON.
 *
 * What must hold: the level is checked before anything is formatted; a line
 * is built in a bounded stack buffer (LINE_MAX bytes, at most PIPE_BUF so a
 * write to a pipe is atomic too) and written with one write(2), so lines of
 * different threads never interleave.
 *
 * Every line, in either format and whatever bytes a message, method or path
 * holds, is printable ASCII (0x20-0x7e) ending in its one newline: no C0
 * control, no DEL, no C1 control (neither raw 0x80-0x9f nor U+0080-U+009F
 * in UTF-8), no U+2028/U+2029, no bidi override, no byte >= 0x80 at all.
 * A request path is the client's choosing (libmicrohttpd percent-decodes
 * it: `%c2%9b` arrives as U+009B, the 8-bit CSI of a terminal), so a log
 * read with cat, less or a pager, pasted into a browser or a script, shows
 * what was sent and does nothing.
 *   text  \n \t \r for those, \xHH for every other byte outside 0x20-0x7e,
 *         valid UTF-8 included (e-acute, c3 a9, is logged as \xc3\xa9):
 *         a safe subset of Unicode is a moving target (bidi controls,
 *         zero-width and new format characters), no real route has a
 *         non-ASCII path, and \xHH is exact. A key=value value (logfmt)
 *         is quoted when it is empty or holds a byte it escapes, a space,
 *         '"', '\\' or '='; inside the quotes '"' and '\\' are escaped too,
 *         so a value decodes back to its exact bytes (Go strconv.Unquote
 *         rules) and \xHH in a value is always an escape. A message (not a
 *         value) keeps '"' and '\\' as they are.
 *   json  the line is valid JSON: '"' '\\' \n \t \r as usual, other C0
 *         and DEL as \u00XX, every code point above U+007F as \uXXXX
 *         (a surrogate pair above U+FFFF), so the string decodes to the
 *         very bytes logged when they are valid UTF-8. A byte that is not
 *         part of valid UTF-8 is written as the four characters \xHH (JSON
 *         "\\xHH"): readable and exact, but a literal backslash-x sent by
 *         the client reads the same once decoded (a text value tells
 *         them apart).
 *
 * Cuts: a message longer than the line is cut at a character (JSON) or
 * byte (text) boundary and marked with "truncated":true (JSON) or a
 * trailing "..." (text). A cut request path -- server/http/http.c keeps the
 * first 255 bytes and passes the whole length, and a path the line cannot
 * hold is cut here -- ends in "...[+N bytes]", N the bytes of the path not
 * logged, and the line carries path_truncated=true ("path_truncated":true);
 * "truncated" still means the line itself was full.
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
    /* same, access line: path marker, fields (a request id of up to 128
     * bytes, 2 each escaped; a client address; an error type), } \n */
    ACCESS_TAIL = 768,
    MSG_MAX = 3072, /* formatted message before escaping */
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

/* Appends s[0..k) whole or not at all; false (and cut) if it did not fit. */
static bool put(line *l, const char *s, size_t k)
{
    if (l->n + k > l->lim) {
        l->cut = true;
        return false;
    }
    memcpy(l->b + l->n, s, k);
    l->n += k;
    return true;
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

/* The code point of the valid UTF-8 sequence s[0..k), k = 2..4. */
static unsigned utf8_decode(const unsigned char *s, size_t k)
{
    unsigned cp = s[0] & (0x7fu >> k);
    for (size_t i = 1; i < k; i++)
        cp = cp << 6 | (s[i] & 0x3fu);
    return cp;
}

/* s as the inside of a JSON string, printable ASCII only (see the top of
 * the file); stops before the first unit that does not fit, so the result
 * is always a well-formed string body. Returns the bytes of s written. */
static size_t put_json_str(line *l, const char *str)
{
    const unsigned char *s = (const unsigned char *)str, *p = s;
    while (*p) {
        char esc[16];
        size_t k = utf8_len(p), n = 1;
        unsigned c = *p;
        if (k == 0) { /* not UTF-8: the characters \xHH */
            k = 1;
            n = (size_t)snprintf(esc, sizeof esc, "\\\\x%02x", c);
        } else if (k > 1) {
            unsigned cp = utf8_decode(p, k);
            if (cp < 0x10000)
                n = (size_t)snprintf(esc, sizeof esc, "\\u%04x", cp);
            else
                n = (size_t)snprintf(esc, sizeof esc, "\\u%04x\\u%04x",
                                     0xd800 + ((cp - 0x10000) >> 10),
                                     0xdc00 + ((cp - 0x10000) & 0x3ff));
        } else if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            n = 2;
        } else if (c == '\n') {
            memcpy(esc, "\\n", n = 2);
        } else if (c == '\t') {
            memcpy(esc, "\\t", n = 2);
        } else if (c == '\r') {
            memcpy(esc, "\\r", n = 2);
        } else if (c < 0x20 || c == 0x7f) {
            n = (size_t)snprintf(esc, sizeof esc, "\\u%04x", c);
        } else {
            esc[0] = (char)c;
        }
        if (!put(l, esc, n))
            break;
        p += k;
    }
    return (size_t)(p - s);
}

/* Whether s as a key=value value (logfmt) goes in quotes: empty, or with a
 * byte that put_text_str escapes, a space, '"', '\\' or '='. */
static bool text_needs_quotes(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    if (!*s)
        return true;
    for (; *s; s++)
        if (*s <= ' ' || *s >= 0x7f || *s == '"' || *s == '\\' || *s == '=')
            return true;
    return false;
}

/* s for a text line, printable ASCII only: \n, \t, \r, and \xHH for every
 * other byte outside 0x20-0x7e; inside quotes '"' and '\\' as \" and \\.
 * Stops before the first byte that does not fit; returns the bytes of s
 * written. */
static size_t put_text_str(line *l, const char *str, bool quoted)
{
    const unsigned char *s = (const unsigned char *)str, *p = s;
    for (; *p; p++) {
        char esc[8];
        size_t n = 1;
        unsigned c = *p;
        if (c == '\n')
            memcpy(esc, "\\n", n = 2);
        else if (c == '\t')
            memcpy(esc, "\\t", n = 2);
        else if (c == '\r')
            memcpy(esc, "\\r", n = 2);
        else if (c < 0x20 || c >= 0x7f)
            n = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c);
        else if (quoted && (c == '"' || c == '\\')) {
            esc[0] = '\\';
            esc[1] = (char)c;
            n = 2;
        } else
            esc[0] = (char)c;
        if (!put(l, esc, n))
            break;
    }
    return (size_t)(p - s);
}

/* A closing quote, past the limit: it always goes in (TAIL keeps room). */
static void put_close_quote(line *l)
{
    size_t lim = l->lim;
    l->lim = LINE_MAX_;
    put(l, "\"", 1);
    l->lim = lim;
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

/* fmt and ap into msg (MSG_MAX bytes); vsnprintf's result (>= MSG_MAX:
 * cut). A format vsnprintf refuses is named instead. */
static int format_msg(char *msg, const char *fmt, va_list ap)
{
    int k = vsnprintf(msg, MSG_MAX, fmt, ap);
    if (k < 0)
        snprintf(msg, MSG_MAX, "(bad log format '%s')", fmt);
    return k;
}

/* Ends the line begun in l with msg (k: format_msg's result, >= MSG_MAX:
 * msg was cut), escaped for the format, and writes it. */
static void finish(line *l, const char *msg, int k)
{
    bool cut = k >= MSG_MAX;
    if (fmt_json) {
        put_json_str(l, msg);
        cut = cut || l->cut;
        l->lim = LINE_MAX_;
        l->cut = false;
        put(l, cut ? "\",\"truncated\":true}\n" : "\"}\n", cut ? 20 : 3);
    } else {
        put_text_str(l, msg, false);
        cut = cut || l->cut;
        l->lim = LINE_MAX_;
        l->cut = false;
        put(l, cut ? "...\n" : "\n", cut ? 4 : 1);
    }
    emit(l);
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
    int k = format_msg(msg, fmt, ap);
    va_end(ap);
    begin(&l, level);
    finish(&l, msg, k);
}

void tv_log_fail(const char *fmt, ...)
{
    char msg[MSG_MAX];
    line l;
    va_list ap;
    va_start(ap, fmt);
    int k = format_msg(msg, fmt, ap);
    va_end(ap);
    if (fmt_json) {
        begin(&l, TV_LOG_ERROR);
    } else {
        l.n = 0;
        l.lim = LINE_MAX_ - TAIL;
        l.cut = false;
        put(&l, "tokvec: ", 8);
    }
    finish(&l, msg, k);
}

size_t tv_log_prepare_fatal(char *buf, size_t len, const char *fmt, ...)
{
    char msg[MSG_MAX];
    line l;
    va_list ap;
    va_start(ap, fmt);
    format_msg(msg, fmt, ap);
    va_end(ap);
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

/* One more key=value (text) or "key":"value" (JSON) of the access line;
 * nothing when v is NULL. */
static void put_field(line *l, const char *key, const char *v)
{
    if (!v)
        return;
    if (fmt_json) {
        putf(l, ",\"%s\":\"", key);
        put_json_str(l, v);
        put_close_quote(l);
        return;
    }
    bool q = text_needs_quotes(v);
    putf(l, " %s=%s", key, q ? "\"" : "");
    put_text_str(l, v, q);
    if (q)
        put_close_quote(l);
}

void tv_log_access(const char *method, const char *path, size_t path_len,
                   int status, long long tokens, long long bytes,
                   long long micros)
{
    tv_access a = {.method = method,
                   .path = path,
                   .path_len = path_len,
                   .status = status,
                   .tokens = tokens,
                   .bytes = bytes,
                   .micros = micros};
    tv_log_request(&a);
}

void tv_log_request(const tv_access *a)
{
    if (TV_LOG_INFO < min_level)
        return;
    line l;
    begin(&l, TV_LOG_INFO);
    const char *method = a->method ? a->method : "";
    const char *path = a->path ? a->path : "";
    size_t path_len = a->path_len;
    size_t have = strlen(path), whole = path_len > have ? path_len : have;
    size_t logged;
    bool quoted = false; /* text: the path value is in quotes */
    if (fmt_json) {
        put(&l, "request\",\"method\":\"", 19);
        l.lim = LINE_MAX_ - TAIL - 1024; /* leave room for the path */
        put_json_str(&l, method);
        l.lim = LINE_MAX_ - ACCESS_TAIL;
        put(&l, "\",\"path\":\"", 10);
        logged = put_json_str(&l, path);
    } else {
        put(&l, "request method=", 15);
        l.lim = LINE_MAX_ - TAIL - 1024;
        bool q = text_needs_quotes(method);
        if (q)
            put(&l, "\"", 1);
        put_text_str(&l, method, q);
        if (q)
            put_close_quote(&l);
        l.lim = LINE_MAX_ - ACCESS_TAIL;
        put(&l, " path=", 6);
        /* Quoted also when it may be cut (the marker holds a space): a
         * byte takes at most 4 escaped. */
        size_t room = l.lim > l.n ? l.lim - l.n : 0;
        quoted = text_needs_quotes(path) || whole > have || have > room / 4;
        if (quoted)
            put(&l, "\"", 1);
        logged = put_text_str(&l, path, quoted);
    }
    bool cut = l.cut, path_cut = logged < whole;
    l.lim = LINE_MAX_; /* ACCESS_TAIL keeps room for the rest */
    l.cut = false;
    if (path_cut)
        putf(&l, "...[+%zu bytes]", whole - logged);
    if (fmt_json)
        putf(&l,
             "\",\"status\":%d,\"tokens\":%lld,\"bytes\":%lld,"
             "\"duration_us\":%lld",
             a->status, a->tokens, a->bytes, a->micros);
    else
        putf(&l, "%s status=%d tokens=%lld bytes=%lld duration_us=%lld",
             quoted ? "\"" : "", a->status, a->tokens, a->bytes, a->micros);
    put_field(&l, "client", a->client);
    put_field(&l, "request_id", a->request_id);
    put_field(&l, "error_type", a->error_type);
    if (fmt_json)
        putf(&l, "%s%s}\n", path_cut ? ",\"path_truncated\":true" : "",
             cut ? ",\"truncated\":true" : "");
    else
        putf(&l, "%s%s\n", path_cut ? " path_truncated=true" : "",
             cut ? " truncated=true" : "");
    emit(&l);
}
