/* serve.h -- tokvec serve and tokvec probe (serve.c). Same rules as
 * cli.h: argv[0] the verb, the exit code back. Main thread only. */
#ifndef TOKVEC_SERVE_H
#define TOKVEC_SERVE_H

int cmd_serve(int argc, char **argv);
int cmd_probe(int argc, char **argv);

#endif
