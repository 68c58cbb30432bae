/* error.c -- tokvec_strerror() and tokvec_errname() for the codes in
 * tokvec_error.h, plus the -errno codes system calls produce; and
 * tokvec__vnote (internal.h), the "path: what" line that table and
 * tokenizer failures leave in their caller's error buffer.
 * Pure functions; any thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "tokvec_error.h"

#define ERRORS(X)                                                            \
    X(TOKVEC_E_FORMAT, "not a safetensors, .npy or GGUF file")               \
    X(TOKVEC_E_TRUNCATED, "file is truncated")                               \
    X(TOKVEC_E_HEADER_SIZE, "header length is beyond the file or the limit") \
    X(TOKVEC_E_HEADER_JSON, "header is not valid safetensors JSON")          \
    X(TOKVEC_E_OFFSETS, "tensor data offsets are out of range")              \
    X(TOKVEC_E_SIZE, "tensor byte size does not match its shape and dtype")  \
    X(TOKVEC_E_RANK, "embedding tensor is not 2-D")                          \
    X(TOKVEC_E_DTYPE, "unknown or unsupported dtype")                        \
    X(TOKVEC_E_MISMATCH, "token and position tables differ in dim or dtype") \
    X(TOKVEC_E_NO_TENSOR, "tensor not found in file")                        \
    X(TOKVEC_E_EMPTY, "table has no rows or no columns")                     \
    X(TOKVEC_E_NPY, "bad .npy header")                                       \
    X(TOKVEC_E_TOKEN_RANGE, "token id out of range")                         \
    X(TOKVEC_E_POSITION_RANGE, "position beyond the context length")         \
    X(TOKVEC_E_NO_POSITIONS, "table has no position embeddings")             \
    X(TOKVEC_E_INVAL, "invalid argument")                                    \
    X(TOKVEC_E_TOO_LARGE, "size too large")                                  \
    X(TOKVEC_E_METADATA, "bad __metadata__ value")                           \
    X(TOKVEC_E_SHARD_PATH, "shard path is outside the index's directory")    \
    X(TOKVEC_E_GGUF, "bad GGUF header or metadata")                          \
    X(TOKVEC_E_TOKENIZER, "bad tokenizer file")                              \
    X(TOKVEC_E_MODEL, "bad model directory")

const char *tokvec_strerror(int code)
{
    if (code == 0)
        return "success";
    switch (code) {
#define X(c, s) \
    case c:     \
        return s;
        ERRORS(X)
#undef X
    }
    if (code < 0 && code > -4096)
        return strerror(-code);
    return "unknown error";
}

const char *tokvec_errname(int code)
{
    switch (code) {
    case 0:
        return "TOKVEC_OK";
#define X(c, s) \
    case c:     \
        return #c;
        ERRORS(X)
#undef X
    }
    return "errno";
}

void tokvec__vnote(char *buf, size_t len, const char *path, const char *fmt,
                   va_list ap)
{
    int n = snprintf(buf, len, "%s: ", path);
    if (n >= 0 && (size_t)n < len)
        vsnprintf(buf + n, len - (size_t)n, fmt, ap);
}
