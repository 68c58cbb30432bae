/* sigbus.c -- the SIGBUS handler and its prepared lines (sigbus.h).
 *
 * The table is mapped MAP_SHARED: a file truncated or rewritten in place
 * while served raises SIGBUS at the next read of a page past its new end.
 * The handler writes one fatal log line naming the file mapped at the
 * faulting address (si_addr) and returns; SA_RESETHAND makes the re-run
 * read take the default action (death by SIGBUS, core per the system's
 * policy) -- crash loudly rather than serve rows that changed underneath.
 *
 * What must hold: the handler is async-signal-safe -- it reads atomics and
 * prepared bytes and calls write(2), nothing else. Each slot is filled by
 * the main thread while its state is FILLING and published by a release
 * store of LIVE; a removal (any thread) moves only its own table's LIVE
 * slots back to FREE, and only the main thread takes a FREE slot, so a
 * LIVE slot's bytes never change under a reader. A slot is freed before
 * its mapping is unmapped, so no fault can be in a freed one.
 *
 * Threads: see sigbus.h.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sigbus.h"

enum { FREE, FILLING, LIVE };
enum { SLOTS = 16, LINE = 1024 };

typedef struct bus_slot {
    atomic_int state;
    _Atomic(const void *) owner; /* the table */
    uintptr_t start;
    size_t len;
    size_t n;
    char line[LINE];
} bus_slot;

static bus_slot slots[SLOTS];
static char any_line[2048]; /* an address in no slot */
static size_t any_len;

#define FATE                                                                 \
    "the file was truncated or rewritten in place while being served; "      \
    "exiting rather than serve rows that changed underneath. Replace table " \
    "files by rename (then SIGHUP), never in place (SECURITY.md)"

/* The slot whose mapping holds a, or NULL. Async-signal-safe. */
static const bus_slot *slot_of(uintptr_t a)
{
    for (int i = 0; i < SLOTS; i++) {
        const bus_slot *s = &slots[i];
        if (atomic_load_explicit(&s->state, memory_order_acquire) == LIVE &&
            a - s->start < s->len)
            return s;
    }
    return NULL;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    const bus_slot *s = slot_of((uintptr_t)si->si_addr);
    ssize_t w = s ? write(STDERR_FILENO, s->line, s->n)
                  : write(STDERR_FILENO, any_line, any_len);
    (void)w;
    /* SA_RESETHAND: returning re-runs the faulting read, which now takes
     * the default action (terminate, core per the system's policy). */
}

void tv_sigbus_install(const char *table)
{
    any_len = tv_log_prepare_fatal(
        any_line, sizeof any_line,
        "SIGBUS reading the memory-mapped table %s: " FATE, table);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_RESETHAND | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

void tv_sigbus_add(const tokvec_table *t)
{
    const char *table = tokvec_table_get_info(t)->path;
    size_t k = tokvec_table_mapping_count(t);
    for (size_t i = 0, at = 0; i < k; i++) {
        tokvec_mapping m;
        if (tokvec_table_mapping(t, i, &m) < 0)
            continue;
        int free_ = FREE;
        while (at < SLOTS && !atomic_compare_exchange_strong(
                                 &slots[at].state, &free_, FILLING)) {
            free_ = FREE;
            at++;
        }
        if (at == SLOTS)
            return; /* the line of install, for what did not fit */
        bus_slot *s = &slots[at];
        atomic_store(&s->owner, (const void *)t);
        s->start = (uintptr_t)m.addr;
        s->len = m.len;
        if (!strcmp(m.path, table))
            s->n = tv_log_prepare_fatal(
                s->line, sizeof s->line,
                "SIGBUS reading the memory-mapped table %s: " FATE, table);
        else
            s->n = tv_log_prepare_fatal(
                s->line, sizeof s->line,
                "SIGBUS reading the memory-mapped file %s of the table "
                "%s: " FATE,
                m.path, table);
        atomic_store_explicit(&s->state, LIVE, memory_order_release);
    }
}

void tv_sigbus_remove(const tokvec_table *t)
{
    for (int i = 0; i < SLOTS; i++) {
        bus_slot *s = &slots[i];
        int live = LIVE;
        if (atomic_load(&s->state) == LIVE && atomic_load(&s->owner) == t)
            atomic_compare_exchange_strong(&s->state, &live, FREE);
    }
}

const char *tv_sigbus_line_for(const void *addr)
{
    const bus_slot *s = slot_of((uintptr_t)addr);
    return s ? s->line : "";
}
