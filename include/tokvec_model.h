/* tokvec_model.h -- static embedding model directories: a token table, a
 * Hugging Face tokenizer.json and how sentence vectors are made of them.
 *
 * Layouts (found by what the directory holds, in this order):
 *
 *  model2vec (Model2Vec's StaticModel.save_pretrained)
 *   model.safetensors with "embeddings" [K, D] F32, F16 or I8 (int8 used
 *   as stored, no scale) and optionally "weights" [V] F64/F32 and
 *   "mapping" [V] I32 (every value < K): row id = embeddings[mapping[id]]
 *   * weights[id] (tokvec_table.h); tokenizer.json; config.json and
 *   modules.json optional.
 *
 *  sentence-transformers (StaticEmbedding)
 *   "embedding.weight" [V, D] in model.safetensors at DIR or under
 *   DIR/0_StaticEmbedding/; tokenizer.json beside it or at DIR;
 *   modules.json, config_sentence_transformers.json optional.
 *
 * Normalization: a module whose "type" ends in "Normalize" in
 * modules.json, else config.json's "normalize", else
 * config_sentence_transformers.json's "normalize", else none;
 * opts->normalize (0 or 1) overrides all of them.
 *
 * From tokenizer.json (whatever its model type: only the vocabulary is
 * read here; the tokenizer itself is tokvec_tokenizer.h's) the model keeps
 * what Model2Vec's encode needs: the median length in code points of the
 * vocabulary's token strings, added tokens included (numpy's median, then
 * int(): truncated), and the unknown token's id (model.unk_token's id for
 * WordPiece, BPE and WordLevel models; none for Unigram, whose Python
 * binding has no unk_token, and none when null).
 *
 * Every file is read and checked once, at open; a malformed one is one
 * line naming the file and what is wrong (TOKVEC_E_MODEL, or the table's
 * own code for model.safetensors). Nothing is logged.
 *
 * Threads: the handle is immutable after open; any thread may read it at
 * once. The table it holds lives until tokvec_model_close.
 */
#ifndef TOKVEC_MODEL_H
#define TOKVEC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"
#include "tokvec_table.h"

typedef struct tokvec_model tokvec_model;

typedef enum {
    TOKVEC_LAYOUT_MODEL2VEC = 1,
    TOKVEC_LAYOUT_SENTENCE_TRANSFORMERS = 2,
} tokvec_model_layout;

typedef struct tokvec_model_opts {
    int normalize;        /* -1 (or 0-initialized opts: see below) as the
                           * files say; 0 or 1 forces it */
    int normalize_set;    /* 1: normalize is an override (0-init: files) */
    unsigned table_flags; /* tokvec_table_opts.flags */
    char *errbuf;         /* optional: one-line reason on failure ... */
    size_t errlen;        /* ... of at most errlen bytes with the NUL */
} tokvec_model_opts;

typedef struct tokvec_model_info {
    const char *dir; /* as given */
    tokvec_model_layout layout;
    const char *layout_name;    /* "model2vec", "sentence-transformers" */
    const char *table_path;     /* DIR/[0_StaticEmbedding/]model.safetensors */
    const char *tokenizer_path; /* the tokenizer.json */
    int normalize;              /* 0 or 1, in effect */
    /* where normalize comes from: "modules.json", "config.json",
     * "config_sentence_transformers.json", "override" or "default" */
    const char *normalize_from;
    int64_t median_token_length; /* 0 when the vocabulary is empty */
    int64_t unk_id;              /* -1: none */
    int64_t tokenizer_tokens;    /* distinct token strings (added too) */
} tokvec_model_info;

/* Opens and checks the directory dir. 0 with *out a new handle, or a
 * negative code with *out NULL and opts->errbuf saying which file and
 * what. opts may be NULL. */
int tokvec_model_open(const char *dir, const tokvec_model_opts *opts,
                      tokvec_model **out) TOKVEC_MUST_CHECK;
void tokvec_model_close(tokvec_model *m); /* NULL: no-op */

const tokvec_model_info *tokvec_model_get_info(const tokvec_model *m);
/* The model's table (borrowed; valid until tokvec_model_close). */
const tokvec_table *tokvec_model_table(const tokvec_model *m);

/* "model2vec" / "sentence-transformers" (NULL for anything else). */
const char *tokvec_model_layout_name(tokvec_model_layout l);

/* The bytes of text[0..len) that Model2Vec's encode keeps before
 * tokenizing: its first max_tokens * median_token_length code points (a
 * code point is a byte that is not 10xxxxxx: the text is UTF-8).
 * max_tokens < 1: all of it. Pure. */
size_t tokvec_model_text_cut(const tokvec_model *m, const char *text,
                             size_t len, int64_t max_tokens);

/* The name a model directory is served under: the last component of dir
 * (trailing slashes ignored), or for a Hugging Face cache snapshot
 * .../models--ORG--NAME/snapshots/HASH, NAME. Written to buf (len bytes,
 * NUL-terminated, cut to fit). Pure. */
void tokvec_model_default_name(const char *dir, char *buf, size_t len);

#endif
