/* torchsave.c -- torch.save's bytes for one 2-D tensor (see torchsave.h):
 * a minimal pickle writer (protocol 2, the opcodes Python's pickler uses
 * for what torch.save pickles), a zip writer (stored records, CRC-32, data
 * aligned to 64 bytes by an "FB" extra field as PyTorch's writer does), and
 * the /embed JSON body with one base64 archive per sequence.
 *
 * What must hold: the layout is a pure function of (rows, cols, dtype), so
 * tv_torchsave_plan and tv_torchsave_finish agree on every offset; nothing
 * is written past layout.size; every offset and size fits the 32-bit zip
 * fields (plan refuses archives of 4 GiB or more: no zip64). data.pkl is
 * byte for byte what torch.save's pickler writes for the same tensor
 * (tests/test_torchsave.c holds torch 1.13's bytes).
 *
 * Threads: any thread. (The CRC and the header fields: zipfmt.c.)
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "encode.h"
#include "torchsave.h"
#include "zipfmt.h"

/* ---- pickle ------------------------------------------------------------ */

/* Longest data.pkl: ~160 fixed bytes + integers of at most 5 bytes. */
enum { PICKLE_MAX = 256 };

typedef struct pk {
    unsigned char b[PICKLE_MAX];
    size_t n;
    unsigned memo; /* next BINPUT index */
} pk;

static void pk_put(pk *w, const void *s, size_t n)
{
    assert(w->n + n <= PICKLE_MAX);
    memcpy(w->b + w->n, s, n);
    w->n += n;
}

static void pk_op(pk *w, unsigned char op)
{
    pk_put(w, &op, 1);
}

/* BINPUT: what Python's pickler writes after each memoized object. */
static void pk_memo(pk *w)
{
    assert(w->memo < 256);
    unsigned char q[2] = {'q', (unsigned char)w->memo++};
    pk_put(w, q, 2);
}

static void pk_global(pk *w, const char *module, const char *name)
{
    pk_op(w, 'c');
    pk_put(w, module, strlen(module));
    pk_op(w, '\n');
    pk_put(w, name, strlen(name));
    pk_op(w, '\n');
    pk_memo(w);
}

static void pk_str(pk *w, const char *s) /* BINUNICODE, ASCII here */
{
    size_t n = strlen(s);
    unsigned char h[5] = {'X', (unsigned char)n, (unsigned char)(n >> 8),
                          (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
    pk_put(w, h, 5);
    pk_put(w, s, n);
    pk_memo(w);
}

/* Non-negative integers as Python's pickler spells them: BININT1, BININT2,
 * BININT (signed 32-bit). Larger ones never occur: plan refuses archives
 * of 2^31 or more elements of even 2 bytes. */
static void pk_int(pk *w, int64_t v)
{
    assert(v >= 0 && v <= INT32_MAX);
    unsigned char o[5];
    size_t n;
    if (v < 256) {
        o[0] = 'K';
        o[1] = (unsigned char)v;
        n = 2;
    } else if (v < 65536) {
        o[0] = 'M';
        o[1] = (unsigned char)v;
        o[2] = (unsigned char)(v >> 8);
        n = 3;
    } else {
        o[0] = 'J';
        for (int i = 0; i < 4; i++)
            o[1 + i] = (unsigned char)(v >> 8 * i);
        n = 5;
    }
    pk_put(w, o, n);
}

static const char *storage_name(tokvec_dtype dt)
{
    switch (dt) {
    case TOKVEC_F16:
        return "HalfStorage";
    case TOKVEC_BF16:
        return "BFloat16Storage";
    default:
        return "FloatStorage";
    }
}

/* torch._utils._rebuild_tensor_v2(storage, 0, (rows, cols), (cols, 1),
 * False, OrderedDict()), the storage a persistent id. */
static void pickle_tensor(pk *w, int64_t rows, int64_t cols, tokvec_dtype dt)
{
    w->n = 0;
    w->memo = 0;
    pk_put(w, "\x80\x02", 2); /* PROTO 2 */
    pk_global(w, "torch._utils", "_rebuild_tensor_v2");
    pk_op(w, '(');
    pk_op(w, '(');
    pk_str(w, "storage");
    pk_global(w, "torch", storage_name(dt));
    pk_str(w, "0");
    pk_str(w, "cpu");
    int vector = rows == TV_TORCH_VECTOR; /* (cols,), stride (1,) */
    pk_int(w, vector ? cols : rows * cols);
    pk_op(w, 't');
    pk_memo(w);
    pk_op(w, 'Q'); /* BINPERSID */
    pk_int(w, 0);  /* storage offset */
    if (!vector)
        pk_int(w, rows);
    pk_int(w, cols);
    pk_op(w, vector ? 0x85 : 0x86); /* TUPLE1, TUPLE2 */
    pk_memo(w);
    if (!vector)
        pk_int(w, cols);
    pk_int(w, 1);
    pk_op(w, vector ? 0x85 : 0x86);
    pk_memo(w);
    pk_op(w, 0x89); /* NEWFALSE: requires_grad */
    pk_global(w, "collections", "OrderedDict");
    pk_op(w, ')');
    pk_op(w, 'R');
    pk_memo(w);
    pk_op(w, 't');
    pk_memo(w);
    pk_op(w, 'R');
    pk_memo(w);
    pk_op(w, '.');
}

/* ---- zip --------------------------------------------------------------- */

enum { NREC = 4, LOCAL_HDR = 30, CENTRAL_HDR = 46, EOCD = 22, ALIGN = 64 };
enum { REC_PKL, REC_BYTEORDER, REC_DATA, REC_VERSION };
static const char *const rec_name[NREC] = {"archive/data.pkl",
                                           "archive/byteorder",
                                           "archive/data/0",
                                           "archive/version"};

typedef struct rec {
    size_t hdr, pad, data, len; /* header offset, FB padding, data offset */
} rec;

typedef struct plan {
    rec r[NREC];
    size_t central, central_len, size;
} plan;

/* Bytes of "Z" after the 4-byte FB extra header so the data that follows
 * starts at a multiple of ALIGN (PyTorch's getPadding, without zip64). */
static size_t fb_pad(size_t cursor, size_t name_len)
{
    size_t start = cursor + LOCAL_HDR + name_len + 4;
    return (ALIGN - start % ALIGN) % ALIGN;
}

/* 0xFFFFFFFF in a size or offset field means zip64: stay below. */
static const uint64_t ZIP_LIM = UINT32_MAX - 1;

/* The data record's size, or 0 when the shape is empty or too large (so
 * rows * cols < 2^31: every integer in data.pkl fits BININT). */
static uint64_t data_size(int64_t rows, int64_t cols, tokvec_dtype dt)
{
    if (rows == TV_TORCH_VECTOR) /* 1-D: (cols,) */
        rows = 1;
    if (rows <= 0 || cols <= 0 || (uint64_t)rows > ZIP_LIM ||
        (uint64_t)cols > ZIP_LIM / (uint64_t)rows)
        return 0;
    uint64_t data = (uint64_t)rows * (uint64_t)cols * tokvec_dtype_size(dt);
    return data > ZIP_LIM ? 0 : data;
}

static int make_plan(int64_t rows, int64_t cols, tokvec_dtype dt,
                     size_t pkl_len, plan *p)
{
    const uint64_t lim = ZIP_LIM;
    uint64_t data = data_size(rows, cols, dt);
    if (data == 0)
        return -1;
    size_t len[NREC] = {pkl_len, 6, (size_t)data, 2};
    uint64_t cur = 0;
    for (int i = 0; i < NREC; i++) {
        size_t nl = strlen(rec_name[i]);
        p->r[i].hdr = (size_t)cur;
        p->r[i].pad = fb_pad((size_t)cur, nl);
        p->r[i].data = (size_t)cur + LOCAL_HDR + nl + 4 + p->r[i].pad;
        p->r[i].len = len[i];
        cur = (uint64_t)p->r[i].data + len[i];
        if (cur > lim)
            return -1;
    }
    p->central = (size_t)cur;
    p->central_len = 0;
    for (int i = 0; i < NREC; i++)
        p->central_len += CENTRAL_HDR + strlen(rec_name[i]);
    cur += p->central_len + EOCD;
    if (cur > lim)
        return -1;
    p->size = (size_t)cur;
    return 0;
}

int tv_torchsave_plan(int64_t rows, int64_t cols, tokvec_dtype dt,
                      tv_torchsave_layout *out)
{
    pk w;
    plan p;
    if (data_size(rows, cols, dt) == 0)
        return -1;
    pickle_tensor(&w, rows, cols, dt);
    if (make_plan(rows, cols, dt, w.n, &p) < 0)
        return -1;
    out->size = p.size;
    out->data_offset = p.r[REC_DATA].data;
    out->data_bytes = p.r[REC_DATA].len;
    return 0;
}

size_t tv_torchsave_finish(void *buf, int64_t rows, int64_t cols,
                           tokvec_dtype dt)
{
    unsigned char *b = buf, *o;
    pk w;
    plan p;
    uint32_t crc[NREC];
    pickle_tensor(&w, rows, cols, dt);
    int rc = make_plan(rows, cols, dt, w.n, &p);
    assert(rc == 0); /* the caller's plan succeeded */
    (void)rc;
    memcpy(b + p.r[REC_PKL].data, w.b, w.n);
    memcpy(b + p.r[REC_BYTEORDER].data, "little", 6);
    memcpy(b + p.r[REC_VERSION].data, "3\n", 2);
    for (int i = 0; i < NREC; i++) {
        size_t nl = strlen(rec_name[i]);
        crc[i] = tv_crc32(0, b + p.r[i].data, p.r[i].len);
        o = tv_zip_le32(b + p.r[i].hdr, 0x04034b50);
        o = tv_zip_common(o, crc[i], p.r[i].len, nl);
        o = tv_zip_le16(o, (unsigned)(4 + p.r[i].pad));
        memcpy(o, rec_name[i], nl);
        o += nl;
        o = tv_zip_le16(o, 0x4246); /* "FB" */
        o = tv_zip_le16(o, (unsigned)p.r[i].pad);
        memset(o, 'Z', p.r[i].pad);
    }
    o = b + p.central;
    for (int i = 0; i < NREC; i++) {
        size_t nl = strlen(rec_name[i]);
        o = tv_zip_le32(o, 0x02014b50);
        o = tv_zip_le16(o, 20); /* made by: version 2.0 */
        o = tv_zip_common(o, crc[i], p.r[i].len, nl);
        o = tv_zip_le16(o, 0); /* extra */
        o = tv_zip_le16(o, 0); /* comment */
        o = tv_zip_le16(o, 0); /* disk */
        o = tv_zip_le16(o, 0); /* internal attributes */
        o = tv_zip_le32(o, 0); /* external attributes */
        o = tv_zip_le32(o, (uint32_t)p.r[i].hdr);
        memcpy(o, rec_name[i], nl);
        o += nl;
    }
    o = tv_zip_le32(o, 0x06054b50);
    o = tv_zip_le16(o, 0);
    o = tv_zip_le16(o, 0);
    o = tv_zip_le16(o, NREC);
    o = tv_zip_le16(o, NREC);
    o = tv_zip_le32(o, (uint32_t)p.central_len);
    o = tv_zip_le32(o, (uint32_t)p.central);
    o = tv_zip_le16(o, 0);
    assert((size_t)(o - b) == p.size);
    return p.size;
}

size_t tv_torchsave(void *buf, const void *data, int64_t rows, int64_t cols,
                    tokvec_dtype dt)
{
    tv_torchsave_layout l;
    int rc = tv_torchsave_plan(rows, cols, dt, &l);
    assert(rc == 0);
    (void)rc;
    memcpy((char *)buf + l.data_offset, data, l.data_bytes);
    return tv_torchsave_finish(buf, rows, cols, dt);
}

/* ---- the /embed body --------------------------------------------------- */

size_t tv_embed_torch_json_bound(int64_t B, int64_t S, int64_t D,
                                 tokvec_dtype dt)
{
    tv_torchsave_layout l;
    if (B <= 0 || tv_torchsave_plan(S, D, dt, &l) < 0)
        return 0;
    size_t b64 = (l.size + 2) / 3 * 4 + 3; /* the string, quotes, comma */
    if ((uint64_t)B > (SIZE_MAX - 128) / b64)
        return 0;
    return 128 + (size_t)B * b64; /* 128: the keys, 3 numbers, dtype */
}

size_t tv_embed_torch_json(char *buf, const void *x, int64_t B, int64_t S,
                           int64_t D, tokvec_dtype dt, void *scratch)
{
    tv_torchsave_layout l;
    int rc = tv_torchsave_plan(S, D, dt, &l);
    assert(rc == 0 && B > 0);
    (void)rc;
    char *p = buf;
    if (S == TV_TORCH_VECTOR)
        p += sprintf(p,
                     "{\"shape\":[%lld,%lld],\"dtype\":\"%s\","
                     "\"embeddings\":[",
                     (long long)B, (long long)D, tokvec_dtype_numpy_name(dt));
    else
        p += sprintf(p,
                     "{\"shape\":[%lld,%lld,%lld],\"dtype\":\"%s\","
                     "\"embeddings\":[",
                     (long long)B, (long long)S, (long long)D,
                     tokvec_dtype_numpy_name(dt));
    for (int64_t b = 0; b < B; b++) {
        tv_torchsave(scratch, (const char *)x + (size_t)b * l.data_bytes, S, D,
                     dt);
        if (b)
            *p++ = ',';
        *p++ = '"';
        p += tv_base64(p, scratch, l.size);
        *p++ = '"';
    }
    *p++ = ']';
    *p++ = '}';
    return (size_t)(p - buf);
}
