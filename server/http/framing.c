/* framing.c -- request framing checked before any body is read (framing.h;
 * issue 15, findings 4 and 5).
 *
 * libmicrohttpd 0.9.75 stalls on some framing and accepts framing that
 * RFC 9112 rejects (request-smuggling primitives behind a proxy). What MHD
 * does with each case, and what tokvec does about it, is listed in
 * tests/e2e/test_hostile.py (class Framing). Here:
 *
 * - The query. MHD stores each query parameter in the connection's memory
 *   pool (32 KiB) while it parses the request line; when the pool runs out
 *   there (~450 short parameters, far fewer in a long URI) it neither
 *   answers nor calls the handler, and the connection hangs until the
 *   request deadline. Only the URI log callback runs before that parse:
 *   framing_uri_check() refuses a URI of more than URI_MAX bytes or with
 *   more than QUERY_PARAMS_MAX parameters, cuts its query so that MHD
 *   stores none, and the first call answers 414. A query hidden behind a
 *   NUL byte that framing_uri_check cannot safely look past is caught by
 *   count_unescape().
 * - The header fields, at the first call (framing_check()), before MHD
 *   reads any body: a Transfer-Encoding other than "chunked" (MHD would
 *   read the body until the client closes) is 501; two Hosts, none in
 *   HTTP/1.1, two Content-Lengths, Content-Length with Transfer-Encoding,
 *   Transfer-Encoding in HTTP/1.0, a field name that is not a token
 *   (whitespace before the colon, a leading space) and a CR in a value
 *   are 400. MHD keeps the raw header block in place (CRLF and the colon
 *   turned into NULs, `method` at its start, header_size long), so with
 *   0.9.75 (raw_framing) we also read what MHD hides: an obs-fold line
 *   (MHD moves the name elsewhere in its pool and appends the continuation
 *   to the name) and a NUL inside a value (MHD cuts the value there).
 *
 * Out of sight here (a proxy's job; nginx handles each): the chunk lines
 * of a chunked body (MHD parses them, bare LF accepted, and hands over
 * only the data); a NUL as the last byte of a value ended by a bare LF
 * (it leaves the same NULs as a CRLF; it hides nothing). Accepted on
 * purpose, as nginx does: bare-LF line ends in the header block (RFC 9112
 * allows it) and control bytes other than CR and NUL in values.
 *
 * Every such answer has Connection: close and MHD closes the connection,
 * so whatever the client sent after it is never read as a request.
 *
 * Threads: the connection's HTTP thread (every function is an MHD callback
 * or called from one). uri_marks is constant after load; the per-request
 * count of unescapes lives in the connection's conn_watch.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "framing.h"
#include "log.h"
#include "server.h"

/* &uri_marks[v]: framing_uri_check's verdict v as the request's first
 * *con_cls (never URI_OK). */
static char uri_marks[3];

int framing_uri_mark(const void *p)
{
    return p == &uri_marks[URI_TOO_LONG] || p == &uri_marks[URI_NUL];
}

int framing_uri_verdict(const void *p)
{
    return framing_uri_mark(p) ? (int)((const char *)p - uri_marks) : URI_OK;
}

/* Is p a NUL that MHD put where the space before "HTTP/d.d" was? Reading
 * p[1..8] is safe either way: if p is not that NUL, the request line goes
 * on past it to at least " HTTP/d.d" (MHD has checked the version). */
static int uri_end(const char *p)
{
    return !p[0] && !memcmp(p + 1, "HTTP/", 5) && p[6] >= '0' && p[6] <= '9' &&
           p[7] == '.' && p[8] >= '0' && p[8] <= '9';
}

/* MHD: the URI log callback, with the request line's URI before MHD parses
 * its query (and before the handler's first call). Returns the request's
 * first *con_cls: NULL, or a mark that makes the first call refuse it. */
void *framing_uri_check(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
        c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_watch *w = ci ? ci->socket_context : NULL;
    if (w)
        w->unescapes = 0;
    if (!uri)
        return NULL;
    /* The URI runs to the NUL MHD put before the version; a NUL before
     * that one was in the request. Scan up to the first NUL that could be
     * the end: past it the buffer is MHD's and may end. */
    const char *p = uri, *q = NULL;
    size_t params = 0;
    int nul = 0;
    for (; !uri_end(p); p++) {
        if (!*p)
            nul = 1;
        else if (*p == '?' && !q)
            q = p, params = 1;
        else if (*p == '&' && q)
            params++;
    }
    if (!nul && (size_t)(p - uri) <= URI_MAX && params <= QUERY_PARAMS_MAX)
        return NULL;
    /* MHD parses the query from the first '?' to the end right after this
     * call, in this same writable buffer (it writes NULs into it itself):
     * end the query at once, and MHD stores no parameter. */
    if (q)
        ((char *)q)[1] = '\0';
    return &uri_marks[nul ? URI_NUL : URI_TOO_LONG];
}

/* MHD's unescape callback runs twice per query parameter (name, value)
 * and once for the path. More than that for QUERY_PARAMS_MAX means a query
 * framing_uri_check() could not find (a NUL byte, then what looks like the
 * version, inside the URI): MHD is about to run out of pool and hang, so
 * shut the socket down (MHD then closes it at once, with no answer). */
static void count_unescape(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
        c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_watch *w = ci ? ci->socket_context : NULL;
    if (w && ++w->unescapes == 2 * QUERY_PARAMS_MAX + 2) {
        shutdown(w->fd, SHUT_RDWR);
        tv_log(TV_LOG_INFO,
               "closed a connection whose request line hid "
               "more than %d query parameters behind a NUL byte",
               QUERY_PARAMS_MAX);
    }
}

typedef struct {
    const char *lo, *hi; /* the raw header block (raw_framing) */
    const char *end;     /* where the previous line's text ended */
    int raw;
    unsigned hosts, lengths, encodings;
    const char *te;  /* the first Transfer-Encoding value */
    const char *bad; /* why the request is refused (400), or NULL */
} framing_scan;

/* [from, to): the end of one line, or (lines 2) of the last header line
 * and the empty line. MHD turned each CRLF or LF there into NULs; anything
 * else was in the request behind a NUL in the line (MHD cut it there). */
static int line_end_ok(const char *from, const char *to, size_t lines)
{
    uintptr_t a = (uintptr_t)from, b = (uintptr_t)to;
    if (b < a + lines || b > a + 2 * lines)
        return 0;
    for (; from < to; from++)
        if (*from)
            return 0;
    return 1;
}

static int tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static enum MHD_Result framing_field(void *cls, enum MHD_ValueKind kind,
                                     const char *key, size_t klen,
                                     const char *val, size_t vlen)
{
    framing_scan *f = cls;
    (void)kind;
    if (f->raw) {
        uintptr_t k = (uintptr_t)key, v = (uintptr_t)val;
        if (!val || k < (uintptr_t)f->lo || v < k ||
            v + vlen > (uintptr_t)f->hi) {
            f->bad = "a header line continued on the next (obs-fold)";
            return MHD_NO;
        }
        if (!line_end_ok(f->end, key, 1)) {
            f->bad = "a NUL byte in a header line";
            return MHD_NO;
        }
        f->end = val + vlen;
    }
    if (!klen) {
        f->bad = "a header field with an empty name";
        return MHD_NO;
    }
    for (size_t i = 0; i < klen; i++)
        if (!tchar((unsigned char)key[i])) {
            f->bad = "a header field name with whitespace or another byte "
                     "that is not allowed (before the colon, or a line "
                     "starting with whitespace)";
            return MHD_NO;
        }
    if (val && memchr(val, '\r', vlen)) {
        f->bad = "a CR byte in a header value";
        return MHD_NO;
    }
    if (!strcasecmp(key, "Host"))
        f->hosts++;
    else if (!strcasecmp(key, "Content-Length"))
        f->lengths++;
    else if (!strcasecmp(key, "Transfer-Encoding") && !f->encodings++)
        f->te = val;
    return MHD_YES;
}

int framing_check(req_ctx *x, const char *method, const char *version,
                  tv_error *e)
{
    struct MHD_Connection *c = x->conn;
    int http10 = !strcmp(version, "HTTP/1.0");
    if (x->uri_verdict == URI_TOO_LONG)
        return tv_error_set(e, 414, "invalid_request",
                            "the request URI is over %d bytes or has more "
                            "than %d query parameters",
                            URI_MAX, QUERY_PARAMS_MAX);
    if (x->uri_verdict == URI_NUL)
        return tv_error_set(e, 400, "invalid_request",
                            "a NUL byte in the request line");
    framing_scan f = {.raw = x->s->raw_framing};
    if (f.raw) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
            c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        f.lo = method;
        f.hi = ci ? method + ci->header_size : method;
        f.end = version + strlen(version);
        f.raw = ci && (uintptr_t)f.end <= (uintptr_t)f.hi;
    }
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, framing_field, &f);
    if (!f.bad && f.raw && !line_end_ok(f.end, f.hi, 2))
        f.bad = "a NUL byte in a header line";
    if (f.bad)
        return tv_error_set(e, 400, "invalid_request", "bad framing: %s",
                            f.bad);
    if (f.hosts > 1 || (!f.hosts && !http10))
        return tv_error_set(e, 400, "invalid_request", "%s",
                            f.hosts ? "more than one Host header"
                                    : "an HTTP/1.1 request without "
                                      "Host");
    if (f.lengths > 1)
        return tv_error_set(e, 400, "invalid_request",
                            "more than one Content-Length header");
    if (!f.encodings)
        return 0;
    if (http10)
        return tv_error_set(e, 400, "invalid_request",
                            "Transfer-Encoding in an HTTP/1.0 request");
    if (f.lengths)
        return tv_error_set(e, 400, "invalid_request",
                            "both Content-Length and Transfer-Encoding");
    if (f.encodings > 1 || strcasecmp(f.te ? f.te : "", "chunked"))
        return tv_error_set(e, 501, "invalid_request",
                            "Transfer-Encoding must be exactly \"chunked\" "
                            "(the only coding supported)");
    return 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* MHD: percent-decoding of the path and query (as MHD's own, "%HH"),
 * except that "%00" stays as it is: a decoded NUL would end the C string
 * and hide what follows ("/tokens/1%00x" would read as "/tokens/1"), so
 * the parsers see the literal "%00" and reject it. Never lengthens s. */
size_t framing_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    count_unescape(c);
    char *w = s;
    for (const char *r = s; *r; r++) {
        int hi = r[0] == '%' ? hexval(r[1]) : -1;
        int lo = hi >= 0 ? hexval(r[2]) : -1; /* r[2] exists: r[1] != 0 */
        if (lo >= 0 && (hi | lo) != 0) {
            *w++ = (char)(hi << 4 | lo);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}
