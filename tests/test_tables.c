/* test_tables.c -- server/http/tables.c: a reload swaps in a table of the
 * same dim (new requests see it, a request holding the old one keeps it whole
 * until it lets go), keeps the old table when the new file has another
 * dim or is no table, and the summary line names the table.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "server_fixture.h"

#define RESP 65536

static void reload_swaps_in_a_table_of_the_same_dim(void **state)
{
    fixture *f = *state;
    char r[RESP];
    table_ref *old = table_acquire(f->srv); /* as a request in flight */
    assert_int_equal(fx_write_table(f->table, 20, FX_DIM, FX_CONTEXT), 0);
    assert_int_equal(tv_server_reload(f->srv), 0);
    fx_get_says(f, "/info", 200, "\"vocab_size\":20,");
    assert_int_equal(fx_get(f, "/tokens/19", r, RESP), 200);
    /* The old table is still open and whole for whoever holds it. */
    assert_int_equal(tokvec_table_get_info(old->t)->vocab_size, FX_VOCAB);
    tokvec_row row;
    assert_int_equal(tokvec_table_token_row(old->t, 15, &row), 0);
    float v[FX_DIM];
    tokvec_row_to_f32(&row, v);
    assert_true(v[3] == 63.0f);
    table_release(old); /* the last reference: closed now */
}

static void reload_keeps_the_old_table_for_another_dim(void **state)
{
    fixture *f = *state;
    assert_int_equal(fx_write_table(f->table, FX_VOCAB, 8, FX_CONTEXT), 0);
    assert_int_equal(tv_server_reload(f->srv), -1);
    fx_get_says(f, "/info", 200, "\"dim\":4,");
}

static void reload_keeps_the_old_table_when_the_file_is_no_table(void **state)
{
    fixture *f = *state;
    char r[RESP];
    FILE *fp = fopen(f->table, "w");
    assert_non_null(fp);
    fputs("not a table", fp);
    fclose(fp);
    assert_int_equal(tv_server_reload(f->srv), -1);
    assert_int_equal(fx_get(f, "/tokens/15", r, RESP), 200);
}

static void the_summary_names_the_table_and_its_shape(void **state)
{
    fixture *f = *state;
    char line[1024];
    size_t n = tv_server_summary(f->srv, line, sizeof line);
    assert_int_equal(n, strlen(line));
    assert_non_null(strstr(line, f->table));
    assert_non_null(strstr(line, "vocab_size=16 dim=4 dtype=float32 "
                                 "positional=learned context_length=8"));
    char small[16];
    assert_int_equal(tv_server_summary(f->srv, small, sizeof small), 15);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup_up, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(reload_swaps_in_a_table_of_the_same_dim),
        T(reload_keeps_the_old_table_for_another_dim),
        T(reload_keeps_the_old_table_when_the_file_is_no_table),
        T(the_summary_names_the_table_and_its_shape),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
