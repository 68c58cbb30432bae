/* body.h -- request bodies and the max_buffered_bytes budget (body.c).
 */
#ifndef TV_BODY_H
#define TV_BODY_H

#include <stddef.h>

struct req_ctx;

/* Grows the body's share of the server-wide budget to `want` bytes. 0, or
 * -1 when the budget would be exceeded (nothing taken). Any HTTP thread. */
int http_body_reserve(struct req_ctx *x, size_t want);

/* Frees the body and gives its share back (after parsing, or at the end). */
void http_body_drop(struct req_ctx *x);

#endif
