/* table_kinds.h -- one small table of every kind tokvec serves, for the
 * fuzz targets whose input picks the table (fuzz_similar.c, fuzz_embed.c):
 * safetensors F32, F16 and BF16 with learned positions, F32 sinusoidal,
 * BF16 without positions; GGUF with each quant type Q8_0 Q4_0 Q4_1 Q5_0
 * Q5_1 Q4_K Q5_K Q6_K as the token table over a position table of another
 * type (the token tensor first in some files, last -- ending the file --
 * in others); F16 tokens over F32 positions (mixed dtypes); Q4_0 tokens
 * alone (no positions, the tensor ending the file).
 *
 * Every table has TK_CTX positions (learned or sinusoidal) unless it has
 * none; dim is 4 for float tables, 32 for the 32-value block types, 256
 * for the K types. Row TK_ZERO_ROW is all zeros, row TK_BAD_ROW holds inf
 * or NaN (every kind: a float16 scale of inf in the quantized ones); the
 * other rows are deterministic and finite. The files are written to /tmp,
 * opened and unlinked (the mapping stays).
 */
#ifndef TOKVEC_FUZZ_TABLE_KINDS_H
#define TOKVEC_FUZZ_TABLE_KINDS_H

#include <stdint.h>

#include "tokvec_table.h"

enum { TK_CTX = 8, TK_ZERO_ROW = 7, TK_BAD_ROW = 8 };

/* The number of kinds; a kind is 0 .. tk_count() - 1. */
int tk_count(void);

/* A short name of kind k ("gguf Q4_K tokens, Q6_K positions"). */
const char *tk_name(int k);

/* Table kind k with vocab rows (vocab > TK_BAD_ROW), made on first use
 * and kept for the process (one per kind: the vocab of the first call).
 * Aborts when it cannot be made. */
const tokvec_table *tk_table(int k, int64_t vocab);

#endif
