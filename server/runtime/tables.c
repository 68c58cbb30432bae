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
 * The tokenizer (--tokenizer) is opened once at start-up, after the table,
 * and never changes (a reload keeps it, and refuses a table whose
 * vocab_size is below the tokenizer's). It is read-only: any thread. The
 * built-in default (config.h: tokenizer_given 0) that does not open or
 * does not fit the table is a warning and no tokenizer; a named one is an
 * error whose message says how to name none.
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
        tokvec_table_close(r->t);
        free(r);
    }
}

int table_open(tv_server *s, table_ref **out, char *err, size_t len)
{
    tokvec_table_opts o = s->topts;
    o.errbuf = err;
    o.errlen = len;
    tokvec_table *t;
    *out = NULL;
    int rc = tokvec_table_open(s->cfg->table, &o, &t);
    if (rc < 0)
        return rc;
    table_ref *r = tv_malloc(sizeof *r);
    if (!r || tokvec_similar_open(t, &r->sim) < 0) {
        free(r);
        tokvec_table_close(t);
        snprintf(err, len, "out of memory");
        return -ENOMEM;
    }
    r->t = t;
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
        snprintf(err, len, "tokenizer: %s", *why ? why : tokvec_strerror(rc));
        s->tok = NULL;
        return s->cfg->tokenizer_given || rc == -ENOMEM ? rc
                                                        : drop_default(s, err);
    }
    tokvec_tokenizer_get_info(s->tok, &s->tok_info);
    rc = tokenizer_fits(s, s->current->t, err, len);
    if (rc < 0 && !s->cfg->tokenizer_given)
        return drop_default(s, err);
    if (rc < 0) { /* named: an error, that says how to name none */
        size_t n = strlen(err);
        snprintf(err + n, len - n,
                 " (give the table's own tokenizer, or none for ids only: "
                 "--tokenizer '' or TOKVEC_TOKENIZER=)");
    }
    return rc;
}

int tokenizer_fits(const tv_server *s, const tokvec_table *t, char *err,
                   size_t len)
{
    if (!s->tok)
        return 0;
    const tokvec_table_info *in = tokvec_table_get_info(t);
    if (s->tok_info.vocab_size <= in->vocab_size)
        return 0;
    snprintf(err, len,
             "tokenizer %s has ids up to %" PRId64 " (vocab_size %" PRId64
             ") but the table %s has vocab_size %" PRId64,
             s->cfg->tokenizer, s->tok_info.vocab_size - 1,
             s->tok_info.vocab_size, in->path, in->vocab_size);
    return TOKVEC_E_TOKENIZER;
}

void table_publish(const tokvec_table *t)
{
    const tokvec_table_info *in = tokvec_table_get_info(t);
    tv_metrics_set_table(in->vocab_size, in->dim,
                         tokvec_dtype_numpy_name(in->dtype),
                         tokvec_positional_name(in->positional));
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
    if (tokenizer_fits(s, fresh->t, err, sizeof err) < 0) {
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
           "reloaded %s: vocab_size=%" PRId64 " dim=%" PRId64
           " dtype=%s positional=%s",
           in->path, in->vocab_size, in->dim,
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
    table_release(ref);
    if (n >= 0 && (size_t)n < len)
        n += s->tok ? snprintf(buf + n, len - (size_t)n,
                               "; tokenizer %s (%s): vocab_size=%" PRId64
                               " special=%zu",
                               s->cfg->tokenizer, s->tok_info.name,
                               s->tok_info.vocab_size, s->tok_info.n_special)
                    : snprintf(buf + n, len - (size_t)n,
                               "; no tokenizer (ids only)");
    if (n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n,
                      "; threads: %u workers (%s), %u HTTP per listener",
                      s->workers, s->workers_why, s->http_threads);
    if (n < 0)
        return 0;
    return (size_t)n < len ? (size_t)n : len ? len - 1 : 0;
}
