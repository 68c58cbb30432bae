/* metaspace.c -- Hugging Face tokenizers' Metaspace pre-tokenizer and
 * decoder (pre_tokenizers/metaspace.rs), see metaspace.h.
 *
 * Pre-tokenizing one split, as tokenizers does it:
 *  1. replace(' ', replacement): each ASCII space becomes the replacement
 *     character; it takes the space's span;
 *  2. prepend: when the scheme is always, or first and the split starts
 *     the original text, and the text is not empty and does not start with
 *     the replacement character, one is put in front; it takes the first
 *     character's span (NormalizedString::prepend: the new character
 *     "replaces" the first, which becomes "inserted" and takes the
 *     span of the character before it: its own);
 *  3. split(replacement, MergedWithNext) when split is true: a piece ends
 *     before every replacement character (none empty; pretok.c).
 * Steps 1 and 2 are tv_metaspace_text (pretok.c: it works on the
 * pipeline's buffers); here the parsing and decoding, plain data only.
 * Must hold: tv_metaspace is read-only once filled. Threads: any.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "metaspace.h"
#include "tok_utf8.h"

static int fail(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
    return TOKVEC_E_TOKENIZER;
}

int tv_metaspace_from_json(const struct json_t *obj, tv_metaspace *m,
                           char *err, size_t errlen)
{
    json_t *o = (json_t *)obj;
    const char *ty = json_string_value(json_object_get(o, "type"));
    json_t *rep = json_object_get(o, "replacement");
    json_t *aps = json_object_get(o, "add_prefix_space");
    json_t *ps = json_object_get(o, "prepend_scheme");
    json_t *sp = json_object_get(o, "split");
    memset(m, 0, sizeof *m);
    if (!json_is_object(o) || !ty || strcmp(ty, "Metaspace") != 0)
        return fail(err, errlen, "Metaspace: type is not \"Metaspace\"");
    size_t k = 0, rl = json_string_length(rep);
    const unsigned char *r = (const unsigned char *)json_string_value(rep);
    if (!r || rl == 0 || tv_u8_next(r, rl, &k) == TV_U8_BAD || k != rl)
        return fail(err, errlen, "Metaspace.replacement: not one character");
    m->replacement = tv_u8_next(r, rl, &k);
    memcpy(m->rep, r, rl);
    m->rep_len = rl;
    m->prepend = TV_MS_ALWAYS;
    if (ps && !json_is_null(ps)) {
        const char *v = json_string_value(ps);
        if (v && strcmp(v, "always") == 0)
            m->prepend = TV_MS_ALWAYS;
        else if (v && strcmp(v, "first") == 0)
            m->prepend = TV_MS_FIRST;
        else if (v && strcmp(v, "never") == 0)
            m->prepend = TV_MS_NEVER;
        else
            return fail(err, errlen,
                        "Metaspace.prepend_scheme: not "
                        "\"always\", \"first\" or \"never\"");
    }
    if (aps && !json_is_null(aps) && !json_is_boolean(aps))
        return fail(err, errlen, "Metaspace.add_prefix_space: not a boolean");
    if (json_is_false(aps) && m->prepend != TV_MS_NEVER)
        return fail(err, errlen,
                    "Metaspace: add_prefix_space does not "
                    "match declared prepend_scheme");
    if (sp && !json_is_null(sp) && !json_is_boolean(sp))
        return fail(err, errlen, "Metaspace.split: not a boolean");
    m->split = !json_is_false(sp);
    return 0;
}

/* 1 when s[i..n) starts with the replacement character. */
static int at_rep(const tv_metaspace *m, const unsigned char *s, size_t i,
                  size_t n)
{
    return n - i >= m->rep_len && memcmp(s + i, m->rep, m->rep_len) == 0;
}

size_t tv_metaspace_decode(const tv_metaspace *m, const unsigned char *tok,
                           size_t n, size_t index, unsigned char *out)
{
    size_t o = 0, i = 0, k;
    int drop = index == 0 && m->prepend != TV_MS_NEVER;
    while (i < n) {
        (void)tv_u8_next(tok + i, n - i, &k);
        if (at_rep(m, tok, i, n)) {
            if (!drop)
                out[o++] = ' ';
            i += m->rep_len;
            continue;
        }
        memcpy(out + o, tok + i, k);
        o += k;
        i += k;
    }
    return o;
}
