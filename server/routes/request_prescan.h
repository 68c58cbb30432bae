/* request_prescan.h -- the pre-scan of a JSON /embed body before jansson
 * (request_prescan.c). Pure function of its arguments; any thread.
 */
#ifndef TV_REQUEST_PRESCAN_H
#define TV_REQUEST_PRESCAN_H

#include <stddef.h>

#include "request_types.h"

/* The pre-scan: one pass over the body, no allocation, before jansson
 * builds a tree (jansson allocates a json_t per value: 16 MiB of nested
 * "[" were 8 million lists, 1 GB). A valid request nests 3 levels (the
 * object, "inputs", its rows) and holds at most
 *   N = max_tokens ids + min(max_batch, max_tokens) rows + "inputs"
 *       + the object + 10 option values
 * JSON values. It refuses, at the first point reading from the start:
 *  - a list or object opened at level 5 (4 lists inside "inputs"): 400
 *    invalid_request, "\"inputs\" nests deeper than a list of lists of
 *    ids" when that is where, else "body nests lists or objects deeper
 *    than a request can (...)". A body one level too deep (a list where an
 *    id belongs, [[[true]]] for "positions") is left to jansson, whose
 *    messages name the key or the batch index and position;
 *  - the value past N: 413 payload_too_large, "body holds
 *    more than N JSON values, more than any request within max_tokens T
 *    and max_batch B can hold".
 * It stops without refusing (jansson answers) at the end of the body, at
 * the first syntax error it sees, and for a body over max_body_bytes or
 * with a NUL byte. 0 (jansson may parse it), or -1 with *err filled and
 * *at (when not NULL) the offset of the list, object or value refused.
 * Exposed for the tests and the differential fuzz target. */
int tv_request_prescan_json(const char *body, size_t len, const tv_limits *lim,
                            tv_error *err, size_t *at);

#endif
