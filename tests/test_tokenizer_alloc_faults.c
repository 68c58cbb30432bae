/* test_tokenizer_alloc_faults.c -- the tokenizer (core/tokenizer/) when an
 * allocation fails (tests/fault_inject.h): opening GPT-2's files, a
 * WordPiece tokenizer.json (bge) and a pipeline of many stages fails with an
 * error and no tokenizer (jansson's own allocations spared: fault_inject.h);
 * encoding (short pieces, and a piece long enough for the heap merge) and
 * decoding fail with -ENOMEM, and the same state then encodes the same ids as
 * a fresh one. Every allocation of the open is failed in turn up to 300, then
 * a spread of later ones; every one of encode, and of decode up to 300 then a
 * spread. Single-threaded.
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
    "data/gpt2",
    "tests/data/bge/tokenizer.json",
    "tests/data/wordpiece/seq.json",
};

static char text[20000];
static size_t text_len;

static int setup(void **state)
{
    (void)state;
    static const char part[] =
        "Hello, world! The quick brown fox -- caf\xc3\xa9 \xe4\xb8\xad\xe6\x96"
        "\x87 12345 don't <|endoftext|>\n\t";
    /* one long piece: letters without a break (the heap merge) */
    text_len = tf_fault_text(text, sizeof text, part, 6000);
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
    tf_open_fails_at_each_allocation(files, sizeof files / sizeof *files, 300,
                                     0, 11);
}

static void encoding_and_decoding_fail_with_no_memory(void **s)
{
    (void)s;
    if (!FI_HAVE_MALLOC)
        skip();
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        tokvec_tokenizer *t = tf_open_ok(files[f]);
        tokvec_tok_state *ref_st = tokvec_tok_state_new();
        tokvec_tok_ids ref = {0};
        unsigned flags = TOKVEC_TOK_SPECIAL | TOKVEC_TOK_OFFSETS;
        assert_int_equal(tokvec_tokenizer_encode(t, ref_st, text, text_len,
                                                 flags, &ref),
                         0);
        int failed = 0, rc = -1;
        for (long nth = 1; rc && nth < 400; nth++) {
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
            assert_true(tf_same_ids(&ids, &ref));
            tokvec_tok_ids_free(&ids);
            tokvec_tok_state_free(st);
        }
        assert_int_equal(rc, 0);
        assert_true(failed > 0);
        char *out = NULL;
        size_t len = 0;
        fi_arm(FI_ALLOC, 0, 0); /* count only */
        assert_int_equal(
            tokvec_tokenizer_decode(t, ref.ids, ref.n, &out, &len, NULL), 0);
        long total = fi_calls(FI_ALLOC);
        fi_reset();
        free(out);
        for (long nth = 1; nth <= total; nth += nth < 300 ? 1 : nth / 8) {
            fi_arm(FI_ALLOC, nth, ENOMEM);
            rc = tokvec_tokenizer_decode(t, ref.ids, ref.n, &out, &len, NULL);
            fi_reset();
            if (rc)
                assert_int_equal(rc, -ENOMEM);
            else
                free(out);
        }
        fi_arm(FI_ALLOC, total + 1, ENOMEM); /* past the last: no failure */
        rc = tokvec_tokenizer_decode(t, ref.ids, ref.n, &out, &len, NULL);
        fi_reset();
        free(out);
        assert_int_equal(rc, 0);
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
