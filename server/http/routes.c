/* routes.c -- the route table (routes.h): which path is which route, and
 * each route's label in the metrics. The routes themselves: get_routes.c
 * (GET, answered at once), embed_job.c (POST /embed), http.c (dispatch).
 *
 * Pure functions; any thread. Needs nothing of HTTP (the fuzz targets
 * link it with metrics.c).
 */
#include <assert.h>
#include <string.h>

#include "pages.h"
#include "routes.h"

tv_route tv_route_of(const char *url)
{
    if (!strcmp(url, "/embed"))
        return TV_ROUTE_EMBED;
    if (!strncmp(url, "/tokens/", 8))
        return TV_ROUTE_TOKENS;
    if (!strcmp(url, "/info"))
        return TV_ROUTE_INFO;
    if (!strcmp(url, "/health"))
        return TV_ROUTE_HEALTH;
    if (!strcmp(url, "/ready"))
        return TV_ROUTE_READY;
    if (!strcmp(url, "/metrics"))
        return TV_ROUTE_METRICS;
    if (!strcmp(url, "/openapi.json"))
        return TV_ROUTE_OPENAPI;
    if (!strcmp(url, "/similar"))
        return TV_ROUTE_SIMILAR;
    if (!strcmp(url, "/tokenize"))
        return TV_ROUTE_TOKENIZE;
    if (!strcmp(url, "/decode"))
        return TV_ROUTE_DECODE;
    if (!strcmp(url, "/v1/embeddings"))
        return TV_ROUTE_V1_EMBEDDINGS;
    if (!strcmp(url, "/v1/models"))
        return TV_ROUTE_V1_MODELS;
    if (tv_pages_match(url))
        return TV_ROUTE_PAGES;
    return TV_ROUTE_OTHER;
}

const char *tv_route_name(tv_route r)
{
    static const char *const names[TV_ROUTE_COUNT] = {
        [TV_ROUTE_EMBED] = "/embed",
        [TV_ROUTE_TOKENS] = "/tokens",
        [TV_ROUTE_INFO] = "/info",
        [TV_ROUTE_HEALTH] = "/health",
        [TV_ROUTE_READY] = "/ready",
        [TV_ROUTE_METRICS] = "/metrics",
        [TV_ROUTE_OPENAPI] = "/openapi.json",
        [TV_ROUTE_OTHER] = "other",
        [TV_ROUTE_SIMILAR] = "/similar",
        [TV_ROUTE_PAGES] = "pages",
        [TV_ROUTE_TOKENIZE] = "/tokenize",
        [TV_ROUTE_DECODE] = "/decode",
        [TV_ROUTE_V1_EMBEDDINGS] = "/v1/embeddings",
        [TV_ROUTE_V1_MODELS] = "/v1/models",
    };
    assert(r >= 0 && r < TV_ROUTE_COUNT);
    return names[r];
}

int tv_route_is_v1(const char *path)
{
    return !strncmp(path, "/v1/", 4) || !strcmp(path, "/v1");
}
