/* test_table_faults.c -- opening a table (core/table/) when the file or
 * the system is not what it should be: a path that is a directory, a
 * character device or a FIFO is refused naming what it is (and a FIFO
 * without a writer does not block); a refused open(), fstat() or mmap()
 * (tests/fault_inject.h) names the call; every prefix of a safetensors
 * file is refused as cut short or malformed, never read past its end; every
 * failing allocation of opening a safetensors table (learned positions,
 * metadata) or a .npy pair is an error with no table (jansson's own
 * allocations spared: fault_inject.h). Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fault_inject.h"
#include "testutil.h"
#include "tokvec_table.h"
#include "tokvec_write.h"

static char st_path[512], npy_path[512], pos_path[512];

static void write_npy(const char *path, int rows, int cols, float base)
{
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr,
                     "{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (%d, %d), }",
                     rows, cols);
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint16_t hl = (uint16_t)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f);
    fputc(hl >> 8, f);
    fwrite(hdr, 1, (size_t)n, f);
    for (int k = 0; k < pad; k++)
        fputc(' ', f);
    fputc('\n', f);
    for (int k = 0; k < rows * cols; k++) {
        float v = base + (float)k;
        fwrite(&v, sizeof v, 1, f);
    }
    fclose(f);
}

static int setup(void **state)
{
    if (tu_setup_dir(state))
        return -1;
    fi_reset();
    static float tok[6 * 4], pos[5 * 4];
    for (int k = 0; k < 24; k++)
        tok[k] = (float)k;
    for (int k = 0; k < 20; k++)
        pos[k] = (float)k / 4;
    tokvec_write_tensor t[2] = {
        {"tok_emb.weight", TOKVEC_F32, 6, 4, tok},
        {"pos_emb.weight", TOKVEC_F32, 5, 4, pos},
    };
    static const char *const keys[] = {"format", "context_length"};
    static const char *const values[] = {"pt", "5"};
    tokvec_write_opts o = {keys, values, 2, NULL, NULL};
    snprintf(st_path, sizeof st_path, "%s/t.safetensors", tu_dir);
    snprintf(npy_path, sizeof npy_path, "%s/t.npy", tu_dir);
    snprintf(pos_path, sizeof pos_path, "%s/p.npy", tu_dir);
    if (tokvec_safetensors_write(st_path, t, 2, &o))
        return -1;
    write_npy(npy_path, 6, 4, 0);
    write_npy(pos_path, 5, 4, 100);
    return 0;
}

static int teardown(void **state)
{
    fi_reset();
    return tu_teardown_dir(state);
}

/* Opens p (with positions pos for a .npy) expecting failure whose message
 * contains says (NULL: any); returns the code. */
static int open_fails(const char *p, const char *pos, const char *says)
{
    char err[512];
    tokvec_table_opts o = {.position_path = pos};
    tokvec_table *t;
    int rc = tu_table_open(p, &o, err, sizeof err, &t);
    if (rc >= 0 || (says && !strstr(err, says)))
        fail_msg("%s: rc %d, '%s' (want '%s')", p, rc, err,
                 says ? says : "an error");
    assert_null(t);
    assert_true(strlen(err) > 0);
    return rc;
}

static void files_that_are_no_regular_files_are_named(void **s)
{
    (void)s;
    open_fails(tu_dir, NULL, "is a directory, not a regular file");
    open_fails("/dev/null", NULL, "is a character device");
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/fifo.safetensors", tu_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    open_fails(fifo, NULL, "is a FIFO");
    char missing[512];
    snprintf(missing, sizeof missing, "%s/missing.safetensors", tu_dir);
    assert_int_equal(open_fails(missing, NULL, "cannot open"), -ENOENT);
}

static void refused_system_calls_are_named(void **s)
{
    (void)s;
    fi_arm(FI_FSTAT, 1, EIO);
    assert_int_equal(open_fails(st_path, NULL, "cannot stat"), -EIO);
    fi_arm(FI_MMAP, 1, ENOMEM);
    assert_int_equal(open_fails(st_path, NULL, "cannot map"), -ENOMEM);
    fi_arm(FI_MMAP, 2, ENOMEM); /* the .npy positions */
    assert_int_equal(open_fails(npy_path, pos_path, "cannot map"), -ENOMEM);
    fi_reset();
    char err[512];
    tokvec_table *t;
    assert_int_equal(tu_table_open(st_path, NULL, err, sizeof err, &t), 0);
    tokvec_table_close(t);
}

static void every_prefix_of_a_table_is_refused(void **s)
{
    (void)s;
    FILE *f = fopen(st_path, "rb");
    assert_non_null(f);
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char cut[512];
    snprintf(cut, sizeof cut, "%s/cut.safetensors", tu_dir);
    for (size_t len = 1; len < n; len++) {
        f = fopen(cut, "wb");
        assert_non_null(f);
        fwrite(buf, 1, len, f);
        fclose(f);
        open_fails(cut, NULL, NULL);
    }
    /* the same for the .npy and its positions */
    f = fopen(npy_path, "rb");
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    snprintf(cut, sizeof cut, "%s/cut.npy", tu_dir);
    for (size_t len = 1; len < n; len += 3) {
        f = fopen(cut, "wb");
        fwrite(buf, 1, len, f);
        fclose(f);
        open_fails(cut, NULL, NULL);
        open_fails(npy_path, cut, NULL);
    }
}

static void every_failing_allocation_of_an_open_is_an_error(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    const char *files[][2] = {{st_path, NULL}, {npy_path, pos_path}};
    for (size_t k = 0; k < 2; k++) {
        char err[512];
        tokvec_table_opts o = {.position_path = files[k][1]};
        tokvec_table *t;
        fi_arm(FI_ALLOC, 0, 0); /* count */
        assert_int_equal(fi_spare_library("libjansson"), 0);
        assert_int_equal(tu_table_open(files[k][0], &o, err, sizeof err, &t),
                         0);
        long total = fi_calls(FI_ALLOC);
        fi_reset();
        tokvec_table_close(t);
        int failed = 0;
        for (long nth = 1; nth <= total; nth++) {
            fi_arm(FI_ALLOC, nth, ENOMEM);
            assert_int_equal(fi_spare_library("libjansson"), 0);
            int rc = tu_table_open(files[k][0], &o, err, sizeof err, &t);
            fi_reset();
            if (rc == 0) {
                tokvec_table_close(t);
                continue;
            }
            assert_null(t);
            failed++;
        }
        assert_true(failed > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            files_that_are_no_regular_files_are_named, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_system_calls_are_named, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(every_prefix_of_a_table_is_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            every_failing_allocation_of_an_open_is_an_error, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
