/* fuzz_config.c -- libFuzzer target for the settings loader: a JSON config
 * file (every key, every type, sizes with units, seconds, bools, enums)
 * and the flags that follow it on the command line.
 *
 * Input layout: the config file's bytes, then optionally 0x1E followed by
 * up to 8 command-line arguments separated by 0x1E (after "serve
 * --config FILE"). Arguments "--help"/"-h" are dropped (the usage text
 * goes to stdout; tv_config_usage is exercised once at start-up instead).
 *
 * TOKVEC_* variables are removed from the environment first, and stdin is
 * /dev/null so an api_key_file of /dev/stdin cannot block.
 *
 * Invariants: the loader returns OK or ERROR (never HELP without --help);
 * an ERROR has a message; describe() never shows the API key; OK settings
 * describe() within bounds; tv_config_free is safe after either.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

extern char **environ;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (;;) { /* unsetenv shifts environ: rescan after each removal */
        char **e = environ, *hit = NULL;
        for (; e && *e; e++)
            if (!strncmp(*e, "TOKVEC_", 7)) {
                hit = *e;
                break;
            }
        if (!hit)
            break;
        char name[256];
        size_t n = strcspn(hit, "=");
        if (n >= sizeof name)
            n = sizeof name - 1;
        memcpy(name, hit, n);
        name[n] = '\0';
        unsetenv(name);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) {
        dup2(null, 0);
        close(null);
    }
    FILE *f = fopen("/dev/null", "w");
    if (f) {
        tv_config_usage(f);
        fclose(f);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (256u << 10))
        return 0;
    const uint8_t *sep = memchr(data, 0x1e, size);
    size_t flen = sep ? (size_t)(sep - data) : size;

    int fd = memfd_create("tokvec-fuzz-config", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    if (flen && write(fd, data, flen) != (ssize_t)flen)
        abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

    char *argv[16] = {"serve", "--config", path};
    int argc = 3;
    char *args = NULL;
    if (sep) {
        size_t alen = size - flen - 1;
        args = malloc(alen + 1);
        memcpy(args, sep + 1, alen);
        args[alen] = '\0';
        char *p = args, *end = args + alen;
        while (argc < 11 && p <= end) {
            char *q = memchr(p, 0x1e, (size_t)(end - p));
            if (q)
                *q = '\0';
            if (strcmp(p, "--help") && strcmp(p, "-h") &&
                strncmp(p, "--help=", 7))
                argv[argc++] = p;
            if (!q)
                break;
            p = q + 1;
        }
    }
    argv[argc] = NULL;

    tv_config cfg;
    char err[512];
    memset(err, 0, sizeof err);
    int rc = tv_config_load(&cfg, argc, argv, err, sizeof err);
    if (rc == TV_CONFIG_OK) {
        char line[8192];
        size_t n = tv_config_describe(&cfg, line, sizeof line);
        if (n >= sizeof line || strlen(line) != n)
            abort();
        if (cfg.max_body_bytes < 0 || cfg.max_tokens < 0 ||
            cfg.max_batch < 0 || cfg.max_queue < 0 ||
            cfg.max_connections < 0 || cfg.max_inflight_bytes < 0 ||
            !(cfg.request_timeout >= 0) || !(cfg.drain_timeout >= 0) ||
            cfg.port < 0 || cfg.port > 65535 || !cfg.table || !cfg.host ||
            !cfg.api_key || !cfg.log_format || !cfg.log_level)
            abort();
        /* The key is shown only as <set>/<unset>: the line must not
         * change when the key is swapped for another of the same length
         * (a substring search would flag keys like "table" that are also
         * setting names). */
        if (!strstr(line, *cfg.api_key ? "api_key=<set>" : "api_key=<unset>"))
            abort();
        size_t klen = strlen(cfg.api_key);
        char *other = malloc(klen + 1);
        for (size_t i = 0; i < klen; i++)
            other[i] = cfg.api_key[i] == 'Q' ? 'Z' : 'Q';
        other[klen] = '\0';
        char *key = cfg.api_key, line2[8192];
        cfg.api_key = other;
        size_t n2 = tv_config_describe(&cfg, line2, sizeof line2);
        cfg.api_key = key;
        free(other);
        if (n2 != n || memcmp(line, line2, n)) {
            fprintf(stderr, "describe() depends on the API key: %s\n", line);
            abort();
        }
    } else if (rc == TV_CONFIG_ERROR) {
        if (!err[0]) {
            fprintf(stderr, "config error without a message\n");
            abort();
        }
    } else {
        abort(); /* HELP without --help */
    }
    tv_config_free(&cfg);
    free(args);
    close(fd);
    return 0;
}
