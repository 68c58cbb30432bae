/* cli_text.h -- tokvec tokenize, and the text half of tokvec lookup --text
 * (cli_text.c). Same rules as cli.h: argv[0] the verb, the exit code back.
 * Main thread only. */
#ifndef TOKVEC_CLI_TEXT_H
#define TOKVEC_CLI_TEXT_H

#include <stdint.h>

int cmd_tokenize(int argc, char **argv);
/* The ids of text (tokenizer file as tokvec tokenize finds it) into *ids
 * (replacing it, malloc'd) and *n; 0, or an exit code after a message. */
int tv_cli_text_ids(const char *tokenizer, const char *text, int special,
                    int64_t **ids, int64_t *n);

#endif
