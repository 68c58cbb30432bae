/* embed_plan.h -- private to the HTTP front end: the reply of POST /embed
 * without the HTTP around it. Sizing it before anything is computed
 * (embed_plan_reply) and writing it into buffers of exactly those sizes
 * (embed_write). embed_job.c runs them for the server; the fuzz target
 * tests/fuzz/fuzz_embed.c runs them alone (no MHD, no pool). See
 * embed_plan.c.
 */
#ifndef TV_EMBED_PLAN_H
#define TV_EMBED_PLAN_H

#include <stddef.h>

#include "encode.h"
#include "request.h"
#include "tokvec_table.h"

/* The sizes of one reply, known before anything is computed: both what the
 * job reserves of max_inflight_bytes and what it allocates come from here
 * (embed_plan_reply), so the two cannot disagree. */
typedef struct embed_plan {
    unsigned flags; /* for tokvec_embed: positions, output dtype */
    size_t rows;    /* the bytes tokvec_embed writes (tokvec_embed_size) */
    size_t scratch; /* JSON: float32 rows before encoding (= rows); torch:
                     * the rows (rounded up to 64) + archive; else 0 */
    size_t archive; /* torch: one sequence's torch.save archive; else 0 */
    size_t header;  /* npy: the header before the rows; npz: where the
                     * rows go in the archive (npz.h); else 0 */
    size_t body;    /* the reply's buffer: JSON bound, header + rows, or
                     * the npz archive */
    size_t reserve; /* scratch + body: all the job allocates */
    size_t least;   /* the fewest bytes the job can hold: = reserve but for
                     * JSON floats, where the body is a bound and `least`
                     * counts the shortest encoding (one digit and a
                     * separator per float) */
} embed_plan;

/* Sizes the reply to request q (checked against t) in format fmt. 0, or
 * -1 when a size does not fit in size_t (413). Pure; any thread. */
int embed_plan_reply(const tokvec_table *t, const tv_request *q, tv_format fmt,
                     embed_plan *out);

/* Writes the reply to q (checked against t, planned as p for fmt) into out,
 * p->body bytes: binary rows in place after the npy header (npz: in the
 * archive's embeddings member, then the rest of it), JSON through scratch
 * (p->scratch bytes; unused for binary formats), with
 * "input_ids"/"target_ids" for texts and "attention_mask" for a padded
 * batch. Returns the bytes written (at most
 * p->body: TV_WROTE aborts past it), or 0 when tokvec_embed fails. Any
 * thread. */
size_t embed_write(const tokvec_table *t, const tv_request *q, tv_format fmt,
                   const embed_plan *p, char *out, void *scratch);

/* Large replies written as they are sent (embed_job.c, "Large replies"):
 * raw and npy answers to id or text requests (not pooled) are made a
 * chunk at a time, each chunk right before it goes to the socket, instead
 * of whole into a buffer first. The same bytes as embed_write. */
int embed_plan_chunked(const tv_request *q, tv_format fmt);

/* What a chunk of such a reply is made from, the request's own state left
 * behind (the reply may outlive nothing of it): the ids (the caller's
 * copy, batch*seq), the shape, the flags and the npy header. */
typedef struct embed_rows {
    const tokvec_table *t;
    const int64_t *ids;
    int64_t batch, seq, start;
    unsigned flags; /* the plan's (tokvec_embed) */
    size_t row;     /* bytes of one (b, s) row in the answer's dtype */
    size_t header;  /* npy: the header's bytes; raw: 0 */
    size_t body;    /* the plan's body: header + rows */
    char head[TV_NPY_HEADER_MAX];
} embed_rows;

/* Fills r for the reply to q (checked against t, planned as p for fmt,
 * embed_plan_chunked), ids being a copy of q->ids. Any thread. */
void embed_rows_init(embed_rows *r, const tokvec_table *t, const tv_request *q,
                     tv_format fmt, const embed_plan *p, const int64_t *ids);

/* Writes the body's bytes from offset pos on into out, at most max of
 * them: whole rows where one fits (the chunk then ends on a row's end),
 * else part of one made in `tmp` (r->row bytes). Returns the bytes
 * written, > 0 while pos < r->body (TV_WROTE: pos + them <= r->body), or
 * 0 at the end or when tokvec_embed fails. Any thread; r is only read. */
size_t embed_write_range(const embed_rows *r, uint64_t pos, char *out,
                         size_t max, char *tmp);

#endif
