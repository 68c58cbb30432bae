/* origin.c -- the Origin and Host checks (origin.h): parsing --cors-origin,
 * the verdict on a request's Origin, and whether a Host header or the
 * listening address is the loopback.
 *
 * What must hold: every header value is read once, front to back, with no
 * allocation (a Host is at most what libmicrohttpd's header pool holds);
 * a list entry is stored lower-cased, since browsers send the scheme and
 * host of Origin in lower case and Access-Control-Allow-Origin must equal
 * the Origin byte for byte.
 *
 * Threads: tv_origins_parse and _free on the main thread (start and stop);
 * the rest are pure: any thread.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "origin.h"

/* 1 when s[0..n) is 1-5 decimal digits (a port). */
static int port_digits(const char *s, size_t n)
{
    if (n < 1 || n > 5)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* Whether e[0..n) is scheme://host[:port]: a scheme (a letter, then
 * letters, digits, '+', '-', '.'), "://", then a host of visible ASCII
 * without '/', '?', '#', '@', '\\' or ',' -- a name, an IPv4 address or
 * a bracketed IPv6 one -- and at most one ":PORT" after it. */
static int origin_syntax(const char *e, size_t n)
{
    size_t i = 0;
    if (!n || !isalpha((unsigned char)e[0]))
        return 0;
    while (i < n && (isalnum((unsigned char)e[i]) || e[i] == '+' ||
                     e[i] == '-' || e[i] == '.'))
        i++;
    if (n - i < 4 || memcmp(e + i, "://", 3))
        return 0;
    const char *h = e + i + 3;
    size_t hn = n - i - 3;
    for (size_t k = 0; k < hn; k++)
        if (h[k] <= 0x20 || h[k] >= 0x7f || strchr("/?#@\\,", h[k]))
            return 0;
    size_t end = 0; /* where the host ends */
    if (h[0] == '[') {
        const char *rb = memchr(h, ']', hn);
        if (!rb || rb == h + 1)
            return 0;
        end = (size_t)(rb - h) + 1;
    } else {
        while (end < hn && h[end] != ':')
            end++;
        if (end == 0)
            return 0;
    }
    if (end == hn)
        return 1;
    return h[end] == ':' && port_digits(h + end + 1, hn - end - 1);
}

void tv_origins_free(tv_origins *o)
{
    for (size_t i = 0; o->list && i < o->n; i++)
        free(o->list[i]);
    free(o->list);
    o->list = NULL;
    o->n = 0;
    o->any = 0;
}

int tv_origins_parse(const char *spec, tv_origins *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!spec || !*spec)
        return 0;
    size_t entries = 1;
    for (const char *p = spec; *p; p++)
        entries += *p == ',';
    out->list = calloc(entries, sizeof *out->list);
    if (!out->list) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (const char *p = spec;;) {
        size_t n = strcspn(p, ",");
        const char *e = p, *next = p[n] ? p + n + 1 : NULL;
        while (n && (*e == ' ' || *e == '\t')) {
            e++;
            n--;
        }
        while (n && (e[n - 1] == ' ' || e[n - 1] == '\t'))
            n--;
        if (n == 1 && *e == '*') {
            out->any = 1;
        } else if (!origin_syntax(e, n)) {
            snprintf(err, errlen,
                     "--cors-origin: '%.*s' is not an origin: give "
                     "scheme://host[:port] (no path, no trailing '/'), "
                     "several separated by commas, or * for any",
                     (int)(n > 200 ? 200 : n), e);
            tv_origins_free(out);
            return -1;
        } else {
            char *c = malloc(n + 1);
            if (!c) {
                tv_origins_free(out);
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
            }
            for (size_t i = 0; i < n; i++)
                c[i] = (char)tolower((unsigned char)e[i]);
            c[n] = '\0';
            out->list[out->n++] = c;
        }
        if (!next)
            break;
        p = next;
    }
    return 0;
}

tv_origin_verdict tv_origin_check(const tv_origins *o, const char *origin,
                                  const char *host, const char **listed)
{
    const char *match = NULL;
    tv_origin_verdict v = TV_ORIGIN_REFUSED;
    if (!origin) {
        v = TV_ORIGIN_ABSENT;
    } else {
        for (size_t i = 0; i < o->n && !match; i++)
            if (!strcasecmp(origin, o->list[i]))
                match = o->list[i];
        if (!match && o->any)
            match = "*";
        const char *sep = strstr(origin, "://");
        if (sep && host && *host && !strcasecmp(sep + 3, host))
            v = TV_ORIGIN_SAME;
        else if (match)
            v = TV_ORIGIN_LISTED;
    }
    if (listed)
        *listed = match;
    return v;
}

/* Whether a[0..n) is an IPv4 or IPv6 loopback address (v6: without the
 * brackets). */
static int loopback_literal(const char *a, size_t n, int v6)
{
    char buf[INET6_ADDRSTRLEN + 1];
    unsigned char b[sizeof(struct in6_addr)];
    static const unsigned char one[16] = {[15] = 1};
    static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
    if (n >= sizeof buf)
        return 0;
    memcpy(buf, a, n);
    buf[n] = '\0';
    if (!v6)
        return inet_pton(AF_INET, buf, b) == 1 && b[0] == 127;
    if (inet_pton(AF_INET6, buf, b) != 1)
        return 0;
    return !memcmp(b, one, 16) || (!memcmp(b, mapped, 12) && b[12] == 127);
}

int tv_host_is_loopback(const char *host)
{
    if (!host || !*host)
        return 0;
    size_t n = strlen(host), end;
    if (host[0] == '[') {
        const char *rb = strchr(host, ']');
        if (!rb)
            return 0;
        end = (size_t)(rb - host) + 1;
        if (!loopback_literal(host + 1, end - 2, 1))
            return 0;
    } else {
        end = strcspn(host, ":");
        if (!(end == 9 && !strncasecmp(host, "localhost", 9)) &&
            !loopback_literal(host, end, 0))
            return 0;
    }
    if (end == n)
        return 1;
    return host[end] == ':' && port_digits(host + end + 1, n - end - 1);
}

int tv_address_is_loopback(const char *addr)
{
    if (!addr)
        return 0;
    return loopback_literal(addr, strlen(addr), strchr(addr, ':') != NULL);
}
