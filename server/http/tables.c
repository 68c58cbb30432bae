/* tables.c -- the table being served: references, reload, the summary
 * line (tables.h; tv_server_reload and tv_server_summary of http.h).
 *
 * `current` is a refcounted holder (table_ref). The pointer `current` is
 * guarded by table_lock; `refs` is atomic. The server holds one reference
 * to the current table; each /embed job takes one when it is created and
 * gives it back when its response is freed (cheap routes hold one only
 * while they run). SIGHUP swaps `current` under table_lock and drops the
 * server's reference, so the old table is closed (unmapped) by whoever
 * drops its last reference -- after the last response made from it is
 * gone.
 *
 * Threads: table_acquire and table_release on any thread (HTTP threads,
 * workers, and MHD's when it frees a response); table_open, reload and
 * the swap on the main thread only. table_lock is a leaf lock. An open
 * table's mappings are registered with the SIGBUS handler (sigbus.h) until
 * its last reference goes.
 *
 * The tokenizer (--tokenizer) is opened at start-up, after the table
 * (s->tok), and read again by each reload into the fresh reference, which
 * owns it (tok_owned): a reload that cannot open it, or whose table's
 * vocab_size is below the tokenizer's, keeps the old table and tokenizer. It
 * is read-only: any thread. The built-in default (config.h: tokenizer_given 0)
 * that does not open or does not fit the table is a warning and no tokenizer;
 * a named one is an error whose message says how to name none. With --model
 * the whole directory is one generation: table, tokenizer and normalization
 * are opened together into one table_ref (its tok owned) and a reload swaps
 * them together, or keeps the old ones.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "sigbus.h"

table_ref *table_acquire(tv_server *s)
{
    pthread_mutex_lock(&s->table_lock);
    table_ref *r = s->current;
    atomic_fetch_add(&r->refs, 1);
    pthread_mutex_unlock(&s->table_lock);
    return r;
}

void table_release(table_ref *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
        tokvec_similar_close(r->sim);
        tv_sigbus_remove(r->t); /* before its pages go */
        if (r->model) {
            tokvec_tokenizer_close(r->tok);
            tokvec_model_close(r->model); /* and its table */
        } else {
            if (r->tok_owned)
                tokvec_tokenizer_close(r->tok);
            tokvec_table_close(r->t);
        }
        free(r);
    }
}

/* --model: the directory, then its tokenizer, checked against its
 * table. 0 with *m and *tok, or a negative code with err filled. */
static int model_open(tv_server *s, tokvec_model **m, tokvec_tokenizer **tok,
                      char *err, size_t len)
{
    const tv_config *c = s->cfg;
    tokvec_model_opts mo = {.errbuf = err, .errlen = len};
    if (strcmp(c->normalize, "auto")) {
        mo.normalize_set = 1;
        mo.normalize = !strcmp(c->normalize, "true");
    }
    *tok = NULL;
    int rc = tokvec_model_open(c->model, &mo, m);
    if (rc < 0)
        return rc;
    const tokvec_model_info *mi = tokvec_model_get_info(*m);
    char why[512] = "";
    tokvec_tokenizer_opts to = {.errbuf = why, .errlen = sizeof why};
    rc = tokvec_tokenizer_open(mi->tokenizer_path, &to, tok);
    if (rc < 0) {
        snprintf(err, len, "model %s: tokenizer: %s", c->model,
                 *why ? why : tokvec_strerror(rc));
        tokvec_model_close(*m);
        *m = NULL;
    }
    return rc;
}

int table_open(tv_server *s, table_ref **out, char *err, size_t len)
{
    tokvec_table_opts o = s->topts;
    o.errbuf = err;
    o.errlen = len;
    tokvec_table *t = NULL;
    tokvec_model *m = NULL;
    tokvec_tokenizer *tok = NULL;
    *out = NULL;
    if (len)
        err[0] = '\0';
    int rc = *s->cfg->model ? model_open(s, &m, &tok, err, len)
                            : tokvec_table_open(s->cfg->table, &o, &t);
    if (rc < 0) {
        /* the core fills errbuf for what is wrong with a file, not when
         * it runs out of memory: the line names the file and the code */
        if (len && !err[0])
            snprintf(err, len, "%s: %s",
                     *s->cfg->model ? s->cfg->model : s->cfg->table,
                     tokvec_strerror(rc));
        return rc;
    }
    if (m)
        t = (tokvec_table *)tokvec_model_table(m);
    table_ref *r = tv_calloc(1, sizeof *r);
    if (r) {
        r->t = t;
        r->model = m;
        r->tok = m ? tok : s->tok;
        if (r->tok)
            tokvec_tokenizer_get_info(r->tok, &r->tok_info);
        r->normalize = m ? tokvec_model_get_info(m)->normalize
                         : !strcmp(s->cfg->normalize, "true");
    }
    rc = r && m ? tokenizer_fits(r, tokvec_model_get_info(m)->tokenizer_path,
                                 err, len)
                : 0;
    if (!r || rc < 0 || tokvec_similar_open(t, &r->sim) < 0) {
        if (rc >= 0)
            snprintf(err, len, "out of memory");
        free(r);
        if (m) {
            tokvec_tokenizer_close(tok);
            tokvec_model_close(m);
        } else {
            tokvec_table_close(t);
        }
        return rc < 0 ? rc : -ENOMEM;
    }
    atomic_init(&r->refs, 1); /* the server's own reference */
    tv_sigbus_add(t);         /* a SIGBUS in its pages names its file */
    *out = r;
    return 0;
}

/* The built-in default (cfg->tokenizer_given 0) that cannot serve this
 * table: a warning, and ids only. Returns 0. */
static int drop_default(tv_server *s, const char *why)
{
    tv_log(TV_LOG_WARN,
           "default tokenizer not used, serving ids only: %s (give the "
           "table's own with --tokenizer FILE or TOKVEC_TOKENIZER=FILE)",
           why);
    tokvec_tokenizer_close(s->tok);
    s->tok = NULL;
    return 0;
}

int tokenizer_open(tv_server *s, char *err, size_t len)
{
    const char *path = s->cfg->tokenizer;
    if (!path || !*path)
        return 0;
    char why[512] = "";
    tokvec_tokenizer_opts o = {.errbuf = why, .errlen = sizeof why};
    int rc = tokvec_tokenizer_open(path, &o, &s->tok);
    if (rc < 0) {
        /* err is as long as why: the line's tail gives way */
        snprintf(err, len, "tokenizer: %.480s",
                 *why ? why : tokvec_strerror(rc));
        s->tok = NULL;
        return s->cfg->tokenizer_given || rc == -ENOMEM ? rc
                                                        : drop_default(s, err);
    }
    tokvec_tokenizer_get_info(s->tok, &s->tok_info);
    s->current->tok = s->tok;
    s->current->tok_info = s->tok_info;
    rc = tokenizer_fits(s->current, path, err, len);
    if (rc < 0 && !s->cfg->tokenizer_given) {
        s->current->tok = NULL;
        return drop_default(s, err);
    }
    if (rc < 0) { /* named: an error, that says how to name none */
        size_t n = strlen(err);
        snprintf(err + n, len - n,
                 " (give the table's own tokenizer, or none for ids only: "
                 "--tokenizer '' or TOKVEC_TOKENIZER=)");
    }
    return rc;
}

int tokenizer_fits(const table_ref *r, const char *tok_path, char *err,
                   size_t len)
{
    if (!r->tok)
        return 0;
    const tokvec_table_info *in = tokvec_table_get_info(r->t);
    if (r->tok_info.vocab_size <= in->vocab_size)
        return 0;
    snprintf(err, len,
             "tokenizer %s has ids up to %" PRId64 " (vocab_size %" PRId64
             ") but the table %s has vocab_size %" PRId64,
             tok_path, r->tok_info.vocab_size - 1, r->tok_info.vocab_size,
             in->path, in->vocab_size);
    return TOKVEC_E_TOKENIZER;
}

const char *tables_model_name(const tv_server *s)
{
    return s->model_name;
}

void table_publish(const tokvec_table *t)
{
    const tokvec_table_info *in = tokvec_table_get_info(t);
    tv_metrics_set_table(in->vocab_size, in->dim,
                         tokvec_dtype_numpy_name(in->dtype),
                         tokvec_positional_name(in->positional));
}

/* --tokenizer's file, read again for a reload (it may have changed too:
 * --watch, SIGHUP): the fresh reference owns what it opened. 0, or a
 * negative code with err filled (the old table and tokenizer stay). */
static int reopen_tokenizer(tv_server *s, table_ref *fresh, char *err,
                            size_t len)
{
    char why[512] = "";
    tokvec_tokenizer_opts o = {.errbuf = why, .errlen = sizeof why};
    int rc = tokvec_tokenizer_open(s->cfg->tokenizer, &o, &fresh->tok);
    if (rc < 0) {
        fresh->tok = NULL;
        /* err is as long as why: the line's tail gives way */
        snprintf(err, len, "tokenizer: %.480s",
                 *why ? why : tokvec_strerror(rc));
        return rc;
    }
    fresh->tok_owned = 1;
    tokvec_tokenizer_get_info(fresh->tok, &fresh->tok_info);
    return 0;
}

int tv_server_reload(tv_server *s)
{
    char err[512] = "";
    table_ref *fresh;
    if (table_open(s, &fresh, err, sizeof err) < 0) {
        tv_metrics_reload(0);
        tv_log(TV_LOG_ERROR, "reload failed, still serving the old table: %s",
               err);
        return -1;
    }
    /* Clients size their buffers by dim (and /info promised it): a table
     * of another width needs a restart, not a reload. Reloads run on the main
     * thread, the only one that swaps s->current: reading it needs no lock. */
    int64_t dim_now = tokvec_table_get_info(s->current->t)->dim;
    const tokvec_table_info *fi = tokvec_table_get_info(fresh->t);
    if (fi->dim != dim_now) {
        tv_metrics_reload(0);
        tv_log(TV_LOG_ERROR,
               "reload failed, still serving the old table: "
               "%s has dim %" PRId64 ", the serving table "
               "has dim %" PRId64 " (a new dim needs a "
               "restart)",
               fi->path, fi->dim, dim_now);
        table_release(fresh);
        return -1;
    }
    if (!fresh->model && s->tok &&
        reopen_tokenizer(s, fresh, err, sizeof err) < 0) {
        tv_metrics_reload(0);
        tv_log(TV_LOG_ERROR, "reload failed, still serving the old table: %s",
               err);
        table_release(fresh);
        return -1;
    }
    if (!fresh->model &&
        tokenizer_fits(fresh, s->cfg->tokenizer, err, sizeof err) < 0) {
        tv_metrics_reload(0);
        tv_log(TV_LOG_ERROR, "reload failed, still serving the old table: %s",
               err);
        table_release(fresh);
        return -1;
    }
    pthread_mutex_lock(&s->table_lock);
    table_ref *old = s->current;
    s->current = fresh;
    pthread_mutex_unlock(&s->table_lock);
    table_release(old);
    table_publish(fresh->t);
    tv_metrics_reload(1);
    const tokvec_table_info *in = tokvec_table_get_info(fresh->t);
    tv_log(TV_LOG_INFO,
           "reloaded %s%s: vocab_size=%" PRId64 " dim=%" PRId64
           " dtype=%s positional=%s",
           fresh->model ? "model " : "",
           fresh->model ? s->cfg->model : in->path, in->vocab_size, in->dim,
           tokvec_dtype_numpy_name(in->dtype),
           tokvec_positional_name(in->positional));
    return 0;
}

size_t tv_server_summary(tv_server *s, char *buf, size_t len)
{
    table_ref *ref = table_acquire(s);
    const tokvec_table_info *in = tokvec_table_get_info(ref->t);
    int n = snprintf(buf, len,
                     "table %s (%s): vocab_size=%" PRId64 " dim=%" PRId64
                     " dtype=%s positional=%s context_length=%" PRId64
                     " token=%s position=%s",
                     in->path, in->format, in->vocab_size, in->dim,
                     tokvec_dtype_numpy_name(in->dtype),
                     tokvec_positional_name(in->positional),
                     in->context_length,
                     *in->token_tensor ? in->token_tensor : "-",
                     in->position_tensor ? in->position_tensor : "-");
    if (n >= 0 && (size_t)n < len && ref->model) {
        const tokvec_model_info *mi = tokvec_model_get_info(ref->model);
        n += snprintf(buf + n, len - (size_t)n,
                      "; model %s (%s, served as %s): normalize=%s (%s)",
                      mi->dir, mi->layout_name, s->model_name,
                      mi->normalize ? "true" : "false", mi->normalize_from);
    }
    if (n >= 0 && (size_t)n < len)
        n += ref->tok
                 ? snprintf(
                       buf + n, len - (size_t)n,
                       "; tokenizer %s (%s): vocab_size=%" PRId64
                       " special=%zu",
                       ref->model
                           ? tokvec_model_get_info(ref->model)->tokenizer_path
                           : s->cfg->tokenizer,
                       ref->tok_info.name, ref->tok_info.vocab_size,
                       ref->tok_info.n_special)
                 : snprintf(buf + n, len - (size_t)n,
                            "; no tokenizer (ids only)");
    table_release(ref);
    if (n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n,
                      "; threads: %u workers (%s), %u HTTP per listener",
                      s->workers, s->workers_why, s->http_threads);
    if (n < 0)
        return 0;
    return (size_t)n < len ? (size_t)n : len ? len - 1 : 0;
}
