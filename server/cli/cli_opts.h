/* cli_opts.h -- what the file subcommands of tokvec (server/cli/cli.c) share;
 * see cli_opts.c. Every function prints its one line to stderr itself. */
#ifndef TOKVEC_CLI_OPTS_H
#define TOKVEC_CLI_OPTS_H

#include <stdint.h>

#include "tokvec_table.h"

#define EXIT_USAGE 2

/* Prints "tokvec: " fmt "\n" on stderr, the message escaped as a log
 * line's (log.h: tv_log_fail); returns code. */
int tv_cli_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* --- option parsing shared by the commands -------------------------------
 * Options are "--name value" or "--name=value"; flags take no value.
 * tv_cli_opt_next() returns the option's name (without dashes) and its value,
 * or NULL name for a positional argument. */
typedef struct {
    int argc, i;
    char **argv;
    const char *const *flags; /* options that take no value */
    const char *const *known; /* every option (NULL-terminated), for
                               * tv_cli_opt_fail's suggestion */
    const char *name, *value;
    char buf[64];
} opts_t;

/* 1 when an item was read, 0 at the end, -1 on a missing value. */
int tv_cli_opt_next(opts_t *o);
/* Strict decimal integer in [lo, hi]: 0, or -1. */
int tv_cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* torch.manual_seed's range, negatives as two's complement: 0, or -1. */
int tv_cli_parse_seed(const char *s, uint64_t *out);
/* A tokvec_write progress callback; ud is the label (a const char *). */
void tv_cli_progress(uint64_t done, uint64_t total, void *ud);
/* Opens path with base's options: 0, or EXIT_USAGE after the reason. */
int tv_cli_open_table(const char *path, const tokvec_table_opts *base,
                      tokvec_table **t);
/* "CMD: unknown option '--NAME'" (with the likely typo's fix from known,
 * NULL-terminated); returns EXIT_USAGE. */
int tv_cli_unknown_option(const char *cmd, const char *name,
                          const char *const *known);
/* The option tv_cli_opt_next could not take (it returned -1): "CMD:
 * unknown option" as tv_cli_unknown_option when it is not in o->known,
 * else "CMD: option '--NAME' needs a value". Returns EXIT_USAGE. */
int tv_cli_opt_fail(const char *cmd, const opts_t *o);
/* The options of tv_cli_table_option, for tv_cli_unknown_option's suggestions.
 */
#define TABLE_OPTIONS "pos", "position-path", "token-tensor", "position-tensor"

/* Options every table-reading command shares: 1 if consumed, 0 if not
 * ours. */
int tv_cli_table_option(const char *n, const char *v, tokvec_table_opts *to);

#endif
