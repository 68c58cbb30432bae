/* test_embed_job.c -- server/routes/embed_job.c: the plan (every size of a
 * reply from one function: JSON reserves its scratch rows and the JSON bound,
 * torch the rows in its dtype, one archive and its bound,
 * binary the npy header and the rows in the output dtype, npz the archive
 * with the rows inside it, sizes that do not fit are refused), a reply
 * exactly as large as planned, a large binary reply made in chunks of any
 * size joining into the same bytes, and
 * allocation failures at every allocation of the request path: each is
 * answered 500 (or the connection closed, where no answer can be built),
 * the server keeps serving, and nothing is left reserved (nor leaked:
 * `make sanitize-test` runs this under ASan with leak checks).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdatomic.h>

#include "alloc.h"
#include "server_fixture.h"
#include "npz.h"
#include "tokvec_embed.h"
#include "torchsave.h"

#define RESP 65536

static int teardown(void **state)
{
    tv_alloc_fault = NULL;
    return fx_teardown(state);
}

static tokvec_table *open_fixture_table(fixture *f)
{
    tokvec_table *t = NULL;
    assert_int_equal(fx_init(f), 0);
    assert_int_equal(tokvec_table_open(f->table, NULL, &t), 0);
    return t;
}

static tv_request request(int64_t B, int64_t S)
{
    tv_request q;
    tv_request_init(&q);
    q.batch = B;
    q.seq = S;
    return q;
}

static void json_plan_reserves_scratch_rows_and_the_json_bound(void **state)
{
    tokvec_table *t = open_fixture_table(*state);
    tv_request q = request(2, 3);
    embed_plan p;
    for (int b64 = 0; b64 < 2; b64++) {
        q.base64 = b64;
        assert_int_equal(
            embed_plan_reply(t, &q, (tv_format){TV_OUT_JSON, TOKVEC_F32}, &p),
            0);
        assert_int_equal(p.rows, 2 * 3 * FX_DIM * 4);
        assert_int_equal(p.scratch, p.rows);
        assert_int_equal(p.header, 0);
        assert_int_equal(p.body, tv_embed_json_bound(2, 3, FX_DIM, b64));
        assert_int_equal(p.reserve, p.scratch + p.body);
        assert_int_equal(p.flags, 0);
    }
    tokvec_table_close(t);
}

static void binary_plan_is_the_npy_header_and_rows_in_the_output_dtype(
    void **state)
{
    tokvec_table *t = open_fixture_table(*state);
    tv_request q = request(2, 3);
    embed_plan p;
    char npy[TV_NPY_HEADER_MAX];
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_NPY, TOKVEC_F16}, &p), 0);
    assert_int_equal(p.rows, 2 * 3 * FX_DIM * 2);
    assert_int_equal(p.header, tv_npy_header(npy, TOKVEC_F16, 2, 3, FX_DIM));
    assert_int_equal(p.body, p.header + p.rows);
    assert_int_equal(p.scratch, 0);
    assert_int_equal(p.reserve, p.body);
    assert_int_equal(p.flags, TOKVEC_EMBED_OUT_F16);
    /* raw: no header; bfloat16 is two bytes too */
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_RAW, TOKVEC_BF16}, &p), 0);
    assert_int_equal(p.header, 0);
    assert_int_equal(p.body, 2 * 3 * FX_DIM * 2);
    assert_int_equal(p.flags, TOKVEC_EMBED_OUT_BF16);
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_RAW, TOKVEC_F32}, &p), 0);
    assert_int_equal(p.reserve, 2 * 3 * FX_DIM * 4);
    tokvec_table_close(t);
}

static void positions_false_is_planned_as_token_rows_only(void **state)
{
    tokvec_table *t = open_fixture_table(*state);
    tv_request q = request(1, 1);
    q.positions = 0;
    embed_plan p;
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_RAW, TOKVEC_F32}, &p), 0);
    assert_int_equal(p.flags, TOKVEC_EMBED_NO_POSITIONS);
    tokvec_table_close(t);
}

static void sizes_that_do_not_fit_are_refused(void **state)
{
    tokvec_table *t = open_fixture_table(*state);
    embed_plan p;
    tv_request q = request(INT64_MAX / 2, 4);
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_RAW, TOKVEC_F32}, &p), -1);
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_JSON, TOKVEC_F32}, &p), -1);
    q = request((int64_t)(SIZE_MAX / 8 / FX_DIM), 1); /* rows fit, JSON not */
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_JSON, TOKVEC_F32}, &p), -1);
    tokvec_table_close(t);
}

static void torch_plan_is_rows_in_the_dtype_one_archive_and_the_bound(
    void **state)
{
    tokvec_table *t = open_fixture_table(*state);
    tv_request q = request(2, 3);
    q.torch = 1;
    embed_plan p;
    static const tokvec_dtype dts[] = {TOKVEC_F32, TOKVEC_F16, TOKVEC_BF16};
    static const unsigned flags[] = {0, TOKVEC_EMBED_OUT_F16,
                                     TOKVEC_EMBED_OUT_BF16};
    for (int i = 0; i < 3; i++) {
        tv_torchsave_layout l;
        size_t el = dts[i] == TOKVEC_F32 ? 4 : 2;
        assert_int_equal(
            embed_plan_reply(t, &q, (tv_format){TV_OUT_JSON, dts[i]}, &p), 0);
        assert_int_equal(tv_torchsave_plan(3, FX_DIM, dts[i], &l), 0);
        assert_int_equal(p.flags, flags[i]);
        assert_int_equal(p.rows, 2 * 3 * FX_DIM * el);
        assert_int_equal(p.archive, l.size);
        assert_int_equal(p.scratch, (p.rows + 63) / 64 * 64 + l.size);
        assert_int_equal(p.body,
                         tv_embed_torch_json_bound(2, 3, FX_DIM, dts[i]));
        assert_int_equal(p.reserve, p.scratch + p.body);
    }
    /* an archive of 4 GiB or more: refused */
    q = request(1, ((int64_t)1 << 32) / FX_DIM / 4);
    q.torch = 1;
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_JSON, TOKVEC_F32}, &p), -1);
    tokvec_table_close(t);
}

static void npz_plan_is_the_archive_with_the_rows_in_place(void **state)
{
    tokvec_table *t = open_fixture_table(*state);
    tv_request q = request(2, 3);
    int64_t lens[2] = {3, 2};
    embed_plan p;
    tv_npz z;
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_NPZ, TOKVEC_BF16}, &p), 0);
    assert_int_equal(tv_npz_plan(&q, 3, FX_DIM, TOKVEC_BF16, &z), 0);
    assert_int_equal(z.zip.n, 1);
    assert_int_equal(p.flags, TOKVEC_EMBED_OUT_BF16);
    assert_int_equal(p.rows, 2 * 3 * FX_DIM * 2);
    assert_int_equal(p.header, z.rows);
    assert_int_equal(p.header % 64, 0);
    assert_int_equal(p.body, z.zip.size);
    assert_int_equal(p.scratch, 0);
    assert_int_equal(p.reserve, p.body);
    assert_int_equal(p.least, p.body);
    /* a padded batch: the mask is a member too */
    q.lens = lens;
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_NPZ, TOKVEC_F32}, &p), 0);
    assert_int_equal(tv_npz_plan(&q, 3, FX_DIM, TOKVEC_F32, &z), 0);
    assert_int_equal(z.zip.n, 2);
    assert_int_equal(p.body, z.zip.size);
    /* ... and JSON answers carry it: 2 x 3 digits, commas, brackets */
    embed_plan j;
    tv_request u = request(2, 3);
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_JSON, TOKVEC_F32}, &p), 0);
    assert_int_equal(
        embed_plan_reply(t, &u, (tv_format){TV_OUT_JSON, TOKVEC_F32}, &j), 0);
    assert_true(p.body >= j.body + strlen(",\"attention_mask\":[[1,1,1],"
                                          "[1,1,0]]"));
    /* an archive of 4 GiB or more: 413 (no ZIP64) */
    q = request(1, ((int64_t)1 << 32) / FX_DIM / 4);
    assert_int_equal(
        embed_plan_reply(t, &q, (tv_format){TV_OUT_NPZ, TOKVEC_F32}, &p), -1);
    tokvec_table_close(t);
}

static size_t content_length(const char *resp)
{
    const char *cl = strcasestr(resp, "\r\nContent-Length:");
    return cl ? (size_t)strtoull(cl + 17, NULL, 10) : (size_t)-1;
}

static void a_binary_reply_is_exactly_the_planned_body(void **state)
{
    fixture *f = *state;
    char r[RESP], npy[TV_NPY_HEADER_MAX];
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_http(f, "POST", "/embed?dtype=float16",
                             "application/json", "{\"inputs\":[[1,2,3]]}",
                             "Accept: application/x-npy\r\n", r, RESP),
                     200);
    size_t header = tv_npy_header(npy, TOKVEC_F16, 1, 3, FX_DIM);
    assert_int_equal(content_length(r), header + 3 * FX_DIM * 2);
    assert_true(fx_has_header(r, "X-Tokvec-Shape", "1,3,4"));
    assert_true(fx_has_header(r, "X-Tokvec-Dtype", "float16"));
    assert_memory_equal(fx_body(r), npy, header);
}

static void an_npz_reply_is_exactly_the_planned_archive(void **state)
{
    fixture *f = *state;
    char r[RESP];
    int64_t ids[6] = {1, 2, 3, 4, 0, 0}, lens[2] = {3, 1};
    tv_request q = request(2, 3);
    q.ids = ids;
    q.lens = lens;
    tv_npz z;
    assert_int_equal(tv_npz_plan(&q, 3, FX_DIM, TOKVEC_F16, &z), 0);
    assert_int_equal(fx_up(f, NULL), 0);
    assert_int_equal(fx_http(f, "POST", "/embed?dtype=float16",
                             "application/json",
                             "{\"inputs\":[[1,2,3],[4]],\"pad_id\":0,"
                             "\"encoding_format\":\"npz\"}",
                             NULL, r, RESP),
                     200);
    assert_int_equal(content_length(r), z.zip.size);
    assert_true(fx_has_header(r, "Content-Type", "application/x-npz"));
    assert_true(fx_has_header(r, "X-Tokvec-Shape", "2,3,4"));
    assert_true(fx_has_header(r, "X-Tokvec-Dtype", "float16"));
    assert_memory_equal(fx_body(r), "PK\3\4", 4);
    /* an Accept that names a type wins over "encoding_format" */
    assert_int_equal(fx_http(f, "POST", "/embed", "application/json",
                             "{\"inputs\":[[1,2,3],[4]],\"pad_id\":0,"
                             "\"encoding_format\":\"npz\"}",
                             "Accept: application/json\r\n", r, RESP),
                     200);
    assert_true(fx_has_header(r, "Content-Type", "application/json"));
    assert_non_null(
        strstr(fx_body(r), ",\"attention_mask\":[[1,1,1],[1,0,0]]}"));
}

static atomic_long allow; /* allocations left before the hook fails one */

static int fail_when_spent(size_t n)
{
    (void)n;
    return atomic_fetch_sub(&allow, 1) <= 0;
}

/* Nothing of max_inflight_bytes is held: a job of all of it fits. */
static int budget_is_whole(fixture *f)
{
    size_t all = (size_t)f->cfg.max_inflight_bytes;
    if (!tv_pool_try_inline(f->srv->pool, all))
        return 0;
    tv_pool_inline_done(f->srv->pool);
    tv_pool_release(f->srv->pool, all);
    return 1;
}

typedef struct {
    const char *method, *path, *ctype, *body, *headers;
    size_t blen; /* 0: strlen(body) */
} http_req;

/* The Nth allocation of one request fails, for N = 0, 1, ... until the
 * request succeeds: each failure is a 500 or a closed connection, and
 * afterwards the server answers, holds no request and no reserved bytes.
 * Returns how many failures answered 500. */
static int fail_each_allocation(fixture *f, const http_req *q)
{
    char r[RESP];
    int answered_500 = 0, n;
    for (n = 0; n < 64; n++) {
        atomic_store(&allow, n);
        tv_alloc_fault = fail_when_spent;
        size_t blen = q->blen ? q->blen : q->body ? strlen(q->body) : 0;
        int st = fx_http_n(f, q->method, q->path, q->ctype, q->body, blen,
                           q->headers, r, RESP);
        tv_alloc_fault = NULL;
        assert_int_equal(fx_idle(f), 0);
        if (st == 200)
            break;
        if (st != 0 && st != 500)
            fail_msg("%s %s, allocation %d failing: status %d", q->method,
                     q->path, n, st);
        answered_500 += st == 500;
        if (st == 500)
            assert_non_null(strstr(fx_body(r), "\"error_type\":\"internal\""));
        assert_int_equal(fx_get(f, "/health", r, RESP), 200);
        assert_true(budget_is_whole(f));
    }
    assert_true(n < 64);
    assert_true(budget_is_whole(f));
    return answered_500;
}

static void each_failed_allocation_on_the_request_path_is_a_500(void **state)
{
    fixture *f = *state;
    assert_int_equal(fx_up(f, NULL), 0);
    static const http_req reqs[] = {
        {"POST", "/embed", "application/json", "{\"inputs\":[[1,2],[3,4]]}",
         NULL, 0},
        {"POST", "/embed", "application/json",
         "{\"inputs\":[[1,2],[3]],\"pad_id\":0,\"encoding_format\":\"base64\""
         "}",
         NULL, 0},
        {"POST", "/embed?dtype=bfloat16", "application/json",
         "{\"inputs\":[5,6,7]}", "Accept: application/x-npy\r\n", 0},
        {"POST", "/embed", "application/json",
         "{\"inputs\":[[5,6,7],[8]],\"pad_id\":1}",
         "Accept: application/x-npz\r\n", 0},
        {"POST", "/embed", "application/json",
         "{\"inputs\":[[5,6],[7,8]],\"encoding_format\":\"torch\","
         "\"dtype\":\"float16\"}",
         NULL, 0},
        {"POST", "/embed", "application/octet-stream",
         "\001\000\000\000\002\000\000\000", "X-Tokvec-Shape: 1,2\r\n", 8},
        {"GET", "/tokens/3", NULL, NULL, NULL, 0},
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++)
        assert_true(fail_each_allocation(f, &reqs[i]) >= 1);
}

/* A large job goes to a worker (not inline): its buffers come from the
 * cache's mmap path and fail there too. */
static void a_failed_allocation_in_a_worker_job_is_a_500(void **state)
{
    fixture *f = *state;
    assert_int_equal(fx_up(f, NULL), 0);
    /* 128 x 8 ids: 4096 floats, past the inline bound of JSON replies;
     * ~100 KB of JSON, a buffer from the cache's mmap path */
    static char body[8192];
    int n = snprintf(body, sizeof body, "{\"inputs\":[");
    for (int b = 0; b < 128; b++)
        n += snprintf(body + n, sizeof body - (size_t)n, "%s[0,1,2,3,4,5,6,7]",
                      b ? "," : "");
    snprintf(body + n, sizeof body - (size_t)n, "]}");
    http_req q = {"POST", "/embed", "application/json", body, NULL, 0};
    assert_true(fail_each_allocation(f, &q) >= 1);
}

/* A large raw/npy reply is made a chunk at a time (embed_write_range):
 * whatever the chunks' sizes -- smaller than a row, not on a row, larger
 * than the body -- they join into embed_write's bytes, for every output
 * dtype, with and without positions and a start position. */
static void a_reply_in_chunks_is_the_whole_replys_bytes(void **state)
{
    tokvec_table *t = open_fixture_table(*state);
    int64_t ids[2 * 3] = {1, 15, 2, 0, 7, 7};
    static const size_t maxes[] = {1, 3, 7, 16, 17, 64, 100, 4096};
    static const tokvec_dtype dts[] = {TOKVEC_F32, TOKVEC_F16, TOKVEC_BF16};
    char whole[1024], part[1024 + 8], tmp[FX_DIM * 4];
    for (int kind = TV_OUT_RAW; kind <= TV_OUT_NPY; kind++)
        for (size_t d = 0; d < 3; d++)
            for (int pos = 0; pos < 2; pos++) {
                tv_request q = request(2, 3);
                q.ids = ids;
                q.positions = pos;
                q.start_position = pos ? 2 : 0;
                tv_format fmt = {(tv_out_kind)kind, dts[d]};
                embed_plan p;
                embed_rows r;
                assert_true(embed_plan_chunked(&q, fmt));
                assert_int_equal(embed_plan_reply(t, &q, fmt, &p), 0);
                assert_true(p.body <= sizeof whole);
                assert_int_equal(embed_write(t, &q, fmt, &p, whole, NULL),
                                 p.body);
                embed_rows_init(&r, t, &q, fmt, &p, ids);
                for (size_t m = 0; m < sizeof maxes / sizeof *maxes; m++) {
                    size_t at = 0, n;
                    /* out + 1: a float32 row out of alignment too */
                    do {
                        n = embed_write_range(&r, at, part + 1 + at, maxes[m],
                                              tmp);
                        assert_true(n <= maxes[m]);
                        at += n;
                    } while (n > 0);
                    assert_int_equal(at, p.body);
                    assert_memory_equal(part + 1, whole, p.body);
                }
            }
    /* JSON, npz and pooled answers are built whole */
    tv_request q = request(1, 1);
    assert_false(embed_plan_chunked(&q, (tv_format){TV_OUT_JSON, 0}));
    assert_false(embed_plan_chunked(&q, (tv_format){TV_OUT_NPZ, 0}));
    q.pool = 1;
    assert_false(embed_plan_chunked(&q, (tv_format){TV_OUT_RAW, 0}));
    tokvec_table_close(t);
}

/* Every allocation of a reply made in chunks (more than the 256 KiB of
 * the small-job lane: 16 x 1100 rows of 16 bytes) fails in turn: 500,
 * nothing held. */
static void a_failed_allocation_in_a_chunked_reply_is_a_500(void **state)
{
    fixture *f = *state;
    assert_int_equal(fx_up(f, NULL), 0);
    enum { N = 16 * 1100 };
    static int32_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = i % FX_VOCAB;
    http_req q = {"POST",
                  "/embed?positions=false",
                  "application/octet-stream",
                  (const char *)ids,
                  "X-Tokvec-Shape: 16,1100\r\n"
                  "Accept: application/octet-stream\r\n",
                  sizeof ids};
    assert_true(fail_each_allocation(f, &q) >= 1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, teardown)
    const struct CMUnitTest tests[] = {
        T(json_plan_reserves_scratch_rows_and_the_json_bound),
        T(binary_plan_is_the_npy_header_and_rows_in_the_output_dtype),
        T(positions_false_is_planned_as_token_rows_only),
        T(sizes_that_do_not_fit_are_refused),
        T(torch_plan_is_rows_in_the_dtype_one_archive_and_the_bound),
        T(a_binary_reply_is_exactly_the_planned_body),
        T(npz_plan_is_the_archive_with_the_rows_in_place),
        T(an_npz_reply_is_exactly_the_planned_archive),
        T(each_failed_allocation_on_the_request_path_is_a_500),
        T(a_failed_allocation_in_a_worker_job_is_a_500),
        T(a_reply_in_chunks_is_the_whole_replys_bytes),
        T(a_failed_allocation_in_a_chunked_reply_is_a_500),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
