/* request_fast.h -- the fast path of tv_request_parse_json (request.h):
 * request_fast.c.
 *
 * tv_request_parse_json_fast: the common /embed shape only -- an object
 * with "inputs" (list of lists of integers, or one flat list), and
 * optionally "start_position", "positions", "pad_id", "encoding_format",
 * "dtype", in any order, unescaped keys, integers as jansson reads them.
 * Returns 0 with *out exactly what the slow parser gives, or
 * TV_FAST_FALLBACK (*out init'ed, nothing held) for anything else.
 * Pure function of its arguments; any thread.
 */
#ifndef TV_REQUEST_FAST_H
#define TV_REQUEST_FAST_H

#include <stddef.h>

#include "request_types.h"

enum { TV_FAST_FALLBACK = 1 };
int tv_request_parse_json_fast(const char *body, size_t len,
                               const tv_limits *lim, tv_request *out);

#endif
