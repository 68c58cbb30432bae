/* fuzz_similar.c -- libFuzzer target for the body of POST /similar: the
 * input is the body, parsed against a small table (vocab 50, dim 4) by
 * tv_similar_parse, then, when it passes, scanned and answered.
 *
 * Invariants checked (abort() -> libFuzzer reports a crash):
 *  - a refused body gets a 4xx with an error_type and a message (500 only
 *    for out of memory, which -malloc_limit_mb turns into a report);
 *  - an accepted body's answer is JSON: a list of min(k, 50) objects with
 *    exactly id (in range, no repeats), text (null: no tokenizer here) and
 *    score (in [-1, 1], non-increasing; equal scores by id ascending).
 *
 * The pages themselves are not under test: the table of compiled-in files
 * that server/routes/pages.c serves (build/gen/pages_data.c) is empty here.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pages.h"
#include "tokvec_write.h"

typedef struct tv_page_file {
    const char *name;
    const unsigned char *data;
    unsigned long len;
} tv_page_file;
const tv_page_file tv_page_files[] = {{0, 0, 0}};
const unsigned long tv_page_nfiles = 0;

enum { VOCAB = 50, DIM = 4 };

static tokvec_table *table;
static tokvec_similar *idx;

static void open_table(void)
{
    char path[] = "/tmp/tokvec-fuzz-similar-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    close(fd);
    float tok[VOCAB * DIM];
    for (int i = 0; i < VOCAB * DIM; i++) /* row 7 is all zeros */
        tok[i] = i / DIM == 7 ? 0.0f : (float)((i * 37) % 11) - 5.0f;
    tokvec_write_tensor w = {"tok_emb.weight", TOKVEC_F32, VOCAB, DIM, tok};
    if (tokvec_safetensors_write(path, &w, 1, NULL) < 0 ||
        tokvec_table_open(path, NULL, &table) < 0 ||
        tokvec_similar_open(table, &idx) < 0)
        abort();
    unlink(path);
}

static void check_answer(const char *body, size_t len, size_t k)
{
    json_t *j = json_loadb(body, len, 0, NULL);
    size_t n = k < VOCAB ? k : VOCAB;
    if (!j || !json_is_array(j) || json_array_size(j) != n)
        abort();
    char seen[VOCAB] = {0};
    double prev = 2;
    json_int_t prev_id = -1;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(j, i);
        json_t *id = json_object_get(o, "id");
        json_t *s = json_object_get(o, "score");
        if (json_object_size(o) != 3 || !json_is_integer(id) ||
            !json_is_number(s) || !json_is_null(json_object_get(o, "text")))
            abort();
        json_int_t v = json_integer_value(id);
        double sc = json_number_value(s);
        if (v < 0 || v >= VOCAB || seen[v] || sc < -1 || sc > 1 || sc > prev ||
            (sc == prev && v < prev_id))
            abort();
        seen[v] = 1;
        prev = sc;
        prev_id = v;
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!table)
        open_table();
    tv_similar_call *c = NULL;
    tv_error e = {0};
    int parsed = tv_similar_parse((const char *)data, size, table, idx, NULL,
                                  &c, &e);
    if (parsed < 0) {
        if (c || !e.type || !*e.message ||
            !(e.status >= 400 && e.status < 500))
            abort();
        return 0;
    }
    tv_similar_run(c);
    const char *body;
    size_t len;
    if (tv_similar_result(c, &body, &len, &e) < 0)
        abort();
    /* k: what the answer's length must be (default 10) */
    json_t *req = json_loadb((const char *)data, size, 0, NULL);
    json_t *kv = json_object_get(req, "k");
    size_t k = kv ? (size_t)json_integer_value(kv) : TV_SIMILAR_DEFAULT_K;
    json_decref(req);
    check_answer(body, len, k);
    tv_similar_free(c);
    return 0;
}
