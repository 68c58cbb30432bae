/* request_types.c -- the error setter and the request's init and free
 * (request_types.h), below every parser. Pure functions; any thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request_types.h"

int tv_error_set(tv_error *err, int status, const char *type, const char *fmt,
                 ...)
{
    va_list ap;
    err->status = status;
    err->type = type;
    err->param = NULL;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

void tv_request_init(tv_request *r)
{
    memset(r, 0, sizeof *r);
    r->positions = 1;
    r->normalize = -1;
    tv_text_opts_init(&r->text);
}

void tv_request_free(tv_request *r)
{
    free(r->ids);
    r->ids = NULL;
    for (int64_t i = 0; i < r->nrows; i++) {
        free(r->rows[i].text);
        free(r->rows[i].ids);
    }
    free(r->rows);
    r->rows = NULL;
    r->nrows = 0;
    free(r->targets);
    r->targets = NULL;
    free(r->lens);
    r->lens = NULL;
    free(r->offs);
    r->offs = NULL;
}

void tv_text_opts_init(tv_text_opts *o)
{
    memset(o, 0, sizeof *o);
    o->special = 1;
}
