/* test_similar.c -- nearest tokens: the scan's top k against a naive
 * double-precision reference (float32 and float16 tables, dims that are
 * and are not a multiple of the 16 lanes), the k limits, vector queries,
 * exact ties by id, zero rows and queries, rows near FLT_MAX and rows of
 * NaN or infinity, and concurrent first queries.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokvec_float.h"
#include "tokvec_similar.h"
#include "tokvec_write.h"
#include "testutil.h"

#define V 700
#define DMAX 80

static float tab[V * DMAX];
static uint64_t lcg = 42;

static float rnd(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(lcg >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Writes tab (V x d) as dtype dt and opens it. Half tables are narrowed,
 * and tab is replaced by their exact widening, so the reference sees what
 * the table holds. */
static tokvec_table *open_tab(int64_t d, tokvec_dtype dt)
{
    static uint16_t h[V * DMAX];
    static int n;
    char p[256];
    snprintf(p, sizeof p, "%s/t%d.safetensors", tu_dir, n++);
    const void *data = tab;
    if (dt != TOKVEC_F32) {
        tokvec_narrow(dt, tab, h, (size_t)(V * d));
        tokvec_widen(dt, h, tab, (size_t)(V * d));
        data = h;
    }
    tokvec_write_tensor w = {"tok_emb.weight", dt, V, d, data};
    assert_int_equal(tokvec_safetensors_write(p, &w, 1, NULL), 0);
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(p, NULL, &t), 0);
    return t;
}

static void fill(int64_t d)
{
    for (int64_t i = 0; i < V * d; i++)
        tab[i] = rnd();
}

static double ref_cos(const float *q, const float *r, int64_t d)
{
    double qq = 0, rr = 0, qr = 0;
    for (int64_t i = 0; i < d; i++) {
        qq += (double)q[i] * q[i];
        rr += (double)r[i] * r[i];
        qr += (double)q[i] * r[i];
    }
    return rr == 0 ? 0 : qr / sqrt(qq * rr);
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* out (n entries) must be the top n of the reference: each score within
 * 1e-5 of the reference's for that id, best first, no id twice, and the
 * i-th score the reference's i-th best (so no better row was missed). */
static void check_against_reference(const float *q, int64_t d,
                                    const tokvec_neighbor *out, size_t n)
{
    static double all[V];
    for (int64_t r = 0; r < V; r++)
        all[r] = ref_cos(q, tab + r * d, d);
    static char seen[V];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < n; i++) {
        assert_true(out[i].id >= 0 && out[i].id < V);
        assert_false(seen[out[i].id]);
        seen[out[i].id] = 1;
        assert_true(fabs(out[i].score - all[out[i].id]) < 1e-5);
        if (i)
            assert_true(out[i].score <= out[i - 1].score);
    }
    qsort(all, V, sizeof all[0], cmp_desc);
    for (size_t i = 0; i < n; i++)
        assert_true(fabs(out[i].score - all[i]) < 1e-5);
}

static void top_k_equals_double_reference(int64_t d, tokvec_dtype dt)
{
    fill(d);
    tokvec_table *t = open_tab(d, dt);
    tokvec_similar *s;
    assert_int_equal(tokvec_similar_open(t, &s), 0);
    tokvec_neighbor out[50];
    int64_t ids[] = {0, 1, 333, V - 1};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        assert_int_equal(tokvec_similar_token(s, ids[i], 50, out), 0);
        check_against_reference(tab + ids[i] * d, d, out, 50);
    }
    tokvec_similar_close(s);
    tokvec_table_close(t);
}

static void f32_top_k_matches_reference_at_dims_1_16_37_80(void **st)
{
    (void)st;
    int64_t dims[] = {1, 16, 37, 80};
    for (size_t i = 0; i < 4; i++)
        top_k_equals_double_reference(dims[i], TOKVEC_F32);
}

static void half_tables_match_reference_on_their_widened_rows(void **st)
{
    (void)st;
    top_k_equals_double_reference(48, TOKVEC_F16);
    top_k_equals_double_reference(33, TOKVEC_BF16);
}

static void vector_query_matches_reference(void **st)
{
    (void)st;
    fill(37);
    tokvec_table *t = open_tab(37, TOKVEC_F32);
    tokvec_similar *s;
    assert_int_equal(tokvec_similar_open(t, &s), 0);
    float q[37];
    for (int i = 0; i < 37; i++)
        q[i] = rnd() * 1000.0f; /* the query's length does not matter */
    tokvec_neighbor out[10], out2[10];
    assert_int_equal(tokvec_similar_vector(s, q, 10, out), 0);
    check_against_reference(q, 37, out, 10);
    for (int i = 0; i < 37; i++)
        q[i] /= 1000.0f;
    assert_int_equal(tokvec_similar_vector(s, q, 10, out2), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(out[i].id, out2[i].id);
    tokvec_similar_close(s);
    tokvec_table_close(t);
}

static void token_itself_ranks_first_with_score_one(void **st)
{
    (void)st;
    fill(64);
    tokvec_table *t = open_tab(64, TOKVEC_F32);
    tokvec_similar *s;
    assert_int_equal(tokvec_similar_open(t, &s), 0);
    tokvec_neighbor out[3];
    for (int64_t id = 0; id < V; id += 37) {
        assert_int_equal(tokvec_similar_token(s, id, 3, out), 0);
        assert_int_equal(out[0].id, id);
        assert_true(fabsf(out[0].score - 1.0f) < 1e-6f);
        assert_true(out[1].score < out[0].score);
    }
    tokvec_similar_close(s);
    tokvec_table_close(t);
}

/* Rows near FLT_MAX: their float32 dot products overflow, so the scan
 * redoes them in double; the inverse norms (subnormal in float32) are kept
 * in double. Row 3 (all FLT_MAX) finds itself and row 4 (FLT_MAX / 2, the
 * same direction) with score 1, and the cosines of the others are right.
 * A row holding NaN or infinity cannot be a query (TOKVEC_E_INVAL) and
 * scores -1 against any. */
static void huge_rows_score_their_cosine_and_nan_rows_cannot_be_queried(
    void **st)
{
    (void)st;
    enum { D = 32 };
    fill(D);
    for (int i = 0; i < D; i++) {
        tab[3 * D + i] = FLT_MAX;
        tab[4 * D + i] = FLT_MAX / 2;
        tab[5 * D + i] = i % 2 ? FLT_MAX : -FLT_MAX;
        tab[6 * D + i] = i == 7 ? NAN : 1.0f;
        tab[7 * D + i] = i == 0 ? INFINITY : 1.0f;
    }
    tokvec_table *t = open_tab(D, TOKVEC_F32);
    tokvec_similar *s;
    assert_int_equal(tokvec_similar_open(t, &s), 0);
    tokvec_neighbor out[V];
    assert_int_equal(tokvec_similar_token(s, 3, V, out), 0);
    assert_int_equal(out[0].id, 3);
    assert_int_equal(out[1].id, 4);
    assert_true(fabsf(out[0].score - 1.0f) < 1e-6f);
    assert_true(fabsf(out[1].score - 1.0f) < 1e-6f);
    for (int i = 0; i < V; i++) {
        int64_t id = out[i].id;
        if (id == 6 || id == 7) {
            assert_true(out[i].score == -1.0f);
            continue;
        }
        double want = ref_cos(&tab[3 * D], &tab[id * D], D);
        assert_true(fabs(out[i].score - want) < 1e-5);
    }
    assert_int_equal(tokvec_similar_token(s, 6, 3, out), TOKVEC_E_INVAL);
    assert_int_equal(tokvec_similar_token(s, 7, 3, out), TOKVEC_E_INVAL);
    tokvec_similar_close(s);
    tokvec_table_close(t);
}

static void k_limits(void **st)
{
    (void)st;
    fill(16);
    tokvec_table *t = open_tab(16, TOKVEC_F32);
    tokvec_similar *s;
    assert_int_equal(tokvec_similar_open(t, &s), 0);
    static tokvec_neighbor out[V + 1];
    out[V].id = -7; /* k past the vocabulary: V rows, nothing beyond */
    assert_int_equal(tokvec_similar_token(s, 5, 100000, out), 0);
    assert_int_equal(out[V].id, -7);
    check_against_reference(tab + 5 * 16, 16, out, V);
    assert_int_equal(tokvec_similar_token(s, 5, 0, out), TOKVEC_E_INVAL);
    assert_int_equal(tokvec_similar_token(s, 5, 1, out), 0);
    assert_int_equal(out[0].id, 5);
    assert_int_equal(tokvec_similar_token(s, -1, 1, out),
                     TOKVEC_E_TOKEN_RANGE);
    assert_int_equal(tokvec_similar_token(s, V, 1, out), TOKVEC_E_TOKEN_RANGE);
    tokvec_similar_close(s);
    tokvec_table_close(t);
}

static void ties_are_broken_by_id_and_zero_vectors_score_zero(void **st)
{
    (void)st;
    fill(20);
    for (int i = 0; i < 20; i++) { /* rows 9, 2 and 500 point one way */
        tab[2 * 20 + i] = 2 * tab[9 * 20 + i];
        tab[500 * 20 + i] = tab[9 * 20 + i];
        tab[7 * 20 + i] = 0; /* a zero row */
    }
    tokvec_table *t = open_tab(20, TOKVEC_F32);
    tokvec_similar *s;
    assert_int_equal(tokvec_similar_open(t, &s), 0);
    tokvec_neighbor out[V];
    assert_int_equal(tokvec_similar_token(s, 500, 3, out), 0);
    /* 9 and 500 are bit-equal and 2 is twice 9 (a power of two scales
     * every product and the norm exactly): one score, ids ascending */
    assert_int_equal(out[0].id, 2);
    assert_int_equal(out[1].id, 9);
    assert_int_equal(out[2].id, 500);
    assert_true(out[0].score == out[1].score);
    assert_true(out[1].score == out[2].score);
    /* the zero row: score 0 (never -0) from every query; as the query,
     * every row scores 0 and the answer is the first ids */
    assert_int_equal(tokvec_similar_token(s, 3, V, out), 0);
    for (int i = 0; i < V; i++)
        if (out[i].id == 7)
            assert_true(out[i].score == 0.0f && !signbit(out[i].score));
    float q[20] = {0};
    for (int z = 0; z < 2; z++) {
        assert_int_equal(z ? tokvec_similar_vector(s, q, 4, out)
                           : tokvec_similar_token(s, 7, 4, out),
                         0);
        for (int i = 0; i < 4; i++) {
            assert_int_equal(out[i].id, i);
            assert_true(out[i].score == 0.0f && !signbit(out[i].score));
        }
    }
    q[3] = NAN;
    assert_int_equal(tokvec_similar_vector(s, q, 1, out), TOKVEC_E_INVAL);
    q[3] = INFINITY;
    assert_int_equal(tokvec_similar_vector(s, q, 1, out), TOKVEC_E_INVAL);
    tokvec_similar_close(s);
    tokvec_table_close(t);
}

typedef struct {
    tokvec_similar *s;
    int64_t id;
    tokvec_neighbor out[5];
    int rc;
} job;

static void *query_thread(void *arg)
{
    job *j = arg;
    j->rc = tokvec_similar_token(j->s, j->id, 5, j->out);
    return NULL;
}

static void concurrent_first_queries_agree_with_a_serial_one(void **st)
{
    (void)st;
    fill(80);
    tokvec_table *t = open_tab(80, TOKVEC_F32);
    tokvec_similar *s;
    assert_int_equal(tokvec_similar_open(t, &s), 0);
    job jobs[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (job){.s = s, .id = 11 * i};
        assert_int_equal(pthread_create(&th[i], NULL, query_thread, &jobs[i]),
                         0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].rc, 0);
        tokvec_neighbor one[5];
        assert_int_equal(tokvec_similar_token(s, jobs[i].id, 5, one), 0);
        for (int j = 0; j < 5; j++) { /* fields: the struct has padding */
            assert_int_equal(one[j].id, jobs[i].out[j].id);
            assert_true(one[j].score == jobs[i].out[j].score);
        }
    }
    tokvec_similar_close(s);
    tokvec_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_top_k_matches_reference_at_dims_1_16_37_80),
        cmocka_unit_test(half_tables_match_reference_on_their_widened_rows),
        cmocka_unit_test(vector_query_matches_reference),
        cmocka_unit_test(token_itself_ranks_first_with_score_one),
        cmocka_unit_test(k_limits),
        cmocka_unit_test(
            huge_rows_score_their_cosine_and_nan_rows_cannot_be_queried),
        cmocka_unit_test(ties_are_broken_by_id_and_zero_vectors_score_zero),
        cmocka_unit_test(concurrent_first_queries_agree_with_a_serial_one),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
