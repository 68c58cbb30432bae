/* test_tokenizer_json_rules.c -- what tokenizer.json files the tokenizer
 * module (core/tokenizer/) refuses, and with which one-line message: every
 * field of the model (byte-level BPE, WordPiece, Unigram), of the added
 * tokens and of each pipeline stage (normalizer, pre-tokenizer,
 * post-processor, decoder) given the wrong type, an out-of-range value or a
 * shape tokvec does not run; and the near misses that are accepted (each
 * accepted file also encodes a text). Each file is written into a
 * temporary directory; the message must be exactly "<path>: <rule>".
 * Single-threaded.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tokvec_error.h"
#include "tokvec_tokenizer.h"

static char path[600];

static const char *write_json(const char *text)
{
    snprintf(path, sizeof path, "%s/tokenizer.json", tu_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
    return path;
}

/* Opens text as tokenizer.json: want NULL expects success (and encodes a
 * short text), else the failure TOKVEC_E_TOKENIZER and the message
 * "<path>: want" exactly. */
static void expect(const char *text, const char *want)
{
    char err[768] = "", full[1400];
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_tokenizer *t = (tokvec_tokenizer *)1;
    int rc = tokvec_tokenizer_open(write_json(text), &o, &t);
    if (!want) {
        if (rc != 0)
            fail_msg("refused: %s\nfile: %s", err, text);
        tokvec_tok_state *st = tokvec_tok_state_new();
        tokvec_tok_ids ids = {0};
        assert_non_null(st);
        assert_int_equal(tokvec_tokenizer_encode(t, st, "a ab b", 6,
                                                 TOKVEC_TOK_SPECIAL, &ids),
                         0);
        assert_true(ids.n > 0);
        tokvec_tok_ids_free(&ids);
        tokvec_tok_state_free(st);
        tokvec_tokenizer_close(t);
        return;
    }
    snprintf(full, sizeof full, "%s: %s", path, want);
    if (rc != TOKVEC_E_TOKENIZER)
        fail_msg("got %d (%s), want TOKVEC_E_TOKENIZER; message: %s\n"
                 "file: %s",
                 rc, tokvec_errname(rc), err, text);
    assert_null(t);
    if (strcmp(err, full))
        fail_msg("message\n  '%s'\nwant\n  '%s'\nfile: %s", err, full, text);
}

typedef struct rule {
    const char *json; /* with %s where the varied part goes */
    const char *part;
    const char *want; /* NULL: accepted */
} rule;

static void run(const rule *r, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        char text[4096];
        snprintf(text, sizeof text, r[k].json, r[k].part);
        expect(text, r[k].want);
    }
}

#define N(a) (sizeof(a) / sizeof *(a))

/* --- WordPiece ---------------------------------------------------------- */

#define WP_VOCAB "{\"[UNK]\":0,\"a\":1,\"b\":2,\"##b\":3,\"ab\":4}"
/* A WordPiece model with the varied part after its fields. */
#define WP_MODEL                                                  \
    "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\"," \
    "\"vocab\":" WP_VOCAB "%s}}"
/* A WordPiece tokenizer with the varied part at the top level. */
#define WP_TOP                                                    \
    "{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\"," \
    "\"vocab\":" WP_VOCAB "},\"pre_tokenizer\":{\"type\":"        \
    "\"WhitespaceSplit\"}%s}"

static const char WP_NEEDS[] =
    "model: WordPiece needs unk_token, a string continuing_subword_prefix "
    "and a non-negative max_input_chars_per_word";

static void wordpiece_model_fields(void **s)
{
    (void)s;
    const rule r[] = {
        {WP_MODEL, ",\"max_input_chars_per_word\":-1", WP_NEEDS},
        {WP_MODEL, ",\"max_input_chars_per_word\":\"9\"", WP_NEEDS},
        {WP_MODEL, ",\"continuing_subword_prefix\":5", WP_NEEDS},
        {"{\"model\":{\"type\":\"WordPiece\",\"vocab\":" WP_VOCAB "%s}}", "",
         WP_NEEDS},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[X]\","
         "\"vocab\":" WP_VOCAB "%s}}",
         "", "model.unk_token \"[X]\" is not in the vocab"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
         "\"vocab\":%s}}",
         "[]", "model.vocab: not a non-empty object of token -> id"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
         "\"vocab\":%s}}",
         "{}", "model.vocab: not a non-empty object of token -> id"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
         "\"vocab\":{\"[UNK]\":0,%s}}}",
         "\"a\":\"1\"",
         "model.vocab: token \"a\": empty, or its id is not an integer in "
         "[0, 2^24)"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
         "\"vocab\":{\"[UNK]\":0,%s}}}",
         "\"\":1",
         "model.vocab: token \"\": empty, or its id is not an integer in "
         "[0, 2^24)"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
         "\"vocab\":{\"[UNK]\":0,%s}}}",
         "\"a\":16777216",
         "model.vocab: token \"a\": empty, or its id is not an integer in "
         "[0, 2^24)"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
         "\"vocab\":{\"[UNK]\":0,%s}}}",
         "\"a\":-1",
         "model.vocab: token \"a\": empty, or its id is not an integer in "
         "[0, 2^24)"},
        {"{\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
         "\"vocab\":{\"[UNK]\":0,%s}}}",
         "\"a\":1,\"b\":1", "model.vocab: id 1 is given twice"},
        {WP_MODEL, ",\"max_input_chars_per_word\":0", NULL},
        {WP_MODEL, ",\"continuing_subword_prefix\":\"@@\"", NULL},
    };
    run(r, N(r));
}

static void added_tokens_fields(void **s)
{
    (void)s;
    const rule r[] = {
        {WP_TOP, ",\"added_tokens\":[{\"content\":\"[X]\"}]",
         "added_tokens[0]: no content or id"},
        {WP_TOP, ",\"added_tokens\":[{\"id\":7,\"content\":5}]",
         "added_tokens[0]: no content or id"},
        {WP_TOP,
         ",\"added_tokens\":[{\"id\":7,\"content\":\"[X]\"},{\"id\":"
         "\"8\",\"content\":\"[Y]\"}]",
         "added_tokens[1]: no content or id"},
        {WP_TOP, ",\"added_tokens\":[{\"id\":1,\"content\":\"[X]\"}]",
         "added_tokens[0]: id 1 is another token"},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Strip\",\"strip_left\":true,"
         "\"strip_right\":true},\"added_tokens\":[{\"id\":7,"
         "\"content\":\" \",\"normalized\":true}]",
         "added_tokens: \" \" (id 7) is normalized to nothing"},
        {WP_TOP, ",\"added_tokens\":[{\"id\":-1,\"content\":\"[X]\"}]",
         "added_tokens[0]: bad id or content"},
        {WP_TOP, ",\"added_tokens\":[{\"id\":16777216,\"content\":\"[X]\"}]",
         "added_tokens[0]: bad id or content"},
        {WP_TOP, ",\"added_tokens\":[{\"id\":7,\"content\":\"\"}]",
         "added_tokens[0]: bad id or content"},
        {WP_TOP, ",\"added_tokens\":[{\"id\":1,\"content\":\"b\"}]",
         "added_tokens[0]: id 1 is another token"},
        {WP_TOP, ",\"added_tokens\":[{\"id\":1,\"content\":\"aa\"}]",
         "added_tokens[0]: id 1 is another token"},
        /* accepted: a model token made special, normalized specials, a
         * non-special added token */
        {WP_TOP, ",\"added_tokens\":[{\"id\":1,\"content\":\"a\"}]", NULL},
        {WP_TOP,
         ",\"added_tokens\":[{\"id\":7,\"content\":\"[X]\","
         "\"normalized\":true,\"special\":true},{\"id\":8,"
         "\"content\":\"zz\",\"special\":false}]",
         NULL},
    };
    run(r, N(r));
}

/* --- pipeline stages (on the WordPiece model) --------------------------- */

static void normalizer_fields(void **s)
{
    (void)s;
    const char *rep = "normalizer: Replace: the pattern is not a String or a "
                      "Regex of one character or \\s repeated (+, {n}, {n,}, "
                      "{n,m})";
    const rule r[] = {
        {WP_TOP, ",\"normalizer\":{\"type\":7}",
         "normalizer: a normalizer without a type"},
        {WP_TOP, ",\"normalizer\":{\"type\":\"Sequence\"}",
         "normalizer: Sequence without normalizers"},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":"
         "[{\"type\":\"NFC\"},{\"type\":\"Foo\"}]}",
         "normalizer.normalizers[1]: normalizer Foo is not supported"},
        {WP_TOP, ",\"normalizer\":{\"type\":\"Prepend\"}",
         "normalizer: Prepend without a string"},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Replace\",\"pattern\":"
         "{\"String\":\"a\"}}",
         rep},
        {WP_TOP, ",\"normalizer\":{\"type\":\"Replace\",\"content\":\"x\"}",
         rep},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Replace\",\"pattern\":"
         "{\"Regex\":\"ab\"},\"content\":\"x\"}",
         rep},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Replace\",\"pattern\":"
         "{\"Regex\":\"a{0}\"},\"content\":\"x\"}",
         rep},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Replace\",\"pattern\":"
         "{\"Regex\":\"a{3,2}\"},\"content\":\"x\"}",
         rep},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Replace\",\"pattern\":"
         "{\"Regex\":\"a{2\"},\"content\":\"x\"}",
         rep},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Replace\",\"pattern\":"
         "{\"Regex\":\"a{2,x}\"},\"content\":\"x\"}",
         rep},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Replace\",\"pattern\":"
         "{\"Regex\":\"\\\\q\"},\"content\":\"x\"}",
         rep},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Precompiled\","
         "\"precompiled_charsmap\":5}",
         "normalizer: Precompiled.precompiled_charsmap: not a string"},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Precompiled\","
         "\"precompiled_charsmap\":\"AB*=\"}",
         "normalizer: Precompiled.precompiled_charsmap: not base64"},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Precompiled\","
         "\"precompiled_charsmap\":\"AAAA\"}",
         "normalizer: Precompiled.precompiled_charsmap: cannot parse the "
         "charsmap"},
        /* accepted: each kind, and regexes of each repetition */
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":["
         "{\"type\":\"NFD\"},{\"type\":\"NFKD\"},{\"type\":\"NFC\"},"
         "{\"type\":\"NFKC\"},{\"type\":\"Lowercase\"},{\"type\":"
         "\"StripAccents\"},{\"type\":\"Strip\",\"strip_left\":true,"
         "\"strip_right\":true},{\"type\":\"Prepend\",\"prepend\":"
         "\"_\"},{\"type\":\"BertNormalizer\",\"strip_accents\":"
         "true,\"lowercase\":false,\"clean_text\":false,"
         "\"handle_chinese_chars\":false}]}",
         NULL},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"BertNormalizer\","
         "\"strip_accents\":null}",
         NULL},
        {WP_TOP,
         ",\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":["
         "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+\"},"
         "\"content\":\" \"},{\"type\":\"Replace\",\"pattern\":"
         "{\"Regex\":\"a{2}\"},\"content\":\"b\"},{\"type\":"
         "\"Replace\",\"pattern\":{\"Regex\":\"\\\\.{2,}\"},"
         "\"content\":\".\"},{\"type\":\"Replace\",\"pattern\":"
         "{\"Regex\":\"\\u00e9{1,3}\"},\"content\":\"e\"},{\"type\":"
         "\"Replace\",\"pattern\":{\"String\":\"x\"},\"content\":"
         "\"\"}]}",
         NULL},
    };
    run(r, N(r));
}

static void pre_tokenizer_fields(void **s)
{
    (void)s;
    const rule r[] = {
        {WP_MODEL, "},\"pre_tokenizer\":{\"type\":[]",
         "pre_tokenizer: a pre-tokenizer without a type"},
        {WP_MODEL, "},\"pre_tokenizer\":{\"type\":\"Sequence\"",
         "pre_tokenizer: Sequence without pretokenizers"},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Sequence\","
         "\"pretokenizers\":[{\"type\":\"Digits\"},{\"type\":"
         "\"ByteLevel\"}]",
         "pre_tokenizer.pretokenizers[1]: pre-tokenizer ByteLevel is not "
         "supported with this model"},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Punctuation\","
         "\"behavior\":\"Split\"",
         "pre_tokenizer: Punctuation: unknown behavior"},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Punctuation\","
         "\"behavior\":3",
         "pre_tokenizer: Punctuation: unknown behavior"},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Sequence\","
         "\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},"
         "{\"type\":\"Metaspace\",\"replacement\":\"_\"}]",
         "pre_tokenizer.pretokenizers[1]: Metaspace is supported only as "
         "the first pre-tokenizer"},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Metaspace\","
         "\"replacement\":\"ab\"",
         "pre_tokenizer: Metaspace.replacement: not one character"},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Metaspace\","
         "\"replacement\":\"_\",\"prepend_scheme\":\"sometimes\"",
         "pre_tokenizer: Metaspace.prepend_scheme: not \"always\", "
         "\"first\" or \"never\""},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Metaspace\","
         "\"replacement\":\"_\",\"add_prefix_space\":1",
         "pre_tokenizer: Metaspace.add_prefix_space: not a boolean"},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Metaspace\","
         "\"replacement\":\"_\",\"add_prefix_space\":false",
         "pre_tokenizer: Metaspace: add_prefix_space does not match "
         "declared prepend_scheme"},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Metaspace\","
         "\"replacement\":\"_\",\"split\":\"yes\"",
         "pre_tokenizer: Metaspace.split: not a boolean"},
        /* accepted: every behavior, Digits, Metaspace's schemes */
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Sequence\","
         "\"pretokenizers\":[{\"type\":\"Punctuation\","
         "\"behavior\":\"Removed\"},{\"type\":\"Punctuation\","
         "\"behavior\":\"MergedWithPrevious\"},{\"type\":"
         "\"Punctuation\",\"behavior\":\"MergedWithNext\"},"
         "{\"type\":\"Punctuation\",\"behavior\":\"Contiguous\"},"
         "{\"type\":\"Punctuation\"},{\"type\":\"Digits\","
         "\"individual_digits\":true},{\"type\":"
         "\"BertPreTokenizer\"}]",
         NULL},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Metaspace\","
         "\"replacement\":\"_\",\"prepend_scheme\":\"first\","
         "\"split\":false",
         NULL},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Metaspace\","
         "\"replacement\":\"_\",\"prepend_scheme\":\"never\","
         "\"add_prefix_space\":false,\"split\":null",
         NULL},
        {WP_MODEL,
         "},\"pre_tokenizer\":{\"type\":\"Metaspace\","
         "\"replacement\":\"_\",\"prepend_scheme\":null,"
         "\"add_prefix_space\":null",
         NULL},
    };
    run(r, N(r));
}

static void post_processor_fields(void **s)
{
    (void)s;
    char buf[N(WP_TOP) + 64];
    snprintf(buf, sizeof buf, WP_TOP, ",\"post_processor\":%s");
    const rule r[] = {
        {buf, "{\"type\":null}",
         "post_processor: a post-processor without a type"},
        {buf, "{\"type\":\"Sequence\"}",
         "post_processor: Sequence without processors"},
        {buf,
         "{\"type\":\"Sequence\",\"processors\":[{\"type\":"
         "\"ByteLevel\"},{\"type\":\"Foo\"}]}",
         "post_processor.processors[1]: post-processor Foo is not "
         "supported"},
        {buf, "{\"type\":\"TemplateProcessing\",\"single\":{}}",
         "post_processor: TemplateProcessing: \"single\" is not a list"},
        {buf,
         "{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":"
         "{\"id\":\"A\"}},{\"Sequence\":{\"id\":\"A\"}}]}",
         "post_processor: TemplateProcessing: \"single\" names more than "
         "one sequence"},
        {buf, "{\"type\":\"TemplateProcessing\",\"single\":[]}",
         "post_processor: TemplateProcessing: \"single\" has no sequence"},
        {buf,
         "{\"type\":\"TemplateProcessing\",\"single\":[{"
         "\"SpecialToken\":{\"id\":\"[CLS]\"}},{\"Sequence\":{}}],"
         "\"special_tokens\":{}}",
         "post_processor: TemplateProcessing: a special token of \"single\" "
         "is not in special_tokens"},
        {buf,
         "{\"type\":\"TemplateProcessing\",\"single\":[{"
         "\"SpecialToken\":{}},{\"Sequence\":{}}]}",
         "post_processor: TemplateProcessing: a special token of \"single\" "
         "is not in special_tokens"},
        {buf,
         "{\"type\":\"TemplateProcessing\",\"single\":[{"
         "\"SpecialToken\":{\"id\":\"[CLS]\"}},{\"Sequence\":{}}],"
         "\"special_tokens\":{\"[CLS]\":{\"ids\":[16777216]}}}",
         "post_processor: TemplateProcessing: an id is not in [0, 2^24)"},
        {buf,
         "{\"type\":\"TemplateProcessing\",\"single\":[{"
         "\"SpecialToken\":{\"id\":\"[CLS]\"}},{\"Sequence\":{}}],"
         "\"special_tokens\":{\"[CLS]\":{\"ids\":[\"0\"]}}}",
         "post_processor: TemplateProcessing: an id is not in [0, 2^24)"},
        {buf,
         "{\"type\":\"TemplateProcessing\",\"single\":[{"
         "\"SpecialToken\":{\"id\":\"[CLS]\"}},{\"Sequence\":{}}],"
         "\"special_tokens\":{\"[CLS]\":{\"ids\":[-3]}}}",
         "post_processor: TemplateProcessing: an id is not in [0, 2^24)"},
        {buf,
         "{\"type\":\"BertProcessing\",\"cls\":[\"[UNK]\",0],"
         "\"sep\":[\"[UNK]\"]}",
         "post_processor: cls and sep must be [token, id] with ids in "
         "[0, 2^24)"},
        {buf,
         "{\"type\":\"RobertaProcessing\",\"cls\":\"[UNK]\","
         "\"sep\":[\"[UNK]\",0]}",
         "post_processor: cls and sep must be [token, id] with ids in "
         "[0, 2^24)"},
        {buf,
         "{\"type\":\"BertProcessing\",\"cls\":[\"[UNK]\",0],"
         "\"sep\":[\"[Q]\",99]}",
         "post_processor: id 99 is not a token"},
        {buf,
         "{\"type\":\"TemplateProcessing\",\"single\":[{"
         "\"Sequence\":{}},{\"SpecialToken\":{\"id\":\"[E]\"}}],"
         "\"special_tokens\":{\"[E]\":{\"ids\":[77]}}}",
         "post_processor: id 77 is not a token"},
        /* accepted */
        {buf,
         "{\"type\":\"Sequence\",\"processors\":[{\"type\":"
         "\"ByteLevel\",\"trim_offsets\":false},{\"type\":"
         "\"RobertaProcessing\",\"cls\":[\"a\",1],\"sep\":[\"b\",2]}]}",
         NULL},
        {buf,
         "{\"type\":\"TemplateProcessing\",\"single\":[{"
         "\"SpecialToken\":{\"id\":\"[S]\"}},{\"Sequence\":{}},"
         "{\"SpecialToken\":{\"id\":\"[S]\"}}],\"special_tokens\":{"
         "\"[S]\":{\"ids\":[0,4]}}}",
         NULL},
        {buf, "null", NULL},
    };
    run(r, N(r));
}

static void decoder_fields(void **s)
{
    (void)s;
    char buf[N(WP_TOP) + 64];
    snprintf(buf, sizeof buf, WP_TOP, ",\"decoder\":%s");
    const char *strip = "decoder: Strip needs one character and counts "
                        "start, stop";
    const char *rep = "decoder: Replace: only a non-empty String pattern is "
                      "supported (a Regex pattern is not)";
    const rule r[] = {
        {buf, "{}", "decoder: a decoder without a type"},
        {buf, "{\"type\":\"Sequence\",\"decoders\":{}}",
         "decoder: Sequence without decoders"},
        {buf,
         "{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Fuse\"},"
         "{\"type\":\"CTC\"}]}",
         "decoder.decoders[1]: decoder CTC is not supported with this model"},
        {buf, "{\"type\":\"Metaspace\",\"replacement\":\"\"}",
         "decoder: Metaspace.replacement: not one character"},
        {buf, "{\"type\":\"Strip\",\"start\":1,\"stop\":0}", strip},
        {buf,
         "{\"type\":\"Strip\",\"content\":\"ab\",\"start\":1,"
         "\"stop\":0}",
         strip},
        {buf,
         "{\"type\":\"Strip\",\"content\":\" \",\"start\":\"1\","
         "\"stop\":0}",
         strip},
        {buf, "{\"type\":\"Strip\",\"content\":\" \",\"start\":1}", strip},
        {buf,
         "{\"type\":\"Strip\",\"content\":\" \",\"start\":-1,"
         "\"stop\":0}",
         strip},
        {buf,
         "{\"type\":\"Strip\",\"content\":\" \",\"start\":0,"
         "\"stop\":-2}",
         strip},
        {buf,
         "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" \"},"
         "\"content\":\"_\"}",
         rep},
        {buf,
         "{\"type\":\"Replace\",\"pattern\":{\"String\":\"\"},"
         "\"content\":\"_\"}",
         rep},
        {buf, "{\"type\":\"Replace\",\"pattern\":{\"String\":\"_\"}}", rep},
        /* accepted */
        {buf,
         "{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"WordPiece\","
         "\"prefix\":null,\"cleanup\":false},{\"type\":\"WordPiece\","
         "\"prefix\":\"@@\"},{\"type\":\"WordPiece\"},{\"type\":"
         "\"ByteFallback\"},{\"type\":\"Metaspace\",\"replacement\":"
         "\"_\"},{\"type\":\"Strip\",\"content\":\" \",\"start\":1,"
         "\"stop\":1},{\"type\":\"Replace\",\"pattern\":{\"String\":"
         "\"_\"},\"content\":\" \"},{\"type\":\"Fuse\"}]}",
         NULL},
    };
    run(r, N(r));
}

/* --- Unigram ------------------------------------------------------------ */

#define UNI                                                             \
    "{\"model\":{\"type\":\"Unigram\",%s},\"pre_tokenizer\":{\"type\":" \
    "\"WhitespaceSplit\"}}"

static void unigram_model_fields(void **s)
{
    (void)s;
    const rule r[] = {
        {UNI, "\"unk_id\":0", "model.vocab: missing or not an array"},
        {UNI, "\"unk_id\":0,\"vocab\":{\"a\":1}",
         "model.vocab: missing or not an array"},
        {UNI, "\"unk_id\":\"0\",\"vocab\":[[\"<unk>\",0]]",
         "model.unk_id: not null or an index"},
        {UNI, "\"unk_id\":-1,\"vocab\":[[\"<unk>\",0]]",
         "model.unk_id: not null or an index"},
        {UNI, "\"unk_id\":0,\"byte_fallback\":0,\"vocab\":[[\"<unk>\",0]]",
         "model.byte_fallback: not a boolean"},
        {UNI, "\"unk_id\":0,\"vocab\":[]",
         "model.vocab: empty but unk_id is set"},
        {UNI, "\"unk_id\":2,\"vocab\":[[\"<unk>\",0],[\"a\",-1]]",
         "model.unk_id: 2 pieces, unk_id past them"},
        {UNI, "\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"a\"]]",
         "model.vocab[1]: not [piece, score]"},
        {UNI, "\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[1,-1]]",
         "model.vocab[1]: not [piece, score]"},
        {UNI, "\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"a\",\"-1\"]]",
         "model.vocab[1]: not [piece, score]"},
        {UNI, "\"unk_id\":0,\"vocab\":[[\"<unk>\",0],\"a\"]",
         "model.vocab[1]: not [piece, score]"},
        {UNI, "\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"\",-1]]",
         "model.vocab[1]: an empty piece"},
        {UNI, "\"unk_id\":null,\"vocab\":[[\"<unk>\",0],[\"a\",-1]]",
         "model.unk_id: null is not supported (HF fails the whole encode on "
         "a character no piece spells)"},
        {UNI, "\"vocab\":[[\"<unk>\",0],[\"a\",-1]]",
         "model.unk_id: null is not supported (HF fails the whole encode on "
         "a character no piece spells)"},
        {UNI, "\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"a\",-1],[\"a\",-2]]",
         "id 2 has the text of an earlier token"},
        /* accepted: integer and real scores of every size serde reads */
        {UNI,
         "\"unk_id\":0,\"byte_fallback\":false,\"vocab\":[[\"<unk>\",0],"
         "[\"a\",-1.5],[\"b\",-2],[\"ab\",-0.25],[\"ba\",-1e-320],"
         "[\"aa\",-1.7976931348623157e308],[\"bb\",-123456.789e-3],"
         "[\"aab\",0.0],[\"abb\",-4.9e-324],[\"bab\",-1.5e300]]",
         NULL},
    };
    run(r, N(r));
}

/* --- byte-level BPE (tok_load.c) ---------------------------------------- */

/* The 256 bytes of GPT-2's alphabet as JSON object members, ids in
 * tiktoken's byte order, into o (no braces); its length. */
static size_t alphabet_members(char *o)
{
    size_t n = 0;
    int id = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0, extra = 0; b < 256; b++) {
            int pr = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) ||
                     b >= 174;
            unsigned cp = pr ? (unsigned)b : 256u + (unsigned)extra;
            extra += !pr;
            if (pr != !pass)
                continue;
            n += (size_t)sprintf(o + n, "%s\"", n ? "," : "");
            if (cp == '"' || cp == '\\')
                n += (size_t)sprintf(o + n, "\\%c", (char)cp);
            else if (cp < 0x80)
                o[n++] = (char)cp;
            else
                n += (size_t)sprintf(o + n, "\\u%04x", cp);
            n += (size_t)sprintf(o + n, "\":%d", id++);
        }
    o[n] = '\0';
    return n;
}

#define BL "{\"type\":\"ByteLevel\",\"add_prefix_space\":false}"

/* A byte-level BPE tokenizer.json: the alphabet, "ab" (256), "abc" (257);
 * fmt has %s for the vocabulary object's members then for the varied
 * part. */
static void expect_bpe(const char *fmt, const char *part, const char *want)
{
    static char members[8192], vocab[8400], text[16384];
    alphabet_members(members);
    snprintf(vocab, sizeof vocab, "%s,\"ab\":256,\"abc\":257", members);
    snprintf(text, sizeof text, fmt, vocab, part);
    expect(text, want);
}

#define BPE_MERGES                                                \
    "{\"model\":{\"type\":\"BPE\",\"vocab\":{%s},\"merges\":%s}," \
    "\"pre_tokenizer\":" BL "}"
#define BPE_PRE                                                        \
    "{\"model\":{\"type\":\"BPE\",\"vocab\":{%s},\"merges\":[\"a b\"," \
    "\"ab c\"]},\"pre_tokenizer\":%s}"
#define BPE_MODEL                                                      \
    "{\"model\":{\"type\":\"BPE\",\"vocab\":{%s},\"merges\":[\"a b\"," \
    "\"ab c\"]%s},\"pre_tokenizer\":" BL "}"
#define BPE_TOP                                                        \
    "{\"model\":{\"type\":\"BPE\",\"vocab\":{%s},\"merges\":[\"a b\"," \
    "\"ab c\"]},\"pre_tokenizer\":" BL "%s}"

static const char SPLIT_ONLY[] =
    "Split pre-tokenizer: only the gpt2, cl100k_base, o200k_base and Qwen 2 "
    "regexes, Isolated, are supported";
static const char NOT_BL[] = "pre_tokenizer is not ByteLevel "
                             "(add_prefix_space false), alone or after one "
                             "Split";
static const char NOT_PLAIN[] = "model is not a plain BPE (no dropout, "
                                "byte_fallback or affixes)";

/* GPT-2's regex, as a JSON string's text. */
#define GPT2_RE                                         \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\\\p{L}+| ?\\\\p{N}+| " \
    "?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+(?!\\\\S)|\\\\s+"
#define SPLIT(extra)                                                 \
    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\"," \
    "\"pattern\":{\"Regex\":\"" GPT2_RE "\"}" extra "}," BL "]}"

static void byte_level_bpe_fields(void **s)
{
    (void)s;
    static const struct {
        const char *fmt, *part, *want;
    } r[] = {
        {BPE_MERGES, "{}", "model.merges is not an array"},
        {BPE_MERGES, "[5]", "merge 1: not \"a b\" or [\"a\", \"b\"]"},
        {BPE_MERGES, "[\"a b c\"]", "merge 1: not \"a b\" or [\"a\", \"b\"]"},
        {BPE_MERGES, "[\"ab\"]", "merge 1: not \"a b\" or [\"a\", \"b\"]"},
        {BPE_MERGES, "[\"a b\",[\"ab\"]]",
         "merge 2: not \"a b\" or [\"a\", \"b\"]"},
        {BPE_MERGES, "[[\"a\",2]]", "merge 1: not \"a b\" or [\"a\", \"b\"]"},
        {BPE_MERGES, "[[\"\",\"b\"]]", "merge 1: empty token"},
        {BPE_MERGES, "[[\"a\",\"\"]]", "merge 1: empty token"},
        {BPE_MERGES, "[\"a \\u01ff\"]",
         "merge 1: \"a \xc7\xbf\" is not in GPT-2's byte alphabet"},
        {BPE_MERGES, "[\"\\u0800 a\"]",
         "merge 1: \"\xe0\xa0\x80 a\" is not in GPT-2's byte alphabet"},
        {BPE_PRE, "{\"type\":\"Sequence\",\"pretokenizers\":[" BL "]}",
         NOT_BL},
        {BPE_PRE,
         "{\"type\":\"Sequence\",\"pretokenizers\":[" BL "," BL "," BL "]}",
         NOT_BL},
        {BPE_PRE,
         "{\"type\":\"Sequence\",\"pretokenizers\":[" BL
         ",{\"type\":\"Digits\"}]}",
         NOT_BL},
        {BPE_PRE, "{\"type\":\"ByteLevel\",\"use_regex\":false}",
         "ByteLevel without its regex and without a Split is not supported"},
        {BPE_PRE, SPLIT(",\"behavior\":\"Isolated\",\"invert\":true"),
         SPLIT_ONLY},
        {BPE_PRE, SPLIT(",\"behavior\":\"Removed\""), SPLIT_ONLY},
        {BPE_PRE, SPLIT(""), SPLIT_ONLY},
        {BPE_PRE,
         "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":"
         "\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":"
         "\"Isolated\"}," BL "]}",
         SPLIT_ONLY},
        {BPE_PRE,
         "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":"
         "\"Digits\",\"pattern\":{\"Regex\":\"" GPT2_RE "\"},"
         "\"behavior\":\"Isolated\"}," BL "]}",
         SPLIT_ONLY},
        {BPE_PRE,
         "{\"type\":\"Sequence\",\"pretokenizers\":[{\"pattern\":"
         "{\"Regex\":\"" GPT2_RE "\"},\"behavior\":\"Isolated\"},"
         "" BL "]}",
         SPLIT_ONLY},
        {BPE_PRE,
         "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":"
         "\"Split\",\"pattern\":{\"Regex\":\"" GPT2_RE "\"},"
         "\"behavior\":\"Isolated\"},{\"type\":\"ByteLevel\","
         "\"use_regex\":true}]}",
         SPLIT_ONLY},
        {BPE_MODEL, ",\"dropout\":null,\"continuing_subword_prefix\":\"##\"",
         NOT_PLAIN},
        {BPE_MODEL, ",\"end_of_word_suffix\":\"</w>\"", NOT_PLAIN},
        {BPE_MODEL, ",\"end_of_word_suffix\":7", NOT_PLAIN},
        {BPE_TOP, ",\"added_tokens\":[{\"id\":\"300\",\"content\":\"<s>\"}]",
         "added token \"<s>\": bad id"},
        {BPE_TOP, ",\"added_tokens\":[{\"id\":16777216,\"content\":\"<s>\"}]",
         "added token \"<s>\": bad id"},
        {BPE_TOP, ",\"added_tokens\":[{\"id\":64,\"content\":\"<x>\"}]",
         "added token \"<x>\": id 64 is another token"},
        /* an added token "a": the vocabulary's "a" is then special, so
         * not a merge's part */
        {BPE_TOP, ",\"added_tokens\":[{\"id\":300,\"content\":\"a\"}]",
         "merge 1: the left token is not in the vocabulary"},
        {BPE_TOP, ",\"added_tokens\":[{\"id\":256,\"content\":\"ab\"}]",
         "merge 1: the merged token is not in the vocabulary"},
        /* accepted: nulls and empty affixes, [a, b] merges, a nameless added
         * token, ignore_merges */
        {BPE_MODEL,
         ",\"dropout\":null,\"continuing_subword_prefix\":null,"
         "\"end_of_word_suffix\":\"\",\"byte_fallback\":false,"
         "\"ignore_merges\":true",
         NULL},
        {BPE_MERGES, "[[\"a\",\"b\"],[\"ab\",\"c\"]]", NULL},
        {BPE_MODEL, ",\"continuing_subword_prefix\":\"\"", NULL},
        /* no model type: BPE, byte-level with its pre-tokenizer */
        {"{\"model\":{\"vocab\":{%s},\"merges\":[\"a b\"%s]},"
         "\"pre_tokenizer\":" BL "}",
         "", NULL},
        {BPE_TOP,
         ",\"added_tokens\":[{\"id\":300,\"content\":\"\"},{\"id\":"
         "301,\"content\":\"<s>\"},{\"content\":5}],\"normalizer\":"
         "null",
         NULL},
        {BPE_PRE, SPLIT(",\"behavior\":\"Isolated\",\"invert\":false"), NULL},
    };
    for (size_t k = 0; k < N(r); k++)
        expect_bpe(r[k].fmt, r[k].part, r[k].want);
    /* a merge whose left token is 1100 bytes: past what a merge holds */
    char *m = malloc(1200);
    assert_non_null(m);
    m[0] = '[';
    m[1] = '"';
    memset(m + 2, 'a', 1100);
    strcpy(m + 1102, " b\"]");
    expect_bpe(BPE_MERGES, m, "merge 1: not \"a b\" or [\"a\", \"b\"]");
    free(m);
}

/* The file itself: not an object, a model of no object, a directory. */
static void file_level_rules(void **s)
{
    (void)s;
    expect(
        "{\"model\":{\"type\":\"WordLevel\",\"vocab\":{}},\"pre_tokenizer\":"
        "" BL "}",
        "model: type WordLevel is not supported (BPE, WordPiece, Unigram)");
    expect("{\"model\":{\"vocab\":{\"a\":0}},\"post_processor\":{\"type\":"
           "\"Foo\"}}",
           "post_processor: post-processor Foo is not supported");
    expect("[]", "vocabulary is not a non-empty object of token -> id");
    expect("{}", "vocabulary is not a non-empty object of token -> id");
    /* a directory holding only vocab.json: the GPT-2 pair's file name */
    char dir[700], f[760];
    snprintf(dir, sizeof dir, "%s/d", tu_dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(f, sizeof f, "%s/vocab.json", dir);
    FILE *fp = fopen(f, "wb");
    assert_non_null(fp);
    fputs("{\"a\":\"x\"}", fp);
    fclose(fp);
    char err[900] = "", full[900];
    tokvec_tokenizer_opts o = {.errbuf = err, .errlen = sizeof err};
    tokvec_tokenizer *t = (tokvec_tokenizer *)1;
    assert_int_equal(tokvec_tokenizer_open(dir, &o, &t), TOKVEC_E_TOKENIZER);
    assert_null(t);
    snprintf(full, sizeof full,
             "%s: token \"a\": id is not an integer in [0, 2^24)", f);
    assert_string_equal(err, full);
    /* no error buffer: the same refusal, silently */
    t = (tokvec_tokenizer *)1;
    tokvec_tokenizer_opts quiet = {0};
    assert_int_equal(tokvec_tokenizer_open(dir, &quiet, &t),
                     TOKVEC_E_TOKENIZER);
    assert_null(t);
    unlink(f);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wordpiece_model_fields),
        cmocka_unit_test(added_tokens_fields),
        cmocka_unit_test(normalizer_fields),
        cmocka_unit_test(pre_tokenizer_fields),
        cmocka_unit_test(post_processor_fields),
        cmocka_unit_test(decoder_fields),
        cmocka_unit_test(unigram_model_fields),
        cmocka_unit_test(byte_level_bpe_fields),
        cmocka_unit_test(file_level_rules),
    };
    return cmocka_run_group_tests(tests, tu_setup_dir, tu_teardown_dir);
}
