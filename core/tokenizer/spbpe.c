/* spbpe.c -- the BPE model of Hugging Face tokenizer.json without
 * ByteLevel: SentencePiece-style BPE (Llama 2, Mistral, converted
 * SentencePiece BPE models), run after the pipeline of tok_hf.h.
 *
 * As HF's BPE::merge_word and Word::merge_all (models/bpe): a word is cut
 * into characters; each (with continuing_subword_prefix when not first,
 * end_of_word_suffix when last) is its token when the vocabulary has it,
 * else with byte_fallback its bytes' <0xXX> tokens when all exist, else
 * unk_token (consecutive ones fused with fuse_unk; a pending unknown is
 * written only when the next known character or the word's end comes, as
 * HF does, so it can follow byte tokens). Then merges apply lowest rank
 * first, leftmost first among equal ranks (a binary heap of (rank,
 * position), stale entries skipped: at most 3 entries per symbol), so a
 * word costs O(n log n). A token
 * spans the bytes of its symbols; a byte token spans its character.
 * ignore_merges: a word that is a token is that token.
 *
 * Must hold: ids are HF's for valid UTF-8; the merges map keeps, for a
 * pair listed twice, the later rank (HF's HashMap collect). Threads: the
 * handle is read-only after open; a word allocates its own scratch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"

static int bad(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s", what);
    return TOKVEC_E_TOKENIZER;
}

/* An optional string key of model: "" when absent or null; -1 if it is
 * something else. */
static int opt_str(json_t *model, const char *key, char **out)
{
    json_t *v = json_object_get(model, key);
    const char *s = !v || json_is_null(v) ? "" : json_string_value(v);
    if (!s)
        return -1;
    *out = strdup(s);
    return *out ? 0 : -ENOMEM;
}

static int32_t vocab_id(json_t *vocab, const char *s)
{
    json_t *v = json_object_get(vocab, s);
    return json_is_integer(v) ? (int32_t)json_integer_value(v) : -1;
}

/* model.merges into t's pmap, the last of a repeated pair winning. */
static int merges(tokvec_tokenizer *t, json_t *vocab, json_t *arr,
                  size_t nprefix, char *err, size_t errlen)
{
    if (!json_is_array(arr))
        return bad(err, errlen, "model.merges: not an array");
    size_t n = json_array_size(arr);
    int rc = tv_pmap_init(t, n + 16);
    size_t cap = 256;
    char *buf = malloc(cap);
    if (!buf)
        rc = -ENOMEM;
    for (size_t k = n; rc == 0 && k-- > 0;) {
        json_t *v = json_array_get(arr, k);
        const char *a = NULL, *b = NULL, *s = json_string_value(v);
        size_t la = 0;
        if (s) {
            const char *sp = strchr(s, ' ');
            if (sp && !strchr(sp + 1, ' ')) {
                a = s;
                la = (size_t)(sp - s);
                b = sp + 1;
            }
        } else if (json_array_size(v) == 2) {
            a = json_string_value(json_array_get(v, 0));
            b = json_string_value(json_array_get(v, 1));
            la = a ? strlen(a) : 0;
        }
        size_t lb = b ? strlen(b) : 0;
        if (!a || !b || lb < nprefix) {
            snprintf(err, errlen,
                     "model.merges[%zu]: not \"a b\" or [\"a\", \"b\"] with b "
                     "at least as long as continuing_subword_prefix",
                     k);
            rc = TOKVEC_E_TOKENIZER;
            break;
        }
        if (la + lb + 1 > cap) {
            cap = 2 * (la + lb + 1);
            char *nb = realloc(buf, cap);
            if (!nb) {
                rc = -ENOMEM;
                break;
            }
            buf = nb;
        }
        memcpy(buf, a, la);
        buf[la] = '\0';
        int32_t ia = vocab_id(vocab, buf), ib = vocab_id(vocab, b);
        memcpy(buf + la, b + nprefix, lb - nprefix + 1);
        int32_t ir = vocab_id(vocab, buf);
        if (ia < 0 || ib < 0 || ir < 0) {
            snprintf(err, errlen,
                     "model.merges[%zu]: the %s is not in the vocabulary", k,
                     ia < 0   ? "left token"
                     : ib < 0 ? "right token"
                              : "merged token");
            rc = TOKVEC_E_TOKENIZER;
            break;
        }
        rc = tv_pmap_put(t, ia, ib, (uint32_t)k, ir);
    }
    free(buf);
    return rc;
}

int tv_spbpe_load(tokvec_tokenizer *t, json_t *root, char *err, size_t errlen)
{
    json_t *model = json_object_get(root, "model");
    json_t *vocab = json_object_get(model, "vocab"), *v;
    tv_hf *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    t->hf = h;
    h->model = TV_M_BPE;
    h->unk = -1;
    t->info.model = "BPE";
    json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout))
        return bad(err, errlen, "model.dropout: only null is supported");
    if (!json_is_object(vocab) || !json_object_size(vocab))
        return bad(err, errlen,
                   "model.vocab: not a non-empty object of token -> id");
    int rc = opt_str(model, "continuing_subword_prefix", &h->prefix);
    if (rc == 0)
        rc = opt_str(model, "end_of_word_suffix", &h->suffix);
    if (rc == -1)
        return bad(err, errlen,
                   "model: continuing_subword_prefix and end_of_word_suffix "
                   "must be strings or null");
    if (rc)
        return rc;
    h->nprefix = strlen(h->prefix);
    h->nsuffix = strlen(h->suffix);
    h->byte_fallback = json_is_true(json_object_get(model, "byte_fallback"));
    h->fuse_unk = json_is_true(json_object_get(model, "fuse_unk"));
    h->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
    json_t *unk = json_object_get(model, "unk_token");
    if (unk && !json_is_null(unk)) {
        const char *u = json_string_value(unk);
        h->unk = u ? vocab_id(vocab, u) : -1;
        if (h->unk < 0)
            return bad(err, errlen,
                       "model.unk_token: not a token of model.vocab");
    }
    for (int b = 0; b < 256; b++) {
        char bp[8];
        snprintf(bp, sizeof bp, "<0x%02X>", b);
        h->bfid[b] = vocab_id(vocab, bp);
    }
    const char *key;
    json_object_foreach(vocab, key, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        size_t kl = strlen(key);
        if (id < 0 || id >= TV_TOK_MAX_ID || !kl) {
            snprintf(err, errlen,
                     "model.vocab: token \"%.40s\": empty, or its id is not "
                     "an integer in [0, 2^24)",
                     key);
            return TOKVEC_E_TOKENIZER;
        }
        rc = tv_tok_add(t, (const unsigned char *)key, kl, (int32_t)id, 0);
        if (rc == TOKVEC_E_MISMATCH) {
            snprintf(err, errlen, "model.vocab: id %lld is given twice",
                     (long long)id);
            return TOKVEC_E_TOKENIZER;
        }
        if (rc)
            return rc;
    }
    rc = merges(t, vocab, json_object_get(model, "merges"), h->nprefix, err,
                errlen);
    return rc;
}

/* --- encoding --- */

typedef struct sym {
    int32_t id;
    long prev, next; /* -1: none */
    size_t len;      /* bytes of the word; 0: merged away */
} sym;

typedef struct mrg {
    uint32_t rank;
    size_t pos;
    int32_t id;
} mrg;

static int before(const mrg *a, const mrg *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(mrg *h, size_t *n, mrg m)
{
    size_t i = (*n)++;
    while (i > 0 && before(&m, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = m;
}

static mrg heap_pop(mrg *h, size_t *n)
{
    mrg top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && before(&h[c + 1], &h[c]))
            c++;
        if (!before(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

static void add_sym(sym *v, size_t *n, int32_t id, size_t len)
{
    v[*n].id = id;
    v[*n].len = len;
    v[*n].prev = (long)*n - 1;
    v[*n].next = (long)*n + 1;
    (*n)++;
}

/* The symbols of word u[0..len) (merge_word before merge_all). */
static size_t symbols(const tokvec_tokenizer *t, const unsigned char *u,
                      size_t len, sym *v, unsigned char *tmp)
{
    const tv_hf *h = t->hf;
    size_t n = 0, i = 0;
    int32_t unk_id = -1;
    size_t unk_len = 0;
    while (i < len) {
        size_t e = i + 1;
        while (e < len && (u[e] & 0xC0) == 0x80)
            e++;
        size_t bl = e - i, k = 0;
        if (i > 0) {
            memcpy(tmp, h->prefix, h->nprefix);
            k = h->nprefix;
        }
        memcpy(tmp + k, u + i, bl);
        k += bl;
        if (e == len) {
            memcpy(tmp + k, h->suffix, h->nsuffix);
            k += h->nsuffix;
        }
        int32_t id = tv_vmap_get(t, tmp, k);
        if (id >= 0) {
            if (unk_id >= 0)
                add_sym(v, &n, unk_id, unk_len);
            unk_id = -1;
            add_sym(v, &n, id, bl);
            i = e;
            continue;
        }
        int all = h->byte_fallback;
        for (size_t j = 0; all && j < k; j++)
            all = h->bfid[tmp[j]] >= 0;
        if (all) { /* (a pending unknown stays pending, as in HF) */
            for (size_t j = 0; j < k; j++)
                add_sym(v, &n, h->bfid[tmp[j]], 1);
            i = e;
            continue;
        }
        if (h->unk >= 0) {
            if (unk_id >= 0 && h->fuse_unk) {
                unk_len += bl;
            } else {
                if (unk_id >= 0)
                    add_sym(v, &n, unk_id, unk_len);
                unk_id = h->unk;
                unk_len = bl;
            }
        }
        i = e;
    }
    if (unk_id >= 0)
        add_sym(v, &n, unk_id, unk_len);
    if (n)
        v[n - 1].next = -1;
    return n;
}

static void merge_all(const tokvec_tokenizer *t, sym *v, size_t n, mrg *hp)
{
    size_t hn = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        const tv_pslot *m = tv_pmap_get(t, v[i].id, v[i + 1].id);
        if (m)
            heap_push(hp, &hn, (mrg){m->rank, i, m->id});
    }
    while (hn) {
        mrg top = heap_pop(hp, &hn);
        sym *cur = &v[top.pos];
        if (cur->len == 0 || cur->next < 0)
            continue;
        sym *right = &v[cur->next];
        const tv_pslot *m = tv_pmap_get(t, cur->id, right->id);
        if (!m || m->id != top.id)
            continue; /* stale */
        cur->id = top.id;
        cur->len += right->len;
        cur->next = right->next;
        right->len = 0;
        if (cur->next >= 0)
            v[cur->next].prev = (long)top.pos;
        if (cur->prev >= 0) {
            m = tv_pmap_get(t, v[cur->prev].id, cur->id);
            if (m)
                heap_push(hp, &hn, (mrg){m->rank, (size_t)cur->prev, m->id});
        }
        if (cur->next >= 0) {
            m = tv_pmap_get(t, cur->id, v[cur->next].id);
            if (m)
                heap_push(hp, &hn, (mrg){m->rank, top.pos, m->id});
        }
    }
}

/* The character of x that byte p of the word's UTF-8 (len bytes) is in.
 * (Byte tokens of a character with an affix count more bytes than it
 * has, as in HF: past the end is the last character.) */
static uint32_t char_at(const tv_hf_buf *b, size_t p, size_t len)
{
    if (p >= len)
        p = len - 1;
    while (b->u8ch[p] == UINT32_MAX)
        p--;
    return b->u8ch[p];
}

int tv_spbpe_word(const tokvec_tokenizer *t, tv_hf_buf *b, const tv_hf_text *x,
                  size_t s, size_t e, tokvec_tok_ids *out, int offs)
{
    const tv_hf *h = t->hf;
    size_t len;
    if (tv_hf_word_bytes(b, x, s, e, &len) < 0)
        return -ENOMEM;
    if (len == 0)
        return 0;
    int32_t whole = h->ignore_merges ? tv_vmap_get(t, b->u8, len) : -1;
    /* at most one symbol per byte (+ affix bytes for byte fallback) */
    size_t cap = len * (1 + h->nprefix + h->nsuffix) + 1;
    sym *v = whole >= 0 ? NULL : calloc(cap, sizeof *v);
    mrg *hp = v ? calloc(3 * cap, sizeof *hp) : NULL;
    unsigned char *tmp = hp ? malloc(4 + h->nprefix + h->nsuffix) : NULL;
    int rc = 0;
    if (whole < 0 && !tmp) {
        rc = -ENOMEM;
        goto cleanup;
    }
    size_t n = 1;
    if (whole < 0) {
        n = symbols(t, b->u8, len, v, tmp);
        merge_all(t, v, n, hp);
    }
    if (tv_ids_reserve(out, n, offs) < 0) {
        rc = -ENOMEM;
        goto cleanup;
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = whole >= 0 ? len : v[i].len;
        if (l == 0)
            continue;
        if (offs) {
            out->offsets[out->n] = x->a0[char_at(b, at, len)];
            out->stops[out->n] = x->a1[char_at(b, at + l - 1, len)];
        }
        out->ids[out->n++] = whole >= 0 ? whole : v[i].id;
        at += l;
    }
cleanup:
    free(v);
    free(hp);
    free(tmp);
    return rc;
}
