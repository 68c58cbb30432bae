/* torchsave.h -- the bytes torch.save writes for one 2-D tensor, so that
 * vLLM's prompt_embeds (and any torch.load(..., weights_only=True)) read
 * tokvec's vectors directly: "encoding_format": "torch" on /embed.
 *
 * The archive is PyTorch's zip format (version 3), stored (no compression):
 *   archive/data.pkl   pickle protocol 2: torch._utils._rebuild_tensor_v2(
 *                      persistent storage ('storage', torch.FloatStorage |
 *                      HalfStorage | BFloat16Storage, '0', 'cpu', S*D), 0,
 *                      (S, D), (D, 1), False, collections.OrderedDict())
 *                      -- the bytes torch.save's pickler writes;
 *   archive/byteorder  "little";
 *   archive/data/0     the S*D elements, little-endian, row-major;
 *   archive/version    "3\n".
 * Every record's data starts at a multiple of 64 (padding in an "FB" extra
 * field of the local header, as torch writes it), each carries its CRC-32,
 * no data descriptors, no zip64: an archive must stay under 4 GiB
 * (tv_torchsave_plan refuses larger ones).
 *
 * Zero copy: plan, let the caller write the elements at data_offset (e.g.
 * tokvec_embed of one sequence), then tv_torchsave_finish writes the rest.
 *
 * Pure functions; any thread (the CRC tables are built once, under
 * pthread_once).
 */
#ifndef TV_TORCHSAVE_H
#define TV_TORCHSAVE_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_float.h"

typedef struct tv_torchsave_layout {
    size_t size;        /* bytes of the whole archive */
    size_t data_offset; /* where the rows*cols elements go (64-aligned) */
    size_t data_bytes;  /* rows * cols * element size */
} tv_torchsave_layout;

/* rows = TV_TORCH_VECTOR: a 1-D (cols,) tensor (stride (1,)) instead:
 * the sentence vectors of "pooling": "mean". */
#define TV_TORCH_VECTOR ((int64_t)-1)

/* The layout of torch.save of a (rows, cols) tensor of dtype dt. 0, or -1
 * when rows or cols is not positive or the archive would reach 4 GiB. */
int tv_torchsave_plan(int64_t rows, int64_t cols, tokvec_dtype dt,
                      tv_torchsave_layout *out);

/* Writes everything but the elements into buf (layout.size bytes, the
 * elements already at layout.data_offset); returns layout.size. The plan
 * must have succeeded for the same rows, cols, dt. */
size_t tv_torchsave_finish(void *buf, int64_t rows, int64_t cols,
                           tokvec_dtype dt);

/* Copies n = rows*cols elements of dt from data and finishes the archive:
 * plan + memcpy + finish. Returns the archive's size (buf must hold it). */
size_t tv_torchsave(void *buf, const void *data, int64_t rows, int64_t cols,
                    tokvec_dtype dt);

/* The /embed answer with "encoding_format": "torch", for x of shape
 * (B, S, D), elements of dt, row-major:
 *   {"shape":[B,S,D],"dtype":"float16","embeddings":["<b64>",...]}
 * one standard-base64 string per sequence, each the torch.save archive of
 * that sequence's (S, D) tensor. tv_embed_torch_json_bound: a safe size of
 * the body, 0 when an archive would reach 4 GiB or the sizes overflow.
 * tv_embed_torch_json needs scratch of tv_torchsave_plan(S, D, dt).size
 * bytes and returns the exact length written. */
size_t tv_embed_torch_json_bound(int64_t B, int64_t S, int64_t D,
                                 tokvec_dtype dt);
size_t tv_embed_torch_json(char *buf, const void *x, int64_t B, int64_t S,
                           int64_t D, tokvec_dtype dt, void *scratch);
/* The same with S = TV_TORCH_VECTOR: {"shape":[B,D],...} and one (D,)
 * tensor per input. */

#endif
