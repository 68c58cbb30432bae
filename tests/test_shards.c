/* test_shards.c -- sharded safetensors checkpoints: an index
 * (model.safetensors.index.json) whose weight_map names the shard of each
 * tensor. The tests write their own checkpoints into a temporary
 * directory: the token and position tables in different shards, a shard
 * that must not be opened (it does not exist), shard names that leave the
 * directory, and a bad shard per rule of the single-file format.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tokvec_table.h"

static const char *in_dir(const char *name)
{
    static char p[4][300];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", tu_dir, name);
    return p[k];
}

static void write_file(const char *name, const void *bytes, size_t n)
{
    FILE *f = fopen(in_dir(name), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* A safetensors shard: header JSON, then n bytes of data. */
static void shard(const char *name, const char *header, const void *data,
                  size_t n)
{
    size_t h = strlen(header);
    unsigned char *b = malloc(8 + h + n);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    memcpy(b + 8 + h, data, n);
    write_file(name, b, 8 + h + n);
    free(b);
}

static void index_file(const char *name, const char *json)
{
    write_file(name, json, strlen(json));
}

static float tok_data[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static float pos_data[8] = {.5f, .25f, .125f, 1, 2, 4, 8, 16};

#define TOK_SHARD                                                            \
    "{\"__metadata__\":{\"format\":\"pt\"},\"wte.weight\":{\"dtype\":"       \
    "\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]},\"h.0.b\":{\"dtype\":" \
    "\"F32\",\"shape\":[1],\"data_offsets\":[48,52]}}"
#define POS_SHARD                                         \
    "{\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[2,4]," \
    "\"data_offsets\":[0,32]}}"
#define INDEX(tokshard, posshard)                                 \
    "{\"metadata\":{\"total_size\":84},\"weight_map\":{"          \
    "\"wte.weight\":\"" tokshard "\",\"h.0.b\":\"" tokshard "\"," \
    "\"h.1.w\":\"model-00003-of-00003.safetensors\","             \
    "\"wpe.weight\":\"" posshard "\"}}"

static int setup(void **state)
{
    if (tu_setup_dir(state) < 0)
        return -1;
    float tp[13];
    memcpy(tp, tok_data, sizeof tok_data);
    tp[12] = 99;
    shard("model-00001-of-00003.safetensors", TOK_SHARD, tp, sizeof tp);
    shard("model-00002-of-00003.safetensors", POS_SHARD, pos_data,
          sizeof pos_data);
    /* model-00003-of-00003.safetensors does not exist: it holds neither
     * table, so opening the checkpoint must never touch it. */
    index_file("model.safetensors.index.json",
               INDEX("model-00001-of-00003.safetensors",
                     "model-00002-of-00003.safetensors"));
    return 0;
}

/* Opens and expects code; a failure's message must contain `names`. */
static void expect(const char *p, const tokvec_table_opts *base, int code,
                   const char *names)
{
    char err[512];
    tokvec_table *t;
    int rc = tu_table_open(p, base, err, sizeof err, &t);
    if (rc == 0)
        tokvec_table_close(t);
    if (rc != code)
        fail_msg("%s: got %d (%s), want %d; message: %s", p, rc,
                 tokvec_errname(rc), code, err);
    if (code && names && !strstr(err, names))
        fail_msg("message '%s' does not contain '%s'", err, names);
}

static void check_rows(const tokvec_table *t)
{
    const tokvec_table_info *in = tokvec_table_get_info(t);
    assert_int_equal(in->vocab_size, 3);
    assert_int_equal(in->dim, 4);
    assert_int_equal(in->context_length, 2);
    assert_int_equal(in->positional, TOKVEC_POS_LEARNED);
    assert_string_equal(in->token_tensor, "wte.weight");
    assert_string_equal(in->position_tensor, "wpe.weight");
    assert_string_equal(in->token_dtype, "F32");
    tokvec_row r;
    float v[4];
    assert_int_equal(tokvec_table_token_row(t, 2, &r), 0);
    tokvec_row_to_f32(&r, v);
    assert_memory_equal(v, tok_data + 8, sizeof v);
    assert_int_equal(tokvec_table_position_row(t, 1, &r), 0);
    tokvec_row_to_f32(&r, v);
    assert_memory_equal(v, pos_data + 4, sizeof v);
}

static void index_maps_only_the_shards_holding_the_tables(void **s)
{
    (void)s;
    tokvec_table *t;
    char err[256] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    if (tokvec_table_open(in_dir("model.safetensors.index.json"), &o, &t))
        fail_msg("%s", err);
    check_rows(t);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    assert_string_equal(in->format, "safetensors-index");
    assert_string_equal(in->metadata_json, "{\"format\":\"pt\"}");
    assert_int_equal(tokvec_table_shard_count(t), 3);
    const char *want[3] = {"model-00001-of-00003.safetensors",
                           "model-00003-of-00003.safetensors",
                           "model-00002-of-00003.safetensors"};
    size_t count[3] = {2, 1, 1};
    int mapped[3] = {1, 0, 1};
    for (size_t i = 0; i < 3; i++) {
        tokvec_shard sh;
        assert_int_equal(tokvec_table_shard(t, i, &sh), 0);
        assert_string_equal(sh.file, want[i]);
        assert_int_equal(sh.ntensors, count[i]);
        assert_int_equal(sh.mapped, mapped[i]);
        assert_int_equal(sh.file_size != 0, mapped[i]);
    }
    assert_int_equal(tokvec_table_shard(t, 3, &(tokvec_shard){0}),
                     TOKVEC_E_INVAL);
    /* The tensors of the mapped shards, each with its file. */
    assert_int_equal(tokvec_table_tensor_count(t), 3);
    for (size_t i = 0; i < 3; i++) {
        tokvec_tensor x;
        assert_int_equal(tokvec_table_tensor(t, i, &x), 0);
        assert_string_equal(x.file,
                            !strcmp(x.name, "wpe.weight") ? want[2] : want[0]);
    }
    tokvec_table_close(t);
}

/* Issue 24, finding 11: what a SIGBUS handler names is the shard mapped
 * at the address, never the index (unmapped once read). */
static void the_mappings_are_the_shards_not_the_index(void **s)
{
    (void)s;
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(in_dir("model.safetensors.index.json"),
                                       NULL, &t),
                     0);
    assert_int_equal(tokvec_table_mapping_count(t), 2);
    const char *want[2] = {"model-00001-of-00003.safetensors",
                           "model-00002-of-00003.safetensors"};
    tokvec_row r;
    for (size_t i = 0; i < 2; i++) {
        tokvec_mapping m;
        assert_int_equal(tokvec_table_mapping(t, i, &m), 0);
        assert_string_equal(m.path, in_dir(want[i]));
        struct stat st;
        assert_int_equal(stat(m.path, &st), 0);
        assert_int_equal(m.len, (size_t)st.st_size);
        /* the rows of the table it holds are inside it */
        if (i == 0)
            assert_int_equal(tokvec_table_token_row(t, 2, &r), 0);
        else
            assert_int_equal(tokvec_table_position_row(t, 1, &r), 0);
        const char *a = m.addr, *row = r.data;
        assert_true(row >= a && row + r.nbytes <= a + m.len);
    }
    assert_int_equal(tokvec_table_mapping(t, 2, &(tokvec_mapping){0}),
                     TOKVEC_E_INVAL);
    tokvec_table_close(t);
}

static void directory_holding_the_index_opens(void **s)
{
    (void)s;
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(tu_dir, NULL, &t), 0);
    check_rows(t);
    tokvec_table_close(t);
}

static void both_tables_in_one_shard_map_one_file(void **s)
{
    (void)s;
    mkdir(in_dir("one"), 0700);
    float both[20];
    memcpy(both, tok_data, sizeof tok_data);
    memcpy(both + 12, pos_data, sizeof pos_data);
    shard("one/m-1.safetensors",
          "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],"
          "\"data_offsets\":[0,48]},\"wpe.weight\":{\"dtype\":\"F32\","
          "\"shape\":[2,4],\"data_offsets\":[48,80]}}",
          both, sizeof both);
    index_file("one/model.safetensors.index.json",
               "{\"weight_map\":{\"wte.weight\":\"m-1.safetensors\","
               "\"wpe.weight\":\"m-1.safetensors\"}}");
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(in_dir("one"), NULL, &t), 0);
    check_rows(t);
    assert_int_equal(tokvec_table_shard_count(t), 1);
    tokvec_mapping m;
    assert_int_equal(tokvec_table_mapping_count(t), 1);
    assert_int_equal(tokvec_table_mapping(t, 0, &m), 0);
    assert_string_equal(m.path, in_dir("one/m-1.safetensors"));
    tokvec_table_close(t);
}

static void shard_names_must_stay_inside_the_index_directory(void **s)
{
    (void)s;
    const char *bad[] = {"../model-00001-of-00003.safetensors",
                         "sub/../../x.safetensors",
                         "/etc/passwd",
                         "",
                         "a/..",
                         NULL};
    char json[512];
    for (int i = 0; bad[i]; i++) {
        snprintf(json, sizeof json,
                 INDEX("model-00001-of-00003.safetensors", "%s"), bad[i]);
        index_file("bad.safetensors.index.json", json);
        expect(in_dir("bad.safetensors.index.json"), NULL, TOKVEC_E_SHARD_PATH,
               "outside the index's directory");
    }
    /* A subdirectory is inside; "..x" is a name, not "..". */
    mkdir(in_dir("sub"), 0700);
    shard("sub/..p.safetensors", POS_SHARD, pos_data, sizeof pos_data);
    index_file("ok.safetensors.index.json",
               INDEX("model-00001-of-00003.safetensors",
                     "sub/..p.safetensors"));
    expect(in_dir("ok.safetensors.index.json"), NULL, 0, NULL);
}

static void index_rules_each_have_their_error(void **s)
{
    (void)s;
    const struct {
        const char *json;
        int code;
        const char *says;
    } c[] = {
        {"{\"weight_map\": [", TOKVEC_E_HEADER_JSON, "not valid JSON"},
        {"{\"metadata\":{}}", TOKVEC_E_HEADER_JSON, "weight_map"},
        {"{\"weight_map\":{\"wte.weight\":3}}", TOKVEC_E_HEADER_JSON,
         "not a string"},
        {"{\"weight_map\":{\"a\":\"x.safetensors\",\"a\":\"y\"}}",
         TOKVEC_E_HEADER_JSON, "duplicate"},
        {"{\"weight_map\":{\"h.0.b\":\"model-00001-of-00003.safetensors\"}}",
         TOKVEC_E_NO_TENSOR, "no token tensor"},
        /* The index says so, the shard does not have it. */
        {"{\"weight_map\":{\"wte.weight\":"
         "\"model-00002-of-00003.safetensors\"}}",
         TOKVEC_E_NO_TENSOR, "model-00002-of-00003.safetensors"},
        /* A mapped shard that is not there. */
        {"{\"weight_map\":{\"wte.weight\":\"gone.safetensors\"}}", -2,
         "gone.safetensors"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        index_file("r.safetensors.index.json", c[i].json);
        expect(in_dir("r.safetensors.index.json"), NULL, c[i].code, c[i].says);
    }
    tokvec_table_opts named = {.token_tensor = "nope"};
    expect(in_dir("model.safetensors.index.json"), &named, TOKVEC_E_NO_TENSOR,
           "nope");
}

static void every_shard_rule_applies_to_a_mapped_shard(void **s)
{
    (void)s;
    mkdir(in_dir("v"), 0700);
    index_file("v/model.safetensors.index.json",
               "{\"weight_map\":{\"wte.weight\":\"t.safetensors\","
               "\"wpe.weight\":\"p.safetensors\"}}");
    shard("v/t.safetensors",
          "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],"
          "\"data_offsets\":[0,48]}}",
          tok_data, sizeof tok_data);
    const struct {
        const char *header;
        size_t n;
        int code;
    } c[] = {
        /* size: 2 x 4 F32 is 32 bytes, not 28 */
        {"{\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],"
         "\"data_offsets\":[0,28]}}",
         32, TOKVEC_E_SIZE},
        /* offsets beyond the data */
        {"{\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],"
         "\"data_offsets\":[4,36]}}",
         32, TOKVEC_E_OFFSETS},
        /* an unused tensor overlapping the table */
        {"{\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],"
         "\"data_offsets\":[0,32]},\"x\":{\"dtype\":\"U8\",\"shape\":[4],"
         "\"data_offsets\":[28,32]}}",
         32, TOKVEC_E_OFFSETS},
        /* the position table's dtype differs from the token table's */
        {"{\"wpe.weight\":{\"dtype\":\"F16\",\"shape\":[2,4],"
         "\"data_offsets\":[0,16]}}",
         16, TOKVEC_E_MISMATCH},
        {"{\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],"
         "\"data_offsets\":[0,32]},\"__metadata__\":{\"n\":1}}",
         32, TOKVEC_E_METADATA},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        shard("v/p.safetensors", c[i].header, pos_data, c[i].n);
        expect(in_dir("v"), NULL, c[i].code,
               c[i].code == TOKVEC_E_MISMATCH ? "wpe.weight"
                                              : "v/p.safetensors");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_maps_only_the_shards_holding_the_tables),
        cmocka_unit_test(the_mappings_are_the_shards_not_the_index),
        cmocka_unit_test(directory_holding_the_index_opens),
        cmocka_unit_test(both_tables_in_one_shard_map_one_file),
        cmocka_unit_test(shard_names_must_stay_inside_the_index_directory),
        cmocka_unit_test(index_rules_each_have_their_error),
        cmocka_unit_test(every_shard_rule_applies_to_a_mapped_shard),
    };
    return cmocka_run_group_tests(tests, setup, tu_teardown_dir);
}
