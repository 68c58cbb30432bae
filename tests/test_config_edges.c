/* test_config_edges.c -- edges of reading settings
 * (server/runtime/config_value.c): an API key file longer than the first
 * read buffer, one too large for a key, one that is a directory, one with
 * a NUL byte; size and seconds values at the edge of what parses.
 *
 * Threads: one (the test's).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "testutil.h"

/* tv_config_load on a NULL-terminated list of arguments after "serve". */
static int load(tv_config *c, char *err, size_t errlen, ...)
{
    char *argv[32] = {"serve"};
    int argc = 1;
    va_list ap;
    va_start(ap, errlen);
    for (char *a = va_arg(ap, char *); a; a = va_arg(ap, char *))
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    return tv_config_load(c, argc, argv, err, errlen);
}

/* A load of the flags fails with a message holding `want`. */
static void refused(const char *want, const char *flag, const char *value)
{
    tv_config c;
    char err[512];
    assert_int_equal(load(&c, err, sizeof err, flag, value, NULL),
                     TV_CONFIG_ERROR);
    if (!strstr(err, want))
        fail_msg("%s %s: '%s' lacks '%s'", flag, value, err, want);
    tv_config_free(&c);
}

/* A file of n bytes of 'k' (then "\r\n" where crlf). */
static char *key_file(size_t n, int crlf)
{
    char *text = malloc(n + 3);
    assert_non_null(text);
    memset(text, 'k', n);
    strcpy(text + n, crlf ? "\r\n" : "");
    char *path = tu_temp_file(text);
    free(text);
    assert_non_null(path);
    return path;
}

static void a_key_longer_than_the_first_read_is_read_whole(void **state)
{
    (void)state;
    for (size_t n = 250; n < 260; n++) {
        char *path = key_file(n * 4, n % 2);
        tv_config c;
        char err[512];
        assert_int_equal(load(&c, err, sizeof err, "--api-key-file", path,
                              NULL),
                         TV_CONFIG_OK);
        assert_int_equal(strlen(c.api_key), n * 4);
        assert_int_equal(strspn(c.api_key, "k"), n * 4);
        tv_config_free(&c);
        unlink(path);
        free(path);
    }
}

static void a_key_file_of_64_kib_or_more_is_too_large(void **state)
{
    (void)state;
    char *path = key_file(70000, 0);
    refused("is too large for a key", "--api-key-file", path);
    unlink(path);
    free(path);
}

static void a_directory_as_key_file_cannot_be_read(void **state)
{
    (void)state;
    char dir[] = "/tmp/tokvec-keydir-XXXXXX";
    assert_non_null(mkdtemp(dir));
    refused("--api-key-file", "--api-key-file", dir);
    rmdir(dir);
}

static void a_key_file_with_a_nul_byte_holds_no_key(void **state)
{
    (void)state;
    char path[] = "/tmp/tokvec-key-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "ab\0cd\n", 6), 6);
    close(fd);
    refused("(it contains a NUL byte)", "--api-key-file", path);
    unlink(path);
}

static void sizes_and_seconds_out_of_the_number_syntax_are_refused(
    void **state)
{
    (void)state;
    refused("--max-body-bytes", "--max-body-bytes", "+5");
    refused("--max-body-bytes", "--max-body-bytes", "5 MiB");
    refused("--max-body-bytes", "--max-body-bytes", "99999999999999999999999");
    refused("--request-timeout", "--request-timeout", "1e999");
    refused("--request-timeout", "--request-timeout", "5h");
    refused("--port", "--port", "80x");
    refused("--port", "--port", "-");
}

static void a_lone_double_dash_is_an_unknown_option_a_lone_dash_a_table(
    void **state)
{
    (void)state;
    refused("unknown option '--'", "--", NULL);
    tv_config c;
    char err[512];
    assert_int_equal(load(&c, err, sizeof err, "-", NULL), TV_CONFIG_OK);
    assert_string_equal(c.table, "-");
    tv_config_free(&c);
    assert_int_equal(load(&c, err, sizeof err, "--port", "1", "-h", NULL),
                     TV_CONFIG_HELP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_key_longer_than_the_first_read_is_read_whole),
        cmocka_unit_test(a_key_file_of_64_kib_or_more_is_too_large),
        cmocka_unit_test(a_directory_as_key_file_cannot_be_read),
        cmocka_unit_test(a_key_file_with_a_nul_byte_holds_no_key),
        cmocka_unit_test(
            sizes_and_seconds_out_of_the_number_syntax_are_refused),
        cmocka_unit_test(
            a_lone_double_dash_is_an_unknown_option_a_lone_dash_a_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
