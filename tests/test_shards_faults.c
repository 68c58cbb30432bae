/* test_shards_faults.c -- sharded safetensors checkpoints (an index JSON
 * and its shards, core/table/shards.c) when an allocation fails
 * (tests/fault_inject.h): opening the index, or the directory holding it,
 * fails with an error and no table at each allocation and opens again
 * afterwards, the message naming the file; and the directory rules the
 * other shard tests leave out: a directory whose one index has another
 * name opens, one with two such indexes is refused as the directory it is,
 * a weight_map that is a list is refused, and positional none never looks up a
 * position tensor. Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fault_inject.h"
#include "testutil.h"
#include "tokvec_error.h"
#include "tokvec_table.h"

static char path[700];

static const char *in(const char *sub, const char *name)
{
    snprintf(path, sizeof path, "%s/%s%s%s", tu_dir, sub, *sub ? "/" : "",
             name);
    return path;
}

static void write_file(const char *p, const void *b, size_t n)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

static void shard(const char *p, const char *header, size_t data)
{
    size_t h = strlen(header);
    unsigned char *b = calloc(1, 8 + h + data);
    assert_non_null(b);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    write_file(p, b, 8 + h + data);
    free(b);
}

static const char INDEX[] =
    "{\"weight_map\":{\"wte.weight\":\"a.safetensors\",\"wpe.weight\":"
    "\"b.safetensors\",\"h.0\":\"a.safetensors\",\"h.1\":\"c.safetensors\"}}";

/* dir sub (made): shards a (token table [3, 4] and h.0) and b (positions
 * [2, 4]), and the index under the given name. */
static void checkpoint(const char *sub, const char *index_name)
{
    char d[700];
    snprintf(d, sizeof d, "%s/%s", tu_dir, sub);
    mkdir(d, 0700);
    shard(in(sub, "a.safetensors"),
          "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],"
          "\"data_offsets\":[0,48]},\"h.0\":{\"dtype\":\"F32\",\"shape\":[1],"
          "\"data_offsets\":[48,52]}}",
          52);
    shard(in(sub, "b.safetensors"),
          "{\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],"
          "\"data_offsets\":[0,32]}}",
          32);
    write_file(in(sub, index_name), INDEX, strlen(INDEX));
}

static int open_rc(const char *p, const tokvec_table_opts *base, char *err,
                   size_t errlen, tokvec_table **t)
{
    return tu_table_open(p, base, err, errlen, t);
}

static void opening_fails_cleanly_at_each_allocation(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    checkpoint("f", "model.safetensors.index.json");
    checkpoint("g", "other.safetensors.index.json");
    char targets[3][700];
    snprintf(targets[0], sizeof targets[0], "%s",
             in("f", "model.safetensors.index.json"));
    snprintf(targets[1], sizeof targets[1], "%s/f", tu_dir);
    snprintf(targets[2], sizeof targets[2], "%s/g", tu_dir);
    for (int k = 0; k < 3; k++) {
        char err[700];
        tokvec_table *t;
        fi_arm(FI_ALLOC, 0, 0); /* count */
        assert_int_equal(fi_spare_library("libjansson"), 0);
        if (open_rc(targets[k], NULL, err, sizeof err, &t) != 0)
            fail_msg("%s", err);
        long total = fi_calls(FI_ALLOC);
        fi_reset();
        assert_int_equal(tokvec_table_get_info(t)->context_length, 2);
        tokvec_table_close(t);
        int failed = 0;
        for (long nth = 1; nth <= total; nth++) {
            fi_arm(FI_ALLOC, nth, ENOMEM);
            assert_int_equal(fi_spare_library("libjansson"), 0);
            int rc = open_rc(targets[k], NULL, err, sizeof err, &t);
            fi_reset();
            if (rc == 0) {
                tokvec_table_close(t);
                continue;
            }
            assert_int_equal(rc, -ENOMEM);
            assert_null(t);
            if (strncmp(err, targets[k], strlen(targets[k])))
                fail_msg("allocation %ld: message '%s' does not name %s", nth,
                         err, targets[k]);
            failed++;
        }
        if (failed < 3)
            fail_msg("%s: %d of %ld allocations failed the open", targets[k],
                     failed, total);
        /* and it opens again */
        assert_int_equal(open_rc(targets[k], NULL, err, sizeof err, &t), 0);
        tokvec_table_close(t);
    }
}

static void directory_rules(void **s)
{
    (void)s;
    char err[900], d[700], want[900];
    tokvec_table *t;
    /* two indexes of other names: ambiguous, the directory is refused */
    checkpoint("two", "x.safetensors.index.json");
    write_file(in("two", "y.safetensors.index.json"), INDEX, strlen(INDEX));
    snprintf(d, sizeof d, "%s/two", tu_dir);
    assert_true(open_rc(d, NULL, err, sizeof err, &t) < 0);
    assert_null(t);
    snprintf(want, sizeof want, "%s: ", d);
    assert_memory_equal(err, want, strlen(want));
    /* a directory without any index */
    snprintf(d, sizeof d, "%s/none", tu_dir);
    mkdir(d, 0700);
    assert_true(open_rc(d, NULL, err, sizeof err, &t) < 0);
    assert_null(t);
    /* a weight_map that is a list (an index is sniffed by its '{', so
     * it is always an object) */
    checkpoint("list", "model.safetensors.index.json");
    write_file(in("list", "model.safetensors.index.json"),
               "{\"weight_map\":[]}", 17);
    assert_int_equal(open_rc(in("list", "model.safetensors.index.json"), NULL,
                             err, sizeof err, &t),
                     TOKVEC_E_HEADER_JSON);
    snprintf(want, sizeof want, "%s: index has no \"weight_map\" object",
             path);
    assert_string_equal(err, want);
    /* positional none: shard b (positions) is never opened */
    checkpoint("nopos", "model.safetensors.index.json");
    remove(in("nopos", "b.safetensors"));
    tokvec_table_opts o = {.positional = TOKVEC_POS_NONE};
    assert_int_equal(open_rc(in("nopos", "model.safetensors.index.json"), &o,
                             err, sizeof err, &t),
                     0);
    assert_int_equal(tokvec_table_get_info(t)->positional, TOKVEC_POS_NONE);
    tokvec_table_close(t);
    /* ... unless it is named */
    o.position_tensor = "wpe.weight";
    assert_true(open_rc(in("nopos", "model.safetensors.index.json"), &o, err,
                        sizeof err, &t) < 0);
    assert_non_null(strstr(err, "b.safetensors"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opening_fails_cleanly_at_each_allocation),
        cmocka_unit_test(directory_rules),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
