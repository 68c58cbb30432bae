/* test_table.c -- opening and validating table files (contract section 2).
 *
 * Every validation rule has its own malformed file, written into a fresh
 * temporary directory, and must give its specific error code and a message
 * naming the file -- never a crash, never a leak (this suite also runs
 * under ASan+UBSan). Good files: safetensors in F32/F16/BF16 at odd
 * offsets, GPT-2-like files with many other tensors, .npy v1/v2/v3.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <math.h>

#include "testutil.h"
#include "tokvec_table.h"

static char path[256];

/* Writes a safetensors file: header text (padded with `pad` spaces) and
 * `data` bytes after it. Returns the path. */
static const char *st_file(const char *header, size_t pad, const void *data,
                           size_t n)
{
    snprintf(path, sizeof path, "%s/t.safetensors", tu_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t len = strlen(header) + pad;
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(len >> (8 * i));
    fwrite(le, 1, 8, f);
    fputs(header, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    if (n)
        fwrite(data, 1, n, f);
    fclose(f);
    return path;
}

static const char *raw_file(const void *bytes, size_t n)
{
    snprintf(path, sizeof path, "%s/raw.bin", tu_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(bytes, 1, n, f);
    fclose(f);
    return path;
}

/* Opens and expects code; the message must name the file. */
static void expect(const char *p, const tokvec_table_opts *base, int code)
{
    char err[512];
    tokvec_table *t;
    int rc = tu_table_open(p, base, err, sizeof err, &t);
    if (rc != code)
        fail_msg("%s: got %d (%s), want %d; message: %s", p, rc,
                 tokvec_errname(rc), code, err);
    if (code) {
        assert_null(t);
        assert_non_null(strstr(err, p));
    } else {
        tokvec_table_close(t);
    }
}

static float data12[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

#define TOK(shape, off)                                       \
    "{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":" shape \
    ",\"data_offsets\":" off "}}"

static void open_rejects_file_shorter_than_length_prefix(void **s)
{
    (void)s;
    expect(raw_file("\x10\0\0", 3), NULL, TOKVEC_E_TRUNCATED);
}

static void open_rejects_empty_file(void **s)
{
    (void)s;
    expect(raw_file("", 0), NULL, TOKVEC_E_TRUNCATED);
}

static void open_rejects_header_beyond_file(void **s)
{
    (void)s;
    unsigned char b[12] = {0xff, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    expect(raw_file(b, sizeof b), NULL, TOKVEC_E_HEADER_SIZE);
}

static void open_rejects_header_over_100_mb(void **s)
{
    (void)s;
    unsigned char b[12] = {0, 0, 0, 0x10, 0, 0, 0, 0, '{', '}'}; /* 256 MiB */
    expect(raw_file(b, sizeof b), NULL, TOKVEC_E_HEADER_SIZE);
}

/* A text file (a README given as --table) used to be read as a
 * safetensors header length of some 7e18 bytes; it is no format at all. */
static void open_says_a_text_file_is_not_a_table(void **s)
{
    (void)s;
    static const char readme[] = "# tokvec\n\nServes token embeddings.\n";
    char err[512] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_table *t = (tokvec_table *)1;
    assert_int_equal(tokvec_table_open(raw_file(readme, sizeof readme - 1), &o,
                                       &t),
                     TOKVEC_E_FORMAT);
    assert_null(t);
    if (!strstr(err, "not a safetensors, .npy or GGUF file") ||
        strstr(err, "header length"))
        fail_msg("message: %s", err);
    /* Still a safetensors file when the length fits, whatever follows. */
    expect(st_file("[1,2,3]", 0, NULL, 0), NULL, TOKVEC_E_HEADER_JSON);
}

/* torch.save's files (a zip archive, or a legacy pickle) given as a table:
 * the message says what they are and names the conversion, with the
 * file's own path in it. A safetensors header whose length bytes start
 * like a pickle (0x80 0x02: 640 bytes) is still a safetensors file. */
static void open_names_the_conversion_of_a_torch_save_file(void **s)
{
    (void)s;
    static const unsigned char zip[] = "PK\x03\x04\x14\0\0\x08\0\0"
                                       "archive/data.pkl";
    static const unsigned char pickle[] = "\x80\x02\x8a\x0al\xfc\x9c"
                                          "F"
                                          "\xf9 j\xa8P\x19.";
    const unsigned char *files[] = {zip, pickle};
    size_t lens[] = {sizeof zip - 1, sizeof pickle - 1};
    const char *what[] = {"zip archive", "Python pickle"};
    for (int i = 0; i < 2; i++) {
        char err[1024] = "";
        tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
        tokvec_table *t = NULL;
        const char *path = raw_file(files[i], lens[i]);
        assert_int_equal(tokvec_table_open(path, &o, &t), TOKVEC_E_FORMAT);
        char load[600];
        snprintf(load, sizeof load, "torch.load('%s'", path);
        if (!strstr(err, what[i]) || !strstr(err, load) ||
            !strstr(err, "from safetensors.torch import save_file") ||
            !strstr(err, ".state_dict()"))
            fail_msg("message: %s", err);
    }
    char hdr[640 + 1];
    memset(hdr, ' ', sizeof hdr - 1);
    hdr[0] = '{';
    hdr[sizeof hdr - 2] = '}';
    hdr[sizeof hdr - 1] = '\0';
    char err[1024] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_table *t = NULL;
    int rc = tokvec_table_open(st_file(hdr, 0, NULL, 0), &o, &t);
    if (rc == 0)
        tokvec_table_close(t);
    if (rc == TOKVEC_E_FORMAT || strstr(err, "pickle"))
        fail_msg("a 640-byte header: %d, %s", rc, err);
}

static void open_rejects_bad_json(void **s)
{
    (void)s;
    expect(st_file("{\"tok_emb.weight\": {", 0, NULL, 0), NULL,
           TOKVEC_E_HEADER_JSON);
}

static void open_rejects_header_that_is_not_an_object(void **s)
{
    (void)s;
    expect(st_file("[1,2,3]", 0, NULL, 0), NULL, TOKVEC_E_HEADER_JSON);
}

static void open_rejects_duplicate_keys(void **s)
{
    (void)s;
    expect(st_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
                   "[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                   "\"data_offsets\":[0,4]}}",
                   0, data12, 4),
           NULL, TOKVEC_E_HEADER_JSON);
}

static void open_rejects_tensor_entry_missing_fields(void **s)
{
    (void)s;
    expect(st_file("{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[3,4]}}",
                   0, data12, 48),
           NULL, TOKVEC_E_HEADER_JSON);
}

static void open_rejects_offsets_out_of_range(void **s)
{
    (void)s;
    expect(st_file(TOK("[3,4]", "[0,52]"), 0, data12, 48), NULL,
           TOKVEC_E_OFFSETS);
}

static void open_rejects_begin_after_end(void **s)
{
    (void)s;
    expect(st_file(TOK("[3,4]", "[48,0]"), 0, data12, 48), NULL,
           TOKVEC_E_OFFSETS);
}

static void open_rejects_size_mismatch(void **s)
{
    (void)s;
    expect(st_file(TOK("[3,4]", "[0,44]"), 0, data12, 48), NULL,
           TOKVEC_E_SIZE);
}

static void open_rejects_one_dimensional_token_tensor(void **s)
{
    (void)s;
    expect(st_file(TOK("[12]", "[0,48]"), 0, data12, 48), NULL, TOKVEC_E_RANK);
}

static void open_rejects_three_dimensional_token_tensor(void **s)
{
    (void)s;
    expect(st_file(TOK("[2,3,2]", "[0,48]"), 0, data12, 48), NULL,
           TOKVEC_E_RANK);
}

static void open_rejects_unknown_dtype(void **s)
{
    (void)s;
    expect(st_file("{\"tok_emb.weight\":{\"dtype\":\"F33\",\"shape\":[3,4],"
                   "\"data_offsets\":[0,48]}}",
                   0, data12, 48),
           NULL, TOKVEC_E_DTYPE);
}

static void open_rejects_integer_token_table(void **s)
{
    (void)s;
    expect(st_file("{\"tok_emb.weight\":{\"dtype\":\"I32\",\"shape\":[3,4],"
                   "\"data_offsets\":[0,48]}}",
                   0, data12, 48),
           NULL, TOKVEC_E_DTYPE);
}

static void open_rejects_dim_mismatch_between_tables(void **s)
{
    (void)s;
    expect(st_file("{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],"
                   "\"data_offsets\":[0,32]},\"pos_emb.weight\":{\"dtype\":"
                   "\"F32\",\"shape\":[2,2],\"data_offsets\":[32,48]}}",
                   0, data12, 48),
           NULL, TOKVEC_E_MISMATCH);
}

static void open_rejects_dtype_mismatch_between_tables(void **s)
{
    (void)s;
    expect(st_file("{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],"
                   "\"data_offsets\":[0,32]},\"pos_emb.weight\":{\"dtype\":"
                   "\"F16\",\"shape\":[2,4],\"data_offsets\":[32,48]}}",
                   0, data12, 48),
           NULL, TOKVEC_E_MISMATCH);
}

/* Opens and expects TOKVEC_E_OFFSETS with a message naming both tensors. */
static void expect_overlap(const char *p, const char *a, const char *b)
{
    char err[512] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_table *t = (tokvec_table *)1;
    int rc = tokvec_table_open(p, &o, &t);
    if (rc == 0)
        tokvec_table_close(t);
    if (rc != TOKVEC_E_OFFSETS)
        fail_msg("got %d (%s), want TOKVEC_E_OFFSETS; message: %s", rc,
                 tokvec_errname(rc), err);
    assert_null(t);
    assert_non_null(strstr(err, p));
    if (!strstr(err, a) || !strstr(err, b) || !strstr(err, "overlap"))
        fail_msg("message '%s' does not name '%s' and '%s' as overlapping",
                 err, a, b);
}

static void open_rejects_token_and_position_tables_sharing_bytes(void **s)
{
    (void)s;
    /* pos_emb [16, 48) begins inside tok_emb [0, 32). */
    expect_overlap(st_file("{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":"
                           "[2,4],\"data_offsets\":[0,32]},\"pos_emb.weight\":"
                           "{\"dtype\":\"F32\",\"shape\":[2,4],"
                           "\"data_offsets\":[16,48]}}",
                           0, data12, 48),
                   "'tok_emb.weight'", "'pos_emb.weight'");
    /* The same bytes twice, listed position first. */
    expect_overlap(st_file("{\"pos_emb.weight\":{\"dtype\":\"F32\",\"shape\":"
                           "[2,4],\"data_offsets\":[8,40]},\"tok_emb.weight\":"
                           "{\"dtype\":\"F32\",\"shape\":[2,4],"
                           "\"data_offsets\":[8,40]}}",
                           0, data12, 48),
                   "'tok_emb.weight'", "'pos_emb.weight'");
}

static void open_rejects_overlap_between_tensors_it_does_not_use(void **s)
{
    (void)s;
    /* tok_emb is alone in [0, 32); "b" [36, 44) lies inside "a" [32, 44),
     * "a" after "b" in the header: every tensor is checked, in data order,
     * not only the two tables. */
    expect_overlap(st_file("{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":"
                           "[2,4],\"data_offsets\":[0,32]},\"b\":{\"dtype\":"
                           "\"U8\",\"shape\":[8],\"data_offsets\":[36,44]},"
                           "\"a\":{\"dtype\":\"U8\",\"shape\":[12],"
                           "\"data_offsets\":[32,44]}}",
                           0, data12, 48),
                   "'a'", "'b'");
    /* "c" [0, 48) covers the whole data, the token table included; the
     * message names the first pair in data order. */
    expect_overlap(st_file("{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":"
                           "[1,4],\"data_offsets\":[32,48]},\"d\":{\"dtype\":"
                           "\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},"
                           "\"c\":{\"dtype\":\"U8\",\"shape\":[48],"
                           "\"data_offsets\":[0,48]}}",
                           0, data12, 48),
                   "'c'", "'d'");
}

static void open_accepts_adjacent_and_empty_tensors(void **s)
{
    (void)s;
    /* Touching ranges share no byte; an empty tensor has no bytes to
     * share, wherever its offsets point. */
    expect(st_file("{\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],"
                   "\"data_offsets\":[0,32]},\"pos_emb.weight\":{\"dtype\":"
                   "\"F32\",\"shape\":[1,4],\"data_offsets\":[32,48]},"
                   "\"e\":{\"dtype\":\"F32\",\"shape\":[0],"
                   "\"data_offsets\":[16,16]}}",
                   0, data12, 48),
           NULL, 0);
}

static void open_rejects_missing_token_tensor(void **s)
{
    (void)s;
    expect(st_file("{\"other\":{\"dtype\":\"F32\",\"shape\":[3,4],"
                   "\"data_offsets\":[0,48]}}",
                   0, data12, 48),
           NULL, TOKVEC_E_NO_TENSOR);
}

static void open_rejects_missing_named_tensor(void **s)
{
    (void)s;
    tokvec_table_opts o = {.token_tensor = "nope"};
    expect(st_file(TOK("[3,4]", "[0,48]"), 0, data12, 48), &o,
           TOKVEC_E_NO_TENSOR);
}

static void open_rejects_empty_table(void **s)
{
    (void)s;
    expect(st_file(TOK("[0,4]", "[0,0]"), 0, data12, 0), NULL, TOKVEC_E_EMPTY);
}

static void open_rejects_non_string_metadata(void **s)
{
    (void)s;
    expect(st_file("{\"__metadata__\":{\"seed\":123},\"tok_emb.weight\":{"
                   "\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":"
                   "[0,48]}}",
                   0, data12, 48),
           NULL, TOKVEC_E_METADATA);
}

static void open_rejects_missing_file_with_errno(void **s)
{
    (void)s;
    char p[300];
    snprintf(p, sizeof p, "%s/does-not-exist", tu_dir);
    expect(p, NULL, -2 /* -ENOENT */);
}

static void open_reads_unaligned_f32_f16_bf16_rows(void **s)
{
    (void)s;
    /* Header length 13+pad chosen so data starts at an odd offset. */
    uint16_t h16[4] = {0x3c00, 0xc000, 0x3800, 0x0001}; /* 1,-2,.5,2^-24 */
    uint16_t b16[4] = {0x3f80, 0xc000, 0x3f00, 0x0001};
    const struct {
        const char *dt;
        const void *data;
        size_t n;
        float want[4];
    } c[] = {
        {"F32", data12, 16, {1, 2, 3, 4}},
        {"F16", h16, 8, {1, -2, 0.5f, 0x1p-24f}},
        {"BF16", b16, 8, {1, -2, 0.5f, 0x1p-133f}},
    };
    for (int i = 0; i < 3; i++) {
        char hdr[200];
        snprintf(hdr, sizeof hdr,
                 "{\"wte.weight\":{\"dtype\":\"%s\",\"shape\":[2,2],"
                 "\"data_offsets\":[0,%zu]}}",
                 c[i].dt, c[i].n);
        size_t pad = (strlen(hdr) % 2) ? 0 : 1; /* odd data offset */
        tokvec_table *t;
        assert_int_equal(
            tokvec_table_open(st_file(hdr, pad, c[i].data, c[i].n), NULL, &t),
            0);
        tokvec_row r;
        float got[2];
        for (int row = 0; row < 2; row++) {
            assert_int_equal(tokvec_table_token_row(t, row, &r), 0);
            tokvec_row_to_f32(&r, got);
            assert_memory_equal(got, c[i].want + 2 * row, sizeof got);
        }
        assert_int_equal(tokvec_table_token_row(t, 2, &r),
                         TOKVEC_E_TOKEN_RANGE);
        assert_int_equal(tokvec_table_token_row(t, -1, &r),
                         TOKVEC_E_TOKEN_RANGE);
        assert_int_equal(tokvec_table_get_info(t)->positional,
                         TOKVEC_POS_NONE);
        tokvec_table_close(t);
    }
}

static void open_finds_gpt2_tensors_among_many_others(void **s)
{
    (void)s;
    static float buf[64];
    const char *hdr =
        "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"h.0.attn.bias\":{\"dtype\":\"F32\",\"shape\":[1,1,2,2],"
        "\"data_offsets\":[0,16]},"
        "\"h.0.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[2,6],"
        "\"data_offsets\":[16,64]},"
        "\"h.0.ln_1.bias\":{\"dtype\":\"F32\",\"shape\":[2],"
        "\"data_offsets\":[64,72]},"
        "\"step\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[72,80]},"
        "\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[4,2],"
        "\"data_offsets\":[80,112]},"
        "\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[6,2],"
        "\"data_offsets\":[112,160]}}";
    tokvec_table *t;
    char err[256] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    int rc = tokvec_table_open(st_file(hdr, 3, buf, 160), &o, &t);
    if (rc)
        fail_msg("%s", err);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    assert_string_equal(in->token_tensor, "wte.weight");
    assert_string_equal(in->position_tensor, "wpe.weight");
    assert_int_equal(in->vocab_size, 6);
    assert_int_equal(in->context_length, 4);
    assert_int_equal(in->positional, TOKVEC_POS_LEARNED);
    assert_int_equal(tokvec_table_tensor_count(t), 6);
    tokvec_table_close(t);
}

static void explicit_names_pick_the_tensors(void **s)
{
    (void)s;
    const char *hdr =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[16,24]}}";
    tokvec_table_opts o = {.token_tensor = "a", .position_tensor = "b"};
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(st_file(hdr, 0, data12, 24), &o, &t),
                     0);
    assert_int_equal(tokvec_table_get_info(t)->context_length, 1);
    tokvec_row r;
    assert_int_equal(tokvec_table_position_row(t, 0, &r), 0);
    assert_int_equal(tokvec_table_position_row(t, 1, &r),
                     TOKVEC_E_POSITION_RANGE);
    tokvec_table_close(t);
}

static void sinusoidal_metadata_computes_positions(void **s)
{
    (void)s;
    const char *hdr = "{\"__metadata__\":{\"positional\":\"sinusoidal\","
                      "\"context_length\":\"8\"},"
                      "\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],"
                      "\"data_offsets\":[0,48]}}";
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(st_file(hdr, 0, data12, 48), NULL, &t),
                     0);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    assert_int_equal(in->positional, TOKVEC_POS_SINUSOIDAL);
    assert_int_equal(in->context_length, 8);
    tokvec_row r;
    float v[4];
    assert_int_equal(tokvec_table_position_row(t, 3, &r), 0);
    tokvec_row_to_f32(&r, v);
    assert_true(v[0] == (float)sin(3.0));
    assert_true(v[1] == (float)cos(3.0));
    assert_true(v[2] == (float)sin(3.0 / 100.0));
    assert_true(v[3] == (float)cos(3.0 / 100.0));
    tokvec_table_close(t);
}

static void sinusoidal_positions_past_2_28_floats_are_refused(void **s)
{
    (void)s;
    const char *hdr = "{\"__metadata__\":{\"positional\":\"sinusoidal\","
                      "\"context_length\":\"67108865\"},"
                      "\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],"
                      "\"data_offsets\":[0,48]}}";
    char err[256] = "";
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_table *t = (tokvec_table *)1;
    assert_int_equal(tokvec_table_open(st_file(hdr, 0, data12, 48), &o, &t),
                     TOKVEC_E_TOO_LARGE);
    assert_null(t);
    assert_non_null(strstr(err, "context_length 67108865 x dim 4"));
}

static long max_rss_kib(void)
{
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss;
}

/* tokvec inspect's open: a 16 KiB table whose metadata asks for 1,048,576
 * sinusoidal positions of dim 256 (2^28 floats, 1 GiB, at the cap) is
 * validated and described without computing them. */
static void skip_sinusoidal_validates_without_computing_positions(void **s)
{
    (void)s;
    static float rows[16 * 256];
    const char *hdr =
        "{\"__metadata__\":{\"positional\":\"sinusoidal\","
        "\"context_length\":\"1048576\"},"
        "\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[16,256],"
        "\"data_offsets\":[0,16384]}}";
    char err[256] = "";
    tokvec_table_opts o = {.flags = TOKVEC_TABLE_SKIP_SINUSOIDAL,
                           .errbuf = err,
                           .errlen = sizeof err};
    tokvec_table *t;
    long before = max_rss_kib();
    int rc = tokvec_table_open(st_file(hdr, 0, rows, sizeof rows), &o, &t);
    if (rc)
        fail_msg("%s", err);
    long grew = max_rss_kib() - before;
    if (grew > 64 * 1024) /* the rows would be 1 GiB */
        fail_msg("peak RSS grew by %ld KiB at open", grew);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    assert_int_equal(in->positional, TOKVEC_POS_SINUSOIDAL);
    assert_int_equal(in->context_length, 1048576);
    assert_int_equal(in->dim, 256);
    tokvec_row r;
    assert_int_equal(tokvec_table_token_row(t, 15, &r), 0);
    assert_int_equal(tokvec_table_position_row(t, 0, &r),
                     TOKVEC_E_NO_POSITIONS);
    tokvec_table_close(t);

    /* The cap still applies: one position more is over 2^28 floats. */
    hdr = "{\"__metadata__\":{\"positional\":\"sinusoidal\","
          "\"context_length\":\"1048577\"},"
          "\"tok_emb.weight\":{\"dtype\":\"F32\",\"shape\":[16,256],"
          "\"data_offsets\":[0,16384]}}";
    t = (tokvec_table *)1;
    assert_int_equal(tokvec_table_open(st_file(hdr, 0, rows, sizeof rows), &o,
                                       &t),
                     TOKVEC_E_TOO_LARGE);
    assert_null(t);
    assert_non_null(strstr(err, "context_length 1048577 x dim 256"));
}

/* .npy: magic, version byte, header length (2 or 4 bytes), dict, data. */
static const char *npy_file(const char *name, int major, const char *dict,
                            const void *data, size_t n)
{
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t len = strlen(dict);
    fwrite("\x93NUMPY", 1, 6, f);
    fputc(major, f);
    fputc(0, f);
    fputc((int)(len & 0xff), f);
    fputc((int)(len >> 8), f);
    if (major > 1) {
        fputc(0, f);
        fputc(0, f);
    }
    fputs(dict, f);
    fwrite(data, 1, n, f);
    fclose(f);
    return path;
}

#define NPY_DICT(descr, order, shape)                                    \
    "{'descr': '" descr "', 'fortran_order': " order ", 'shape': " shape \
    ", }\n"

static void npy_versions_1_2_3_open(void **s)
{
    (void)s;
    for (int v = 1; v <= 3; v++) {
        tokvec_table *t;
        const char *p = npy_file("tok.npy", v,
                                 NPY_DICT("<f4", "False", "(3, 4)"), data12,
                                 48);
        assert_int_equal(tokvec_table_open(p, NULL, &t), 0);
        assert_string_equal(tokvec_table_get_info(t)->format, "npy");
        assert_int_equal(tokvec_table_get_info(t)->vocab_size, 3);
        tokvec_table_close(t);
    }
}

static void npy_with_position_file_is_learned(void **s)
{
    (void)s;
    char tokp[256];
    snprintf(tokp, sizeof tokp, "%s",
             npy_file("tok.npy", 1, NPY_DICT("<f4", "False", "(2, 4)"), data12,
                      32));
    const char *posp = npy_file("pos.npy", 1,
                                NPY_DICT("<f4", "False", "(1, 4)"), data12,
                                16);
    tokvec_table_opts o = {.position_path = posp};
    tokvec_table *t;
    assert_int_equal(tokvec_table_open(tokp, &o, &t), 0);
    assert_int_equal(tokvec_table_get_info(t)->positional, TOKVEC_POS_LEARNED);
    assert_int_equal(tokvec_table_get_info(t)->context_length, 1);
    tokvec_table_close(t);
}

static void npy_rejects_bad_magic_order_dtype_rank_and_size(void **s)
{
    (void)s;
    /* Without the full magic it is no format tokvec knows. */
    expect(raw_file("\x93NUMPX\x01\x00\x00\x00", 10), NULL, TOKVEC_E_FORMAT);
    expect(npy_file("a.npy", 4, NPY_DICT("<f4", "False", "(3, 4)"), data12,
                    48),
           NULL, TOKVEC_E_NPY);
    expect(npy_file("b.npy", 1, NPY_DICT("<f4", "True", "(3, 4)"), data12, 48),
           NULL, TOKVEC_E_NPY);
    expect(npy_file("c.npy", 1, NPY_DICT(">f4", "False", "(3, 4)"), data12,
                    48),
           NULL, TOKVEC_E_DTYPE);
    expect(npy_file("d.npy", 1, NPY_DICT("<f4", "False", "(3, 2, 2)"), data12,
                    48),
           NULL, TOKVEC_E_RANK);
    expect(npy_file("e.npy", 1, NPY_DICT("<f4", "False", "(3, 4)"), data12,
                    44),
           NULL, TOKVEC_E_SIZE);
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* Opens p (as the table, or as the --pos .npy of a good token .npy) with
 * SIGALRM armed for 5 s and no SA_RESTART: an open() that blocks comes
 * back as -EINTR and the test fails instead of hanging. Expects
 * TOKVEC_E_FORMAT and a message naming p and saying what it is. */
static void expect_refused_without_blocking(const char *p, int as_pos,
                                            const char *what)
{
    char tokp[256], err[512] = "", want[400];
    tokvec_table_opts o = {.errbuf = err, .errlen = sizeof err};
    const char *open_path = p;
    if (as_pos) {
        snprintf(tokp, sizeof tokp, "%s",
                 npy_file("tok.npy", 1, NPY_DICT("<f4", "False", "(2, 4)"),
                          data12, 32));
        o.position_path = p;
        open_path = tokp;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: a blocked open() -> EINTR */
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
    alarm(5);
    tokvec_table *t = (tokvec_table *)1;
    int rc = tokvec_table_open(open_path, &o, &t);
    alarm(0);
    assert_int_equal(sigaction(SIGALRM, &old, NULL), 0);
    if (rc != TOKVEC_E_FORMAT)
        fail_msg("%s: got %d (%s), want TOKVEC_E_FORMAT; message: %s", p, rc,
                 tokvec_errname(rc), err);
    assert_null(t);
    snprintf(want, sizeof want, "%s: is %s, not a regular file", p, what);
    if (!strstr(err, want))
        fail_msg("message '%s' lacks '%s'", err, want);
}

static void open_refuses_a_fifo_at_once(void **s)
{
    (void)s;
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/fifo.safetensors", tu_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    expect_refused_without_blocking(fifo, 0, "a FIFO");
    expect_refused_without_blocking(fifo, 1, "a FIFO"); /* as --pos */
    unlink(fifo);
}

static void open_refuses_a_directory(void **s)
{
    (void)s;
    expect_refused_without_blocking(tu_dir, 0, "a directory");
    expect_refused_without_blocking(tu_dir, 1, "a directory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_rejects_file_shorter_than_length_prefix),
        cmocka_unit_test(open_rejects_empty_file),
        cmocka_unit_test(open_rejects_header_beyond_file),
        cmocka_unit_test(open_rejects_header_over_100_mb),
        cmocka_unit_test(open_says_a_text_file_is_not_a_table),
        cmocka_unit_test(open_names_the_conversion_of_a_torch_save_file),
        cmocka_unit_test(open_rejects_bad_json),
        cmocka_unit_test(open_rejects_header_that_is_not_an_object),
        cmocka_unit_test(open_rejects_duplicate_keys),
        cmocka_unit_test(open_rejects_tensor_entry_missing_fields),
        cmocka_unit_test(open_rejects_offsets_out_of_range),
        cmocka_unit_test(open_rejects_begin_after_end),
        cmocka_unit_test(open_rejects_size_mismatch),
        cmocka_unit_test(open_rejects_one_dimensional_token_tensor),
        cmocka_unit_test(open_rejects_three_dimensional_token_tensor),
        cmocka_unit_test(open_rejects_unknown_dtype),
        cmocka_unit_test(open_rejects_integer_token_table),
        cmocka_unit_test(open_rejects_dim_mismatch_between_tables),
        cmocka_unit_test(open_rejects_dtype_mismatch_between_tables),
        cmocka_unit_test(open_rejects_token_and_position_tables_sharing_bytes),
        cmocka_unit_test(open_rejects_overlap_between_tensors_it_does_not_use),
        cmocka_unit_test(open_accepts_adjacent_and_empty_tensors),
        cmocka_unit_test(open_rejects_missing_token_tensor),
        cmocka_unit_test(open_rejects_missing_named_tensor),
        cmocka_unit_test(open_rejects_empty_table),
        cmocka_unit_test(open_rejects_non_string_metadata),
        cmocka_unit_test(open_rejects_missing_file_with_errno),
        cmocka_unit_test(open_reads_unaligned_f32_f16_bf16_rows),
        cmocka_unit_test(open_finds_gpt2_tensors_among_many_others),
        cmocka_unit_test(explicit_names_pick_the_tensors),
        cmocka_unit_test(sinusoidal_metadata_computes_positions),
        cmocka_unit_test(sinusoidal_positions_past_2_28_floats_are_refused),
        cmocka_unit_test(
            skip_sinusoidal_validates_without_computing_positions),
        cmocka_unit_test(npy_versions_1_2_3_open),
        cmocka_unit_test(npy_with_position_file_is_learned),
        cmocka_unit_test(npy_rejects_bad_magic_order_dtype_rank_and_size),
        cmocka_unit_test(open_refuses_a_fifo_at_once),
        cmocka_unit_test(open_refuses_a_directory),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
