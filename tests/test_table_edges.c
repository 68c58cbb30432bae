/* test_table_edges.c -- core/table/table.c, what the other table tests
 * leave: how a file's first bytes are told apart (leading whitespace up
 * to 8 bytes before an index's '{', a NUL there, a pickle's protocol byte
 * out of 2..5, bytes that are nothing), Model2Vec float32 weights read
 * into each row, and the accessors' range checks (tensor, shard, mapping,
 * token and position rows). Files are written into a temporary directory.
 * Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tokvec_error.h"
#include "tokvec_table.h"

static char path[600];
static int serial;

static const char *put(const void *bytes, size_t n)
{
    snprintf(path, sizeof path, "%s/f%d", tu_dir, serial++);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
    return path;
}

/* A safetensors file: header, then the data. */
static const char *st_file(const char *header, const void *data, size_t n)
{
    size_t h = strlen(header);
    unsigned char *b = calloc(1, 8 + h + n);
    assert_non_null(b);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    memcpy(b + 8 + h, data, n);
    put(b, 8 + h + n);
    free(b);
    return path;
}

static int open_rc(const char *p, const tokvec_table_opts *base, char *err,
                   size_t errlen)
{
    tokvec_table_opts o = base ? *base : (tokvec_table_opts){0};
    o.errbuf = err;
    o.errlen = errlen;
    tokvec_table *t = (tokvec_table *)1;
    int rc = tokvec_table_open(p, &o, &t);
    if (rc == 0)
        tokvec_table_close(t);
    else
        assert_null(t);
    return rc;
}

static void first_bytes_tell_the_format(void **s)
{
    (void)s;
    static const char nothing[] =
        "not a safetensors, .npy or GGUF file (and not a "
        "model.safetensors.index.json)";
    static const struct {
        const char *bytes;
        size_t n;
        int rc;
        const char *says;
    } c[] = {
        /* nine blanks: the ninth byte is no '{' */
        {"         {\"weight_map\":{}}", 25, TOKVEC_E_FORMAT, nothing},
        /* a NUL among the first bytes: not JSON */
        {" \0{\"weight_map\":{}}", 19, TOKVEC_E_FORMAT, nothing},
        /* protocol bytes 1 and 6: no pickle tokvec names */
        {"\x80\x01zzzzzzzzzzzzzz", 16, TOKVEC_E_FORMAT, nothing},
        {"\x80\x06zzzzzzzzzzzzzz", 16, TOKVEC_E_FORMAT, nothing},
        {"\x80\x02zzzzzzzzzzzzzz", 16, TOKVEC_E_FORMAT, "a Python pickle"},
        {"zzzzzzzzzzzzzzzz", 16, TOKVEC_E_FORMAT, nothing},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        char err[1024] = "";
        int rc = open_rc(put(c[k].bytes, c[k].n), NULL, err, sizeof err);
        if (rc != c[k].rc || !strstr(err, c[k].says))
            fail_msg("case %zu: %d '%s', want %d '%s'", k, rc, err, c[k].rc,
                     c[k].says);
    }
    /* blanks then '{' within 8 bytes: an index (here one without a
     * weight_map, refused as an index) */
    char err[1024] = "";
    assert_true(open_rc(put("\t\r\n {\"metadata\":{}}", 19), NULL, err,
                        sizeof err) < 0);
    assert_null(strstr(err, nothing));
    /* only blanks, fewer than 8: read as a safetensors header's length */
    assert_true(open_rc(put(" \t\n ", 4), NULL, err, sizeof err) < 0);
    assert_null(strstr(err, nothing));
}

static float data[32];

static void model2vec_float32_weights_scale_each_row(void **s)
{
    (void)s;
    for (int i = 0; i < 12; i++)
        data[i] = (float)i;
    data[12] = 0.5f, data[13] = 2.0f, data[14] = -1.0f;
    tokvec_table_opts o = {.token_tensor = "tok",
                           .weights_tensor = "w",
                           .mapping_tensor = "m"};
    char err[512] = "";
    o.errbuf = err;
    o.errlen = sizeof err;
    tokvec_table *t = NULL;
    const char *p = st_file(
        "{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]},"
        "\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[48,60]}}",
        data, 64);
    if (tokvec_table_open(p, &o, &t))
        fail_msg("%s", err);
    const float want[3] = {0.5f, 2.0f, -1.0f};
    for (int64_t id = 0; id < 3; id++) {
        tokvec_row r;
        assert_int_equal(tokvec_table_token_row(t, id, &r), 0);
        assert_int_equal(r.weighted, 1);
        assert_true(r.weight == (double)want[id]);
        float first; /* rows of a safetensors file need not be aligned */
        memcpy(&first, r.data, sizeof first);
        assert_true(first == (float)(4 * id));
    }
    tokvec_row r;
    assert_int_equal(tokvec_table_token_row(t, 3, &r), TOKVEC_E_TOKEN_RANGE);
    assert_int_equal(tokvec_table_token_row(t, -1, &r), TOKVEC_E_TOKEN_RANGE);
    /* no positions */
    assert_int_equal(tokvec_table_position_row(t, 0, &r),
                     TOKVEC_E_NO_POSITIONS);
    /* one tensor of each index past the end */
    tokvec_tensor x;
    assert_int_equal(tokvec_table_tensor(t, tokvec_table_tensor_count(t), &x),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_table_tensor(t, 0, &x), 0);
    assert_null(x.file); /* one file: no shards */
    tokvec_shard sh;
    assert_int_equal(tokvec_table_shard(t, tokvec_table_shard_count(t), &sh),
                     TOKVEC_E_INVAL);
    tokvec_mapping mp;
    assert_int_equal(tokvec_table_mapping_count(t), 1);
    assert_int_equal(tokvec_table_mapping(t, 0, &mp), 0);
    assert_int_equal(tokvec_table_mapping(t, 1, &mp), TOKVEC_E_INVAL);
    assert_int_equal(tokvec_table_mapping(t, 2, &mp), TOKVEC_E_INVAL);
    tokvec_table_close(t);
}

static void learned_positions_are_range_checked(void **s)
{
    (void)s;
    tokvec_table_opts o = {.token_tensor = "tok",
                           .position_tensor = "pos",
                           .positional = TOKVEC_POS_LEARNED};
    char err[512] = "";
    o.errbuf = err;
    o.errlen = sizeof err;
    tokvec_table *t = NULL;
    const char *p = st_file(
        "{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]},"
        "\"pos\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[48,80]}"
        "}",
        data, 80);
    if (tokvec_table_open(p, &o, &t))
        fail_msg("%s", err);
    tokvec_row r;
    assert_int_equal(tokvec_table_position_row(t, 1, &r), 0);
    assert_int_equal(tokvec_table_position_row(t, 2, &r),
                     TOKVEC_E_POSITION_RANGE);
    assert_int_equal(tokvec_table_position_row(t, -1, &r),
                     TOKVEC_E_POSITION_RANGE);
    tokvec_table_close(t);
    /* forced learned positions, none in the file */
    o.position_tensor = NULL;
    p = st_file("{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],"
                "\"data_offsets\":[0,48]}}",
                data, 48);
    t = (tokvec_table *)1;
    assert_true(tokvec_table_open(p, &o, &t) < 0);
    assert_null(t);
    assert_non_null(strstr(err, p));
    /* a position .npy beside a safetensors table */
    tokvec_table_opts q = {.position_path = p,
                           .errbuf = err,
                           .errlen = sizeof err};
    assert_int_equal(tokvec_table_open(p, &q, &t), TOKVEC_E_INVAL);
    assert_non_null(
        strstr(err, "a position .npy goes with a .npy token table only"));
    /* no path */
    assert_int_equal(tokvec_table_open(NULL, &q, &t), TOKVEC_E_INVAL);
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_bytes_tell_the_format),
        cmocka_unit_test(model2vec_float32_weights_scale_each_row),
        cmocka_unit_test(learned_positions_are_range_checked),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
