/* test_cli_opts.c -- server/cli/cli_opts.c: the option parser the file
 * subcommands share (--name value, --name=value, flags, positionals, "--"),
 * the strict integer and seed parsers, the unknown-option line with its
 * did-you-mean, the table options and opening a table with its reason.
 * The lines the functions print go to stderr: captured into a file here.
 * The commands themselves are driven end to end by tests/e2e/test_cli.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_opts.h"
#include "testutil.h"

/* --- stderr capture ------------------------------------------------------ */

static int saved_stderr = -1;

static void capture_begin(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/stderr", tu_dir);
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0 && saved_stderr >= 0);
    dup2(fd, 2);
    close(fd);
}

/* Ends the capture; what was printed, NUL-terminated, in buf. */
static const char *capture_end(char *buf, size_t cap)
{
    char path[128];
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    snprintf(path, sizeof path, "%s/stderr", tu_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* --- the option parser --------------------------------------------------- */

static const char *const FLAGS[] = {"no-special", "force", "help", NULL};

static opts_t opts_of(int argc, char **argv)
{
    opts_t o = {.argc = argc, .argv = argv, .flags = FLAGS};
    return o;
}

/* The next item is read: name (NULL: a positional) and value (NULL: a
 * flag). */
static void expect_item(opts_t *o, const char *name, const char *value)
{
    assert_int_equal(tv_cli_opt_next(o), 1);
    if (name)
        assert_string_equal(o->name, name);
    else
        assert_null(o->name);
    if (value)
        assert_string_equal(o->value, value);
    else
        assert_null(o->value);
}

static void options_take_a_value_after_a_space_or_an_equals_sign(void **s)
{
    (void)s;
    char *argv[] = {"--dim", "256", "--vocab=50257", "-o", "out.st"};
    opts_t o = opts_of(5, argv);
    expect_item(&o, "dim", "256");
    expect_item(&o, "vocab", "50257");
    expect_item(&o, "o", "out.st");
    assert_int_equal(tv_cli_opt_next(&o), 0);
}

static void flags_take_no_value_and_positionals_have_no_name(void **s)
{
    (void)s;
    char *argv[] = {"file.txt", "--no-special", "-", "-1", "--force"};
    opts_t o = opts_of(5, argv);
    expect_item(&o, NULL, "file.txt");
    expect_item(&o, "no-special", NULL);
    /* "-" (stdin) and a negative number are positionals */
    expect_item(&o, NULL, "-");
    expect_item(&o, NULL, "-1");
    expect_item(&o, "force", NULL);
    assert_int_equal(tv_cli_opt_next(&o), 0);
}

static void double_dash_makes_the_next_argument_positional(void **s)
{
    (void)s;
    char *argv[] = {"--", "--dim", "-h"};
    opts_t o = opts_of(3, argv);
    expect_item(&o, NULL, "--dim");
    expect_item(&o, "help", NULL); /* -h is help, a flag here */
    char *end[] = {"--"};
    o = opts_of(1, end);
    assert_int_equal(tv_cli_opt_next(&o), 0);
}

static void an_option_without_its_value_is_an_error(void **s)
{
    (void)s;
    char *argv[] = {"--dim"};
    opts_t o = opts_of(1, argv);
    assert_int_equal(tv_cli_opt_next(&o), -1);
    assert_string_equal(o.name, "dim");
}

static void a_long_option_name_is_cut_to_the_buffer(void **s)
{
    (void)s;
    char name[200];
    memset(name, 'x', sizeof name - 1);
    name[0] = name[1] = '-';
    name[sizeof name - 1] = '\0';
    char *argv[] = {name, "v"};
    opts_t o = opts_of(2, argv);
    assert_int_equal(tv_cli_opt_next(&o), 1);
    assert_int_equal(strlen(o.name), sizeof o.buf - 1);
    assert_string_equal(o.value, "v");
}

/* --- numbers ------------------------------------------------------------- */

static void integers_are_strict_decimals_within_their_bounds(void **s)
{
    (void)s;
    int64_t v = 0;
    assert_int_equal(tv_cli_parse_i64("256", 1, 1000, &v), 0);
    assert_int_equal(v, 256);
    assert_int_equal(tv_cli_parse_i64("-5", -5, 5, &v), 0);
    assert_int_equal(v, -5);
    static const char *const bad[] = {
        "",   "12x", "0x10", " 1", "1 ",
        "+1", "-",   "1001", "0",  "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        if (tv_cli_parse_i64(bad[i], 1, 1000, &v) != -1)
            fail_msg("took \"%s\"", bad[i]);
        assert_int_equal(v, 7);
    }
    assert_int_equal(tv_cli_parse_i64(NULL, 0, 1, &v), -1);
}

static void seeds_take_torchs_range_negatives_as_twos_complement(void **s)
{
    (void)s;
    uint64_t v = 0;
    assert_int_equal(tv_cli_parse_seed("123", &v), 0);
    assert_int_equal(v, 123);
    assert_int_equal(tv_cli_parse_seed("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(tv_cli_parse_seed("-1", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(tv_cli_parse_seed("-9223372036854775808", &v), 0);
    assert_true(v == (uint64_t)1 << 63);
    static const char *const bad[] = {
        "", "+1", "18446744073709551616", "-9223372036854775809", "1.5", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (tv_cli_parse_seed(bad[i], &v) != -1)
            fail_msg("took \"%s\"", bad[i]);
}

/* --- messages ------------------------------------------------------------ */

static void an_unknown_option_names_the_closest_one(void **s)
{
    (void)s;
    static const char *const known[] = {"port", "host", "table", NULL};
    char out[512];
    capture_begin();
    int rc = tv_cli_unknown_option("serve", "prot", known);
    capture_end(out, sizeof out);
    assert_int_equal(rc, EXIT_USAGE);
    assert_string_equal(out, "tokvec: serve: unknown option '--prot' (did "
                             "you mean --port?)\n");
    capture_begin();
    rc = tv_cli_unknown_option("serve", "zzzzzz", known);
    capture_end(out, sizeof out);
    assert_int_equal(rc, EXIT_USAGE);
    assert_string_equal(out, "tokvec: serve: unknown option '--zzzzzz' "
                             "(see tokvec serve --help)\n");
}

static void table_options_are_consumed_and_others_are_not(void **s)
{
    (void)s;
    tokvec_table_opts to = {0};
    assert_int_equal(tv_cli_table_option("pos", "p.npy", &to), 1);
    assert_string_equal(to.position_path, "p.npy");
    assert_int_equal(tv_cli_table_option("position-path", "q.npy", &to), 1);
    assert_string_equal(to.position_path, "q.npy");
    assert_int_equal(tv_cli_table_option("token-tensor", "wte", &to), 1);
    assert_string_equal(to.token_tensor, "wte");
    assert_int_equal(tv_cli_table_option("position-tensor", "wpe", &to), 1);
    assert_string_equal(to.position_tensor, "wpe");
    assert_int_equal(tv_cli_table_option("dim", "4", &to), 0);
    /* every one of them is in TABLE_OPTIONS, the list for suggestions */
    static const char *const listed[] = {TABLE_OPTIONS};
    for (size_t i = 0; i < sizeof listed / sizeof listed[0]; i++)
        assert_int_equal(tv_cli_table_option(listed[i], "x", &to), 1);
}

static void opening_a_missing_table_prints_one_line_naming_it(void **s)
{
    (void)s;
    char path[128], out[1024];
    snprintf(path, sizeof path, "%s/missing.safetensors", tu_dir);
    tokvec_table *t = (tokvec_table *)1;
    capture_begin();
    int rc = tv_cli_open_table(path, NULL, &t);
    capture_end(out, sizeof out);
    assert_int_equal(rc, EXIT_USAGE);
    assert_null(t);
    assert_int_equal(strncmp(out, "tokvec: ", 8), 0);
    assert_non_null(strstr(out, path));
    assert_non_null(strchr(out, '\n'));
    assert_int_equal(strchr(out, '\n')[1], '\0'); /* one line */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(options_take_a_value_after_a_space_or_an_equals_sign),
        cmocka_unit_test(flags_take_no_value_and_positionals_have_no_name),
        cmocka_unit_test(double_dash_makes_the_next_argument_positional),
        cmocka_unit_test(an_option_without_its_value_is_an_error),
        cmocka_unit_test(a_long_option_name_is_cut_to_the_buffer),
        cmocka_unit_test(integers_are_strict_decimals_within_their_bounds),
        cmocka_unit_test(seeds_take_torchs_range_negatives_as_twos_complement),
        cmocka_unit_test(an_unknown_option_names_the_closest_one),
        cmocka_unit_test(table_options_are_consumed_and_others_are_not),
        cmocka_unit_test(opening_a_missing_table_prints_one_line_naming_it),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
