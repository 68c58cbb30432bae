/* test_table_faults.c -- opening a table (core/table/) when the file or
 * the system is not what it should be: a path that is a directory, a
 * character device or a FIFO is refused naming what it is (and a FIFO
 * without a writer does not block); a refused open(), fstat() or mmap()
 * (tests/fault_inject.h) names the call; every prefix of a safetensors
 * and GGUF file is refused as cut short or malformed, never read past its end;
 * every failing allocation of opening a safetensors table (learned positions,
 * metadata), a .npy pair or a GGUF file is an error; GGUF metadata of every
 * type is recorded with its value with no table (jansson's own
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

static char st_path[512], npy_path[512], pos_path[512], gguf_path[512];

/* --- a GGUF file: little-endian fields --- */
static void put(FILE *f, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        fputc((int)(v >> (8 * i)) & 0xff, f);
}

static void gstr(FILE *f, const char *s)
{
    put(f, strlen(s), 8);
    fputs(s, f);
}

/* GGUF v3: one metadata pair of every scalar type and two arrays, then
 * token_embd.weight F32 [dim 4, vocab 6] (value k at k), aligned to 32. */
static void write_gguf(const char *path)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("GGUF", f);
    put(f, 3, 4);
    put(f, 1, 8);  /* tensors */
    put(f, 15, 8); /* metadata pairs */
    static const struct {
        const char *key;
        uint32_t type, bytes;
        uint64_t v;
    } kv[] = {
        {"x.u8", 0, 1, 200},
        {"x.i8", 1, 1, (uint8_t)-5},
        {"x.u16", 2, 2, 60000},
        {"x.i16", 3, 2, (uint16_t)-300},
        {"x.u32", 4, 4, 4000000000u},
        {"x.i32", 5, 4, (uint32_t)-70000},
        {"x.f32", 6, 4, 0x3fc00000u},
        {"x.bool", 7, 1, 1},
        {"x.u64", 10, 8, 1ull << 40},
        {"x.i64", 11, 8, (uint64_t)-3},
        {"x.f64", 12, 8, 0x3ff8000000000000ull},
        {"general.alignment", 4, 4, 32},
    };
    for (size_t k = 0; k < sizeof kv / sizeof *kv; k++) {
        gstr(f, kv[k].key);
        put(f, kv[k].type, 4);
        put(f, kv[k].v, (int)kv[k].bytes);
    }
    gstr(f, "general.name");
    put(f, 8, 4);
    gstr(f, "tiny");
    gstr(f, "x.ints"); /* array of 3 int16 */
    put(f, 9, 4);
    put(f, 3, 4);
    put(f, 3, 8);
    put(f, 0x010002000300ull, 6);
    gstr(f, "x.names"); /* array of 2 strings */
    put(f, 9, 4);
    put(f, 8, 4);
    put(f, 2, 8);
    gstr(f, "a");
    gstr(f, "bc");
    gstr(f, "token_embd.weight");
    put(f, 2, 4);
    put(f, 4, 8);
    put(f, 6, 8);
    put(f, 0, 4); /* F32 */
    put(f, 0, 8);
    while (ftell(f) % 32)
        fputc(0, f);
    for (int k = 0; k < 24; k++) {
        float v = (float)k;
        fwrite(&v, sizeof v, 1, f);
    }
    fclose(f);
}

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
    snprintf(gguf_path, sizeof gguf_path, "%s/t.gguf", tu_dir);
    write_gguf(gguf_path);
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
    /* the same for the GGUF file and the .npy with its positions */
    f = fopen(gguf_path, "rb");
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    snprintf(cut, sizeof cut, "%s/cut.gguf", tu_dir);
    for (size_t len = 1; len < n; len++) {
        f = fopen(cut, "wb");
        fwrite(buf, 1, len, f);
        fclose(f);
        open_fails(cut, NULL, NULL);
    }
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

/* GGUF metadata: every integer type, booleans and strings recorded with
 * their values; floats and arrays left out; the table is the rows. */
static void gguf_metadata_of_every_type_is_recorded(void **s)
{
    (void)s;
    char err[512];
    tokvec_table *t;
    assert_int_equal(tu_table_open(gguf_path, NULL, err, sizeof err, &t), 0);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    assert_int_equal(in->vocab_size, 6);
    assert_int_equal(in->dim, 4);
    static const char *const want[] = {
        "\"x.u8\":200",         "\"x.i8\":-5",
        "\"x.u16\":60000",      "\"x.i16\":-300",
        "\"x.u32\":4000000000", "\"x.i32\":-70000",
        "\"x.bool\":true",      "\"x.u64\":1099511627776",
        "\"x.i64\":-3",         "\"general.name\":\"tiny\"",
    };
    assert_non_null(in->metadata_json);
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        if (!strstr(in->metadata_json, want[k]))
            fail_msg("%s lacks %s", in->metadata_json, want[k]);
    assert_null(strstr(in->metadata_json, "x.f32"));
    assert_null(strstr(in->metadata_json, "x.ints"));
    tokvec_table_close(t);
}

static void every_failing_allocation_of_an_open_is_an_error(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    const char *files[][2] = {{st_path, NULL},
                              {npy_path, pos_path},
                              {gguf_path, NULL}};
    for (size_t k = 0; k < 3; k++) {
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
            gguf_metadata_of_every_type_is_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(
            every_failing_allocation_of_an_open_is_an_error, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
