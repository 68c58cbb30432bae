/* test_pool.c -- server/runtime/pool.c: the workers (exactly `threads` of
 * them, named tv-work-0..N-1, at most that many jobs at once, work() then
 * done() on the same worker), the bounded FIFO (max_queue counts jobs reserved
 * and not yet started: the 429 rule; jobs start in push order, none
 * overtakes another), the max_inflight_bytes gate (a job waits while its
 * bytes do not fit, a lone job is let through, release starts every job
 * that now fits), tv_pool_unfinished, tv_pool_stop (running jobs finish,
 * waiting ones are dropped without done(), workers joined), the queue
 * depth gauge, admission without a hand-off (tv_pool_try_start: only
 * what would start at once), inline jobs (tv_pool_try_inline: the bytes, no
 * worker's slot, so a small job runs while every worker is busy and jobs wait;
 * refused only when its own bytes do not fit) and charged replies
 * (tv_pool_charge: past the budget, nothing starts until released). The
 * response buffers are test_bufcache.c's.
 *
 * Jobs record what happened under a mutex the test waits on with a
 * condition variable (5 s at most, so a broken pool fails rather than
 * hangs); pool counters are polled the same way. Where a test shows that
 * something does NOT happen (a job that must keep waiting), it gives the
 * pool NEGATIVE_MS to do it wrongly; the correct pool passes at any speed.
 * Worker threads never assert: the test thread checks what they recorded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "pool.h"
#include "server.h"

#define MAXJ 64
#define WAIT_MS 5000    /* bound on waiting for something that must happen */
#define NEGATIVE_MS 100 /* window for something that must not happen */
#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define BIG_QUEUE 1000
#define NO_GATE ((size_t)1 << 40)

/* --- fixture: jobs that record and can be held --------------------------- */

struct fixture;

typedef struct {
    tv_job job; /* first: callbacks cast back */
    struct fixture *f;
    int id;
    int hold_work, hold_done; /* wait in work()/done() until let go */
    int go;                   /* this job may go on; under f->mu */
    /* Recorded by the worker, under f->mu. */
    int worked, in_done, done;
    int work_seq, done_seq;
    pthread_t work_tid, done_tid;
    char name[16];
    int name_rc;
} tjob;

typedef struct dummy {
    tjob j;
    struct dummy *next;
} dummy;

typedef struct fixture {
    tv_pool *pool;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    int all_go;        /* every held job may go on */
    int started, running, max_running, finished, seq;
    int order[MAXJ * 2];
    int norder;
    tjob jobs[MAXJ];
    dummy *dummies; /* pushed while stopping (stop test) */
} fixture;

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int may_go(const tjob *j)
{
    return j->go || j->f->all_go;
}

static void on_work(tv_job *job)
{
    tjob *j = (tjob *)job;
    fixture *f = j->f;
    char name[16] = "";
    int rc = pthread_getname_np(pthread_self(), name, sizeof name);
    pthread_mutex_lock(&f->mu);
    j->name_rc = rc;
    memcpy(j->name, name, sizeof name);
    j->work_tid = pthread_self();
    j->work_seq = ++f->seq;
    j->worked++;
    f->started++;
    if (++f->running > f->max_running)
        f->max_running = f->running;
    if (f->norder < (int)(sizeof f->order / sizeof f->order[0]))
        f->order[f->norder++] = j->id;
    pthread_cond_broadcast(&f->cv);
    while (j->hold_work && !may_go(j))
        pthread_cond_wait(&f->cv, &f->mu);
    f->running--;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void on_done(tv_job *job)
{
    tjob *j = (tjob *)job;
    fixture *f = j->f;
    pthread_mutex_lock(&f->mu);
    j->done_tid = pthread_self();
    j->done_seq = ++f->seq;
    j->in_done = 1;
    pthread_cond_broadcast(&f->cv);
    while (j->hold_done && !may_go(j))
        pthread_cond_wait(&f->cv, &f->mu);
    j->done++;
    f->finished++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&f->mu, NULL);
    for (int i = 0; i < MAXJ; i++) {
        f->jobs[i].f = f;
        f->jobs[i].id = i;
        f->jobs[i].job.work = on_work;
        f->jobs[i].job.done = on_done;
    }
    *state = f;
    return 0;
}

/* Runs after a failed test too: lets every held job go, so the workers can
 * be joined, then frees. */
static int teardown(void **state)
{
    fixture *f = *state;
    pthread_mutex_lock(&f->mu);
    f->all_go = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    tv_pool_stop(f->pool);
    while (f->dummies) {
        dummy *d = f->dummies;
        f->dummies = d->next;
        free(d);
    }
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return 0;
}

static void start(fixture *f, int threads, size_t max_queue,
                  size_t max_inflight)
{
    assert_int_equal(tv_pool_start(&f->pool, threads, max_queue, max_inflight),
                     0);
    assert_non_null(f->pool);
}

static tjob *job(fixture *f, int id, size_t bytes)
{
    tjob *j = &f->jobs[id];
    j->job.bytes = bytes;
    return j;
}

/* Reserve and push job `id`; the reserve must succeed. */
static tjob *submit(fixture *f, int id, size_t bytes)
{
    tjob *j = job(f, id, bytes);
    assert_int_equal(tv_pool_reserve(f->pool), 0);
    tv_pool_push(f->pool, &j->job);
    return j;
}

static tjob *submit_held(fixture *f, int id, size_t bytes)
{
    f->jobs[id].hold_work = 1;
    return submit(f, id, bytes);
}

static void let_go(fixture *f, int id)
{
    pthread_mutex_lock(&f->mu);
    f->jobs[id].go = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void let_all_go(fixture *f)
{
    pthread_mutex_lock(&f->mu);
    f->all_go = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* What a test waits for, read under f->mu. */
typedef int (*pred_fn)(const fixture *f, int arg);
static int started_is(const fixture *f, int n)
{
    return f->started >= n;
}
static int running_is(const fixture *f, int n)
{
    return f->running >= n;
}
static int finished_is(const fixture *f, int n)
{
    return f->finished >= n;
}
static int job_worked(const fixture *f, int id)
{
    return f->jobs[id].worked;
}
static int job_in_done(const fixture *f, int id)
{
    return f->jobs[id].in_done;
}
static int job_done(const fixture *f, int id)
{
    return f->jobs[id].done;
}

/* Waits up to ms for pred; returns whether it holds. */
static int wait_for(fixture *f, pred_fn pred, int arg, long ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->mu);
    int ok;
    for (ok = pred(f, arg); !ok; ok = pred(f, arg))
        if (pthread_cond_timedwait(&f->cv, &f->mu, &dl))
            break;
    ok = pred(f, arg);
    pthread_mutex_unlock(&f->mu);
    return ok;
}

#define must(f, pred, arg)                                             \
    do {                                                               \
        if (!wait_for(f, pred, arg, WAIT_MS))                          \
            fail_msg("%s(%d) not reached in %d ms", #pred, (int)(arg), \
                     WAIT_MS);                                         \
    } while (0)

/* Something that must not happen within NEGATIVE_MS. */
#define must_not(f, pred, arg)                                           \
    do {                                                                 \
        if (wait_for(f, pred, arg, NEGATIVE_MS))                         \
            fail_msg("%s(%d) happened but must not", #pred, (int)(arg)); \
    } while (0)

/* Submits job id and expects it to run to its end at once. */
#define submit_runs(f, id, bytes) \
    do {                          \
        submit(f, id, bytes);     \
        must(f, job_done, id);    \
    } while (0)

/* Submits job id and expects it not to start (it waits for bytes). */
#define submit_waits(f, id, bytes)   \
    do {                             \
        submit(f, id, bytes);        \
        must_not(f, job_worked, id); \
    } while (0)

static int snap(fixture *f, const int *field)
{
    pthread_mutex_lock(&f->mu);
    int v = *field;
    pthread_mutex_unlock(&f->mu);
    return v;
}

/* Polls a pool counter until it equals want (WAIT_MS at most). */
static size_t poll_count(tv_pool *p, size_t (*get)(tv_pool *), size_t want)
{
    size_t v = get(p);
    for (long long end = mono_ms() + WAIT_MS; v != want && mono_ms() < end;
         v = get(p))
        nap_ms(1);
    return v;
}

/* --- threads: /proc/self/task ------------------------------------------- */

/* Counts this process's threads named tv-work-<i> into seen[i] (i < 64);
 * returns how many threads are named tv-work-*. */
static int scan_workers(int seen[64])
{
    for (int i = 0; i < 64; i++) {
        char name[32];
        snprintf(name, sizeof name, "tv-work-%d", i);
        seen[i] = (int)tv_threads_named(name, 1, NULL, 0);
    }
    return (int)tv_threads_named("tv-work-", 0, NULL, 0);
}

/* Whether exactly tv-work-0..n-1 exist, once each. Joined workers of an
 * earlier pool can linger in /proc for a moment: poll. */
static int workers_are(int n)
{
    int seen[64];
    for (long long end = mono_ms() + WAIT_MS;; nap_ms(1)) {
        int ok = scan_workers(seen) == n;
        for (int i = 0; i < 64 && ok; i++)
            ok = seen[i] == (i < n);
        if (ok)
            return 1;
        if (mono_ms() >= end)
            return 0;
    }
}

/* --- workers ---------------------------------------------------------- */

static void start_runs_exactly_threads_workers_named_tv_work_0_to_n(
    void **state)
{
    fixture *f = *state;
    assert_true(workers_are(0));
    start(f, 5, BIG_QUEUE, NO_GATE);
    assert_true(workers_are(5));
}

static void threads_below_one_are_clamped_to_one_worker(void **state)
{
    fixture *f = *state;
    assert_true(workers_are(0));
    start(f, 0, BIG_QUEUE, NO_GATE);
    assert_true(workers_are(1));
    tv_pool_stop(f->pool);
    f->pool = NULL;
    assert_true(workers_are(0));
    start(f, -7, BIG_QUEUE, NO_GATE);
    assert_true(workers_are(1));
    submit_runs(f, 0, 0);
}

static void jobs_run_on_workers_named_tv_work(void **state)
{
    fixture *f = *state;
    enum { THREADS = 4, JOBS = 16 };
    start(f, THREADS, BIG_QUEUE, NO_GATE);
    for (int i = 0; i < JOBS; i++)
        submit(f, i, 0);
    must(f, finished_is, JOBS);
    for (int i = 0; i < JOBS; i++) {
        const tjob *j = &f->jobs[i];
        assert_int_equal(j->name_rc, 0);
        char *end;
        if (strncmp(j->name, "tv-work-", 8))
            fail_msg("job %d ran on a thread named \"%s\"", i, j->name);
        long n = strtol(j->name + 8, &end, 10);
        assert_true(end != j->name + 8 && *end == 0);
        assert_in_range(n, 0, THREADS - 1);
        assert_false(pthread_equal(j->work_tid, pthread_self()));
    }
}

static void work_and_done_run_on_the_same_worker_in_order(void **state)
{
    fixture *f = *state;
    enum { JOBS = 24 };
    start(f, 3, BIG_QUEUE, NO_GATE);
    for (int i = 0; i < JOBS; i++)
        submit(f, i, 0);
    must(f, finished_is, JOBS);
    for (int i = 0; i < JOBS; i++) {
        const tjob *j = &f->jobs[i];
        assert_int_equal(j->worked, 1);
        assert_int_equal(j->done, 1);
        assert_true(pthread_equal(j->work_tid, j->done_tid));
        assert_true(j->work_seq < j->done_seq);
    }
}

static void at_most_threads_jobs_run_at_once(void **state)
{
    fixture *f = *state;
    enum { THREADS = 3, JOBS = 12 };
    start(f, THREADS, BIG_QUEUE, NO_GATE);
    for (int i = 0; i < JOBS; i++)
        submit_held(f, i, 0);
    must(f, running_is, THREADS);
    must_not(f, started_is, THREADS + 1);
    assert_int_equal(tv_pool_waiting(f->pool), JOBS - THREADS);
    /* Let them through one at a time: each finished job makes room for
     * exactly one more. */
    for (int i = 0; i < JOBS; i++) {
        let_go(f, i);
        must(f, job_done, i);
        int want = i + 1 + THREADS < JOBS ? i + 1 + THREADS : JOBS;
        must(f, started_is, want);
        pthread_mutex_lock(&f->mu);
        int started = f->started, max = f->max_running;
        pthread_mutex_unlock(&f->mu);
        assert_int_equal(started, want);
        assert_int_equal(max, THREADS);
    }
    must(f, finished_is, JOBS);
    assert_int_equal(snap(f, &f->max_running), THREADS);
}

/* --- the queue -------------------------------------------------------- */

static void reserve_fails_at_max_queue_and_succeeds_after_a_job_starts(
    void **state)
{
    fixture *f = *state;
    start(f, 1, 2, NO_GATE);
    submit_held(f, 0, 0);
    must(f, job_worked, 0); /* running, so no longer waiting */
    assert_int_equal(tv_pool_waiting(f->pool), 0);

    /* Reserved but not pushed yet counts as waiting. */
    assert_int_equal(tv_pool_reserve(f->pool), 0);
    assert_int_equal(tv_pool_waiting(f->pool), 1);
    assert_int_equal(tv_pool_reserve(f->pool), 0);
    assert_int_equal(tv_pool_waiting(f->pool), 2);
    assert_int_equal(tv_pool_reserve(f->pool), -1);
    assert_int_equal(tv_pool_waiting(f->pool), 2);

    f->jobs[1].hold_work = 1;
    tv_pool_push(f->pool, &job(f, 1, 0)->job);
    tv_pool_push(f->pool, &job(f, 2, 0)->job);
    assert_int_equal(tv_pool_reserve(f->pool), -1);
    assert_int_equal(tv_pool_waiting(f->pool), 2);

    /* Job 0 finishes, job 1 starts: one place frees. */
    let_go(f, 0);
    must(f, job_worked, 1);
    assert_int_equal(tv_pool_waiting(f->pool), 1);
    assert_int_equal(tv_pool_reserve(f->pool), 0);
    assert_int_equal(tv_pool_reserve(f->pool), -1);
    tv_pool_push(f->pool, &job(f, 3, 0)->job);

    let_all_go(f);
    must(f, finished_is, 4);
    assert_int_equal(poll_count(f->pool, tv_pool_waiting, 0), 0);
    assert_int_equal(tv_pool_reserve(f->pool), 0);
    tv_pool_push(f->pool, &job(f, 4, 0)->job);
    must(f, job_done, 4);
}

static void max_queue_zero_refuses_every_reserve(void **state)
{
    fixture *f = *state;
    start(f, 2, 0, NO_GATE);
    assert_int_equal(tv_pool_reserve(f->pool), -1);
    assert_int_equal(tv_pool_waiting(f->pool), 0);
    assert_int_equal(tv_pool_unfinished(f->pool), 0);
}

static void jobs_start_in_fifo_order(void **state)
{
    fixture *f = *state;
    enum { JOBS = 40 };
    start(f, 1, BIG_QUEUE, NO_GATE);
    submit_held(f, 0, 0);
    must(f, job_worked, 0);
    for (int i = 1; i < JOBS; i++)
        submit(f, i, 0);
    assert_int_equal(tv_pool_waiting(f->pool), JOBS - 1);
    let_go(f, 0);
    must(f, finished_is, JOBS);
    assert_int_equal(f->norder, JOBS);
    for (int i = 0; i < JOBS; i++)
        assert_int_equal(f->order[i], i);
}

static void unfinished_counts_reserved_jobs_until_done_returns(void **state)
{
    fixture *f = *state;
    start(f, 1, BIG_QUEUE, NO_GATE);
    assert_int_equal(tv_pool_unfinished(f->pool), 0);
    assert_int_equal(tv_pool_reserve(f->pool), 0);
    assert_int_equal(tv_pool_unfinished(f->pool), 1); /* before the push */
    f->jobs[0].hold_done = 1;
    tv_pool_push(f->pool, &job(f, 0, 0)->job);
    must(f, job_in_done, 0);
    assert_int_equal(tv_pool_waiting(f->pool), 0);
    assert_int_equal(tv_pool_unfinished(f->pool), 1); /* done() running */
    submit(f, 1, 0);
    assert_int_equal(tv_pool_unfinished(f->pool), 2);
    let_go(f, 0);
    must(f, job_done, 1);
    assert_int_equal(poll_count(f->pool, tv_pool_unfinished, 0), 0);
}

/* tokvec_queue_depth in the rendered metrics. */
static double queue_depth(tv_pool *p)
{
    size_t len;
    char *t = tv_metrics_render(p, &len);
    assert_non_null(t);
    const char *s = strstr(t, "\ntokvec_queue_depth ");
    assert_non_null(s);
    double v = strtod(s + strlen("\ntokvec_queue_depth "), NULL);
    free(t);
    return v;
}

static void queue_depth_gauge_counts_jobs_from_reserve_to_start(void **state)
{
    fixture *f = *state;
    start(f, 1, BIG_QUEUE, NO_GATE);
    double base = queue_depth(f->pool);
    submit_held(f, 0, 0);
    must(f, job_worked, 0);
    assert_true(queue_depth(f->pool) == base);
    assert_int_equal(tv_pool_reserve(f->pool), 0);
    assert_true(queue_depth(f->pool) == base + 1);
    tv_pool_push(f->pool, &job(f, 1, 0)->job);
    submit(f, 2, 0);
    assert_true(queue_depth(f->pool) == base + 2);
    let_go(f, 0);
    must(f, finished_is, 3);
    assert_true(queue_depth(f->pool) == base);
}

/* tokvec_inflight_reply_bytes: read from the pool as /metrics renders. */
static void inflight_bytes_gauge_reads_the_pools_bytes(void **state)
{
    fixture *f = *state;
    start(f, 1, BIG_QUEUE, NO_GATE);
    size_t len;
    char *t = tv_metrics_render(f->pool, &len);
    assert_non_null(strstr(t, "\ntokvec_inflight_reply_bytes 0\n"));
    free(t);
    tv_pool_charge(f->pool, 1234);
    t = tv_metrics_render(f->pool, &len);
    assert_non_null(strstr(t, "\ntokvec_inflight_reply_bytes 1234\n"));
    free(t);
    tv_pool_release(f->pool, 1234);
}

/* --- max_inflight_bytes ----------------------------------------------- */

static void a_job_waits_while_its_bytes_do_not_fit_and_starts_after_release(
    void **state)
{
    fixture *f = *state;
    start(f, 2, BIG_QUEUE, 100);
    submit_runs(f, 0, 60);  /* finished; its 60 bytes stay reserved */
    submit_waits(f, 1, 50); /* 110 > 100 */
    assert_int_equal(tv_pool_waiting(f->pool), 1);
    tv_pool_release(f->pool, 30); /* 30 + 50 still fits: starts */
    must(f, job_done, 1);
    assert_int_equal(tv_pool_waiting(f->pool), 0);
    /* 30 + 50 = 80 reserved now; 21 more does not fit, 20 does. */
    submit_waits(f, 2, 21);
    tv_pool_release(f->pool, 1);
    must(f, job_done, 2);
    tv_pool_release(f->pool, 100);
}

static void a_job_whose_bytes_fit_exactly_starts_at_once(void **state)
{
    fixture *f = *state;
    start(f, 2, BIG_QUEUE, 100);
    submit_runs(f, 0, 60);
    submit_runs(f, 1, 40); /* 60 + 40 == 100 */
    tv_pool_release(f->pool, 100);
}

static void a_lone_job_larger_than_max_inflight_is_let_through(void **state)
{
    fixture *f = *state;
    start(f, 2, BIG_QUEUE, 100);
    submit_runs(f, 0, 1000);
    /* Not alone now: 1000 bytes are reserved until released. */
    submit_waits(f, 1, 1);
    tv_pool_release(f->pool, 1000);
    must(f, job_done, 1);
    tv_pool_release(f->pool, 1);
    /* Alone again: another oversized job goes. */
    submit_runs(f, 2, 5000);
    tv_pool_release(f->pool, 5000);
}

static void a_small_job_does_not_overtake_one_waiting_for_bytes(void **state)
{
    fixture *f = *state;
    /* One worker, free: only the gate holds job 2 back. */
    start(f, 1, BIG_QUEUE, 100);
    submit_runs(f, 0, 60);
    submit(f, 1, 50); /* does not fit */
    submit(f, 2, 10); /* would fit, but waits behind job 1 */
    must_not(f, started_is, 2);
    assert_int_equal(tv_pool_waiting(f->pool), 2);
    tv_pool_release(f->pool, 60);
    must(f, finished_is, 3);
    assert_int_equal(f->order[0], 0);
    assert_int_equal(f->order[1], 1);
    assert_int_equal(f->order[2], 2);
    tv_pool_release(f->pool, 60);
}

static void release_starts_every_waiting_job_that_now_fits(void **state)
{
    fixture *f = *state;
    start(f, 3, BIG_QUEUE, 100);
    submit_runs(f, 0, 100);
    /* Three held jobs wait for bytes; each holds its worker until all
     * three run, so they can only all start if the one release wakes
     * every idle worker they need. */
    submit_held(f, 1, 30);
    submit_held(f, 2, 30);
    submit_held(f, 3, 30);
    must_not(f, started_is, 2);
    tv_pool_release(f->pool, 100);
    must(f, running_is, 3);
    assert_int_equal(tv_pool_waiting(f->pool), 0);
    let_all_go(f);
    must(f, finished_is, 4);
    tv_pool_release(f->pool, 90);
}

/* --- stop ------------------------------------------------------------- */

static void *stopper(void *arg)
{
    tv_pool_stop(arg);
    return NULL;
}

static void *let_job_0_go_later(void *arg)
{
    fixture *f = arg;
    nap_ms(NEGATIVE_MS); /* stop is waiting by now, unless it is broken */
    let_go(f, 0);
    return NULL;
}

static void stop_waits_for_the_running_jobs_to_finish(void **state)
{
    fixture *f = *state;
    start(f, 2, BIG_QUEUE, NO_GATE);
    f->jobs[0].hold_done = 1;
    submit(f, 0, 0);
    must(f, job_in_done, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, let_job_0_go_later, f), 0);
    tv_pool_stop(f->pool);
    f->pool = NULL;
    int done = snap(f, &f->jobs[0].done);
    pthread_join(t, NULL);
    assert_int_equal(done, 1);
}

static void stop_drops_waiting_jobs_without_done_and_joins(void **state)
{
    fixture *f = *state;
    start(f, 1, BIG_QUEUE, NO_GATE);
    submit_held(f, 0, 0);
    must(f, job_worked, 0);
    submit(f, 1, 0);
    submit(f, 2, 0);
    assert_int_equal(tv_pool_waiting(f->pool), 2);

    /* Stop while job 0 runs: tv_pool_stop must wait for it. Its start is
     * seen as reserve failing (the queue has room, so only `stopping` can
     * refuse); a reserve that still succeeds is pushed as the contract
     * says, and must be dropped too. */
    tv_pool *p = f->pool;
    f->pool = NULL;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stopper, p), 0);
    int stopping = 0;
    for (long long end = mono_ms() + WAIT_MS; mono_ms() < end; nap_ms(1)) {
        if (tv_pool_reserve(p) < 0) {
            stopping = 1;
            break;
        }
        dummy *d = calloc(1, sizeof *d);
        assert_non_null(d);
        d->next = f->dummies;
        f->dummies = d;
        d->j.f = f;
        d->j.id = MAXJ;
        d->j.job.work = on_work;
        d->j.job.done = on_done;
        tv_pool_push(p, &d->j.job);
    }
    if (!stopping) {
        let_all_go(f);
        pthread_join(t, NULL);
        fail_msg("reserve still succeeds %d ms into tv_pool_stop", WAIT_MS);
    }
    assert_int_equal(snap(f, &f->jobs[0].done), 0);
    let_go(f, 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    /* Returned only after job 0's done(); nothing else ran. */
    assert_int_equal(f->jobs[0].done, 1);
    assert_int_equal(f->started, 1);
    assert_int_equal(f->finished, 1);
    assert_int_equal(f->jobs[1].worked + f->jobs[1].in_done, 0);
    assert_int_equal(f->jobs[2].worked + f->jobs[2].in_done, 0);
    for (const dummy *d = f->dummies; d; d = d->next)
        assert_int_equal(d->j.worked + d->j.in_done, 0);
    assert_true(workers_are(0));
}

static void stop_of_an_idle_pool_joins_every_worker(void **state)
{
    fixture *f = *state;
    start(f, 4, BIG_QUEUE, NO_GATE);
    assert_true(workers_are(4));
    tv_pool_stop(f->pool);
    f->pool = NULL;
    assert_true(workers_are(0));
    tv_pool_stop(NULL); /* no-op */
}

/* --- inline jobs ------------------------------------------------------ */

/* The small-job lane: with every worker held busy by a large job and more
 * jobs waiting for a worker, a small job still runs at once (it takes no
 * worker's slot, so the held jobs and the queue are as they were). */
static void small_jobs_run_inline_while_every_worker_is_busy(void **state)
{
    fixture *f = *state;
    enum { THREADS = 2 };
    start(f, THREADS, BIG_QUEUE, NO_GATE);
    for (int i = 0; i < THREADS; i++)
        submit_held(f, i, 0); /* hold every worker */
    must(f, started_is, THREADS);
    submit_held(f, THREADS, 0); /* and one waiting for a worker */
    assert_int_equal(tv_pool_waiting(f->pool), 1);
    for (int i = 0; i < 3; i++) { /* any number of them */
        assert_int_equal(tv_pool_try_inline(f->pool, 0), 1);
        tv_pool_inline_done(f->pool);
    }
    must_not(f, started_is, THREADS + 1); /* no slot was freed by them */
    assert_int_equal(tv_pool_waiting(f->pool), 1);
    let_all_go(f);
    must(f, finished_is, THREADS + 1);
}

static void try_inline_runs_while_a_job_waits_for_bytes_if_its_own_fit(
    void **state)
{
    fixture *f = *state;
    start(f, 2, BIG_QUEUE, 100);
    submit_runs(f, 0, 60);
    submit_waits(f, 1, 50); /* waits for bytes */
    /* 60 + 10 fit: the small job does not wait behind job 1 ... */
    assert_int_equal(tv_pool_try_inline(f->pool, 10), 1);
    tv_pool_inline_done(f->pool);
    /* ... but one whose own bytes do not fit does not run */
    assert_int_equal(tv_pool_try_inline(f->pool, 31), 0);
    tv_pool_release(f->pool, 70); /* 0 and the small one */
    must(f, job_done, 1);
    tv_pool_release(f->pool, 50);
}

static void try_inline_runs_while_a_job_is_reserved_but_not_pushed(
    void **state)
{
    fixture *f = *state;
    start(f, 2, BIG_QUEUE, 100);
    /* The HTTP thread reserves, suspends its connection, then pushes: a
     * small job meanwhile is not held back by it (it needs no worker). */
    assert_int_equal(tv_pool_reserve(f->pool), 0);
    assert_int_equal(tv_pool_try_inline(f->pool, 1), 1);
    tv_pool_inline_done(f->pool);
    tv_pool_push(f->pool, &job(f, 0, 1)->job);
    must(f, job_done, 0);
    tv_pool_release(f->pool, 2);
}

/* A job that needs no worker (a large reply made as it is sent) skips
 * the queue only when a pushed job would start at once: a worker free,
 * nothing waiting, its bytes fit. It takes the bytes, no worker's slot. */
static void try_start_admits_only_what_would_start_at_once(void **state)
{
    fixture *f = *state;
    enum { THREADS = 2 };
    start(f, THREADS, BIG_QUEUE, 100);
    assert_int_equal(tv_pool_try_start(f->pool, 60), 1); /* idle pool */
    assert_int_equal(tv_pool_try_start(f->pool, 41), 0); /* 60 + 41 */
    submit_held(f, 0, 0);
    must(f, started_is, 1);
    assert_int_equal(tv_pool_try_start(f->pool, 40), 1); /* a worker free */
    submit_held(f, 1, 0); /* every worker busy now */
    must(f, started_is, 2);
    assert_int_equal(tv_pool_try_start(f->pool, 0), 0);
    submit_held(f, 2, 0); /* waits for a worker */
    let_all_go(f);
    must(f, finished_is, 3);
    /* a job waiting for bytes is not overtaken */
    submit_waits(f, 3, 50); /* 100 held: waits */
    assert_int_equal(tv_pool_try_start(f->pool, 0), 0);
    tv_pool_release(f->pool, 100);
    must(f, job_done, 3);
    assert_int_equal(tv_pool_try_start(f->pool, 50), 1);
    tv_pool_release(f->pool, 100);
    assert_int_equal(tv_pool_inflight(f->pool), 0);
}

/* Replies charged once built may take the total past max_inflight; then
 * no job starts, inline or queued, until enough is released. */
static void charged_bytes_past_the_budget_hold_new_jobs_back(void **state)
{
    fixture *f = *state;
    start(f, 2, BIG_QUEUE, 100);
    assert_int_equal(tv_pool_budget(f->pool), 100);
    tv_pool_charge(f->pool, 150);
    assert_int_equal(tv_pool_inflight(f->pool), 150);
    assert_int_equal(tv_pool_try_inline(f->pool, 0), 0);
    submit_waits(f, 0, 0);
    tv_pool_release(f->pool, 60); /* 90: a job of 0 bytes fits */
    must(f, job_done, 0);
    assert_int_equal(tv_pool_try_inline(f->pool, 10), 1); /* exactly 100 */
    tv_pool_inline_done(f->pool);
    assert_int_equal(tv_pool_try_inline(f->pool, 1), 0);
    tv_pool_release(f->pool, 100);
    assert_int_equal(tv_pool_inflight(f->pool), 0);
}

static void inline_bytes_count_against_max_inflight_like_queued_ones(
    void **state)
{
    fixture *f = *state;
    start(f, 4, BIG_QUEUE, 100);
    assert_int_equal(tv_pool_try_inline(f->pool, 60), 1);
    tv_pool_inline_done(f->pool); /* the bytes stay until released */
    assert_int_equal(tv_pool_try_inline(f->pool, 41), 0);
    assert_int_equal(tv_pool_try_inline(f->pool, 40), 1); /* exactly 100 */
    tv_pool_inline_done(f->pool);
    /* A queued job waits for the inline jobs' bytes. */
    submit_waits(f, 0, 1);
    tv_pool_release(f->pool, 40);
    must(f, job_done, 0);
    tv_pool_release(f->pool, 61);
    /* Alone, an inline job may be larger than max_inflight. */
    assert_int_equal(tv_pool_try_inline(f->pool, 1000), 1);
    tv_pool_inline_done(f->pool);
    assert_int_equal(tv_pool_try_inline(f->pool, 1), 0);
    tv_pool_release(f->pool, 1000);
    assert_int_equal(tv_pool_try_inline(f->pool, 1), 1);
    tv_pool_inline_done(f->pool);
    tv_pool_release(f->pool, 1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(start_runs_exactly_threads_workers_named_tv_work_0_to_n),
        T(threads_below_one_are_clamped_to_one_worker),
        T(jobs_run_on_workers_named_tv_work),
        T(work_and_done_run_on_the_same_worker_in_order),
        T(at_most_threads_jobs_run_at_once),
        T(reserve_fails_at_max_queue_and_succeeds_after_a_job_starts),
        T(max_queue_zero_refuses_every_reserve),
        T(jobs_start_in_fifo_order),
        T(unfinished_counts_reserved_jobs_until_done_returns),
        T(queue_depth_gauge_counts_jobs_from_reserve_to_start),
        T(inflight_bytes_gauge_reads_the_pools_bytes),
        T(a_job_waits_while_its_bytes_do_not_fit_and_starts_after_release),
        T(a_job_whose_bytes_fit_exactly_starts_at_once),
        T(a_lone_job_larger_than_max_inflight_is_let_through),
        T(a_small_job_does_not_overtake_one_waiting_for_bytes),
        T(release_starts_every_waiting_job_that_now_fits),
        T(stop_waits_for_the_running_jobs_to_finish),
        T(stop_drops_waiting_jobs_without_done_and_joins),
        T(stop_of_an_idle_pool_joins_every_worker),
        T(small_jobs_run_inline_while_every_worker_is_busy),
        T(try_inline_runs_while_a_job_waits_for_bytes_if_its_own_fit),
        T(try_inline_runs_while_a_job_is_reserved_but_not_pushed),
        T(try_start_admits_only_what_would_start_at_once),
        T(charged_bytes_past_the_budget_hold_new_jobs_back),
        T(inline_bytes_count_against_max_inflight_like_queued_ones),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
