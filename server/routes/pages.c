/* pages.c -- the playground, /docs and POST /similar (pages.h).
 *
 * Pages: the files of docs/playground/ are compiled in by the Makefile
 * (build/gen/pages_data.c: name, bytes, length); index.html answers "/",
 * docs.html "/docs", every other file "/static/NAME"; and
 * "/static/auth.json" says whether the server wants a key, so that the
 * page asks for it before its first keyed request instead of drawing a
 * 401. Responses point at static memory (MHD_RESPMEM_PERSISTENT) and
 * carry the CSP of pages.h, so a page can run only tokvec's own script
 * files.
 *
 * /similar: parsed on the HTTP thread (jansson, after a byte count that
 * bounds how many values jansson may build), scanned on a worker
 * (tokvec_similar_token/_vector), answered on the HTTP thread after the
 * worker resumed the connection. The call owns the query vector, the
 * neighbours and the JSON body; nothing is shared between calls but the
 * index, which is read-only once its norms exist (tokvec_similar.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pages.h"
#include "routes.h"
#include "tokvec_float.h"

/* build/gen/pages_data.c */
typedef struct tv_page_file {
    const char *name;
    const unsigned char *data;
    unsigned long len;
} tv_page_file;
extern const tv_page_file tv_page_files[];
extern const unsigned long tv_page_nfiles;

/* --- pages ------------------------------------------------------------- */

int tv_pages_match(const char *path)
{
    return tv_route_of(path) == TV_ROUTE_PAGES; /* the route table's */
}

static const char *content_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot && !strcmp(dot, ".html"))
        return "text/html; charset=utf-8";
    if (dot && !strcmp(dot, ".js"))
        return "text/javascript; charset=utf-8";
    if (dot && !strcmp(dot, ".css"))
        return "text/css; charset=utf-8";
    if (dot && !strcmp(dot, ".svg"))
        return "image/svg+xml";
    if (dot && !strcmp(dot, ".json"))
        return "application/json";
    return "application/octet-stream";
}

static struct MHD_Response *respond(const char *name, const void *data,
                                    size_t n, size_t *len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        n, (void *)data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return NULL;
    MHD_add_response_header(r, "Content-Type", content_type(name));
    MHD_add_response_header(r, "Content-Security-Policy", TV_PAGES_CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    *len = n;
    return r;
}

struct MHD_Response *tv_pages_response(const char *path, int keyed,
                                       size_t *len)
{
    static const char auth_on[] = "{\"api_key\":true}";
    static const char auth_off[] = "{\"api_key\":false}";
    const char *name = !strcmp(path, "/")              ? "index.html"
                       : !strcmp(path, "/docs")        ? "docs.html"
                       : !strncmp(path, "/static/", 8) ? path + 8
                                                       : NULL;
    /* The two pages are not files under /static/ (one URL each). */
    if (!name || (name == path + 8 && strstr(name, ".html")))
        return NULL;
    if (!strcmp(name, "auth.json"))
        return keyed ? respond(name, auth_on, sizeof auth_on - 1, len)
                     : respond(name, auth_off, sizeof auth_off - 1, len);
    for (unsigned long i = 0; i < tv_page_nfiles; i++) {
        const tv_page_file *f = &tv_page_files[i];
        if (!strcmp(f->name, name))
            return respond(name, f->data, f->len, len);
    }
    return NULL;
}

/* --- POST /similar ------------------------------------------------------ */

struct tv_similar_call {
    tv_job job; /* first: the pool hands it back */
    struct MHD_Connection *conn;
    tokvec_similar *idx;
    tv_similar_text_hook hook; /* text == NULL: none */
    int64_t vocab;             /* the table's */
    int64_t id;                /* -1: query by vector */
    float *vector;             /* dim values, or NULL */
    size_t k;
    tokvec_neighbor *out; /* k */
    char *body;           /* the JSON answer, after the job */
    size_t len;
    int rc;         /* the scan's: 0, or a negative code */
    tv_pool *pool;  /* the pool that runs it */
    size_t charged; /* bytes of body counted in max_inflight_bytes by
                     * the worker (tv_pool_charge), until taken */
};

/* More ',' '[' '{' bytes than a request for a vector of dim numbers
 * holds: refused before jansson builds one value per number. */
static int too_many_values(const char *body, size_t len, int64_t dim)
{
    size_t n = 0, max = (size_t)dim + 16;
    for (size_t i = 0; i < len; i++)
        if (body[i] == ',' || body[i] == '[' || body[i] == '{')
            if (++n > max)
                return 1;
    return 0;
}

static int parse_vector(json_t *v, int64_t dim, float **out, tv_error *e)
{
    if (!json_is_array(v))
        return tv_error_set(e, 400, "invalid_request",
                            "\"vector\" must be a list of numbers");
    size_t n = json_array_size(v);
    if ((int64_t)n != dim)
        return tv_error_set(e, 422, "dimension_mismatch",
                            "\"vector\" has %zu values; the table's dim is "
                            "%" PRId64,
                            n, dim);
    float *q = malloc(n * sizeof *q);
    if (!q)
        return tv_error_set(e, 500, "internal", "out of memory");
    double ss = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(v, i);
        double d = json_is_number(x) ? json_number_value(x) : NAN;
        if (!json_is_number(x) || !(fabs(d) <= FLT_MAX)) {
            free(q);
            return tv_error_set(e, 400, "invalid_request",
                                "\"vector\"[%zu] must be a number within "
                                "float32's range",
                                i);
        }
        q[i] = (float)d;
        ss += (double)q[i] * q[i];
    }
    if (ss == 0) {
        free(q);
        return tv_error_set(e, 400, "invalid_request",
                            "\"vector\" is all zeros: no direction to "
                            "compare with");
    }
    *out = q;
    return 0;
}

/* The keys of the object into c; 0 or -1 with *e. */
static int parse_keys(json_t *root, const tokvec_table_info *in,
                      tv_similar_call *c, tv_error *e)
{
    const char *key;
    json_t *v, *idv = NULL, *vecv = NULL;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "id"))
            idv = v;
        else if (!strcmp(key, "vector"))
            vecv = v;
        else if (!strcmp(key, "k")) {
            if (!json_is_integer(v))
                return tv_error_set(e, 400, "invalid_request",
                                    "\"k\" must be an integer");
            json_int_t k = json_integer_value(v);
            if (k < 1 || k > TV_SIMILAR_MAX_K)
                return tv_error_set(e, 422, "k_out_of_range",
                                    "\"k\" is %" JSON_INTEGER_FORMAT
                                    "; it must be 1 to %d",
                                    k, TV_SIMILAR_MAX_K);
            c->k = (size_t)k;
        } else
            return tv_error_set(e, 400, "invalid_request",
                                "unknown key \"%.64s\" (keys: id, vector, k)",
                                key);
    }
    if (!idv == !vecv)
        return tv_error_set(e, 400, "invalid_request",
                            "give exactly one of \"id\" and \"vector\"");
    if (idv) {
        if (!json_is_integer(idv))
            return tv_error_set(e, 400, "invalid_request",
                                "\"id\" must be an integer");
        json_int_t id = json_integer_value(idv);
        if (id < 0 || id >= in->vocab_size)
            return tv_error_set(e, 422, "token_out_of_range",
                                "token id %" JSON_INTEGER_FORMAT
                                " is out of range [0, %" PRId64 ")",
                                id, in->vocab_size);
        c->id = id;
        return 0;
    }
    return parse_vector(vecv, in->dim, &c->vector, e);
}

int tv_similar_parse(const char *body, size_t len, const tokvec_table *t,
                     tokvec_similar *idx, const tv_similar_text_hook *hook,
                     tv_similar_call **out, tv_error *e)
{
    const tokvec_table_info *in = tokvec_table_get_info(t);
    *out = NULL;
    if (too_many_values(body, len, in->dim))
        return tv_error_set(e, 413, "payload_too_large",
                            "body holds more JSON values than a vector of "
                            "%" PRId64 " numbers",
                            in->dim);
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return tv_error_set(e, 400, "invalid_json",
                            "body is not valid JSON: %.120s (line %d, "
                            "column %d)",
                            je.text, je.line, je.column);
    tv_similar_call *c = calloc(1, sizeof *c);
    int rc = -1;
    if (!c) {
        tv_error_set(e, 500, "internal", "out of memory");
        goto out;
    }
    c->id = -1;
    c->k = TV_SIMILAR_DEFAULT_K;
    if (!json_is_object(root)) {
        tv_error_set(e, 400, "invalid_request",
                     "body must be a JSON object: {\"id\": N} or "
                     "{\"vector\": [...]}, and optionally \"k\"");
        goto out;
    }
    if (parse_keys(root, in, c, e) < 0)
        goto out;
    c->out = malloc(c->k * sizeof *c->out);
    if (!c->out) {
        tv_error_set(e, 500, "internal", "out of memory");
        goto out;
    }
    c->idx = idx;
    c->vocab = in->vocab_size;
    if (hook)
        c->hook = *hook;
    *out = c;
    c = NULL;
    rc = 0;
out:
    json_decref(root);
    tv_similar_free(c);
    return rc;
}

/* Appends to the call's body; 0 or -1 (out of memory). */
static int put(tv_similar_call *c, size_t *cap, const char *s, size_t n)
{
    if (c->len + n + 1 > *cap) {
        size_t want = *cap ? *cap : 4096;
        while (want < c->len + n + 1)
            want *= 2;
        char *b = realloc(c->body, want);
        if (!b)
            return -1;
        c->body = b;
        *cap = want;
    }
    memcpy(c->body + c->len, s, n);
    c->len += n;
    c->body[c->len] = 0;
    return 0;
}

/* "text": the hook's text as a JSON string, or null. */
static int put_text(tv_similar_call *c, size_t *cap, int64_t id)
{
    char buf[1024];
    long n = c->hook.text ? c->hook.text(c->hook.ctx, id, buf, sizeof buf)
                          : -1;
    json_t *s = n >= 0 && (size_t)n <= sizeof buf
                    ? json_stringn(buf, (size_t)n)
                    : NULL; /* none, or not UTF-8 */
    char *j = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    json_decref(s);
    int rc = j ? put(c, cap, j, strlen(j)) : put(c, cap, "null", 4);
    free(j);
    return rc;
}

void tv_similar_run(tv_similar_call *c)
{
    c->rc = c->vector ? tokvec_similar_vector(c->idx, c->vector, c->k, c->out)
                      : tokvec_similar_token(c->idx, c->id, c->k, c->out);
    if (c->rc < 0)
        return;
    /* k past the vocabulary: the scan filled vocab_size entries */
    size_t n = c->k < (size_t)c->vocab ? c->k : (size_t)c->vocab, cap = 0;
    char item[96 + TOKVEC_F32_MAXLEN];
    if (put(c, &cap, "[", 1) < 0)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        int m = snprintf(item, sizeof item,
                         "%s{\"id\":%" PRId64 ",\"text\":", i ? "," : "",
                         c->out[i].id);
        if (put(c, &cap, item, (size_t)m) < 0 ||
            put_text(c, &cap, c->out[i].id) < 0)
            goto oom;
        m = snprintf(item, sizeof item, ",\"score\":");
        m += (int)tokvec_f32_format(c->out[i].score, item + m);
        item[m++] = '}';
        if (put(c, &cap, item, (size_t)m) < 0)
            goto oom;
    }
    if (put(c, &cap, "]", 1) < 0)
        goto oom;
    return;
oom:
    c->rc = -ENOMEM;
}

/* The answer counts in max_inflight_bytes before the worker takes its
 * next job. */
static void similar_work(tv_job *job)
{
    tv_similar_call *c = (tv_similar_call *)job;
    tv_similar_run(c);
    if (c->rc == 0 && c->body) {
        c->charged = c->len;
        tv_pool_charge(c->pool, c->charged);
    }
}

/* The worker (or the reaper, for an expired job): the connection's HTTP
 * thread takes over; nothing here touches the call afterwards. */
static void similar_done(tv_job *job)
{
    MHD_resume_connection(((tv_similar_call *)job)->conn);
}

int tv_similar_submit(tv_similar_call *c, tv_pool *pool,
                      struct MHD_Connection *conn)
{
    if (tv_pool_reserve(pool) < 0)
        return -1;
    c->conn = conn;
    c->pool = pool;
    c->job.work = similar_work;
    c->job.done = similar_done;
    c->job.bytes = 0; /* at most k entries: not counted */
    MHD_suspend_connection(conn);
    tv_pool_push(pool, &c->job);
    return 0;
}

int tv_similar_result(const tv_similar_call *c, const char **body, size_t *len,
                      tv_error *e)
{
    if (c->job.expired)
        return tv_error_set(e, 503, "overloaded",
                            "the request waited max_queue_wait in the "
                            "queue; retry");
    if (c->rc == TOKVEC_E_INVAL && c->id >= 0)
        return tv_error_set(e, 422, "row_not_finite",
                            "token %" PRId64 "'s row holds NaN or "
                            "infinity: it has no direction to compare",
                            c->id);
    if (c->rc < 0 || !c->body)
        return tv_error_set(e, 500, "internal",
                            "could not build the response");
    *body = c->body;
    *len = c->len;
    return 0;
}

char *tv_similar_take_body(tv_similar_call *c, size_t *charged)
{
    char *b = c->body;
    *charged = c->charged;
    c->body = NULL;
    c->charged = 0;
    return b;
}

void tv_similar_free(tv_similar_call *c)
{
    if (!c)
        return;
    if (c->charged)
        tv_pool_release(c->pool, c->charged);
    free(c->vector);
    free(c->out);
    free(c->body);
    free(c);
}
