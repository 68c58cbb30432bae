/* cli_opts.c -- what the file subcommands of tokvec (cli.c) share: the
 * "tokvec: ..." error line, the option parser, strict integer and seed
 * parsing, the progress line, opening a table with its reason, the
 * unknown-option message and the table options. Single-threaded, like the
 * commands.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "log.h"
#include "suggest.h"

int tv_cli_fail(int code, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tv_log_fail("%s", msg); /* escaped: it may name what a file holds */
    return code;
}

static int opt_is_flag(const opts_t *o, const char *name)
{
    for (const char *const *f = o->flags; f && *f; f++)
        if (!strcmp(*f, name))
            return 1;
    return 0;
}

/* 1 when an item was read, 0 at the end, -1 on a missing value. */
int tv_cli_opt_next(opts_t *o)
{
    if (o->i >= o->argc)
        return 0;
    const char *a = o->argv[o->i++];
    o->name = NULL;
    o->value = a;
    if (a[0] != '-' || a[1] == '\0' ||
        (a[1] != '-' && a[1] != 'o' && a[1] != 'h'))
        return 1; /* positional (also negative numbers like -1) */
    if (!strcmp(a, "--")) {
        o->value = o->i < o->argc ? o->argv[o->i++] : NULL;
        return o->value ? 1 : 0;
    }
    const char *n = a + (a[1] == '-' ? 2 : 1);
    const char *eq = strchr(n, '=');
    size_t len = eq ? (size_t)(eq - n) : strlen(n);
    if (len >= sizeof o->buf)
        len = sizeof o->buf - 1;
    memcpy(o->buf, n, len);
    o->buf[len] = '\0';
    o->name = o->buf;
    if (!strcmp(o->name, "h"))
        o->name = "help";
    if (eq) {
        o->value = eq + 1;
    } else if (opt_is_flag(o, o->name)) {
        o->value = NULL;
    } else if (o->i < o->argc) {
        o->value = o->argv[o->i++];
    } else {
        return -1;
    }
    return 1;
}

/* Strict decimal integer in [lo, hi]. */
int tv_cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    if (!s || !(isdigit((unsigned char)s[0]) ||
                (s[0] == '-' && isdigit((unsigned char)s[1]))))
        return -1; /* strtoll would skip spaces and take a '+' */
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* torch.manual_seed accepts -2^63 <= S < 2^64; negatives are taken as
 * their 64-bit two's complement. */
int tv_cli_parse_seed(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    if (s[0] == '-') {
        long long v = strtoll(s, &end, 10);
        if (errno || *end)
            return -1;
        *out = (uint64_t)v;
    } else {
        if (s[0] == '+')
            return -1;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end)
            return -1;
        *out = v;
    }
    return 0;
}

/* Progress on a terminal only, so pipes and logs stay clean. */
void tv_cli_progress(uint64_t done, uint64_t total, void *ud)
{
    const char *what = ud;
    fprintf(stderr, "\r%s: %3d%% (%" PRIu64 " / %" PRIu64 " MB)", what,
            total ? (int)(done * 100 / total) : 100, done >> 20, total >> 20);
    if (done >= total)
        fputc('\n', stderr);
}

int tv_cli_open_table(const char *path, const tokvec_table_opts *base,
                      tokvec_table **t)
{
    char err[1024] = "";
    tokvec_table_opts o = base ? *base : (tokvec_table_opts){0};
    o.errbuf = err;
    o.errlen = sizeof err;
    int rc = tokvec_table_open(path, &o, t);
    if (rc < 0) {
        if (!err[0])
            snprintf(err, sizeof err, "%s: %s", path, tokvec_strerror(rc));
        return tv_cli_fail(EXIT_USAGE, "%s", err);
    }
    return 0;
}

/* "CMD: unknown option '--NAME'", with the closest of the command's
 * options (NULL-terminated) when one is a likely typo. Returns EXIT_USAGE.
 */
int tv_cli_unknown_option(const char *cmd, const char *name,
                          const char *const *known)
{
    size_t n = 0;
    while (known[n])
        n++;
    const char *best = tv_suggest(name, strlen(name), known, n);
    if (best)
        return tv_cli_fail(EXIT_USAGE,
                           "%s: unknown option '--%s' (did you mean --%s?)",
                           cmd, name, best);
    return tv_cli_fail(EXIT_USAGE,
                       "%s: unknown option '--%s' (see tokvec %s --help)", cmd,
                       name, cmd);
}

int tv_cli_opt_fail(const char *cmd, const opts_t *o)
{
    static const char *const none[] = {NULL};
    const char *const *known = o->known ? o->known : none;
    int is_o = !strcmp(o->name, "o"); /* -o is --output */
    for (const char *const *k = known; *k; k++)
        if (!strcmp(*k, is_o ? "output" : o->name))
            return tv_cli_fail(EXIT_USAGE, "%s: option '-%s%s' needs a value",
                               cmd, is_o ? "" : "-", o->name);
    return tv_cli_unknown_option(cmd, o->name, known);
}

/* Options every table-reading command shares. 1 if consumed, 0 if not
 * ours. */
int tv_cli_table_option(const char *n, const char *v, tokvec_table_opts *to)
{
    if (!strcmp(n, "pos") || !strcmp(n, "position-path"))
        to->position_path = v;
    else if (!strcmp(n, "token-tensor"))
        to->token_tensor = v;
    else if (!strcmp(n, "position-tensor"))
        to->position_tensor = v;
    else
        return 0;
    return 1;
}
