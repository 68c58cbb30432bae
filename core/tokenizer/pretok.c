/* pretok.c -- Hugging Face pre-tokenizers over a normalized text in
 * flight (tok_hf.h): BertPreTokenizer, WhitespaceSplit, Punctuation,
 * Digits, Metaspace (first: its text change, tv_metaspace_text, and its
 * split here, its scheme in metaspace.c), and
 * Sequences of them. (ByteLevel and Split belong to the
 * byte-level BPE path, tok_split.c.)
 *
 * Must hold: the words are exactly HF's splits, in order, none empty. Each
 * pre-tokenizer is a split by a per-character test with one of HF's five
 * behaviours, applied to every word of the previous step: every matching
 * character is a match of its own, as for HF's char patterns.
 * Threads: parsing runs once at open; running touches only the caller's
 * buffers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"

static int ascii_punct(uint32_t c)
{
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) ||
           (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

static int is_punc(uint32_t c)
{
    if (c < 0x80)
        return ascii_punct(c);
    return (tv_hf_class(c) & TV_HF_PUNCT) != 0;
}

static int is_ws(uint32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= 9 && c <= 13);
    return (tv_hf_class(c) & TV_HF_WS) != 0;
}

static int is_numeric(uint32_t c)
{
    if (c < 0x80)
        return c >= '0' && c <= '9';
    return (tv_hf_class(c) & TV_HF_NUM) != 0;
}

static int push(tv_hf_buf *b, int k, size_t s, size_t e)
{
    if (b->wn[k] == b->wcap[k]) {
        size_t cap = b->wcap[k] ? b->wcap[k] * 2 : 64;
        tv_hf_range *w = realloc(b->w[k], cap * sizeof *w);
        if (!w)
            return -ENOMEM;
        b->w[k] = w;
        b->wcap[k] = cap;
    }
    b->w[k][b->wn[k]].s = s;
    b->w[k][b->wn[k]].e = e;
    b->wn[k]++;
    return 0;
}

/* Splits word [s, e) of x by test into list k with behaviour beh. */
static int split(const tv_hf_text *x, size_t s, size_t e,
                 int (*test)(uint32_t), int beh, tv_hf_buf *b, int k)
{
    size_t first = b->wn[k]; /* pieces of this word start here */
    int prev_match = 0;
    size_t last = s;
    for (size_t i = s; i <= e; i++) {
        int m = i < e && test(x->cp[i]);
        if (i < e && !m)
            continue;
        /* the stretch [last, i) before the match, then the match */
        for (int part = 0; part < 2; part++) {
            size_t ps = part ? i : last, pe = part ? i + 1 : i;
            int pm = part;
            if (part && i == e)
                break;
            if (!part && last >= i)
                continue;
            tv_hf_range *lastp = b->wn[k] > first ? &b->w[k][b->wn[k] - 1]
                                                  : NULL;
            switch (beh) {
            case TV_SB_REMOVED:
                if (!pm && push(b, k, ps, pe) < 0)
                    return -ENOMEM;
                break;
            case TV_SB_PREV:
                if (pm && !prev_match && lastp)
                    lastp->e = pe;
                else if (push(b, k, ps, pe) < 0)
                    return -ENOMEM;
                break;
            case TV_SB_CONTIG:
                if (pm == prev_match && lastp)
                    lastp->e = pe;
                else if (push(b, k, ps, pe) < 0)
                    return -ENOMEM;
                break;
            default: /* TV_SB_ISOLATED (NEXT: split_next) */
                if (push(b, k, ps, pe) < 0)
                    return -ENOMEM;
                break;
            }
            prev_match = pm;
        }
        last = i + 1;
    }
    return 0;
}

/* MergedWithNext, as HF folds it: from the end, a match that does not
 * follow another match (seen from the end) joins the piece after it. */
static int split_next(const tv_hf_text *x, size_t s, size_t e,
                      int (*test)(uint32_t), tv_hf_buf *b, int k)
{
    size_t first = b->wn[k];
    /* pieces from the end, in reverse, then reversed in place */
    int prev_match = 0;
    size_t i = e;
    while (i > s) {
        size_t j = i;
        int m = test(x->cp[i - 1]);
        if (m)
            j = i - 1;
        else
            while (j > s && !test(x->cp[j - 1]))
                j--;
        size_t have = b->wn[k] - first;
        if (m && !prev_match && have)
            b->w[k][b->wn[k] - 1].s = j;
        else if (push(b, k, j, i) < 0)
            return -ENOMEM;
        prev_match = m;
        i = j;
    }
    for (size_t a = first, z = b->wn[k]; a + 1 < z; a++, z--) {
        tv_hf_range t = b->w[k][a];
        b->w[k][a] = b->w[k][z - 1];
        b->w[k][z - 1] = t;
    }
    return 0;
}

/* Metaspace's text change (metaspace.h): spaces become the replacement
 * character, one prepended per the scheme. */
int tv_metaspace_text(const tv_metaspace *m, tv_hf_buf *b, int *cur, int first)
{
    tv_hf_text *x = &b->t[*cur]; /* changed where it is */
    int pre = first >= 0 && x->n &&
              (m->prepend == TV_MS_ALWAYS ||
               (m->prepend == TV_MS_FIRST && first));
    /* after the replacement the text starts with the replacement
     * character when it starts with a space or with that character */
    if (pre && (x->cp[0] == ' ' || x->cp[0] == m->replacement))
        pre = 0;
    if (pre) { /* it takes the first character's span (both of them do) */
        if (tv_hf_text_reserve(x, x->n + 1) < 0)
            return -ENOMEM;
        memmove(x->cp + 1, x->cp, x->n * sizeof *x->cp);
        memmove(x->a0 + 1, x->a0, x->n * sizeof *x->a0);
        memmove(x->a1 + 1, x->a1, x->n * sizeof *x->a1);
        x->cp[0] = m->replacement;
        x->n++;
    }
    for (size_t i = pre; i < x->n; i++)
        if (x->cp[i] == ' ')
            x->cp[i] = m->replacement;
    return 0;
}

/* Metaspace's split (its text change is tv_metaspace_text's): a piece
 * ends before each replacement character (MergedWithNext). */
static int meta_split(const tv_hf_text *x, size_t s, size_t e, uint32_t rep,
                      tv_hf_buf *b, int k)
{
    size_t last = s;
    for (size_t i = s + 1; i < e; i++)
        if (x->cp[i] == rep) {
            if (push(b, k, last, i) < 0)
                return -ENOMEM;
            last = i;
        }
    return last < e ? push(b, k, last, e) : 0;
}

/* BertPreTokenizer in one scan: white space ends a word and is dropped,
 * punctuation is a word of one character (HF's two splits, fused). */
static int bert(const tv_hf_text *x, size_t s, size_t e, tv_hf_buf *b, int k)
{
    size_t w = s;
    for (size_t i = s; i < e; i++) {
        uint32_t c = x->cp[i];
        int ws, pu;
        if (c < 0x80) {
            ws = c == ' ' || (c >= 9 && c <= 13);
            pu = !ws && ascii_punct(c);
        } else {
            unsigned f = tv_hf_class(c);
            ws = (f & TV_HF_WS) != 0;
            pu = !ws && (f & TV_HF_PUNCT);
        }
        if (!ws && !pu)
            continue;
        if (w < i && push(b, k, w, i) < 0)
            return -ENOMEM;
        if (pu && push(b, k, i, i + 1) < 0)
            return -ENOMEM;
        w = i + 1;
    }
    return w < e ? push(b, k, w, e) : 0;
}

static int one(const tv_pretok *p, const tv_hf_text *x, tv_hf_buf *b, int cur)
{
    int nx = !cur;
    b->wn[nx] = 0;
    for (size_t w = 0; w < b->wn[cur]; w++) {
        size_t s = b->w[cur][w].s, e = b->w[cur][w].e;
        int rc = 0;
        switch (p->kind) {
        case TV_P_BERT:
            rc = bert(x, s, e, b, nx);
            break;
        case TV_P_WHITESPACE_SPLIT:
            rc = split(x, s, e, is_ws, TV_SB_REMOVED, b, nx);
            break;
        case TV_P_PUNCT:
            rc = p->behavior == TV_SB_NEXT
                     ? split_next(x, s, e, is_punc, b, nx)
                     : split(x, s, e, is_punc, p->behavior, b, nx);
            break;
        case TV_P_METASPACE:
            rc = p->ms.split ? meta_split(x, s, e, p->ms.replacement, b, nx)
                             : push(b, nx, s, e);
            break;
        default: /* TV_P_DIGITS */
            rc = split(x, s, e, is_numeric,
                       p->individual ? TV_SB_ISOLATED : TV_SB_CONTIG, b, nx);
            break;
        }
        if (rc)
            return rc;
    }
    return 0;
}

int tv_pretok_run(const tv_pretok *v, size_t n, const tv_hf_text *x,
                  tv_hf_buf *b, int *cur)
{
    b->wn[*cur] = 0;
    if (x->n && push(b, *cur, 0, x->n) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++) {
        int rc = one(&v[k], x, b, *cur);
        if (rc)
            return rc;
        *cur = !*cur;
    }
    return 0;
}

/* --- parsing --- */

static int behavior(const char *s)
{
    static const char *const names[] = {"Removed", "Isolated",
                                        "MergedWithPrevious", "MergedWithNext",
                                        "Contiguous"};
    for (int k = 0; k < 5; k++)
        if (s && !strcmp(s, names[k]))
            return k;
    return -1;
}

static int parse_one(json_t *j, const char *where, tv_pretok **v, size_t *n,
                     size_t *cap, char *err, size_t errlen)
{
    const char *ty = json_string_value(json_object_get(j, "type"));
    tv_pretok x = {0};
    char msg[160];
    if (!ty)
        return tv_hf_bad(err, errlen, where, "a pre-tokenizer without a type");
    if (!strcmp(ty, "Sequence")) {
        json_t *arr = json_object_get(j, "pretokenizers"), *e;
        size_t k;
        if (!json_is_array(arr))
            return tv_hf_bad(err, errlen, where,
                             "Sequence without pretokenizers");
        json_array_foreach(arr, k, e) {
            char w[256];
            snprintf(w, sizeof w, "%s.pretokenizers[%zu]", where, k);
            int rc = parse_one(e, w, v, n, cap, err, errlen);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (!strcmp(ty, "BertPreTokenizer")) {
        x.kind = TV_P_BERT;
    } else if (!strcmp(ty, "WhitespaceSplit")) {
        x.kind = TV_P_WHITESPACE_SPLIT;
    } else if (!strcmp(ty, "Punctuation")) {
        json_t *bj = json_object_get(j, "behavior");
        x.kind = TV_P_PUNCT;
        x.behavior = bj ? behavior(json_string_value(bj)) : TV_SB_ISOLATED;
        if (x.behavior < 0)
            return tv_hf_bad(err, errlen, where,
                             "Punctuation: unknown behavior");
    } else if (!strcmp(ty, "Digits")) {
        x.kind = TV_P_DIGITS;
        x.individual = json_is_true(json_object_get(j, "individual_digits"));
    } else if (!strcmp(ty, "Metaspace")) {
        char why[160] = "";
        x.kind = TV_P_METASPACE;
        if (*n)
            return tv_hf_bad(err, errlen, where,
                             "Metaspace is supported only as the first "
                             "pre-tokenizer");
        if (tv_metaspace_from_json(j, &x.ms, why, sizeof why))
            return tv_hf_bad(err, errlen, where, why);
    } else {
        snprintf(msg, sizeof msg,
                 "pre-tokenizer %.40s is not supported with this model", ty);
        return tv_hf_bad(err, errlen, where, msg);
    }
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4;
        tv_pretok *nv = realloc(*v, c * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

int tv_pretok_parse(json_t *j, const char *where, tv_pretok **out, size_t *n,
                    char *err, size_t errlen)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    if (!j || json_is_null(j))
        return 0;
    int rc = parse_one(j, where, out, n, &cap, err, errlen);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
