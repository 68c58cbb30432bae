/* shards.c -- sharded safetensors checkpoints: a model.safetensors.index.json
 * whose "weight_map" names, for each tensor, the shard file holding it
 * (Hugging Face's layout: model-00001-of-00003.safetensors, ...).
 *
 * Only the shard(s) holding the token and position tables are mapped and
 * parsed, each with every rule of a single safetensors file. Shard names
 * are paths relative to the index's directory and must stay inside it:
 * no absolute path, no ".." component (symbolic links are followed, as
 * the Hugging Face cache's snapshots are links into its blobs).
 *
 * Called by tokvec_table_open (table.c) on the thread opening the table.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define INDEX_NAME "model.safetensors.index.json"
#define INDEX_SUFFIX ".safetensors.index.json"

static char *join(const char *dir, size_t dlen, const char *name)
{
    size_t n = strlen(name);
    char *p = malloc(dlen + n + 2);
    if (p) {
        memcpy(p, dir, dlen);
        p[dlen] = '/';
        memcpy(p + dlen + 1, name, n + 1);
    }
    return p;
}

/* The one *.safetensors.index.json in dir other than INDEX_NAME, or NULL
 * (none, or more than one: ambiguous; *oom set when out of memory). */
static char *other_index(const char *dir, int *oom)
{
    DIR *d = opendir(dir);
    char *found = NULL;
    int n = 0;
    *oom = 0;
    if (!d) {
        *oom = errno == ENOMEM;
        return NULL;
    }
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        size_t len = strlen(e->d_name), sl = strlen(INDEX_SUFFIX);
        if (len > sl && !strcmp(e->d_name + len - sl, INDEX_SUFFIX) &&
            n++ == 0) {
            found = join(dir, strlen(dir), e->d_name);
            *oom = !found;
        }
    }
    closedir(d);
    if (n != 1 || *oom) {
        free(found);
        return NULL;
    }
    return found;
}

char *tokvec__index_in_dir(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return strdup(path);
    char *p = join(path, strlen(path), INDEX_NAME);
    if (!p || !access(p, F_OK))
        return p;
    free(p);
    int oom;
    p = other_index(path, &oom);
    if (p || oom)
        return p;        /* NULL: out of memory, not "a directory" */
    return strdup(path); /* the directory: refused by map_file */
}

/* A shard name must be a relative path inside the index's directory. */
static int safe_name(const char *s, size_t len)
{
    if (!len || strlen(s) != len || s[0] == '/')
        return 0;
    for (const char *c = s; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return 0;
        c += n;
        while (*c == '/')
            c++;
    }
    return 1;
}

/* The index's shards, in order of first mention, with their counts. */
static int collect_shards(tokvec_table *t, const tokvec_table_opts *o,
                          const char *path, json_t *wm)
{
    const char *key;
    json_t *v;
    t->shards = calloc(json_object_size(wm) + 1, sizeof *t->shards);
    if (!t->shards)
        return -ENOMEM;
    t->nshards = 0;
    json_object_foreach(wm, key, v) {
        if (!json_is_string(v))
            return tokvec__fail(o, path, TOKVEC_E_HEADER_JSON,
                                "weight_map entry '%s' is not a string", key);
        const char *f = json_string_value(v);
        if (!safe_name(f, json_string_length(v)))
            return tokvec__fail(o, path, TOKVEC_E_SHARD_PATH,
                                "weight_map puts '%s' in '%s', outside the "
                                "index's directory (shards are relative "
                                "paths without '..')",
                                key, f);
        size_t k = 0;
        while (k < t->nshards && strcmp(t->shards[k].file, f))
            k++;
        if (k == t->nshards) {
            t->shards[k].map = -1;
            t->shards[k].file = strdup(f);
            if (!t->shards[k].file)
                return -ENOMEM;
            t->nshards++;
        }
        t->shards[k].ntensors++;
    }
    return 0;
}

/* The tensor name for one role: opts' name (which must be in the
 * weight_map) or the first of names there; NULL if none. */
static const char *role_name(const tokvec_table_opts *o, const char *path,
                             json_t *wm, const char *forced,
                             const char *const *names, int *rc)
{
    *rc = 0;
    if (forced) {
        if (!json_object_get(wm, forced))
            *rc = tokvec__fail(o, path, TOKVEC_E_NO_TENSOR,
                               "no tensor named '%s' in the weight_map",
                               forced);
        return forced;
    }
    for (int i = 0; names[i]; i++)
        if (json_object_get(wm, names[i]))
            return names[i];
    return NULL;
}

/* Maps and parses the shard of tensor `name` into map `slot` (unless it
 * is mapped already); *in is the map that holds it. */
static int load_shard(tokvec_table *t, const tokvec_table_opts *o, json_t *wm,
                      const char *name, int slot, int *in)
{
    const char *file = json_string_value(json_object_get(wm, name));
    tokvec__shard *s = t->shards;
    /* collect_shards listed every value of wm, all of them strings. */
    assert(file);
    while (s->file && strcmp(s->file, file))
        s++;
    assert(s->file);
    if (s->map < 0) {
        const char *slash = strrchr(t->path, '/');
        char *p = slash ? join(t->path, (size_t)(slash - t->path), file)
                        : strdup(file);
        const unsigned char **map = slot ? &t->map2 : &t->map;
        size_t *len = slot ? &t->map2_len : &t->map_len;
        int rc;
        t->map_path[slot] = p;
        if (!t->map_path[slot])
            return -ENOMEM;
        s->map = slot;
        rc = tokvec__map_file(o, p, map, len);
        if (rc >= 0)
            rc = tokvec__parse_safetensors(t, o, p, *map, *len, slot);
        if (rc < 0)
            return rc;
    }
    *in = s->map;
    return 0;
}

/* The tensor called name in map `in`, once every shard is parsed (parsing
 * moves t->tensors). */
static int find_in(const tokvec_table *t, const tokvec_table_opts *o,
                   const char *name, int in, const tokvec__tensor **x)
{
    *x = tokvec__find_tensor(t, name, in);
    if (!*x)
        return tokvec__fail(o, t->map_path[in], TOKVEC_E_NO_TENSOR,
                            "the index puts '%s' in this shard, which has "
                            "no such tensor",
                            name);
    return 0;
}

int tokvec__open_index(tokvec_table *t, const tokvec_table_opts *o,
                       const char *path, const tokvec__tensor **tok,
                       const tokvec__tensor **pos)
{
    json_error_t jerr;
    json_t *root = NULL;
    int rc = 0;
    *tok = *pos = NULL;
    if (t->map_len > TOKVEC_MAX_HEADER)
        return tokvec__fail(o, path, TOKVEC_E_HEADER_SIZE,
                            "index of %zu bytes is over the %u byte limit",
                            t->map_len, TOKVEC_MAX_HEADER);
    root = json_loadb((const char *)t->map, t->map_len, JSON_REJECT_DUPLICATES,
                      &jerr);
    munmap((void *)t->map, t->map_len); /* the shards take its place */
    t->map = NULL;
    t->map_len = 0;
    if (!root)
        return tokvec__fail(o, path, TOKVEC_E_HEADER_JSON,
                            "index is not valid JSON: %s (line %d)", jerr.text,
                            jerr.line);
    json_t *wm = json_object_get(root, "weight_map");
    if (!json_is_object(root) || !json_is_object(wm)) {
        rc = tokvec__fail(o, path, TOKVEC_E_HEADER_JSON,
                          "index has no \"weight_map\" object");
        goto out;
    }
    rc = collect_shards(t, o, path, wm);
    if (rc < 0)
        goto out;
    const char *tn = role_name(o, path, wm, o->token_tensor,
                               tokvec__token_names, &rc);
    if (rc < 0)
        goto out;
    if (!tn) {
        rc = tokvec__fail(o, path, TOKVEC_E_NO_TENSOR,
                          "no token tensor (%s or the other names of the "
                          "contract) in the weight_map",
                          tokvec__token_names[0]);
        goto out;
    }
    const char *pn = NULL;
    if (o->position_tensor || o->positional == TOKVEC_POS_AUTO ||
        o->positional == TOKVEC_POS_LEARNED)
        pn = role_name(o, path, wm, o->position_tensor, tokvec__position_names,
                       &rc);
    int tin = 0, pin = 0;
    if (rc >= 0)
        rc = load_shard(t, o, wm, tn, 0, &tin);
    if (rc >= 0 && pn)
        rc = load_shard(t, o, wm, pn, 1, &pin);
    if (rc >= 0)
        rc = find_in(t, o, tn, tin, tok);
    if (rc >= 0 && pn)
        rc = find_in(t, o, pn, pin, pos);
out:
    json_decref(root);
    return rc;
}
