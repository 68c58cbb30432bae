/* test_encode.c -- server/routes/encode.c: every encoder stays inside the size
 * its bound function promised (checked with guard bytes after an exactly-sized
 * buffer, and by ASan in the sanitizer build), base64 matches RFC 4648,
 * JSON output parses and carries the shortest floats, Accept negotiation
 * and ?dtype= follow the contract, .npy headers align the data to 64
 * bytes, error bodies are valid JSON whatever the message holds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"

enum { GUARD = 64 };

/* A buffer of exactly n bytes followed by GUARD bytes of 0xA5. */
static char *guarded(size_t n)
{
    char *b = malloc(n + GUARD);
    assert_non_null(b);
    memset(b, 0xA5, n + GUARD);
    return b;
}

static void assert_guard_intact(const char *b, size_t n)
{
    for (size_t i = 0; i < GUARD; i++)
        assert_int_equal((unsigned char)b[n + i], 0xA5);
}

static void base64_matches_rfc4648_test_vectors(void **state)
{
    (void)state;
    static const char *in[] = {"",     "f",     "fo",    "foo",
                               "foob", "fooba", "foobar"};
    static const char *out[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        char buf[16];
        size_t n = tv_base64(buf, in[i], strlen(in[i]));
        assert_int_equal(n, strlen(out[i]));
        assert_memory_equal(buf, out[i], n);
    }
}

/* Encodes x as a (B, S, D) /embed JSON answer into a guarded buffer of
 * exactly tv_embed_json_bound bytes; checks it stayed inside and parses;
 * returns the parsed answer (json_decref it). */
static json_t *encode_within_bound(const float *x, int64_t B, int64_t S,
                                   int64_t D, int base64)
{
    size_t bound = tv_embed_json_bound(B, S, D, base64);
    char *buf = guarded(bound);
    size_t n = tv_embed_json(buf, x, B, S, D, base64);
    assert_true(n <= bound);
    assert_guard_intact(buf, bound);
    json_error_t je;
    json_t *j = json_loadb(buf, n, 0, &je);
    assert_non_null(j);
    free(buf);
    return j;
}

/* Regression: the base64 bound once divided by 3 twice, so any base64
 * response above ~100 floats overran a buffer of exactly that size
 * (found by fuzz_request; the server over-reserved and was not hit). */
static void base64_embed_json_fits_its_bound_for_every_small_shape(void **s)
{
    (void)s;
    float x[3 * 7 * 33];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = (float)i * -0.37f;
    for (int64_t B = 1; B <= 3; B++)
        for (int64_t S = 1; S <= 7; S++)
            for (int64_t D = 1; D <= 33; D++) {
                json_t *j = encode_within_bound(x, B, S, D, 1);
                const char *b64 = json_string_value(
                    json_object_get(j, "embeddings"));
                assert_non_null(b64);
                assert_int_equal(strlen(b64),
                                 ((size_t)(B * S * D) * 4 + 2) / 3 * 4);
                json_decref(j);
            }
}

static void base64_embed_json_fits_its_bound_for_a_large_batch(void **s)
{
    (void)s;
    int64_t B = 4, S = 1024, D = 256; /* the contract's 4x1024 workload */
    size_t nf = (size_t)(B * S * D);
    float *x = calloc(nf, sizeof *x);
    assert_non_null(x);
    assert_true(tv_embed_json_bound(B, S, D, 1) >= nf * 4 / 3 * 4 / 4);
    json_decref(encode_within_bound(x, B, S, D, 1));
    free(x);
}

/* The longest float32 decimals (negative, 9 digits, two-digit negative
 * exponent) and non-finite values in every position. */
static void float_embed_json_fits_its_bound_with_the_longest_floats(void **s)
{
    (void)s;
    static const float worst[] = {-1.17549435e-38f, -3.40282347e+38f,
                                  -1.23456791e-10f, -1.4e-45f};
    float x[2 * 3 * 17];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = worst[i % 4];
    x[5] = NAN;
    x[6] = -INFINITY;
    for (int64_t B = 1; B <= 2; B++)
        for (int64_t S = 1; S <= 3; S++)
            for (int64_t D = 1; D <= 17; D++)
                json_decref(encode_within_bound(x, B, S, D, 0));
}

static void embed_json_prints_shape_and_shortest_floats(void **s)
{
    (void)s;
    const float x[] = {0.3373702f, -0.401488f, 1.0f, 1e-45f, NAN, 2.5f};
    size_t bound = tv_embed_json_bound(1, 2, 3, 0);
    char *buf = guarded(bound);
    size_t n = tv_embed_json(buf, x, 1, 2, 3, 0);
    const char *want = "{\"shape\":[1,2,3],\"dtype\":\"float32\","
                       "\"embeddings\":[[[0.3373702,-0.401488,1.0],"
                       "[1e-45,null,2.5]]]}";
    assert_int_equal(n, strlen(want));
    assert_memory_equal(buf, want, n);
    free(buf);
}

static void embed_json_bound_is_zero_when_the_size_overflows(void **s)
{
    (void)s;
    assert_int_equal(tv_embed_json_bound(INT64_MAX, 2, 2, 0), 0);
    assert_int_equal(tv_embed_json_bound(1 << 30, 1 << 30, 1 << 20, 1), 0);
    assert_int_equal(tv_embed_json_bound(0, 1, 1, 0), 0);
    assert_int_equal(tv_embed_json_bound(1, 1, -1, 0), 0);
}

static void token_json_fits_its_bound(void **s)
{
    (void)s;
    float x[300];
    for (int i = 0; i < 300; i++)
        x[i] = -1.17549435e-38f;
    size_t bound = tv_token_json_bound(300);
    char *buf = guarded(bound);
    size_t n = tv_token_json(buf, INT64_MAX, x, 300);
    assert_true(n <= bound);
    assert_guard_intact(buf, bound);
    free(buf);
}

/* A negotiation's result: rc, then the format it chose or the status of
 * its error. */
static void assert_negotiated(int rc, const tv_format *f, const tv_error *e,
                              int want_rc, tv_out_kind kind, tokvec_dtype dt,
                              int status)
{
    assert_int_equal(rc, want_rc);
    if (rc == 0) {
        assert_int_equal(f->kind, kind);
        assert_int_equal(f->dtype, dt);
    } else {
        assert_int_equal(e->status, status);
    }
}

static void negotiate_follows_rfc9110_q_then_specificity(void **s)
{
    (void)s;
    static const struct {
        const char *accept, *dtype;
        int rc;
        tv_out_kind kind;
        tokvec_dtype dt;
        int status;
    } cases[] = {
        {NULL, NULL, 0, TV_OUT_JSON, TOKVEC_F32, 0},
        {"", NULL, 0, TV_OUT_JSON, TOKVEC_F32, 0},
        {"*/*", NULL, 0, TV_OUT_JSON, TOKVEC_F32, 0},
        {"application/octet-stream", NULL, 0, TV_OUT_RAW, TOKVEC_F32, 0},
        {"Application/X-NPY", "float16", 0, TV_OUT_NPY, TOKVEC_F16, 0},
        {"text/html, application/octet-stream;q=0.9", "bfloat16", 0,
         TV_OUT_RAW, TOKVEC_BF16, 0},
        {"application/octet-stream;q=0, application/json", NULL, 0,
         TV_OUT_JSON, TOKVEC_F32, 0},
        {"text/html", NULL, -1, 0, 0, 406},
        {"application/json;q=0", NULL, -1, 0, 0, 406},
        /* RFC 9110: the highest q wins, whatever the order */
        {"application/x-npy;q=0.1, application/json", NULL, 0, TV_OUT_JSON,
         TOKVEC_F32, 0},
        {"application/json;q=0.5,application/octet-stream;q=0.501", NULL, 0,
         TV_OUT_RAW, TOKVEC_F32, 0},
        {"application/json;Q=0.9;ext=1, application/x-npy;q=1.000", NULL, 0,
         TV_OUT_NPY, TOKVEC_F32, 0},
        /* equal q: the more specific range, then the first listed */
        {"*/*, application/octet-stream", NULL, 0, TV_OUT_RAW, TOKVEC_F32, 0},
        {"application/*, application/x-npy", NULL, 0, TV_OUT_NPY, TOKVEC_F32,
         0},
        {"application/x-npy;q=0.5, application/octet-stream;q=0.5", NULL, 0,
         TV_OUT_NPY, TOKVEC_F32, 0},
        {"application/*", NULL, 0, TV_OUT_JSON, TOKVEC_F32, 0},
        /* a type's q is that of the most specific range naming it */
        {"*/*;q=0.5, application/x-npy;q=0.1", NULL, 0, TV_OUT_JSON,
         TOKVEC_F32, 0},
        {"application/json;q=0, */*", NULL, 0, TV_OUT_RAW, TOKVEC_F32, 0},
        {"application/json;q=0, application/*;q=0", NULL, -1, 0, 0, 406},
        {"*/*;q=0", NULL, -1, 0, 0, 406},
        /* media type parameters other than q are ignored */
        {"application/json;charset=utf-8", NULL, 0, TV_OUT_JSON, TOKVEC_F32,
         0},
        /* a malformed q ignores its element */
        {"application/x-npy;q=2, application/octet-stream;q=0.1", NULL, 0,
         TV_OUT_RAW, TOKVEC_F32, 0},
        {"application/x-npy;q=abc", NULL, -1, 0, 0, 406},
        {"application/x-npy;q=1.5", NULL, -1, 0, 0, 406},
        {"application/x-npy;q=0.1234", NULL, -1, 0, 0, 406},
        /* .npz by name; a wildcard never picks it (last in the ties) */
        {"application/x-npz", "bfloat16", 0, TV_OUT_NPZ, TOKVEC_BF16, 0},
        {"application/json;q=0.9, application/x-npz", NULL, 0, TV_OUT_NPZ,
         TOKVEC_F32, 0},
        {"application/x-npy;q=0, application/x-npz;q=0, */*;q=0.1", NULL, 0,
         TV_OUT_JSON, TOKVEC_F32, 0},
        {"application/json;q=0, application/octet-stream;q=0, "
         "application/x-npy;q=0, application/*",
         NULL, 0, TV_OUT_NPZ, TOKVEC_F32, 0},
        /* blanks and tabs around types, parameters and q; q's forms */
        {"\tapplication/x-npy ;\t q=0.5 \t, application/json;q=0.4", NULL, 0,
         TV_OUT_NPY, TOKVEC_F32, 0},
        {"application/x-npy;q=1., application/json;q=0.999", NULL, 0,
         TV_OUT_NPY, TOKVEC_F32, 0},
        {"application/x-npy;q=1.001", NULL, -1, 0, 0, 406},
        {"application/x-npy;q=0.5x", NULL, -1, 0, 0, 406},
        {"application/x-npy;q=", NULL, -1, 0, 0, 406},
        {"application/x-npy;q", NULL, 0, TV_OUT_NPY, TOKVEC_F32, 0},
        {"application/x-npy;;", NULL, 0, TV_OUT_NPY, TOKVEC_F32, 0},
        {"application/x-npy;v=1;x=q=0", NULL, 0, TV_OUT_NPY, TOKVEC_F32, 0},
        {"application/x-npy;qq=0", NULL, 0, TV_OUT_NPY, TOKVEC_F32, 0},
        {"application/x-npy;Q=0", NULL, -1, 0, 0, 406},
        /* a range of a wildcard's length that is not one */
        {"application/?, text/*", NULL, -1, 0, 0, 406},
        {"*/x", NULL, -1, 0, 0, 406},
        {"*/*x", NULL, -1, 0, 0, 406},
        /* blanks and commas only: as if no Accept */
        {" , ,", NULL, 0, TV_OUT_JSON, TOKVEC_F32, 0},
        {"application/json", "float16", -1, 0, 0, 400},
        {"application/octet-stream", "float64", -1, 0, 0, 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tv_format f;
        tv_error e = {0};
        int rc = tv_negotiate(cases[i].accept, cases[i].dtype, &f, &e);
        assert_negotiated(rc, &f, &e, cases[i].rc, cases[i].kind, cases[i].dt,
                          cases[i].status);
    }
}

static void json_only_routes_accept_json_by_name_or_wildcard(void **s)
{
    (void)s;
    static const char *const yes[] = {
        NULL,
        "",
        " , ",
        "application/json",
        "*/*",
        "application/*",
        "text/html, application/json;q=0.1",
        "application/x-npy, */*;q=0.5",
        "APPLICATION/JSON",
        "application/json;charset=utf-8",
    };
    static const char *const no[] = {
        "text/html",
        "application/json;q=0",
        "application/octet-stream",
        "application/x-npy, text/plain",
        "*/*;q=0",
        "application/json;q=0, */*", /* the named range decides */
    };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!tv_accepts_json(yes[i]))
            fail_msg("refused \"%s\"", yes[i] ? yes[i] : "(none)");
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (tv_accepts_json(no[i]))
            fail_msg("accepted \"%s\"", no[i]);
}

static void embed_dtype_comes_from_query_or_body_and_torch_allows_halves(
    void **s)
{
    (void)s;
    static const struct {
        const char *accept, *query, *body;
        int torch, rc;
        tv_out_kind kind;
        tokvec_dtype dt;
        int status;
    } cases[] = {
        {NULL, NULL, NULL, 0, 0, TV_OUT_JSON, TOKVEC_F32, 0},
        {NULL, NULL, NULL, 1, 0, TV_OUT_JSON, TOKVEC_F32, 0},
        {NULL, NULL, "float16", 1, 0, TV_OUT_JSON, TOKVEC_F16, 0},
        {NULL, "bfloat16", NULL, 1, 0, TV_OUT_JSON, TOKVEC_BF16, 0},
        {NULL, "float16", "float16", 1, 0, TV_OUT_JSON, TOKVEC_F16, 0},
        {NULL, "", "bfloat16", 1, 0, TV_OUT_JSON, TOKVEC_BF16, 0},
        {"application/octet-stream", NULL, "float16", 0, 0, TV_OUT_RAW,
         TOKVEC_F16, 0},
        {"application/x-npy", NULL, "bfloat16", 1, 0, TV_OUT_NPY, TOKVEC_BF16,
         0},
        /* JSON numbers are float32 unless the tensors are torch's */
        {NULL, NULL, "float16", 0, -1, 0, 0, 400},
        {NULL, "float16", NULL, 0, -1, 0, 0, 400},
        {NULL, "float16", "bfloat16", 1, -1, 0, 0, 400},
        {NULL, NULL, "float64", 1, -1, 0, 0, 400},
        {NULL, "f16", NULL, 1, -1, 0, 0, 400},
        {"text/html", NULL, "float16", 1, -1, 0, 0, 406},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tv_format f;
        tv_error e = {0};
        int rc = tv_negotiate_embed(cases[i].accept, cases[i].query,
                                    cases[i].body, cases[i].torch, 0, &f, &e);
        assert_negotiated(rc, &f, &e, cases[i].rc, cases[i].kind, cases[i].dt,
                          cases[i].status);
    }
}

/* "encoding_format": "npz" (or ?encoding_format=npz) answers .npz where
 * no Accept, or a wildcard, decided; a type Accept names wins. */
static void npz_encoding_gives_npz_unless_accept_names_a_type(void **s)
{
    (void)s;
    static const struct {
        const char *accept, *query;
        int torch, rc;
        tv_out_kind kind;
        tokvec_dtype dt;
        int status;
    } cases[] = {
        {NULL, NULL, 0, 0, TV_OUT_NPZ, TOKVEC_F32, 0},
        {"", "float16", 0, 0, TV_OUT_NPZ, TOKVEC_F16, 0},
        {" , ", NULL, 0, 0, TV_OUT_NPZ, TOKVEC_F32, 0},
        {"*/*", "bfloat16", 0, 0, TV_OUT_NPZ, TOKVEC_BF16, 0},
        {"application/*;q=0.5", NULL, 0, 0, TV_OUT_NPZ, TOKVEC_F32, 0},
        {"application/x-npz", NULL, 0, 0, TV_OUT_NPZ, TOKVEC_F32, 0},
        /* a named type wins */
        {"application/json", NULL, 0, 0, TV_OUT_JSON, TOKVEC_F32, 0},
        {"application/json", "float16", 0, -1, 0, 0, 400},
        {"application/x-npy", "float16", 0, 0, TV_OUT_NPY, TOKVEC_F16, 0},
        {"application/octet-stream, */*;q=0.5", NULL, 0, 0, TV_OUT_RAW,
         TOKVEC_F32, 0},
        /* ... unless a wildcard outranks it */
        {"application/x-npy;q=0.5, */*", NULL, 0, 0, TV_OUT_NPZ, TOKVEC_F32,
         0},
        /* npz excluded: the wildcard's pick stands, or nothing is left */
        {"application/x-npz;q=0, */*", NULL, 0, 0, TV_OUT_JSON, TOKVEC_F32, 0},
        {"text/html", NULL, 0, -1, 0, 0, 406},
        /* torch and npz together: the torch flag only widens the dtypes */
        {NULL, "float16", 1, 0, TV_OUT_NPZ, TOKVEC_F16, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tv_format f;
        tv_error e = {0};
        int rc = tv_negotiate_embed(cases[i].accept, cases[i].query, NULL,
                                    cases[i].torch, 1, &f, &e);
        assert_negotiated(rc, &f, &e, cases[i].rc, cases[i].kind, cases[i].dt,
                          cases[i].status);
    }
    assert_string_equal(tv_content_type(TV_OUT_NPZ), "application/x-npz");
}

static void npy_header_of_int64_arrays_is_numpys(void **s)
{
    (void)s;
    char h[TV_NPY_HEADER_MAX];
    const int64_t shape[2] = {3, 70000}, one[1] = {5};
    size_t n = tv_npy_header_of(h, "<i8", 2, shape);
    assert_int_equal(n, 128);
    assert_memory_equal(h, "\x93NUMPY\x01\x00\x76\x00", 10);
    const char *dict = "{'descr': '<i8', 'fortran_order': False, "
                       "'shape': (3, 70000), }";
    assert_memory_equal(h + 10, dict, strlen(dict));
    assert_int_equal(h[127], '\n');
    n = tv_npy_header_of(h, "<i8", 1, one);
    assert_int_equal(n, 128);
    dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }";
    assert_memory_equal(h + 10, dict, strlen(dict));
}

static void npy_header_aligns_the_data_to_64_bytes(void **s)
{
    (void)s;
    static const tokvec_dtype dts[] = {TOKVEC_F32, TOKVEC_F16, TOKVEC_BF16};
    static const char *descr[] = {"'<f4'", "'<f2'", "'<u2'"};
    for (int i = 0; i < 3; i++) {
        char h[TV_NPY_HEADER_MAX];
        size_t n = tv_npy_header(h, dts[i], 4096, 65536, 1 << 20);
        assert_true(n > 10 && n <= TV_NPY_HEADER_MAX);
        assert_int_equal(n % 64, 0);
        assert_memory_equal(h, "\x93NUMPY\x01\x00", 8);
        size_t hl = (unsigned char)h[8] | (size_t)(unsigned char)h[9] << 8;
        assert_int_equal(hl + 10, n);
        assert_int_equal(h[n - 1], '\n');
        assert_non_null(memmem(h, n, descr[i], strlen(descr[i])));
        assert_non_null(memmem(h, n, "(4096, 65536, 1048576)", 22));
    }
}

static void error_body_is_json_whatever_the_message_holds(void **s)
{
    (void)s;
    tv_error e;
    char msg[600];
    for (int i = 0; i < 599; i++)
        msg[i] = (char)(1 +
                        (i * 37) % 255); /* controls, quotes, bytes >0x7f */
    msg[599] = '\0';
    tv_error_set(&e, 400, "invalid_json", "%s", msg);
    char body[TV_ERROR_BODY_MAX];
    size_t n = tv_error_body(&e, body);
    assert_true(n < TV_ERROR_BODY_MAX);
    json_error_t je;
    json_t *j = json_loadb(body, n, 0, &je);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "error_type")),
                        "invalid_json");
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(base64_matches_rfc4648_test_vectors),
        cmocka_unit_test(
            base64_embed_json_fits_its_bound_for_every_small_shape),
        cmocka_unit_test(base64_embed_json_fits_its_bound_for_a_large_batch),
        cmocka_unit_test(
            float_embed_json_fits_its_bound_with_the_longest_floats),
        cmocka_unit_test(embed_json_prints_shape_and_shortest_floats),
        cmocka_unit_test(embed_json_bound_is_zero_when_the_size_overflows),
        cmocka_unit_test(token_json_fits_its_bound),
        cmocka_unit_test(negotiate_follows_rfc9110_q_then_specificity),
        cmocka_unit_test(json_only_routes_accept_json_by_name_or_wildcard),
        cmocka_unit_test(
            embed_dtype_comes_from_query_or_body_and_torch_allows_halves),
        cmocka_unit_test(npy_header_aligns_the_data_to_64_bytes),
        cmocka_unit_test(npy_header_of_int64_arrays_is_numpys),
        cmocka_unit_test(npz_encoding_gives_npz_unless_accept_names_a_type),
        cmocka_unit_test(error_body_is_json_whatever_the_message_holds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
