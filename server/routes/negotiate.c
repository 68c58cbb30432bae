/* negotiate.c -- the format of an answer (see negotiate.h): the Accept
 * header's media ranges and q-values, ?dtype= and the body's dtype and
 * encoding_format. Pure functions; any thread.
 */
#include <string.h>
#include <strings.h>

#include "negotiate.h"

const char *tv_content_type(tv_out_kind kind)
{
    switch (kind) {
    case TV_OUT_RAW:
        return "application/octet-stream";
    case TV_OUT_NPY:
        return "application/x-npy";
    case TV_OUT_NPZ:
        return "application/x-npz";
    default:
        return "application/json";
    }
}

/* Accept (RFC 9110 12.5.1): each type tokvec produces gets the q of the
 * most specific media range that matches it (the type itself, then
 * application's wildcard, then the full wildcard; a missing q is 1, q=0
 * excludes). The type with the highest q wins; ties go to the more
 * specific range, then to the range listed first, then to JSON, raw,
 * .npy, .npz in that order (so a wildcard alone never picks .npz: only
 * its name, or "encoding_format": "npz", does). Parameters other than q
 * are ignored; an element whose q is malformed (q=2, q=abc) is ignored. */

/* A qvalue ("0", "0.5", "1.000") ending at end (trailing blanks allowed)
 * in thousandths, or -1. */
static int qvalue(const char *p, const char *end)
{
    int q, scale = 100;
    if (p >= end || (*p != '0' && *p != '1'))
        return -1;
    q = *p++ == '1' ? 1000 : 0;
    if (p < end && *p == '.')
        for (p++; p < end && *p >= '0' && *p <= '9' && scale; p++) {
            if (q == 1000 && *p != '0')
                return -1;
            q += (*p - '0') * scale;
            scale /= 10;
        }
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p == end ? q : -1;
}

/* One element [p, e) of an Accept list: its media range in *t, *n and its
 * q (1000 when absent, -1 when malformed). 0, or -1 if it is empty. */
static int accept_elem(const char *p, const char *e, const char **t, size_t *n,
                       int *q)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    const char *te = p;
    while (te < e && *te != ';' && *te != ' ' && *te != '\t')
        te++;
    if (te == p)
        return -1;
    *t = p;
    *n = (size_t)(te - p);
    *q = 1000;
    for (const char *a = te; a < e;) {
        while (a < e && (*a == ';' || *a == ' ' || *a == '\t'))
            a++;
        const char *ae = a;
        while (ae < e && *ae != ';')
            ae++;
        if (ae - a >= 2 && (a[0] == 'q' || a[0] == 'Q') && a[1] == '=') {
            *q = qvalue(a + 2, ae);
            break; /* what follows q is accept-ext */
        }
        a = ae;
    }
    return 0;
}

/* How specifically the media range [t, t+n) names `type`: 2 exactly,
 * 1 as application's wildcard, 0 as the full wildcard, -1 not at all. */
static int range_match(const char *t, size_t n, const char *type)
{
    if (n == strlen(type) && !strncasecmp(t, type, n))
        return 2;
    if (n == 13 && !strncasecmp(t, "application/*", 13))
        return 1;
    return n == 3 && !strncmp(t, "*/*", 3) ? 0 : -1;
}

/* How the Accept list takes `type`: its q (0..1000) from the most
 * specific range naming it (-1 spec: none does), that range's position;
 * *elems counts the list's well-formed elements. */
static int type_q(const char *accept, const char *type, int *spec, int *pos,
                  int *elems)
{
    int q = 0, idx = 0;
    *spec = -1;
    *pos = 0;
    for (const char *p = accept; *p; idx++) {
        const char *e = strchr(p, ',');
        if (!e)
            e = p + strlen(p);
        const char *t;
        size_t n;
        int eq;
        if (accept_elem(p, e, &t, &n, &eq) == 0) {
            (*elems)++;
            int m = eq < 0 ? -1 : range_match(t, n, type);
            if (m > *spec) {
                *spec = m;
                q = eq;
                *pos = idx;
            }
        }
        p = *e ? e + 1 : e;
    }
    return q;
}

int tv_accepts_json(const char *accept)
{
    int spec, pos, elems = 0;
    if (!accept)
        return 1;
    int q = type_q(accept, "application/json", &spec, &pos, &elems);
    return !elems || (spec >= 0 && q > 0);
}

/* The kind the Accept list asks for, or -1 if it accepts none; *named:
 * whether the range that picked it names the type itself (not a
 * wildcard). */
static int accept_pick(const char *accept, int *named)
{
    static const struct {
        const char *name;
        tv_out_kind kind;
    } types[] = {
        {"application/json", TV_OUT_JSON},
        {"application/octet-stream", TV_OUT_RAW},
        {"application/x-npy", TV_OUT_NPY},
        {"application/x-npz", TV_OUT_NPZ},
    };
    *named = 0;
    int best = -1, bq = 0, bspec = -1, bpos = 0, elems = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        int spec, pos, n = 0;
        int q = type_q(accept, types[i].name, &spec, &pos, &n);
        elems += n;
        if (spec < 0 || q <= 0)
            continue;
        if (q > bq ||
            (q == bq && (spec > bspec || (spec == bspec && pos < bpos)))) {
            best = (int)i;
            bq = q;
            bspec = spec;
            bpos = pos;
        }
    }
    if (!elems) /* only blanks and commas: as if there were no Accept */
        return TV_OUT_JSON;
    *named = bspec == 2;
    return best < 0 ? -1 : (int)types[best].kind;
}

/* tv_negotiate, and with npz the answer .npz unless a named type won. */
static int negotiate(const char *accept, const char *dtype_query, int npz,
                     tv_format *fmt, tv_error *err)
{
    int kind = -1, named = 0;
    fmt->kind = TV_OUT_JSON;
    fmt->dtype = TOKVEC_F32;
    if (!accept || !*accept)
        kind = TV_OUT_JSON;
    else
        kind = accept_pick(accept, &named);
    if (kind >= 0 && npz && !named) {
        /* A wildcard (or no Accept) picked: .npz if it matches it too. */
        int spec, pos, elems = 0;
        int q = accept && *accept
                    ? type_q(accept, "application/x-npz", &spec, &pos, &elems)
                    : 1000;
        if (!elems || (spec >= 0 && q > 0))
            kind = TV_OUT_NPZ;
    }
    if (kind < 0)
        return tv_error_set(err, 406, "not_acceptable",
                            "cannot produce any type in Accept; supported: "
                            "application/json, application/octet-stream, "
                            "application/x-npy, application/x-npz");
    fmt->kind = (tv_out_kind)kind;
    if (dtype_query && *dtype_query) {
        if (!strcmp(dtype_query, "float32"))
            fmt->dtype = TOKVEC_F32;
        else if (!strcmp(dtype_query, "float16"))
            fmt->dtype = TOKVEC_F16;
        else if (!strcmp(dtype_query, "bfloat16"))
            fmt->dtype = TOKVEC_BF16;
        else
            return tv_error_set(err, 400, "invalid_request",
                                "dtype must be float32, float16 or bfloat16");
        if (fmt->dtype != TOKVEC_F32 && fmt->kind == TV_OUT_JSON)
            return tv_error_set(err, 400, "invalid_request",
                                "dtype=%s needs Accept: "
                                "application/octet-stream, "
                                "application/x-npy or application/x-npz; "
                                "JSON is float32",
                                dtype_query);
    }
    return 0;
}

int tv_negotiate(const char *accept, const char *dtype_query, tv_format *fmt,
                 tv_error *err)
{
    return negotiate(accept, dtype_query, 0, fmt, err);
}

int tv_negotiate_embed(const char *accept, const char *dtype_query,
                       const char *dtype_body, int torch, int npz,
                       tv_format *fmt, tv_error *err)
{
    const char *d = dtype_query && *dtype_query ? dtype_query : NULL;
    if (dtype_body && *dtype_body) {
        if (d && strcmp(d, dtype_body))
            return tv_error_set(err, 400, "invalid_request",
                                "\"dtype\" in the body and ?dtype= differ; "
                                "give one");
        d = dtype_body;
    }
    if (!torch)
        return negotiate(accept, d, npz, fmt, err);
    /* Any dtype: negotiate the type, then the dtype as a binary answer
     * would (same names, same errors). */
    tv_format bin;
    if (negotiate(accept, NULL, npz, fmt, err) < 0 ||
        tv_negotiate("application/octet-stream", d, &bin, err) < 0)
        return -1;
    fmt->dtype = bin.dtype;
    return 0;
}
