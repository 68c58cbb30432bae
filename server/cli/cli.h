/* cli.h -- the file subcommands of tokvec (cli.c); serve.h and
 * cli_text.h have the others. Each takes argv with argv[0] the verb
 * and returns the process exit code: 0 ok, 1 runtime failure, 2 bad usage
 * or bad input (with one line on stderr naming the file and the problem). */
#ifndef TOKVEC_CLI_H
#define TOKVEC_CLI_H

#include "tokvec_error.h"

int cmd_init(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_lookup(int argc, char **argv);
int cmd_convert(int argc, char **argv);

#endif
