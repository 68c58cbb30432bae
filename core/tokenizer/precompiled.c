/* precompiled.c -- SentencePiece's precompiled charsmap normalizer as
 * Hugging Face tokenizers applies it (see precompiled.h).
 *
 * The charsmap: a u32 (little-endian) byte size of the trie, the trie as
 * u32 units (a Darts double array: bit 8 has-leaf, low 8 bits and bit 31
 * the label, value the low 31 bits, offset bits 10.. shifted by 8 when bit
 * 9 is set), then the normalized strings, each ended by a NUL. A lookup
 * walks the chunk's bytes (stopping at a NUL byte) and takes the FIRST
 * leaf met, i.e. the shortest prefix that has a rule, and that rule
 * replaces the whole chunk (spm_precompiled's transform; a known quirk,
 * kept because tokenizers does it).
 *
 * Normalizing (normalizers/precompiled.rs): per extended grapheme cluster
 * (UAX #29 from Debian's UCD: build/gen/tok_gcb.h, a two-level table of
 * the classes: one load for the page, one for the class), a cluster of fewer
 * than 6 bytes with a rule is replaced whole; otherwise each character
 * with a rule is replaced, the others kept. The replacements are recorded
 * as tokenizers' (char, change) list (0 replaces, 1 inserts, -N replaces
 * and removes N; a replacement by fewer characters adds its difference to
 * the last recorded entry, whichever that is) and played through the
 * same alignment rule as NormalizedString::transform, which gives each
 * output byte the input byte whose alignment it takes. Must hold: the
 * normalizer is immutable once built. Threads: any, concurrently.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "precompiled.h"
#include "tok_utf8.h"

#include "tok_gcb.h"

enum {
    GCB_OTHER,
    GCB_CR,
    GCB_LF,
    GCB_CONTROL,
    GCB_EXTEND,
    GCB_ZWJ,
    GCB_RI,
    GCB_PREPEND,
    GCB_SPACING,
    GCB_L,
    GCB_V,
    GCB_T,
    GCB_LV,
    GCB_LVT,
    GCB_PICT = 16, /* Extended_Pictographic, added to the class */
};

struct tv_precompiled {
    uint32_t *unit; /* the double array */
    size_t n_units;
    unsigned char *norm; /* the normalized strings */
    size_t norm_len;
    int32_t asc_at[128];   /* an ASCII byte's lookup: norm + asc_at, ... */
    uint32_t asc_len[128]; /* ... asc_len bytes; asc_at -1: none */
};

int tv_grapheme_class(uint32_t cp)
{
    if (cp > 0x10FFFF) /* TV_U8_BAD: a byte outside UTF-8, a control */
        return GCB_CONTROL;
    return tv_gcb_block[tv_gcb_page[cp >> 8]][cp & 255];
}

static int gcb_class(uint32_t cp)
{
    return tv_grapheme_class(cp);
}

static int is_ctl(int k)
{
    return k == GCB_CR || k == GCB_LF || k == GCB_CONTROL;
}

/* 1 when there is no boundary between classes a and b (GB3-GB13; pict:
 * the text so far ends with ExtPict Extend* ZWJ; ri: an odd number of
 * regional indicators ends it). */
static int joins(int a, int b, int pict, int ri)
{
    if (a == GCB_CR && b == GCB_LF)
        return 1;
    if (is_ctl(a) || is_ctl(b))
        return 0;
    if (a == GCB_L &&
        (b == GCB_L || b == GCB_V || b == GCB_LV || b == GCB_LVT))
        return 1;
    if ((a == GCB_LV || a == GCB_V) && (b == GCB_V || b == GCB_T))
        return 1;
    if ((a == GCB_LVT || a == GCB_T) && b == GCB_T)
        return 1;
    if (b == GCB_EXTEND || b == GCB_ZWJ || b == GCB_SPACING ||
        a == GCB_PREPEND)
        return 1;
    if (pict && b == GCB_PICT)
        return 1;
    return a == GCB_RI && b == GCB_RI && ri;
}

size_t tv_grapheme_next(const unsigned char *s, size_t i, size_t n)
{
    /* ASCII before ASCII (or the end) is a boundary unless CR LF: no
     * ASCII character extends, prepends or is pictographic */
    if (s[i] < 0x80 && (i + 1 == n || (s[i + 1] < 0x80 && s[i] != '\r')))
        return i + 1;
    size_t k;
    int raw = gcb_class(tv_u8_next(s + i, n - i, &k));
    int prev = raw & 15, pict = 0, ri = prev == GCB_RI;
    int emo = (raw & GCB_PICT) ? 1 : 0; /* 1: ExtPict Extend*, 2: +ZWJ */
    size_t j = i + k;
    while (j < n) {
        int r = gcb_class(tv_u8_next(s + j, n - j, &k));
        int cur = (r & GCB_PICT) ? GCB_PICT : r & 15;
        pict = emo == 2;
        if (!joins(prev, cur, pict, ri & 1))
            break;
        if ((r & GCB_PICT) || ((r & 15) == GCB_EXTEND && emo == 1))
            emo = 1;
        else if ((r & 15) == GCB_ZWJ && emo == 1)
            emo = 2;
        else
            emo = 0;
        ri = (r & 15) == GCB_RI ? ri + 1 : 0;
        prev = r & 15;
        j += k;
    }
    return j;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

int tv_precompiled_new(const unsigned char *map, size_t n,
                       tv_precompiled **out)
{
    *out = NULL;
    if (n < 4)
        return TOKVEC_E_TOKENIZER;
    size_t units = le32(map) / 4;
    if (units > (n - 4) / 4)
        return TOKVEC_E_TOKENIZER;
    const unsigned char *norm = map + 4 + units * 4;
    size_t norm_len = n - 4 - units * 4;
    if (!tv_u8_valid(norm, norm_len))
        return TOKVEC_E_TOKENIZER;
    tv_precompiled *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->unit = malloc((units + 1) * sizeof *p->unit);
    p->norm = malloc(norm_len + 1);
    if (!p->unit || !p->norm) {
        tv_precompiled_free(p);
        return -ENOMEM;
    }
    for (size_t i = 0; i < units; i++)
        p->unit[i] = le32(map + 4 + 4 * i);
    p->n_units = units;
    if (norm_len)
        memcpy(p->norm, norm, norm_len);
    p->norm[norm_len] = 0;
    p->norm_len = norm_len;
    for (unsigned c = 0; c < 128; c++) {
        unsigned char b = (unsigned char)c;
        size_t rl = 0;
        const unsigned char *r = tv_precompiled_lookup(p, &b, 1, &rl);
        p->asc_at[c] = r ? (int32_t)(r - p->norm) : -1;
        p->asc_len[c] = (uint32_t)rl;
    }
    *out = p;
    return 0;
}

void tv_precompiled_free(tv_precompiled *p)
{
    if (!p)
        return;
    free(p->unit);
    free(p->norm);
    free(p);
}

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Standard base64 with padding, canonical (the base64 crate's STANDARD
 * engine): 0 or -1. out has room for n / 4 * 3 bytes. */
static int b64_decode(const char *s, size_t n, unsigned char *out,
                      size_t *out_len)
{
    size_t o = 0;
    if (n % 4)
        return -1;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            v[k] = pad ? -1 : b64val(c);
            if (v[k] < 0)
                return -1;
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
                     (uint32_t)v[2] << 6 | (uint32_t)v[3];
        if ((pad == 1 && (w & 0xFF)) || (pad == 2 && (w & 0xFFFF)) ||
            (pad == 1 && s[i + 2] == '='))
            return -1;
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)w;
    }
    *out_len = o;
    return 0;
}

int tv_precompiled_from_json(const struct json_t *obj, tv_precompiled **out,
                             char *err, size_t errlen)
{
    json_t *o = (json_t *)obj;
    const char *ty = json_string_value(json_object_get(o, "type"));
    json_t *m = json_object_get(o, "precompiled_charsmap");
    const char *why = NULL;
    *out = NULL;
    if (!ty || strcmp(ty, "Precompiled") != 0)
        why = "Precompiled: type is not \"Precompiled\"";
    else if (!json_is_string(m))
        why = "Precompiled.precompiled_charsmap: not a string";
    if (why) {
        if (err && errlen)
            snprintf(err, errlen, "%s", why);
        return TOKVEC_E_TOKENIZER;
    }
    size_t n = json_string_length(m), len = 0;
    unsigned char *bytes = malloc(n / 4 * 3 + 1);
    if (!bytes)
        return -ENOMEM;
    int rc = TOKVEC_E_TOKENIZER;
    if (b64_decode(json_string_value(m), n, bytes, &len) < 0)
        why = "Precompiled.precompiled_charsmap: not base64";
    else
        rc = tv_precompiled_new(bytes, len, out);
    if (rc == TOKVEC_E_TOKENIZER && !why)
        why = "Precompiled.precompiled_charsmap: cannot parse the charsmap";
    if (why && err && errlen)
        snprintf(err, errlen, "%s", why);
    free(bytes);
    return rc;
}

const unsigned char *tv_precompiled_lookup(const tv_precompiled *p,
                                           const unsigned char *s, size_t n,
                                           size_t *len)
{
    if (p->n_units == 0 || !p->unit || !p->norm)
        return NULL;
    uint32_t u = p->unit[0];
    size_t pos = (size_t)(u >> 10) << ((u & (1u << 9)) >> 6);
    for (size_t i = 0; i < n && s[i] != 0; i++) {
        pos ^= s[i];
        if (pos >= p->n_units)
            return NULL;
        u = p->unit[pos];
        if ((u & (0x80000000u | 0xFFu)) != s[i])
            return NULL;
        pos ^= (size_t)(u >> 10) << ((u & (1u << 9)) >> 6);
        if (!(u >> 8 & 1))
            continue;
        if (pos >= p->n_units)
            return NULL;
        size_t at = p->unit[pos] & 0x7FFFFFFFu, end = at;
        if (at > p->norm_len)
            return NULL;
        while (end < p->norm_len && p->norm[end] != 0)
            end++;
        if (!tv_u8_valid(p->norm + at, end - at))
            return NULL;
        *len = end - at;
        return p->norm + at;
    }
    return NULL;
}

/* tokenizers' transformation list, (char, change) entries. */
typedef struct pc_list {
    tv_pc_change *v;
    size_t n, cap;
} pc_list;

static int tr_push(pc_list *l, uint32_t cp, long change)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        tv_pc_change *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].cp = cp;
    l->v[l->n].change = change;
    l->n++;
    return 0;
}

/* Each character of s[0..n) kept (change 0). */
static int tr_keep(pc_list *l, const unsigned char *s, size_t n)
{
    size_t i = 0, k;
    while (i < n) {
        uint32_t cp = tv_u8_next(s + i, n - i, &k);
        if (tr_push(l, cp, 0) < 0)
            return -ENOMEM;
        i += k;
    }
    return 0;
}

static size_t n_chars(const unsigned char *s, size_t n)
{
    size_t c = 0, i = 0, k;
    while (i < n) {
        (void)tv_u8_next(s + i, n - i, &k);
        i += k;
        c++;
    }
    return c;
}

/* precompiled.rs' replace(): old part s[0..n) by new part r[0..rn). */
static int tr_replace(pc_list *l, const unsigned char *s, size_t n,
                      const unsigned char *r, size_t rn)
{
    long diff = (long)n_chars(r, rn) - (long)n_chars(s, n);
    size_t first = l->n;
    if (tr_keep(l, r, rn) < 0)
        return -ENOMEM;
    if (diff > 0) {
        for (size_t j = l->n; j > first && diff > 0; j--, diff--)
            l->v[j - 1].change = 1;
    } else if (diff < 0 && l->n > 0) {
        l->v[l->n - 1].change += diff;
    }
    return 0;
}

/* The replacement of s[g..ge) (a cluster) or of one character in it:
 * NULL when none. */
static const unsigned char *rule(const tv_precompiled *p,
                                 const unsigned char *s, size_t g, size_t ge,
                                 size_t *rl)
{
    if (ge == g + 1 && s[g] < 0x80) { /* the lookup made at open */
        if (p->asc_at[s[g]] < 0)
            return NULL;
        *rl = p->asc_len[s[g]];
        return p->norm + p->asc_at[s[g]];
    }
    return tv_precompiled_lookup(p, s + g, ge - g, rl);
}

/* The transformation list of s[0..n), built from the first rule that
 * hits (the characters before it kept); empty when none hits. */
static int build_list(const tv_precompiled *p, const unsigned char *s,
                      size_t n, pc_list *l, int *modified)
{
    size_t g = 0, k, rl;
    while (g < n) {
        /* an ASCII character before another (or the end) is a cluster
         * of its own (but CR LF): its rule from the open-time table */
        while (g < n && s[g] < 0x80 && p->asc_at[s[g]] < 0 &&
               (g + 1 == n ||
                (s[g + 1] < 0x80 && (s[g] != '\r' || s[g + 1] != '\n')))) {
            if (*modified && tr_push(l, s[g], 0) < 0)
                return -ENOMEM;
            g++;
        }
        if (g == n)
            break;
        size_t ge = tv_grapheme_next(s, g, n);
        const unsigned char *r = NULL;
        if (ge - g < 6)
            r = rule(p, s, g, ge, &rl);
        if (r) {
            if (!*modified && tr_keep(l, s, g) < 0)
                return -ENOMEM;
            *modified = 1;
            if (tr_replace(l, s + g, ge - g, r, rl) < 0)
                return -ENOMEM;
            g = ge;
            continue;
        }
        if (ge == g + 1 && s[g] < 0x80) {
            if (*modified && tr_push(l, s[g], 0) < 0)
                return -ENOMEM;
            g = ge;
            continue;
        }
        for (size_t i = g; i < ge; i += k) {
            uint32_t cp = tv_u8_next(s + i, ge - i, &k);
            r = tv_precompiled_lookup(p, s + i, k, &rl);
            if (r && !*modified && tr_keep(l, s, i) < 0)
                return -ENOMEM;
            *modified |= r != NULL;
            int rc = r           ? tr_replace(l, s + i, k, r, rl)
                     : *modified ? tr_push(l, cp, 0)
                                 : 0;
            if (rc < 0)
                return rc;
        }
        g = ge;
    }
    return 0;
}

int tv_precompiled_changes(const tv_precompiled *p, const unsigned char *s,
                           size_t n, tv_pc_change **out, size_t *count)
{
    pc_list l = {0};
    int modified = 0;
    *out = NULL;
    *count = 0;
    int rc = build_list(p, s, n, &l, &modified);
    if (rc < 0 || !modified) {
        free(l.v);
        return rc < 0 ? rc : 0;
    }
    if (!l.v) { /* a rule that removes the only characters */
        l.v = malloc(sizeof *l.v);
        if (!l.v)
            return -ENOMEM;
    }
    *out = l.v;
    *count = l.n;
    return 1;
}
