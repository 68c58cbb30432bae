/* negotiate.h -- the format of an answer, read from the request: the
 * Accept header (RFC 9110's content negotiation), ?dtype= and the body's
 * dtype and encoding_format; and the Content-Type of each format. The
 * encoders (encode.h) write the format picked here. Independent of HTTP;
 * pure functions, any thread.
 */
#ifndef TV_NEGOTIATE_H
#define TV_NEGOTIATE_H

#include "request_types.h"
#include "tokvec_float.h"

typedef enum {
    TV_OUT_JSON = 0, /* application/json (base64 per request option) */
    TV_OUT_RAW = 1,  /* application/octet-stream */
    TV_OUT_NPY = 2,  /* application/x-npy */
    TV_OUT_NPZ = 3,  /* application/x-npz: embeddings and ids (npz.h) */
} tv_out_kind;

typedef struct tv_format {
    tv_out_kind kind;
    tokvec_dtype dtype; /* RAW/NPY: F32, or F16/BF16 from ?dtype= */
} tv_format;

/* Whether a JSON-only answer may be sent for this Accept header: yes when
 * it is NULL, empty or blank, or when application/json (by name or by a
 * wildcard range) has q > 0. */
int tv_accepts_json(const char *accept);

/* Picks the response format from an Accept header (NULL/empty or a wildcard
 * -> JSON; RFC 9110's preference: highest q, then the most specific range,
 * then the first listed; q=0 excludes; see negotiate.c) and the
 * ?dtype= query value (NULL, float32, float16, bfloat16; anything else 400;
 * float16/bfloat16 with a JSON response -> 400 invalid_request). 0, or -1
 * with 406 not_acceptable / 400. */
int tv_negotiate(const char *accept, const char *dtype_query, tv_format *fmt,
                 tv_error *err);

/* The format of an /embed answer: tv_negotiate with the dtype of the
 * request, from ?dtype= (dtype_query) or the JSON body's "dtype"
 * (dtype_body; NULL or empty when absent; given both, they must be equal,
 * else 400 invalid_request). With torch (the body's "encoding_format":
 * "torch") a JSON answer may be float16 or bfloat16: its tensors are that
 * dtype. With npz ("encoding_format": "npz", or ?encoding_format=npz) the
 * answer is application/x-npz unless Accept names the type that wins
 * (application/json, ...: a named type wins), or excludes npz (q=0, or a
 * list no range of which matches it: 406 as for any type). 0, or -1 with
 * *err filled. */
int tv_negotiate_embed(const char *accept, const char *dtype_query,
                       const char *dtype_body, int torch, int npz,
                       tv_format *fmt, tv_error *err);

/* Content-Type string for a format ("application/json", ...). */
const char *tv_content_type(tv_out_kind kind);

#endif
