/* test_similar_faults.c -- core/similar.c when memory runs out
 * (tests/fault_inject.h): every allocation of open, prepare and a token
 * query, failed in turn, gives -ENOMEM and leaves the handle usable; the
 * run that fails none gives the nearest rows (the token itself first, its
 * cosine 1). Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fault_inject.h"
#include "testutil.h"
#include "tokvec_error.h"
#include "tokvec_similar.h"
#include "tokvec_table.h"

/* rows: 0 (1,0,0), 1 (0,2,0), 2 (0,1,1), 3 (1,2,0): nearest to 1 are
 * 1 (cosine 1), then 3 (2 / sqrt 5), before 2 (1 / sqrt 2) */
static tokvec_table *open_table(void)
{
    static const char h[] = "{\"tok\":{\"dtype\":\"F32\",\"shape\":[4,3],"
                            "\"data_offsets\":[0,48]}}";
    static const float rows[12] = {1, 0, 0, 0, 2, 0, 0, 1, 1, 1, 2, 0};
    unsigned char b[8 + sizeof h + 48] = {0};
    b[0] = (unsigned char)(sizeof h - 1);
    memcpy(b + 8, h, sizeof h - 1);
    memcpy(b + 8 + sizeof h - 1, rows, 48);
    char path[600];
    snprintf(path, sizeof path, "%s/t.safetensors", tu_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, 8 + sizeof h - 1 + 48, f),
                     8 + sizeof h - 1 + 48);
    fclose(f);
    tokvec_table_opts o = {.token_tensor = "tok",
                           .positional = TOKVEC_POS_NONE};
    tokvec_table *t = NULL;
    assert_int_equal(tokvec_table_open(path, &o, &t), 0);
    return t;
}

static void every_failing_allocation_is_no_memory(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    tokvec_table *t = open_table();
    int rc = -1, failures = 0;
    for (long nth = 1; nth < 50 && rc; nth++) {
        tokvec_similar *sim = NULL;
        tokvec_neighbor out[2];
        fi_arm(FI_ALLOC, nth, ENOMEM);
        rc = tokvec_similar_open(t, &sim);
        if (rc == 0) {
            rc = tokvec_similar_token(sim, 1, 2, out);
            if (rc == 0) {
                assert_int_equal(out[0].id, 1);
                assert_true(fabsf(out[0].score - 1.0f) < 1e-6f);
                assert_int_equal(out[1].id, 3);
            }
        }
        fi_reset();
        if (rc) {
            assert_int_equal(rc, -ENOMEM);
            failures++;
            if (sim) { /* usable after: the same answer unarmed */
                assert_int_equal(tokvec_similar_token(sim, 1, 2, out), 0);
                assert_int_equal(out[0].id, 1);
            }
        }
        tokvec_similar_close(sim);
    }
    assert_int_equal(rc, 0);
    assert_true(failures >= 4);
    tokvec_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_failing_allocation_is_no_memory),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
