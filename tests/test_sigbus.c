/* test_sigbus.c -- server/runtime/sigbus.c: each table the server opens
 * registers its mappings with a fatal line prepared for each -- the table for
 * a single file, the shard (not the index) for a sharded checkpoint -- and the
 * lines go with the table (after a reload, once its last reference does). The
 * handler itself (a real SIGBUS, one line, death by signal 7) is tested end to
 * end: tests/e2e/test_server.py, Faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sigbus.h"
#include "server_fixture.h"

/* The address of a token row of the server's current table. */
static const void *row_address(fixture *f, int64_t id)
{
    table_ref *ref = table_acquire(f->srv);
    tokvec_row r;
    const void *a = tokvec_table_token_row(ref->t, id, &r) == 0 ? r.data
                                                                : NULL;
    table_release(ref);
    return a;
}

static void a_single_file_names_the_table(void **state)
{
    fixture *f = *state;
    assert_int_equal(fx_up(f, NULL), 0);
    const void *a = row_address(f, 3);
    const char *line = tv_sigbus_line_for(a);
    char want[256];
    snprintf(want, sizeof want,
             "fatal SIGBUS reading the memory-mapped table %s: the file was "
             "truncated or rewritten in place",
             f->table);
    assert_non_null(strstr(line, want));
    assert_string_equal(tv_sigbus_line_for(&want), ""); /* not mapped */
    fx_idle(f);
    tv_server_stop(f->srv);
    f->srv = NULL;
    assert_string_equal(tv_sigbus_line_for(a), ""); /* gone with it */
}

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, n, fp), n);
    fclose(fp);
}

/* Issue 24, finding 11: the line named the index of a sharded
 * checkpoint, not the shard that was cut. */
static void a_sharded_checkpoint_names_the_shard_at_the_address(void **state)
{
    fixture *f = *state;
    char tok[128], pos[128], index[sizeof f->table];
    assert_int_equal(fx_init(f), 0);
    /* the fixture's table as the token shard; positions in another */
    snprintf(tok, sizeof tok, "%s/t.safetensors", f->dir);
    snprintf(pos, sizeof pos, "%s/p-2.safetensors", f->dir);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", f->dir);
    float p[FX_CONTEXT * FX_DIM] = {0};
    tokvec_write_tensor w = {"wpe.weight", TOKVEC_F32, FX_CONTEXT, FX_DIM, p};
    assert_int_equal(tokvec_safetensors_write(pos, &w, 1, NULL), 0);
    static const char json[] =
        "{\"weight_map\":{\"tok_emb.weight\":\"t.safetensors\","
        "\"pos_emb.weight\":\"t.safetensors\","
        "\"wpe.weight\":\"p-2.safetensors\"}}";
    write_bytes(index, json, sizeof json - 1);
    snprintf(f->table, sizeof f->table, "%s", index);
    const char *const extra[] = {"--position-tensor", "wpe.weight", NULL};
    assert_int_equal(fx_config(f, extra), 0);
    assert_int_equal(fx_start(f), 0);
    char want[512];
    snprintf(want, sizeof want,
             "fatal SIGBUS reading the memory-mapped file %s of the table "
             "%s: the file was truncated",
             tok, index);
    assert_non_null(strstr(tv_sigbus_line_for(row_address(f, 3)), want));
    table_ref *ref = table_acquire(f->srv);
    tokvec_row r;
    assert_int_equal(tokvec_table_position_row(ref->t, 1, &r), 0);
    snprintf(want, sizeof want,
             "fatal SIGBUS reading the memory-mapped file %s of the table "
             "%s: the file was truncated",
             pos, index);
    assert_non_null(strstr(tv_sigbus_line_for(r.data), want));
    table_release(ref);
}

/* A reload registers the new table; the old one's lines go with its last
 * reference. */
static void a_reload_moves_the_lines_to_the_new_table(void **state)
{
    fixture *f = *state;
    assert_int_equal(fx_up(f, NULL), 0);
    table_ref *old = table_acquire(f->srv);
    tokvec_row r;
    assert_int_equal(tokvec_table_token_row(old->t, 1, &r), 0);
    const void *a = r.data;
    assert_int_equal(tv_server_reload(f->srv), 0);
    assert_true(*tv_sigbus_line_for(a)); /* still referenced here */
    assert_true(*tv_sigbus_line_for(row_address(f, 1)));
    table_release(old);
    assert_string_equal(tv_sigbus_line_for(a), "");
    assert_true(*tv_sigbus_line_for(row_address(f, 1)));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(a_single_file_names_the_table),
        T(a_sharded_checkpoint_names_the_shard_at_the_address),
        T(a_reload_moves_the_lines_to_the_new_table),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
