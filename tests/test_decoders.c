/* test_decoders.c -- core/tokenizer/decoders.c through the public decode
 * call, what test_decoder_chain.c leaves: ByteFallback (runs of <0xXX>
 * tokens become their text when it is UTF-8 without NUL, else one U+FFFD
 * per byte; hex digits of either case; a token that only looks like one
 * stays as it is), Strip's bounds on short tokens and characters of two
 * and four bytes, WordPiece with an empty prefix, a null decoder (tokens
 * joined by spaces), and the malformed decoders refused with their
 * messages. Expected texts worked out by hand from tokenizers/src/decoders
 * (byte_fallback.rs, strip.rs, wordpiece.rs). Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_inject.h"
#include "testutil.h"
#include "tok_fixture.h"
#include "tokvec_tokenizer.h"

/* ids: see the vocabulary */
#define VOCAB                                                              \
    "\"vocab\":{\"[UNK]\":0,\"<0x41>\":1,\"<0x4a>\":2,\"<0xC3>\":3,"       \
    "\"<0xA9>\":4,\"<0x00>\":5,\"<0x4G>\":6,\"<0y41>\":7,\"<0x41)\":8,"    \
    "\"xxax\":9,\"x\":10,\"##b\":11,\"<0xZZ>\":12,\"a\":13,\"<0xg1>\":14," \
    "\"<0x1g>\":15,\"<0x41>>\":16,\"<0x!1>\":17}"
#define TOKENIZER(decoder)                                              \
    "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\"," VOCAB \
    "},\"decoder\":" decoder "}"

static void expect_decode(const char *json, const int32_t *ids, size_t n,
                          const char *want)
{
    char err[512] = "", *text = NULL;
    size_t len = 0;
    tokvec_tokenizer *t;
    if (tf_open_json(json, &t, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(tokvec_tokenizer_decode(t, ids, n, &text, &len, NULL), 0);
    assert_string_equal(text, want);
    assert_int_equal(len, strlen(want));
    free(text);
    tokvec_tokenizer_close(t);
}

#define FFFD "\xef\xbf\xbd"

static void byte_fallback_joins_runs_of_byte_tokens(void **s)
{
    (void)s;
    static const char bf[] = TOKENIZER("{\"type\":\"ByteFallback\"}");
    expect_decode(bf, (int32_t[]){1, 2}, 2, "AJ"); /* either case */
    expect_decode(bf, (int32_t[]){13, 3, 4, 13}, 4,
                  "a\xc3\xa9"
                  "a");
    expect_decode(bf, (int32_t[]){3}, 1, FFFD); /* not UTF-8 */
    expect_decode(bf, (int32_t[]){3, 13, 4}, 3, FFFD "a" FFFD);
    expect_decode(bf, (int32_t[]){1, 5, 1}, 3, FFFD FFFD FFFD); /* a NUL */
    /* tokens that only look like bytes */
    expect_decode(bf, (int32_t[]){6, 7, 8, 12, 14, 15, 16, 17}, 8,
                  "<0x4G><0y41><0x41)<0xZZ><0xg1><0x1g><0x41>><0x!1>");
    expect_decode(bf, (int32_t[]){0}, 0, "");
}

static void strip_stops_at_the_token_bounds(void **s)
{
    (void)s;
    /* "xxax": two x at the start, then "ax" loses one at the end; "x":
     * the start takes it, nothing left for the end */
    expect_decode(TOKENIZER("{\"type\":\"Strip\",\"content\":\"x\","
                            "\"start\":2,\"stop\":2}"),
                  (int32_t[]){9, 10, 13}, 3,
                  "a"
                  "a");
    /* characters of two and four bytes */
    expect_decode(TOKENIZER("{\"type\":\"Strip\",\"content\":\"\\u00e9\","
                            "\"start\":1,\"stop\":1}"),
                  (int32_t[]){9}, 1, "xxax");
    expect_decode(TOKENIZER("{\"type\":\"Strip\",\"content\":"
                            "\"\\ud83d\\ude00\",\"start\":1,\"stop\":1}"),
                  (int32_t[]){10}, 1, "x");
}

static void wordpiece_with_an_empty_prefix_spaces_every_token(void **s)
{
    (void)s;
    expect_decode(TOKENIZER("{\"type\":\"WordPiece\",\"prefix\":\"\"}"),
                  (int32_t[]){13, 11, 10}, 3, "a ##b x");
    expect_decode(TOKENIZER("{\"type\":\"WordPiece\",\"prefix\":5}"),
                  (int32_t[]){13, 11}, 2, "a ##b");
    /* a null decoder: joined by spaces */
    expect_decode(TOKENIZER("null"), (int32_t[]){13, 11}, 2, "a ##b");
}

static void malformed_decoders_are_refused(void **s)
{
    (void)s;
    static const struct {
        const char *json, *says;
    } bad[] = {
        {TOKENIZER("{\"type\":\"Sequence\",\"decoders\":[5]}"),
         "decoder.decoders[0]: a decoder without a type"},
        {TOKENIZER("{\"type\":\"Sequence\",\"decoders\":{}}"),
         "Sequence without decoders"},
        {TOKENIZER("{\"type\":\"Strip\",\"content\":5,\"start\":1,"
                   "\"stop\":0}"),
         "Strip needs one character"},
        {TOKENIZER("{\"type\":\"Strip\",\"content\":\"\\u00e9x\","
                   "\"start\":1,\"stop\":0}"),
         "Strip needs one character"},
        {TOKENIZER("{\"type\":\"Strip\",\"content\":\"a\",\"start\":1,"
                   "\"stop\":\"1\"}"),
         "counts start, stop"},
        {TOKENIZER("{\"type\":\"Strip\",\"content\":\"a\",\"start\":1,"
                   "\"stop\":-1}"),
         "counts start, stop"},
        {TOKENIZER("{\"type\":\"Strip\",\"content\":\"a\",\"start\":1.0,"
                   "\"stop\":1}"),
         "counts start, stop"},
        {TOKENIZER("{\"type\":\"Replace\",\"pattern\":{\"String\":\"a\"}}"),
         "only a non-empty String pattern"},
        {TOKENIZER("{\"type\":\"Metaspace\",\"replacement\":\"ab\"}"),
         "decoder: "},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        tf_json_refused(bad[k].json, TOKVEC_E_TOKENIZER, bad[k].says);
}

static void every_failing_allocation_is_no_memory(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    static const char chain[] = TOKENIZER(
        "{\"type\":\"Sequence\",\"decoders\":[{\"type\":"
        "\"ByteFallback\"},{\"type\":\"Replace\",\"pattern\":{"
        "\"String\":\"x\"},\"content\":\"y\"},{\"type\":\"Strip\","
        "\"content\":\"y\",\"start\":1,\"stop\":0},{\"type\":"
        "\"WordPiece\"},{\"type\":\"Fuse\"}]}");
    static const int32_t ids[] = {1, 3, 4, 13, 3, 13, 10, 11};
    char err[512] = "";
    tokvec_tokenizer *t;
    if (tf_open_json(chain, &t, err, sizeof err))
        fail_msg("%s", err);
    int rc = -1, failures = 0;
    for (long nth = 1; nth < 200 && rc; nth++) {
        char *text = NULL;
        size_t len = 0;
        fi_arm(FI_ALLOC, nth, ENOMEM);
        rc = tokvec_tokenizer_decode(t, ids, 8, &text, &len, NULL);
        fi_reset();
        if (rc) {
            assert_int_equal(rc, -ENOMEM);
            assert_null(text);
            failures++;
        } else {
            /* ByteFallback: "A\u00e9" "a" U+FFFD "a" "x" "##b"; Replace,
             * Strip: "x" -> "y" -> ""; WordPiece: a space before each but
             * the first and "##b"; Fuse */
            assert_string_equal(text, "A\xc3\xa9 a " FFFD " a b");
        }
        free(text);
    }
    assert_int_equal(rc, 0);
    assert_true(failures >= 10);
    tokvec_tokenizer_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(byte_fallback_joins_runs_of_byte_tokens),
        cmocka_unit_test(strip_stops_at_the_token_bounds),
        cmocka_unit_test(wordpiece_with_an_empty_prefix_spaces_every_token),
        cmocka_unit_test(malformed_decoders_are_refused),
        cmocka_unit_test(every_failing_allocation_is_no_memory),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
