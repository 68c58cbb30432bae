/* tokvec_init.h -- PyTorch-compatible random initialisation, bit-exact.
 *
 * torch.manual_seed(S); nn.Embedding(V, D) is reproduced word for word:
 * MT19937 seeded with the low 32 bits of S, normal_ by the float32 AVX2
 * Box-Muller "vector path" for n >= 16 values and the double "small path"
 * with its cached second value for n < 16 (see
 * shared/docs/torch-compatible-init.md). Consecutive tables drawn from one
 * generator continue its stream exactly as torch's global generator does.
 *
 * A generator is owned by one thread at a time. Build with
 * -ffp-contract=off and never -ffast-math: the bits depend on it.
 */
#ifndef TOKVEC_INIT_H
#define TOKVEC_INIT_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"

typedef struct tokvec_rng tokvec_rng;

#define TOKVEC_NO_PADDING INT64_MIN

/* New generator seeded as torch.manual_seed(seed) (seed is the 64-bit two's
 * complement of torch's argument). Free with tokvec_rng_free. */
int tokvec_rng_new(uint64_t seed, tokvec_rng **out) TOKVEC_MUST_CHECK;
void tokvec_rng_free(tokvec_rng *rng); /* NULL is a no-op */

/* Re-seeds and clears the small-path cache, as torch.manual_seed does. */
void tokvec_rng_seed(tokvec_rng *rng, uint64_t seed);

/* Next tempered MT19937 output. */
uint32_t tokvec_rng_u32(tokvec_rng *rng);

/* tensor.normal_(mean, std) on a contiguous float32 tensor of n values. */
void tokvec_rng_normal(tokvec_rng *rng, float *out, size_t n, float mean,
                       float std);

/* nn.Embedding(rows, dim, padding_idx): normal_(0, 1) over rows*dim values,
 * then row padding_idx (negative counts from the end, TOKVEC_NO_PADDING for
 * none) set to +0.0. TOKVEC_E_INVAL for a padding_idx outside [-rows, rows).
 */
int tokvec_init_embedding(tokvec_rng *rng, float *out, int64_t rows,
                          int64_t dim, int64_t padding_idx) TOKVEC_MUST_CHECK;

#endif
