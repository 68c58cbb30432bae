/* request_types.h -- what every request parser and route shares, below
 * them all (request_types.c): the limits, the error (tv_error and its
 * setter), the text options and the parsed request (tv_request, its init
 * and free). request.c, request_fast.c, request_prescan.c, text.c and the
 * encoders stand above it; it calls nothing of theirs.
 *
 * Pure functions of their arguments; any thread.
 */
#ifndef TV_REQUEST_TYPES_H
#define TV_REQUEST_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef struct tv_limits {
    size_t max_body_bytes;       /* 413 payload_too_large past it */
    int64_t max_tokens;          /* B*S; 413 past it */
    int64_t max_batch;           /* B; 413 past it */
    int64_t max_sentence_tokens; /* Model2Vec pooling's M (0: 512) */
} tv_limits;

typedef struct tv_error {
    int status;       /* HTTP status: 400, 404, 405, 406, 413, 415, 422, ... */
    const char *type; /* "invalid_json", "invalid_request", ... (static) */
    char message[320];
    const char *param; /* /v1/ answers: the field at fault (static), or
                        * NULL; tv_error_set clears it */
} tv_error;

/* Fills err (printf-style message) and returns -1, for one-line error paths.
 */
int tv_error_set(tv_error *err, int status, const char *type, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));

/* The text options of /embed and /tokenize. */
typedef struct tv_text_opts {
    int special;        /* "special_tokens", default true */
    int add_special;    /* "add_special_tokens": the tokenizer's
                         * post-processor tokens ([CLS] ... [SEP]),
                         * default false */
    int truncate;       /* "truncate", default false */
    int left;           /* "truncation_direction": "left" (keep the end) */
    int64_t max_length; /* "max_length" L: windows; 0 = none */
    int64_t stride;     /* "stride" T, default L */
} tv_text_opts;

void tv_text_opts_init(tv_text_opts *o);

/* One input of /embed before tokenizing: a text (text != NULL, len bytes,
 * owned) or a list of ids (ids, n; owned). */
typedef struct tv_text_row {
    char *text;
    size_t len;
    int64_t *ids;
    int64_t n;
} tv_text_row;

typedef struct tv_request {
    int64_t *ids; /* batch*seq ids, row-major; owned, tv_request_free */
    int64_t batch;
    int64_t seq;
    int64_t start_position; /* default 0 */
    int positions;          /* default 1; 0 = token rows only */
    int base64;             /* JSON "encoding_format": "base64" */
    int torch;              /* JSON "encoding_format": "torch" */
    int npz;                /* "encoding_format": "npz" (JSON body, or the
                             * query of a binary one): see
                             * tv_negotiate_embed */
    const char *body_dtype; /* JSON "dtype": "float32", "float16" or
                             * "bfloat16" (static strings), NULL if none:
                             * a response option, see tv_negotiate_embed */
    int single;             /* inputs was one flat sequence (shape 1,S) */
    const char *dtype;      /* ?dtype= as given, NULL if none: a response
                             * option for tv_negotiate; borrowed from the
                             * caller of tv_request_set_option */
    /* Text inputs (contract section 7): when has_text, ids/batch/seq are
     * unset until tv_embed_text_resolve (embed_text.h) turns rows into
     * them on a worker. */
    int has_text;
    tv_text_opts text;
    tv_text_row *rows; /* nrows inputs, as given */
    int64_t nrows;
    int64_t pad_id; /* "pad_id" when has_pad */
    int has_pad;
    int64_t *targets; /* max_length windows: batch*seq target ids */
    /* A padded batch (rows of different lengths, right-padded with
     * pad_id; ids and texts alike): each row's real length, batch
     * entries; NULL when no row is padded. The answer's attention_mask. */
    int64_t *lens;
    /* Sentence vectors ("pooling": "mean", and /v1/embeddings): every
     * input is a row (texts and id lists alike) until resolved; then ids
     * holds the rows' ids one after the other, offs[b]..offs[b+1] row b's
     * (offs: batch + 1 entries), seq is the longest row, and the answer is
     * (batch, dims). */
    int pool;
    int normalize;  /* -1: the model's default; 0 or 1 */
    int64_t dims;   /* "dimensions": the first dims components; 0 = dim */
    int64_t *offs;  /* pooled: batch + 1 offsets into ids */
    int openai;     /* /v1/embeddings: OpenAI's answer and errors */
    int64_t pooled; /* pooled: the ids averaged in all (usage) */
    const char *model_name; /* openai: the answer's "model" (borrowed) */
} tv_request;

void tv_request_init(tv_request *r);
void tv_request_free(tv_request *r); /* safe on an init'ed request */

#endif
