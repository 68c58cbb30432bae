/* request_prescan.c -- the pre-scan of a JSON /embed body (request.h,
 * tv_request_prescan_json): one pass, no allocation, before jansson
 * builds a tree; refuses bodies nested too deep or holding too many
 * values.
 *
 * Pure function of its arguments; any thread.
 */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "request_prescan.h"

/* --- the pre-scan (issue 15, finding 2) ---------------------------------
 *
 * jansson builds a json_t for every value before the request's limits can
 * be checked: a 16 MiB body of 2,000-deep nested lists was 8.4 million
 * lists, 1.07 GB and seconds of one HTTP thread, to answer 413. The
 * pre-scan reads the body once, allocating nothing, with the grammar of
 * jansson's parser: a stack of at most PRESCAN_DEPTH open lists and
 * objects, the state (what may come next) and a count of values.
 *
 * Precedence (request.h): it stops without refusing at the first thing it
 * sees is not JSON, so jansson reports that syntax error exactly as before
 * -- jansson stops there too or earlier, having built no more than the
 * shallow, bounded prefix the pre-scan accepted. It refuses at the first
 * list or object at level PRESCAN_DEPTH + 1 (400) or the first value past
 * the bound (413), whichever comes first in the text. What it does not
 * check (it is not needed for the structure): inside a string only the
 * escapes and control characters (not UTF-8, surrogates, \u0000), numbers
 * not for range, keys not for duplicates. The fuzz target
 * (tests/fuzz/fuzz_ids.c) checks that jansson, given the body up to the
 * refused offset, finds nothing wrong but the end or one of those.
 *
 * Depth: a valid request nests 3 (the object, "inputs", the rows); one
 * level more is still left to jansson, whose message names the key or the
 * batch index and position ("token id at batch index 0, position 1 is not
 * an integer", "\"positions\" must be true or false"); a fifth level is no
 * mistake a client makes by accident, and is refused at once.
 */

#define PRESCAN_DEPTH 4

enum { P_ROOT, P_VALUE, P_VALUE_OR_END, P_KEY, P_KEY_OR_END, P_COLON, P_NEXT };

#define P_WS(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')
#define P_DIGIT(c) ((unsigned)(c) - '0' < 10)
#define P_ALPHA(c) ((unsigned)(((c) | 0x20) - 'a') < 26)

/* A string at p (its opening quote); past its closing quote, or NULL where
 * jansson's lexer errs (a control character, a bad escape, the end). */
static const unsigned char *prescan_string(const unsigned char *p,
                                           const unsigned char *end)
{
    for (p++; p < end; p++) {
        unsigned c = *p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return NULL;
        if (c != '\\')
            continue;
        if (++p == end)
            return NULL;
        c = *p;
        if (c == 'u') {
            for (int i = 0; i < 4; i++)
                if (++p == end || !((unsigned)(*p - '0') < 10 ||
                                    (unsigned)((*p | 0x20) - 'a') < 6))
                    return NULL;
        } else if (!c || !strchr("\"\\/bfnrt", (int)c)) {
            return NULL;
        }
    }
    return NULL;
}

/* A number at p as jansson's lexer reads it, -?(0|[1-9][0-9]*)(\.[0-9]+)?
 * ([eE][+-]?[0-9]+)?; past it, or NULL. Its range is not checked. */
static const unsigned char *prescan_number(const unsigned char *p,
                                           const unsigned char *end)
{
    if (*p == '-' && ++p == end)
        return NULL;
    if (*p == '0') {
        if (++p < end && P_DIGIT(*p))
            return NULL;
    } else if (P_DIGIT(*p)) {
        while (++p < end && P_DIGIT(*p))
            ;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        if (++p == end || !P_DIGIT(*p))
            return NULL;
        while (++p < end && P_DIGIT(*p))
            ;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !P_DIGIT(*p))
            return NULL;
        while (++p < end && P_DIGIT(*p))
            ;
    }
    return p;
}

int tv_request_prescan_json(const char *body, size_t len, const tv_limits *lim,
                            tv_error *err, size_t *at)
{
    if (len > lim->max_body_bytes || (len && memchr(body, '\0', len)))
        return 0; /* jansson's parser answers these before parsing */
    /* The most values a valid request holds: ids, rows, "inputs", the
     * object and the ten options: start_position, positions, pad_id,
     * encoding_format, dtype and the text options of request.h (keys
     * are not values). */
    uint64_t tokens = lim->max_tokens > 0 ? (uint64_t)lim->max_tokens : 0;
    uint64_t rows = lim->max_batch > 0 ? (uint64_t)lim->max_batch : 0;
    if (rows > tokens)
        rows = tokens;
    uint64_t max_values = tokens + rows + 12;
    if (max_values < tokens) /* wrapped: no bound */
        max_values = UINT64_MAX;

    const unsigned char *p = (const unsigned char *)body, *end = p + len;
    const unsigned char *tok;
    unsigned char open[PRESCAN_DEPTH]; /* '[' or '{' */
    unsigned depth = 0, state = P_ROOT;
    int inputs = 0; /* in the root object, the key read last is "inputs" */
    uint64_t values = 0;

    for (;;) {
        while (p < end && P_WS(*p))
            p++;
        if (p == end)
            return 0;
        tok = p;
        unsigned c = *p;
        switch (state) {
        case P_KEY_OR_END:
        case P_KEY:
            if (c == '}' && state == P_KEY_OR_END)
                goto close;
            if (c != '"')
                return 0;
            p = prescan_string(p, end);
            if (!p)
                return 0;
            if (depth == 1)
                inputs = p - tok == 8 && !memcmp(tok + 1, "inputs", 6);
            state = P_COLON;
            continue;
        case P_COLON:
            if (c != ':')
                return 0;
            p++;
            state = P_VALUE;
            continue;
        case P_NEXT:
            if (depth == 0) /* text after the body's one value */
                return 0;
            if (c == ',') {
                p++;
                state = open[depth - 1] == '[' ? P_VALUE : P_KEY;
                continue;
            }
            if (c == (open[depth - 1] == '[' ? ']' : '}'))
                goto close;
            return 0;
        case P_VALUE_OR_END:
            if (c == ']')
                goto close;
            break;
        case P_ROOT:
            if (c != '[' && c != '{') /* jansson: "'[' or '{' expected" */
                return 0;
            break;
        }
        /* a value */
        if (c == '[' || c == '{') {
            if (depth == PRESCAN_DEPTH) {
                if (at)
                    *at = (size_t)(tok - (const unsigned char *)body);
                if (open[0] == '{' && inputs)
                    return tv_error_set(err, 400, "invalid_request",
                                        "\"inputs\" nests deeper than a "
                                        "list of lists of ids");
                return tv_error_set(err, 400, "invalid_request",
                                    "body nests lists or objects deeper "
                                    "than a request can (an object with "
                                    "\"inputs\", a list of lists of ids)");
            }
        } else if (c == '"') {
            p = prescan_string(p, end);
        } else if (c == '-' || P_DIGIT(c)) {
            p = prescan_number(p, end);
        } else if (P_ALPHA(c)) {
            while (++p < end && P_ALPHA(*p))
                ;
            size_t n = (size_t)(p - tok);
            if (!((n == 4 &&
                   (!memcmp(tok, "true", 4) || !memcmp(tok, "null", 4))) ||
                  (n == 5 && !memcmp(tok, "false", 5))))
                return 0;
        } else {
            return 0;
        }
        if (!p)
            return 0;
        if (++values > max_values) {
            if (at)
                *at = (size_t)(tok - (const unsigned char *)body);
            return tv_error_set(err, 413, "payload_too_large",
                                "body holds more than %" PRIu64 " JSON "
                                "values, more than any request within "
                                "max_tokens %" PRId64 " and max_batch %" PRId64
                                " can hold",
                                max_values, lim->max_tokens, lim->max_batch);
        }
        if (c == '[' || c == '{') {
            open[depth++] = (unsigned char)c;
            p++;
            state = c == '[' ? P_VALUE_OR_END : P_KEY_OR_END;
        } else {
            state = P_NEXT;
        }
        continue;
    close:
        depth--;
        p++;
        state = P_NEXT;
    }
}
