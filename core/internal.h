/* internal.h -- the table handle's fields, built by table.c and the format
 * parsers (safetensors.c, npy.c) and read by embed.c, plus the helpers the
 * parsers share. Not a public header: nothing outside core/ (and the fuzz
 * targets, which check the handle's invariants) includes it. Fields never
 * change after tokvec_table_open returns.
 */
#ifndef TOKVEC_INTERNAL_H
#define TOKVEC_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tokvec_embed.h"
#include "tokvec_float.h"
#include "tokvec_quant.h"
#include "tokvec_table.h"

typedef struct tokvec__tensor {
    char *name;
    char *dtype;
    int ndim;
    int64_t *shape;
    const unsigned char *data; /* into a map */
    uint64_t nbytes;
    int file; /* which mapped file: 0 (map) or 1 (map2) */
} tokvec__tensor;

/* How one table's rows are stored: row r is row_bytes at base + r *
 * row_bytes, dim values of dtype, or (q != TOKVEC_Q_NONE) dim / B blocks
 * of q that dequantize to float32 (dtype TOKVEC_F32). */
typedef struct tokvec__rows {
    const unsigned char *base;
    size_t row_bytes;
    tokvec_dtype dtype;
    tokvec_qtype q;
} tokvec__rows;

/* A shard named in a sharded checkpoint's index. */
typedef struct tokvec__shard {
    char *file;      /* as the index spells it */
    size_t ntensors; /* weight_map entries naming it */
    int map;         /* -1, or which map holds it (0: map, 1: map2) */
    uint64_t size;   /* bytes, when mapped */
} tokvec__shard;

struct tokvec_table {
    tokvec_table_info info;
    char *path;
    const unsigned char *map; /* the file, PROT_READ */
    size_t map_len;
    const unsigned char *map2; /* positions .npy or shard, or NULL */
    size_t map2_len;
    char *map_path[2];     /* what map / map2 hold when not `path` (a shard, a
                            * positions .npy), else NULL */
    tokvec__shard *shards; /* sharded checkpoints: every shard named */
    size_t nshards;
    int gguf; /* a GGUF file: quantized rows, mixed dtypes allowed */
    const char *const *pos_names; /* the position names searched */
    tokvec__tensor *tensors;
    size_t ntensors;
    char *metadata_json;
    tokvec_positional meta_positional; /* from __metadata__, or AUTO */
    int64_t meta_context;              /* from __metadata__, or 0 */
    const unsigned char *tok;          /* row 0 of the token table */
    const unsigned char *pos;        /* row 0 of learned positions, or NULL */
    float *sin_pos;                  /* sinusoidal positions, or NULL */
    size_t row_bytes;                /* bytes of a token row */
    tokvec__rows tok_rows, pos_rows; /* pos_rows: learned only */
    int aligned; /* tok and pos are float32 rows, float-aligned */
    /* Model2Vec rows (tokvec_table_opts' weights/mapping): NULL when
     * absent; little-endian values, any alignment; weights_f64 says F64
     * (else F32). Rows are then read through tokvec_table_token_row. */
    const unsigned char *weights;
    int weights_f64;
    const unsigned char *mapping;
};

/* The contract's tensor names, NULL-terminated (base.c). */
extern const char *const tokvec__token_names[];
extern const char *const tokvec__position_names[];

/* The first tensor called name in map `file` (-1: in any). */
const tokvec__tensor *tokvec__find_tensor(const tokvec_table *t,
                                          const char *name, int file);
/* Picks the token and position tensors among t->tensors by opts or by
 * names[0] (token) and names[1] (position); TOKVEC_E_NO_TENSOR if no
 * token tensor or a named one is missing. *pos may be NULL. */
int tokvec__pick(const tokvec_table *t, const tokvec_table_opts *o,
                 const char *path, const char *const *const names[2],
                 const tokvec__tensor **tok, const tokvec__tensor **pos);

/* Records a one-line reason "path: what" in o->errbuf (if any); returns
 * code, so that error paths are one statement. */
int tokvec__record_fail(const tokvec_table_opts *o, const char *path, int code,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The call's value is code itself, visibly: clang's analyzer does not look
 * into table.c from the other files, and without this takes an error path
 * (a negative code) for success and reports reads the check has ruled
 * out. code is evaluated twice: pass a constant or a variable. */
#define tokvec__fail(o, path, code, ...) \
    (tokvec__record_fail((o), (path), (code), __VA_ARGS__), (code))
/* error.c: "path: " fmt into buf (len > 0 bytes), cut to fit; for the error
 * buffers of tables and tokenizers. */
void tokvec__vnote(char *buf, size_t len, const char *path, const char *fmt,
                   va_list ap) __attribute__((format(printf, 4, 0)));
/* Maps a whole regular file read-only (never blocks on a FIFO). */
int tokvec__map_file(const tokvec_table_opts *o, const char *path,
                     const unsigned char **map, size_t *len);
uint64_t tokvec__le64(const unsigned char *p);
/* 1 when a * b fits in 64 bits (*out = a * b), else 0. */
int tokvec__mul_ok(uint64_t a, uint64_t b, uint64_t *out);

/* Appends the tensors of the safetensors file at map (file: 0 or 1, which
 * map it is) to t->tensors, every rule checked; the first file parsed
 * gives t its metadata. */
int tokvec__parse_safetensors(tokvec_table *t, const tokvec_table_opts *o,
                              const char *path, const unsigned char *map,
                              size_t len, int file);
/* No two of t->tensors[first..] (data in one file starting at data) share
 * a byte; else TOKVEC_E_OFFSETS naming the first pair ("what forbids"). */
int tokvec__check_overlaps(const tokvec_table *t, const tokvec_table_opts *o,
                           const char *path, const unsigned char *data,
                           size_t first, const char *what);
/* Parses the .npy at map into x (name "") and *dtype. */
int tokvec__parse_npy(const tokvec_table_opts *o, const char *path,
                      const unsigned char *map, size_t len, tokvec__tensor *x,
                      tokvec_dtype *dtype);

/* gguf.c: the tensors of the GGUF file at map, every rule checked; its
 * scalar metadata as t->metadata_json. */
int tokvec__parse_gguf(tokvec_table *t, const tokvec_table_opts *o,
                       const char *path, const unsigned char *map, size_t len);
/* shards.c: path itself, or the index in the directory path (a new
 * string; NULL when out of memory). */
char *tokvec__index_in_dir(const char *path);
/* shards.c: t->map holds an index; maps the shard(s) holding the
 * token/position tensors into map/map2 (the index is unmapped), parses
 * them and picks the tensors. */
int tokvec__open_index(tokvec_table *t, const tokvec_table_opts *o,
                       const char *path, const tokvec__tensor **tok,
                       const tokvec__tensor **pos);

#endif
