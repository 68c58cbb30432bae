/* tables.h -- the table being served: references to it, swapping it on
 * reload (tv_server_reload, tv_server_summary: public through http.h),
 * the model's name. See tables.c. Below server.h, which only points at a
 * table_ref.
 */
#ifndef TV_TABLES_H
#define TV_TABLES_H

#include <stdatomic.h>
#include <stddef.h>

#include "tokvec_model.h"
#include "tokvec_similar.h"
#include "tokvec_table.h"
#include "tokvec_tokenizer.h"

typedef struct tv_server tv_server;

/* Re-opens the table path; on success swaps it in (requests in flight
 * finish on the old one, closed when its last request ends). 0 or -1;
 * logs either way and counts tokvec_reloads_total. */
int tv_server_reload(tv_server *s);

/* One line describing the current table (path, format, sizes, dtype,
 * positions, tensor names) for the start-up log. Returns its length. */
size_t tv_server_summary(tv_server *s, char *buf, size_t len);

/* A table and the references to it: the server's own (while it is the
 * current table) and one per request that uses it. */
typedef struct table_ref {
    tokvec_table *t;     /* the model's table (borrowed) with --model */
    tokvec_similar *sim; /* POST /similar's index over t (pages.h) */
    /* --model: the directory, opened whole (table, tokenizer, its
     * settings), closed with the last reference; NULL for --table. */
    tokvec_model *model;
    /* The tokenizer of this table: the model's (owned), or --tokenizer's
     * (s->tok, borrowed, at start-up; read again by each reload, owned:
     * tok_owned), or NULL. Read-only: any thread. */
    tokvec_tokenizer *tok;
    tokvec_tokenizer_info tok_info;
    int tok_owned; /* --table: tok was opened by a reload (closed with r) */
    int normalize; /* sentence vectors' default (--normalize, the model) */
    atomic_int refs;
} table_ref;

/* The current table, with a reference taken (any thread). */
table_ref *table_acquire(tv_server *s);

/* Drops a reference; the last one closes the table. NULL is a no-op. Any
 * thread. */
void table_release(table_ref *r);

/* Opens the configured table (--table, or the whole --model directory:
 * table and tokenizer) with one reference (the server's). 0, or a
 * negative tokvec code with err filled (a table error names the file;
 * -ENOMEM: out of memory). */
int table_open(tv_server *s, table_ref **out, char *err, size_t len);

/* Opens cfg->tokenizer (when set) into s->tok (and the current
 * reference's tok) and checks it against the current table. 0 (also with
 * no tokenizer), or a negative tokvec code with err filled. Main thread, at
 * start-up. */
int tokenizer_open(tv_server *s, char *err, size_t len);

/* 0 when every id of the tokenizer (if any) is a row of t; else
 * TOKVEC_E_TOKENIZER with err naming both vocab sizes. */
int tokenizer_fits(const table_ref *r, const char *tok_path, char *err,
                   size_t len);

/* The name /v1/ answers give the model: --served-model-name, the model
 * directory's name, or the table file's name. Main thread at start (the
 * config never changes): any thread after. */
const char *tables_model_name(const tv_server *s);

/* The table's labels for tokvec_table_info (metrics). */
void table_publish(const tokvec_table *t);

#endif
