/* log.c -- one line per event on stderr (log.h). The level is checked
 * before anything is formatted; each line goes out in one write(2), so
 * lines from different threads never interleave. Settings are written once
 * by tv_log_setup on the main thread before other threads start.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int json_format;
static int min_level = TV_LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};

int tv_log_setup(const char *format, const char *level)
{
    if (!strcmp(format, "json"))
        json_format = 1;
    else if (!strcmp(format, "text"))
        json_format = 0;
    else
        return -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(level, names[i])) {
            min_level = i;
            return 0;
        }
    return -1;
}

int tv_log_enabled(int level)
{
    return level >= min_level;
}

static size_t stamp(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
    return n;
}

/* Appends s JSON-escaped. */
static size_t esc(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    return n;
}

static void emit(int level, const char *msg, const char *json_fields)
{
    char line[4096], ts[40];
    size_t n;
    stamp(ts, sizeof ts);
    if (json_format) {
        n = (size_t)snprintf(line, sizeof line,
                             "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"", ts,
                             names[level]);
        n += esc(line + n, sizeof line - n - 512, msg);
        n += (size_t)snprintf(line + n, sizeof line - n, "\"%s}\n",
                              json_fields ? json_fields : "");
    } else {
        n = (size_t)snprintf(line, sizeof line, "%s %s %s\n", ts,
                             names[level], msg);
    }
    if (n >= sizeof line) {
        n = sizeof line;
        line[n - 1] = '\n';
    }
    ssize_t w = write(2, line, n);
    (void)w;
}

void tv_log(int level, const char *fmt, ...)
{
    if (level < min_level)
        return;
    char msg[3072];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(level, msg, NULL);
}

void tv_log_access(const char *method, const char *path, int status,
                   long long tokens, long long bytes, long long micros)
{
    if (TV_LOG_INFO < min_level)
        return;
    char msg[700], m[40], p[520], fields[800];
    m[esc(m, sizeof m, method)] = '\0';
    p[esc(p, sizeof p, path)] = '\0';
    if (json_format) {
        snprintf(fields, sizeof fields,
                 ",\"method\":\"%s\",\"path\":\"%s\",\"status\":%d,"
                 "\"tokens\":%lld,\"bytes\":%lld,\"us\":%lld",
                 m, p, status, tokens, bytes, micros);
        emit(TV_LOG_INFO, "request", fields);
    } else {
        snprintf(msg, sizeof msg,
                 "request method=%s path=%s status=%d tokens=%lld bytes=%lld "
                 "us=%lld", m, p, status, tokens, bytes, micros);
        emit(TV_LOG_INFO, msg, NULL);
    }
}
