/* tokvec_embed.h -- the lookup: out[b][s] = tok[ids[b][s]] + pos[start + s].
 *
 * One float32 addition per element, token value first: the same bits as
 * PyTorch's tok_emb(ids) + pos_emb(arange(start, start + S)). f16/bf16 rows
 * are widened exactly before the addition. A table without positions, or
 * TOKVEC_EMBED_NO_POSITIONS, gives token rows alone.
 *
 * Thread safety: reads the table only; any number of threads may embed from
 * one table at once into distinct output buffers.
 */
#ifndef TOKVEC_EMBED_H
#define TOKVEC_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"
#include "tokvec_table.h"

enum {
    TOKVEC_EMBED_NO_POSITIONS = 1u << 0, /* token rows only */
    TOKVEC_EMBED_OUT_F16 = 1u << 1,      /* write float16 (RNE) */
    TOKVEC_EMBED_OUT_BF16 = 1u << 2,     /* write bfloat16 (RNE) */
};

/* Which input was wrong, filled by tokvec_embed_check (all -1 on success
 * and for errors other than these two):
 *  TOKVEC_E_TOKEN_RANGE     batch = b, position = s, id = ids[b][s] of the
 *                           first bad id in row-major order;
 *  TOKVEC_E_POSITION_RANGE  batch = -1 (every sequence is at fault),
 *                           position = the index s within the sequence of
 *                           the first position outside [0, context_length)
 *                           (0 when start_position is outside already),
 *                           id = that position, start_position + s. */
typedef struct tokvec_embed_fault {
    int64_t batch;    /* batch index, -1 if not about one id */
    int64_t position; /* index within the sequence (s), -1 if none */
    int64_t id;       /* the offending id; for position errors the
                         first position outside the context */
} tokvec_embed_fault;

/* Validates a request without writing anything: B >= 1, S >= 1, B*S and
 * the output size fit, every id in [0, vocab_size), and (with positions)
 * 0 <= start and start + S <= context_length. Returns 0 or
 * TOKVEC_E_TOKEN_RANGE (fault names the first bad id in row-major order),
 * TOKVEC_E_POSITION_RANGE, TOKVEC_E_INVAL, TOKVEC_E_TOO_LARGE, or
 * TOKVEC_E_NO_POSITIONS when positions are used and the table was opened
 * with TOKVEC_TABLE_SKIP_SINUSOIDAL (it has none computed). fault may be
 * NULL. */
int tokvec_embed_check(const tokvec_table *t, const int64_t *ids, int64_t B,
                       int64_t S, int64_t start_position, unsigned flags,
                       tokvec_embed_fault *fault) TOKVEC_MUST_CHECK;

/* Bytes tokvec_embed writes for this shape and flags (0 on overflow). */
size_t tokvec_embed_size(const tokvec_table *t, int64_t B, int64_t S,
                         unsigned flags);

/* Fills out (tokvec_embed_size bytes, any alignment for f16/bf16, float
 * aligned for float32) in C order (B, S, dim). Checks exactly what
 * tokvec_embed_check checks first and writes nothing on error. */
int tokvec_embed(const tokvec_table *t, const int64_t *ids, int64_t B,
                 int64_t S, int64_t start_position, unsigned flags,
                 void *out) TOKVEC_MUST_CHECK;

/* tokvec_embed_mean flags */
enum {
    TOKVEC_MEAN_NORMALIZE = 1u << 0, /* v / (|v| + 1e-32) after the mean */
    TOKVEC_MEAN_POSITIONS = 1u << 1, /* rows are tok + pos[start + i], as
                                      * tokvec_embed gives them */
};

/* The sentence vector of n ids: out[0..k) = the mean of their token rows
 * (tokvec_table_token_row's values, Model2Vec's weights and mapping
 * included; with TOKVEC_MEAN_POSITIONS and a table with positions, the
 * float32 sums tok + pos[start_position + i] that tokvec_embed gives),
 * its first k components (1 <= k <= dim),
 * then with TOKVEC_MEAN_NORMALIZE divided by (their Euclidean norm +
 * 1e-32), as Model2Vec does (sentence-transformers' Normalize divides by
 * max(norm, 1e-12): the same for every vector but zero, which both leave
 * zero). n == 0 gives zeros. How it sums: every float32 row value is added
 * into a double accumulator, id by id in order; the mean is that sum / n
 * in double, the norm the square root of the double sum of the means'
 * squares; each component is rounded to float32 once, at the end. So the
 * answer is within an ulp or two of a float64 reference (numpy's mean of
 * the rows in float64). 0, TOKVEC_E_INVAL (k, n), TOKVEC_E_TOKEN_RANGE
 * (an id outside [0, vocab_size)), TOKVEC_E_POSITION_RANGE, or -ENOMEM;
 * nothing written on error. Any thread. */
int tokvec_embed_mean(const tokvec_table *t, const int64_t *ids, int64_t n,
                      int64_t start_position, int64_t k, unsigned flags,
                      float *out) TOKVEC_MUST_CHECK;

#endif
