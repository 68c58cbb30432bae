/* framing.h -- private to the HTTP front end: the RFC 9112 framing and
 * URI checks made before any body is read. See framing.c.
 */
#ifndef TV_FRAMING_H
#define TV_FRAMING_H

#include <microhttpd.h>
#include <stddef.h>

#include "request.h"

typedef struct req_ctx req_ctx;

#define URI_MAX 8192        /* bytes, as nginx's large_client_header_buffers */
#define QUERY_PARAMS_MAX 64 /* a valid request uses a handful */

/* framing_uri_check's verdict on a request line. */
enum { URI_OK, URI_TOO_LONG, URI_NUL };

/* MHD: MHD_OPTION_URI_LOG_CALLBACK. Returns the request's first *con_cls:
 * NULL, or a mark (framing_uri_mark) carrying a verdict other than URI_OK
 * that makes the first call refuse the request. */
void *framing_uri_check(void *cls, const char *uri, struct MHD_Connection *c);

/* p (a request's *con_cls) is a mark of framing_uri_check; its verdict. */
int framing_uri_mark(const void *p);
int framing_uri_verdict(const void *p);

/* MHD: MHD_OPTION_UNESCAPE_CALLBACK (percent-decoding that keeps "%00"). */
size_t framing_unescape(void *cls, struct MHD_Connection *c, char *s);

/* The handler's first call: 0 if the request's framing is fine, else -1
 * with the answer in e (the connection is then closed after it). */
int framing_check(req_ctx *x, const char *method, const char *version,
                  tv_error *e);

#endif
