/* tok_load.c -- reading and validating tokenizer files (formats in
 * tokvec_tokenizer.h): GPT-2's encoder.json + vocab.bpe (Hugging Face's
 * vocab.json + merges.txt), Hugging Face's tokenizer.json, tiktoken's
 * .tiktoken rank files. Each loader fills the token table of a fresh
 * handle and its pair map; tv_tok_load then builds the lookups every
 * format shares and checks what every format must hold. Every failure is
 * one line naming the file and the rule. Runs once, in the opening thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tok_hf.h"
#include "tok_internal.h"

#define MAX_FILE ((size_t)1 << 30)

typedef struct ld {
    tokvec_tokenizer *t;
    const tokvec_tokenizer_opts *o;
    const char *path;          /* the file being read, for messages */
    uint32_t uni_to_byte[512]; /* GPT-2's alphabet: code point -> byte+1 */
} ld;

/* Records "path: what" in the caller's buffer; returns code. fail() below
 * makes the value code visibly: clang's analyzer does not follow variadic
 * calls, and would otherwise take error paths for success. */
static int record_fail(ld *l, int code, const char *fmt, ...)
{
    const tokvec_tokenizer_opts *o = l->o;
    if (o && o->errbuf && o->errlen) {
        va_list ap;
        va_start(ap, fmt);
        tokvec__vnote(o->errbuf, o->errlen, l->path, fmt, ap);
        va_end(ap);
    }
    return code;
}
#define fail(l, code, ...) (record_fail((l), (code), __VA_ARGS__), (code))

/* fail() with the reason in errno (never 0: a failed call that left errno
 * unset would otherwise read as success). */
static int fail_errno(ld *l, const char *what)
{
    int code = -errno;
    if (code >= 0)
        code = -EIO;
    return fail(l, code, "%s%s", what, strerror(-code));
}

static int slurp(ld *l, const char *path, char **buf, size_t *len)
{
    l->path = path;
    *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return fail_errno(l, "");
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0)
        rc = fail_errno(l, "");
    else if (!S_ISREG(st.st_mode))
        rc = fail(l, TOKVEC_E_TOKENIZER, "not a regular file");
    else if ((size_t)st.st_size > MAX_FILE)
        rc = fail(l, TOKVEC_E_TOO_LARGE, "larger than 1 GiB");
    if (rc == 0) {
        *buf = malloc((size_t)st.st_size + 1);
        if (!*buf)
            rc = -ENOMEM;
    }
    size_t got = 0;
    while (rc == 0 && got < (size_t)st.st_size) {
        ssize_t r = read(fd, *buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = fail_errno(l, "read: ");
        else if (r == 0)
            rc = fail(l, TOKVEC_E_TOKENIZER, "read: file shrank");
        else
            got += (size_t)r;
    }
    close(fd);
    if (rc != 0) {
        free(*buf);
        *buf = NULL;
        return rc;
    }
    (*buf)[got] = '\0';
    *len = got;
    return 0;
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
 * the other 68 for 256, 257, ... in byte order. order[] is the rank order
 * of single bytes in tiktoken's data_gym loader: printable ones first. */
static int printable(int b)
{
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
}

static void alphabet(ld *l, unsigned char order[256])
{
    int n = 0, k = 0;
    memset(l->uni_to_byte, 0, sizeof l->uni_to_byte);
    for (int b = 0; b < 256; b++)
        if (printable(b)) {
            l->uni_to_byte[b] = (uint32_t)b + 1;
            order[k++] = (unsigned char)b;
        }
    for (int b = 0; b < 256; b++)
        if (!printable(b)) {
            l->uni_to_byte[256 + n++] = (uint32_t)b + 1;
            order[k++] = (unsigned char)b;
        }
}

/* Decodes a token written in GPT-2's alphabet into out (>= strlen(s)
 * bytes): its byte count, or -1 when a character is outside it. */
static long unalpha(const ld *l, const char *s, unsigned char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    long n = 0;
    while (*p) {
        uint32_t cp;
        if (p[0] < 0x80)
            cp = *p++;
        else if ((p[0] & 0xE0) == 0xC0 && (p[1] & 0xC0) == 0x80)
            cp = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F), p += 2;
        else
            return -1;
        if (cp >= 512 || !l->uni_to_byte[cp])
            return -1;
        out[n++] = (unsigned char)(l->uni_to_byte[cp] - 1);
    }
    return n;
}

static int is_special_name(const char *k)
{
    return !strcmp(k, "<|endoftext|>") || !strcmp(k, "<|startoftext|>");
}

/* One token of a vocabulary in GPT-2's alphabet: key (kl bytes, no NUL)
 * -> id; buf holds 4096 bytes. */
static int vocab_entry(ld *l, const char *key, size_t kl, long long id,
                       json_t *specials, unsigned char *buf)
{
    if (id < 0 || id >= TV_TOK_MAX_ID)
        return fail(l, TOKVEC_E_TOKENIZER,
                    "token \"%.40s\": id is not an integer in [0, 2^24)", key);
    int sp = specials ? json_object_get(specials, key) != NULL
                      : is_special_name(key);
    long n = sp ? (long)kl : (kl <= 4096 ? unalpha(l, key, buf) : -1);
    if (sp)
        memcpy(buf, key, kl <= 4096 ? kl : 0);
    if (n <= 0 || (sp && kl > 4096))
        return fail(l, TOKVEC_E_TOKENIZER,
                    "token \"%.40s\": empty, too "
                    "long or not in GPT-2's byte alphabet",
                    key);
    int rc = tv_tok_add(l->t, buf, (size_t)n, (int32_t)id, sp);
    if (rc == TOKVEC_E_MISMATCH)
        rc = fail(l, TOKVEC_E_TOKENIZER,
                  "token \"%.40s\": id %lld is given twice", key, id);
    return rc;
}

/* An object of token -> id in GPT-2's alphabet. specials: names of keys
 * that are special tokens and stand for themselves (or NULL: the two of
 * GPT-2). */
static int load_vocab(ld *l, json_t *obj, json_t *specials)
{
    if (!json_is_object(obj) || json_object_size(obj) == 0)
        return fail(l, TOKVEC_E_TOKENIZER,
                    "vocabulary is not a non-empty object of token -> id");
    const char *key;
    json_t *v;
    unsigned char *buf = malloc(4096);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    json_object_foreach(obj, key, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        rc = vocab_entry(l, key, strlen(key), (long long)id, specials, buf);
        if (rc)
            break;
    }
    free(buf);
    return rc;
}

/* JSON white space from p; the first byte past it. */
static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

static int hex4(const char *p, uint32_t *v)
{
    *v = 0;
    for (int k = 0; k < 4; k++) {
        int c = (unsigned char)p[k], d = c >= '0' && c <= '9'   ? c - '0'
                                         : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                                : -1;
        if (d < 0)
            return -1;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

/* A JSON string at p (past its opening quote) decoded into out (>= the
 * string's length + 1 bytes, NUL-terminated), for the common case only:
 * escapes of code points below U+0800 but NUL, raw ASCII and two-byte
 * UTF-8 (all GPT-2's alphabet needs). The byte past the closing quote,
 * or NULL: something else (jansson decides). */
static const char *fast_str(const char *p, const char *end, char *out,
                            size_t *n)
{
    size_t o = 0;
    while (p < end) {
        unsigned c = (unsigned char)*p;
        if (c == '"') {
            out[o] = '\0';
            *n = o;
            return p + 1;
        }
        if (c < 0x20 || c >= 0xE0 || (c >= 0x80 && c < 0xC2))
            return NULL;
        if (c >= 0xC2) { /* two-byte UTF-8 */
            if (p + 1 >= end || ((unsigned char)p[1] & 0xC0) != 0x80)
                return NULL;
            out[o++] = *p++;
            out[o++] = *p++;
            continue;
        }
        if (c != '\\') {
            out[o++] = *p++;
            continue;
        }
        if (p + 1 >= end)
            return NULL;
        char e = p[1];
        const char *es = "\"\\/bfnrt", *ev = "\"\\/\b\f\n\r\t";
        const char *f = e ? strchr(es, e) : NULL;
        if (f) {
            out[o++] = ev[f - es];
            p += 2;
            continue;
        }
        uint32_t v;
        if (e != 'u' || end - p < 6 || hex4(p + 2, &v) < 0 || v == 0 ||
            v >= 0x800)
            return NULL;
        if (v < 0x80) {
            out[o++] = (char)v;
        } else {
            out[o++] = (char)(0xC0 | v >> 6);
            out[o++] = (char)(0x80 | (v & 0x3F));
        }
        p += 6;
    }
    return NULL;
}

/* GPT-2's encoder.json (a flat object of token -> id, ~1 MB) without
 * jansson: a fifth of the start-up went into building and freeing its
 * objects. Takes only what it can be sure of (ids as plain decimals below
 * 2^24, fast_str's strings, nothing after the object) and adds the tokens
 * as load_vocab would. 1: loaded; 0: not taken, the handle as it was (a
 * token table reset), for the jansson path to read or refuse with its
 * own message -- so a duplicate key or a bad token fails there, as
 * before. */
static int fast_vocab(ld *l, const char *text, size_t len)
{
    tokvec_tokenizer *t = l->t;
    unsigned char order[256];
    alphabet(l, order);
    const char *p = skip_ws(text, text + len), *end = text + len;
    char *key = malloc(len + 1);
    unsigned char *buf = malloc(4096);
    char err1 = l->o && l->o->errbuf && l->o->errlen ? l->o->errbuf[0] : 0;
    int ok = key && buf && p < end && *p == '{', first = 1;
    if (ok)
        p++;
    while (ok) {
        p = skip_ws(p, end);
        if (p < end && *p == '}' && !first) {
            p++;
            break;
        }
        if (!first) {
            ok = p < end && *p == ',';
            p = skip_ws(p + ok, end);
        }
        first = 0;
        size_t kl = 0;
        ok = ok && p < end && *p == '"' &&
             (p = fast_str(p + 1, end, key, &kl)) != NULL;
        if (ok)
            p = skip_ws(p, end);
        ok = ok && p < end && *p == ':';
        if (ok)
            p = skip_ws(p + 1, end);
        long long id = 0;
        int digits = 0;
        while (ok && p < end && *p >= '0' && *p <= '9' && digits < 9) {
            id = id * 10 + (*p++ - '0');
            digits++;
        }
        ok = ok && digits && !(digits > 1 && *(p - digits) == '0') &&
             id < TV_TOK_MAX_ID && p < end &&
             (*p == ',' || *p == '}' || *p == ' ' || *p == '\n' ||
              *p == '\r' || *p == '\t');
        ok = ok && vocab_entry(l, key, kl, id, NULL, buf) == 0;
    }
    ok = ok && skip_ws(p, end) == end;
    free(key);
    free(buf);
    if (ok)
        return 1;
    free(t->tok); /* back to a fresh table: the jansson path reads it */
    free(t->blob);
    free(t->imap);
    t->tok = NULL;
    t->blob = NULL;
    t->imap = NULL;
    t->n_tok = t->tok_cap = t->blob_len = t->blob_cap = 0;
    t->imask = 0;
    if (l->o && l->o->errbuf && l->o->errlen)
        l->o->errbuf[0] = err1; /* a message from vocab_entry goes */
    return 0;
}

typedef struct merges {
    unsigned char *bytes; /* left and right tokens, decoded, back to back */
    uint32_t *at;         /* 3 per merge: left start, split, right end */
    size_t n;
} merges;

static int merges_add(ld *l, merges *m, const char *a, const char *b,
                      size_t line, size_t *blen)
{
    size_t la = strlen(a), lb = strlen(b);
    if (!la || !lb)
        return fail(l, TOKVEC_E_TOKENIZER, "merge %zu: empty token", line);
    uint32_t s = (uint32_t)*blen;
    long na = unalpha(l, a, m->bytes + *blen);
    long nb = na < 0 ? -1 : unalpha(l, b, m->bytes + *blen + na);
    if (na < 0 || nb < 0)
        return fail(l, TOKVEC_E_TOKENIZER,
                    "merge %zu: \"%.40s %.40s\" is "
                    "not in GPT-2's byte alphabet",
                    line, a, b);
    m->at[3 * m->n] = s;
    m->at[3 * m->n + 1] = s + (uint32_t)na;
    m->at[3 * m->n + 2] = s + (uint32_t)(na + nb);
    *blen += (size_t)(na + nb);
    m->n++;
    return 0;
}

/* Lines "a b" after an optional "#version" line. */
static int parse_merges_txt(ld *l, char *text, size_t len, merges *m)
{
    size_t lines = 1;
    for (size_t k = 0; k < len; k++)
        lines += text[k] == '\n';
    m->bytes = malloc(len + 1);
    m->at = malloc(lines * 3 * sizeof *m->at);
    if (!m->bytes || !m->at)
        return -ENOMEM;
    size_t blen = 0, line = 0;
    char *p = text;
    while (*p || p < text + len) {
        char *nl = strchr(p, '\n');
        if (!nl && p >= text + len)
            break;
        if (nl)
            *nl = '\0';
        line++;
        if (strlen(p) != (size_t)((nl ? nl : text + len) - p))
            return fail(l, TOKVEC_E_TOKENIZER, "line %zu: NUL byte", line);
        if (!(line == 1 && !strncmp(p, "#version", 8)) && !(!nl && !*p)) {
            char *sp = strchr(p, ' ');
            if (!sp || strchr(sp + 1, ' '))
                return fail(l, TOKVEC_E_TOKENIZER,
                            "line %zu: not two tokens separated by one space",
                            line);
            *sp = '\0';
            int rc = merges_add(l, m, p, sp + 1, line, &blen);
            if (rc)
                return rc;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}

/* Chooses the merge rule: tiktoken's (ranks) when the ids are exactly the
 * ranks the merges build, else the listed merges in list order. The
 * merges' left, right and merged tokens are looked up in batches
 * (tv_vmap_get_many: GPT-2 asks 150,000 times at start-up). */
static int apply_merges(ld *l, const merges *m, const unsigned char *order)
{
    tokvec_tokenizer *t = l->t;
    int shaped = 1;
    size_t ordinary = 0;
    for (size_t i = 0; i < t->n_tok; i++)
        ordinary += !t->tok[i].special;
    shaped = ordinary == 256 + m->n;
    for (int k = 0; shaped && k < 256; k++)
        shaped = tv_vmap_get(t, &order[k], 1) == k;
    size_t cnt = 3 * m->n;
    const unsigned char **kb = malloc((cnt + 1) * sizeof *kb);
    size_t *kn = malloc((cnt + 1) * sizeof *kn);
    int32_t *id = malloc((cnt + 1) * sizeof *id);
    int rc = kb && kn && id ? 0 : -ENOMEM;
    for (size_t k = 0; rc == 0 && k < m->n; k++) {
        const unsigned char *b = m->bytes + m->at[3 * k];
        size_t na = m->at[3 * k + 1] - m->at[3 * k];
        size_t n = m->at[3 * k + 2] - m->at[3 * k];
        kb[3 * k] = b, kn[3 * k] = na;
        kb[3 * k + 1] = b + na, kn[3 * k + 1] = n - na;
        kb[3 * k + 2] = b, kn[3 * k + 2] = n;
    }
    if (rc == 0)
        tv_vmap_get_many(t, kb, kn, id, cnt);
    for (size_t k = 0; rc == 0 && shaped && k < m->n; k++)
        shaped = id[3 * k + 2] == (int32_t)(256 + k);
    if (rc == 0 && shaped) { /* tiktoken's rule: every split of every token */
        t->whole_lookup = 1;
        rc = tv_pmap_from_ranks(t);
    }
    for (size_t k = 0; rc == 0 && k < m->n; k++) {
        int32_t a = id[3 * k], c = id[3 * k + 1], r = id[3 * k + 2];
        if (a < 0 || c < 0 || r < 0) {
            rc = fail(l, TOKVEC_E_TOKENIZER,
                      "merge %zu: the %s is not in the vocabulary", k + 1,
                      a < 0   ? "left token"
                      : c < 0 ? "right token"
                              : "merged token");
            break;
        }
        if (!shaped) { /* Hugging Face's rule: listed pairs, list order */
            if (!t->pmap)
                rc = tv_pmap_init(t, m->n + 16);
            if (rc == 0)
                rc = tv_pmap_put(t, a, c, (uint32_t)k, r);
        }
    }
    if (rc == 0 && !t->pmap) /* no merges at all */
        rc = tv_pmap_init(t, 16);
    free(kb);
    free(kn);
    free(id);
    return rc;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The merges file beside a vocabulary JSON: vocab.bpe, else merges.txt. */
static char *sibling(const char *path, const char *name)
{
    size_t dl = (size_t)(base_name(path) - path);
    char *s = malloc(dl + strlen(name) + 1);
    if (s) {
        memcpy(s, path, dl);
        strcpy(s + dl, name);
    }
    return s;
}

/* vocab NULL: fast_vocab read it. */
static int load_gpt2(ld *l, const char *path, json_t *vocab)
{
    unsigned char order[256];
    alphabet(l, order);
    int rc = vocab ? load_vocab(l, vocab, NULL) : 0;
    if (rc)
        return rc;
    const char *mp = l->o ? l->o->merges_path : NULL;
    char *own = NULL;
    if (!mp) {
        own = sibling(path, "vocab.bpe");
        if (own && access(own, F_OK) != 0) {
            free(own);
            own = sibling(path, "merges.txt");
        }
        if (!own)
            return -ENOMEM;
        mp = own;
    }
    char *text = NULL;
    size_t len = 0;
    merges m = {0};
    rc = slurp(l, mp, &text, &len);
    if (rc == 0)
        rc = parse_merges_txt(l, text, len, &m);
    int32_t dup = -1;
    if (rc == 0) {
        rc = tv_vmap_build(l->t, &dup);
        if (rc == TOKVEC_E_MISMATCH) {
            l->path = path;
            rc = fail(l, TOKVEC_E_TOKENIZER,
                      "id %d has the bytes of an earlier token", dup);
        }
    }
    if (rc == 0)
        rc = apply_merges(l, &m, order);
    free(text);
    free(m.bytes);
    free(m.at);
    free(own);
    l->t->info.format = "gpt2-json";
    return rc;
}

/* 1 when model's key is set to something other than null or "" (an
 * affix tokvec does not apply). */
static int has_affix(json_t *model, const char *key)
{
    json_t *x = json_object_get(model, key);
    const char *v = json_string_value(x);
    return x && !json_is_null(x) && (!v || v[0]);
}

/* tokenizer.json: checks the pipeline is one tokvec runs exactly. */
static int hf_pipeline(ld *l, json_t *root)
{
    json_t *norm = json_object_get(root, "normalizer");
    if (norm && !json_is_null(norm))
        return fail(l, TOKVEC_E_TOKENIZER, "a normalizer is not supported");
    json_t *pre = json_object_get(root, "pre_tokenizer");
    const char *ty = json_string_value(json_object_get(pre, "type"));
    json_t *bl = pre, *split = NULL;
    if (ty && !strcmp(ty, "Sequence")) {
        json_t *seq = json_object_get(pre, "pretokenizers");
        if (json_array_size(seq) == 2) {
            split = json_array_get(seq, 0);
            bl = json_array_get(seq, 1);
        } else {
            bl = NULL;
        }
    }
    const char *bty = json_string_value(json_object_get(bl, "type"));
    if (!bty || strcmp(bty, "ByteLevel") ||
        json_is_true(json_object_get(bl, "add_prefix_space")))
        return fail(l, TOKVEC_E_TOKENIZER,
                    "pre_tokenizer is not ByteLevel "
                    "(add_prefix_space false), alone or after one Split");
    l->t->pattern = TV_PAT_GPT2;
    if (split) {
        const char *sty = json_string_value(json_object_get(split, "type"));
        const char *re = json_string_value(
            json_object_get(json_object_get(split, "pattern"), "Regex"));
        const char *beh = json_string_value(
            json_object_get(split, "behavior"));
        int p = re ? tv_pattern_from_regex(re) : -1;
        if (!sty || strcmp(sty, "Split") || p < 0 || !beh ||
            strcmp(beh, "Isolated") ||
            json_is_true(json_object_get(split, "invert")) ||
            json_is_true(json_object_get(bl, "use_regex")))
            return fail(l, TOKVEC_E_TOKENIZER,
                        "Split pre-tokenizer: only "
                        "the gpt2, cl100k_base, o200k_base and Qwen 2 "
                        "regexes, Isolated, are supported");
        l->t->pattern = (tv_pattern)p;
    } else if (json_is_false(json_object_get(bl, "use_regex"))) {
        return fail(l, TOKVEC_E_TOKENIZER,
                    "ByteLevel without its regex "
                    "and without a Split is not supported");
    }
    json_t *model = json_object_get(root, "model");
    const char *mty = json_string_value(json_object_get(model, "type"));
    json_t *dropout = json_object_get(model, "dropout");
    if (!json_is_object(model) || (mty && strcmp(mty, "BPE")) ||
        (dropout && !json_is_null(dropout)) ||
        json_is_true(json_object_get(model, "byte_fallback")) ||
        has_affix(model, "continuing_subword_prefix") ||
        has_affix(model, "end_of_word_suffix"))
        return fail(l, TOKVEC_E_TOKENIZER,
                    "model is not a plain BPE "
                    "(no dropout, byte_fallback or affixes)");
    return 0;
}

/* The merges of a tokenizer.json: "a b" strings or ["a", "b"] pairs. */
static int hf_merges(ld *l, json_t *arr, merges *m)
{
    if (!json_is_array(arr))
        return fail(l, TOKVEC_E_TOKENIZER, "model.merges is not an array");
    size_t n = json_array_size(arr), total = 1;
    json_t *v;
    size_t k;
    json_array_foreach(arr, k, v)
        total += json_is_string(v)
                     ? json_string_length(v)
                     : json_string_length(json_array_get(v, 0)) +
                           json_string_length(json_array_get(v, 1));
    m->bytes = malloc(total);
    m->at = malloc((n + 1) * 3 * sizeof *m->at);
    if (!m->bytes || !m->at)
        return -ENOMEM;
    size_t blen = 0;
    char pair[2][1024];
    json_array_foreach(arr, k, v) {
        const char *a = NULL, *b = NULL;
        if (json_is_string(v)) {
            const char *s = json_string_value(v), *sp = strchr(s, ' ');
            if (sp && !strchr(sp + 1, ' ') && (size_t)(sp - s) < 1024 &&
                strlen(sp + 1) < 1024) {
                memcpy(pair[0], s, (size_t)(sp - s));
                pair[0][sp - s] = '\0';
                strcpy(pair[1], sp + 1);
                a = pair[0], b = pair[1];
            }
        } else if (json_array_size(v) == 2) {
            a = json_string_value(json_array_get(v, 0));
            b = json_string_value(json_array_get(v, 1));
        }
        if (!a || !b)
            return fail(l, TOKVEC_E_TOKENIZER,
                        "merge %zu: not \"a b\" or [\"a\", \"b\"]", k + 1);
        int rc = merges_add(l, m, a, b, k + 1, &blen);
        if (rc)
            return rc;
    }
    return 0;
}

/* 1 when the pre-tokenizer is ByteLevel or a Sequence holding one: a
 * byte-level BPE (GPT-2, Llama 3); a BPE without is SentencePiece's. */
static int byte_level(json_t *root)
{
    json_t *pre = json_object_get(root, "pre_tokenizer"), *e;
    const char *ty = json_string_value(json_object_get(pre, "type"));
    size_t k;
    if (ty && !strcmp(ty, "ByteLevel"))
        return 1;
    json_array_foreach(json_object_get(pre, "pretokenizers"), k, e) {
        ty = json_string_value(json_object_get(e, "type"));
        if (ty && !strcmp(ty, "ByteLevel"))
            return 1;
    }
    return 0;
}

/* tokenizer.json with model.type WordPiece, Unigram (kind 1) or BPE
 * without ByteLevel (kind 2): wordpiece.c, unigram.c or spbpe.c reads the
 * model, hf_pipeline.c the pipeline (tok_hf.h); the lookups follow. */
static int load_wp(ld *l, json_t *root, int kind)
{
    char why[320] = "";
    int rc = kind == 1   ? tv_uni_load(l->t, root, why, sizeof why)
             : kind == 2 ? tv_spbpe_load(l->t, root, why, sizeof why)
                         : tv_wp_load(l->t, root, why, sizeof why);
    if (rc == 0)
        rc = tv_hf_load_rest(l->t, root, why, sizeof why);
    if (rc == TOKVEC_E_TOKENIZER)
        return fail(l, rc, "%s", why);
    int32_t dup = -1;
    if (rc == 0) {
        rc = tv_vmap_build(l->t, &dup);
        if (rc == TOKVEC_E_MISMATCH)
            rc = fail(l, TOKVEC_E_TOKENIZER,
                      "id %d has the text of an earlier token", dup);
    }
    for (size_t i = 0; rc == 0 && i < l->t->n_tok; i++) {
        /* HF gives an added token that is in the model's vocabulary the
         * vocabulary's id, whatever the file says */
        const tv_tok *o = &l->t->tok[i];
        int32_t id = o->special
                         ? tv_vmap_get(l->t, l->t->blob + o->off, o->len)
                         : -1;
        if (id >= 0 && id != o->id)
            rc = fail(l, TOKVEC_E_TOKENIZER,
                      "added token %d: its text is token %d of the model",
                      o->id, id);
    }
    return rc ? rc : tv_wp_finish(l->t);
}

static int load_hf(ld *l, json_t *root)
{
    unsigned char order[256];
    alphabet(l, order);
    l->t->info.format = "tokenizer.json";
    char why[320] = "";
    int rc = tv_post_parse(json_object_get(root, "post_processor"),
                           &l->t->post, why, sizeof why);
    if (rc == TOKVEC_E_TOKENIZER)
        return fail(l, rc, "%s", why);
    const char *mty = json_string_value(
        json_object_get(json_object_get(root, "model"), "type"));
    if (rc == 0 && mty &&
        (!strcmp(mty, "WordPiece") || !strcmp(mty, "Unigram")))
        return load_wp(l, root, !strcmp(mty, "Unigram"));
    if (rc == 0 && (!mty || !strcmp(mty, "BPE")) && !byte_level(root))
        return load_wp(l, root, 2);
    if (rc == 0 && mty && strcmp(mty, "BPE"))
        return fail(l, TOKVEC_E_TOKENIZER,
                    "model: type %.40s is not supported (BPE, WordPiece, "
                    "Unigram)",
                    mty);
    if (rc == 0)
        rc = hf_pipeline(l, root);
    if (rc)
        return rc;
    json_t *model = json_object_get(root, "model"), *added, *v;
    json_t *specials = json_object();
    if (!specials)
        return -ENOMEM;
    added = json_object_get(root, "added_tokens");
    size_t k;
    json_array_foreach(added, k, v) {
        const char *c = json_string_value(json_object_get(v, "content"));
        if (c)
            json_object_set(specials, c, json_object_get(v, "id"));
    }
    rc = load_vocab(l, json_object_get(model, "vocab"), specials);
    const char *key;
    json_object_foreach(specials, key, v) /* added tokens not in vocab */
    {
        json_int_t id = json_integer_value(v);
        if (rc || !json_is_integer(v) || id < 0 || id >= TV_TOK_MAX_ID) {
            rc = rc ? rc
                    : fail(l, TOKVEC_E_TOKENIZER,
                           "added token \"%.40s\": bad id", key);
            break;
        }
        const tv_tok *o = tv_tok_get(l->t, (int32_t)id);
        if (o) {
            if (!o->special || o->len != strlen(key) ||
                memcmp(l->t->blob + o->off, key, strlen(key)))
                rc = fail(l, TOKVEC_E_TOKENIZER,
                          "added token \"%.40s\": id %lld is another token",
                          key, (long long)id);
        } else if (*key) {
            rc = tv_tok_add(l->t, (const unsigned char *)key, strlen(key),
                            (int32_t)id, 1);
        }
    }
    json_decref(specials);
    json_array_foreach(added, k, v) { /* kinds and options (tokenizer.c) */
        json_t *id = json_object_get(v, "id");
        tv_tok *o = rc || !json_is_integer(id)
                        ? NULL
                        : (tv_tok *)tv_tok_get(
                              l->t, (int32_t)json_integer_value(id));
        if (o && o->special)
            o->special = (json_is_false(json_object_get(v, "special")) ? 2u
                                                                       : 1u) |
                         tv_added_options(v) << 8;
    }
    merges m = {0};
    int32_t dup = -1;
    if (rc == 0)
        rc = hf_merges(l, json_object_get(model, "merges"), &m);
    if (rc == 0) {
        rc = tv_vmap_build(l->t, &dup);
        if (rc == TOKVEC_E_MISMATCH) {
            rc = fail(l, TOKVEC_E_TOKENIZER,
                      "id %d has the bytes of an earlier token", dup);
        }
    }
    if (rc == 0)
        rc = apply_merges(l, &m, order);
    if (rc == 0 && json_is_true(json_object_get(model, "ignore_merges")))
        l->t->whole_lookup = 1;
    free(m.bytes);
    free(m.at);
    return rc;
}

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Strict base64 (padded) of n chars into out; byte count or -1. */
static long b64dec(const char *s, size_t n, unsigned char *out)
{
    if (n == 0 || n % 4)
        return -1;
    long o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            if (s[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0, pad++;
            } else {
                v[k] = pad ? -1 : b64val((unsigned char)s[i + k]);
                if (v[k] < 0)
                    return -1;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
                     (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)w;
        if ((pad == 1 && (w & 0xFF)) || (pad == 2 && (w & 0xFFFF)))
            return -1; /* non-canonical padding bits */
    }
    return o;
}

static const struct {
    const char *pattern;
    const char *name;
    int32_t id;
} tiktoken_specials[] = {
    {"gpt2", "<|endoftext|>", 50256},
    {"r50k_base", "<|endoftext|>", 50256},
    {"p50k_base", "<|endoftext|>", 50256},
    {"cl100k_base", "<|endoftext|>", 100257},
    {"cl100k_base", "<|fim_prefix|>", 100258},
    {"cl100k_base", "<|fim_middle|>", 100259},
    {"cl100k_base", "<|fim_suffix|>", 100260},
    {"cl100k_base", "<|endofprompt|>", 100276},
    {"o200k_base", "<|endoftext|>", 199999},
    {"o200k_base", "<|endofprompt|>", 200018},
};

static int tiktoken_lines(ld *l, char *text, size_t len)
{
    unsigned char buf[768];
    size_t line = 0;
    char *p = text, *end = text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        line++;
        char *sp = memchr(p, ' ', (size_t)(le - p));
        char *q = sp ? sp + 1 : NULL;
        long n = (sp && sp - p <= 1024) ? b64dec(p, (size_t)(sp - p), buf)
                                        : -1;
        long long rank = 0;
        int ok = n > 0 && q < le;
        for (; ok && q < le; q++)
            ok = *q >= '0' && *q <= '9' &&
                 (rank = rank * 10 + (*q - '0')) < TV_TOK_MAX_ID;
        if (!ok)
            return fail(l, TOKVEC_E_TOKENIZER,
                        "line %zu: not \"base64 rank\" with a rank below 2^24",
                        line);
        int rc = tv_tok_add(l->t, buf, (size_t)n, (int32_t)rank, 0);
        if (rc == TOKVEC_E_MISMATCH)
            return fail(l, TOKVEC_E_TOKENIZER,
                        "line %zu: rank %lld is given twice", line, rank);
        if (rc)
            return rc;
        p = le + 1;
    }
    return line ? 0 : fail(l, TOKVEC_E_TOKENIZER, "no tokens");
}

static int load_tiktoken(ld *l, char *text, size_t len)
{
    tokvec_tokenizer *t = l->t;
    const char *pat = l->o ? l->o->pattern : NULL;
    const char *b = base_name(l->path);
    static const char *const names[] = {"gpt2", "r50k_base", "p50k_base",
                                        "cl100k_base", "o200k_base"};
    for (size_t k = 0; !pat && k < sizeof names / sizeof *names; k++)
        if (!strncmp(b, names[k], strlen(names[k])))
            pat = names[k];
    if (!pat || tv_pattern_parse(pat, &t->pattern) < 0)
        return fail(l, TOKVEC_E_TOKENIZER,
                    "name the split pattern (gpt2, "
                    "r50k_base, p50k_base, cl100k_base, o200k_base): %s",
                    pat ? pat : "none given and the file name has none");
    t->info.format = "tiktoken";
    t->whole_lookup = 1;
    int rc = tiktoken_lines(l, text, len);
    for (size_t k = 0;
         rc == 0 && k < sizeof tiktoken_specials / sizeof *tiktoken_specials;
         k++) {
        if (strcmp(tiktoken_specials[k].pattern, pat))
            continue;
        const char *s = tiktoken_specials[k].name;
        rc = tv_tok_add(t, (const unsigned char *)s, strlen(s),
                        tiktoken_specials[k].id, 1);
        if (rc == TOKVEC_E_MISMATCH)
            rc = fail(l, TOKVEC_E_TOKENIZER,
                      "rank %d is %s's special token %s",
                      tiktoken_specials[k].id, pat, s);
    }
    int32_t dup = -1;
    if (rc == 0) {
        rc = tv_vmap_build(t, &dup);
        if (rc == TOKVEC_E_MISMATCH) {
            rc = fail(l, TOKVEC_E_TOKENIZER,
                      "rank %d has the bytes of an earlier token", dup);
        }
    }
    if (rc == 0)
        rc = tv_pmap_from_ranks(t);
    return rc;
}

static char *dup_name(const char *path)
{
    const char *b = base_name(path);
    size_t n = strcspn(b, ".");
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, b, n);
        s[n] = '\0';
    }
    return s;
}

/* What every format must hold, and the lookups encoding uses. */
static int finish(ld *l)
{
    tokvec_tokenizer *t = l->t;
    int rc = tv_tok_index(t);
    if (rc < 0)
        return rc;
    size_t ordinary = 0;
    for (size_t i = 0; i < t->n_tok; i++)
        ordinary += !t->tok[i].special;
    uint32_t top = t->n_tok ? (uint32_t)t->tok[t->n_tok - 1].id + 1 : 0;
    for (int b = 0; !t->hf && b < 256; b++) {
        unsigned char c = (unsigned char)b;
        t->byte_id[b] = tv_vmap_get(t, &c, 1);
        if (t->byte_id[b] < 0)
            return fail(l, TOKVEC_E_TOKENIZER,
                        "byte 0x%02x is not a token (every byte must be one)",
                        b);
    }
    rc = tv_special_build(t);
    if (rc < 0)
        return rc;
    const tv_tok *eot = tv_tok_get(t, 50256);
    t->info.vocab_size = top;
    t->info.n_tokens = (int64_t)ordinary;
    t->info.n_special = t->n_special;
    t->info.pattern = t->hf ? "none" : tv_pattern_name(t->pattern);
    if (!t->info.model)
        t->info.model = "BPE";
    t->info.n_added = t->post.npre + t->post.npost;
    for (size_t k = 0; k < t->post.npre + t->post.npost; k++) {
        int32_t id = k < t->post.npre ? t->post.pre[k]
                                      : t->post.post[k - t->post.npre];
        if (!tv_tok_get(t, id))
            return fail(l, TOKVEC_E_TOKENIZER,
                        "post_processor: id %d is not a token", id);
    }
    if (!strcmp(t->info.format, "gpt2-json") && t->whole_lookup &&
        ordinary == 50256 && t->n_special == 1 && top == 50257 && eot &&
        eot->special) {
        free(t->name);
        t->name = strdup("gpt2");
    }
    t->info.name = t->name;
    return t->name ? 0 : -ENOMEM;
}

int tv_tok_load(tokvec_tokenizer *t, const char *path,
                const tokvec_tokenizer_opts *o)
{
    ld l = {.t = t, .o = o, .path = path};
    char *text = NULL, *jpath = NULL;
    size_t len = 0;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t pl = strlen(path);
        jpath = malloc(pl + 32);
        if (!jpath)
            return -ENOMEM;
        snprintf(jpath, pl + 32, "%s/tokenizer.json", path);
        if (access(jpath, F_OK) != 0)
            snprintf(jpath, pl + 32, "%s/encoder.json", path);
        if (access(jpath, F_OK) != 0)
            snprintf(jpath, pl + 32, "%s/vocab.json", path);
        path = jpath;
    }
    t->name = dup_name(path);
    int rc = t->name ? slurp(&l, path, &text, &len) : -ENOMEM;
    const char *b = base_name(path);
    size_t bl = strlen(b);
    if (rc == 0 && bl >= 9 && !strcmp(b + bl - 9, ".tiktoken")) {
        rc = load_tiktoken(&l, text, len);
    } else if (rc == 0 && fast_vocab(&l, text, len)) {
        rc = load_gpt2(&l, path, NULL);
    } else if (rc == 0) {
        json_error_t je;
        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!root)
            rc = fail(&l, TOKVEC_E_TOKENIZER,
                      "not JSON (line %d: %s), and not named *.tiktoken",
                      je.line, je.text);
        else if (json_is_object(json_object_get(root, "model")))
            rc = load_hf(&l, root);
        else
            rc = load_gpt2(&l, path, root);
        json_decref(root);
    }
    free(text);
    if (rc == 0) {
        l.path = path;
        rc = finish(&l);
    }
    free(jpath);
    return rc;
}
