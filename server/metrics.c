/* metrics.c -- counters and the duration histogram (metrics.h), rendered
 * as Prometheus text. Every update is a relaxed atomic add: no lock on the
 * request path. The table_info labels change only at start and reload and
 * are guarded by info_lock (set and render only).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static const int codes[] = {200, 400, 401, 404, 405, 406, 413,
                            415, 422, 429, 500, 503, 0 /* other */};
#define NCODES (sizeof codes / sizeof codes[0])
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                 0.025,  0.05,  0.1,    0.25,  0.5,
                                 1,      2.5,   5,      10};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])

static atomic_ullong requests[TV_ROUTE_COUNT][NCODES];
static atomic_ullong hist[NBUCKETS + 1]; /* per bucket, not cumulative */
static atomic_ullong hist_sum_us, hist_count;
static atomic_ullong tokens_total, bytes_total;
static atomic_llong inflight, queue_depth;
static atomic_ullong reloads_ok, reloads_failed;

static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;
static char info_labels[256]; /* guarded by info_lock */

const char *tv_route_name(tv_route r)
{
    static const char *const n[] = {"/embed",  "/tokens", "/info",
                                    "/health", "/ready",  "/metrics",
                                    "/openapi.json", "other"};
    return r < TV_ROUTE_COUNT ? n[r] : "other";
}

void tv_metrics_request(tv_route r, int status, double seconds,
                        uint64_t tokens, uint64_t bytes)
{
    size_t c = NCODES - 1;
    for (size_t i = 0; i + 1 < NCODES; i++)
        if (codes[i] == status)
            c = i;
    if (r >= TV_ROUTE_COUNT)
        r = TV_ROUTE_OTHER;
    atomic_fetch_add_explicit(&requests[r][c], 1, memory_order_relaxed);
    size_t b = 0;
    while (b < NBUCKETS && seconds > buckets[b])
        b++;
    atomic_fetch_add_explicit(&hist[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&hist_sum_us,
                              (unsigned long long)(seconds * 1e6),
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&hist_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&tokens_total, tokens, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes_total, bytes, memory_order_relaxed);
}

void tv_metrics_inflight_add(int d)
{
    atomic_fetch_add_explicit(&inflight, d, memory_order_relaxed);
}

void tv_metrics_queue_add(int d)
{
    atomic_fetch_add_explicit(&queue_depth, d, memory_order_relaxed);
}

void tv_metrics_reload(int ok)
{
    atomic_fetch_add_explicit(ok ? &reloads_ok : &reloads_failed, 1,
                              memory_order_relaxed);
}

void tv_metrics_set_table(int64_t vocab_size, int64_t dim, const char *dtype,
                          const char *positional)
{
    pthread_mutex_lock(&info_lock);
    snprintf(info_labels, sizeof info_labels,
             "vocab_size=\"%lld\",dim=\"%lld\",dtype=\"%s\","
             "positional=\"%s\"",
             (long long)vocab_size, (long long)dim, dtype, positional);
    pthread_mutex_unlock(&info_lock);
}

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

char *tv_metrics_render(size_t *len)
{
    char *buf = NULL;
    size_t cap = 0;
    FILE *f = open_memstream(&buf, &cap);
    if (!f)
        return NULL;
    fputs("# HELP tokvec_requests_total Requests answered, by route and "
          "status.\n# TYPE tokvec_requests_total counter\n", f);
    for (int r = 0; r < TV_ROUTE_COUNT; r++)
        for (size_t c = 0; c < NCODES; c++) {
            unsigned long long v = LOAD(requests[r][c]);
            if (!v)
                continue;
            if (codes[c])
                fprintf(f, "tokvec_requests_total{route=\"%s\",code=\"%d\"}"
                           " %llu\n", tv_route_name((tv_route)r), codes[c], v);
            else
                fprintf(f, "tokvec_requests_total{route=\"%s\",code="
                           "\"other\"} %llu\n", tv_route_name((tv_route)r),
                        v);
        }
    fputs("# HELP tokvec_request_duration_seconds Time from request to "
          "response.\n# TYPE tokvec_request_duration_seconds histogram\n", f);
    unsigned long long cum = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
        cum += LOAD(hist[b]);
        fprintf(f, "tokvec_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
                buckets[b], cum);
    }
    cum += LOAD(hist[NBUCKETS]);
    fprintf(f, "tokvec_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
            cum);
    fprintf(f, "tokvec_request_duration_seconds_sum %.6f\n",
            (double)LOAD(hist_sum_us) / 1e6);
    fprintf(f, "tokvec_request_duration_seconds_count %llu\n",
            LOAD(hist_count));
    fprintf(f, "# HELP tokvec_tokens_total Tokens embedded.\n"
               "# TYPE tokvec_tokens_total counter\n"
               "tokvec_tokens_total %llu\n", LOAD(tokens_total));
    fprintf(f, "# HELP tokvec_response_bytes_total Response body bytes.\n"
               "# TYPE tokvec_response_bytes_total counter\n"
               "tokvec_response_bytes_total %llu\n", LOAD(bytes_total));
    fprintf(f, "# HELP tokvec_inflight_requests Requests being served.\n"
               "# TYPE tokvec_inflight_requests gauge\n"
               "tokvec_inflight_requests %lld\n", LOAD(inflight));
    fprintf(f, "# HELP tokvec_queue_depth Jobs waiting for a worker.\n"
               "# TYPE tokvec_queue_depth gauge\n"
               "tokvec_queue_depth %lld\n", LOAD(queue_depth));
    fprintf(f, "# HELP tokvec_reloads_total Table reloads (SIGHUP).\n"
               "# TYPE tokvec_reloads_total counter\n"
               "tokvec_reloads_total{result=\"ok\"} %llu\n"
               "tokvec_reloads_total{result=\"failed\"} %llu\n",
            LOAD(reloads_ok), LOAD(reloads_failed));
    pthread_mutex_lock(&info_lock);
    fprintf(f, "# HELP tokvec_table_info The table being served.\n"
               "# TYPE tokvec_table_info gauge\n"
               "tokvec_table_info{%s} 1\n", info_labels);
    pthread_mutex_unlock(&info_lock);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    *len = cap;
    return buf;
}
