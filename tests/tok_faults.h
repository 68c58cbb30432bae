/* tok_faults.h -- what the tokenizer allocation-fault tests
 * (test_tokenizer_alloc_faults.c, test_hf_alloc_faults.c) share: the text
 * they encode, and opening each file while one allocation after another
 * fails. Includes fault_inject.h (so, like it, one test file of a program
 * includes this) and tok_fixture.h; include it after <cmocka.h>.
 *
 * What must hold: every helper either does what it says or fails the
 * calling test; the fault injection is disarmed (fi_reset) on return.
 *
 * Threads: the main thread of a test program only.
 */
#ifndef TV_TOK_FAULTS_H
#define TV_TOK_FAULTS_H

#include <stddef.h>
#include <string.h>

#include "fault_inject.h"
#include "tok_fixture.h"
#include "tokvec_tokenizer.h"

/* text (cap bytes) filled with copies of part up to half of it, then one
 * word of `word` letters without a break (the long-piece paths): the
 * length. */
static inline size_t tf_fault_text(char *text, size_t cap, const char *part,
                                   size_t word)
{
    size_t n = 0, len = strlen(part);
    while (n + len + 1 < cap / 2) {
        memcpy(text + n, part, len);
        n += len;
    }
    assert_true(n + word <= cap);
    for (size_t k = 0; k < word; k++)
        text[n++] = "abcdefghij"[(k * 7 + k / 10) % 10];
    return n;
}

/* Opens each of the n files with one allocation failing: each of the
 * first `dense`, then a spread (every nth / 8) up to the open's count
 * (jansson's own spared: fault_inject.h). A failed open leaves no
 * tokenizer and, when `strict`, is -ENOMEM with a message starting with
 * the file's name; each file's opens fail at least min_failed times. */
static inline void tf_open_fails_at_each_allocation(const char *const *files,
                                                    size_t n, long dense,
                                                    int strict,
                                                    long min_failed)
{
    for (size_t f = 0; f < n; f++) {
        fi_arm(FI_ALLOC, 0, 0); /* count only */
        assert_int_equal(fi_spare_library("libjansson"), 0);
        tokvec_tokenizer_close(tf_open_ok(files[f]));
        long total = fi_calls(FI_ALLOC), tried = 0;
        fi_reset();
        for (long nth = 1; nth <= total; nth += nth < dense ? 1 : nth / 8) {
            char err[512] = "";
            tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
            tokvec_tokenizer *t = (tokvec_tokenizer *)1;
            fi_arm(FI_ALLOC, nth, ENOMEM);
            assert_int_equal(fi_spare_library("libjansson"), 0);
            int rc = tokvec_tokenizer_open(files[f], &o, &t);
            fi_reset();
            if (rc == 0) { /* an allocation whose failure is handled */
                tokvec_tokenizer_close(t);
                continue;
            }
            if (strict)
                assert_int_equal(rc, -ENOMEM);
            assert_null(t);
            if (strict && strncmp(err, files[f], strlen(files[f])))
                fail_msg("allocation %ld: message '%s' does not name %s", nth,
                         err, files[f]);
            tried++;
        }
        if (tried < min_failed)
            fail_msg("%s: %ld of %ld allocations failed the open", files[f],
                     tried, total);
    }
}

#endif
