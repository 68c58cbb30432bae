/* main.c -- the tokvec binary: dispatches to one subcommand per verb.
 *
 * What must hold: an unknown verb exits 2 naming the closest one when it
 * is a likely typo ("did you mean serve?"), then the list. Main thread.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_text.h"
#include "serve.h"
#include "suggest.h"

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *what;
} commands[] = {
    {"serve", cmd_serve, "serve a table over HTTP"},
    {"init", cmd_init, "create a torch-compatible random table"},
    {"inspect", cmd_inspect, "describe a table file"},
    {"lookup", cmd_lookup, "print embeddings for ids as /embed JSON"},
    {"convert", cmd_convert, "convert .npy/safetensors to safetensors"},
    {"tokenize", cmd_tokenize, "print the token ids of a text"},
    {"probe", cmd_probe, "exit 0 if a URL answers 200 (health checks)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tokvec COMMAND [OPTIONS]  (tokvec COMMAND --help)\n\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].what);
    fprintf(f, "\ntokvec %s\n", TOKVEC_VERSION);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("tokvec %s\n", TOKVEC_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    enum { NCOMMANDS = sizeof commands / sizeof commands[0] };
    const char *names[NCOMMANDS];
    for (size_t i = 0; i < NCOMMANDS; i++)
        names[i] = commands[i].name;
    const char *best = tv_suggest(argv[1], strlen(argv[1]), names, NCOMMANDS);
    if (best)
        fprintf(stderr, "tokvec: unknown command '%s' (did you mean %s?)\n",
                argv[1], best);
    else
        fprintf(stderr, "tokvec: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
