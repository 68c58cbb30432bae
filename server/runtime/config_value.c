/* config_value.c -- one setting's value from text (flag, env var, default)
 * or from JSON (a config file key) into tv_config, and the API key file.
 *
 * The syntax of each type (int, size with units, seconds with units, bool,
 * enum) is described atop config.c. What must hold: a value is either
 * stored whole or not at all, and every message names its source and the
 * value as given. Called by config.c on the main thread at start-up only.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_value.h"

static bool enum_has(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t m = bar ? (size_t)(bar - p) : strlen(p);
        if (m == n && !strncmp(p, v, n))
            return true;
        p += m + (bar != NULL);
    }
    return false;
}

/* Decimal integer prefix of v: 0, -1 (not a number) or -2 (overflow);
 * *end is what follows it. */
static int parse_int(const char *v, long long *out, const char **end)
{
    if (!isdigit((unsigned char)v[0]) &&
        !((v[0] == '-' || v[0] == '+') && isdigit((unsigned char)v[1])))
        return -1;
    errno = 0;
    char *e;
    long long x = strtoll(v, &e, 10);
    if (errno == ERANGE)
        return -2;
    *out = x;
    *end = e;
    return 0;
}

/* Size with an optional unit (see the file comment) -> bytes. */
static int parse_size(const char *v, double *bytes)
{
    static const struct {
        const char *unit;
        double mult;
    } units[] = {
        {"", 1},      {"B", 1},    {"k", KiB},   {"K", KiB},
        {"KiB", KiB}, {"M", MiB},  {"MiB", MiB}, {"G", GiB},
        {"GiB", GiB}, {"T", TiB},  {"TiB", TiB}, {"kB", 1e3},
        {"KB", 1e3},  {"MB", 1e6}, {"GB", 1e9},  {"TB", 1e12},
    };
    long long x;
    const char *e;
    if (parse_int(v, &x, &e) != 0 || v[0] == '+')
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(e, units[i].unit)) {
            *bytes = (double)x * units[i].mult;
            return 0;
        }
    return -1;
}

/* Seconds with an optional ms/s/m suffix. */
static int parse_secs(const char *v, double *secs)
{
    if (!isdigit((unsigned char)v[0]) && v[0] != '.')
        return -1;
    errno = 0;
    char *e;
    double x = strtod(v, &e);
    if (e == v || errno == ERANGE || !isfinite(x))
        return -1;
    if (!strcmp(e, "ms"))
        x /= 1000;
    else if (!strcmp(e, "m"))
        x *= 60;
    else if (*e && strcmp(e, "s"))
        return -1;
    *secs = x;
    return 0;
}

static int parse_bool(const char *v, int64_t *b)
{
    static const char *yes[] = {"1", "true", "yes", "on"};
    static const char *no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) {
            *b = 1;
            return 0;
        }
        if (!strcasecmp(v, no[i])) {
            *b = 0;
            return 0;
        }
    }
    return -1;
}

/* Bounds check of a number (integer or seconds); -1 with the message. */
static int check_bounds(const setting *s, const char *src, double x,
                        const char *shown, char *err, size_t errlen)
{
    if (x < s->min) {
        set_err(err, errlen, "%s: %s is below the minimum %.15g", src, shown,
                s->min);
        return -1;
    }
    if (x > s->max) {
        set_err(err, errlen, "%s: %s is above the maximum %.15g", src, shown,
                s->max);
        return -1;
    }
    return 0;
}

/* Parses text value v for setting s into cfg. src names where it came from
 * ("--port", "TOKVEC_PORT", "FILE: port") for the message. */
int tv_setting_set(tv_config *cfg, const setting *s, const char *v,
                   const char *src, char *err, size_t errlen)
{
    long long i;
    const char *end;
    double x;
    char shown[64];

    switch (s->type) {
    case T_ENUM:
        if (!enum_has(s->choices, v)) {
            set_err(err, errlen, "%s: '%s' is not one of %s", src, v,
                    s->choices);
            return -1;
        }
        /* fallthrough */
    case T_STR: {
        char *copy = strdup(v);
        if (!copy) {
            set_err(err, errlen, "%s: out of memory", src);
            return -1;
        }
        free(*str_field(cfg, s));
        *str_field(cfg, s) = copy;
        return 0;
    }
    case T_INT: {
        int r = parse_int(v, &i, &end);
        if (r == 0 && *end)
            r = -1;
        if (r != 0) {
            set_err(err, errlen, "%s: '%s' is %s", src, v,
                    r == -2 ? "out of range" : "not an integer");
            return -1;
        }
        snprintf(shown, sizeof shown, "%lld", i);
        if (check_bounds(s, src, (double)i, shown, err, errlen))
            return -1;
        *int_field(cfg, s) = i;
        return 0;
    }
    case T_SIZE:
    case T_SECS: {
        int size = s->type == T_SIZE;
        if (size ? parse_size(v, &x) : parse_secs(v, &x)) {
            set_err(err, errlen, "%s: '%s' is not %s", src, v,
                    size ? "a size (bytes, or a number with k/M/G/T, "
                           "KiB/MiB/GiB/TiB or kB/MB/GB/TB)"
                         : "a duration (seconds, e.g. 30, 0.5, 30s, 500ms)");
            return -1;
        }
        if (check_bounds(s, src, x, v, err, errlen))
            return -1;
        if (size)
            *int_field(cfg, s) = (int64_t)x;
        else
            *secs_field(cfg, s) = x;
        return 0;
    }
    case T_BOOL:
        if (parse_bool(v, int_field(cfg, s))) {
            set_err(err, errlen, "%s: '%s' is not a boolean (true/false)", src,
                    v);
            return -1;
        }
        return 0;
    }
    assert(!"unknown setting type");
    return -1;
}

/* One key of the config file: JSON value -> text -> set_value. */
int tv_setting_set_json(tv_config *cfg, const setting *s, json_t *j,
                        const char *path, char *err, size_t errlen)
{
    char src[512], text[64];
    const char *v = NULL;
    snprintf(src, sizeof src, "%s: %s", path, s->name);

    switch (s->type) {
    case T_STR:
    case T_ENUM:
        if (json_is_string(j))
            v = json_string_value(j);
        break;
    case T_INT:
        if (json_is_integer(j)) {
            snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT,
                     json_integer_value(j));
            v = text;
        }
        break;
    case T_SIZE:
        if (json_is_string(j))
            v = json_string_value(j);
        else if (json_is_integer(j)) {
            snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT,
                     json_integer_value(j));
            v = text;
        }
        break;
    case T_SECS:
        if (json_is_string(j))
            v = json_string_value(j);
        else if (json_is_number(j)) {
            snprintf(text, sizeof text, "%.17g", json_number_value(j));
            v = text;
        }
        break;
    case T_BOOL:
        if (json_is_boolean(j))
            v = json_is_true(j) ? "true" : "false";
        else if (json_is_integer(j) &&
                 (json_integer_value(j) == 0 || json_integer_value(j) == 1))
            v = json_integer_value(j) ? "1" : "0";
        break;
    }
    if (!v) {
        static const char *want[] = {
            [T_STR] = "a string",
            [T_INT] = "an integer",
            [T_SIZE] = "an integer or a size string like \"16MiB\"",
            [T_SECS] = "a number of seconds or a string like \"500ms\"",
            [T_BOOL] = "true or false",
            [T_ENUM] = "a string",
        };
        char *dump = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
        set_err(err, errlen, "%s: %.60s is not %s", src, dump ? dump : "value",
                want[s->type]);
        free(dump);
        return -1;
    }
    return tv_setting_set(cfg, s, v, src, err, errlen);
}

/* Reads the API key from path into cfg->api_key; trailing CR/LF stripped. */
int tv_config_read_key_file(tv_config *cfg, const char *src, char *err,
                            size_t errlen)
{
    int rc = -1;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    const char *path = cfg->api_key_file;
    FILE *f = fopen(path, "r");
    if (!f) {
        set_err(err, errlen, "%s: cannot read '%s': %s", src, path,
                strerror(errno));
        goto out;
    }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= 65536) {
                set_err(err, errlen, "%s: '%s' is too large for a key", src,
                        path);
                goto out;
            }
            size_t ncap = cap ? 2 * cap : 256;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                set_err(err, errlen, "%s: out of memory", src);
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        set_err(err, errlen, "%s: cannot read '%s'", src, path);
        goto out;
    }
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    if (n == 0 || strlen(buf) != n) {
        set_err(err, errlen, "%s: '%s' holds no key%s", src, path,
                n ? " (it contains a NUL byte)" : "");
        goto out;
    }
    free(cfg->api_key);
    cfg->api_key = buf;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    if (f)
        fclose(f);
    return rc;
}
