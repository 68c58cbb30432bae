/* model.c -- static embedding model directories (tokvec_model.h): which
 * layout a directory holds, its table (Model2Vec's weights and mapping
 * through tokvec_table_opts), its normalization, and what Model2Vec's
 * encode reads from the tokenizer's vocabulary (median token length, the
 * unknown token's id).
 *
 * Reads files only at open (jansson for the JSON ones); every failure is
 * one line "FILE: what". The handle is immutable afterwards: any thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "tokvec_model.h"

struct tokvec_model {
    tokvec_model_info info;
    tokvec_table *table;
    char *dir, *table_path, *tokenizer_path;
};

/* "dir/a" or "dir/a/b" (b may be NULL), malloc'd; NULL when out of memory. */
static char *join(const char *dir, const char *a, const char *b)
{
    size_t n = strlen(dir) + strlen(a) + (b ? strlen(b) : 0) + 3;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s%s", dir, a, b ? "/" : "", b ? b : "");
    return p;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Records "path: what" in opts' buffer; returns code. */
static int record(const tokvec_model_opts *o, const char *path, int code,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int record(const tokvec_model_opts *o, const char *path, int code,
                  const char *fmt, ...)
{
    if (o->errbuf && o->errlen) {
        va_list ap;
        va_start(ap, fmt);
        tokvec__vnote(o->errbuf, o->errlen, path, fmt, ap);
        va_end(ap);
    }
    return code;
}
#define fail(o, path, code, ...) \
    (record((o), (path), (code), __VA_ARGS__), (code))

/* A JSON file of the directory: 0 with *out NULL when it is absent, the
 * parsed value, or TOKVEC_E_MODEL naming the file and the parse error. */
static int load_json(const tokvec_model_opts *o, const char *path,
                     json_t **out)
{
    json_error_t e;
    *out = NULL;
    if (!is_file(path))
        return 0;
    *out = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!*out)
        return fail(o, path, TOKVEC_E_MODEL,
                    "not valid JSON: %s (line %d, column %d)", e.text, e.line,
                    e.column);
    return 0;
}

/* "normalize" of a config file: -1 when absent or null, else 0/1; a
 * value other than a boolean is TOKVEC_E_MODEL. */
static int config_normalize(const tokvec_model_opts *o, const char *path,
                            int *out)
{
    json_t *j;
    int rc = load_json(o, path, &j);
    *out = -1;
    if (rc < 0 || !j)
        return rc;
    json_t *v = json_is_object(j) ? json_object_get(j, "normalize") : NULL;
    if (!json_is_object(j))
        rc = fail(o, path, TOKVEC_E_MODEL, "not a JSON object");
    else if (v && !json_is_null(v) && !json_is_boolean(v))
        rc = fail(o, path, TOKVEC_E_MODEL,
                  "\"normalize\" is not true, false or null");
    else if (json_is_boolean(v))
        *out = json_is_true(v);
    json_decref(j);
    return rc;
}

/* modules.json: 1 when a module's "type" ends in "Normalize", -1 when
 * there is none (or no file). A list of objects, else TOKVEC_E_MODEL. */
static int modules_normalize(const tokvec_model_opts *o, const char *path,
                             int *out)
{
    json_t *j;
    int rc = load_json(o, path, &j);
    *out = -1;
    if (rc < 0 || !j)
        return rc;
    if (!json_is_array(j)) {
        json_decref(j);
        return fail(o, path, TOKVEC_E_MODEL, "not a JSON list of modules");
    }
    for (size_t i = 0; i < json_array_size(j); i++) {
        json_t *m = json_array_get(j, i);
        const char *type = json_string_value(json_object_get(m, "type"));
        if (!json_is_object(m) || !type) {
            json_decref(j);
            return fail(o, path, TOKVEC_E_MODEL,
                        "module %zu is not an object with a string \"type\"",
                        i);
        }
        size_t n = strlen(type);
        if (n >= 9 && !strcmp(type + n - 9, "Normalize"))
            *out = 1;
    }
    json_decref(j);
    return 0;
}

static int64_t code_points(const char *s, size_t n)
{
    int64_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The vocabulary's strings (model.vocab: an object token -> id, or
 * Unigram's list of [piece, score]; added_tokens' contents not in it):
 * their median length and count; the unknown token's id. */
static int vocab_facts(tokvec_model *m, const tokvec_model_opts *o,
                       const char *path)
{
    json_t *j;
    int rc = load_json(o, path, &j);
    if (rc < 0)
        return rc;
    if (!j)
        return fail(o, path, TOKVEC_E_MODEL,
                    "missing (a model directory "
                    "needs a tokenizer.json)");
    json_t *model = json_object_get(j, "model");
    json_t *vocab = json_object_get(model, "vocab");
    json_t *added = json_object_get(j, "added_tokens");
    const char *type = json_string_value(json_object_get(model, "type"));
    size_t nv = json_is_object(vocab)  ? json_object_size(vocab)
                : json_is_array(vocab) ? json_array_size(vocab)
                                       : 0;
    size_t na = json_array_size(added);
    int64_t *len = NULL;
    size_t n = 0;
    m->info.unk_id = -1;
    if (!json_is_object(model) ||
        (!json_is_object(vocab) && !json_is_array(vocab))) {
        rc = fail(o, path, TOKVEC_E_MODEL,
                  "no \"model\" with a \"vocab\" object or list");
        goto out;
    }
    len = malloc((nv + na + 1) * sizeof *len);
    if (!len) {
        rc = -ENOMEM;
        goto out;
    }
    if (json_is_object(vocab)) {
        const char *key;
        json_t *v;
        json_object_foreach(vocab, key, v)
            len[n++] = code_points(key, strlen(key));
    } else {
        for (size_t i = 0; i < nv; i++) {
            json_t *piece = json_array_get(json_array_get(vocab, i), 0);
            if (!json_is_string(piece)) {
                rc = fail(o, path, TOKVEC_E_MODEL,
                          "model.vocab[%zu] is not a [piece, score] pair", i);
                goto out;
            }
            len[n++] = code_points(json_string_value(piece),
                                   json_string_length(piece));
        }
    }
    for (size_t i = 0; i < na; i++) {
        json_t *a = json_array_get(added, i);
        json_t *c = json_object_get(a, "content");
        json_int_t id = json_integer_value(json_object_get(a, "id"));
        if (!json_is_string(c)) {
            rc = fail(o, path, TOKVEC_E_MODEL,
                      "added_tokens[%zu] has no string \"content\"", i);
            goto out;
        }
        const char *s = json_string_value(c);
        int known = json_is_object(vocab)
                        ? json_object_get(vocab, s) != NULL
                        : id >= 0 && (size_t)id < nv &&
                              !strcmp(s, json_string_value(json_array_get(
                                             json_array_get(vocab, (size_t)id),
                                             0)));
        for (size_t k = 0; !known && k < i; k++)
            known = !strcmp(s, json_string_value(json_object_get(
                                   json_array_get(added, k), "content")));
        if (!known)
            len[n++] = code_points(s, json_string_length(c));
    }
    m->info.tokenizer_tokens = (int64_t)n;
    qsort(len, n, sizeof *len, cmp_i64);
    /* numpy's median (the mean of the middle two for an even count),
     * then int(): the floor, as lengths are not negative. */
    m->info.median_token_length = !n      ? 0
                                  : n % 2 ? len[n / 2]
                                          : (len[n / 2 - 1] + len[n / 2]) / 2;
    const char *unk = json_string_value(json_object_get(model, "unk_token"));
    if (unk && !(type && !strcmp(type, "Unigram"))) {
        json_t *id = json_is_object(vocab) ? json_object_get(vocab, unk)
                                           : NULL;
        for (size_t i = 0; !id && i < na; i++) {
            json_t *a = json_array_get(added, i);
            const char *c = json_string_value(json_object_get(a, "content"));
            if (c && !strcmp(c, unk))
                id = json_object_get(a, "id");
        }
        if (!json_is_integer(id)) {
            rc = fail(o, path, TOKVEC_E_MODEL,
                      "model.unk_token is not a token of the vocabulary");
            goto out;
        }
        m->info.unk_id = json_integer_value(id);
    }
out:
    free(len);
    json_decref(j);
    return rc;
}

/* model.safetensors at path with token tensor name: 0, the table's code,
 * or TOKVEC_E_NO_TENSOR (nothing recorded) when name is not in it. */
static int open_table(tokvec_model *m, const tokvec_model_opts *o,
                      const char *path, const char *name, int model2vec)
{
    tokvec_table_opts t = {.token_tensor = name,
                           .positional = TOKVEC_POS_NONE,
                           .flags = o->table_flags,
                           .errbuf = o->errbuf,
                           .errlen = o->errlen};
    if (model2vec) {
        t.weights_tensor = "weights";
        t.mapping_tensor = "mapping";
    }
    int rc = tokvec_table_open(path, &t, &m->table);
    if (rc == TOKVEC_E_NO_TENSOR && o->errbuf && o->errlen)
        o->errbuf[0] = '\0';
    return rc;
}

/* Which layout, and its table. */
static int find_layout(tokvec_model *m, const tokvec_model_opts *o)
{
    char *top = join(m->dir, "model.safetensors", NULL);
    char *sub = join(m->dir, "0_StaticEmbedding", "model.safetensors");
    int rc = -ENOMEM;
    if (!top || !sub)
        goto out;
    if (is_file(top)) {
        rc = open_table(m, o, top, "embeddings", 1);
        m->info.layout = TOKVEC_LAYOUT_MODEL2VEC;
        if (rc == TOKVEC_E_NO_TENSOR) {
            rc = open_table(m, o, top, "embedding.weight", 0);
            m->info.layout = TOKVEC_LAYOUT_SENTENCE_TRANSFORMERS;
        }
        if (rc == TOKVEC_E_NO_TENSOR)
            rc = fail(o, top, TOKVEC_E_MODEL,
                      "holds neither \"embeddings\" (Model2Vec) nor "
                      "\"embedding.weight\" (sentence-transformers)");
        m->table_path = top;
        top = NULL;
    } else if (is_file(sub)) {
        rc = open_table(m, o, sub, "embedding.weight", 0);
        m->info.layout = TOKVEC_LAYOUT_SENTENCE_TRANSFORMERS;
        if (rc == TOKVEC_E_NO_TENSOR)
            rc = fail(o, sub, TOKVEC_E_MODEL,
                      "holds no \"embedding.weight\" (sentence-transformers)");
        m->table_path = sub;
        sub = NULL;
    } else {
        rc = fail(o, m->dir, TOKVEC_E_MODEL,
                  "no model.safetensors (Model2Vec) or 0_StaticEmbedding/"
                  "model.safetensors (sentence-transformers)");
    }
out:
    free(top);
    free(sub);
    return rc;
}

/* modules.json, config.json, config_sentence_transformers.json, in that
 * order (the first that says wins), unless opts override. */
static int find_normalize(tokvec_model *m, const tokvec_model_opts *o)
{
    static const char *const files[] = {"modules.json", "config.json",
                                        "config_sentence_transformers.json"};
    int rc = 0;
    m->info.normalize = 0;
    m->info.normalize_from = "default";
    /* Every file is read (and checked) even when an earlier one said. */
    for (size_t i = 0; rc >= 0 && i < 3; i++) {
        char *p = join(m->dir, files[i], NULL);
        int v = -1;
        if (!p)
            return -ENOMEM;
        rc = i == 0 ? modules_normalize(o, p, &v) : config_normalize(o, p, &v);
        free(p);
        if (rc >= 0 && v >= 0 && !strcmp(m->info.normalize_from, "default")) {
            m->info.normalize = v;
            m->info.normalize_from = files[i];
        }
    }
    if (rc >= 0 && o->normalize_set) {
        m->info.normalize = o->normalize != 0;
        m->info.normalize_from = "override";
    }
    return rc;
}

int tokvec_model_open(const char *dir, const tokvec_model_opts *opts,
                      tokvec_model **out)
{
    tokvec_model_opts none = {0};
    const tokvec_model_opts *o = opts ? opts : &none;
    struct stat st;
    int rc;
    *out = NULL;
    if (o->errbuf && o->errlen)
        o->errbuf[0] = '\0';
    if (!dir)
        return TOKVEC_E_INVAL;
    if (stat(dir, &st) < 0) {
        rc = -errno;
        return fail(o, dir, rc, "cannot open: %s", strerror(-rc));
    }
    if (!S_ISDIR(st.st_mode))
        return fail(o, dir, TOKVEC_E_MODEL,
                    "not a directory (a model is a directory holding "
                    "tokenizer.json and model.safetensors)");
    tokvec_model *m = calloc(1, sizeof *m);
    if (!m) /* one line naming the directory, as every failure */
        return fail(o, dir, -ENOMEM, "%s", tokvec_strerror(-ENOMEM));
    m->dir = strdup(dir);
    /* "DIR/" is DIR: the files are joined to it */
    for (size_t n = m->dir ? strlen(m->dir) : 0; n > 1 && m->dir[n - 1] == '/';
         n--)
        m->dir[n - 1] = '\0';
    rc = m->dir ? find_layout(m, o) : -ENOMEM;
    if (rc < 0)
        goto out;
    /* tokenizer.json at DIR, or (sentence-transformers) beside the table */
    m->tokenizer_path = join(m->dir, "tokenizer.json", NULL);
    if (m->tokenizer_path && !is_file(m->tokenizer_path) &&
        m->info.layout == TOKVEC_LAYOUT_SENTENCE_TRANSFORMERS) {
        char *p = join(m->dir, "0_StaticEmbedding", "tokenizer.json");
        if (p && is_file(p)) {
            free(m->tokenizer_path);
            m->tokenizer_path = p;
        } else {
            free(p);
        }
    }
    rc = m->tokenizer_path ? vocab_facts(m, o, m->tokenizer_path) : -ENOMEM;
    if (rc >= 0)
        rc = find_normalize(m, o);
    if (rc < 0)
        goto out;
    m->info.dir = m->dir;
    m->info.layout_name = tokvec_model_layout_name(m->info.layout);
    m->info.table_path = m->table_path;
    m->info.tokenizer_path = m->tokenizer_path;
    *out = m;
    return 0;
out:
    if (rc < 0 && o->errbuf && o->errlen && !o->errbuf[0])
        (void)fail(o, dir, rc, "%s", tokvec_strerror(rc));
    tokvec_model_close(m);
    return rc;
}

void tokvec_model_close(tokvec_model *m)
{
    if (!m)
        return;
    tokvec_table_close(m->table);
    free(m->dir);
    free(m->table_path);
    free(m->tokenizer_path);
    free(m);
}

const tokvec_model_info *tokvec_model_get_info(const tokvec_model *m)
{
    return &m->info;
}

const tokvec_table *tokvec_model_table(const tokvec_model *m)
{
    return m->table;
}

const char *tokvec_model_layout_name(tokvec_model_layout l)
{
    return l == TOKVEC_LAYOUT_MODEL2VEC               ? "model2vec"
           : l == TOKVEC_LAYOUT_SENTENCE_TRANSFORMERS ? "sentence-transformers"
                                                      : NULL;
}

size_t tokvec_model_text_cut(const tokvec_model *m, const char *text,
                             size_t len, int64_t max_tokens)
{
    int64_t keep;
    if (max_tokens < 1 ||
        __builtin_mul_overflow(max_tokens, m->info.median_token_length, &keep))
        return len;
    /* Python's sentence[:keep]: the first keep code points. */
    int64_t seen = 0;
    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)text[i] & 0xC0) != 0x80 && seen++ == keep)
            return i;
    }
    return len;
}

void tokvec_model_default_name(const char *dir, char *buf, size_t len)
{
    /* The components, last first, trailing slashes ignored. */
    const char *part[3] = {"", "", ""};
    size_t plen[3] = {0, 0, 0};
    size_t end = strlen(dir);
    for (int k = 0; k < 3; k++) {
        while (end > 0 && dir[end - 1] == '/')
            end--;
        size_t start = end;
        while (start > 0 && dir[start - 1] != '/')
            start--;
        part[k] = dir + start;
        plen[k] = end - start;
        end = start;
    }
    const char *name = part[0];
    size_t n = plen[0];
    if (plen[1] == 9 && !strncmp(part[1], "snapshots", 9) && plen[2] > 8 &&
        !strncmp(part[2], "models--", 8)) {
        /* models--ORG--NAME: NAME is what follows the last "--". */
        for (size_t i = plen[2]; i >= 2; i--)
            if (part[2][i - 1] == '-' && part[2][i - 2] == '-') {
                name = part[2] + i;
                n = plen[2] - i;
                break;
            }
    }
    if (!n) {
        name = "model";
        n = 5;
    }
    if (len)
        snprintf(buf, len, "%.*s", (int)n, name);
}
