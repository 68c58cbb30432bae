/* tokvec_quant.h -- ggml's block-quantized row formats, dequantized to
 * float32 exactly as ggml's reference dequantize_row_* does.
 *
 * A quantized row of n values is n / B blocks of S bytes (B and S per
 * type, below); every block holds its own scale(s) as float16. Values are
 * the same float32 bits ggml's C reference gives: each product and sum
 * rounded once, in ggml's order, never fused (tokvec builds with
 * -ffp-contract=off).
 *
 *   type  B    S    value                                  (q: the quant)
 *   Q8_0  32   34   d * q, q int8
 *   Q4_0  32   18   (q - 8) * d, q 4 bits
 *   Q4_1  32   20   q * d + m
 *   Q5_0  32   22   (q - 16) * d, q 5 bits (the 5th in qh)
 *   Q5_1  32   24   q * d + m, q 5 bits
 *   Q4_K  256  144  (d * sc) * q - (dmin * m), 6-bit sc and m per 32
 *   Q5_K  256  176  as Q4_K with a 5th bit from qh
 *   Q6_K  256  210  (d * sc) * (q - 32), int8 sc per 16, q 6 bits
 *
 * Pure functions: any thread.
 */
#ifndef TOKVEC_QUANT_H
#define TOKVEC_QUANT_H

#include <stddef.h>

/* The values are ggml's type ids (GGUF tensor types). */
typedef enum {
    TOKVEC_Q_NONE = 0, /* not quantized */
    TOKVEC_Q4_0 = 2,
    TOKVEC_Q4_1 = 3,
    TOKVEC_Q5_0 = 6,
    TOKVEC_Q5_1 = 7,
    TOKVEC_Q8_0 = 8,
    TOKVEC_Q4_K = 12,
    TOKVEC_Q5_K = 13,
    TOKVEC_Q6_K = 14,
} tokvec_qtype;

/* "Q8_0", ...; NULL for TOKVEC_Q_NONE and anything else. */
const char *tokvec_qtype_name(tokvec_qtype q);
/* Parses one of those names; TOKVEC_E_INVAL for anything else. */
int tokvec_qtype_parse(const char *s, tokvec_qtype *out);
/* Values (B) and bytes (S) per block; 0 and TOKVEC_E_INVAL if q is not a
 * quantized type tokvec reads. */
int tokvec_qtype_block(tokvec_qtype q, size_t *values, size_t *bytes);

/* Writes the n values held by the blocks at src (any alignment) to dst.
 * n must be a multiple of the type's B (asserted). */
void tokvec_dequantize(tokvec_qtype q, const void *src, float *dst, size_t n);

#endif
