/* test_write_faults.c -- core/table/write.c under failing system calls:
 * whichever of mkstemp, write, fchmod, fsync, close and rename fails, the
 * writer returns that errno (negated), removes its temporary file and leaves
 * the destination as it was; an allocation that fails (jansson's, the
 * header's, the temporary name's) is -ENOMEM with the same guarantees;
 * interrupted and short writes still write every byte. Faults come from
 * tests/fault_inject.h. Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdint.h>
#include <string.h>

#include "fault_inject.h"
#include "testutil.h"
#include "tokvec_table.h"
#include "tokvec_write.h"

static const float rows[2][3] = {{1, 2, 3}, {4, 5, 6}};
static const char *const keys[] = {"format", "source"};
static const char *const values[] = {"pt", "test_write_faults"};

static int files_named(const char *part)
{
    DIR *d = opendir(tu_dir);
    int n = 0;
    for (struct dirent *e = readdir(d); e; e = readdir(d))
        n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = calloc(1, 1 << 16);
    *n = fread(b, 1, 1 << 16, f);
    fclose(f);
    return b;
}

static int write_table(const char *path, int with_meta)
{
    tokvec_write_tensor t[2] = {
        {"tok_emb.weight", TOKVEC_F32, 2, 3, rows},
        {"empty", TOKVEC_F32, 0, 3, NULL},
    };
    tokvec_write_opts o = {keys, values, 2, NULL, NULL};
    return tokvec_safetensors_write(path, t, 2, with_meta ? &o : NULL);
}

static int setup(void **state)
{
    fi_reset();
    return tu_setup_dir(state);
}

static int teardown(void **state)
{
    fi_reset();
    return tu_teardown_dir(state);
}

/* The destination holds "old" before, and after every failure. */
static void expect_failure_leaves_old(const char *path, int rc, int want)
{
    size_t n = 0;
    assert_int_equal(rc, want);
    char *b = slurp(path, &n);
    assert_non_null(b);
    assert_int_equal(n, 3);
    assert_memory_equal(b, "old", 3);
    free(b);
    assert_int_equal(files_named(".tmp."), 0);
}

static void each_failing_system_call_fails_the_write_cleanly(void **s)
{
    (void)s;
    static const struct {
        int call;
        long nth;
        int err;
    } faults[] = {
        {FI_MKSTEMP, 1, EACCES}, {FI_WRITE, 1, ENOSPC}, /* the header */
        {FI_WRITE, 2, EIO},                             /* the data */
        {FI_FCHMOD, 1, EPERM},   {FI_FSYNC, 1, EIO},
        {FI_CLOSE, 1, EIO},      {FI_RENAME, 1, EXDEV},
    };
    char path[512];
    snprintf(path, sizeof path, "%s/t.safetensors", tu_dir);
    for (size_t k = 0; k < sizeof faults / sizeof *faults; k++) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fputs("old", f);
        fclose(f);
        fi_arm(faults[k].call, faults[k].nth, faults[k].err);
        int rc = write_table(path, 1);
        assert_true(fi_calls(faults[k].call) >= faults[k].nth);
        fi_reset();
        expect_failure_leaves_old(path, rc, -faults[k].err);
    }
    /* and with nothing failing, the same call replaces it */
    assert_int_equal(write_table(path, 1), 0);
    tokvec_table *t = NULL;
    char err[256];
    assert_int_equal(tu_table_open(path, NULL, err, sizeof err, &t), 0);
    assert_int_equal(tokvec_table_tensor_count(t), 2);
    tokvec_table_close(t);
}

static void every_failing_allocation_fails_the_write_cleanly(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    char path[512];
    snprintf(path, sizeof path, "%s/t.safetensors", tu_dir);
    int failures = 0, rc = -1;
    for (long nth = 1; nth < 1000 && rc; nth++) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fputs("old", f);
        fclose(f);
        fi_arm(FI_MALLOC, nth, ENOMEM);
        rc = write_table(path, 1);
        fi_reset();
        if (rc) {
            expect_failure_leaves_old(path, rc, -ENOMEM);
            failures++;
        }
    }
    assert_int_equal(rc, 0);
    assert_true(failures >= 5); /* jansson's objects, the text, the header */
    fi_arm(FI_ASPRINTF, 1, ENOMEM);
    rc = write_table(path, 0);
    fi_reset();
    assert_int_equal(rc, -ENOMEM);
    assert_int_equal(files_named(".tmp."), 0);
}

static void interrupted_and_short_writes_still_write_every_byte(void **s)
{
    (void)s;
    char a[512], b[512];
    size_t na = 0, nb = 0;
    snprintf(a, sizeof a, "%s/a.safetensors", tu_dir);
    snprintf(b, sizeof b, "%s/b.safetensors", tu_dir);
    assert_int_equal(write_table(a, 1), 0);
    fi_arm(FI_WRITE, 1, EINTR); /* the first write is interrupted */
    fi_write_cap(5);            /* and each writes at most 5 bytes */
    assert_int_equal(write_table(b, 1), 0);
    assert_true(fi_calls(FI_WRITE) > 10);
    fi_reset();
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x);
    free(y);
}

/* Progress is reported after every write, up to the total. */
static uint64_t last_done, last_total;
static int reports;
static void progress(uint64_t done, uint64_t total, void *ud)
{
    assert_ptr_equal(ud, &reports);
    assert_true(done > last_done && done <= total);
    last_done = done;
    last_total = total;
    reports++;
}

static void progress_counts_every_short_write(void **s)
{
    (void)s;
    char path[512];
    snprintf(path, sizeof path, "%s/p.safetensors", tu_dir);
    tokvec_write_tensor t = {"emb", TOKVEC_F32, 2, 3, rows};
    tokvec_write_opts o = {NULL, NULL, 0, progress, &reports};
    fi_write_cap(7);
    assert_int_equal(tokvec_safetensors_write(path, &t, 1, &o), 0);
    fi_reset();
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(last_done, (uint64_t)st.st_size);
    assert_int_equal(last_total, (uint64_t)st.st_size);
    assert_int_equal(reports, (st.st_size + 6) / 7 + 1); /* header, data */
}

static void bad_arguments_are_refused_before_any_file(void **s)
{
    (void)s;
    char path[512];
    snprintf(path, sizeof path, "%s/x.safetensors", tu_dir);
    tokvec_write_tensor ok = {"emb", TOKVEC_F32, 2, 3, rows};
    tokvec_write_tensor bad[] = {
        {NULL, TOKVEC_F32, 2, 3, rows},
        {"emb", TOKVEC_F32, -1, 3, rows},
        {"emb", TOKVEC_F32, 2, -3, rows},
        {"emb", TOKVEC_F32, 2, 3, NULL},
    };
    assert_int_equal(tokvec_safetensors_write(NULL, &ok, 1, NULL),
                     TOKVEC_E_INVAL);
    assert_int_equal(tokvec_safetensors_write(path, NULL, 1, NULL),
                     TOKVEC_E_INVAL);
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        assert_int_equal(tokvec_safetensors_write(path, &bad[k], 1, NULL),
                         TOKVEC_E_INVAL);
    assert_int_equal(files_named("x."), 0);
    /* no tensors at all is a valid (empty) file */
    assert_int_equal(tokvec_safetensors_write(path, NULL, 0, NULL), 0);
    assert_int_equal(files_named("x."), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            each_failing_system_call_fails_the_write_cleanly, setup, teardown),
        cmocka_unit_test_setup_teardown(
            every_failing_allocation_fails_the_write_cleanly, setup, teardown),
        cmocka_unit_test_setup_teardown(
            interrupted_and_short_writes_still_write_every_byte, setup,
            teardown),
        cmocka_unit_test_setup_teardown(progress_counts_every_short_write,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            bad_arguments_are_refused_before_any_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
