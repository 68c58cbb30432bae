/* datadir.c -- the data directory compiled in, and the default tokenizer
 * of every command (tokenize, lookup --text, serve): --tokenizer (serve:
 * or its config file key), else $TOKVEC_TOKENIZER, else DATA_DIR/gpt2 when
 * it is there, else none. docs/configuration.md, "Text: the tokenizer",
 * documents the rule.
 *
 * What must hold: a relative path is never a default (the working
 * directory would decide); only the Makefile's DATA_DIR (an absolute path)
 * is. Reads the environment and one file's existence; main thread, before
 * any other thread starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "datadir.h"

/* The Makefile always defines it (DATA_DIR); this is for tools that read
 * the source without the Makefile's flags. */
#ifndef TOKVEC_DATA_DIR
#define TOKVEC_DATA_DIR "/data"
#endif

const char *tv_data_dir(void)
{
    return TOKVEC_DATA_DIR;
}

const char *tv_builtin_tokenizer(char *buf, size_t len)
{
    char probe[4096];
    int n = snprintf(probe, sizeof probe, "%s/gpt2/encoder.json",
                     TOKVEC_DATA_DIR);
    if (n < 0 || (size_t)n >= sizeof probe || access(probe, R_OK) != 0)
        return NULL;
    n = snprintf(buf, len, "%s/gpt2", TOKVEC_DATA_DIR);
    return n < 0 || (size_t)n >= len ? NULL : buf;
}

const char *tv_default_tokenizer(char *buf, size_t len, tv_tok_from *from)
{
    const char *env = getenv("TOKVEC_TOKENIZER");
    if (env) {
        *from = TV_TOK_FROM_ENV;
        return env;
    }
    const char *b = tv_builtin_tokenizer(buf, len);
    *from = b ? TV_TOK_FROM_BUILTIN : TV_TOK_FROM_NONE;
    return b;
}
