/* test_shards_names.c -- core/table/shards.c, what test_shards.c leaves:
 * which shard names an index may give (relative paths without a ".."
 * component: "", "/x", "..", "a/../b" refused with the rule; ".x", "..x",
 * "x..", "a//b" taken), a weight_map value that is not a string, and a
 * directory with one index of another name (opened) or two (ambiguous:
 * refused as a directory). Files are written into a temporary directory.
 * Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "testutil.h"
#include "tokvec_error.h"
#include "tokvec_table.h"

static char dir[512];
static int serial;

static const char *in_dir(const char *name)
{
    static char p[800];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *name, const void *bytes, size_t n)
{
    FILE *f = fopen(in_dir(name), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* A safetensors shard holding "tok", F32 [3, 4]. */
static void shard(const char *name)
{
    static const char h[] =
        "{\"tok\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]}}";
    unsigned char b[8 + sizeof h + 48] = {0};
    b[0] = (unsigned char)(sizeof h - 1);
    memcpy(b + 8, h, sizeof h - 1);
    write_file(name, b, 8 + sizeof h - 1 + 48);
}

static void fresh(void)
{
    snprintf(dir, sizeof dir, "%s/d%d", tu_dir, serial++);
    assert_int_equal(mkdir(dir, 0700), 0);
}

static int open_index(const char *path, char *err, size_t errlen)
{
    tokvec_table_opts o = {.token_tensor = "tok",
                           .positional = TOKVEC_POS_NONE,
                           .errbuf = err,
                           .errlen = errlen};
    tokvec_table *t = (tokvec_table *)1;
    int rc = tokvec_table_open(path, &o, &t);
    if (rc == 0) {
        assert_int_equal(tokvec_table_get_info(t)->vocab_size, 3);
        tokvec_table_close(t);
    } else {
        assert_null(t);
    }
    return rc;
}

static void shard_names_stay_inside_the_directory(void **s)
{
    (void)s;
    static const char *const bad[] = {"", "/abs.safetensors", "..",
                                      "a/../b.safetensors", "../x"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fresh();
        char json[256], err[1024] = "";
        int n = snprintf(json, sizeof json,
                         "{\"weight_map\":{\"tok\":\"%s\"}}", bad[k]);
        write_file("model.safetensors.index.json", json, (size_t)n);
        assert_int_equal(open_index(in_dir("model.safetensors.index.json"),
                                    err, sizeof err),
                         TOKVEC_E_SHARD_PATH);
        assert_non_null(strstr(err, "outside the index's directory"));
    }
    static const char *const good[] = {".x", "..x", "x..", "a//b"};
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        fresh();
        char json[256], err[1024] = "";
        assert_int_equal(mkdir(in_dir("a"), 0700), 0);
        shard(good[k]);
        int n = snprintf(json, sizeof json,
                         "{\"weight_map\":{\"tok\":\"%s\"}}", good[k]);
        write_file("model.safetensors.index.json", json, (size_t)n);
        if (open_index(in_dir("model.safetensors.index.json"), err,
                       sizeof err))
            fail_msg("'%s': %s", good[k], err);
    }
    fresh();
    char err[1024] = "";
    write_file("model.safetensors.index.json", "{\"weight_map\":{\"tok\":5}}",
               24);
    assert_int_equal(open_index(in_dir("model.safetensors.index.json"), err,
                                sizeof err),
                     TOKVEC_E_HEADER_JSON);
    assert_non_null(strstr(err, "weight_map entry 'tok' is not a string"));
}

static void a_directory_opens_its_one_index(void **s)
{
    (void)s;
    fresh();
    char err[1024] = "";
    shard("s.safetensors");
    static const char idx[] = "{\"weight_map\":{\"tok\":\"s.safetensors\"}}";
    write_file("x.safetensors.index.json", idx, sizeof idx - 1);
    if (open_index(dir, err, sizeof err))
        fail_msg("%s", err);
    /* two of them: which one is not said */
    write_file("y.safetensors.index.json", idx, sizeof idx - 1);
    assert_true(open_index(dir, err, sizeof err) < 0);
    assert_non_null(strstr(err, dir));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shard_names_stay_inside_the_directory),
        cmocka_unit_test(a_directory_opens_its_one_index),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
