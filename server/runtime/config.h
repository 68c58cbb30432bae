/* config.h -- the settings of `tokvec serve`, as one table.
 *
 * Every setting has a name (config-file key, e.g. "max_body_bytes"), a flag
 * (--max-body-bytes), an env var (TOKVEC_MAX_BODY_BYTES), a type, bounds
 * and a default. Precedence: flag > env > config file (--config FILE or
 * TOKVEC_CONFIG) > default. An unknown key/flag or a bad value stops
 * start-up with a message naming it. Loaded once on the main thread before
 * any other thread starts; read-only afterwards (any thread may read).
 */
#ifndef TV_CONFIG_H
#define TV_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tv_config {
    char *table;                 /* data/gpt2-256.safetensors */
    char *position_path;         /* "" = none (.npy token tables) */
    char *tokenizer;             /* "" = none: text inputs answer 400 */
    char *model;                 /* "" = none; a model directory replaces
                                  * table and tokenizer (tokvec_model.h) */
    char *served_model_name;     /* "" = the directory's name */
    char *normalize;             /* auto|true|false: sentence vectors */
    int64_t max_sentence_tokens; /* 512: Model2Vec's max_length */
    char *token_tensor;          /* "" = search the contract's names */
    char *position_tensor;       /* "" = search */
    char *positional;            /* auto|learned|sinusoidal|none */
    char *host;                  /* 127.0.0.1 */
    int64_t port;                /* 8080 */
    int64_t threads;             /* workers; 0 = CPUs (cpus.h) */
    int64_t http_threads;        /* HTTP threads per listener; 0 = threads */
    char *unix_socket;           /* "" = none; else also serve on this path */
    int64_t max_body_bytes;      /* 16 MiB */
    int64_t max_buffered_bytes;  /* 256 MiB: request bodies held at once */
    int64_t max_tokens;          /* 65536 */
    int64_t max_batch;           /* 4096 */
    int64_t max_queue;           /* 1024 */
    int64_t max_connections;     /* 1024 */
    int64_t max_connections_per_ip; /* 0 = no limit */
    double request_timeout;         /* 30 s */
    int64_t min_send_rate;          /* 512 KiB/s: replies slower are cut */
    double max_queue_wait;          /* 30 s: jobs waiting longer get 503 */
    int64_t max_inflight_bytes;     /* 1 GiB */
    double drain_timeout;           /* 30 s */
    int64_t watch;      /* 1 = reload when the served files change (serve.c) */
    char *api_key;      /* "" = no auth; never logged */
    char *api_key_file; /* read at load into api_key */
    char *cors_origin;  /* "" = off; "a,b" or "*" (origin.h) */
    char *log_format;   /* text|json */
    char *log_level;    /* debug|info|warn|error */
    int64_t access_log; /* 1 = one line per request */
    char *config_path;  /* the file read, "" if none */
    /* 1 when a flag, env var or file key set tokenizer (even to "": none);
     * 0: no source did, and serve takes the built-in default (datadir.h),
     * which is dropped with a warning where it does not fit the table */
    int tokenizer_given;
    /* "" or lines ending in '\n' to log at start-up (TOKVEC_* that are no
     * setting) */
    char *warnings;
} tv_config;

enum { TV_CONFIG_OK = 0, TV_CONFIG_HELP = 1, TV_CONFIG_ERROR = -1 };

/* Loads defaults, then the file, env and argv (argv[0] is "serve"; one
 * non-flag argument is the table, as --table). TV_CONFIG_HELP when --help
 * was printed to stdout; TV_CONFIG_ERROR with a one-line message in err
 * (naming the flag/variable/key and the value). On HELP and ERROR cfg holds
 * nothing; tv_config_free is safe after any return. On OK, cfg->warnings
 * holds what the caller should log once logging is set up: a line for
 * each TOKVEC_* variable that is not a setting, with the closest one. */
int tv_config_load(tv_config *cfg, int argc, char **argv, char *err,
                   size_t errlen);
void tv_config_free(tv_config *cfg);

/* One line "key=value key=value ..." of every setting, api_key shown as
 * "<set>" or "<unset>". Returns bytes written (truncates safely). */
size_t tv_config_describe(const tv_config *cfg, char *buf, size_t len);

/* Prints the --help text for serve (every setting, flag, env, default). */
void tv_config_usage(FILE *f);

#endif
