/* base.c -- what every format parser of a table shares, below them all
 * (table.c dispatches to safetensors.c, npy.c, gguf.c and shards.c, which
 * call only down to here): the contract's tensor names, the positional
 * names, recording a failure in the caller's buffer, mapping a file, the
 * little-endian reader and the overflow check, finding and picking tensors,
 * and the check that no two tensors share a byte.
 *
 * Pure functions of their arguments (mapping excepted: it opens and maps
 * a file, read-only); any thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

const char *const tokvec__token_names[] = {
    "tok_emb.weight",
    "wte.weight",
    "transformer.wte.weight",
    "embeddings.word_embeddings.weight",
    "model.embed_tokens.weight",
    NULL,
};
const char *const tokvec__position_names[] = {
    "pos_emb.weight", "wpe.weight", "transformer.wpe.weight",
    "embeddings.position_embeddings.weight", NULL};

const char *tokvec_positional_name(tokvec_positional p)
{
    switch (p) {
    case TOKVEC_POS_NONE:
        return "none";
    case TOKVEC_POS_LEARNED:
        return "learned";
    case TOKVEC_POS_SINUSOIDAL:
        return "sinusoidal";
    default:
        return "auto";
    }
}

int tokvec_positional_parse(const char *s, tokvec_positional *out)
{
    if (!s)
        return TOKVEC_E_INVAL;
    if (!strcmp(s, "none"))
        *out = TOKVEC_POS_NONE;
    else if (!strcmp(s, "learned"))
        *out = TOKVEC_POS_LEARNED;
    else if (!strcmp(s, "sinusoidal"))
        *out = TOKVEC_POS_SINUSOIDAL;
    else if (!strcmp(s, "auto"))
        *out = TOKVEC_POS_AUTO;
    else
        return TOKVEC_E_INVAL;
    return 0;
}

/* Records a one-line reason "path: what" in the caller's buffer; returns
 * code so error paths are one statement. */
int tokvec__record_fail(const tokvec_table_opts *o, const char *path, int code,
                        const char *fmt, ...)
{
    if (o && o->errbuf && o->errlen) {
        va_list ap;
        va_start(ap, fmt);
        tokvec__vnote(o->errbuf, o->errlen, path, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* What a file that is not a regular one is, for the error message. */
static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "a file of unknown type";
}

/* Maps a whole file read-only. O_NONBLOCK: opening a FIFO (or a device)
 * must not wait for a writer -- a SIGHUP reload runs this on the main
 * thread, which would then never see SIGTERM. Anything but a regular file
 * is refused after fstat; O_NONBLOCK does not affect mmap of a regular
 * file. */
int tokvec__map_file(const tokvec_table_opts *o, const char *path,
                     const unsigned char **map, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), rc = 0;
    *map = NULL;
    *len = 0;
    if (fd < 0) {
        rc = -errno;
        return tokvec__fail(o, path, rc, "cannot open: %s", strerror(-rc));
    }
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        rc = tokvec__fail(o, path, rc, "cannot stat: %s", strerror(-rc));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = tokvec__fail(o, path, TOKVEC_E_FORMAT,
                          "is %s, not a regular file", file_kind(st.st_mode));
        goto out;
    }
    if (st.st_size == 0) {
        rc = tokvec__fail(o, path, TOKVEC_E_TRUNCATED, "file is empty");
        goto out;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        rc = -errno;
        rc = tokvec__fail(o, path, rc, "cannot map: %s", strerror(-rc));
        goto out;
    }
    *map = m;
    *len = (size_t)st.st_size;
out:
    close(fd);
    return rc;
}

uint64_t tokvec__le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int tokvec__mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

const tokvec__tensor *tokvec__find_tensor(const tokvec_table *t,
                                          const char *name, int file)
{
    for (size_t i = 0; i < t->ntensors; i++)
        if (!strcmp(t->tensors[i].name, name) &&
            (file < 0 || t->tensors[i].file == file))
            return &t->tensors[i];
    return NULL;
}

/* The token tensor (opts->token_tensor or the first of names[0] present)
 * and the position tensor (opts->position_tensor, or the first of names[1]
 * when positions may be learned; NULL if none). */
int tokvec__pick(const tokvec_table *t, const tokvec_table_opts *o,
                 const char *path, const char *const *const names[2],
                 const tokvec__tensor **tok, const tokvec__tensor **pos)
{
    *tok = *pos = NULL;
    if (o->token_tensor) {
        *tok = tokvec__find_tensor(t, o->token_tensor, -1);
    } else {
        for (int i = 0; names[0][i] && !*tok; i++)
            *tok = tokvec__find_tensor(t, names[0][i], -1);
    }
    if (!*tok)
        return tokvec__fail(o, path, TOKVEC_E_NO_TENSOR,
                            o->token_tensor ? "no tensor named '%s'"
                                            : "no token tensor (%s or the "
                                              "other names of the contract)",
                            o->token_tensor ? o->token_tensor : names[0][0]);
    if (o->position_tensor) {
        *pos = tokvec__find_tensor(t, o->position_tensor, -1);
        if (!*pos)
            return tokvec__fail(o, path, TOKVEC_E_NO_TENSOR,
                                "no tensor named '%s'", o->position_tensor);
    } else if (o->positional == TOKVEC_POS_AUTO ||
               o->positional == TOKVEC_POS_LEARNED) {
        for (int i = 0; names[1][i] && !*pos; i++)
            *pos = tokvec__find_tensor(t, names[1][i], -1);
    }
    return 0;
}

/* Data order: by begin, then end. */
static int by_offsets(const void *a, const void *b)
{
    const tokvec__tensor *x = *(const tokvec__tensor *const *)a;
    const tokvec__tensor *y = *(const tokvec__tensor *const *)b;
    if (x->data != y->data)
        return x->data < y->data ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

int tokvec__check_overlaps(const tokvec_table *t, const tokvec_table_opts *o,
                           const char *path, const unsigned char *data,
                           size_t first, const char *what)
{
    size_t count = t->ntensors - first;
    const tokvec__tensor **v = malloc((count ? count : 1) * sizeof *v);
    size_t n = 0;
    int rc = 0;
    if (!v)
        return -ENOMEM;
    for (size_t i = first; i < t->ntensors; i++)
        if (t->tensors[i].nbytes)
            v[n++] = &t->tensors[i];
    qsort(v, n, sizeof *v, by_offsets);
    for (size_t i = 1; i < n; i++) {
        const tokvec__tensor *a = v[i - 1], *b = v[i];
        uint64_t ab = (uint64_t)(a->data - data);
        uint64_t bb = (uint64_t)(b->data - data);
        if (bb < ab + a->nbytes) {
            rc = tokvec__fail(o, path, TOKVEC_E_OFFSETS,
                              "tensors '%s' [%" PRIu64 ", %" PRIu64
                              "] and '%s' [%" PRIu64 ", %" PRIu64
                              "] overlap (%s forbids tensors sharing bytes)",
                              a->name, ab, ab + a->nbytes, b->name, bb,
                              bb + b->nbytes, what);
            break;
        }
    }
    free(v);
    return rc;
}
