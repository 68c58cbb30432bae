/* test_decoder_chain.c -- core/tokenizer/decoders.c through the public
 * decode call: a tokenizer.json's decoder chain (WordPiece with cleanup,
 * Replace, Strip, Fuse, nested Sequences) maps the tokens as Hugging Face's
 * decode_chain does, each decoder over the list the one before made; a
 * decoder that cannot be is refused naming its JSON path.
 *
 * The expected texts are worked out by hand from the decoders' definitions
 * in tokenizers/src/decoders (strip.rs: at most `start` leading and `stop`
 * trailing copies of one character; replace.rs: every match of a String
 * pattern; fuse.rs: one token; wordpiece.rs: a space before each token
 * after the first unless it starts with the prefix, which goes, then the
 * cleanup's replacements token by token), written beside each case.
 * Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tok_fixture.h"
#include "tokvec_tokenizer.h"

/* ids: 0 [UNK], 1 [CLS] (special), 2 hello, 3 ##s, 4 ",", 5 world, 6 ".",
 * 7 __a__, 8 x_y, 9 "\u2581\u2581\u2581x", 10 "'", 11 "##n't", 12 "?" */
#define VOCAB                                                           \
    "\"vocab\":{\"[UNK]\":0,\"[CLS]\":1,\"hello\":2,\"##s\":3,\",\":4," \
    "\"world\":5,\".\":6,\"__a__\":7,\"x_y\":8,"                        \
    "\"\\u2581\\u2581\\u2581x\":9,\"'\":10,\"##n't\":11,\"?\":12}"
#define TOKENIZER(decoder)                                                 \
    "{\"added_tokens\":[{\"id\":1,\"content\":\"[CLS]\",\"special\":true," \
    "\"normalized\":false,\"lstrip\":false,\"rstrip\":false,"              \
    "\"single_word\":false}],"                                             \
    "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\"," VOCAB     \
    "},\"decoder\":" decoder "}"

static void expect_decode(const char *json, const int32_t *ids, size_t n,
                          unsigned flags, const char *want)
{
    char err[512] = "", *text = NULL;
    size_t len = 0;
    tokvec_tokenizer *t;
    if (tf_open_json(json, &t, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(
        tokvec_tokenizer_decode_flags(t, ids, n, flags, &text, &len, NULL), 0);
    assert_string_equal(text, want);
    assert_int_equal(len, strlen(want));
    free(text);
    tokvec_tokenizer_close(t);
}

static void each_decoder_maps_the_list_the_one_before_made(void **s)
{
    (void)s;
    static const int32_t ids[] = {1, 2, 3, 4, 5, 6, 7, 8};
    /* WordPiece: [CLS] " hello" "s" "," (cleanup of " ,") " world" "."
     * " __a__" " x_y"; Replace _ -> -: " --a--" " x-y"; Strip '-' 1, 2:
     * " --a--" starts with a space (nothing at the start), loses two at the
     * end: " --a"; Fuse: one token. */
    static const char chain[] = TOKENIZER(
        "{\"type\":\"Sequence\",\"decoders\":["
        "{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},"
        "{\"type\":\"Replace\",\"pattern\":{\"String\":\"_\"},"
        "\"content\":\"-\"},"
        "{\"type\":\"Strip\",\"content\":\"-\",\"start\":1,\"stop\":2},"
        "{\"type\":\"Fuse\"}]}");
    expect_decode(chain, ids, 8, 0, "[CLS] hellos, world. --a x-y");
    /* skipped, [CLS] is not in the list: hello is the first token */
    expect_decode(chain, ids, 8, TOKVEC_DEC_SKIP_SPECIAL,
                  "hellos, world. --a x-y");
    /* Strip with a character of three bytes, two at the start: "\u2581x" */
    static const int32_t bar[] = {9, 9};
    expect_decode(TOKENIZER("{\"type\":\"Strip\",\"content\":\"\\u2581\","
                            "\"start\":2,\"stop\":5}"),
                  bar, 2, 0, "\xe2\x96\x81x\xe2\x96\x81x");
    /* Strip at the end only: "__a__" -> "__a", "x_y" as is; no WordPiece,
     * no spaces (a decoder joins without them) */
    static const int32_t ax[] = {7, 8};
    expect_decode(TOKENIZER("{\"type\":\"Sequence\",\"decoders\":["
                            "{\"type\":\"Sequence\",\"decoders\":["
                            "{\"type\":\"Strip\",\"content\":\"_\","
                            "\"start\":0,\"stop\":2}]}]}"),
                  ax, 2, 0, "__ax_y");
    /* WordPiece without cleanup keeps " ," and " ?"; with it, a token
     * "##n't" joins and " '" (no space after) stays */
    static const int32_t p[] = {2, 4, 12, 10, 11};
    expect_decode(TOKENIZER("{\"type\":\"WordPiece\",\"prefix\":\"##\","
                            "\"cleanup\":false}"),
                  p, 5, 0, "hello , ? 'n't");
    expect_decode(TOKENIZER("{\"type\":\"WordPiece\"}"), p, 5, 0,
                  "hello,? 'n't");
    /* Replace with a longer pattern than content, several matches */
    expect_decode(TOKENIZER("{\"type\":\"Replace\",\"pattern\":{\"String\":"
                            "\"l\"},\"content\":\"LL\"}"),
                  ids + 1, 1, 0, "heLLLLo");
    /* no ids: an empty text */
    expect_decode(chain, ids, 0, 0, "");
}

static void decoders_that_cannot_be_are_refused_naming_where(void **s)
{
    (void)s;
    static const struct {
        const char *json, *says;
    } bad[] = {
        {TOKENIZER("{}"), "decoder: a decoder without a type"},
        {TOKENIZER("{\"type\":\"Sequence\"}"), "Sequence without decoders"},
        {TOKENIZER("{\"type\":\"Sequence\",\"decoders\":[{\"type\":"
                   "\"Fuse\"},{\"type\":\"Strip\",\"content\":\"ab\","
                   "\"start\":1,\"stop\":0}]}"),
         "decoder.decoders[1]: Strip needs one character"},
        {TOKENIZER("{\"type\":\"Strip\",\"content\":\"\",\"start\":1,"
                   "\"stop\":0}"),
         "Strip needs one character"},
        {TOKENIZER("{\"type\":\"Strip\",\"content\":\"a\",\"start\":-1,"
                   "\"stop\":0}"),
         "counts start, stop"},
        {TOKENIZER("{\"type\":\"Strip\",\"content\":\"a\",\"start\":1}"),
         "counts start, stop"},
        {TOKENIZER("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" +\"},"
                   "\"content\":\" \"}"),
         "a Regex pattern is not"},
        {TOKENIZER("{\"type\":\"Replace\",\"pattern\":{\"String\":\"\"},"
                   "\"content\":\" \"}"),
         "only a non-empty String pattern"},
        {TOKENIZER("{\"type\":\"CTC\"}"),
         "decoder CTC is not supported with this model"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        tf_json_refused(bad[k].json, TOKVEC_E_TOKENIZER, bad[k].says);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            each_decoder_maps_the_list_the_one_before_made, tu_setup_dir,
            tu_teardown_dir),
        cmocka_unit_test_setup_teardown(
            decoders_that_cannot_be_are_refused_naming_where, tu_setup_dir,
            tu_teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
