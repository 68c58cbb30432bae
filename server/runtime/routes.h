/* routes.h -- the routes of the HTTP contract: which path is which route
 * (and the route's label in the metrics). Pure functions, any thread.
 * The route handlers themselves are private to the front end (server.h).
 */
#ifndef TV_ROUTES_H
#define TV_ROUTES_H

typedef enum {
    TV_ROUTE_EMBED,
    TV_ROUTE_TOKENS,
    TV_ROUTE_INFO,
    TV_ROUTE_HEALTH,
    TV_ROUTE_READY,
    TV_ROUTE_METRICS,
    TV_ROUTE_OPENAPI,
    TV_ROUTE_SIMILAR,
    TV_ROUTE_TOKENIZE,
    TV_ROUTE_DECODE,
    TV_ROUTE_PAGES,         /* /, /docs, /static/NAME (pages.h) */
    TV_ROUTE_V1_EMBEDDINGS, /* POST /v1/embeddings (OpenAI's) */
    TV_ROUTE_V1_MODELS,     /* GET /v1/models */
    TV_ROUTE_OTHER,         /* unknown paths (404) */
    TV_ROUTE_COUNT
} tv_route;

/* The route of a request path (after MHD's unescaping, without query). */
tv_route tv_route_of(const char *url);

const char *tv_route_name(tv_route r); /* "/embed", ... "other" */

/* Whether a path is under /v1/ (OpenAI's API): its errors, whatever
 * answers them, take OpenAI's shape (reply.c). */
int tv_route_is_v1(const char *path);

#endif
