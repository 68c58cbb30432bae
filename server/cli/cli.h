/* cli.h -- the tokvec subcommands. Each takes argv with argv[0] the verb
 * and returns the process exit code: 0 ok, 1 runtime failure, 2 bad usage
 * or bad input (with one line on stderr naming the file and the problem). */
#ifndef TOKVEC_CLI_H
#define TOKVEC_CLI_H

#include <stdint.h>

#include "tokvec_error.h"

int cmd_serve(int argc, char **argv); /* server/cli/serve.c */
int cmd_probe(int argc, char **argv); /* server/cli/serve.c */
int cmd_init(int argc, char **argv);  /* server/cli/cli.c */
int cmd_inspect(int argc, char **argv);
int cmd_lookup(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_tokenize(int argc, char **argv); /* server/cli/cli_text.c */
/* The ids of text (tokenizer file as tokvec tokenize finds it) into *ids
 * (replacing it, malloc'd) and *n; 0, or an exit code after a message. */
int tv_cli_text_ids(const char *tokenizer, const char *text, int special,
                    int64_t **ids, int64_t *n);

#endif
