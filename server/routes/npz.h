/* npz.h -- the application/x-npz answer of POST /embed: one uncompressed
 * ZIP archive of .npy members, what numpy.savez writes and numpy.load
 * reads (contract section 8, "Answers with ids").
 *
 * Two layers:
 *  - tv_zip: a small, exact writer of a stored ZIP (APPNOTE 6.3): local
 *    headers, central directory, end record; version 2.0, no flags, no
 *    compression, no data descriptors, 1980-01-01 00:00, each member's
 *    CRC-32. Each member's bytes start at a multiple of 64, padded by an
 *    extra field 0xD935 (Android's zipalign: the alignment, then zeros) in
 *    the local header; the central directory has none. No ZIP64: planning
 *    refuses an archive whose offsets or sizes would reach 0xFFFFFFFF
 *    (4 GiB), which the server answers 413.
 *  - tv_npz: the members of one /embed answer, in this order:
 *      embeddings.npy      (B, S, D) -- pooled: (B, D) -- in the answer's
 *                          dtype ('<f4', '<f2', bfloat16 as '<u2' bits)
 *      input_ids.npy       int64 (B, S), whenever an input was a text
 *                          (not pooled: those ids are ragged, in JSON)
 *      target_ids.npy      int64 (B, S), max_length windows
 *      attention_mask.npy  int64 (B, S), a padded batch: 1 for the row's
 *                          real tokens (q->lens), 0 for pad_id
 *    Zero copy: plan, let the caller write the embeddings' elements at
 *    tv_npz.rows (64-aligned; tokvec_embed writes them there), then
 *    tv_npz_finish writes every other byte.
 *
 * What must hold: the layout is a pure function of the request, the
 * shape and the dtype, so plan and finish agree on every offset; nothing
 * is written past tv_zip.size.
 *
 * Pure functions; any thread (tv_crc32's tables: pthread_once).
 */
#ifndef TV_NPZ_H
#define TV_NPZ_H

#include <stddef.h>
#include <stdint.h>

#include "request.h"
#include "tokvec_float.h"

enum { TV_ZIP_MAX = 4 };

typedef struct tv_zip_member {
    const char *name; /* ASCII, static: set before tv_zip_plan */
    size_t len;       /* the member's bytes: set before tv_zip_plan */
    size_t hdr;       /* planned: its local header's offset */
    size_t data;      /* planned: its bytes' offset (a multiple of 64) */
} tv_zip_member;

typedef struct tv_zip {
    int n; /* members, 1..TV_ZIP_MAX */
    tv_zip_member m[TV_ZIP_MAX];
    size_t central;     /* the central directory's offset */
    size_t central_len; /* its bytes */
    size_t size;        /* the whole archive */
} tv_zip;

/* Lays out z's n members (names and lens set) in order. 0, or -1 when n
 * is out of range or an offset or size would reach 0xFFFFFFFF. */
int tv_zip_plan(tv_zip *z);

/* With every member's bytes in place at m[i].data: their CRC-32s, the
 * local headers (with their padding), the central directory and the end
 * record into buf (z->size bytes). Returns z->size. */
size_t tv_zip_finish(const tv_zip *z, void *buf);

typedef struct tv_npz {
    tv_zip zip;
    size_t rows;       /* where the embeddings' elements go (64-aligned) */
    size_t rows_bytes; /* their bytes */
} tv_npz;

/* The npz answer to q (resolved: ids, batch, seq; lens, targets, has_text,
 * pool as they are) with embeddings of shape (q->batch, S, D) in dt, S
 * TV_VECTORS for (B, D). 0, or -1 when the archive would reach 4 GiB. */
int tv_npz_plan(const tv_request *q, int64_t S, int64_t D, tokvec_dtype dt,
                tv_npz *out);

/* The embeddings' elements at p->rows already: writes the rest (the npy
 * headers, the int64 arrays, the zip around them) into buf, p->zip.size
 * bytes; returns that size. q, S, D, dt: as planned. */
size_t tv_npz_finish(void *buf, const tv_request *q, int64_t S, int64_t D,
                     tokvec_dtype dt, const tv_npz *p);

#endif
