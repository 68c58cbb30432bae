/* datadir.h -- the data tokvec is built to find by itself, and the one rule
 * every command uses for its default tokenizer. See datadir.c.
 */
#ifndef TV_DATADIR_H
#define TV_DATADIR_H

#include <stddef.h>

/* The data directory compiled in (the Makefile's DATA_DIR: the checkout's
 * data/ for a local build, /data in the container image). */
const char *tv_data_dir(void);

/* The built-in default tokenizer, DATA_DIR/gpt2 (what `make data` and the
 * image put there), written to buf: buf when it holds encoder.json, else
 * NULL (not installed). */
const char *tv_builtin_tokenizer(char *buf, size_t len);

/* Where a command's tokenizer comes from when it has no --tokenizer. */
typedef enum {
    TV_TOK_FROM_ENV,     /* TOKVEC_TOKENIZER (set, maybe "": none) */
    TV_TOK_FROM_BUILTIN, /* tv_builtin_tokenizer() */
    TV_TOK_FROM_NONE,    /* neither: no tokenizer */
} tv_tok_from;

/* The tokenizer of a command given no --tokenizer: $TOKVEC_TOKENIZER when
 * it is set (even to "", which means none), else the built-in default
 * when installed, else NULL. *from says which. */
const char *tv_default_tokenizer(char *buf, size_t len, tv_tok_from *from);

#endif
