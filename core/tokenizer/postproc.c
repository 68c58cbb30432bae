/* postproc.c -- Hugging Face post-processors of tokenizer.json for one
 * sequence: TemplateProcessing (its "single" template), BertProcessing,
 * RobertaProcessing ([cls] A [sep]), ByteLevel (adds nothing), and
 * Sequences of them. The result is the ids to put before and after the
 * encoded text when special tokens are asked for (HF's
 * add_special_tokens=True); pair templates are not used.
 *
 * Must hold: every id the post-processor adds is below 2^24. Offsets of
 * the tokens it adds are empty spans (tokenizer.c). The byte-level
 * trim_offsets options are read but offsets stay the tokens' byte spans.
 * Threads: parsed once at open, read-only after.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_hf.h"

static int append(int32_t **v, size_t *n, int32_t id)
{
    int32_t *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return -ENOMEM;
    nv[(*n)++] = id;
    *v = nv;
    return 0;
}

static int id_ok(json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 &&
           json_integer_value(v) < TV_TOK_MAX_ID;
}

static int template(json_t *j, const char *where, tv_post *p, char *err,
                    size_t errlen)
{
    json_t *single = json_object_get(j, "single"), *e;
    json_t *sp = json_object_get(j, "special_tokens");
    size_t k;
    int seen = 0;
    if (!json_is_array(single))
        return tv_hf_bad(err, errlen, where,
                         "TemplateProcessing: \"single\" is not a list");
    json_array_foreach(single, k, e) {
        json_t *st = json_object_get(e, "SpecialToken");
        if (json_object_get(e, "Sequence")) {
            if (seen++)
                return tv_hf_bad(
                    err, errlen, where,
                    "TemplateProcessing: \"single\" names more than "
                    "one sequence");
            continue;
        }
        const char *name = json_string_value(json_object_get(st, "id"));
        json_t *ids = json_object_get(json_object_get(sp, name), "ids"), *i;
        size_t q;
        if (!name || !json_is_array(ids))
            return tv_hf_bad(
                err, errlen, where,
                "TemplateProcessing: a special token of \"single\" "
                "is not in special_tokens");
        json_array_foreach(ids, q, i) {
            if (!id_ok(i))
                return tv_hf_bad(
                    err, errlen, where,
                    "TemplateProcessing: an id is not in [0, 2^24)");
            int rc = seen ? append(&p->post, &p->npost,
                                   (int32_t)json_integer_value(i))
                          : append(&p->pre, &p->npre,
                                   (int32_t)json_integer_value(i));
            if (rc)
                return rc;
        }
    }
    if (!seen)
        return tv_hf_bad(err, errlen, where,
                         "TemplateProcessing: \"single\" has no sequence");
    return 0;
}

static int one(json_t *j, const char *where, tv_post *p, char *err,
               size_t errlen)
{
    const char *ty = json_string_value(json_object_get(j, "type"));
    char msg[160];
    if (!ty)
        return tv_hf_bad(err, errlen, where,
                         "a post-processor without a type");
    if (!strcmp(ty, "Sequence")) {
        json_t *arr = json_object_get(j, "processors"), *e;
        size_t k;
        json_array_foreach(arr, k, e) {
            char w[256];
            snprintf(w, sizeof w, "%s.processors[%zu]", where, k);
            int rc = one(e, w, p, err, errlen);
            if (rc)
                return rc;
        }
        return json_is_array(arr) ? 0
                                  : tv_hf_bad(err, errlen, where,
                                              "Sequence without processors");
    }
    if (!strcmp(ty, "ByteLevel")) {
        p->trim_offsets = !json_is_false(json_object_get(j, "trim_offsets"));
        return 0;
    }
    if (!strcmp(ty, "TemplateProcessing"))
        return template(j, where, p, err, errlen);
    if (!strcmp(ty, "BertProcessing") || !strcmp(ty, "RobertaProcessing")) {
        json_t *cls = json_array_get(json_object_get(j, "cls"), 1);
        json_t *sep = json_array_get(json_object_get(j, "sep"), 1);
        if (!id_ok(cls) || !id_ok(sep))
            return tv_hf_bad(err, errlen, where,
                             "cls and sep must be [token, id] with ids in "
                             "[0, 2^24)");
        int rc = append(&p->pre, &p->npre, (int32_t)json_integer_value(cls));
        return rc ? rc
                  : append(&p->post, &p->npost,
                           (int32_t)json_integer_value(sep));
    }
    snprintf(msg, sizeof msg, "post-processor %.40s is not supported", ty);
    return tv_hf_bad(err, errlen, where, msg);
}

int tv_post_parse(json_t *j, tv_post *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (!j || json_is_null(j))
        return 0;
    int rc = one(j, "post_processor", p, err, errlen);
    if (rc)
        tv_post_free(p);
    return rc;
}

void tv_post_free(tv_post *p)
{
    free(p->pre);
    free(p->post);
    memset(p, 0, sizeof *p);
}
