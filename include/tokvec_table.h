/* tokvec_table.h -- embedding tables mapped read-only from a file.
 *
 * A table is a token embedding matrix tok (vocab_size x dim) and, optionally,
 * positions: a learned matrix pos (context_length x dim) from the same file,
 * a sinusoidal one computed once at open, or none.
 *
 * Sinusoidal positions are context_length x dim float32 values malloc'd and
 * computed by tokvec_table_open, at most TOKVEC_MAX_SINUSOIDAL_FLOATS (2^28,
 * 1 GiB) of them, else the open fails with TOKVEC_E_TOO_LARGE. A tiny file
 * may ask for that much through its metadata; a caller that only reads the
 * table's description (tokvec inspect) passes TOKVEC_TABLE_SKIP_SINUSOIDAL
 * and gets the same validation, the cap included, without the rows.
 *
 * File formats (checked once, completely, by tokvec_table_open):
 *
 *  safetensors
 *   1. bytes 0..7: N, the header length, unsigned 64-bit little endian;
 *      8 + N <= file size and N <= TOKVEC_MAX_HEADER (100 MB).
 *   2. bytes 8..8+N-1: a JSON object. Each key but "__metadata__" names a
 *      tensor: {"dtype": D, "shape": [..], "data_offsets": [begin, end]},
 *      offsets relative to the data start 8+N, begin <= end <= data size,
 *      numel(shape) * size(D) == end - begin, D one of safetensors' dtypes.
 *      No two tensors share a byte: the [begin, end) ranges of all tensors
 *      in the header (used or not; empty ones aside) must not overlap,
 *      else TOKVEC_E_OFFSETS naming both. Gaps between them are allowed.
 *      "__metadata__" is an object of string values; tokvec reads
 *      "positional" (learned|sinusoidal|none) and "context_length".
 *   3. The token tensor is found by opts->token_tensor or the first present
 *      of tok_emb.weight, wte.weight, transformer.wte.weight,
 *      embeddings.word_embeddings.weight, model.embed_tokens.weight; the
 *      position tensor by opts->position_tensor or pos_emb.weight,
 *      wpe.weight, transformer.wpe.weight,
 *      embeddings.position_embeddings.weight. Both must be 2-D, F32, F16 or
 *      BF16, with the same dim and dtype. Other tensors are checked for
 *      bounds and size only (any rank, any safetensors dtype).
 *   Tensor data may sit at any byte offset: views may be unaligned.
 *
 *  sharded safetensors (path is a *.safetensors.index.json, or a directory
 *  holding model.safetensors.index.json or else exactly one
 *  *.safetensors.index.json)
 *   a JSON object whose "weight_map" maps tensor names to shard files,
 *   relative paths inside the index's directory (no absolute path, no ".."
 *   component: TOKVEC_E_SHARD_PATH). The token/position tensors are chosen
 *   among the weight_map's names as in 3.; only the shard(s) holding them
 *   are mapped (the token's first, the position's second) and each is a
 *   safetensors file checked by every rule above, its own tensors
 *   included. The token shard's __metadata__ is the table's.
 *
 *  GGUF (magic "GGUF", versions 2 and 3, little endian)
 *   checked as core/table/gguf.c says (header, counts, metadata, alignment,
 *   tensor infos, ggml types, whole blocks per row, offsets, overlaps).
 *   Tensors token_embd.weight and position_embd.weight, or opts' names;
 *   2-D, of type F32, F16, BF16 (served in place) or Q8_0, Q4_0, Q4_1,
 *   Q5_0, Q5_1, Q4_K, Q5_K, Q6_K (rows dequantized on lookup, see
 *   tokvec_quant.h; nothing is copied at open). The two tables may differ
 *   in type; info.dtype is then float32. Shapes are in numpy order
 *   ([n_vocab, n_embd]: GGUF lists dims fastest first).
 *
 *  Model2Vec tables (opts->weights_tensor / mapping_tensor, see below):
 *   the token tensor may also be I8 (int8 values used as stored, no
 *   scale; rows widened exactly) -- safetensors files only.
 *
 *  A file that is none of these (no .npy or GGUF magic, and a length prefix
 *  beyond the file without '{' at byte 8) is TOKVEC_E_FORMAT, "not a
 *  safetensors, .npy or GGUF file".
 *
 *  .npy (token table; opts->position_path may name a second .npy)
 *   magic "\x93NUMPY", version 1.0 (u16 header length), 2.0 or 3.0 (u32),
 *   a Python dict literal with 'descr' '<f4' or '<f2', 'fortran_order'
 *   False and a 2-D 'shape'; data follows the header and must be exactly
 *   numel * itemsize bytes.
 *
 * Ownership and threads: the handle is immutable after open. Any number of
 * threads may call any const function on it at once, with no locking.
 * Every pointer a table hands out (info strings, tensor names, row views)
 * points into the handle or the read-only map and is valid until
 * tokvec_table_close(). The map is PROT_READ and MAP_SHARED: nothing is
 * copied at open, so open time does not grow with the table and processes
 * sharing one file share one copy in the page cache. Replace files by
 * rename; a file truncated in place under a mapping raises SIGBUS on access.
 */
#ifndef TOKVEC_TABLE_H
#define TOKVEC_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"
#include "tokvec_float.h"
#include "tokvec_quant.h"

#define TOKVEC_MAX_HEADER (100u * 1000u * 1000u)
#define TOKVEC_DEFAULT_SINUSOIDAL_CONTEXT 1024
/* Most sinusoidal position values (context_length x dim) computed at open. */
#define TOKVEC_MAX_SINUSOIDAL_FLOATS ((uint64_t)1 << 28)

typedef struct tokvec_table tokvec_table;

typedef enum {
    TOKVEC_POS_AUTO = 0, /* opts only: learned if found, else metadata */
    TOKVEC_POS_NONE = 1,
    TOKVEC_POS_LEARNED = 2,
    TOKVEC_POS_SINUSOIDAL = 3,
} tokvec_positional;

/* "none", "learned", "sinusoidal" ("auto" for TOKVEC_POS_AUTO). */
const char *tokvec_positional_name(tokvec_positional p);
/* Parses one of those names; returns TOKVEC_E_INVAL for anything else. */
int tokvec_positional_parse(const char *s, tokvec_positional *out);

/* tokvec_table_opts.flags */
enum {
    /* Validate everything, the sinusoidal cap included, but do not
     * allocate or compute sinusoidal position rows: info still says
     * TOKVEC_POS_SINUSOIDAL with its context_length, while
     * tokvec_table_position_row and a tokvec_embed that uses positions
     * return TOKVEC_E_NO_POSITIONS. For describing a table, not serving
     * it. No effect on learned positions (they are in the map). */
    TOKVEC_TABLE_SKIP_SINUSOIDAL = 1u << 0,
};

typedef struct tokvec_table_opts {
    const char *token_tensor;     /* NULL: search the name list above */
    const char *position_tensor;  /* NULL: search the name list above */
    const char *position_path;    /* .npy tables: optional positions .npy */
    tokvec_positional positional; /* AUTO (0) unless forced */
    int64_t context_length;       /* sinusoidal; 0 = metadata, else 1024 */
    unsigned flags;               /* TOKVEC_TABLE_* above; 0 for serving */
    /* Model2Vec's vocabulary-quantized rows (safetensors only; NULL: none):
     * weights_tensor names a 1-D [V] F64 or F32 tensor, mapping_tensor a
     * 1-D [V] I32 tensor whose every value is a row of the token tensor
     * (checked at open). A name given but absent from the file is no
     * error (the layout's tensors are optional). With either, id's row is
     *   tok[mapping[id]] * weights[id]   (mapping: id itself when absent;
     *                                     weights: 1 when absent)
     * computed in double from the stored value and rounded once to
     * float32 -- numpy's float64 product of Model2Vec, rounded; vocab_size
     * is V (K, the stored rows, without mapping: then V must equal K). */
    const char *weights_tensor;
    const char *mapping_tensor;
    char *errbuf;  /* optional: one-line reason on failure ... */
    size_t errlen; /* ... of at most errlen bytes including the NUL */
} tokvec_table_opts;

typedef struct tokvec_table_info {
    const char *path;
    const char *format; /* safetensors, safetensors-index, gguf, npy */
    int64_t vocab_size;
    int64_t dim;
    int64_t context_length; /* 0 when positional is NONE */
    tokvec_dtype dtype;     /* of the stored rows */
    tokvec_positional positional;
    const char *token_tensor;    /* name in the file ("" for .npy) */
    const char *position_tensor; /* NULL unless LEARNED */
    uint64_t file_size; /* of path (the index, for sharded checkpoints) */
    const char *metadata_json; /* "__metadata__" as compact JSON, or NULL */
    /* The tables' dtypes as the file spells them ("F32", "BF16", "Q4_K"),
     * which dtype may not say: it is float32 for quantized GGUF tables
     * (rows are dequantized) and GGUF files whose two tables differ. */
    const char *token_dtype;
    const char *position_dtype; /* NULL unless LEARNED */
    /* Model2Vec rows (opts' weights_tensor / mapping_tensor found): their
     * names (NULL when absent), the weights' dtype ("F64", "F32"), and the
     * stored rows K of the token tensor (= vocab_size without mapping). */
    const char *weights_tensor;
    const char *weights_dtype;
    const char *mapping_tensor;
    int64_t stored_rows;
} tokvec_table_info;

typedef struct tokvec_tensor {
    const char *name;
    const char *dtype; /* as spelled in the file: "F32", "I64", ... */
    int ndim;
    const int64_t *shape; /* ndim entries */
    const void *data;     /* into the map; may be unaligned */
    uint64_t nbytes;
    const char *file; /* sharded checkpoints: its shard, else NULL */
} tokvec_tensor;

/* A shard of a sharded checkpoint, as its index names it. */
typedef struct tokvec_shard {
    const char *file;   /* relative to the index's directory */
    size_t ntensors;    /* tensors the index puts there */
    int mapped;         /* 1: holds the token or position table, mapped */
    uint64_t file_size; /* bytes, when mapped (else 0) */
} tokvec_shard;

typedef struct tokvec_row {
    const void *data; /* dim values of dtype; may be unaligned */
    int64_t dim;
    tokvec_dtype dtype;
    size_t nbytes;
    /* TOKVEC_Q_NONE, or the row is nbytes of blocks of this type (data
     * points at them) and dtype is TOKVEC_F32, what they dequantize to:
     * read it with tokvec_row_to_f32, never as dtype values. */
    tokvec_qtype qtype;
    /* Model2Vec weights: when weighted, the row's values are
     * float32((double)stored * weight), one rounding (tokvec_row_to_f32
     * does it): never read data as the row's values then. */
    int weighted;
    double weight;
} tokvec_row;

/* Opens and validates path. On success *out is a new handle (close with
 * tokvec_table_close) and 0 is returned; on failure *out is NULL, a negative
 * code is returned and opts->errbuf (if given) says which file and what is
 * wrong in one line. opts may be NULL.
 * path and opts->position_path must be regular files: anything else (a
 * FIFO, a directory, a device) is TOKVEC_E_FORMAT, e.g. "PATH: is a FIFO,
 * not a regular file". Open never blocks on such a file (O_NONBLOCK), so a
 * reload cannot hang on a FIFO waiting for a writer. */
int tokvec_table_open(const char *path, const tokvec_table_opts *opts,
                      tokvec_table **out) TOKVEC_MUST_CHECK;

/* Unmaps and frees. NULL is a harmless no-op. Every view dies here. */
void tokvec_table_close(tokvec_table *t);

/* Borrowed; valid until close. */
const tokvec_table_info *tokvec_table_get_info(const tokvec_table *t);

/* Every tensor in the file in header order (.npy: one or two). */
size_t tokvec_table_tensor_count(const tokvec_table *t);
int tokvec_table_tensor(const tokvec_table *t, size_t i, tokvec_tensor *out);

/* Sharded checkpoints: the shards the index names, in index order
 * (0 for other tables). */
size_t tokvec_table_shard_count(const tokvec_table *t);
int tokvec_table_shard(const tokvec_table *t, size_t i, tokvec_shard *out);

/* The files a table keeps mapped, to name the one a fault is in (a SIGBUS
 * handler: tokvec serve). A single file is one mapping (its path the
 * table's); a sharded checkpoint's are the shard(s) holding the token and
 * position tables (the index is read and unmapped at open); a .npy table
 * with positions has two. At most 2; addr..addr+len is the whole mapping. */
typedef struct tokvec_mapping {
    const void *addr;
    size_t len;
    const char *path; /* the file mapped, as opened (index dir + shard) */
} tokvec_mapping;

size_t tokvec_table_mapping_count(const tokvec_table *t);
int tokvec_table_mapping(const tokvec_table *t, size_t i, tokvec_mapping *out);

/* Row views: TOKVEC_E_TOKEN_RANGE / TOKVEC_E_POSITION_RANGE when out of
 * range, TOKVEC_E_NO_POSITIONS when the table has none (positional NONE,
 * or sinusoidal opened with TOKVEC_TABLE_SKIP_SINUSOIDAL). Sinusoidal rows
 * are float32 rows computed at open. */
int tokvec_table_token_row(const tokvec_table *t, int64_t id,
                           tokvec_row *out) TOKVEC_MUST_CHECK;
int tokvec_table_position_row(const tokvec_table *t, int64_t pos,
                              tokvec_row *out) TOKVEC_MUST_CHECK;

/* Widens (or dequantizes) a row to float32 exactly into
 * dst[0..row->dim-1]; a weighted row's values are then multiplied by its
 * weight in double and rounded once. */
void tokvec_row_to_f32(const tokvec_row *row, float *dst);

#endif
