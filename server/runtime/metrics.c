/* metrics.c -- counters, gauges and the request-duration histogram (see
 * metrics.h), rendered in the Prometheus text format (version 0.0.4).
 *
 * Families, always rendered with # HELP and # TYPE even when empty:
 *   tokvec_requests_total{route,code}         counter; a series appears
 *       once it is nonzero. code is one of the codes[] below or "other".
 *   tokvec_request_duration_seconds{route,le} histogram, per route (a
 *       route's series appear after its first request), cumulative
 *       _bucket, _sum (seconds), _count (= the +Inf bucket).
 *   tokvec_tokens_total, tokvec_response_bytes_total   counters
 *   tokvec_inflight_requests, tokvec_queue_depth,
 *   tokvec_inflight_reply_bytes                        gauges
 *   tokvec_jobs_total{where}, tokvec_job_phase_seconds_total{phase}
 *       counters: /embed jobs (worker|inline) and their time per phase
 *       (queue, work, resume)
 *   tokvec_reloads_total{result="ok"|"failed"}           counter (both)
 *   tokvec_table_info{vocab_size,dim,dtype,positional} 1  gauge, once a
 *       table was set.
 *
 * What must hold: the request path takes no lock -- every update is one
 * relaxed C11 atomic add on a fixed, statically allocated slot. Renders
 * read each slot once; the _count of a histogram is computed from the same
 * bucket snapshot, so buckets are cumulative and end at _count even while
 * other threads update (counters may move between families, never back).
 *
 * Threads: any thread may call any function. The table_info labels change
 * only at start and reload: they live in info_labels, guarded by info_lock,
 * which only tv_metrics_set_table and tv_metrics_render take.
 */
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* Every status tokvec answers (a new one must be added here). */
static const int codes[] = {200, 204, 400, 401, 403, 404, 405, 406, 408, 413,
                            414, 415, 422, 429, 499, 500, 501, 503, 504};
enum { NCODES = sizeof codes / sizeof codes[0] }; /* slot NCODES = other */

static const double bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                0.025,  0.05,  0.1,    0.25,  0.5,
                                1,      2.5,   5,      10};
static const char *const bound_names[] = {"0.0005", "0.001", "0.0025", "0.005",
                                          "0.01",   "0.025", "0.05",   "0.1",
                                          "0.25",   "0.5",   "1",      "2.5",
                                          "5",      "10"};
enum { NBOUNDS = sizeof bounds / sizeof bounds[0] }; /* slot NBOUNDS = +Inf */

static atomic_uint_fast64_t requests[TV_ROUTE_COUNT][NCODES + 1];
static atomic_uint_fast64_t buckets[TV_ROUTE_COUNT][NBOUNDS + 1];
static atomic_uint_fast64_t sum_ns[TV_ROUTE_COUNT];
static atomic_uint_fast64_t tokens_total, bytes_total, tokenized_total;
static atomic_int_fast64_t inflight;
static atomic_uint_fast64_t reloads_ok, reloads_failed;
static atomic_uint_fast64_t jobs_total[2], job_ns[3]; /* worker, inline;
                                                       * queue, work, resume */

static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;
static char info_labels[512]; /* guarded by info_lock; "" = no table yet */

#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

void tv_metrics_request(tv_route r, int status, double seconds,
                        uint64_t tokens, uint64_t bytes)
{
    assert(r >= 0 && r < TV_ROUTE_COUNT);
    int c = NCODES;
    for (int i = 0; i < NCODES; i++)
        if (codes[i] == status)
            c = i;
    ADD(requests[r][c], 1);

    if (!(seconds >= 0)) /* negative or NaN: a clock step */
        seconds = 0;
    if (seconds > 1e9)
        seconds = 1e9;
    int b = 0;
    while (b < NBOUNDS && seconds > bounds[b])
        b++;
    ADD(buckets[r][b], 1);
    ADD(sum_ns[r], (uint_fast64_t)llround(seconds * 1e9));
    ADD(tokens_total, tokens);
    ADD(bytes_total, bytes);
}

void tv_metrics_tokenized(uint64_t bytes)
{
    ADD(tokenized_total, bytes);
}

void tv_metrics_inflight_add(int delta)
{
    ADD(inflight, delta);
}

static uint_fast64_t to_ns(double s)
{
    return s >= 0 && s < 1e9 ? (uint_fast64_t)llround(s * 1e9) : 0;
}

void tv_metrics_job(int inline_, double queue, double work, double resume)
{
    ADD(jobs_total[inline_ != 0], 1);
    ADD(job_ns[0], to_ns(queue));
    ADD(job_ns[1], to_ns(work));
    ADD(job_ns[2], to_ns(resume));
}

void tv_metrics_reload(int ok)
{
    ADD(*(ok ? &reloads_ok : &reloads_failed), 1);
}

/* A label value with \, " and newline escaped, as the format requires. */
static void put_label(char *out, size_t len, size_t *pos, const char *v)
{
    for (; v && *v && *pos + 3 < len; v++) {
        if (*v == '\\' || *v == '"') {
            out[(*pos)++] = '\\';
            out[(*pos)++] = *v;
        } else if (*v == '\n') {
            out[(*pos)++] = '\\';
            out[(*pos)++] = 'n';
        } else {
            out[(*pos)++] = *v;
        }
    }
    out[*pos] = '\0';
}

void tv_metrics_set_table(int64_t vocab_size, int64_t dim, const char *dtype,
                          const char *positional)
{
    char buf[sizeof info_labels];
    size_t pos = (size_t)snprintf(buf, sizeof buf,
                                  "vocab_size=\"%lld\",dim=\"%lld\",dtype=\"",
                                  (long long)vocab_size, (long long)dim);
    put_label(buf, sizeof buf - 32, &pos, dtype);
    pos += (size_t)snprintf(buf + pos, sizeof buf - pos, "\",positional=\"");
    put_label(buf, sizeof buf - 2, &pos, positional);
    snprintf(buf + pos, sizeof buf - pos, "\"");
    pthread_mutex_lock(&info_lock);
    memcpy(info_labels, buf, sizeof buf);
    pthread_mutex_unlock(&info_lock);
}

static void family(FILE *f, const char *name, const char *type,
                   const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one sample with no labels. */
static void single(FILE *f, const char *name, const char *type,
                   const char *help, long long value)
{
    family(f, name, type, help);
    fprintf(f, "%s %lld\n", name, value);
}

char *tv_metrics_render(tv_pool *pool, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    char labels[sizeof info_labels];
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;

    family(f, "tokvec_requests_total", "counter",
           "Requests answered, by route and status code.");
    for (int r = 0; r < TV_ROUTE_COUNT; r++)
        for (int c = 0; c <= NCODES; c++) {
            uint_fast64_t v = LOAD(requests[r][c]);
            if (!v)
                continue;
            char code[8];
            snprintf(code, sizeof code, "%d", c < NCODES ? codes[c] : 0);
            fprintf(f,
                    "tokvec_requests_total{route=\"%s\",code=\"%s\"} %llu\n",
                    tv_route_name((tv_route)r), c < NCODES ? code : "other",
                    (unsigned long long)v);
        }

    family(f, "tokvec_request_duration_seconds", "histogram",
           "Time from a request's arrival to its last response byte "
           "queued, by route.");
    for (int r = 0; r < TV_ROUTE_COUNT; r++) {
        uint_fast64_t snap[NBOUNDS + 1], total = 0;
        for (int b = 0; b <= NBOUNDS; b++) {
            snap[b] = LOAD(buckets[r][b]);
            total += snap[b];
        }
        if (!total)
            continue;
        const char *route = tv_route_name((tv_route)r);
        uint_fast64_t cum = 0;
        for (int b = 0; b <= NBOUNDS; b++) {
            cum += snap[b];
            fprintf(f,
                    "tokvec_request_duration_seconds_bucket{route=\"%s\","
                    "le=\"%s\"} %llu\n",
                    route, b < NBOUNDS ? bound_names[b] : "+Inf",
                    (unsigned long long)cum);
        }
        fprintf(f, "tokvec_request_duration_seconds_sum{route=\"%s\"} %.9f\n",
                route, (double)LOAD(sum_ns[r]) / 1e9);
        fprintf(f,
                "tokvec_request_duration_seconds_count{route=\"%s\"} %llu\n",
                route, (unsigned long long)total);
    }

    single(f, "tokvec_tokens_total", "counter",
           "Token ids embedded (B*S of answered requests).",
           (long long)LOAD(tokens_total));
    single(f, "tokvec_response_bytes_total", "counter",
           "Response body bytes sent.", (long long)LOAD(bytes_total));
    single(f, "tokvec_tokenized_bytes_total", "counter",
           "Bytes of text tokenized (/tokenize and text inputs of /embed).",
           (long long)LOAD(tokenized_total));
    single(f, "tokvec_inflight_requests", "gauge",
           "Requests being served now.", (long long)LOAD(inflight));
    single(f, "tokvec_queue_depth", "gauge", "Jobs waiting for a worker.",
           (long long)(pool ? tv_pool_waiting(pool) : 0));
    single(f, "tokvec_inflight_reply_bytes", "gauge",
           "Bytes of max_inflight_bytes held now: replies being built or "
           "sent, every route but /health, /ready, /metrics.",
           (long long)(pool ? tv_pool_inflight(pool) : 0));
    family(f, "tokvec_jobs_total", "counter",
           "/embed jobs, by where they ran: worker (the pool) or inline "
           "(on the HTTP thread that parsed them: small jobs, and large "
           "raw/npy replies admitted at once, made as they are sent).");
    fprintf(f,
            "tokvec_jobs_total{where=\"worker\"} %llu\n"
            "tokvec_jobs_total{where=\"inline\"} %llu\n",
            (unsigned long long)LOAD(jobs_total[0]),
            (unsigned long long)LOAD(jobs_total[1]));
    family(f, "tokvec_job_phase_seconds_total", "counter",
           "Time /embed jobs spent per phase: queue (HTTP thread to "
           "worker, waiting included), work (lookup and encoding), resume "
           "(worker back to the HTTP thread).");
    static const char *const phases[3] = {"queue", "work", "resume"};
    for (int i = 0; i < 3; i++)
        fprintf(f, "tokvec_job_phase_seconds_total{phase=\"%s\"} %.9f\n",
                phases[i], (double)LOAD(job_ns[i]) / 1e9);
    family(f, "tokvec_reloads_total", "counter",
           "Table reloads (SIGHUP), by result.");
    fprintf(f,
            "tokvec_reloads_total{result=\"ok\"} %llu\n"
            "tokvec_reloads_total{result=\"failed\"} %llu\n",
            (unsigned long long)LOAD(reloads_ok),
            (unsigned long long)LOAD(reloads_failed));

    pthread_mutex_lock(&info_lock);
    memcpy(labels, info_labels, sizeof labels);
    pthread_mutex_unlock(&info_lock);
    family(f, "tokvec_table_info", "gauge",
           "The table being served; the value is always 1.");
    if (labels[0])
        fprintf(f, "tokvec_table_info{%s} 1\n", labels);

    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed) {
        free(buf);
        return NULL;
    }
    if (len)
        *len = size;
    return buf;
}
