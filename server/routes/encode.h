/* encode.h -- response bodies: JSON with shortest round-trip floats,
 * base64, raw little-endian arrays and .npy headers, and the JSON error
 * body, in the format negotiate.h picked. Independent of HTTP; pure
 * functions, any thread.
 *
 * Sizes are computed before anything is written so that callers allocate
 * once and binary bodies can be filled in place by tokvec_embed (no copy).
 */
#ifndef TV_ENCODE_H
#define TV_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "negotiate.h"
#include "request.h"
#include "tokvec_float.h"

/* The reply-size invariant. Every writer of a reply body states what it
 * wrote against what was planned (allocated) for it: TV_WROTE(n, planned).
 * Past the plan the heap is already damaged, so this aborts in every build
 * (a line on stderr naming the file and line first); an under-estimate is a
 * test failure, never a silent overflow. */
#define TV_WROTE(n, planned) tv_wrote((n), (planned), __FILE__, __LINE__)
void tv_wrote(size_t n, size_t planned, const char *file, int line);

/* {"error":"...","error_type":"..."} with proper JSON escaping. Returns the
 * length written to buf (buf of at least TV_ERROR_BODY_MAX bytes). */
#define TV_ERROR_BODY_MAX 1024
size_t tv_error_body(const tv_error *err, char *buf);
/* The same error in OpenAI's shape (paths under /v1/):
 * {"error":{"message":"...","type":T,"param":P|null,"code":"<error_type>"}}
 * T by status: authentication_error (401), rate_limit_error (429),
 * server_error (5xx), invalid_request_error (other 4xx); P is
 * err->param (a static field name) or null. Same buffer size. */
size_t tv_openai_error_body(const tv_error *err, char *buf);

/* Writes "[a,b,...]" for n float32 values, each as tokvec_f32_format, non-
 * finite values as null. buf must hold tv_json_floats_bound(n) bytes.
 * Returns bytes written. */
size_t tv_json_floats_bound(size_t n);
size_t tv_json_floats(char *buf, const float *x, size_t n);

/* The whole JSON /embed response for x of shape (B,S,D):
 * {"shape":[B,S,D],"dtype":"float32","embeddings":[[[...]]]}, or with
 * base64 the embeddings as one base64 string of the LE float32 bytes.
 * tv_embed_json_bound gives a safe size (0 on overflow); tv_embed_json
 * returns the exact length written. */
/* S = TV_VECTORS: a (B, D) answer instead ("pooling": "mean"):
 * {"shape":[B,D],...,"embeddings":[[...],...]}; tv_npy_header likewise. */
#define TV_VECTORS ((int64_t)-1)
size_t tv_embed_json_bound(int64_t B, int64_t S, int64_t D, int base64);
size_t tv_embed_json(char *buf, const float *x, int64_t B, int64_t S,
                     int64_t D, int base64);

/* POST /v1/embeddings' answer for the B vectors of x (B, D):
 * {"object":"list","data":[{"object":"embedding","index":i,
 * "embedding":[...] or "<base64 of LE float32>"},...],"model":MODEL,
 * "usage":{"prompt_tokens":tokens,"total_tokens":tokens}}.
 * tv_openai_json_bound: a safe size (0 on overflow); tv_openai_json the
 * exact length written. */
size_t tv_openai_json_bound(int64_t B, int64_t D, int base64,
                            const char *model);
size_t tv_openai_json(char *buf, const float *x, int64_t B, int64_t D,
                      int base64, const char *model, int64_t tokens);

/* {"id":ID,"embedding":[...]} for GET /tokens/{id}. */
size_t tv_token_json_bound(int64_t D);
size_t tv_token_json(char *buf, int64_t id, const float *x, int64_t D);

/* Standard base64 (with padding) of n bytes; dst holds 4*ceil(n/3). */
size_t tv_base64(char *dst, const void *src, size_t n);

/* .npy v1.0 header for a C-order (B,S,D) array of dtype ('<f4', '<f2';
 * bfloat16 has no numpy dtype: written as '<u2' raw bits -- see
 * docs/decisions.md),
 * padded with spaces and '\n' so the data starts at a multiple of 64.
 * buf holds TV_NPY_HEADER_MAX bytes; returns the header length. */
#define TV_NPY_HEADER_MAX 256
size_t tv_npy_header(char *buf, tokvec_dtype dtype, int64_t B, int64_t S,
                     int64_t D);
/* The same for any descr ("<i8", ...) and 1 to 3 dimensions. */
size_t tv_npy_header_of(char *buf, const char *descr, int ndim,
                        const int64_t *shape);

#endif
