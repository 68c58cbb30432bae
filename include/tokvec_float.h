/* tokvec_float.h -- float dtypes: exact widening, round-to-nearest-even
 * narrowing, and shortest round-trip decimal formatting of float32.
 *
 * All functions are pure and thread-safe.
 */
#ifndef TOKVEC_FLOAT_H
#define TOKVEC_FLOAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum {
    TOKVEC_F32 = 0,
    TOKVEC_F16 = 1,
    TOKVEC_BF16 = 2,
    /* Stored rows only (Model2Vec's int8 tables, used as stored, no
     * scale): widened exactly, never an output (tokvec_narrow asserts),
     * never parsed by tokvec_dtype_parse. */
    TOKVEC_I8 = 3,
} tokvec_dtype;

/* Bytes per element: 4, 2, 2, 1. */
size_t tokvec_dtype_size(tokvec_dtype d);
/* safetensors spelling: "F32", "F16", "BF16", "I8". */
const char *tokvec_dtype_name(tokvec_dtype d);
/* numpy/HTTP spelling: "float32", "float16", "bfloat16", "int8". */
const char *tokvec_dtype_numpy_name(tokvec_dtype d);
/* Accepts f32|float32|F32, f16|float16|F16, bf16|bfloat16|BF16. */
int tokvec_dtype_parse(const char *s, tokvec_dtype *out);

/* The bits of a float32 and back (no conversion). */
static inline uint32_t tokvec_f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static inline float tokvec_f32_from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Exact widening (every f16/bf16 value, NaN payloads kept, is a float32). */
float tokvec_f16_to_f32(uint16_t h);
float tokvec_bf16_to_f32(uint16_t b);
/* Narrowing with round to nearest, ties to even; overflow gives +-inf,
 * NaN stays NaN (quiet). */
uint16_t tokvec_f32_to_f16(float f);
uint16_t tokvec_f32_to_bf16(float f);

/* Bulk versions; src and dst may be unaligned. */
void tokvec_widen(tokvec_dtype from, const void *src, float *dst, size_t n);
void tokvec_narrow(tokvec_dtype to, const float *src, void *dst, size_t n);

/* Longest text tokvec_f32_format can write, without the NUL. */
#define TOKVEC_F32_MAXLEN 24

/* Writes the shortest decimal that reads back as exactly v, spelled as
 * numpy's repr of a numpy.float32 does: positional for 1e-4 <= |v| < 1e16
 * and zero ("0.3373702", "1.0", "-0.0", "123456790.0"), scientific
 * otherwise ("1e-05", "3.4028235e+38", "1e-45"); "nan", "inf", "-inf" for
 * non-finite values. Writes no NUL; returns the length (<= TOKVEC_F32_MAXLEN).
 * buf must hold TOKVEC_F32_MAXLEN bytes: bytes past the returned length,
 * within those, may be overwritten as scratch. */
size_t tokvec_f32_format(float v, char *buf);

/* The n values of x as tokvec_f32_format writes them, separated by ',',
 * non-finite values as "null" (a JSON array's inside); no NUL. Returns the
 * length. buf must hold n * (TOKVEC_F32_MAXLEN + 1) bytes; bytes past the
 * returned length, within those, may be overwritten as scratch. */
size_t tokvec_f32_format_json(char *buf, const float *x, size_t n);
/* The portable path of tokvec_f32_format_json (the same bytes), which it
 * takes on CPUs without AVX-512; for tests and benchmarks. */
size_t tokvec_f32_format_json_scalar(char *buf, const float *x, size_t n);

#endif
