/* tokvec_write.h -- writing tables as safetensors files, atomically.
 *
 * The file is written to a temporary name in the destination's directory,
 * flushed to disk, and renamed over path, so a reader (a serving process
 * reloading on SIGHUP) never sees a half-written table. The header is
 * padded with spaces so that the data starts at a multiple of 8 bytes.
 * Not thread-affine: each call is self-contained.
 */
#ifndef TOKVEC_WRITE_H
#define TOKVEC_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_error.h"
#include "tokvec_float.h"

typedef struct tokvec_write_tensor {
    const char *name;
    tokvec_dtype dtype; /* dtype of data, written as is */
    int64_t rows;
    int64_t cols;
    const void *data; /* rows * cols values of dtype */
} tokvec_write_tensor;

/* Called now and then with bytes written so far and the total; may be NULL.
 */
typedef void (*tokvec_progress_fn)(uint64_t done, uint64_t total, void *ud);

typedef struct tokvec_write_opts {
    /* "__metadata__": key/value string pairs, n_metadata of each. */
    const char *const *metadata_keys;
    const char *const *metadata_values;
    size_t n_metadata;
    tokvec_progress_fn progress;
    void *progress_ud;
} tokvec_write_opts;

/* Writes n tensors (in that order) to path. opts may be NULL. On failure
 * the temporary file is removed and path is untouched. */
int tokvec_safetensors_write(const char *path, const tokvec_write_tensor *t,
                             size_t n,
                             const tokvec_write_opts *opts) TOKVEC_MUST_CHECK;

#endif
