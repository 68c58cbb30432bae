/* tok_split.c -- pre-tokenization: tiktoken's split regexes as scanners.
 *
 * Each pattern is a regex of alternatives tried in order at the current
 * position (leftmost-first, with backtracking, as Rust's fancy-regex runs
 * them); tv_split_next returns where the first alternative that matches
 * ends. The scanners below follow the alternatives one by one, and the
 * comments spell out how each one's backtracking resolves. Classes come
 * from tok_ucd.h, generated at build time from the UCD (tools/gen_ucd.awk):
 * \p{L} is Lu Ll Lt Lm Lo, \p{N} Nd Nl No, \p{M} Mn Mc Me, \s White_Space
 * (not PCRE's \s, which adds U+180E). Bytes that are not UTF-8 are
 * single "other" characters. Pure functions; any thread.
 */
#include <stdint.h>
#include <string.h>

#include "tok_internal.h"
#include "tok_ucd.h"

enum { C_OTHER, C_LU, C_LL, C_LT, C_LM, C_LO, C_M, C_N, C_WS };
#define B(c) (1u << (c))
#define S_L (B(C_LU) | B(C_LL) | B(C_LT) | B(C_LM) | B(C_LO))
#define S_N B(C_N)
#define S_WS B(C_WS)
#define S_OTHER (~(S_L | S_N | S_WS)) /* [^\s\p{L}\p{N}]: M and the rest */
#define S_UP (B(C_LU) | B(C_LT) | B(C_LM) | B(C_LO) | B(C_M))
#define S_LO (B(C_LL) | B(C_LM) | B(C_LO) | B(C_M))

unsigned tv_ucd_class(uint32_t cp)
{
    if (cp > 0x10FFFF)
        return C_OTHER;
    return tv_ucd_stage2[(size_t)tv_ucd_stage1[cp >> 8] * 256 + (cp & 255)];
}

const char *tv_ucd_version(void)
{
    return TV_UCD_VERSION;
}

typedef struct ch {
    uint32_t cp;  /* code point; 0xFFFFFFFF for a byte that is not UTF-8 */
    unsigned len; /* bytes */
    unsigned set; /* B(class) */
} ch;

/* The character at i < end when it is not ASCII (at()). */
static ch at_multi(const unsigned char *s, size_t i, size_t end)
{
    unsigned c = s[i];
    ch r = {0xFFFFFFFFu, 1, B(C_OTHER)};
    size_t left = end - i;
    uint32_t cp;
    unsigned n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, cp = c & 0x07;
    } else {
        return r;
    }
    if (left < n)
        return r;
    for (unsigned k = 1; k < n; k++) {
        if ((s[i + k] & 0xC0) != 0x80)
            return r;
        cp = cp << 6 | (s[i + k] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return r;
    r.cp = cp;
    r.len = n;
    r.set = B(tv_ucd_class(cp));
    return r;
}

/* Decodes the character at i < end (strict UTF-8: no overlongs, no
 * surrogates, nothing past U+10FFFF); ASCII inline. */
static inline ch at(const unsigned char *s, size_t i, size_t end)
{
    unsigned c = s[i];
    if (c < 0x80) {
        ch r = {c, 1, B(tv_ucd_stage2[c])};
        return r;
    }
    return at_multi(s, i, end);
}

/* End of the run of characters in set starting at i. */
static size_t run(const unsigned char *s, size_t i, size_t end, unsigned set)
{
    while (i < end) {
        if (s[i] < 0x80) { /* ASCII without decoding */
            if (!(B(tv_ucd_stage2[s[i]]) & set))
                break;
            i++;
            continue;
        }
        ch c = at(s, i, end);
        if (!(c.set & set))
            break;
        i += c.len;
    }
    return i;
}

/* At most max characters of set. */
static size_t run_max(const unsigned char *s, size_t i, size_t end,
                      unsigned set, int max)
{
    for (int k = 0; k < max && i < end; k++) {
        ch c = at(s, i, end);
        if (!(c.set & set))
            break;
        i += c.len;
    }
    return i;
}

static int fold_eq(const unsigned char *s, size_t i, size_t end, char want,
                   int icase, size_t *len)
{
    if (i >= end)
        return 0;
    if (s[i] == (unsigned char)want ||
        (icase && s[i] == (unsigned char)(want - 'a' + 'A'))) {
        *len = 1;
        return 1;
    }
    /* (?i)s also matches U+017F LATIN SMALL LETTER LONG S (simple case
     * folding, as Rust's regex does). */
    if (icase && want == 's' && i + 1 < end && s[i] == 0xC5 &&
        s[i + 1] == 0xBF) {
        *len = 2;
        return 1;
    }
    return 0;
}

/* 's|'t|'re|'ve|'m|'ll|'d at i (s[i] == '\''): end, or 0. */
static size_t contraction(const unsigned char *s, size_t i, size_t end,
                          int icase)
{
    static const char *const alts[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    if (i >= end || s[i] != '\'')
        return 0;
    for (size_t a = 0; a < sizeof alts / sizeof *alts; a++) {
        size_t j = i + 1, l;
        const char *w = alts[a];
        while (*w && fold_eq(s, j, end, *w, icase, &l))
            j += l, w++;
        if (!*w)
            return j;
    }
    return 0;
}

/* \s+(?!\S)|\s+ at a white-space character i: the whole run when it ends
 * the text; else the run less its last character, unless that leaves
 * nothing (then the one character). */
static size_t ws_tail(const unsigned char *s, size_t i, size_t end)
{
    size_t j = i, last = i;
    while (j < end) {
        ch c = at(s, j, end);
        if (!(c.set & S_WS))
            break;
        last = j;
        j += c.len;
    }
    if (j == end)
        return j;
    return last > i ? last : j;
}

/* \s*[\r\n]+ at a white-space character i: through the last CR or LF of
 * the run (greedy \s* gives back up to it), or 0 when the run has none. */
static size_t ws_newline(const unsigned char *s, size_t i, size_t end)
{
    size_t j = i, after = 0;
    while (j < end) {
        ch c = at(s, j, end);
        if (!(c.set & S_WS))
            break;
        j += c.len;
        if (c.cp == '\r' || c.cp == '\n')
            after = j;
    }
    return after;
}

static size_t next_gpt2(const unsigned char *s, size_t i, size_t end)
{
    size_t e = s[i] == '\'' ? contraction(s, i, end, 0) : 0;
    if (e)
        return e;
    ch c = at(s, i, end);
    size_t j = i;
    if (c.cp == ' ' && i + 1 < end) { /* ' ?' before L, N or other */
        ch d = at(s, i + 1, end);
        if (!(d.set & S_WS)) {
            c = d;
            j = i + 1;
        }
    }
    if (c.set & S_L)
        return run(s, j, end, S_L);
    if (c.set & S_N)
        return run(s, j, end, S_N);
    if (c.set & S_OTHER)
        return run(s, j, end, S_OTHER);
    return ws_tail(s, i, end);
}

/* [^\r\n\p{L}\p{N}]? before a run of set, or 0. */
static size_t prefixed(const unsigned char *s, size_t i, size_t end, ch c,
                       unsigned set)
{
    if (c.cp == '\r' || c.cp == '\n' || (c.set & (S_L | S_N)) ||
        i + c.len >= end)
        return 0;
    ch d = at(s, i + c.len, end);
    return (d.set & set) ? i + c.len : 0;
}

/* ' ?[^\s\p{L}\p{N}]+' followed by any of tail's characters. */
static size_t punct(const unsigned char *s, size_t i, size_t end, ch c,
                    const char *tail)
{
    size_t j = i;
    if (c.cp == ' ' && i + 1 < end && (at(s, i + 1, end).set & S_OTHER))
        j = i + 1;
    else if (!(c.set & S_OTHER))
        return 0;
    j = run(s, j, end, S_OTHER);
    while (j < end && s[j] && strchr(tail, s[j]))
        j++;
    return j;
}

/* cl100k's and o200k's last alternatives: punctuation (with the trailing
 * characters of nl), a whitespace run ending in newlines, whitespace. */
static size_t punct_or_space(const unsigned char *s, size_t i, size_t end,
                             ch c, const char *nl)
{
    size_t e = punct(s, i, end, c, nl);
    if (!e)
        e = ws_newline(s, i, end);
    return e ? e : ws_tail(s, i, end);
}

static size_t next_cl100k(const unsigned char *s, size_t i, size_t end,
                          int digits)
{
    size_t e = s[i] == '\'' ? contraction(s, i, end, 1) : 0;
    if (e)
        return e;
    ch c = at(s, i, end);
    if (c.set & S_L)
        return run(s, i, end, S_L);
    e = prefixed(s, i, end, c, S_L);
    if (e)
        return run(s, e, end, S_L);
    if (c.set & S_N)
        return run_max(s, i, end, S_N, digits);
    return punct_or_space(s, i, end, c, "\r\n");
}

/* o200k's first two alternatives from s (after an optional prefix):
 *  1. [UP]*[LO]+C?  -- greedy [UP]* stops at the first character outside
 *     UP; [LO]+ then runs on. If it cannot take one character, [UP]*
 *     gives back: the match ends after the last LO character inside the
 *     UP run (Lm, Lo and M are in both sets), or fails.
 *  2. [UP]+[LO]*C?
 * C is (?i:'s|'t|'re|'ve|'m|'ll|'d), optional. Returns the end or 0. */
static size_t o200k_word(const unsigned char *s, size_t st, size_t end,
                         int alt)
{
    size_t u = st, last_lo = 0;
    while (u < end) {
        ch c = at(s, u, end);
        if (!(c.set & S_UP))
            break;
        if (c.set & S_LO)
            last_lo = u + c.len;
        u += c.len;
    }
    size_t e;
    if (alt == 1) {
        e = run(s, u, end, S_LO);
        if (e == u)
            e = last_lo;
    } else {
        e = u > st ? run(s, u, end, S_LO) : 0;
    }
    if (!e)
        return 0;
    size_t k = contraction(s, e, end, 1);
    return k ? k : e;
}

static size_t next_o200k(const unsigned char *s, size_t i, size_t end)
{
    ch c = at(s, i, end);
    int can_prefix = !(c.cp == '\r' || c.cp == '\n' ||
                       (c.set & (S_L | S_N))) &&
                     i + c.len < end;
    size_t e;
    for (int alt = 1; alt <= 2; alt++) {
        e = can_prefix ? o200k_word(s, i + c.len, end, alt) : 0;
        if (e)
            return e;
        e = o200k_word(s, i, end, alt);
        if (e)
            return e;
    }
    if (c.set & S_N)
        return run_max(s, i, end, S_N, 3);
    return punct_or_space(s, i, end, c, "\r\n/");
}

size_t tv_split_next(tv_pattern pat, const unsigned char *s, size_t i,
                     size_t end)
{
    switch (pat) {
    case TV_PAT_CL100K:
        return next_cl100k(s, i, end, 3);
    case TV_PAT_QWEN2:
        return next_cl100k(s, i, end, 1);
    case TV_PAT_O200K:
        return next_o200k(s, i, end);
    default:
        return next_gpt2(s, i, end);
    }
}

/* Printable ASCII but '/': no piece reaches past a newline into it. */
static int cut_char(unsigned char c)
{
    return c > 0x20 && c < 0x7F && c != '/';
}

/* Why a cut between "X\n" and "Y" (X, Y printable ASCII, Y not '/') is
 * safe, pattern by pattern: the white space there is the newline alone,
 * which every pattern makes a piece of its own (\s+(?!\S) fails before
 * Y and \s+ takes it; at the end of the left half \s+(?!\S) takes the
 * same one character; cl100k's, qwen2's and o200k's \s*[\r\n]+ comes
 * first), unless punctuation X takes it as its [\r\n]* (cl100k, qwen2)
 * or [\r\n/]* tail (o200k: hence not before '/'), which ends there too;
 * no prefix ([^\r\n\p{L}\p{N}]?, ' ?') is a newline; the only
 * look-ahead, (?!\S), is at the end of white space; and nothing looks
 * behind, so the scan from the cut finds what the whole text's scan
 * finds there. */
size_t tv_split_cut(const unsigned char *s, size_t from, size_t len)
{
    size_t i = from > 2 ? from : 2;
    while (i < len) {
        const unsigned char *nl = memchr(s + i - 1, '\n', len - i);
        if (!nl)
            return len;
        i = (size_t)(nl - s) + 1;
        if (cut_char(s[i - 2]) && cut_char(s[i]))
            return i;
        i++;
    }
    return len;
}

static const struct {
    const char *name;
    tv_pattern pat;
} pat_names[] = {
    {"gpt2", TV_PAT_GPT2},          {"r50k_base", TV_PAT_GPT2},
    {"p50k_base", TV_PAT_GPT2},     {"p50k_edit", TV_PAT_GPT2},
    {"cl100k_base", TV_PAT_CL100K}, {"o200k_base", TV_PAT_O200K},
    {"qwen2", TV_PAT_QWEN2},
};

int tv_pattern_parse(const char *name, tv_pattern *out)
{
    for (size_t k = 0; k < sizeof pat_names / sizeof *pat_names; k++)
        if (!strcmp(name, pat_names[k].name)) {
            *out = pat_names[k].pat;
            return 0;
        }
    return TOKVEC_E_INVAL;
}

const char *tv_pattern_name(tv_pattern p)
{
    switch (p) {
    case TV_PAT_CL100K:
        return "cl100k_base";
    case TV_PAT_O200K:
        return "o200k_base";
    case TV_PAT_QWEN2:
        return "qwen2";
    default:
        return "gpt2";
    }
}

static const char *const re_gpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";
static const char *const re_cl100k =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|"
    "\\s+";
static const char *const re_qwen2 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *const re_o200k =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|"
    "\\s+";

int tv_pattern_from_regex(const char *re)
{
    if (!strcmp(re, re_gpt2))
        return TV_PAT_GPT2;
    if (!strcmp(re, re_cl100k))
        return TV_PAT_CL100K;
    if (!strcmp(re, re_qwen2))
        return TV_PAT_QWEN2;
    if (!strcmp(re, re_o200k))
        return TV_PAT_O200K;
    return -1;
}
