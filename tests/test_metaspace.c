/* test_metaspace.c -- core/tokenizer/metaspace.c on its own: which
 * {"type": "Metaspace", ...} objects tv_metaspace_from_json takes, with
 * tokenizers' defaults (prepend_scheme always, split true), and which it
 * refuses with which message (each field given a wrong type or value,
 * add_prefix_space false against a scheme other than never, a replacement
 * that is not one valid character); the decoder's rule for token 0 (its
 * replacement characters dropped unless the scheme is never, spaces
 * elsewhere). Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "metaspace.h"

#define REP "\"replacement\":\"\\u2581\""

static int parse(const char *text, tv_metaspace *m, char *err, size_t n)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    assert_non_null(j);
    int rc = tv_metaspace_from_json(j, m, err, n);
    json_decref(j);
    return rc;
}

static void fields_take_tokenizers_defaults_and_values(void **s)
{
    (void)s;
    static const struct {
        const char *json;
        int prepend, split;
    } ok[] = {
        {"{\"type\":\"Metaspace\"," REP "}", TV_MS_ALWAYS, 1},
        {"{\"type\":\"Metaspace\"," REP ",\"prepend_scheme\":null,"
         "\"add_prefix_space\":null,\"split\":null}",
         TV_MS_ALWAYS, 1},
        {"{\"type\":\"Metaspace\"," REP ",\"prepend_scheme\":\"always\","
         "\"add_prefix_space\":true,\"split\":true}",
         TV_MS_ALWAYS, 1},
        {"{\"type\":\"Metaspace\"," REP ",\"prepend_scheme\":\"first\","
         "\"split\":false}",
         TV_MS_FIRST, 0},
        {"{\"type\":\"Metaspace\"," REP ",\"prepend_scheme\":\"never\","
         "\"add_prefix_space\":false}",
         TV_MS_NEVER, 1},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\"}", TV_MS_ALWAYS, 1},
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        tv_metaspace m;
        char err[128] = "";
        if (parse(ok[k].json, &m, err, sizeof err))
            fail_msg("%s: %s", ok[k].json, err);
        assert_int_equal(m.prepend, ok[k].prepend);
        assert_int_equal(m.split, ok[k].split);
    }
    tv_metaspace m;
    assert_int_equal(parse("{\"type\":\"Metaspace\"," REP "}", &m, NULL, 0),
                     0);
    assert_int_equal(m.replacement, 0x2581);
    assert_int_equal(m.rep_len, 3);
    assert_memory_equal(m.rep, "\xe2\x96\x81", 3);
}

static void wrong_fields_are_refused_with_their_rule(void **s)
{
    (void)s;
    static const struct {
        const char *json, *says;
    } bad[] = {
        {"5", "Metaspace: type is not \"Metaspace\""},
        {"{" REP "}", "Metaspace: type is not \"Metaspace\""},
        {"{\"type\":\"Split\"," REP "}",
         "Metaspace: type is not \"Metaspace\""},
        {"{\"type\":\"Metaspace\"}",
         "Metaspace.replacement: not one character"},
        {"{\"type\":\"Metaspace\",\"replacement\":\"\"}",
         "Metaspace.replacement: not one character"},
        {"{\"type\":\"Metaspace\",\"replacement\":\"ab\"}",
         "Metaspace.replacement: not one character"},
        {"{\"type\":\"Metaspace\",\"replacement\":7}",
         "Metaspace.replacement: not one character"},
        {"{\"type\":\"Metaspace\"," REP ",\"prepend_scheme\":\"x\"}",
         "Metaspace.prepend_scheme: not \"always\", \"first\" or \"never\""},
        {"{\"type\":\"Metaspace\"," REP ",\"prepend_scheme\":1}",
         "Metaspace.prepend_scheme: not \"always\", \"first\" or \"never\""},
        {"{\"type\":\"Metaspace\"," REP ",\"add_prefix_space\":1}",
         "Metaspace.add_prefix_space: not a boolean"},
        {"{\"type\":\"Metaspace\"," REP ",\"add_prefix_space\":false}",
         "Metaspace: add_prefix_space does not match declared "
         "prepend_scheme"},
        {"{\"type\":\"Metaspace\"," REP ",\"prepend_scheme\":\"first\","
         "\"add_prefix_space\":false}",
         "Metaspace: add_prefix_space does not match declared "
         "prepend_scheme"},
        {"{\"type\":\"Metaspace\"," REP ",\"split\":\"yes\"}",
         "Metaspace.split: not a boolean"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tv_metaspace m;
        char err[128] = "";
        assert_int_equal(parse(bad[k].json, &m, err, sizeof err),
                         TOKVEC_E_TOKENIZER);
        if (strcmp(err, bad[k].says))
            fail_msg("%s: '%s', want '%s'", bad[k].json, err, bad[k].says);
        assert_int_equal(parse(bad[k].json, &m, NULL, 0), TOKVEC_E_TOKENIZER);
        assert_int_equal(parse(bad[k].json, &m, err, 0), TOKVEC_E_TOKENIZER);
    }
    /* bytes that are not UTF-8 (jansson takes them unchecked) */
    json_t *j = json_pack("{s:s}", "type", "Metaspace");
    json_object_set_new(j, "replacement", json_stringn_nocheck("\xff", 1));
    tv_metaspace m;
    char err[128] = "";
    assert_int_equal(tv_metaspace_from_json(j, &m, err, sizeof err),
                     TOKVEC_E_TOKENIZER);
    assert_string_equal(err, "Metaspace.replacement: not one character");
    json_decref(j);
}

static void decode_drops_token_zeros_replacements_unless_never(void **s)
{
    (void)s;
    static const char *const scheme[] = {"always", "first", "never"};
    /* token "\u2581a\u2581b" as token 0 and as token 1 */
    static const char *const want[3][2] = {{"ab", " a b"},
                                           {"ab", " a b"},
                                           {" a b", " a b"}};
    const unsigned char tok[] = "\xe2\x96\x81"
                                "a\xe2\x96\x81"
                                "b";
    for (int k = 0; k < 3; k++) {
        char text[160];
        snprintf(text, sizeof text,
                 "{\"type\":\"Metaspace\"," REP ",\"prepend_scheme\":\"%s\"}",
                 scheme[k]);
        tv_metaspace m;
        assert_int_equal(parse(text, &m, NULL, 0), 0);
        for (size_t index = 0; index < 2; index++) {
            unsigned char out[16];
            size_t n = tv_metaspace_decode(&m, tok, sizeof tok - 1, index,
                                           out);
            assert_int_equal(n, strlen(want[k][index]));
            assert_memory_equal(out, want[k][index], n);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fields_take_tokenizers_defaults_and_values),
        cmocka_unit_test(wrong_fields_are_refused_with_their_rule),
        cmocka_unit_test(decode_drops_token_zeros_replacements_unless_never),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
