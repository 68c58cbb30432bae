/* origin.h -- who may make tokvec do work (issue 24, finding 6): the Origin
 * check against cross-site requests and the Host check against DNS
 * rebinding, as pure functions of the header values and the settings.
 *
 * A web page a user opens may send "simple" requests (text/plain or form
 * bodies, which tokvec reads as JSON) to any address, including a tokvec
 * on the user's loopback without a key; the browser sends `Origin` with
 * every cross-origin POST. tokvec allows a request that has no Origin
 * (curl, SDKs), whose Origin's host[:port] is its Host (the page served at
 * / by tokvec itself, or by a TLS proxy: the scheme is not compared), or
 * whose Origin is listed in --cors-origin (a comma-separated list; "*"
 * allows every origin); every other one, `Origin: null` included, is
 * refused. A page that rebinds its own DNS name to 127.0.0.1 is "same
 * origin" by that rule, so a server listening on a loopback address also
 * refuses a Host that is not a loopback name or address.
 *
 * What must hold: no allocation but in tv_origins_parse; bounded work on
 * any header value. tv_origins is built once at start-up (main thread) and
 * read-only afterwards: any thread may read it.
 */
#ifndef TV_ORIGIN_H
#define TV_ORIGIN_H

#include <stddef.h>

/* --cors-origin, parsed: the listed origins, lower-cased ("scheme://host"
 * or "scheme://host:port"), and whether "*" was listed. n == 0 and !any:
 * CORS off (no list). */
typedef struct tv_origins {
    char **list;
    size_t n;
    int any;
} tv_origins;

/* Parses spec ("" = off; else comma-separated, spaces around an entry
 * ignored): each entry is "*" or scheme://host[:port] with no path, no
 * userinfo and no trailing '/' (an Origin header never has them, so such
 * an entry could never match). 0, or -1 with a one-line message naming
 * --cors-origin in err (or -ENOMEM: "out of memory"). out is zeroed first;
 * tv_origins_free is safe after any return. */
int tv_origins_parse(const char *spec, tv_origins *out, char *err,
                     size_t errlen);
void tv_origins_free(tv_origins *o);

/* CORS is on: --cors-origin lists something. */
static inline int tv_origins_on(const tv_origins *o)
{
    return o->any || o->n > 0;
}

typedef enum {
    TV_ORIGIN_ABSENT,  /* no Origin header: not a browser's cross-site call */
    TV_ORIGIN_SAME,    /* Origin's host[:port] is the Host header's */
    TV_ORIGIN_LISTED,  /* listed in --cors-origin (or "*" is) */
    TV_ORIGIN_REFUSED, /* anything else, "null" included */
} tv_origin_verdict;

/* The verdict on a request's Origin (NULL: none) given its Host (NULL:
 * none). *listed, when not NULL, is set to the matching entry of o (the
 * string the Access-Control-Allow-Origin header must carry: it equals the
 * Origin a browser sends, which is lower case), "*" when only "*" matched,
 * or NULL. Host and origin compare case-insensitively. */
tv_origin_verdict tv_origin_check(const tv_origins *o, const char *origin,
                                  const char *host, const char **listed);

/* Whether a Host header value names the loopback: "localhost", an IPv4
 * address in 127.0.0.0/8, "[::1]" (or an IPv4-mapped 127.x address in
 * brackets), each optionally followed by ":PORT" (1-5 digits). */
int tv_host_is_loopback(const char *host);

/* Whether --host (an IPv4 or IPv6 address, as listen.c takes it) is a
 * loopback address: 127.0.0.0/8, ::1, ::ffff:127.x.y.z. */
int tv_address_is_loopback(const char *addr);

#endif
