/* body.c -- request bodies against the server-wide max_buffered_bytes
 * budget (body.h): the HTTP handler (http.c) grows a body's share as it
 * arrives; whoever is done with the body (the handler, or the /embed job
 * once it has parsed it) drops it. Below both: it calls neither.
 *
 * Threads: a body belongs to its request's owner (its HTTP thread, or the
 * /embed job while that runs); the budget (tv_server.buffered) is atomic.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "body.h"
#include "server.h"

/* Grows the body's share of the server-wide budget to `want` bytes. 0, or
 * -1 when the budget would be exceeded (nothing taken). Any HTTP thread. */
int http_body_reserve(req_ctx *x, size_t want)
{
    tv_server *s = x->s;
    if (want <= x->held)
        return 0;
    size_t more = want - x->held, max = (size_t)s->cfg->max_buffered_bytes;
    size_t cur = atomic_load(&s->buffered);
    do {
        if (cur > max || more > max - cur)
            return -1;
    } while (!atomic_compare_exchange_weak(&s->buffered, &cur, cur + more));
    x->held = want;
    return 0;
}

/* Frees the body and gives its share back (after parsing, or at the end). */
void http_body_drop(req_ctx *x)
{
    free(x->body);
    x->body = NULL;
    x->len = x->cap = 0;
    atomic_fetch_sub(&x->s->buffered, x->held);
    x->held = 0;
}
