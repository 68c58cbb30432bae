/* config.c -- the settings of `tokvec serve` (see config.h), as one table.
 *
 * DESIGN. Every setting is one row of `settings[]`: its name (the config-file
 * key; the flag is --name with '_' -> '-', the env var TOKVEC_NAME), its type,
 * where it lives in tv_config, its bounds, its default (written as text and
 * parsed by the same code as every other source, so a default can never be
 * out of bounds without a test noticing) and its help text. Nothing else in
 * this file knows a setting by name except the api_key/api_key_file rule.
 *
 * Loading: defaults, then the config file (--config FILE, else TOKVEC_CONFIG),
 * then TOKVEC_* env vars, then flags in argv order; a later source overwrites
 * an earlier one, so flag > env > file > default. Only env vars that are
 * settings are read: other TOKVEC_* variables (the environment is shared with
 * scripts and clients) are ignored without a word.
 *
 * Value syntax (flags, env vars, and strings in the file):
 *   int      decimal integer
 *   size     integer bytes, optionally followed by a unit: B; k/K/KiB, M/MiB,
 *            G/GiB, T/TiB (powers of 1024); kB/KB, MB, GB, TB (powers of
 *            1000). "16MiB", "64k", "1GiB", "1048576".
 *   seconds  a non-negative number, optionally followed by ms, s or m:
 *            "30", "0.5", "30s", "500ms", "2m".
 *   bool     true/false, 1/0, yes/no, on/off (JSON: true/false or 0/1).
 *   enum     one of the listed words.
 * In the JSON file, strings and enums take JSON strings, ints JSON integers,
 * sizes JSON integers or strings with units, seconds JSON numbers or strings
 * with units; any other JSON type is an error.
 *
 * Threads: tv_config_load runs once on the main thread before any other
 * thread starts; the table is const and the loaded tv_config is read-only
 * afterwards, so any thread may read it. tv_config_usage/describe only read.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"

typedef enum { T_STR, T_INT, T_SIZE, T_SECS, T_BOOL, T_ENUM } setting_type;

typedef struct setting {
    const char *name;    /* config-file key, e.g. "max_body_bytes" */
    setting_type type;
    size_t off;          /* into tv_config: char *, int64_t or double */
    double min, max;     /* T_INT, T_SIZE, T_SECS (inclusive) */
    const char *def;     /* default, in the text syntax above */
    const char *choices; /* T_ENUM: "a|b|c" */
    const char *help;
} setting;

#define OFF(f) offsetof(tv_config, f)
#define KiB 1024.0
#define MiB (1024.0 * KiB)
#define GiB (1024.0 * MiB)
#define TiB (1024.0 * GiB)

/* The one table. Order is the order of --help and of describe. */
static const setting settings[] = {
    {"table", T_STR, OFF(table), 0, 0, "data/gpt2-256.safetensors", NULL,
     "table file (.safetensors or token .npy); also `tokvec serve FILE`"},
    {"position_path", T_STR, OFF(position_path), 0, 0, "", NULL,
     "position table .npy beside a token .npy (\"\" = none)"},
    {"token_tensor", T_STR, OFF(token_tensor), 0, 0, "", NULL,
     "token tensor name (\"\" = search the usual names)"},
    {"position_tensor", T_STR, OFF(position_tensor), 0, 0, "", NULL,
     "position tensor name (\"\" = search the usual names)"},
    {"positional", T_ENUM, OFF(positional), 0, 0, "auto",
     "auto|learned|sinusoidal|none",
     "positions: auto = as the file says"},
    {"host", T_STR, OFF(host), 0, 0, "127.0.0.1", NULL,
     "address to listen on (0.0.0.0 = every interface)"},
    {"port", T_INT, OFF(port), 1, 65535, "8080", NULL, "TCP port"},
    {"unix_socket", T_STR, OFF(unix_socket), 0, 0, "", NULL,
     "also serve on this Unix domain socket path (\"\" = TCP only)"},
    {"threads", T_INT, OFF(threads), 0, 1024, "0", NULL,
     "worker threads: lookup and encoding (0 = number of cores)"},
    {"http_threads", T_INT, OFF(http_threads), 0, 1024, "0", NULL,
     "HTTP threads per listener: I/O and parsing (0 = as --threads)"},
    {"max_body_bytes", T_SIZE, OFF(max_body_bytes), 1, TiB, "16MiB", NULL,
     "largest request body (413 past it)"},
    {"max_buffered_bytes", T_SIZE, OFF(max_buffered_bytes), 1, 64 * TiB,
     "256MiB", NULL,
     "request bodies being received at once, all connections (429 past "
     "it)"},
    {"max_tokens", T_INT, OFF(max_tokens), 1, 2147483647.0, "65536", NULL,
     "most token ids in one request, B*S (413 past it)"},
    {"max_batch", T_INT, OFF(max_batch), 1, 2147483647.0, "4096", NULL,
     "most sequences in one request"},
    {"max_queue", T_INT, OFF(max_queue), 1, 1048576, "1024", NULL,
     "jobs waiting for a worker (429 past it)"},
    {"max_connections", T_INT, OFF(max_connections), 1, 1048576, "1024",
     NULL, "open client connections"},
    {"max_connections_per_ip", T_INT, OFF(max_connections_per_ip), 0,
     1048576, "0", NULL,
     "open connections from one client address (0 = no limit)"},
    {"request_timeout", T_SECS, OFF(request_timeout), 0.001, 86400, "30s",
     NULL, "time to send one whole request (and the idle limit)"},
    {"min_send_rate", T_SIZE, OFF(min_send_rate), 1, 64 * TiB, "512KiB",
     NULL, "bytes/s a reply must be read at (never cut before "
     "request_timeout)"},
    {"max_queue_wait", T_SECS, OFF(max_queue_wait), 0.001, 86400, "30s",
     NULL, "time a job may wait for a worker (503 past it)"},
    {"max_inflight_bytes", T_SIZE, OFF(max_inflight_bytes), 1, 64 * TiB,
     "1GiB", NULL, "bytes of responses being built or sent at once"},
    {"drain_timeout", T_SECS, OFF(drain_timeout), 0, 86400, "30s", NULL,
     "on SIGTERM/SIGINT, time to finish requests in flight"},
    {"api_key", T_STR, OFF(api_key), 0, 0, "", NULL,
     "require `Authorization: Bearer KEY` (\"\" = no auth; never logged)"},
    {"api_key_file", T_STR, OFF(api_key_file), 0, 0, "", NULL,
     "read the API key from this file (trailing newline stripped)"},
    {"cors_origin", T_STR, OFF(cors_origin), 0, 0, "", NULL,
     "Access-Control-Allow-Origin value (\"\" = no CORS headers)"},
    {"log_format", T_ENUM, OFF(log_format), 0, 0, "text", "text|json",
     "log line format on stderr"},
    {"log_level", T_ENUM, OFF(log_level), 0, 0, "info",
     "debug|info|warn|error", "least severe level logged"},
    {"access_log", T_BOOL, OFF(access_log), 0, 0, "true", NULL,
     "one log line per request"},
};
enum { NSETTINGS = sizeof settings / sizeof settings[0] };

/* --- small helpers ------------------------------------------------------ */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char **str_field(tv_config *cfg, const setting *s)
{
    return (char **)((char *)cfg + s->off);
}
static int64_t *int_field(tv_config *cfg, const setting *s)
{
    return (int64_t *)((char *)cfg + s->off);
}
static double *secs_field(tv_config *cfg, const setting *s)
{
    return (double *)((char *)cfg + s->off);
}

/* "max_body_bytes" -> "--max-body-bytes" or "TOKVEC_MAX_BODY_BYTES". */
static void flag_name(const setting *s, char *buf, size_t len)
{
    snprintf(buf, len, "--%s", s->name);
    for (char *p = buf; *p; p++)
        if (*p == '_')
            *p = '-';
}
static void env_name(const setting *s, char *buf, size_t len)
{
    snprintf(buf, len, "TOKVEC_%s", s->name);
    for (char *p = buf; *p; p++)
        *p = (char)toupper((unsigned char)*p);
}

static const setting *find_key(const char *name, size_t n)
{
    for (int i = 0; i < NSETTINGS; i++)
        if (strlen(settings[i].name) == n &&
            !strncmp(settings[i].name, name, n))
            return &settings[i];
    return NULL;
}

/* A flag spelled with dashes ("max-body-bytes", n bytes) -> its setting. */
static const setting *find_flag(const char *f, size_t n)
{
    for (int i = 0; i < NSETTINGS; i++) {
        const char *k = settings[i].name;
        if (strlen(k) != n)
            continue;
        size_t j = 0;
        while (j < n && (f[j] == k[j] || (k[j] == '_' && f[j] == '-')))
            j++;
        if (j == n)
            return &settings[i];
    }
    return NULL;
}

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
        {"", 1},          {"B", 1},          {"k", KiB},        {"K", KiB},
        {"KiB", KiB},     {"M", MiB},        {"MiB", MiB},      {"G", GiB},
        {"GiB", GiB},     {"T", TiB},        {"TiB", TiB},      {"kB", 1e3},
        {"KB", 1e3},      {"MB", 1e6},       {"GB", 1e9},       {"TB", 1e12},
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
static int set_value(tv_config *cfg, const setting *s, const char *v,
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
        if (parse_size(v, &x)) {
            set_err(err, errlen,
                    "%s: '%s' is not a size (bytes, or a number with "
                    "k/M/G/T, KiB/MiB/GiB/TiB or kB/MB/GB/TB)", src, v);
            return -1;
        }
        snprintf(shown, sizeof shown, "%s", v);
        if (check_bounds(s, src, x, shown, err, errlen))
            return -1;
        *int_field(cfg, s) = (int64_t)x;
        return 0;
    case T_SECS:
        if (parse_secs(v, &x)) {
            set_err(err, errlen,
                    "%s: '%s' is not a duration (seconds, e.g. 30, 0.5, "
                    "30s, 500ms)", src, v);
            return -1;
        }
        snprintf(shown, sizeof shown, "%s", v);
        if (check_bounds(s, src, x, shown, err, errlen))
            return -1;
        *secs_field(cfg, s) = x;
        return 0;
    case T_BOOL:
        if (parse_bool(v, int_field(cfg, s))) {
            set_err(err, errlen, "%s: '%s' is not a boolean (true/false)",
                    src, v);
            return -1;
        }
        return 0;
    }
    assert(!"unknown setting type");
    return -1;
}

/* One key of the config file: JSON value -> text -> set_value. */
static int set_json(tv_config *cfg, const setting *s, json_t *j,
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
        set_err(err, errlen, "%s: %.60s is not %s", src,
                dump ? dump : "value", want[s->type]);
        free(dump);
        return -1;
    }
    return set_value(cfg, s, v, src, err, errlen);
}

/* Applies the JSON object in path; from[i] = path for each key set. via
 * names where the path came from ("--config" or "TOKVEC_CONFIG"). */
static int load_file(tv_config *cfg, const char *path, const char *via,
                     const char **from, char *err, size_t errlen)
{
    int rc = -1;
    json_t *root = NULL;
    json_error_t je;
    FILE *f = fopen(path, "r");
    if (!f) {
        set_err(err, errlen, "%s: cannot read '%s': %s", via, path,
                strerror(errno));
        goto out;
    }
    root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        set_err(err, errlen, "%s: not valid JSON: %s (line %d, column %d)",
                path, je.text, je.line, je.column);
        goto out;
    }
    if (!json_is_object(root)) {
        set_err(err, errlen, "%s: not a JSON object", path);
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        const setting *s = find_key(key, strlen(key));
        if (!s) {
            set_err(err, errlen, "%s: unknown key '%s'", path, key);
            goto out;
        }
        if (set_json(cfg, s, val, path, err, errlen))
            goto out;
        from[s - settings] = path;
    }
    rc = 0;
out:
    json_decref(root);
    if (f)
        fclose(f);
    return rc;
}

/* Reads the API key from path into cfg->api_key; trailing CR/LF stripped. */
static int read_key_file(tv_config *cfg, const char *src, char *err,
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

/* --- the API ------------------------------------------------------------ */

void tv_config_free(tv_config *cfg)
{
    if (!cfg)
        return;
    for (int i = 0; i < NSETTINGS; i++)
        if (settings[i].type == T_STR || settings[i].type == T_ENUM) {
            free(*str_field(cfg, &settings[i]));
            *str_field(cfg, &settings[i]) = NULL;
        }
    free(cfg->config_path);
    cfg->config_path = NULL;
}

/* One flag occurrence, applied after the file and env. */
typedef struct flag_use {
    const setting *s;
    const char *value;
    char src[64]; /* "--port", or "argument" for `serve FILE` */
} flag_use;

int tv_config_load(tv_config *cfg, int argc, char **argv, char *err,
                   size_t errlen)
{
    int rc = TV_CONFIG_ERROR;
    flag_use *uses = NULL;
    int nuses = 0;
    const char *config = NULL, *config_src = NULL;
    /* Where each setting's effective value came from, for messages. */
    const char *from[NSETTINGS] = {0};
    char envsrc[NSETTINGS][64];

    assert(cfg && argc >= 1 && argv);
    memset(cfg, 0, sizeof *cfg);
    set_err(err, errlen, "no error");

    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tv_config_usage(stdout);
            return TV_CONFIG_HELP;
        }

    /* Defaults: through the same parser as every other source. */
    for (int i = 0; i < NSETTINGS; i++) {
        int r = set_value(cfg, &settings[i], settings[i].def, "default", err,
                          errlen);
        assert(r == 0 && "a default fails its own bounds");
        if (r)
            goto out;
        from[i] = "default";
    }

    /* argv: syntax only; values are applied last. */
    uses = calloc((size_t)argc, sizeof *uses);
    if (!uses) {
        set_err(err, errlen, "out of memory");
        goto out;
    }
    bool have_table_arg = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (a[0] == '-' && a[1] != '\0') {
                set_err(err, errlen, "unknown option '%s' (see --help)", a);
                goto out;
            }
            if (have_table_arg) {
                set_err(err, errlen,
                        "unexpected argument '%s': one table file only", a);
                goto out;
            }
            have_table_arg = true;
            uses[nuses].s = find_key("table", 5);
            uses[nuses].value = a;
            snprintf(uses[nuses].src, sizeof uses[nuses].src, "argument");
            nuses++;
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const char *value = eq ? eq + 1 : NULL;
        bool is_config = n == 6 && !strncmp(name, "config", 6);
        const setting *s = is_config ? NULL : find_flag(name, n);
        if (!s && !is_config) {
            set_err(err, errlen, "unknown option '--%.*s' (see --help)",
                    (int)n, name);
            goto out;
        }
        if (!value) {
            if (i + 1 >= argc) {
                set_err(err, errlen, "--%.*s: missing value", (int)n, name);
                goto out;
            }
            value = argv[++i];
        }
        if (is_config) {
            config = value;
            config_src = "--config";
            continue;
        }
        uses[nuses].s = s;
        uses[nuses].value = value;
        flag_name(s, uses[nuses].src, sizeof uses[nuses].src);
        nuses++;
    }
    for (int i = 0; i < nuses; i++)
        for (int j = i + 1; j < nuses; j++)
            if (uses[i].s == uses[j].s && uses[i].s == find_key("table", 5) &&
                strcmp(uses[i].src, uses[j].src)) {
                set_err(err, errlen, "the table is given twice: as --table "
                                     "and as an argument");
                goto out;
            }

    /* The file. */
    if (!config && getenv("TOKVEC_CONFIG")) {
        config = getenv("TOKVEC_CONFIG");
        config_src = "TOKVEC_CONFIG";
    }
    if (config) {
        if (!*config) {
            set_err(err, errlen, "%s: empty file name", config_src);
            goto out;
        }
        if (load_file(cfg, config, config_src, from, err, errlen))
            goto out;
        cfg->config_path = strdup(config);
    } else {
        cfg->config_path = strdup("");
    }
    if (!cfg->config_path) {
        set_err(err, errlen, "out of memory");
        goto out;
    }

    /* Env: only TOKVEC_<NAME> of real settings. */
    for (int i = 0; i < NSETTINGS; i++) {
        env_name(&settings[i], envsrc[i], sizeof envsrc[i]);
        const char *v = getenv(envsrc[i]);
        if (!v)
            continue;
        if (set_value(cfg, &settings[i], v, envsrc[i], err, errlen))
            goto out;
        from[i] = envsrc[i];
    }

    /* Flags, in order: the last one wins. */
    for (int i = 0; i < nuses; i++) {
        if (set_value(cfg, uses[i].s, uses[i].value, uses[i].src, err,
                      errlen))
            goto out;
        from[uses[i].s - settings] = uses[i].src;
    }

    /* api_key and api_key_file exclude each other. */
    int ik = (int)(find_key("api_key", 7) - settings);
    int ikf = (int)(find_key("api_key_file", 12) - settings);
    if (*cfg->api_key_file) {
        if (*cfg->api_key) {
            set_err(err, errlen,
                    "api_key (from %s) and api_key_file (from %s) are both "
                    "set; give one", from[ik], from[ikf]);
            goto out;
        }
        if (read_key_file(cfg, from[ikf], err, errlen))
            goto out;
    }
    rc = TV_CONFIG_OK;
out:
    free(uses);
    if (rc != TV_CONFIG_OK)
        tv_config_free(cfg);
    return rc;
}

/* Default of s as --help shows it. */
static void usage_line(FILE *f, const setting *s)
{
    char flag[64], env[64], arg[64];
    flag_name(s, flag, sizeof flag);
    env_name(s, env, sizeof env);
    switch (s->type) {
    case T_ENUM:
        snprintf(arg, sizeof arg, "%s", s->choices);
        break;
    case T_INT:
        snprintf(arg, sizeof arg, "N");
        break;
    case T_SIZE:
        snprintf(arg, sizeof arg, "SIZE");
        break;
    case T_SECS:
        snprintf(arg, sizeof arg, "SECONDS");
        break;
    case T_BOOL:
        snprintf(arg, sizeof arg, "true|false");
        break;
    default:
        snprintf(arg, sizeof arg, "%s",
                 strstr(s->name, "path") || !strcmp(s->name, "table") ||
                         strstr(s->name, "file")
                     ? "FILE"
                     : "STRING");
    }
    fprintf(f, "  %s %s\n      env %s, key \"%s\", default %s%s%s\n      %s",
            flag, arg, env, s->name, *s->def ? "" : "\"", s->def,
            *s->def ? "" : "\"", s->help);
    if (s->type == T_INT || s->type == T_SIZE || s->type == T_SECS)
        fprintf(f, " [%.15g..%.15g%s]", s->min, s->max,
                s->type == T_SIZE ? " bytes" : s->type == T_SECS ? " s" : "");
    fputc('\n', f);
}

void tv_config_usage(FILE *f)
{
    fputs("usage: tokvec serve [FILE] [--config FILE] [--SETTING VALUE]...\n"
          "\n"
          "Serves token + positional embeddings from FILE (default below)\n"
          "over HTTP. Every setting is a flag (--name VALUE or "
          "--name=VALUE),\n"
          "an env var TOKVEC_NAME and a key of a JSON config file; a flag\n"
          "beats the env var, which beats the file, which beats the "
          "default.\n"
          "An unknown flag or file key, or a bad value, stops start-up.\n"
          "TOKVEC_* env vars that are not settings are ignored (the\n"
          "environment is shared with other tools).\n"
          "\n"
          "  --config FILE\n"
          "      env TOKVEC_CONFIG: JSON object of settings "
          "(config/tokvec.json\n"
          "      lists every key with its default)\n"
          "  --help  this text\n"
          "\n",
          f);
    for (int i = 0; i < NSETTINGS; i++)
        usage_line(f, &settings[i]);
    fputs("\n"
          "SIZE: bytes, or a number with a unit: k/K/KiB, M/MiB, G/GiB, "
          "T/TiB\n"
          "  (x1024), kB/KB, MB, GB, TB (x1000), e.g. 16MiB, 64k, 1GiB.\n"
          "SECONDS: a number, optionally with ms, s or m: 30, 0.5, 500ms.\n"
          "The table may also be given as the one argument: "
          "tokvec serve FILE.\n"
          "--api-key and --api-key-file (from any source) exclude each "
          "other.\n",
          f);
}

/* Appends to buf at *pos, never past len-1; keeps buf NUL-terminated. */
static void put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
    if (*pos + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    *pos += (size_t)n < len - *pos ? (size_t)n : len - *pos - 1;
}

/* A string value, quoted (JSON style) when empty or holding a space,
 * quote, backslash, '=' or a control byte, so the line stays parseable. */
static void put_str(char *buf, size_t len, size_t *pos, const char *v)
{
    bool plain = *v != '\0';
    for (const char *p = v; *p && plain; p++)
        if ((unsigned char)*p <= ' ' || *p == '"' || *p == '\\' || *p == '=' ||
            *p == 0x7f)
            plain = false;
    if (plain) {
        put(buf, len, pos, "%s", v);
        return;
    }
    put(buf, len, pos, "\"");
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\')
            put(buf, len, pos, "\\%c", *p);
        else if (*p < ' ' || *p == 0x7f)
            put(buf, len, pos, "\\x%02x", *p);
        else
            put(buf, len, pos, "%c", *p);
    }
    put(buf, len, pos, "\"");
}

size_t tv_config_describe(const tv_config *cfg, char *buf, size_t len)
{
    size_t pos = 0;
    if (!buf || len == 0)
        return 0;
    buf[0] = '\0';
    tv_config *c = (tv_config *)cfg; /* the accessors do not write */
    for (int i = 0; i < NSETTINGS; i++) {
        const setting *s = &settings[i];
        put(buf, len, &pos, "%s%s=", i ? " " : "", s->name);
        if (!strcmp(s->name, "api_key")) {
            const char *k = *str_field(c, s);
            put(buf, len, &pos, "%s", k && *k ? "<set>" : "<unset>");
            continue;
        }
        switch (s->type) {
        case T_STR:
        case T_ENUM:
            put_str(buf, len, &pos,
                    *str_field(c, s) ? *str_field(c, s) : "");
            break;
        case T_INT:
        case T_SIZE:
            put(buf, len, &pos, "%lld", (long long)*int_field(c, s));
            break;
        case T_SECS:
            put(buf, len, &pos, "%g", *secs_field(c, s));
            break;
        case T_BOOL:
            put(buf, len, &pos, "%s", *int_field(c, s) ? "true" : "false");
            break;
        }
    }
    put(buf, len, &pos, " config=");
    put_str(buf, len, &pos, cfg->config_path ? cfg->config_path : "");
    return pos;
}
