/* tokvec_similar.h -- nearest tokens of a table by cosine similarity.
 *
 * A tokvec_similar is an index over one open tokvec_table: the inverse
 * L2 norm of every token row, computed in double precision once, on the
 * first query (open itself reads no row, so opening one beside every
 * served table costs nothing until somebody asks). A query is a full scan
 * of the token table -- one dot product per row, in float32 lanes the
 * compiler vectorizes -- keeping the best k in a small heap.
 *
 * Scores: cos(q, row) = (q / |q|) . row / |row|, dot product in float32
 * (redone in double when it overflows), norms in double; a row holding NaN
 * or infinity scores -1 with every query and cannot be a query itself; a
 * row of norm 0 scores 0, and so does every row for a query of norm 0
 * (then the answer is ids 0 .. k-1: all ties); a score is clamped to
 * [-1, 1] (rounding can step past 1 by an ulp), NaN counts as -1, -0 is
 * written 0.
 * Order: score descending; exactly equal scores by id ascending. So the
 * result is a function of the table and the query alone.
 *
 * Threads: the handle is read-only once its norms exist; any number of
 * threads may query it at once (the first queries wait on a mutex while
 * one of them computes the norms). The table must stay open until
 * tokvec_similar_close; the handle never changes it.
 */
#ifndef TOKVEC_SIMILAR_H
#define TOKVEC_SIMILAR_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"
#include "tokvec_table.h"

typedef struct tokvec_similar tokvec_similar;

typedef struct tokvec_neighbor {
    int64_t id;
    float score;
} tokvec_neighbor;

/* A handle over t (borrowed; must outlive the handle). Reads no row.
 * 0, or -ENOMEM. */
int tokvec_similar_open(const tokvec_table *t,
                        tokvec_similar **out) TOKVEC_MUST_CHECK;

/* Frees the handle (not the table). NULL is a no-op. */
void tokvec_similar_close(tokvec_similar *s);

/* Computes the row norms now if no query has yet (a full read of the
 * table). 0, or -ENOMEM. Optional: the first query does it otherwise. */
int tokvec_similar_prepare(tokvec_similar *s);

/* The k rows nearest to the dim float32 values q, best first, into
 * out[0 .. min(k, vocab_size) - 1]. TOKVEC_E_INVAL when k is 0 or a
 * value of q is not finite; -ENOMEM. */
int tokvec_similar_vector(tokvec_similar *s, const float *q, size_t k,
                          tokvec_neighbor *out) TOKVEC_MUST_CHECK;

/* The same with token row id as the query (the token itself scores 1,
 * up to rounding, and comes first unless another row points the same
 * way with a smaller id; a row of zeros scores 0 with every row, so its
 * answer is ids 0 .. k-1). TOKVEC_E_TOKEN_RANGE for a bad id,
 * TOKVEC_E_INVAL when the row holds NaN or infinity. Rows are read as
 * stored: widened from float16/bfloat16, dequantized from GGUF quant
 * types, exactly as tokvec_row_to_f32 gives them. */
int tokvec_similar_token(tokvec_similar *s, int64_t id, size_t k,
                         tokvec_neighbor *out) TOKVEC_MUST_CHECK;

#endif
