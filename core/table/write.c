/* write.c -- safetensors files written atomically.
 *
 * Header JSON (tensors in the given order with contiguous data_offsets, then
 * "__metadata__"), padded with spaces to a multiple of 8 so the data is
 * aligned, then the data; all into a mkstemp file in the destination's
 * directory, fsync'd, then renamed over the destination. On any failure the
 * temporary file is removed and the destination is untouched. Each call is
 * self-contained; any thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokvec_write.h"

static int write_all(int fd, const void *buf, size_t n, uint64_t *done,
                     uint64_t total, const tokvec_write_opts *o)
{
    const unsigned char *p = buf;
    while (n) {
        size_t k = n > (8u << 20) ? (8u << 20) : n;
        ssize_t w = write(fd, p, k);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        n -= (size_t)w;
        *done += (uint64_t)w;
        if (o && o->progress)
            o->progress(*done, total, o->progress_ud);
    }
    return 0;
}

static char *header_json(const tokvec_write_tensor *t, size_t n,
                         const tokvec_write_opts *o, uint64_t *data_len)
{
    json_t *root = json_object(), *meta = NULL;
    char *text = NULL;
    uint64_t off = 0;
    if (!root)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes = (uint64_t)t[i].rows * (uint64_t)t[i].cols *
                         tokvec_dtype_size(t[i].dtype);
        json_t *e = json_pack("{s:s, s:[I,I], s:[I,I]}", "dtype",
                              tokvec_dtype_name(t[i].dtype), "shape",
                              (json_int_t)t[i].rows, (json_int_t)t[i].cols,
                              "data_offsets", (json_int_t)off,
                              (json_int_t)(off + bytes));
        if (!e || json_object_set_new(root, t[i].name, e) < 0)
            goto out;
        off += bytes;
    }
    if (o && o->n_metadata) {
        meta = json_object();
        if (!meta)
            goto out;
        for (size_t i = 0; i < o->n_metadata; i++)
            if (json_object_set_new(meta, o->metadata_keys[i],
                                    json_string(o->metadata_values[i])) < 0)
                goto out;
        if (json_object_set(root, "__metadata__", meta) < 0)
            goto out;
    }
    text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    *data_len = off;
out:
    json_decref(meta);
    json_decref(root);
    return text;
}

int tokvec_safetensors_write(const char *path, const tokvec_write_tensor *t,
                             size_t n, const tokvec_write_opts *opts)
{
    char *tmp = NULL, *json = NULL, *hdr = NULL;
    int fd = -1, rc = 0;
    uint64_t data_len = 0, done = 0;

    if (!path || (!t && n))
        return TOKVEC_E_INVAL;
    for (size_t i = 0; i < n; i++)
        if (!t[i].name || t[i].rows < 0 || t[i].cols < 0 ||
            (!t[i].data && t[i].rows && t[i].cols))
            return TOKVEC_E_INVAL;
    json = header_json(t, n, opts, &data_len);
    if (!json) {
        rc = -ENOMEM;
        goto out;
    }
    size_t jlen = strlen(json), hlen = (jlen + 7) / 8 * 8;
    hdr = malloc(8 + hlen);
    if (!hdr) {
        rc = -ENOMEM;
        goto out;
    }
    for (int i = 0; i < 8; i++)
        hdr[i] = (char)((uint64_t)hlen >> (8 * i));
    memcpy(hdr + 8, json, jlen);
    memset(hdr + 8 + jlen, ' ', hlen - jlen);

    if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) {
        tmp = NULL;
        rc = -ENOMEM;
        goto out;
    }
    fd = mkstemp(tmp);
    if (fd < 0) {
        rc = -errno;
        free(tmp);
        tmp = NULL;
        goto out;
    }
    uint64_t total = 8 + hlen + data_len;
    rc = write_all(fd, hdr, 8 + hlen, &done, total, opts);
    if (rc < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        size_t bytes = (size_t)t[i].rows * (size_t)t[i].cols *
                       tokvec_dtype_size(t[i].dtype);
        rc = write_all(fd, t[i].data, bytes, &done, total, opts);
        if (rc < 0)
            goto out;
    }
    if (fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
        rc = -errno;
        goto out;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = -errno;
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) < 0) {
        rc = -errno;
        goto out;
    }
    free(tmp);
    tmp = NULL;
out:
    if (fd >= 0)
        close(fd);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(hdr);
    free(json);
    return rc;
}
