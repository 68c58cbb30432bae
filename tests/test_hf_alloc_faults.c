/* test_hf_alloc_faults.c -- the Hugging Face pipelines beyond byte-level
 * BPE (Unigram with byte fallback and a precompiled charsmap, a
 * SentencePiece-style BPE, a Unigram behind BertNormalizer) when an
 * allocation fails (tests/fault_inject.h): opening fails with -ENOMEM, a
 * message naming the file and no tokenizer at each allocation (jansson's
 * own spared); encoding a text
 * that every stage changes (NFKC, accents, CJK, control characters,
 * whitespace runs, digits, characters no piece spells) fails with -ENOMEM
 * at each of its allocations, and the same state then encodes the same ids
 * as a fresh one; decoding those ids fails with -ENOMEM or succeeds with
 * the same text. Single-threaded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_faults.h"
#include "tokvec_tokenizer.h"

static const char *const files[] = {
    "tests/data/unigram/seq.json",
    "tests/data/unigram/debian-unigram.json",
    "tests/data/bpe-spm/affix.json",
    "tests/data/wordpiece/seq.json",
};

static char text[36000];
static size_t text_len;

static int setup(void **state)
{
    (void)state;
    static const char part[] =
        "Hello,  World!\t\tThe  QUICK brown fox -- caf\xc3\xa9 na\xc3\xafve "
        "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3 \xe4\xb8\xad\xe6\x96\x87 "
        "\xe2\x85\xa8 12345 xxx xxxx don't <s> </s> \x01\x7f "
        "\xf0\x9f\x98\x80 \xe2\x80\x83 \xc2\xa0 \xe1\x84\x80\xe1\x85\xa1 "
        "ZZzz \xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7\n";
    /* one long word (Unigram's lattice over many characters; past 16 KB
     * of text without added tokens: the stages in pieces) */
    text_len = tf_fault_text(text, sizeof text, part, 18000);
    fi_reset();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fi_reset();
    return 0;
}

static void opening_fails_cleanly_at_each_allocation(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip(); /* AddressSanitizer owns malloc */
    tf_open_fails_at_each_allocation(files, sizeof files / sizeof *files, 200,
                                     1, 5);
}

static void encode_fails_at_each_allocation(tokvec_tokenizer *t,
                                            const tokvec_tok_ids *ref,
                                            unsigned flags)
{
    /* a fresh state allocates the most: count its allocations */
    tokvec_tok_state *st0 = tokvec_tok_state_new();
    tokvec_tok_ids ids0 = {0};
    assert_non_null(st0);
    fi_arm(FI_ALLOC, 0, 0);
    assert_int_equal(
        tokvec_tokenizer_encode(t, st0, text, text_len, flags, &ids0), 0);
    long total = fi_calls(FI_ALLOC);
    fi_reset();
    tokvec_tok_ids_free(&ids0);
    tokvec_tok_state_free(st0);
    int failed = 0, rc = -1;
    for (long nth = 1; nth <= total; nth += nth < 300 ? 1 : nth / 8) {
        tokvec_tok_state *st = tokvec_tok_state_new();
        tokvec_tok_ids ids = {0};
        assert_non_null(st);
        fi_arm(FI_ALLOC, nth, ENOMEM);
        rc = tokvec_tokenizer_encode(t, st, text, text_len, flags, &ids);
        fi_reset();
        if (rc) {
            assert_int_equal(rc, -ENOMEM);
            failed++;
            /* the state is still good */
            tokvec_tok_ids_free(&ids);
            memset(&ids, 0, sizeof ids);
            assert_int_equal(tokvec_tokenizer_encode(t, st, text, text_len,
                                                     flags, &ids),
                             0);
        }
        assert_true(tf_same_ids(&ids, ref));
        tokvec_tok_ids_free(&ids);
        tokvec_tok_state_free(st);
    }
    assert_true(failed > 0);
    /* past the last allocation: no failure */
    tokvec_tok_state *st = tokvec_tok_state_new();
    tokvec_tok_ids ids = {0};
    assert_non_null(st);
    fi_arm(FI_ALLOC, total + 1, ENOMEM);
    rc = tokvec_tokenizer_encode(t, st, text, text_len, flags, &ids);
    fi_reset();
    assert_int_equal(rc, 0);
    assert_true(tf_same_ids(&ids, ref));
    tokvec_tok_ids_free(&ids);
    tokvec_tok_state_free(st);
}

static void decode_fails_at_each_allocation(tokvec_tokenizer *t,
                                            const tokvec_tok_ids *ref)
{
    char *want = NULL, *out = NULL;
    size_t want_len = 0, len = 0;
    fi_arm(FI_ALLOC, 0, 0); /* count only */
    assert_int_equal(tokvec_tokenizer_decode(t, ref->ids, ref->n, &want,
                                             &want_len, NULL),
                     0);
    long total = fi_calls(FI_ALLOC), failed = 0;
    fi_reset();
    for (long nth = 1; nth <= total; nth += nth < 300 ? 1 : nth / 8) {
        fi_arm(FI_ALLOC, nth, ENOMEM);
        int rc = tokvec_tokenizer_decode(t, ref->ids, ref->n, &out, &len,
                                         NULL);
        fi_reset();
        if (rc) {
            assert_int_equal(rc, -ENOMEM);
            failed++;
        } else {
            assert_int_equal(len, want_len);
            assert_memory_equal(out, want, len);
            free(out);
        }
    }
    assert_true(failed > 0);
    free(want);
}

static void encoding_and_decoding_fail_with_no_memory(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip();
    static const unsigned flags[] = {
        TOKVEC_TOK_SPECIAL | TOKVEC_TOK_OFFSETS,
        0,
    };
    for (size_t f = 0; f < sizeof files / sizeof *files; f++)
        for (size_t k = 0; k < sizeof flags / sizeof *flags; k++) {
            tokvec_tokenizer *t = tf_open_ok(files[f]);
            tokvec_tok_state *ref_st = tokvec_tok_state_new();
            tokvec_tok_ids ref = {0};
            assert_int_equal(tokvec_tokenizer_encode(t, ref_st, text, text_len,
                                                     flags[k], &ref),
                             0);
            assert_true(ref.n > 100);
            encode_fails_at_each_allocation(t, &ref, flags[k]);
            if (k == 0)
                decode_fails_at_each_allocation(t, &ref);
            tokvec_tok_ids_free(&ref);
            tokvec_tok_state_free(ref_st);
            tokvec_tokenizer_close(t);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            opening_fails_cleanly_at_each_allocation, setup, teardown),
        cmocka_unit_test_setup_teardown(
            encoding_and_decoding_fail_with_no_memory, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
