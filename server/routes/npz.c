/* npz.c -- the application/x-npz answer of POST /embed (see npz.h): a
 * stored ZIP writer (local headers aligned to 64 by a zipalign extra
 * field, central directory, end record, CRC-32 of each member) and the
 * .npy members of one answer around the embeddings the caller wrote in
 * place.
 *
 * What must hold: tv_zip_plan and tv_zip_finish compute the same offsets
 * from the same members; every offset and size fits the 32-bit ZIP fields
 * (the plan refuses 0xFFFFFFFF and above: no ZIP64); tv_npz_plan and
 * tv_npz_finish lay out the same members from the same request.
 *
 * Threads: any; pure functions of their arguments (tv_crc32's tables are
 * built once under pthread_once, zipfmt.c).
 */
#include <assert.h>
#include <string.h>

#include "encode.h"
#include "npz.h"
#include "zipfmt.h"

enum { LOCAL_HDR = 30, CENTRAL_HDR = 46, EOCD = 22, ALIGN = 64 };
/* The alignment extra field: id 0xD935, its size, the alignment (u16),
 * then zeros (Android's zipalign). */
enum { ALIGN_ID = 0xD935, ALIGN_FIXED = 6 };

/* 0xFFFFFFFF in a size or offset field means ZIP64: stay below. */
static const uint64_t ZIP_LIM = UINT32_MAX - 1;

/* Zeros after the extra field's fixed part so that the bytes of a member
 * whose local header starts at cursor begin at a multiple of ALIGN. */
static size_t align_pad(uint64_t cursor, size_t name_len)
{
    uint64_t start = cursor + LOCAL_HDR + name_len + ALIGN_FIXED;
    return (size_t)((ALIGN - start % ALIGN) % ALIGN);
}

int tv_zip_plan(tv_zip *z)
{
    uint64_t cur = 0, central = 0;
    if (z->n < 1 || z->n > TV_ZIP_MAX)
        return -1;
    for (int i = 0; i < z->n; i++) {
        tv_zip_member *m = &z->m[i];
        size_t nl = strlen(m->name);
        if (m->len > ZIP_LIM || nl > 0xffff)
            return -1;
        m->hdr = (size_t)cur;
        cur += LOCAL_HDR + nl + ALIGN_FIXED + align_pad(cur, nl);
        m->data = (size_t)cur;
        cur += m->len;
        central += CENTRAL_HDR + nl;
        if (cur > ZIP_LIM)
            return -1;
    }
    z->central = (size_t)cur;
    z->central_len = (size_t)central;
    cur += central + EOCD;
    if (cur > ZIP_LIM)
        return -1;
    z->size = (size_t)cur;
    return 0;
}

size_t tv_zip_finish(const tv_zip *z, void *buf)
{
    unsigned char *b = buf, *o;
    uint32_t crc[TV_ZIP_MAX];
    for (int i = 0; i < z->n; i++) {
        const tv_zip_member *m = &z->m[i];
        size_t nl = strlen(m->name);
        size_t pad = align_pad(m->hdr, nl);
        crc[i] = tv_crc32(0, b + m->data, m->len);
        o = tv_zip_le32(b + m->hdr, 0x04034b50);
        o = tv_zip_common(o, crc[i], m->len, nl);
        o = tv_zip_le16(o, (unsigned)(ALIGN_FIXED + pad));
        memcpy(o, m->name, nl);
        o += nl;
        o = tv_zip_le16(o, ALIGN_ID);
        o = tv_zip_le16(o, (unsigned)(2 + pad));
        o = tv_zip_le16(o, ALIGN);
        memset(o, 0, pad);
        assert(o + pad == b + m->data);
    }
    o = b + z->central;
    for (int i = 0; i < z->n; i++) {
        const tv_zip_member *m = &z->m[i];
        size_t nl = strlen(m->name);
        o = tv_zip_le32(o, 0x02014b50);
        o = tv_zip_le16(o, 20); /* made by: version 2.0, MS-DOS attributes */
        o = tv_zip_common(o, crc[i], m->len, nl);
        o = tv_zip_le16(o, 0); /* extra */
        o = tv_zip_le16(o, 0); /* comment */
        o = tv_zip_le16(o, 0); /* disk */
        o = tv_zip_le16(o, 0); /* internal attributes */
        o = tv_zip_le32(o, 0); /* external attributes */
        o = tv_zip_le32(o, (uint32_t)m->hdr);
        memcpy(o, m->name, nl);
        o += nl;
    }
    o = tv_zip_le32(o, 0x06054b50);
    o = tv_zip_le16(o, 0); /* this disk */
    o = tv_zip_le16(o, 0); /* the central directory's disk */
    o = tv_zip_le16(o, (unsigned)z->n);
    o = tv_zip_le16(o, (unsigned)z->n);
    o = tv_zip_le32(o, (uint32_t)z->central_len);
    o = tv_zip_le32(o, (uint32_t)z->central);
    o = tv_zip_le16(o, 0); /* comment */
    assert((size_t)(o - b) == z->size);
    return z->size;
}

/* --- the /embed members -------------------------------------------------- */

/* Which int64 (B, S) arrays follow the embeddings, in order. */
enum { IDS_INPUT, IDS_TARGET, IDS_MASK, IDS_KINDS };
static const char *const ids_name[IDS_KINDS] = {"input_ids.npy",
                                                "target_ids.npy",
                                                "attention_mask.npy"};

static int has_ids(const tv_request *q, int kind)
{
    switch (kind) {
    case IDS_INPUT: /* pooled inputs' ids are ragged: JSON only */
        return q->has_text && !q->pool;
    case IDS_TARGET:
        return q->targets != NULL && !q->pool;
    default:
        return q->lens != NULL && !q->pool;
    }
}

int tv_npz_plan(const tv_request *q, int64_t S, int64_t D, tokvec_dtype dt,
                tv_npz *out)
{
    int64_t B = q->batch;
    uint64_t n, ids;
    char h[TV_NPY_HEADER_MAX];
    memset(out, 0, sizeof *out);
    if (B < 1 || D < 1 || (S < 1 && S != TV_VECTORS) ||
        __builtin_mul_overflow((uint64_t)B, (uint64_t)(S < 1 ? 1 : S), &n) ||
        __builtin_mul_overflow(n, (uint64_t)D, &n) || n > ZIP_LIM ||
        __builtin_mul_overflow(n, (uint64_t)tokvec_dtype_size(dt), &n))
        return -1;
    size_t hdr = tv_npy_header(h, dt, B, S, D);
    tv_zip *z = &out->zip;
    z->m[0] = (tv_zip_member){.name = "embeddings.npy", .len = hdr + n};
    z->n = 1;
    if (n > ZIP_LIM)
        return -1;
    for (int k = 0; k < IDS_KINDS; k++) {
        if (!has_ids(q, k))
            continue;
        const int64_t shape[2] = {B, q->seq};
        if (q->seq < 1 ||
            __builtin_mul_overflow((uint64_t)B, (uint64_t)q->seq, &ids) ||
            ids > ZIP_LIM / 8)
            return -1;
        z->m[z->n++] = (tv_zip_member){
            .name = ids_name[k],
            .len = tv_npy_header_of(h, "<i8", 2, shape) + ids * 8};
    }
    if (tv_zip_plan(z) < 0)
        return -1;
    out->rows = z->m[0].data + hdr;
    out->rows_bytes = (size_t)n;
    return 0;
}

/* Little-endian int64s, whatever the host's byte order. */
static void put_i64s(unsigned char *o, const int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++, o += 8) {
        uint64_t u = (uint64_t)v[i];
        for (int k = 0; k < 8; k++)
            o[k] = (unsigned char)(u >> 8 * k);
    }
}

/* The attention mask: 1 for each row's first lens[b] tokens, 0 after. */
static void put_mask(unsigned char *o, const int64_t *lens, int64_t B,
                     int64_t S)
{
    memset(o, 0, (size_t)(B * S) * 8);
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < lens[b] && s < S; s++)
            o[(b * S + s) * 8] = 1;
}

size_t tv_npz_finish(void *buf, const tv_request *q, int64_t S, int64_t D,
                     tokvec_dtype dt, const tv_npz *p)
{
    unsigned char *b = buf;
    const tv_zip *z = &p->zip;
    int64_t B = q->batch, L = q->seq;
    const int64_t shape[2] = {B, L};
    tv_npy_header((char *)b + z->m[0].data, dt, B, S, D);
    int i = 1;
    for (int k = 0; k < IDS_KINDS; k++) {
        if (!has_ids(q, k))
            continue;
        unsigned char *o = b + z->m[i++].data;
        o += tv_npy_header_of((char *)o, "<i8", 2, shape);
        if (k == IDS_MASK)
            put_mask(o, q->lens, B, L);
        else
            put_i64s(o, k == IDS_INPUT ? q->ids : q->targets, (size_t)(B * L));
    }
    assert(i == z->n);
    return tv_zip_finish(z, buf);
}
