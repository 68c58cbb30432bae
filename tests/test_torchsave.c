/* test_torchsave.c -- server/routes/torchsave.c: CRC-32 matches the standard's
 * check values and a bitwise reference at every length and alignment;
 * data.pkl is byte for byte what torch 1.13's torch.save pickled for the
 * same shapes and dtypes (hex below, from torch.save(torch.zeros(shape,
 * dtype=...)), BININT1/BININT2/BININT all exercised); the archive is a
 * valid stored zip read back by an independent walk of its headers (local
 * headers, "FB" padding, 64-byte aligned data, CRCs, central directory,
 * end record, nothing past layout.size); the zero-copy path gives the same
 * bytes; plans past 4 GiB are refused; the JSON body holds one archive per
 * sequence. Loading with PyTorch itself: tests/e2e/test_torchsave.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "torchsave.h"
#include "zipfmt.h"

enum { GUARD = 64 };

static unsigned rd16(const unsigned char *p)
{
    return p[0] | p[1] << 8;
}
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint32_t crc_bitwise(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

static void crc32_matches_check_values_and_a_bitwise_reference(void **state)
{
    (void)state;
    assert_int_equal(tv_crc32(0, "", 0), 0);
    assert_int_equal(tv_crc32(0, "123456789", 9), 0xCBF43926u);
    const char *fox = "The quick brown fox jumps over the lazy dog";
    assert_int_equal(tv_crc32(0, fox, strlen(fox)), 0x414FA339u);
    /* continued in pieces = at once */
    assert_int_equal(tv_crc32(tv_crc32(0, "1234", 4), "56789", 5),
                     0xCBF43926u);
    unsigned char buf[300];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (unsigned char)(x >> 16);
    }
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n + off <= sizeof buf; n += 1 + n / 16)
            assert_int_equal(tv_crc32(0, buf + off, n),
                             crc_bitwise(buf + off, n));
}

/* One record found by walking the local headers. */
typedef struct rec {
    char name[32];
    size_t data, len;
} rec;

/* Walks the archive as a zip reader would and checks every field; returns
 * the number of records (filled into r). */
static int walk(const unsigned char *b, size_t size, rec *r, int max)
{
    assert_true(size >= 22);
    const unsigned char *e = b + size - 22;
    assert_int_equal(rd32(e), 0x06054b50);
    unsigned n = rd16(e + 10);
    assert_int_equal(rd16(e + 8), n);
    assert_int_equal(rd16(e + 20), 0); /* no comment */
    size_t cd = rd32(e + 16), cd_len = rd32(e + 12);
    assert_int_equal(cd + cd_len, size - 22);
    assert_true((int)n <= max);
    size_t off = 0;
    const unsigned char *c = b + cd;
    for (unsigned i = 0; i < n; i++) {
        const unsigned char *h = b + off;
        assert_int_equal(rd32(h), 0x04034b50);
        assert_int_equal(rd16(h + 6), 0); /* no flags: no descriptor */
        assert_int_equal(rd16(h + 8), 0); /* stored */
        size_t len = rd32(h + 18), nl = rd16(h + 26), xl = rd16(h + 28);
        assert_int_equal(rd32(h + 22), len); /* stored: sizes equal */
        assert_true(nl < sizeof r[i].name);
        memcpy(r[i].name, h + 30, nl);
        r[i].name[nl] = '\0';
        /* the extra field is exactly "FB", its length, then 'Z's */
        const unsigned char *x = h + 30 + nl;
        assert_int_equal(rd16(x), 0x4246);
        assert_int_equal(rd16(x + 2) + 4, xl);
        for (size_t k = 4; k < xl; k++)
            assert_int_equal(x[k], 'Z');
        r[i].data = off + 30 + nl + xl;
        r[i].len = len;
        assert_int_equal(r[i].data % 64, 0);
        assert_int_equal(rd32(h + 14), tv_crc32(0, b + r[i].data, len));
        /* the central entry says the same */
        assert_int_equal(rd32(c), 0x02014b50);
        assert_memory_equal(c + 10, h + 8, 18); /* method..usize + CRC */
        assert_int_equal(rd16(c + 28), nl);
        assert_int_equal(rd32(c + 42), off);
        assert_memory_equal(c + 46, r[i].name, nl);
        c += 46 + nl + rd16(c + 30) + rd16(c + 32);
        off = r[i].data + len;
    }
    assert_int_equal(off, cd); /* records are contiguous */
    assert_ptr_equal(c, b + cd + cd_len);
    return (int)n;
}

static const rec *find(const rec *r, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(r[i].name, name))
            return &r[i];
    fail_msg("no record %s", name);
    return NULL;
}

/* torch 1.13: torch.save(torch.zeros(shape, dtype=dt)) -> data.pkl */
static const struct {
    int64_t rows, cols;
    tokvec_dtype dt;
    const char *hex;
} golden[] = {
    {2, 3, TOKVEC_F32,
     "800263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f"
     "76320a71002828580700000073746f72616765710163746f7263680a466c6f61"
     "7453746f726167650a71025801000000307103580300000063707571044b0674"
     "7105514b004b024b038671064b034b018671078963636f6c6c656374696f6e73"
     "0a4f726465726564446963740a71082952710974710a52710b2e"},
    {1, 1, TOKVEC_F16,
     "800263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f"
     "76320a71002828580700000073746f72616765710163746f7263680a48616c66"
     "53746f726167650a71025801000000307103580300000063707571044b017471"
     "05514b004b014b018671064b014b018671078963636f6c6c656374696f6e730a"
     "4f726465726564446963740a71082952710974710a52710b2e"},
    {300, 256, TOKVEC_BF16,
     "800263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f"
     "76320a71002828580700000073746f72616765710163746f7263680a42466c6f"
     "6174313653746f726167650a7102580100000030710358030000006370757104"
     "4a002c0100747105514b004d2c014d00018671064d00014b018671078963636f"
     "6c6c656374696f6e730a4f726465726564446963740a71082952710974710a52"
     "710b2e"},
    {1024, 768, TOKVEC_F32,
     "800263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f"
     "76320a71002828580700000073746f72616765710163746f7263680a466c6f61"
     "7453746f726167650a71025801000000307103580300000063707571044a0000"
     "0c00747105514b004d00044d00038671064d00034b018671078963636f6c6c65"
     "6374696f6e730a4f726465726564446963740a71082952710974710a52710b2e"},
    {70000, 3, TOKVEC_F16,
     "800263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f"
     "76320a71002828580700000073746f72616765710163746f7263680a48616c66"
     "53746f726167650a71025801000000307103580300000063707571044a503403"
     "00747105514b004a701101004b038671064b034b018671078963636f6c6c6563"
     "74696f6e730a4f726465726564446963740a71082952710974710a52710b2e"},
};

static unsigned char *archive(int64_t rows, int64_t cols, tokvec_dtype dt,
                              tv_torchsave_layout *l)
{
    assert_int_equal(tv_torchsave_plan(rows, cols, dt, l), 0);
    unsigned char *b = malloc(l->size + GUARD);
    assert_non_null(b);
    memset(b, 0xA5, l->size + GUARD);
    for (size_t i = 0; i < l->data_bytes; i++)
        b[l->data_offset + i] = (unsigned char)(i * 7 + 1);
    assert_int_equal(tv_torchsave_finish(b, rows, cols, dt), l->size);
    for (size_t i = 0; i < GUARD; i++)
        assert_int_equal(b[l->size + i], 0xA5);
    return b;
}

static void data_pkl_is_what_torch_save_pickles(void **state)
{
    (void)state;
    for (size_t g = 0; g < sizeof golden / sizeof golden[0]; g++) {
        tv_torchsave_layout l;
        unsigned char *b = archive(golden[g].rows, golden[g].cols,
                                   golden[g].dt, &l);
        rec r[8];
        int n = walk(b, l.size, r, 8);
        const rec *p = find(r, n, "archive/data.pkl");
        size_t hl = strlen(golden[g].hex) / 2;
        unsigned char want[256];
        for (size_t i = 0; i < hl; i++)
            want[i] = (unsigned char)strtoul(
                (char[3]){golden[g].hex[2 * i], golden[g].hex[2 * i + 1], 0},
                NULL, 16);
        assert_int_equal(p->len, hl);
        assert_memory_equal(b + p->data, want, hl);
        free(b);
    }
}

static void archive_is_a_stored_zip_with_aligned_records(void **state)
{
    (void)state;
    static const tokvec_dtype dts[] = {TOKVEC_F32, TOKVEC_F16, TOKVEC_BF16};
    for (int d = 0; d < 3; d++)
        for (int64_t rows = 1; rows <= 70; rows += 23)
            for (int64_t cols = 1; cols <= 300; cols += 97) {
                tv_torchsave_layout l;
                unsigned char *b = archive(rows, cols, dts[d], &l);
                rec r[8];
                int n = walk(b, l.size, r, 8);
                assert_int_equal(n, 4);
                assert_string_equal(r[0].name, "archive/data.pkl");
                const rec *o = find(r, n, "archive/byteorder");
                assert_int_equal(o->len, 6);
                assert_memory_equal(b + o->data, "little", 6);
                o = find(r, n, "archive/version");
                assert_int_equal(o->len, 2);
                assert_memory_equal(b + o->data, "3\n", 2);
                o = find(r, n, "archive/data/0");
                assert_int_equal(o->data, l.data_offset);
                assert_int_equal(o->len, (size_t)(rows * cols) *
                                             tokvec_dtype_size(dts[d]));
                assert_int_equal(o->len, l.data_bytes);
                for (size_t i = 0; i < o->len; i++)
                    assert_int_equal(b[o->data + i],
                                     (unsigned char)(i * 7 + 1));
                free(b);
            }
}

static void copying_and_zero_copy_give_the_same_bytes(void **state)
{
    (void)state;
    tv_torchsave_layout l;
    unsigned char *a = archive(5, 9, TOKVEC_BF16, &l);
    unsigned char *data = malloc(l.data_bytes), *b = malloc(l.size);
    assert_non_null(data);
    assert_non_null(b);
    memcpy(data, a + l.data_offset, l.data_bytes);
    memset(b, 0, l.size);
    assert_int_equal(tv_torchsave(b, data, 5, 9, TOKVEC_BF16), l.size);
    assert_memory_equal(a, b, l.size);
    free(a);
    free(b);
    free(data);
}

static void plans_of_4_gib_or_nothing_are_refused(void **state)
{
    (void)state;
    tv_torchsave_layout l;
    assert_int_equal(tv_torchsave_plan(0, 4, TOKVEC_F32, &l), -1);
    assert_int_equal(tv_torchsave_plan(4, -1, TOKVEC_F32, &l), -1);
    assert_int_equal(tv_torchsave_plan(65536, 16384, TOKVEC_F32, &l), -1);
    assert_int_equal(tv_torchsave_plan(65536, 32768, TOKVEC_F16, &l), -1);
    assert_int_equal(tv_torchsave_plan(INT64_MAX, INT64_MAX, TOKVEC_F16, &l),
                     -1);
    assert_int_equal(tv_torchsave_plan(65535, 16384, TOKVEC_F32, &l), 0);
    assert_true(l.size < UINT32_MAX && l.size > l.data_bytes);
    assert_int_equal(tv_embed_torch_json_bound(1, 65536, 16384, TOKVEC_F32),
                     0);
    assert_int_equal(tv_embed_torch_json_bound(0, 2, 2, TOKVEC_F32), 0);
    assert_int_equal(tv_embed_torch_json_bound(INT64_MAX, 2, 2, TOKVEC_F32),
                     0);
}

static size_t unbase64(const char *s, unsigned char *out)
{
    static const char A[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = 0, len = strlen(s);
    assert_int_equal(len % 4, 0);
    for (size_t i = 0; i < len; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            const char *c = s[i + k] == '=' ? NULL : strchr(A, s[i + k]);
            pad += !c;
            v = v << 6 | (c ? (uint32_t)(c - A) : 0);
        }
        out[n++] = (unsigned char)(v >> 16);
        if (pad < 2)
            out[n++] = (unsigned char)(v >> 8);
        if (pad < 1)
            out[n++] = (unsigned char)v;
    }
    return n;
}

static void json_body_holds_one_archive_per_sequence(void **state)
{
    (void)state;
    enum { B = 3, S = 2, D = 5 };
    uint16_t x[B * S * D];
    for (int i = 0; i < B * S * D; i++)
        x[i] = (uint16_t)(0x3c00 + i);
    tv_torchsave_layout l;
    assert_int_equal(tv_torchsave_plan(S, D, TOKVEC_F16, &l), 0);
    size_t cap = tv_embed_torch_json_bound(B, S, D, TOKVEC_F16);
    char *body = malloc(cap + GUARD + 1);
    unsigned char *scratch = malloc(l.size), *one = malloc(l.size),
                  *got = malloc(l.size + 3);
    assert_non_null(body);
    memset(body, 0xA5, cap + GUARD + 1);
    size_t n = tv_embed_torch_json(body, x, B, S, D, TOKVEC_F16, scratch);
    assert_true(n <= cap);
    for (size_t i = 0; i < GUARD; i++)
        assert_int_equal((unsigned char)body[cap + i], 0xA5);
    body[n] = '\0';
    json_error_t je;
    json_t *j = json_loads(body, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_object_size(j), 3);
    json_t *shape = json_object_get(j, "shape");
    assert_int_equal(json_array_size(shape), 3);
    assert_int_equal(json_integer_value(json_array_get(shape, 0)), B);
    assert_int_equal(json_integer_value(json_array_get(shape, 1)), S);
    assert_int_equal(json_integer_value(json_array_get(shape, 2)), D);
    assert_string_equal(json_string_value(json_object_get(j, "dtype")),
                        "float16");
    json_t *emb = json_object_get(j, "embeddings");
    assert_int_equal(json_array_size(emb), B);
    for (int b = 0; b < B; b++) {
        size_t len = unbase64(json_string_value(json_array_get(emb, b)), got);
        assert_int_equal(len, l.size);
        assert_int_equal(tv_torchsave(one, x + b * S * D, S, D, TOKVEC_F16),
                         l.size);
        assert_memory_equal(got, one, l.size);
    }
    json_decref(j);
    free(body);
    free(scratch);
    free(one);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc32_matches_check_values_and_a_bitwise_reference),
        cmocka_unit_test(data_pkl_is_what_torch_save_pickles),
        cmocka_unit_test(archive_is_a_stored_zip_with_aligned_records),
        cmocka_unit_test(copying_and_zero_copy_give_the_same_bytes),
        cmocka_unit_test(plans_of_4_gib_or_nothing_are_refused),
        cmocka_unit_test(json_body_holds_one_archive_per_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
