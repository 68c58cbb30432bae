/* config.c -- the settings of `tokvec serve` (see config.h), as one table.
 *
 * DESIGN. Every setting is one row of `settings[]`: its name (the config-file
 * key; the flag is --name with '_' -> '-', the env var TOKVEC_NAME), its type,
 * where it lives in tv_config, its bounds, its default (written as text and
 * parsed by the same code as every other source, so a default can never be
 * out of bounds without a test noticing) and its help text. Nothing else in
 * this file knows a setting by name except the api_key/api_key_file rule
 * and tokenizer_given (whether serve's built-in default tokenizer applies).
 *
 * Loading: defaults, then the config file (--config FILE, else TOKVEC_CONFIG),
 * then TOKVEC_* env vars, then flags in argv order; a later source overwrites
 * an earlier one, so flag > env > file > default. Only env vars that are
 * settings are read: other TOKVEC_* variables (the environment is shared with
 * scripts and clients) are ignored, each with a warning (cfg->warnings, which
 * the caller logs) naming the closest setting's variable. An unknown flag or
 * file key is an error that names the closest setting too ("did you mean").
 *
 * Files: config.c holds the table, the names (flag, env var, key), the
 * order of the sources, --help and describe; config_value.c turns one value
 * (text or JSON) into its field.
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

#include "config_value.h"
#include "suggest.h"

/* The one table. Order is the order of --help and of describe. */
static const setting settings[] = {
    {"table", T_STR, OFF(table), 0, 0, "data/gpt2-256.safetensors", NULL,
     "table file: .safetensors, a sharded checkpoint's .index.json (or its "
     "directory), a token .npy or .gguf; also `tokvec serve FILE`"},
    {"position_path", T_STR, OFF(position_path), 0, 0, "", NULL,
     "position table .npy beside a token .npy (\"\" = none)"},
    {"tokenizer", T_STR, OFF(tokenizer), 0, 0, "", NULL,
     "tokenizer for text inputs: encoder.json (or its directory), "
     "tokenizer.json or NAME.tiktoken (\"\" = ids only)"},
    {"model", T_STR, OFF(model), 0, 0, "", NULL,
     "a static embedding model directory (Model2Vec or sentence-"
     "transformers layout: tokenizer.json, model.safetensors, ...); "
     "replaces --table and --tokenizer, which it excludes (\"\" = none)"},
    {"served_model_name", T_STR, OFF(served_model_name), 0, 0, "", NULL,
     "the model's name in /v1/ answers and /info (\"\" = the directory's "
     "name; for a Hugging Face cache snapshot, the repository's)"},
    {"normalize", T_ENUM, OFF(normalize), 0, 0, "auto", "auto|true|false",
     "sentence vectors normalized: auto = as the model's files say "
     "(a plain --table: false)"},
    {"max_sentence_tokens", T_INT, OFF(max_sentence_tokens), 1, 2147483647.0,
     "512", NULL,
     "Model2Vec layout: most ids a text's sentence vector averages (the "
     "text is first cut to this many times the median token length in "
     "code points, as StaticModel.encode's max_length)"},
    {"token_tensor", T_STR, OFF(token_tensor), 0, 0, "", NULL,
     "token tensor name (\"\" = search the usual names)"},
    {"position_tensor", T_STR, OFF(position_tensor), 0, 0, "", NULL,
     "position tensor name (\"\" = search the usual names)"},
    {"positional", T_ENUM, OFF(positional), 0, 0, "auto",
     "auto|learned|sinusoidal|none", "positions: auto = as the file says"},
    {"host", T_STR, OFF(host), 0, 0, "127.0.0.1", NULL,
     "address to listen on (0.0.0.0 = every interface)"},
    {"port", T_INT, OFF(port), 1, 65535, "8080", NULL, "TCP port"},
    {"unix_socket", T_STR, OFF(unix_socket), 0, 0, "", NULL,
     "also serve on this Unix domain socket path (\"\" = TCP only)"},
    {"threads", T_INT, OFF(threads), 0, 1024, "0", NULL,
     "worker threads: lookup and encoding (0 = the CPUs this "
     "process may use: cores, capped by a cgroup CPU quota)"},
    {"http_threads", T_INT, OFF(http_threads), 0, 1024, "0", NULL,
     "HTTP threads per listener: I/O and parsing (0 = as --threads)"},
    {"max_body_bytes", T_SIZE, OFF(max_body_bytes), 1, TiB, "16MiB", NULL,
     "largest request body (413 past it)"},
    {"max_buffered_bytes", T_SIZE, OFF(max_buffered_bytes), 1, 64 * TiB,
     "256MiB", NULL,
     "request bodies being received at once, all connections (429 past it)"},
    {"max_tokens", T_INT, OFF(max_tokens), 1, 2147483647.0, "65536", NULL,
     "most token ids in one request, B*S (413 past it)"},
    {"max_batch", T_INT, OFF(max_batch), 1, 2147483647.0, "4096", NULL,
     "most sequences in one request"},
    {"max_queue", T_INT, OFF(max_queue), 1, 1048576, "1024", NULL,
     "jobs waiting for a worker (429 past it)"},
    {"max_connections", T_INT, OFF(max_connections), 1, 1048576, "1024", NULL,
     "open client connections"},
    {"max_connections_per_ip", T_INT, OFF(max_connections_per_ip), 0, 1048576,
     "0", NULL, "open connections from one client address (0 = no limit)"},
    {"request_timeout", T_SECS, OFF(request_timeout), 0.001, 86400, "30s",
     NULL, "time to send one whole request (and the idle limit)"},
    {"min_send_rate", T_SIZE, OFF(min_send_rate), 1, 64 * TiB, "512KiB", NULL,
     "bytes/s a reply must be read at (never cut before request_timeout)"},
    {"max_queue_wait", T_SECS, OFF(max_queue_wait), 0.001, 86400, "30s", NULL,
     "time a job may wait for a worker (503 past it)"},
    {"max_inflight_bytes", T_SIZE, OFF(max_inflight_bytes), 1, 64 * TiB,
     "1GiB", NULL, "bytes of responses being built or sent at once"},
    {"drain_timeout", T_SECS, OFF(drain_timeout), 0, 86400, "30s", NULL,
     "on SIGTERM/SIGINT, time to finish requests in flight"},
    {"watch", T_BOOL, OFF(watch), 0, 0, "false", NULL,
     "reload the table, model directory and tokenizer when their files "
     "change, as SIGHUP does"},
    {"api_key", T_STR, OFF(api_key), 0, 0, "", NULL,
     "require `Authorization: Bearer KEY` (\"\" = no auth; never logged)"},
    {"api_key_file", T_STR, OFF(api_key_file), 0, 0, "", NULL,
     "read the API key from this file (trailing newline stripped)"},
    {"cors_origin", T_STR, OFF(cors_origin), 0, 0, "", NULL,
     "web origins allowed to call from a page, comma-separated "
     "scheme://host[:port], or * for any; they get CORS headers (\"\" = "
     "none: a page of another origin is refused 403)"},
    {"log_format", T_ENUM, OFF(log_format), 0, 0, "text", "text|json",
     "log line format on stderr"},
    {"log_level", T_ENUM, OFF(log_level), 0, 0, "info",
     "debug|info|warn|error", "least severe level logged"},
    {"access_log", T_BOOL, OFF(access_log), 0, 0, "true", NULL,
     "one log line per request"},
};
enum { NSETTINGS = sizeof settings / sizeof settings[0] };

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

/* " (did you mean X?)" for the setting closest to word[0..n) (a flag, key
 * or env var name without its prefix), spelled as the reader would type it
 * after prefix: "--max-tokens", "TOKVEC_MAX_TOKENS", "max_tokens" (prefix
 * "--", "TOKVEC_" or ""); "" when none is close. extra: how many of
 * "config" (a flag and a variable, not a file key) and "help" (a flag
 * only) are candidates too: 0 for keys, 1 for variables, 2 for flags. */
static const char *did_you_mean(const char *word, size_t n, const char *prefix,
                                int extra, char *buf, size_t len)
{
    const char *names[NSETTINGS + 2];
    for (int i = 0; i < NSETTINGS; i++)
        names[i] = settings[i].name;
    names[NSETTINGS] = "config";
    names[NSETTINGS + 1] = "help";
    const char *best = tv_suggest(word, n, names, (size_t)(NSETTINGS + extra));
    *buf = '\0';
    if (!best)
        return buf;
    char spelt[64];
    size_t i = 0;
    for (; best[i] && i + 1 < sizeof spelt; i++) {
        char c = best[i];
        if (*prefix == '-' && c == '_')
            c = '-';
        else if (*prefix == 'T')
            c = (char)toupper((unsigned char)c);
        spelt[i] = c;
    }
    spelt[i] = '\0';
    snprintf(buf, len, " (did you mean %s%s?)", prefix, spelt);
    return buf;
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
            char hint[96];
            set_err(err, errlen, "%s: unknown key '%s'%s", path, key,
                    did_you_mean(key, strlen(key), "", 0, hint, sizeof hint));
            goto out;
        }
        if (tv_setting_set_json(cfg, s, val, path, err, errlen))
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
    free(cfg->warnings);
    cfg->warnings = NULL;
}

/* One flag occurrence, applied after the file and env. */
typedef struct flag_use {
    const setting *s;
    const char *value;
    char src[64]; /* "--port", or "argument" for `serve FILE` */
} flag_use;

/* What argv says, syntax only: the flags in order (values are applied
 * last) and the config file. */
typedef struct argv_plan {
    flag_use *uses;
    int nuses;
    const char *config, *config_src;
} argv_plan;

/* An unknown option: its message, with the closest setting if any. */
static void unknown_option(const char *a, size_t n, char *err, size_t errlen)
{
    char hint[96];
    const char *name = a + (a[1] == '-' ? 2 : 1);
    size_t len = n - (size_t)(name - a);
    did_you_mean(name, len, "--", 2, hint, sizeof hint);
    set_err(err, errlen, "unknown option '%.*s'%s", (int)n, a,
            *hint ? hint : " (see --help)");
}

/* argv[1..argc) -> plan (uses sized argc). 0, or -1 with the message. */
static int parse_argv(int argc, char **argv, argv_plan *plan, char *err,
                      size_t errlen)
{
    bool have_table_arg = false;
    const setting *table = find_key("table", 5);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        flag_use *u = &plan->uses[plan->nuses];
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (a[0] == '-' && a[1] != '\0') {
                unknown_option(a, strlen(a), err, errlen);
                return -1;
            }
            if (have_table_arg) {
                set_err(err, errlen,
                        "unexpected argument '%s': one table file only", a);
                return -1;
            }
            have_table_arg = true;
            u->s = table;
            u->value = a;
            snprintf(u->src, sizeof u->src, "argument");
            plan->nuses++;
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const char *value = eq ? eq + 1 : NULL;
        bool is_config = n == 6 && !strncmp(name, "config", 6);
        const setting *s = is_config ? NULL : find_flag(name, n);
        if (!s && !is_config) {
            unknown_option(a, n + 2, err, errlen);
            return -1;
        }
        if (!value) {
            if (i + 1 >= argc) {
                set_err(err, errlen, "--%.*s: missing value", (int)n, name);
                return -1;
            }
            value = argv[++i];
        }
        if (is_config) {
            plan->config = value;
            plan->config_src = "--config";
            continue;
        }
        u->s = s;
        u->value = value;
        flag_name(s, u->src, sizeof u->src);
        plan->nuses++;
    }
    for (int i = 0; i < plan->nuses; i++)
        for (int j = i + 1; j < plan->nuses; j++)
            if (plan->uses[i].s == table && plan->uses[j].s == table &&
                strcmp(plan->uses[i].src, plan->uses[j].src)) {
                set_err(err, errlen,
                        "the table is given twice: as --table "
                        "and as an argument");
                return -1;
            }
    return 0;
}

extern char **environ;

/* cfg->warnings: one line for each TOKVEC_* variable that is no setting
 * (nor TOKVEC_CONFIG), naming the closest setting's variable if any. The
 * environment is shared with scripts, so these are warnings, not errors.
 * 0, or -1 out of memory. */
static int check_env_names(tv_config *cfg)
{
    size_t len = 0, cap = 0;
    char *w = NULL;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "TOKVEC_", 7))
            continue;
        const char *name = *e + 7;
        size_t n = strcspn(name, "=");
        if (n == 6 && !strncmp(name, "CONFIG", 6))
            continue;
        bool known = false;
        for (int i = 0; i < NSETTINGS && !known; i++) {
            char env[64];
            env_name(&settings[i], env, sizeof env);
            known = strlen(env + 7) == n && !strncmp(env + 7, name, n);
        }
        if (known)
            continue;
        char hint[96], line[256];
        int m = snprintf(
            line, sizeof line, "TOKVEC_%.*s is not a setting%s; ignored\n",
            (int)(n > 64 ? 64 : n), name,
            did_you_mean(name, n, "TOKVEC_", 1, hint, sizeof hint));
        if (m < 0)
            continue;
        if (len + (size_t)m + 1 > cap) {
            size_t ncap = 2 * (len + (size_t)m + 1);
            char *nw = realloc(w, ncap);
            if (!nw) {
                free(w);
                return -1;
            }
            w = nw;
            cap = ncap;
        }
        memcpy(w + len, line, (size_t)m + 1);
        len += (size_t)m;
    }
    cfg->warnings = w ? w : strdup("");
    return cfg->warnings ? 0 : -1;
}

/* The config file named by the plan, else TOKVEC_CONFIG; cfg->config_path
 * is the file read ("" if none). */
static int apply_file(tv_config *cfg, argv_plan *plan, const char **from,
                      char *err, size_t errlen)
{
    if (!plan->config && getenv("TOKVEC_CONFIG")) {
        plan->config = getenv("TOKVEC_CONFIG");
        plan->config_src = "TOKVEC_CONFIG";
    }
    if (plan->config) {
        if (!*plan->config) {
            set_err(err, errlen, "%s: empty file name", plan->config_src);
            return -1;
        }
        if (load_file(cfg, plan->config, plan->config_src, from, err, errlen))
            return -1;
    }
    cfg->config_path = strdup(plan->config ? plan->config : "");
    if (!cfg->config_path) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int tv_config_load(tv_config *cfg, int argc, char **argv, char *err,
                   size_t errlen)
{
    int rc = TV_CONFIG_ERROR;
    argv_plan plan = {0};
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
        int r = tv_setting_set(cfg, &settings[i], settings[i].def, "default",
                               err, errlen);
        assert(r == 0 && "a default fails its own bounds");
        if (r)
            goto out;
        from[i] = "default";
    }

    plan.uses = calloc((size_t)argc, sizeof *plan.uses);
    if (!plan.uses) {
        set_err(err, errlen, "out of memory");
        goto out;
    }
    if (parse_argv(argc, argv, &plan, err, errlen) ||
        apply_file(cfg, &plan, from, err, errlen))
        goto out;

    /* Env: only TOKVEC_<NAME> of real settings; the others are warned of. */
    for (int i = 0; i < NSETTINGS; i++) {
        env_name(&settings[i], envsrc[i], sizeof envsrc[i]);
        const char *v = getenv(envsrc[i]);
        if (!v)
            continue;
        if (tv_setting_set(cfg, &settings[i], v, envsrc[i], err, errlen))
            goto out;
        from[i] = envsrc[i];
    }
    if (check_env_names(cfg)) {
        set_err(err, errlen, "out of memory");
        goto out;
    }

    /* Flags, in order: the last one wins. */
    for (int i = 0; i < plan.nuses; i++) {
        flag_use *u = &plan.uses[i];
        if (tv_setting_set(cfg, u->s, u->value, u->src, err, errlen))
            goto out;
        from[u->s - settings] = u->src;
    }

    /* A model directory brings its own table and tokenizer. */
    int im = (int)(find_key("model", 5) - settings);
    int it = (int)(find_key("table", 5) - settings);
    int itk = (int)(find_key("tokenizer", 9) - settings);
    /* (A file restating the defaults -- config/tokvec.json's table and
     * "" tokenizer -- sets neither.) */
    int table_set = strcmp(from[it], "default") &&
                    strcmp(cfg->table, settings[it].def);
    int tok_set = strcmp(from[itk], "default") && *cfg->tokenizer;
    if (*cfg->model && (table_set || tok_set)) {
        set_err(err, errlen,
                "model (from %s) brings its own table and tokenizer, but "
                "%s is also set (from %s); give --model alone",
                from[im], table_set ? "table" : "tokenizer",
                table_set ? from[it] : from[itk]);
        goto out;
    }

    /* Whether the tokenizer was named (serve's built-in default else). */
    cfg->tokenizer_given = strcmp(from[find_key("tokenizer", 9) - settings],
                                  "default") != 0;

    /* api_key and api_key_file exclude each other. */
    int ik = (int)(find_key("api_key", 7) - settings);
    int ikf = (int)(find_key("api_key_file", 12) - settings);
    if (*cfg->api_key_file) {
        if (*cfg->api_key) {
            set_err(err, errlen,
                    "api_key (from %s) and api_key_file (from %s) are both "
                    "set; give one",
                    from[ik], from[ikf]);
            goto out;
        }
        if (tv_config_read_key_file(cfg, from[ikf], err, errlen))
            goto out;
    }
    rc = TV_CONFIG_OK;
out:
    free(plan.uses);
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
                         !strcmp(s->name, "tokenizer") ||
                         strstr(s->name, "file")
                     ? "FILE"
                     : "STRING");
    }
    fprintf(f, "  %s %s\n      env %s, key \"%s\", default %s%s%s\n      %s",
            flag, arg, env, s->name, *s->def ? "" : "\"", s->def,
            *s->def ? "" : "\"", s->help);
    if (s->type == T_INT || s->type == T_SIZE || s->type == T_SECS)
        fprintf(f, " [%.15g..%.15g%s]", s->min, s->max,
                s->type == T_SIZE   ? " bytes"
                : s->type == T_SECS ? " s"
                                    : "");
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
          "TOKVEC_* env vars that are not settings are ignored with a\n"
          "warning at start-up (the environment is shared with other\n"
          "tools).\n"
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
            put_str(buf, len, &pos, *str_field(c, s) ? *str_field(c, s) : "");
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
