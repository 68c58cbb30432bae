/* test_write.c -- the safetensors writer: what it writes opens again with
 * the same bytes and metadata, data starts 8-aligned, and a failed write
 * leaves neither a temporary file nor a changed destination.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tokvec_table.h"
#include "tokvec_write.h"

static int files_in_dir(void)
{
    DIR *d = opendir(tu_dir);
    int n = 0;
    for (struct dirent *e = readdir(d); e; e = readdir(d))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void written_file_opens_with_same_rows_and_metadata(void **s)
{
    (void)s;
    float tok[5 * 3], pos[4 * 3];
    for (int i = 0; i < 15; i++)
        tok[i] = (float)i * 0.25f - 1;
    for (int i = 0; i < 12; i++)
        pos[i] = (float)i * -0.5f;
    char p[256];
    snprintf(p, sizeof p, "%s/a.safetensors", tu_dir);
    const char *k[] = {"seed", "positional"}, *v[] = {"123", "learned"};
    tokvec_write_opts o = {.metadata_keys = k,
                           .metadata_values = v,
                           .n_metadata = 2};
    tokvec_write_tensor w[2] = {{"tok_emb.weight", TOKVEC_F32, 5, 3, tok},
                                {"pos_emb.weight", TOKVEC_F32, 4, 3, pos}};
    assert_int_equal(tokvec_safetensors_write(p, w, 2, &o), 0);

    tokvec_table *t;
    assert_int_equal(tokvec_table_open(p, NULL, &t), 0);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    assert_int_equal(in->vocab_size, 5);
    assert_int_equal(in->context_length, 4);
    assert_non_null(strstr(in->metadata_json, "\"seed\":\"123\""));
    tokvec_row r;
    assert_int_equal(tokvec_table_token_row(t, 4, &r), 0);
    assert_memory_equal(r.data, tok + 12, 12);
    /* The data starts at a multiple of 8 from the file start. */
    tokvec_tensor x;
    assert_int_equal(tokvec_table_tensor(t, 0, &x), 0);
    FILE *f = fopen(p, "rb");
    unsigned char le[8];
    assert_int_equal(fread(le, 1, 8, f), 8);
    fclose(f);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | le[i];
    assert_int_equal((8 + hlen) % 8, 0);
    tokvec_table_close(t);
    assert_int_equal(files_in_dir(), 1); /* no temporary left */
}

static void rewrite_replaces_file_atomically(void **s)
{
    (void)s;
    char p[256];
    snprintf(p, sizeof p, "%s/b.safetensors", tu_dir);
    float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    tokvec_write_tensor w = {"tok_emb.weight", TOKVEC_F32, 2, 2, a};
    assert_int_equal(tokvec_safetensors_write(p, &w, 1, NULL), 0);
    tokvec_table *t1, *t2;
    assert_int_equal(tokvec_table_open(p, NULL, &t1), 0);
    w.data = b;
    assert_int_equal(tokvec_safetensors_write(p, &w, 1, NULL), 0);
    assert_int_equal(tokvec_table_open(p, NULL, &t2), 0);
    tokvec_row r1, r2;
    assert_int_equal(tokvec_table_token_row(t1, 0, &r1), 0);
    assert_int_equal(tokvec_table_token_row(t2, 0, &r2), 0);
    /* The old mapping still sees the old file (rename, not rewrite). */
    assert_memory_equal(r1.data, a, 8);
    assert_memory_equal(r2.data, b, 8);
    tokvec_table_close(t1);
    tokvec_table_close(t2);
}

static void failed_write_leaves_nothing_behind(void **s)
{
    (void)s;
    char p[256];
    snprintf(p, sizeof p, "%s/no-such-dir/c.safetensors", tu_dir);
    float a[4] = {0};
    tokvec_write_tensor w = {"tok_emb.weight", TOKVEC_F32, 2, 2, a};
    int before = files_in_dir();
    assert_true(tokvec_safetensors_write(p, &w, 1, NULL) < 0);
    assert_int_equal(files_in_dir(), before);
    w.name = NULL;
    assert_int_equal(tokvec_safetensors_write(p, &w, 1, NULL), TOKVEC_E_INVAL);
}

static void f16_tensors_are_written_as_given(void **s)
{
    (void)s;
    char p[256];
    snprintf(p, sizeof p, "%s/d.safetensors", tu_dir);
    uint16_t h[6] = {0x3c00, 0x4000, 0xc000, 0x3800, 0x0001, 0x7bff};
    tokvec_write_tensor w = {"wte.weight", TOKVEC_F16, 3, 2, h};
    assert_int_equal(tokvec_safetensors_write(p, &w, 1, NULL), 0);
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(p, NULL, &t), 0);
    assert_int_equal(tokvec_table_get_info(t)->dtype, TOKVEC_F16);
    tokvec_row r;
    float v[2];
    assert_int_equal(tokvec_table_token_row(t, 2, &r), 0);
    tokvec_row_to_f32(&r, v);
    assert_true(v[0] == 0x1p-24f && v[1] == 65504.0f);
    tokvec_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(written_file_opens_with_same_rows_and_metadata),
        cmocka_unit_test(rewrite_replaces_file_atomically),
        cmocka_unit_test(failed_write_leaves_nothing_behind),
        cmocka_unit_test(f16_tensors_are_written_as_given),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
