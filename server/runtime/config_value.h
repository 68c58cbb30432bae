/* config_value.h -- one setting and its value (config_value.c): the
 * setting's description, the field of tv_config it lives in, a value from
 * text or JSON into tv_config with its bounds, the API key file. config.c
 * (the table of settings, loading them from defaults, file, env and flags,
 * --help, describe) stands above it and includes it. Not for other
 * modules: they use config.h. Same threads as config.h: the main thread,
 * before any other starts.
 */
#ifndef TV_CONFIG_VALUE_H
#define TV_CONFIG_VALUE_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

typedef enum { T_STR, T_INT, T_SIZE, T_SECS, T_BOOL, T_ENUM } setting_type;

typedef struct setting {
    const char *name; /* config-file key, e.g. "max_body_bytes" */
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

/* err gets the printf-formatted message (if err and errlen). */
static inline void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* The field of cfg that setting s lives in, by its type. */
static inline char **str_field(tv_config *cfg, const setting *s)
{
    return (char **)((char *)cfg + s->off);
}
static inline int64_t *int_field(tv_config *cfg, const setting *s)
{
    return (int64_t *)((char *)cfg + s->off);
}
static inline double *secs_field(tv_config *cfg, const setting *s)
{
    return (double *)((char *)cfg + s->off);
}

/* Parses text value v for setting s into cfg (any type; bounds checked).
 * src names where it came from ("--port", "TOKVEC_PORT", "FILE: port")
 * for the message in err. 0, or -1 with the message. */
int tv_setting_set(tv_config *cfg, const setting *s, const char *v,
                   const char *src, char *err, size_t errlen);

/* The same for the value of a config file key (JSON of the type the
 * setting takes); path names the file. */
int tv_setting_set_json(tv_config *cfg, const setting *s, json_t *j,
                        const char *path, char *err, size_t errlen);

/* Reads cfg->api_key_file into cfg->api_key, trailing CR/LF stripped; src
 * names where api_key_file came from. 0, or -1 with the message. */
int tv_config_read_key_file(tv_config *cfg, const char *src, char *err,
                            size_t errlen);

#endif
