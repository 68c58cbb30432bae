/* config.c -- the settings of `tokvec serve` as one table (config.h).
 *
 * Each row: key, type, offset into tv_config, bounds, default, help. The
 * flag is --key-with-dashes, the env var TOKVEC_KEY_IN_CAPS. Loading runs
 * defaults -> config file -> env -> flags, so later sources win. Sizes take
 * an optional suffix (k, M, G: powers of 1024, with or without "iB");
 * seconds take an optional "s" or "ms". Main thread, before other threads.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"

typedef enum { T_STR, T_INT, T_SIZE, T_SECS, T_BOOL, T_ENUM } kind_t;

typedef struct {
    const char *key;
    kind_t kind;
    size_t off;
    double min, max;
    const char *def;
    const char *choices; /* T_ENUM: "a|b|c" */
    const char *help;
} setting_t;

#define OFF(f) offsetof(tv_config, f)
#define BIG 9.0e18

static const setting_t settings[] = {
    {"table", T_STR, OFF(table), 0, 0, "data/gpt2-256.safetensors", NULL,
     "table file (.safetensors or .npy)"},
    {"position_path", T_STR, OFF(position_path), 0, 0, "", NULL,
     "positions .npy for a .npy token table"},
    {"token_tensor", T_STR, OFF(token_tensor), 0, 0, "", NULL,
     "token tensor name (default: search the contract's names)"},
    {"position_tensor", T_STR, OFF(position_tensor), 0, 0, "", NULL,
     "position tensor name (default: search)"},
    {"positional", T_ENUM, OFF(positional), 0, 0, "auto",
     "auto|learned|sinusoidal|none", "positional embeddings"},
    {"host", T_STR, OFF(host), 0, 0, "127.0.0.1", NULL, "address to bind"},
    {"port", T_INT, OFF(port), 1, 65535, "8080", NULL, "TCP port"},
    {"threads", T_INT, OFF(threads), 0, 1024, "0", NULL,
     "worker threads (0 = number of cores)"},
    {"max_body_bytes", T_SIZE, OFF(max_body_bytes), 1, BIG, "16MiB", NULL,
     "largest request body"},
    {"max_tokens", T_INT, OFF(max_tokens), 1, 1 << 30, "65536", NULL,
     "largest batch x sequence per request"},
    {"max_batch", T_INT, OFF(max_batch), 1, 1 << 30, "4096", NULL,
     "most sequences per request"},
    {"max_queue", T_INT, OFF(max_queue), 1, 1 << 24, "1024", NULL,
     "jobs waiting for a worker before 429"},
    {"max_connections", T_INT, OFF(max_connections), 1, 1 << 20, "1024",
     NULL, "open connections"},
    {"request_timeout", T_SECS, OFF(request_timeout), 0.001, 86400, "30",
     NULL, "idle connection timeout (seconds)"},
    {"max_inflight_bytes", T_SIZE, OFF(max_inflight_bytes), 1, BIG, "1GiB",
     NULL, "response bytes being built or sent"},
    {"drain_timeout", T_SECS, OFF(drain_timeout), 0, 86400, "30", NULL,
     "on SIGTERM, seconds to finish in-flight work"},
    {"api_key", T_STR, OFF(api_key), 0, 0, "", NULL,
     "require Authorization: Bearer KEY (never logged)"},
    {"api_key_file", T_STR, OFF(api_key_file), 0, 0, "", NULL,
     "read the API key from this file"},
    {"cors_origin", T_STR, OFF(cors_origin), 0, 0, "", NULL,
     "Access-Control-Allow-Origin value (off when empty)"},
    {"log_format", T_ENUM, OFF(log_format), 0, 0, "text", "text|json",
     "log line format"},
    {"log_level", T_ENUM, OFF(log_level), 0, 0, "info",
     "debug|info|warn|error", "least severe level logged"},
    {"access_log", T_BOOL, OFF(access_log), 0, 1, "true", NULL,
     "one log line per request"},
};
#define NSET (sizeof settings / sizeof settings[0])

static int errf(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int errf(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return TV_CONFIG_ERROR;
}

static int parse_num(const char *s, double *v, kind_t kind)
{
    char *end;
    errno = 0;
    if (!*s || isspace((unsigned char)*s))
        return -1;
    double x = strtod(s, &end);
    if (errno || end == s || !isfinite(x))
        return -1;
    if (kind == T_SIZE) {
        double m = 1;
        if (*end == 'k' || *end == 'K')
            m = 1024.0, end++;
        else if (*end == 'M')
            m = 1024.0 * 1024, end++;
        else if (*end == 'G')
            m = 1024.0 * 1024 * 1024, end++;
        if (m > 1 && (!strcmp(end, "iB") || !strcmp(end, "B")))
            end += strlen(end);
        x *= m;
        if (x != floor(x))
            return -1;
    } else if (kind == T_SECS) {
        if (!strcmp(end, "ms"))
            x /= 1000, end += 2;
        else if (!strcmp(end, "s"))
            end++;
    } else if (kind == T_INT) {
        if (x != floor(x) || strpbrk(s, ".eE"))
            return -1;
    }
    if (*end)
        return -1;
    *v = x;
    return 0;
}

/* Sets one setting from text; `src` names the source for messages. */
static int set_value(tv_config *c, const setting_t *st, const char *val,
                     const char *src, char *err, size_t len)
{
    char *base = (char *)c;
    if (st->kind == T_STR || st->kind == T_ENUM) {
        if (st->kind == T_ENUM) {
            size_t n = strlen(val);
            const char *p = st->choices;
            int ok = 0;
            while (*p && !ok) {
                size_t k = strcspn(p, "|");
                ok = k == n && !strncmp(p, val, n);
                p += k + (p[k] == '|');
            }
            if (!ok)
                return errf(err, len, "%s: '%s' is not one of %s", src, val,
                            st->choices);
        }
        char **slot = (char **)(base + st->off);
        char *copy = strdup(val);
        if (!copy)
            return errf(err, len, "out of memory");
        free(*slot);
        *slot = copy;
        return 0;
    }
    if (st->kind == T_BOOL) {
        int64_t b;
        if (!strcmp(val, "true") || !strcmp(val, "1") || !strcmp(val, "yes"))
            b = 1;
        else if (!strcmp(val, "false") || !strcmp(val, "0") ||
                 !strcmp(val, "no"))
            b = 0;
        else
            return errf(err, len, "%s: '%s' is not true or false", src, val);
        *(int64_t *)(base + st->off) = b;
        return 0;
    }
    double v;
    if (parse_num(val, &v, st->kind))
        return errf(err, len, "%s: '%s' is not %s", src, val,
                    st->kind == T_SECS   ? "a number of seconds"
                    : st->kind == T_SIZE ? "a size (bytes, or with k/M/G)"
                                         : "an integer");
    if (v < st->min)
        return errf(err, len, "%s: %s is below the minimum %g", src, val,
                    st->min);
    if (v > st->max)
        return errf(err, len, "%s: %s is above the maximum %g", src, val,
                    st->max);
    if (st->kind == T_SECS)
        *(double *)(base + st->off) = v;
    else
        *(int64_t *)(base + st->off) = (int64_t)v;
    return 0;
}

static const setting_t *find(const char *key)
{
    for (size_t i = 0; i < NSET; i++)
        if (!strcmp(settings[i].key, key))
            return &settings[i];
    return NULL;
}

static void flag_name(const char *key, char *out)
{
    for (; *key; key++)
        *out++ = *key == '_' ? '-' : *key;
    *out = '\0';
}

static void env_name(const char *key, char *out)
{
    out += sprintf(out, "TOKVEC_");
    for (; *key; key++)
        *out++ = (char)toupper((unsigned char)*key);
    *out = '\0';
}

void tv_config_usage(FILE *f)
{
    fprintf(f, "usage: tokvec serve [--table FILE] [options]\n\n"
               "Every setting is a flag, an env var and a key of the JSON "
               "file given by\n--config FILE (or TOKVEC_CONFIG). Precedence:"
               " flag > env > file > default.\nSizes take k/M/G suffixes "
               "(powers of 1024); seconds take s or ms.\n\n");
    for (size_t i = 0; i < NSET; i++) {
        char fl[64], ev[80];
        flag_name(settings[i].key, fl);
        env_name(settings[i].key, ev);
        fprintf(f, "  --%-20s %-28s default %s\n      %s\n", fl, ev,
                *settings[i].def ? settings[i].def : "\"\"",
                settings[i].help);
    }
    fprintf(f, "  --config FILE          TOKVEC_CONFIG\n"
               "      JSON object of the settings above (keys as "
               "written, e.g. \"max_tokens\")\n");
}

static int load_file(tv_config *c, const char *path, char *err, size_t len)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    int rc = 0;
    if (!root)
        return errf(err, len, "%s: %s (line %d)", path, je.text, je.line);
    if (!json_is_object(root)) {
        json_decref(root);
        return errf(err, len, "%s: not a JSON object", path);
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        const setting_t *st = find(key);
        char src[512], text[64];
        snprintf(src, sizeof src, "%s: %s", path, key);
        if (!st) {
            rc = errf(err, len, "%s: unknown key '%s'", path, key);
            break;
        }
        const char *val = NULL;
        if (json_is_string(v))
            val = json_string_value(v);
        else if (json_is_integer(v) && st->kind != T_STR &&
                 st->kind != T_ENUM)
            snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT,
                     json_integer_value(v)), val = text;
        else if (json_is_real(v) && st->kind == T_SECS)
            snprintf(text, sizeof text, "%.17g", json_real_value(v)),
                val = text;
        else if (json_is_boolean(v) && st->kind == T_BOOL)
            val = json_is_true(v) ? "true" : "false";
        if (!val || (json_is_string(v) && st->kind != T_STR &&
                     st->kind != T_ENUM && st->kind != T_SIZE &&
                     st->kind != T_SECS)) {
            rc = errf(err, len, "%s: wrong JSON type for this setting", src);
            break;
        }
        if ((rc = set_value(c, st, val, src, err, len)))
            break;
    }
    json_decref(root);
    return rc;
}

int tv_config_load(tv_config *c, int argc, char **argv, char *err,
                   size_t len)
{
    memset(c, 0, sizeof *c);
    c->config_path = strdup("");
    for (size_t i = 0; i < NSET; i++)
        if (set_value(c, &settings[i], settings[i].def, "default", err, len))
            return TV_CONFIG_ERROR;

    /* The config file: --config beats TOKVEC_CONFIG. */
    const char *file = getenv("TOKVEC_CONFIG");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tv_config_usage(stdout);
            return TV_CONFIG_HELP;
        }
        if (!strncmp(argv[i], "--config=", 9))
            file = argv[i] + 9;
        else if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc)
                return errf(err, len, "--config needs a file");
            file = argv[i + 1];
        }
    }
    if (file && *file) {
        free(c->config_path);
        c->config_path = strdup(file);
        if (load_file(c, file, err, len))
            return TV_CONFIG_ERROR;
    }
    for (size_t i = 0; i < NSET; i++) {
        char ev[80];
        env_name(settings[i].key, ev);
        const char *v = getenv(ev);
        if (v && set_value(c, &settings[i], v, ev, err, len))
            return TV_CONFIG_ERROR;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char name[64], src[80];
        const char *val;
        if (strncmp(a, "--", 2)) {
            return errf(err, len, "unexpected argument '%s' (use --table "
                                  "FILE)", a);
        }
        const char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (n >= sizeof name)
            return errf(err, len, "unknown option '%.40s...'", a);
        for (size_t k = 0; k < n; k++)
            name[k] = a[2 + k] == '-' ? '_' : a[2 + k];
        name[n] = '\0';
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            return errf(err, len, "%s needs a value", a);
        }
        if (!strcmp(name, "config"))
            continue;
        const setting_t *st = find(name);
        if (!st)
            return errf(err, len, "unknown option '--%s' (see tokvec serve "
                                  "--help)", name);
        snprintf(src, sizeof src, "--%.*s", (int)n, a + 2);
        if (set_value(c, st, val, src, err, len))
            return TV_CONFIG_ERROR;
    }
    if (*c->api_key && *c->api_key_file)
        return errf(err, len, "give --api-key or --api-key-file, not both");
    if (*c->api_key_file) {
        FILE *f = fopen(c->api_key_file, "r");
        char key[1024];
        if (!f)
            return errf(err, len, "%s: cannot read the API key: %s",
                        c->api_key_file, strerror(errno));
        size_t k = fread(key, 1, sizeof key - 1, f);
        fclose(f);
        key[k] = '\0';
        while (k && (key[k - 1] == '\n' || key[k - 1] == '\r'))
            key[--k] = '\0';
        if (!k)
            return errf(err, len, "%s: the API key file is empty",
                        c->api_key_file);
        free(c->api_key);
        c->api_key = strdup(key);
        memset(key, 0, sizeof key);
    }
    return TV_CONFIG_OK;
}

void tv_config_free(tv_config *c)
{
    for (size_t i = 0; i < NSET; i++)
        if (settings[i].kind == T_STR || settings[i].kind == T_ENUM) {
            char **slot = (char **)((char *)c + settings[i].off);
            free(*slot);
            *slot = NULL;
        }
    free(c->config_path);
    c->config_path = NULL;
}

size_t tv_config_describe(const tv_config *c, char *buf, size_t len)
{
    size_t n = 0;
    const char *base = (const char *)c;
    for (size_t i = 0; i < NSET && n < len; i++) {
        const setting_t *st = &settings[i];
        int w;
        if (!strcmp(st->key, "api_key") || !strcmp(st->key, "api_key_file"))
            w = snprintf(buf + n, len - n, "%s%s=%s", n ? " " : "", st->key,
                         **(char *const *)(base + st->off) ? "<set>"
                                                           : "<unset>");
        else if (st->kind == T_STR || st->kind == T_ENUM)
            w = snprintf(buf + n, len - n, "%s%s=%s", n ? " " : "", st->key,
                         *(char *const *)(base + st->off));
        else if (st->kind == T_SECS)
            w = snprintf(buf + n, len - n, "%s%s=%g", n ? " " : "", st->key,
                         *(const double *)(base + st->off));
        else
            w = snprintf(buf + n, len - n, "%s%s=%" PRId64, n ? " " : "",
                         st->key, *(const int64_t *)(base + st->off));
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return n < len ? n : (len ? len - 1 : 0);
}
