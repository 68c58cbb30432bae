/* test_npz.c -- server/routes/npz.c: the stored ZIP writer and the npz
 * answer of POST /embed. A small independent reader here (the end record,
 * the central directory, each local header, a bitwise CRC-32) checks the
 * layout field by field: every member's bytes 64-aligned behind a zipalign
 * extra field, the CRCs, sizes and offsets the same in both headers, the
 * end record counting them; and the npz members: names, npy headers and
 * int64 arrays (input_ids, target_ids, attention_mask) where they exist.
 * Python's zipfile and numpy.load read the server's archives in
 * tests/e2e/test_combinations.py. One thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "npz.h"
#include "zipfmt.h"

static unsigned rd16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* CRC-32 bit by bit, independent of the writer's tables. */
static uint32_t crc_bitwise(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

typedef struct member {
    char name[64];
    size_t data, len;
} member;

/* Reads the archive of size bytes as an unzip would, checking every field
 * the writer promises; fills up to 8 members; returns their count. */
static int read_zip(const unsigned char *a, size_t size, member *m)
{
    assert_true(size >= 22);
    const unsigned char *e = a + size - 22;
    assert_int_equal(rd32(e), 0x06054b50);
    assert_int_equal(rd16(e + 4), 0);
    assert_int_equal(rd16(e + 6), 0);
    int n = (int)rd16(e + 10);
    assert_int_equal(rd16(e + 8), n);
    assert_true(n >= 1 && n <= 8);
    size_t cd_len = rd32(e + 12), cd = rd32(e + 16);
    assert_int_equal(cd + cd_len, size - 22); /* no gap, no comment */
    assert_int_equal(rd16(e + 20), 0);
    const unsigned char *c = a + cd;
    size_t end_of_last = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(rd32(c), 0x02014b50);
        assert_int_equal(rd16(c + 4), 20);    /* made by 2.0 */
        assert_int_equal(rd16(c + 6), 20);    /* needed 2.0 */
        assert_int_equal(rd16(c + 8), 0);     /* flags */
        assert_int_equal(rd16(c + 10), 0);    /* stored */
        assert_int_equal(rd16(c + 12), 0);    /* 00:00 */
        assert_int_equal(rd16(c + 14), 0x21); /* 1980-01-01 */
        uint32_t crc = rd32(c + 16);
        size_t len = rd32(c + 20), nl = rd16(c + 28);
        assert_int_equal(rd32(c + 24), len); /* stored: equal sizes */
        assert_int_equal(rd16(c + 30), 0);   /* no extra here */
        assert_int_equal(rd16(c + 32), 0);
        size_t hdr = rd32(c + 42);
        assert_true(nl < sizeof m[i].name);
        memcpy(m[i].name, c + 46, nl);
        m[i].name[nl] = 0;
        /* the local header says the same, then the alignment field */
        const unsigned char *l = a + hdr;
        assert_int_equal(hdr, end_of_last); /* members back to back */
        assert_int_equal(rd32(l), 0x04034b50);
        assert_memory_equal(l + 4, c + 6, 26 - 4); /* needed .. name len */
        size_t xl = rd16(l + 28);
        assert_memory_equal(l + 30, m[i].name, nl);
        const unsigned char *x = l + 30 + nl;
        assert_true(xl >= 6);
        assert_int_equal(rd16(x), 0xD935);
        assert_int_equal(rd16(x + 2), xl - 4);
        assert_int_equal(rd16(x + 4), 64);
        for (size_t k = 6; k < xl; k++)
            assert_int_equal(x[k], 0);
        m[i].data = hdr + 30 + nl + xl;
        m[i].len = len;
        assert_int_equal(m[i].data % 64, 0);
        assert_true(xl - 6 < 64); /* the least padding */
        assert_true(m[i].data + len <= cd);
        assert_int_equal(crc_bitwise(a + m[i].data, len), crc);
        end_of_last = m[i].data + len;
        c += 46 + nl;
    }
    assert_int_equal(end_of_last, cd);
    assert_int_equal(c - a, cd + cd_len);
    return n;
}

static void crc32_is_iso_hdlc(void **s)
{
    (void)s;
    assert_int_equal(tv_crc32(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(crc_bitwise((const unsigned char *)"123456789", 9),
                     0xCBF43926u);
}

static void zip_members_are_aligned_crced_and_listed(void **s)
{
    (void)s;
    tv_zip z = {.n = 3};
    static const char *const names[3] = {"a.npy", "bb", "a_longer_name.bin"};
    static const size_t lens[3] = {0, 1, 200};
    for (int i = 0; i < 3; i++)
        z.m[i] = (tv_zip_member){.name = names[i], .len = lens[i]};
    assert_int_equal(tv_zip_plan(&z), 0);
    unsigned char *a = malloc(z.size);
    assert_non_null(a);
    memset(a, 0xAA, z.size); /* every byte must be written */
    for (int i = 0; i < 3; i++)
        for (size_t k = 0; k < lens[i]; k++)
            a[z.m[i].data + k] = (unsigned char)(k * 7 + (size_t)i);
    assert_int_equal(tv_zip_finish(&z, a), z.size);
    member m[8];
    assert_int_equal(read_zip(a, z.size, m), 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(m[i].name, names[i]);
        assert_int_equal(m[i].data, z.m[i].data);
        assert_int_equal(m[i].len, lens[i]);
    }
    /* planning is a pure function of the members */
    tv_zip y = z;
    assert_int_equal(tv_zip_plan(&y), 0);
    assert_memory_equal(&y, &z, sizeof y);
    free(a);
}

static void zip_sizes_of_4_gib_are_refused(void **s)
{
    (void)s;
    tv_zip z = {.n = 1};
    z.m[0] = (tv_zip_member){.name = "x", .len = (size_t)UINT32_MAX};
    assert_int_equal(tv_zip_plan(&z), -1);
    /* one member fits alone, but the archive around it does not */
    z.m[0].len = (size_t)UINT32_MAX - 100;
    assert_int_equal(tv_zip_plan(&z), -1);
    /* two members under 4 GiB each, over it together */
    z.n = 2;
    z.m[0].len = (size_t)3 << 30;
    z.m[1] = (tv_zip_member){.name = "y", .len = (size_t)2 << 30};
    assert_int_equal(tv_zip_plan(&z), -1);
    z.n = 0;
    assert_int_equal(tv_zip_plan(&z), -1);
    z.n = TV_ZIP_MAX + 1;
    assert_int_equal(tv_zip_plan(&z), -1);
}

/* The int64 (B, S) member m of archive a holds want. */
static void assert_i64_member(const unsigned char *a, const member *m,
                              const char *name, int64_t B, int64_t S,
                              const int64_t *want)
{
    char h[TV_NPY_HEADER_MAX];
    const int64_t shape[2] = {B, S};
    size_t hl = tv_npy_header_of(h, "<i8", 2, shape);
    assert_string_equal(m->name, name);
    assert_int_equal(m->len, hl + (size_t)(B * S) * 8);
    assert_memory_equal(a + m->data, h, hl);
    for (int64_t i = 0; i < B * S; i++) {
        uint64_t v = 0;
        for (int k = 7; k >= 0; k--)
            v = v << 8 | a[m->data + hl + (size_t)i * 8 + (size_t)k];
        assert_int_equal((int64_t)v, want[i]);
    }
}

static void npz_of_padded_texts_holds_ids_and_mask(void **s)
{
    (void)s;
    int64_t ids[6] = {5, 6, 7, 8, 0, 0}, lens[2] = {3, 1};
    tv_request q;
    tv_request_init(&q);
    q.ids = ids;
    q.batch = 2;
    q.seq = 3;
    q.has_text = 1;
    q.lens = lens;
    const int64_t D = 4;
    tv_npz p;
    assert_int_equal(tv_npz_plan(&q, 3, D, TOKVEC_F16, &p), 0);
    assert_int_equal(p.zip.n, 3);
    assert_int_equal(p.rows % 64, 0);
    assert_int_equal(p.rows_bytes, 2 * 3 * D * 2);
    unsigned char *a = malloc(p.zip.size);
    assert_non_null(a);
    for (size_t k = 0; k < p.rows_bytes; k++)
        a[p.rows + k] = (unsigned char)k;
    assert_int_equal(tv_npz_finish(a, &q, 3, D, TOKVEC_F16, &p), p.zip.size);
    member m[8];
    assert_int_equal(read_zip(a, p.zip.size, m), 3);
    char h[TV_NPY_HEADER_MAX];
    size_t hl = tv_npy_header(h, TOKVEC_F16, 2, 3, D);
    assert_string_equal(m[0].name, "embeddings.npy");
    assert_int_equal(m[0].len, hl + p.rows_bytes);
    assert_memory_equal(a + m[0].data, h, hl);
    assert_int_equal(m[0].data + hl, p.rows);
    for (size_t k = 0; k < p.rows_bytes; k++) /* left as written */
        assert_int_equal(a[p.rows + k], (unsigned char)k);
    assert_i64_member(a, &m[1], "input_ids.npy", 2, 3, ids);
    const int64_t mask[6] = {1, 1, 1, 1, 0, 0};
    assert_i64_member(a, &m[2], "attention_mask.npy", 2, 3, mask);
    free(a);
}

static void npz_members_exist_only_where_their_arrays_do(void **s)
{
    (void)s;
    int64_t ids[4] = {1, 2, 3, 4}, targets[4] = {2, 3, 4, 5};
    tv_request q;
    tv_request_init(&q);
    q.ids = ids;
    q.batch = 2;
    q.seq = 2;
    member m[8];
    /* ids in, not padded: the embeddings alone */
    tv_npz p;
    assert_int_equal(tv_npz_plan(&q, 2, 8, TOKVEC_F32, &p), 0);
    assert_int_equal(p.zip.n, 1);
    unsigned char *a = calloc(1, p.zip.size);
    assert_non_null(a);
    tv_npz_finish(a, &q, 2, 8, TOKVEC_F32, &p);
    assert_int_equal(read_zip(a, p.zip.size, m), 1);
    free(a);
    /* windows: input_ids and target_ids */
    q.has_text = 1;
    q.targets = targets;
    assert_int_equal(tv_npz_plan(&q, 2, 8, TOKVEC_BF16, &p), 0);
    a = calloc(1, p.zip.size);
    assert_non_null(a);
    tv_npz_finish(a, &q, 2, 8, TOKVEC_BF16, &p);
    assert_int_equal(read_zip(a, p.zip.size, m), 3);
    assert_i64_member(a, &m[1], "input_ids.npy", 2, 2, ids);
    assert_i64_member(a, &m[2], "target_ids.npy", 2, 2, targets);
    free(a);
    /* pooled (B, D): the vectors alone, even for texts */
    q.targets = NULL;
    q.pool = 1;
    assert_int_equal(tv_npz_plan(&q, TV_VECTORS, 8, TOKVEC_F32, &p), 0);
    assert_int_equal(p.zip.n, 1);
    assert_int_equal(p.rows_bytes, 2 * 8 * 4);
    a = calloc(1, p.zip.size);
    assert_non_null(a);
    tv_npz_finish(a, &q, TV_VECTORS, 8, TOKVEC_F32, &p);
    assert_int_equal(read_zip(a, p.zip.size, m), 1);
    char h[TV_NPY_HEADER_MAX];
    size_t hl = tv_npy_header(h, TOKVEC_F32, 2, TV_VECTORS, 8);
    assert_memory_equal(a + m[0].data, h, hl);
    free(a);
}

static void npz_of_4_gib_or_more_is_refused(void **s)
{
    (void)s;
    tv_request q;
    tv_request_init(&q);
    q.batch = 1;
    q.seq = ((int64_t)1 << 21) - 1024; /* x 1024: 2 MiB short of 2^31 */
    /* 8 GiB of float32 rows: over; in float16, 2 MiB under 4 GiB: fits */
    assert_int_equal(tv_npz_plan(&q, q.seq, 1024, TOKVEC_F32, &(tv_npz){0}),
                     -1);
    assert_int_equal(tv_npz_plan(&q, q.seq, 1024, TOKVEC_F16, &(tv_npz){0}),
                     0);
    /* ... but not with its mask (16 MiB) beside it */
    int64_t lens[1] = {1};
    q.lens = lens;
    assert_int_equal(tv_npz_plan(&q, q.seq, 1024, TOKVEC_F16, &(tv_npz){0}),
                     -1);
    /* sizes that overflow */
    q.lens = NULL;
    q.batch = INT64_MAX / 2;
    assert_int_equal(tv_npz_plan(&q, 4, 4, TOKVEC_F32, &(tv_npz){0}), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc32_is_iso_hdlc),
        cmocka_unit_test(zip_members_are_aligned_crced_and_listed),
        cmocka_unit_test(zip_sizes_of_4_gib_are_refused),
        cmocka_unit_test(npz_of_padded_texts_holds_ids_and_mask),
        cmocka_unit_test(npz_members_exist_only_where_their_arrays_do),
        cmocka_unit_test(npz_of_4_gib_or_more_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
