/* routes.c -- the route table (routes.h) as plain data: which path is
 * which route, and each route's label in the metrics. It calls nothing:
 * the front end (http.c) dispatches on it, metrics.c labels by it,
 * pages.c asks it which paths are pages. The routes themselves:
 * get_routes.c (GET, answered at once), embed_job.c (POST /embed),
 * text.c, pages.c.
 *
 * Pure functions; any thread. Needs nothing of HTTP (the fuzz targets
 * link it with metrics.c).
 */
#include <assert.h>
#include <string.h>

#include "routes.h"

/* Every path of the contract; prefix: any path that starts with it (the
 * {id} of /tokens/{id}, the NAME of /static/NAME). First match wins. */
static const struct {
    const char *path;
    int prefix;
    tv_route route;
} table[] = {
    {"/embed", 0, TV_ROUTE_EMBED},
    {"/tokens/", 1, TV_ROUTE_TOKENS},
    {"/info", 0, TV_ROUTE_INFO},
    {"/health", 0, TV_ROUTE_HEALTH},
    {"/ready", 0, TV_ROUTE_READY},
    {"/metrics", 0, TV_ROUTE_METRICS},
    {"/openapi.json", 0, TV_ROUTE_OPENAPI},
    {"/similar", 0, TV_ROUTE_SIMILAR},
    {"/tokenize", 0, TV_ROUTE_TOKENIZE},
    {"/decode", 0, TV_ROUTE_DECODE},
    {"/v1/embeddings", 0, TV_ROUTE_V1_EMBEDDINGS},
    {"/v1/models", 0, TV_ROUTE_V1_MODELS},
    {"/", 0, TV_ROUTE_PAGES},
    {"/docs", 0, TV_ROUTE_PAGES},
    {"/static/", 1, TV_ROUTE_PAGES},
};

tv_route tv_route_of(const char *url)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const char *p = table[i].path;
        if (table[i].prefix ? !strncmp(url, p, strlen(p)) : !strcmp(url, p))
            return table[i].route;
    }
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
