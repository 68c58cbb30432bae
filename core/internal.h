/* internal.h -- the table handle's fields, shared by table.c (which builds
 * it) and embed.c (which reads it). Not a public header: nothing outside
 * core/ includes it. Fields never change after tokvec_table_open returns.
 */
#ifndef TOKVEC_INTERNAL_H
#define TOKVEC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tokvec_embed.h"
#include "tokvec_float.h"
#include "tokvec_table.h"

typedef struct tokvec__tensor {
    char *name;
    char *dtype;
    int ndim;
    int64_t *shape;
    const unsigned char *data; /* into a map */
    uint64_t nbytes;
} tokvec__tensor;

struct tokvec_table {
    tokvec_table_info info;
    char *path;
    const unsigned char *map; /* the file, PROT_READ */
    size_t map_len;
    const unsigned char *map2; /* positions .npy, or NULL */
    size_t map2_len;
    tokvec__tensor *tensors;
    size_t ntensors;
    char *metadata_json;
    tokvec_positional meta_positional; /* from __metadata__, or AUTO */
    int64_t meta_context;              /* from __metadata__, or 0 */
    const unsigned char *tok; /* row 0 of the token table */
    const unsigned char *pos; /* row 0 of learned positions, or NULL */
    float *sin_pos;           /* sinusoidal positions, or NULL */
    size_t row_bytes;         /* dim * dtype size */
    int aligned;              /* tok and pos rows are float-aligned */
};

#endif
