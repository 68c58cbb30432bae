/* encode.c -- response bodies (see encode.h): JSON with shortest
 * round-trip floats written straight into the caller's buffer, base64,
 * .npy headers and JSON error bodies. Sizes are bounded before
 * anything is written. Pure functions; any thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"

void tv_wrote(size_t n, size_t planned, const char *file, int line)
{
    if (n <= planned)
        return;
    fprintf(stderr,
            "fatal %s:%d: a reply body of %zu bytes overran its plan of "
            "%zu bytes\n",
            file, line, n, planned);
    abort();
}

/* JSON string escaping of s into out (bounded); returns bytes written. */
static size_t json_escape(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            /* Non-ASCII is escaped byte-wise as \u00XX: always valid JSON,
             * whatever bytes a message echoes. */
            memcpy(out + n, "\\u00", 4);
            out[n + 4] = hex[c >> 4];
            out[n + 5] = hex[c & 15];
            n += 6;
        } else {
            out[n++] = (char)c;
        }
    }
    return n;
}

size_t tv_error_body(const tv_error *err, char *buf)
{
    size_t n = 0;
    n += (size_t)sprintf(buf, "{\"error\":\"");
    n += json_escape(buf + n, TV_ERROR_BODY_MAX - 64 - n, err->message);
    n += (size_t)sprintf(buf + n, "\",\"error_type\":\"");
    n += json_escape(buf + n, TV_ERROR_BODY_MAX - 4 - n,
                     err->type ? err->type : "error");
    buf[n++] = '"';
    buf[n++] = '}';
    buf[n] = '\0';
    return n;
}

size_t tv_openai_error_body(const tv_error *err, char *buf)
{
    const char *type = err->status == 401   ? "authentication_error"
                       : err->status == 429 ? "rate_limit_error"
                       : err->status >= 500 ? "server_error"
                                            : "invalid_request_error";
    size_t n = (size_t)sprintf(buf, "{\"error\":{\"message\":\"");
    n += json_escape(buf + n, TV_ERROR_BODY_MAX - 160 - n, err->message);
    n += (size_t)sprintf(buf + n, "\",\"type\":\"%s\",\"param\":", type);
    if (err->param)
        n += (size_t)sprintf(buf + n, "\"%.32s\"", err->param);
    else
        n += (size_t)sprintf(buf + n, "null");
    n += (size_t)sprintf(buf + n, ",\"code\":\"");
    n += json_escape(buf + n, TV_ERROR_BODY_MAX - 8 - n,
                     err->type ? err->type : "error");
    n += (size_t)sprintf(buf + n, "\"}}");
    return n;
}

size_t tv_json_floats_bound(size_t n)
{
    if (n > SIZE_MAX / (TOKVEC_F32_MAXLEN + 2))
        return 0;
    return 2 + n * (TOKVEC_F32_MAXLEN + 1);
}

size_t tv_json_floats(char *buf, const float *x, size_t n)
{
    /* the values from buf + 1 take at most n * (TOKVEC_F32_MAXLEN + 1)
     * bytes, scratch included: the bound's 2 + that holds the ']' */
    size_t len = 1 + tokvec_f32_format_json(buf + 1, x, n);
    buf[0] = '[';
    buf[len] = ']';
    return len + 1;
}

#define JSON_HEAD_MAX 128

size_t tv_embed_json_bound(int64_t B, int64_t S, int64_t D, int base64)
{
    uint64_t n;
    if (S == TV_VECTORS) /* (B, D): fewer brackets than (B, 1, D) */
        S = 1;
    if (B < 1 || S < 1 || D < 1 ||
        __builtin_mul_overflow((uint64_t)B, (uint64_t)S, &n) ||
        __builtin_mul_overflow(n, (uint64_t)D, &n) || n > (SIZE_MAX >> 6))
        return 0;
    if (base64) /* 4 characters per 3 bytes, the last group padded */
        return JSON_HEAD_MAX + (n * 4 + 2) / 3 * 4 + 8;
    /* per float: digits + comma; per row/sequence: brackets and commas. */
    return JSON_HEAD_MAX + (size_t)n * (TOKVEC_F32_MAXLEN + 1) +
           (size_t)(B * S) * 3 + (size_t)B * 3 + 8;
}

size_t tv_embed_json(char *buf, const float *x, int64_t B, int64_t S,
                     int64_t D, int base64)
{
    char *p = buf;
    if (S == TV_VECTORS)
        p += sprintf(p,
                     "{\"shape\":[%" PRId64 ",%" PRId64
                     "],\"dtype\":\"float32\",\"embeddings\":",
                     B, D);
    else
        p += sprintf(p,
                     "{\"shape\":[%" PRId64 ",%" PRId64 ",%" PRId64
                     "],\"dtype\":\"float32\",\"embeddings\":",
                     B, S, D);
    if (base64) {
        *p++ = '"';
        p += tv_base64(p, x, (size_t)(B * (S == TV_VECTORS ? 1 : S) * D) * 4);
        *p++ = '"';
    } else if (S == TV_VECTORS) {
        *p++ = '[';
        for (int64_t b = 0; b < B; b++) {
            if (b)
                *p++ = ',';
            p += tv_json_floats(p, x + b * D, (size_t)D);
        }
        *p++ = ']';
    } else {
        *p++ = '[';
        for (int64_t b = 0; b < B; b++) {
            if (b)
                *p++ = ',';
            *p++ = '[';
            for (int64_t s = 0; s < S; s++) {
                if (s)
                    *p++ = ',';
                p += tv_json_floats(p, x + (b * S + s) * D, (size_t)D);
            }
            *p++ = ']';
        }
        *p++ = ']';
    }
    *p++ = '}';
    return (size_t)(p - buf);
}

size_t tv_token_json_bound(int64_t D)
{
    return 48 + tv_json_floats_bound((size_t)D);
}

size_t tv_token_json(char *buf, int64_t id, const float *x, int64_t D)
{
    char *p = buf;
    p += sprintf(p, "{\"id\":%" PRId64 ",\"embedding\":", id);
    p += tv_json_floats(p, x, (size_t)D);
    *p++ = '}';
    return (size_t)(p - buf);
}

size_t tv_base64(char *dst, const void *src, size_t n)
{
    static const char A[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = src;
    char *p = dst;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        p[0] = A[v >> 18];
        p[1] = A[(v >> 12) & 63];
        p[2] = A[(v >> 6) & 63];
        p[3] = A[v & 63];
        p += 4;
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        p[0] = A[v >> 18];
        p[1] = A[(v >> 12) & 63];
        p[2] = p[3] = '=';
        p += 4;
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        p[0] = A[v >> 18];
        p[1] = A[(v >> 12) & 63];
        p[2] = A[(v >> 6) & 63];
        p[3] = '=';
        p += 4;
    }
    return (size_t)(p - dst);
}

size_t tv_npy_header(char *buf, tokvec_dtype dtype, int64_t B, int64_t S,
                     int64_t D)
{
    /* bfloat16 has no numpy dtype: its raw bits go out as '<u2'. */
    const char *descr = dtype == TOKVEC_F32   ? "<f4"
                        : dtype == TOKVEC_F16 ? "<f2"
                                              : "<u2";
    const int64_t bsd[3] = {B, S, D}, bd[2] = {B, D};
    return S == TV_VECTORS ? tv_npy_header_of(buf, descr, 2, bd)
                           : tv_npy_header_of(buf, descr, 3, bsd);
}

size_t tv_npy_header_of(char *buf, const char *descr, int ndim,
                        const int64_t *shape)
{
    char dict[160];
    int n = snprintf(dict, sizeof dict,
                     "{'descr': '%.8s', 'fortran_order': False, 'shape': (",
                     descr);
    for (int i = 0; i < ndim && i < 3; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%" PRId64 ", ",
                      shape[i]);
    n -= ndim > 1 ? 2 : 1; /* (B, S) and (N,): numpy's own spelling */
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
    size_t hlen = total - 10;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', hlen - (size_t)n - 1);
    buf[total - 1] = '\n';
    return total;
}

/* The model's name escaped as a JSON string (its quotes included) into
 * out (6 bytes a byte at most, + 2); returns its length. */
static size_t json_string_of(char *out, const char *s)
{
    out[0] = '"';
    size_t n = 1 + json_escape(out + 1, 6 * strlen(s) + 8, s);
    out[n++] = '"';
    return n;
}

size_t tv_openai_json_bound(int64_t B, int64_t D, int base64,
                            const char *model)
{
    size_t per = tv_embed_json_bound(1, TV_VECTORS, D, base64);
    size_t m = strlen(model);
    if (!per || B < 1 || m > SIZE_MAX / 16 ||
        (uint64_t)B > (SIZE_MAX / 2) / (per + 96))
        return 0;
    /* per input: {"object":"embedding","index":N,"embedding":...}, */
    return 160 + 6 * m + (size_t)B * (per + 96);
}

size_t tv_openai_json(char *buf, const float *x, int64_t B, int64_t D,
                      int base64, const char *model, int64_t tokens)
{
    char *p = buf;
    p += sprintf(p, "{\"object\":\"list\",\"data\":[");
    for (int64_t b = 0; b < B; b++) {
        p += sprintf(p,
                     "%s{\"object\":\"embedding\",\"index\":%" PRId64
                     ",\"embedding\":",
                     b ? "," : "", b);
        if (base64) {
            *p++ = '"';
            p += tv_base64(p, x + b * D, (size_t)D * 4);
            *p++ = '"';
        } else {
            p += tv_json_floats(p, x + b * D, (size_t)D);
        }
        *p++ = '}';
    }
    p += sprintf(p, "],\"model\":");
    p += json_string_of(p, model);
    p += sprintf(p,
                 ",\"usage\":{\"prompt_tokens\":%" PRId64
                 ",\"total_tokens\":%" PRId64 "}}",
                 tokens, tokens);
    return (size_t)(p - buf);
}
