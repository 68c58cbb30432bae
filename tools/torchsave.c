/* torchsave.c -- the "encoding_format": "torch" /embed body for given
 * float32 values, without a server: for tests/e2e/test_torchsave.py, which
 * loads every archive with PyTorch.
 *
 *   torchsave B S D DTYPE < values > body.json
 *
 * Reads B*S*D little-endian float32 from stdin, narrows them to DTYPE
 * (float32, float16, bfloat16: round to nearest even, as the server's
 * ?dtype= does, tokvec_narrow) and writes tv_embed_torch_json's body:
 * {"shape":[B,S,D],"dtype":"...","embeddings":["<base64 torch.save>",...]}.
 * Exit 2 on bad arguments or short input. Single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tokvec_float.h"
#include "torchsave.h"

static int64_t arg(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    return *s && !*end && v > 0 ? v : -1;
}

int main(int argc, char **argv)
{
    tokvec_dtype dt;
    tv_torchsave_layout l;
    if (argc != 5) {
        fprintf(stderr, "usage: torchsave B S D float32|float16|bfloat16 "
                        "< float32 values > body.json\n");
        return 2;
    }
    int64_t B = arg(argv[1]), S = arg(argv[2]), D = arg(argv[3]);
    if (B < 0 || S < 0 || D < 0 || tokvec_dtype_parse(argv[4], &dt) < 0 ||
        tv_torchsave_plan(S, D, dt, &l) < 0) {
        fprintf(stderr, "torchsave: bad shape or dtype\n");
        return 2;
    }
    size_t n = (size_t)(B * S * D);
    size_t cap = tv_embed_torch_json_bound(B, S, D, dt);
    float *in = malloc(n * sizeof *in);
    void *x = malloc(n * tokvec_dtype_size(dt));
    void *scratch = malloc(l.size);
    char *out = malloc(cap);
    int rc = 2;
    if (!in || !x || !scratch || !out) {
        fprintf(stderr, "torchsave: out of memory\n");
        goto done;
    }
    if (fread(in, sizeof *in, n, stdin) != n) {
        fprintf(stderr, "torchsave: expected %zu float32 on stdin\n", n);
        goto done;
    }
    tokvec_narrow(dt, in, x, n);
    size_t len = tv_embed_torch_json(out, x, B, S, D, dt, scratch);
    rc = fwrite(out, 1, len, stdout) == len ? 0 : 1;
done:
    free(in);
    free(x);
    free(scratch);
    free(out);
    return rc;
}
