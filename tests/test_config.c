/* test_config.c -- settings of `tokvec serve` (server/runtime/config.c):
 * precedence flag > env > file > default, every error names its source, sizes,
 * seconds, bounds, the API key file, describe never shows the key, and the
 * sample config/tokvec.json equals the defaults. Runs from the top directory.
 * Single-threaded; each test starts with no TOKVEC_* variable set.
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

#include "config.h"
#include "testutil.h"

extern char **environ;

static void clear_tokvec_env(void)
{
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++)
            if (!strncmp(*e, "TOKVEC_", 7)) {
                char name[256];
                size_t n = strcspn(*e, "=");
                snprintf(name, sizeof name, "%.*s", (int)n, *e);
                unsetenv(name);
                again = 1;
                break;
            }
    }
}

static int reset(void **state)
{
    (void)state;
    clear_tokvec_env();
    return 0;
}

/* Writes text to a new temporary file; returns its malloc'd path. */
static char *temp_file(const char *text)
{
    char *path = tu_temp_file(text);
    assert_non_null(path);
    return path;
}

static void drop_file(char *path)
{
    unlink(path);
    free(path);
}

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

/* Expects a load error whose message contains every given fragment. */
#define EXPECT_ERROR(msgs, ...)                                       \
    do {                                                              \
        tv_config c_;                                                 \
        char e_[512];                                                 \
        assert_int_equal(load(&c_, e_, sizeof e_, __VA_ARGS__, NULL), \
                         TV_CONFIG_ERROR);                            \
        for (const char *const *m_ = (msgs); *m_; m_++)               \
            if (!strstr(e_, *m_))                                     \
                fail_msg("error '%s' lacks '%s'", e_, *m_);           \
        tv_config_free(&c_);                                          \
    } while (0)
#define MSGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void defaults_follow_the_contract(void **state)
{
    (void)state;
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_string_equal(c.table, "data/gpt2-256.safetensors");
    assert_string_equal(c.host, "127.0.0.1");
    assert_int_equal(c.port, 8080);
    assert_int_equal(c.threads, 0);
    assert_int_equal(c.max_body_bytes, 16 << 20);
    assert_int_equal(c.max_tokens, 65536);
    assert_int_equal(c.max_batch, 4096);
    assert_int_equal(c.max_queue, 1024);
    assert_int_equal(c.max_connections, 1024);
    assert_int_equal(c.max_connections_per_ip, 0);
    assert_true(c.request_timeout == 30.0);
    assert_int_equal(c.max_inflight_bytes, 1LL << 30);
    assert_true(c.drain_timeout == 30.0);
    assert_string_equal(c.api_key, "");
    assert_string_equal(c.api_key_file, "");
    assert_string_equal(c.cors_origin, "");
    assert_string_equal(c.log_format, "text");
    assert_string_equal(c.log_level, "info");
    assert_int_equal(c.access_log, 1);
    assert_string_equal(c.positional, "auto");
    assert_string_equal(c.token_tensor, "");
    assert_string_equal(c.position_tensor, "");
    assert_string_equal(c.position_path, "");
    assert_string_equal(c.tokenizer, "");
    assert_string_equal(c.config_path, "");
    tv_config_free(&c);
}

/* describe() minus the trailing " config=..." pair. */
static void settings_line(const tv_config *c, char *buf, size_t len)
{
    tv_config_describe(c, buf, len);
    char *cfg = strstr(buf, " config=");
    assert_non_null(cfg);
    *cfg = '\0';
}

static void sample_config_file_loads_and_equals_the_defaults(void **state)
{
    (void)state;
    tv_config d, f;
    char err[256], a[4096], b[4096];
    assert_int_equal(load(&d, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_int_equal(load(&f, err, sizeof err, "--config",
                          "config/tokvec.json", NULL),
                     TV_CONFIG_OK);
    assert_string_equal(f.config_path, "config/tokvec.json");
    settings_line(&d, a, sizeof a);
    settings_line(&f, b, sizeof b);
    assert_string_equal(a, b);
    /* Every setting is in the file: as many keys as settings. */
    size_t nsettings = 0;
    for (char *p = strchr(a, '='); p; p = strchr(p + 1, '='))
        nsettings++;
    FILE *fp = fopen("config/tokvec.json", "r");
    assert_non_null(fp);
    size_t nkeys = 0;
    for (int ch = fgetc(fp); ch != EOF; ch = fgetc(fp))
        nkeys += ch == ':';
    fclose(fp);
    assert_int_equal(nkeys, nsettings);
    tv_config_free(&d);
    tv_config_free(&f);
}

static void flag_beats_env_beats_file_beats_default(void **state)
{
    (void)state;
    char *path = temp_file("{\"port\": 1111, \"max_tokens\": 5, "
                           "\"threads\": 3}");
    setenv("TOKVEC_PORT", "2222", 1);
    setenv("TOKVEC_MAX_TOKENS", "6", 1);
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--config", path, "--port",
                          "3333", NULL),
                     TV_CONFIG_OK);
    assert_int_equal(c.port, 3333);      /* flag */
    assert_int_equal(c.max_tokens, 6);   /* env over file */
    assert_int_equal(c.threads, 3);      /* file over default */
    assert_int_equal(c.max_batch, 4096); /* default */
    tv_config_free(&c);
    drop_file(path);
}

static void config_file_from_env_and_flag_beats_it(void **state)
{
    (void)state;
    char *p1 = temp_file("{\"port\": 1111}");
    char *p2 = temp_file("{\"port\": 2222}");
    setenv("TOKVEC_CONFIG", p1, 1);
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_int_equal(c.port, 1111);
    assert_string_equal(c.config_path, p1);
    tv_config_free(&c);
    assert_int_equal(
        load(&c, err, sizeof err, "--config=", NULL) == TV_CONFIG_ERROR, 1);
    tv_config_free(&c);
    assert_int_equal(load(&c, err, sizeof err, "--config", p2, NULL),
                     TV_CONFIG_OK);
    assert_int_equal(c.port, 2222);
    tv_config_free(&c);
    drop_file(p1);
    drop_file(p2);
}

static void flags_take_both_spellings_and_the_last_wins(void **state)
{
    (void)state;
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--max-body-bytes=2k", "--host",
                          "0.0.0.0", "--port=9", "--port", "10", "--api-key",
                          "-starts-with-dash", NULL),
                     TV_CONFIG_OK);
    assert_int_equal(c.max_body_bytes, 2048);
    assert_string_equal(c.host, "0.0.0.0");
    assert_int_equal(c.port, 10);
    assert_string_equal(c.api_key, "-starts-with-dash");
    tv_config_free(&c);
}

static void table_may_be_the_one_argument(void **state)
{
    (void)state;
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "t.safetensors", "--port", "1",
                          NULL),
                     TV_CONFIG_OK);
    assert_string_equal(c.table, "t.safetensors");
    tv_config_free(&c);
    EXPECT_ERROR(MSGS("twice"), "a.safetensors", "--table", "b");
    EXPECT_ERROR(MSGS("'b'"), "a", "b");
    EXPECT_ERROR(MSGS("'-x'"), "-x");
    /* "--" alone is no flag and no file; "-" is a file name */
    EXPECT_ERROR(MSGS("'--'"), "--");
    assert_int_equal(load(&c, err, sizeof err, "-", NULL), TV_CONFIG_OK);
    assert_string_equal(c.table, "-");
    tv_config_free(&c);
}

static void unknown_tokvec_env_vars_are_ignored_with_a_warning(void **state)
{
    (void)state;
    tv_config c;
    char err[256];
    setenv("TOKVEC_PORT", "1234", 1);
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_string_equal(c.warnings, "");
    tv_config_free(&c);

    setenv("TOKVEC_URL", "http://x", 1);
    setenv("TOKVEC_TABLE_FILE", "whatever", 1);
    setenv("TOKVEC_MAX_BODY", "abc", 1);
    setenv("TOKVEC_prot", "1", 1); /* names are case-sensitive */
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_int_equal(c.max_body_bytes, 16 << 20);
    assert_int_equal(c.port, 1234);
    assert_string_equal(c.table, "data/gpt2-256.safetensors");
    assert_non_null(
        strstr(c.warnings, "TOKVEC_URL is not a setting; ignored\n"));
    assert_non_null(strstr(c.warnings,
                           "TOKVEC_MAX_BODY is not a setting (did you mean "
                           "TOKVEC_MAX_BODY_BYTES?); ignored\n"));
    assert_non_null(strstr(c.warnings, "TOKVEC_TABLE_FILE is not"));
    assert_non_null(strstr(c.warnings,
                           "TOKVEC_prot is not a setting (did you mean "
                           "TOKVEC_PORT?)"));
    assert_null(strstr(c.warnings, "TOKVEC_PORT is not"));
    tv_config_free(&c);
    assert_null(c.warnings);
}

static void unknown_flags_and_keys_name_the_closest_setting(void **state)
{
    (void)state;
    tv_config c;
    char err[256], want[512];
    assert_int_equal(load(&c, err, sizeof err, "--prot", "1", NULL),
                     TV_CONFIG_ERROR);
    assert_string_equal(err, "unknown option '--prot' (did you mean "
                             "--port?)");
    EXPECT_ERROR(MSGS("'--max-token' (did you mean --max-tokens?)"),
                 "--max-token=5");
    EXPECT_ERROR(MSGS("'--confg' (did you mean --config?)"), "--confg", "x");
    EXPECT_ERROR(MSGS("unknown option '--zzz' (see --help)"), "--zzz", "1");
    char *typo = temp_file("{\"max_bach\": 5}");
    char *cfg = temp_file("{\"confg\": 5}");
    assert_int_equal(load(&c, err, sizeof err, "--config", typo, NULL),
                     TV_CONFIG_ERROR);
    snprintf(want, sizeof want,
             "%s: unknown key 'max_bach' (did you mean max_batch?)", typo);
    assert_string_equal(err, want);
    /* "config" is no key: never suggested for one. */
    assert_int_equal(load(&c, err, sizeof err, "--config", cfg, NULL),
                     TV_CONFIG_ERROR);
    snprintf(want, sizeof want, "%s: unknown key 'confg'", cfg);
    assert_string_equal(err, want);
    drop_file(typo);
    drop_file(cfg);
}

/* --help is suggested for a misspelt flag; never as a variable or a key. */
static void help_is_suggested_for_flags_only(void **state)
{
    (void)state;
    EXPECT_ERROR(MSGS("'--hepl' (did you mean --help?)"), "--hepl");
    tv_config c;
    char err[256];
    setenv("TOKVEC_HELP", "1", 1);
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    if (strstr(c.warnings, "did you mean TOKVEC_HELP"))
        fail_msg("warnings: %s", c.warnings);
    tv_config_free(&c);
    unsetenv("TOKVEC_HELP");
}

/* serve's built-in default tokenizer applies only when no source named
 * one: a flag, a variable or a key naming "" (none) counts as named. */
static void tokenizer_given_says_whether_a_source_named_it(void **state)
{
    (void)state;
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_int_equal(c.tokenizer_given, 0);
    tv_config_free(&c);
    assert_int_equal(load(&c, err, sizeof err, "--tokenizer", "", NULL),
                     TV_CONFIG_OK);
    assert_int_equal(c.tokenizer_given, 1);
    tv_config_free(&c);
    setenv("TOKVEC_TOKENIZER", "", 1);
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_int_equal(c.tokenizer_given, 1);
    tv_config_free(&c);
    unsetenv("TOKVEC_TOKENIZER");
    char *f = temp_file("{\"tokenizer\": \"\"}");
    assert_int_equal(load(&c, err, sizeof err, "--config", f, NULL),
                     TV_CONFIG_OK);
    assert_int_equal(c.tokenizer_given, 1);
    tv_config_free(&c);
    drop_file(f);
}

static void env_var_sets_every_kind(void **state)
{
    (void)state;
    setenv("TOKVEC_MAX_BODY_BYTES", "1MiB", 1);
    setenv("TOKVEC_REQUEST_TIMEOUT", "500ms", 1);
    setenv("TOKVEC_ACCESS_LOG", "off", 1);
    setenv("TOKVEC_LOG_FORMAT", "json", 1);
    setenv("TOKVEC_CORS_ORIGIN", "*", 1);
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_int_equal(c.max_body_bytes, 1 << 20);
    assert_true(c.request_timeout == 0.5);
    assert_int_equal(c.access_log, 0);
    assert_string_equal(c.log_format, "json");
    assert_string_equal(c.cors_origin, "*");
    tv_config_free(&c);
}

static void errors_name_flag_and_value(void **state)
{
    (void)state;
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--port", "abc", NULL),
                     TV_CONFIG_ERROR);
    assert_string_equal(err, "--port: 'abc' is not an integer");
    EXPECT_ERROR(MSGS("--max-body", "unknown"), "--max-body", "1");
    EXPECT_ERROR(MSGS("--port", "missing value"), "--port");
    EXPECT_ERROR(MSGS("--log-level", "'loud'", "debug|info|warn|error"),
                 "--log-level=loud");
    EXPECT_ERROR(MSGS("--access-log", "'maybe'"), "--access-log", "maybe");
    EXPECT_ERROR(MSGS("--port", "out of range"), "--port",
                 "99999999999999999999999");
}

static void errors_name_env_var_and_value(void **state)
{
    (void)state;
    tv_config c;
    char err[256];
    setenv("TOKVEC_MAX_TOKENS", "0", 1);
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_ERROR);
    assert_string_equal(err, "TOKVEC_MAX_TOKENS: 0 is below the minimum 1");
    tv_config_free(&c);
    /* A good flag does not hide a bad env var: both are read. */
    setenv("TOKVEC_MAX_TOKENS", "x", 1);
    EXPECT_ERROR(MSGS("TOKVEC_MAX_TOKENS", "'x'"), "--max-tokens", "5");
}

static void errors_name_file_and_key(void **state)
{
    (void)state;
    char *unknown = temp_file("{\"max_body\": 5}");
    char *wrong = temp_file("{\"port\": \"8080\"}");
    char *real = temp_file("{\"port\": 80.5}");
    char *low = temp_file("{\"max_batch\": 0}");
    char *notjson = temp_file("{\"port\": ");
    char *array = temp_file("[1, 2]");
    char *dup = temp_file("{\"port\": 1, \"port\": 2}");
    char *cfgkey = temp_file("{\"config\": \"x.json\"}");

    tv_config c;
    char err[512], want[512];
    assert_int_equal(load(&c, err, sizeof err, "--config", unknown, NULL),
                     TV_CONFIG_ERROR);
    snprintf(want, sizeof want,
             "%s: unknown key 'max_body' (did you mean max_body_bytes?)",
             unknown);
    assert_string_equal(err, want);
    EXPECT_ERROR(MSGS(wrong, "port", "\"8080\"", "integer"), "--config",
                 wrong);
    EXPECT_ERROR(MSGS(real, "port", "80.5"), "--config", real);
    EXPECT_ERROR(MSGS(low, "max_batch", "0 is below the minimum 1"),
                 "--config", low);
    EXPECT_ERROR(MSGS(notjson, "not valid JSON"), "--config", notjson);
    EXPECT_ERROR(MSGS(array, "not a JSON object"), "--config", array);
    EXPECT_ERROR(MSGS(dup, "port"), "--config", dup);
    EXPECT_ERROR(MSGS(cfgkey, "unknown key 'config'"), "--config", cfgkey);
    EXPECT_ERROR(MSGS("--config", "cannot read", "/nonexistent/x.json"),
                 "--config", "/nonexistent/x.json");
    setenv("TOKVEC_CONFIG", "/nonexistent/y.json", 1);
    EXPECT_ERROR(MSGS("TOKVEC_CONFIG", "cannot read", "/nonexistent/y.json"),
                 "--port", "1");
    drop_file(unknown);
    drop_file(wrong);
    drop_file(real);
    drop_file(low);
    drop_file(notjson);
    drop_file(array);
    drop_file(dup);
    drop_file(cfgkey);
}

static void file_values_of_each_json_type(void **state)
{
    (void)state;
    char *path = temp_file(
        "{\"max_body_bytes\": \"64k\", \"max_inflight_bytes\": 1000,"
        " \"request_timeout\": 0.25, \"drain_timeout\": \"2m\","
        " \"access_log\": false, \"positional\": \"none\"}");
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--config", path, NULL),
                     TV_CONFIG_OK);
    assert_int_equal(c.max_body_bytes, 65536);
    assert_int_equal(c.max_inflight_bytes, 1000);
    assert_true(c.request_timeout == 0.25);
    assert_true(c.drain_timeout == 120.0);
    assert_int_equal(c.access_log, 0);
    assert_string_equal(c.positional, "none");
    tv_config_free(&c);
    drop_file(path);
}

/* Each kind of setting given each JSON type in a file: the types it takes
 * load (a bool takes true, false, 0 and 1), every other type is refused
 * naming the key, the value and what it takes. */
static void file_values_of_a_wrong_json_type_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *json, *says;
    } bad[] = {
        {"{\"access_log\": 2}", "access_log: 2 is not true or false"},
        {"{\"access_log\": \"yes\"}", "\"yes\" is not true or false"},
        {"{\"access_log\": null}", "null is not true or false"},
        {"{\"access_log\": 1.0}", "1.0 is not true or false"},
        {"{\"host\": 1}", "host: 1 is not a string"},
        {"{\"positional\": true}", "positional: true is not a string"},
        {"{\"port\": [80]}", "port: [80] is not an integer"},
        {"{\"max_body_bytes\": 1.5}", "1.5 is not an integer or a size"},
        {"{\"max_body_bytes\": false}", "false is not an integer or a size"},
        {"{\"request_timeout\": true}", "true is not a number of seconds"},
        {"{\"request_timeout\": {}}", "{} is not a number of seconds"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *path = temp_file(bad[i].json);
        EXPECT_ERROR(MSGS(path, bad[i].says), "--config", path);
        drop_file(path);
    }
    static const struct {
        const char *json;
        int access_log;
        double timeout;
    } good[] = {
        {"{\"access_log\": 0, \"request_timeout\": 3}", 0, 3.0},
        {"{\"access_log\": 1, \"request_timeout\": \"250ms\"}", 1, 0.25},
        {"{\"access_log\": true, \"request_timeout\": 1e1}", 1, 10.0},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char *path = temp_file(good[i].json);
        tv_config c;
        char err[256];
        assert_int_equal(load(&c, err, sizeof err, "--config", path, NULL),
                         TV_CONFIG_OK);
        assert_int_equal(c.access_log, good[i].access_log);
        assert_true(c.request_timeout == good[i].timeout);
        tv_config_free(&c);
        drop_file(path);
    }
}

static int64_t size_of(const char *v)
{
    tv_config c;
    char err[256];
    if (load(&c, err, sizeof err, "--max-inflight-bytes", v, NULL))
        return -1;
    int64_t n = c.max_inflight_bytes;
    tv_config_free(&c);
    return n;
}

static void sizes_take_binary_and_decimal_units(void **state)
{
    (void)state;
    assert_int_equal(size_of("1048576"), 1048576);
    assert_int_equal(size_of("64k"), 65536);
    assert_int_equal(size_of("64K"), 65536);
    assert_int_equal(size_of("2KiB"), 2048);
    assert_int_equal(size_of("16MiB"), 16 << 20);
    assert_int_equal(size_of("16M"), 16 << 20);
    assert_int_equal(size_of("1GiB"), 1LL << 30);
    assert_int_equal(size_of("2TiB"), 2LL << 40);
    assert_int_equal(size_of("5kB"), 5000);
    assert_int_equal(size_of("3MB"), 3000000);
    assert_int_equal(size_of("1GB"), 1000000000);
    assert_int_equal(size_of("7B"), 7);
    assert_int_equal(size_of("1.5M"), -1);
    assert_int_equal(size_of("12Q"), -1);
    assert_int_equal(size_of("M"), -1);
    assert_int_equal(size_of(" 5"), -1);
    assert_int_equal(size_of("5 "), -1);
    assert_int_equal(size_of(""), -1);
    assert_int_equal(size_of("0"), -1); /* below 1 */
    assert_int_equal(size_of("-5"), -1);
    assert_int_equal(size_of("99999999999999TiB"), -1);
    EXPECT_ERROR(MSGS("--max-body-bytes", "'12Q'", "not a size"),
                 "--max-body-bytes", "12Q");
}

static double secs_of(const char *v)
{
    tv_config c;
    char err[256];
    if (load(&c, err, sizeof err, "--drain-timeout", v, NULL))
        return -1;
    double s = c.drain_timeout;
    tv_config_free(&c);
    return s;
}

static void seconds_take_numbers_and_units(void **state)
{
    (void)state;
    assert_true(secs_of("30") == 30.0);
    assert_true(secs_of("0.5") == 0.5);
    assert_true(secs_of(".25") == 0.25);
    assert_true(secs_of("30s") == 30.0);
    assert_true(secs_of("500ms") == 0.5);
    assert_true(secs_of("2m") == 120.0);
    assert_true(secs_of("0") == 0.0);
    assert_true(secs_of("abc") == -1);
    assert_true(secs_of("-1") == -1);
    assert_true(secs_of("5h") == -1);
    assert_true(secs_of("nan") == -1);
    assert_true(secs_of("inf") == -1);
    assert_true(secs_of("100000") == -1); /* above one day */
    EXPECT_ERROR(MSGS("--request-timeout: 0 is below the minimum 0.001"),
                 "--request-timeout", "0");
}

static void bounds_are_checked(void **state)
{
    (void)state;
    tv_config c;
    char err[256];
    EXPECT_ERROR(MSGS("--port: 0 is below the minimum 1"), "--port", "0");
    EXPECT_ERROR(MSGS("--port: 65536 is above the maximum 65535"), "--port",
                 "65536");
    EXPECT_ERROR(MSGS("--threads", "1025"), "--threads", "1025");
    EXPECT_ERROR(MSGS("--threads", "-1"), "--threads", "-1");
    EXPECT_ERROR(MSGS("--max-queue", "below"), "--max-queue", "0");
    EXPECT_ERROR(MSGS("--max-connections", "below"), "--max-connections", "0");
    assert_int_equal(load(&c, err, sizeof err, "--port", "65535", "--threads",
                          "1024", NULL),
                     TV_CONFIG_OK);
    assert_int_equal(c.port, 65535);
    assert_int_equal(c.threads, 1024);
    tv_config_free(&c);
}

static void api_key_file_is_read_without_trailing_newline(void **state)
{
    (void)state;
    char *path = temp_file("s3cret-key\r\n");
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--api-key-file", path, NULL),
                     TV_CONFIG_OK);
    assert_string_equal(c.api_key, "s3cret-key");
    tv_config_free(&c);
    setenv("TOKVEC_API_KEY_FILE", path, 1);
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_string_equal(c.api_key, "s3cret-key");
    tv_config_free(&c);
    drop_file(path);
}

static void api_key_file_errors(void **state)
{
    (void)state;
    char *empty = temp_file("\n");
    char *key = temp_file("k\n");
    EXPECT_ERROR(MSGS("--api-key-file", "cannot read", "/nonexistent/key"),
                 "--api-key-file", "/nonexistent/key");
    EXPECT_ERROR(MSGS("--api-key-file", "no key"), "--api-key-file", empty);
    EXPECT_ERROR(MSGS("--api-key", "--api-key-file", "both"), "--api-key", "k",
                 "--api-key-file", key);
    setenv("TOKVEC_API_KEY", "k", 1);
    EXPECT_ERROR(MSGS("TOKVEC_API_KEY", "--api-key-file", "both"),
                 "--api-key-file", key);
    drop_file(empty);
    drop_file(key);
}

static void describe_shows_settings_but_never_the_key(void **state)
{
    (void)state;
    tv_config c;
    char err[256], line[4096];
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    tv_config_describe(&c, line, sizeof line);
    assert_non_null(strstr(line, "api_key=<unset>"));
    tv_config_free(&c);

    assert_int_equal(load(&c, err, sizeof err, "--api-key",
                          "hunter2-very-secret", "--host", "::1",
                          "--cors-origin", "a b", NULL),
                     TV_CONFIG_OK);
    size_t n = tv_config_describe(&c, line, sizeof line);
    assert_int_equal(n, strlen(line));
    assert_null(strstr(line, "hunter2"));
    assert_non_null(strstr(line, "api_key=<set>"));
    assert_non_null(strstr(line, "host=::1 "));
    assert_non_null(strstr(line, "port=8080 "));
    assert_non_null(strstr(line, "max_body_bytes=16777216 "));
    assert_non_null(strstr(line, "request_timeout=30 "));
    assert_non_null(strstr(line, "cors_origin=\"a b\" "));
    assert_non_null(strstr(line, "access_log=true"));
    assert_null(strchr(line, '\n'));

    /* Truncation: always NUL-terminated, never past len. */
    for (size_t len = 1; len < 64; len++) {
        char small[64];
        memset(small, 'X', sizeof small);
        size_t w = tv_config_describe(&c, small, len);
        assert_true(w < len);
        assert_int_equal(strlen(small), w);
        assert_int_equal(small[len - 1 < 63 ? len : 63], 'X');
    }
    assert_int_equal(tv_config_describe(&c, line, 0), 0);
    tv_config_free(&c);
}

/* --watch (TOKVEC_WATCH, "watch"): off by default; a boolean like
 * every other (a value always follows the flag). */
/* A string setting holding a quote, a backslash, '=', a space, a tab or
 * DEL is quoted and escaped in the settings line, so that it stays one
 * parseable word; a buffer too small cuts the line and stays terminated. */
static void describe_quotes_strings_that_would_break_the_line(void **state)
{
    (void)state;
    tv_config c;
    char err[256], line[8192];
    assert_int_equal(load(&c, err, sizeof err, "--host", "a \"b\"\\c=d\te\x7f",
                          "--served-model-name", "plain-name", NULL),
                     TV_CONFIG_OK);
    size_t n = tv_config_describe(&c, line, sizeof line);
    assert_int_equal(n, strlen(line));
    assert_non_null(strstr(line, " host=\"a \\\"b\\\"\\\\c=d\\x09e\\x7f\" "));
    assert_non_null(strstr(line, " served_model_name=plain-name "));
    assert_non_null(strstr(line, " config=\"\""));
    char small[24];
    assert_int_equal(tv_config_describe(&c, small, sizeof small), 23);
    assert_int_equal(strlen(small), 23);
    assert_int_equal(strncmp(small, line, 23), 0);
    assert_int_equal(tv_config_describe(&c, NULL, 0), 0);
    tv_config_free(&c);
    /* each byte that needs the quotes, first in a word that needs them */
    static const char *const quoted[][2] = {
        {"a\"", " host=\"a\\\"\" "},    {"a\\", " host=\"a\\\\\" "},
        {"a=", " host=\"a=\" "},        {"a\x7f", " host=\"a\\x7f\" "},
        {"a\x01", " host=\"a\\x01\" "}, {"~", " host=~ "},
    };
    for (size_t i = 0; i < sizeof quoted / sizeof quoted[0]; i++) {
        assert_int_equal(load(&c, err, sizeof err, "--host", quoted[i][0],
                              NULL),
                         TV_CONFIG_OK);
        tv_config_describe(&c, line, sizeof line);
        if (!strstr(line, quoted[i][1]))
            fail_msg("host '%s': %s", quoted[i][0], line);
        tv_config_free(&c);
    }
}

static void watch_is_a_flag_env_var_and_key(void **state)
{
    (void)state;
    tv_config c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_int_equal(c.watch, 0);
    tv_config_free(&c);
    assert_int_equal(load(&c, err, sizeof err, "t.safetensors", "--watch",
                          "true", NULL),
                     TV_CONFIG_OK);
    assert_int_equal(c.watch, 1);
    assert_string_equal(c.table, "t.safetensors");
    tv_config_free(&c);
    setenv("TOKVEC_WATCH", "true", 1);
    assert_int_equal(load(&c, err, sizeof err, "--watch=off", NULL),
                     TV_CONFIG_OK);
    assert_int_equal(c.watch, 0); /* the flag beats the variable */
    tv_config_free(&c);
    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    assert_int_equal(c.watch, 1);
    tv_config_free(&c);
    unsetenv("TOKVEC_WATCH");
    EXPECT_ERROR(MSGS("--watch", "missing value"), "--watch");
    EXPECT_ERROR(MSGS("--watch", "'t.safetensors'", "not a boolean"),
                 "--watch", "t.safetensors");
}

static void help_prints_every_setting_to_stdout(void **state)
{
    (void)state;
    /* --help wins over anything else and prints to stdout. */
    fflush(stdout);
    int saved = dup(1);
    FILE *cap = tmpfile();
    assert_non_null(cap);
    dup2(fileno(cap), 1);
    tv_config c;
    char err[256];
    int rc = load(&c, err, sizeof err, "--port", "bad", "--help", NULL);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    assert_int_equal(rc, TV_CONFIG_HELP);

    rewind(cap);
    static char text[32768];
    size_t n = fread(text, 1, sizeof text - 1, cap);
    text[n] = '\0';
    fclose(cap);

    assert_int_equal(load(&c, err, sizeof err, NULL), TV_CONFIG_OK);
    char line[4096];
    settings_line(&c, line, sizeof line);
    tv_config_free(&c);
    int count = 0;
    for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " ")) {
        char key[64], flag[70], env[80];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(tok, "="), tok);
        snprintf(flag, sizeof flag, "--%s ", key);
        snprintf(env, sizeof env, "TOKVEC_%s,", key);
        for (char *p = flag; *p; p++)
            *p = *p == '_' ? '-' : *p;
        for (char *p = env; *p; p++)
            *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        if (!strstr(text, flag) || !strstr(text, env))
            fail_msg("--help lacks %s or %s", flag, env);
        count++;
    }
    assert_int_equal(count, 34);
    assert_non_null(strstr(text, "TOKVEC_CONFIG"));
    assert_non_null(strstr(text, "ignored"));
    assert_non_null(strstr(text, "16MiB"));
    /* --table names every table format */
    const char *formats[] = {".safetensors,", ".index.json", ".npy", ".gguf"};
    const char *table = strstr(text, "--table ");
    assert_non_null(table);
    const char *eol = strstr(table + 1, "\n  --"); /* the next setting */
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        const char *at = strstr(table, formats[i]);
        if (!at || (eol && at > eol))
            fail_msg("--table's help lacks %s", formats[i]);
    }
}

int main(void)
{
    clear_tokvec_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(defaults_follow_the_contract, reset),
        cmocka_unit_test_setup(
            sample_config_file_loads_and_equals_the_defaults, reset),
        cmocka_unit_test_setup(flag_beats_env_beats_file_beats_default, reset),
        cmocka_unit_test_setup(config_file_from_env_and_flag_beats_it, reset),
        cmocka_unit_test_setup(flags_take_both_spellings_and_the_last_wins,
                               reset),
        cmocka_unit_test_setup(table_may_be_the_one_argument, reset),
        cmocka_unit_test_setup(
            unknown_tokvec_env_vars_are_ignored_with_a_warning, reset),
        cmocka_unit_test_setup(unknown_flags_and_keys_name_the_closest_setting,
                               reset),
        cmocka_unit_test_setup(help_is_suggested_for_flags_only, reset),
        cmocka_unit_test_setup(tokenizer_given_says_whether_a_source_named_it,
                               reset),
        cmocka_unit_test_setup(env_var_sets_every_kind, reset),
        cmocka_unit_test_setup(errors_name_flag_and_value, reset),
        cmocka_unit_test_setup(errors_name_env_var_and_value, reset),
        cmocka_unit_test_setup(errors_name_file_and_key, reset),
        cmocka_unit_test_setup(file_values_of_each_json_type, reset),
        cmocka_unit_test_setup(
            describe_quotes_strings_that_would_break_the_line, reset),
        cmocka_unit_test_setup(file_values_of_a_wrong_json_type_are_refused,
                               reset),
        cmocka_unit_test_setup(sizes_take_binary_and_decimal_units, reset),
        cmocka_unit_test_setup(seconds_take_numbers_and_units, reset),
        cmocka_unit_test_setup(bounds_are_checked, reset),
        cmocka_unit_test_setup(api_key_file_is_read_without_trailing_newline,
                               reset),
        cmocka_unit_test_setup(api_key_file_errors, reset),
        cmocka_unit_test_setup(describe_shows_settings_but_never_the_key,
                               reset),
        cmocka_unit_test_setup(watch_is_a_flag_env_var_and_key, reset),
        cmocka_unit_test_setup(help_prints_every_setting_to_stdout, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
