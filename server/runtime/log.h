/* log.h -- one line per event on stderr, text or JSON.
 *
 * tv_log checks the level before formatting anything. Lines are written
 * with one write(2) each, so lines from different threads never interleave.
 * Every line is printable ASCII plus its newline, whatever the bytes logged
 * (text: \xHH; JSON: \uXXXX, invalid UTF-8 as the characters \xHH): see
 * the top of log.c.
 * tv_log_setup is called once on the main thread before other threads start.
 */
#ifndef TV_LOG_H
#define TV_LOG_H

#include <stddef.h>

enum { TV_LOG_DEBUG = 0, TV_LOG_INFO = 1, TV_LOG_WARN = 2, TV_LOG_ERROR = 3 };

/* format: "text" or "json"; level: "debug".."error". -1 on a bad name. */
int tv_log_setup(const char *format, const char *level);
int tv_log_enabled(int level);

/* text: "2026-11-22T10:00:00.123Z info msg"; json: {"ts":..,"level":..,
 * "msg":..}. msg is printf-style. */
void tv_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The one line of a failed start (serve.c): text "tokvec: <msg>" without
 * a timestamp (before tv_log_setup, always text), JSON a line as tv_log's
 * at level error. The message is escaped as every line is (see log.c): it
 * may carry what a file holds -- a tokenizer's key, a shard's name -- or
 * what a flag says. */
void tv_log_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A fatal line for a signal handler to write later: formatted now, in the
 * configured format (text "fatal <msg>", JSON {"level":"fatal","msg":..}),
 * without a timestamp (formatting the time is not async-signal-safe).
 * Writes at most len bytes including a NUL; returns the line's length, a
 * newline included. The handler writes buf with one write(2). */
size_t tv_log_prepare_fatal(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The access log line: method, path, status, tokens, response bytes,
 * microseconds (text: key=value pairs; json: an object). path_len is the
 * length of the whole request path, of which path may hold only the first
 * strlen(path) bytes (the caller's buffer); a smaller path_len (0 too)
 * means path is whole. A path cut, there or by the line's size, is logged
 * ending in "...[+N bytes]" (N: the bytes not logged) and the line gets
 * path_truncated=true / "path_truncated":true. */
void tv_log_access(const char *method, const char *path, size_t path_len,
                   int status, long long tokens, long long bytes,
                   long long micros);

/* The access line with the fields a server knows of a request: as above,
 * then client (the peer's address, "unix" for the Unix socket), request_id
 * (X-Request-Id, tokvec's or the client's) and error_type (an error
 * answer's, as in its body), each left out when NULL. Values are escaped
 * as the path is. */
typedef struct tv_access {
    const char *method, *path;
    size_t path_len;
    int status;
    long long tokens, bytes, micros;
    const char *client, *request_id, *error_type;
} tv_access;
void tv_log_request(const tv_access *a);

#endif
