/* cli.c -- the file subcommands of tokvec: init, inspect, lookup, convert.
 *
 * Each command parses its own options, calls the core library and prints.
 * Exit codes: 0 ok; 1 a runtime failure (out of memory, write error);
 * 2 bad usage or a bad input file, always with one line on stderr that
 * names the file (or option) and the problem. Single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_text.h"
#include "cli_opts.h"
#include "encode.h"
#include "suggest.h"
#include "tokvec_embed.h"
#include "tokvec_init.h"
#include "tokvec_model.h"
#include "tokvec_table.h"
#include "tokvec_write.h"

/* Names tokvec writes; the first of the contract's search lists. */
#define TOKEN_TENSOR_NAME "tok_emb.weight"
#define POSITION_TENSOR_NAME "pos_emb.weight"

/* --- init ---------------------------------------------------------------- */

static const char init_usage[] =
    "usage: tokvec init --vocab V --dim D -o FILE [--context C]\n"
    "                   [--positional KIND] [--seed S] [--padding-idx P]\n"
    "                   [--dtype T]\n"
    "\n"
    "Creates the table of torch.manual_seed(SEED); nn.Embedding(V, D)\n"
    "[; nn.Embedding(C, D)], bit-exact with PyTorch on x86-64, as\n"
    "safetensors (tensors tok_emb.weight, pos_emb.weight).\n"
    "\n"
    "  --vocab V            rows of the token table (required)\n"
    "  --dim D              embedding width (required)\n"
    "  --context C          context length (default 1024)\n"
    "  --positional KIND    learned (default): a C x D table drawn after\n"
    "                       the token table; sinusoidal: computed at open\n"
    "                       (recorded in metadata); none\n"
    "  --seed S             torch.manual_seed argument (default 123)\n"
    "  --padding-idx P      row P of the token table set to 0 (as torch)\n"
    "  --dtype T            f32 (default), f16 or bf16 (rounded to nearest)\n"
    "  -o, --output FILE    where to write (atomically, by rename)\n"
    "  -h, --help           this text\n";

/* tokvec init's arguments, defaults first. */
typedef struct init_args {
    int64_t vocab, dim, context, padding;
    uint64_t seed;
    const char *out_path, *seed_text;
    tokvec_positional positional;
    tokvec_dtype dtype;
} init_args;

enum { INIT_HELP = 1 };

/* Parses and checks init's command line into a: 0, INIT_HELP (usage
 * printed: exit 0), or an exit status from tv_cli_fail() (message printed). */
static int init_parse(int argc, char **argv, init_args *a)
{
    static const char *const flags[] = {"help", NULL};
    static const char *const known[] = {"help",        "vocab",      "dim",
                                        "context",     "positional", "seed",
                                        "padding-idx", "dtype",      "output",
                                        NULL};
    opts_t o = {
        .argc = argc, .argv = argv, .i = 1, .flags = flags, .known = known};
    int r;

    *a = (init_args){.context = 1024,
                     .padding = TOKVEC_NO_PADDING,
                     .seed = 123,
                     .seed_text = "123",
                     .positional = TOKVEC_POS_LEARNED,
                     .dtype = TOKVEC_F32};
    for (r = tv_cli_opt_next(&o); r > 0; r = tv_cli_opt_next(&o)) {
        const char *n = o.name, *v = o.value;
        if (!n)
            return tv_cli_fail(EXIT_USAGE, "init: unexpected argument '%s'",
                               v);
        if (!strcmp(n, "help")) {
            fputs(init_usage, stdout);
            return INIT_HELP;
        } else if (!strcmp(n, "vocab")) {
            if (tv_cli_parse_i64(v, 1, INT32_MAX, &a->vocab))
                return tv_cli_fail(EXIT_USAGE,
                                   "init: --vocab '%s' is not an "
                                   "integer in [1, 2^31)",
                                   v);
        } else if (!strcmp(n, "dim")) {
            if (tv_cli_parse_i64(v, 1, 1 << 20, &a->dim))
                return tv_cli_fail(EXIT_USAGE,
                                   "init: --dim '%s' is not an "
                                   "integer in [1, 2^20]",
                                   v);
        } else if (!strcmp(n, "context")) {
            if (tv_cli_parse_i64(v, 1, INT32_MAX, &a->context))
                return tv_cli_fail(EXIT_USAGE,
                                   "init: --context '%s' is not an "
                                   "integer in [1, 2^31)",
                                   v);
        } else if (!strcmp(n, "positional")) {
            if (tokvec_positional_parse(v, &a->positional) < 0 ||
                a->positional == TOKVEC_POS_AUTO)
                return tv_cli_fail(EXIT_USAGE,
                                   "init: --positional '%s' is not "
                                   "learned, sinusoidal or none",
                                   v);
        } else if (!strcmp(n, "seed")) {
            if (tv_cli_parse_seed(v, &a->seed))
                return tv_cli_fail(EXIT_USAGE,
                                   "init: --seed '%s' is not an "
                                   "integer in [-2^63, 2^64)",
                                   v);
            a->seed_text = v;
        } else if (!strcmp(n, "padding-idx")) {
            if (tv_cli_parse_i64(v, INT64_MIN + 1, INT64_MAX, &a->padding))
                return tv_cli_fail(EXIT_USAGE,
                                   "init: --padding-idx '%s' is not "
                                   "an integer",
                                   v);
        } else if (!strcmp(n, "dtype")) {
            if (tokvec_dtype_parse(v, &a->dtype) < 0)
                return tv_cli_fail(EXIT_USAGE,
                                   "init: --dtype '%s' is not f32, "
                                   "f16 or bf16",
                                   v);
        } else if (!strcmp(n, "o") || !strcmp(n, "output")) {
            a->out_path = v;
        } else {
            return tv_cli_unknown_option("init", n, known);
        }
    }
    if (r < 0)
        return tv_cli_opt_fail("init", &o);
    if (!a->vocab || !a->dim || !a->out_path)
        return tv_cli_fail(EXIT_USAGE,
                           "init: --vocab, --dim and -o are required "
                           "(see tokvec init --help)");
    if (a->padding != TOKVEC_NO_PADDING &&
        (a->padding < -a->vocab || a->padding >= a->vocab))
        return tv_cli_fail(EXIT_USAGE,
                           "init: --padding-idx %" PRId64 " is outside "
                           "[-%" PRId64 ", %" PRId64 ")",
                           a->padding, a->vocab, a->vocab);
    if ((uint64_t)a->vocab * (uint64_t)a->dim > ((uint64_t)1 << 34) ||
        (uint64_t)a->context * (uint64_t)a->dim > ((uint64_t)1 << 34))
        return tv_cli_fail(EXIT_USAGE,
                           "init: table of %" PRId64 " x %" PRId64
                           " is too large",
                           a->vocab, a->dim);
    return 0;
}

int cmd_init(int argc, char **argv)
{
    init_args a;
    int pr = init_parse(argc, argv, &a);
    if (pr)
        return pr == INIT_HELP ? 0 : pr;
    int64_t vocab = a.vocab, dim = a.dim, context = a.context;
    int64_t padding = a.padding;
    const char *out_path = a.out_path, *seed_text = a.seed_text;
    tokvec_positional positional = a.positional;
    tokvec_dtype dtype = a.dtype;

    int rc, ret = 1;
    tokvec_rng *rng = NULL;
    float *tok = NULL, *pos = NULL;
    uint16_t *tok16 = NULL, *pos16 = NULL;
    int learned = positional == TOKVEC_POS_LEARNED;
    size_t ntok = (size_t)vocab * (size_t)dim;
    size_t npos = learned ? (size_t)context * (size_t)dim : 0;

    rc = tokvec_rng_new(a.seed, &rng);
    if (rc < 0)
        goto out;
    tok = malloc(ntok * sizeof *tok);
    pos = npos ? malloc(npos * sizeof *pos) : NULL;
    if (!tok || (npos && !pos)) {
        rc = -ENOMEM;
        goto out;
    }
    /* As torch does: the token table, then the position table, from one
     * generator. */
    rc = tokvec_init_embedding(rng, tok, vocab, dim, padding);
    if (rc < 0)
        goto out;
    if (learned)
        rc = tokvec_init_embedding(rng, pos, context, dim, TOKVEC_NO_PADDING);
    if (rc < 0)
        goto out;

    const void *tok_data = tok, *pos_data = pos;
    if (dtype != TOKVEC_F32) {
        tok16 = malloc(ntok * 2);
        pos16 = npos ? malloc(npos * 2) : NULL;
        if (!tok16 || (npos && !pos16)) {
            rc = -ENOMEM;
            goto out;
        }
        tokvec_narrow(dtype, tok, tok16, ntok);
        if (npos)
            tokvec_narrow(dtype, pos, pos16, npos);
        tok_data = tok16;
        pos_data = pos16;
    }

    tokvec_write_tensor tensors[2] = {
        {TOKEN_TENSOR_NAME, dtype, vocab, dim, tok_data},
        {POSITION_TENSOR_NAME, dtype, context, dim, pos_data},
    };
    char ctx_text[32], pad_text[32];
    snprintf(ctx_text, sizeof ctx_text, "%" PRId64, context);
    if (padding == TOKVEC_NO_PADDING)
        snprintf(pad_text, sizeof pad_text, "none");
    else
        snprintf(pad_text, sizeof pad_text, "%" PRId64, padding);
    const char *keys[] = {"format",        "generator",      "seed",
                          "positional",    "context_length", "padding_idx",
                          "tokvec_version"};
    const char *values[] = {
        "pt",          "torch.manual_seed + nn.Embedding (normal_)",
        seed_text,     tokvec_positional_name(positional),
        ctx_text,      pad_text,
        TOKVEC_VERSION};
    tokvec_write_opts wo = {
        .metadata_keys = keys,
        .metadata_values = values,
        .n_metadata = sizeof keys / sizeof keys[0],
        .progress = isatty(2) ? tv_cli_progress : NULL,
        .progress_ud = (void *)"init",
    };
    rc = tokvec_safetensors_write(out_path, tensors, learned ? 2 : 1, &wo);
    if (rc < 0) {
        tv_cli_fail(1, "%s: cannot write: %s", out_path, tokvec_strerror(rc));
        rc = 0;
        goto out;
    }
    ret = 0;
out:
    if (rc < 0)
        tv_cli_fail(1, "init: %s", tokvec_strerror(rc));
    tokvec_rng_free(rng);
    free(tok);
    free(pos);
    free(tok16);
    free(pos16);
    return ret;
}

/* --- inspect ------------------------------------------------------------- */

/* Counts NaN and infinities of a float tensor stored little endian; -1 for
 * dtypes that are not floating point. Reads bytes: data may be unaligned. */
static int64_t count_nonfinite(const tokvec_tensor *x)
{
    const unsigned char *p = x->data;
    uint64_t n = 0;
    if (!strcmp(x->dtype, "F32")) {
        for (uint64_t i = 0; i + 4 <= x->nbytes; i += 4)
            n += (p[i + 3] & 0x7f) == 0x7f && (p[i + 2] & 0x80);
    } else if (!strcmp(x->dtype, "BF16")) {
        for (uint64_t i = 0; i + 2 <= x->nbytes; i += 2)
            n += (p[i + 1] & 0x7f) == 0x7f && (p[i] & 0x80);
    } else if (!strcmp(x->dtype, "F16")) {
        for (uint64_t i = 0; i + 2 <= x->nbytes; i += 2)
            n += (p[i + 1] & 0x7c) == 0x7c;
    } else if (!strcmp(x->dtype, "F64")) {
        for (uint64_t i = 0; i + 8 <= x->nbytes; i += 8)
            n += (p[i + 7] & 0x7f) == 0x7f && (p[i + 6] & 0xf0) == 0xf0;
    } else {
        return -1;
    }
    return (int64_t)n;
}

static void sha256_hex(const void *data, uint64_t n, char hex[65])
{
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    const uint8_t *p = data;
    sha256_init(&ctx);
    while (n) { /* nettle takes size_t; feed in bounded pieces */
        size_t k = n > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)n;
        sha256_update(&ctx, k, p);
        p += k;
        n -= k;
    }
    sha256_digest(&ctx, sizeof d, d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
        sprintf(hex + 2 * i, "%02x", d[i]);
}

static const char inspect_usage[] =
    "usage: tokvec inspect FILE [--pos POS.npy] [--token-tensor NAME]\n"
    "                           [--position-tensor NAME]\n"
    "\n"
    "Validates FILE as tokvec serve would and prints its tensors (dtype,\n"
    "shape, bytes, sha256, non-finite count), which ones were picked as the\n"
    "token and position tables, and the metadata. Sinusoidal positions are\n"
    "checked against their size limit but not computed.\n"
    "A directory holding tokenizer.json is a static embedding model (as\n"
    "tokvec serve --model DIR reads it): its layout, normalization and\n"
    "what Model2Vec's encode reads of the tokenizer come first.\n"
    "\n"
    "  --pos POS.npy          positions for a .npy token table\n"
    "  --token-tensor NAME, --position-tensor NAME   pick tensors by name\n"
    "  -h, --help             this text\n";

/* A model directory (tokvec serve --model): holds a tokenizer.json. */
static int is_model_dir(const char *path)
{
    struct stat st;
    char p[PATH_MAX];
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode) ||
        snprintf(p, sizeof p, "%s/tokenizer.json", path) >= (int)sizeof p)
        return 0;
    return stat(p, &st) == 0;
}

/* Opens the model directory and prints what it is. 0 or EXIT_USAGE. */
static int inspect_model(const char *path, tokvec_model **m)
{
    char err[512] = "";
    tokvec_model_opts mo = {.table_flags = TOKVEC_TABLE_SKIP_SINUSOIDAL,
                            .errbuf = err,
                            .errlen = sizeof err};
    int rc = tokvec_model_open(path, &mo, m);
    if (rc < 0)
        return tv_cli_fail(EXIT_USAGE, "%s", *err ? err : tokvec_strerror(rc));
    const tokvec_model_info *mi = tokvec_model_get_info(*m);
    const tokvec_table_info *in = tokvec_table_get_info(
        tokvec_model_table(*m));
    char name[256];
    tokvec_model_default_name(path, name, sizeof name);
    printf("model       %s (%s layout), served as %s\n", mi->dir,
           mi->layout_name, name);
    printf("normalize   %s (%s)\n", mi->normalize ? "true" : "false",
           mi->normalize_from);
    printf("tokenizer   %s: %" PRId64 " token strings, median length %" PRId64
           " code points, unk id %" PRId64 "%s\n",
           mi->tokenizer_path, mi->tokenizer_tokens, mi->median_token_length,
           mi->unk_id, mi->unk_id < 0 ? " (none)" : "");
    printf("rows        vocab_size %" PRId64 " from %" PRId64
           " stored rows%s%s%s%s%s\n",
           in->vocab_size, in->stored_rows,
           in->mapping_tensor ? ", mapping " : "",
           in->mapping_tensor ? in->mapping_tensor : "",
           in->weights_tensor ? ", weights " : "",
           in->weights_tensor ? in->weights_tensor : "",
           in->weights_dtype
               ? (strcmp(in->weights_dtype, "F64") ? " (F32)" : " (F64)")
               : "");
    return 0;
}

int cmd_inspect(int argc, char **argv)
{
    static const char *const flags[] = {"help", NULL};
    static const char *const known[] = {"help", TABLE_OPTIONS, NULL};
    opts_t o = {
        .argc = argc, .argv = argv, .i = 1, .flags = flags, .known = known};
    tokvec_table_opts to = {0};
    const char *path = NULL;
    int r;

    for (r = tv_cli_opt_next(&o); r > 0; r = tv_cli_opt_next(&o)) {
        if (!o.name) {
            if (path)
                return tv_cli_fail(EXIT_USAGE, "inspect: one FILE only");
            path = o.value;
        } else if (!strcmp(o.name, "help")) {
            fputs(inspect_usage, stdout);
            return 0;
        } else if (!tv_cli_table_option(o.name, o.value, &to)) {
            return tv_cli_unknown_option("inspect", o.name, known);
        }
    }
    if (r < 0)
        return tv_cli_opt_fail("inspect", &o);
    if (!path)
        return tv_cli_fail(EXIT_USAGE,
                           "inspect: need FILE (see tokvec inspect --help)");

    /* Describes, never embeds: sinusoidal rows (up to 1 GiB that a tiny
     * file's metadata may ask for) are not needed. */
    to.flags |= TOKVEC_TABLE_SKIP_SINUSOIDAL;
    tokvec_table *t = NULL;
    tokvec_model *m = NULL;
    r = is_model_dir(path) ? inspect_model(path, &m)
                           : tv_cli_open_table(path, &to, &t);
    if (r)
        return r;
    if (m)
        t = (tokvec_table *)tokvec_model_table(m);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    printf("file        %s (%s, %" PRIu64 " bytes)\n", in->path, in->format,
           in->file_size);
    printf("token       %s: %" PRId64 " x %" PRId64 " %s\n",
           in->token_tensor[0] ? in->token_tensor : "(npy)", in->vocab_size,
           in->dim, in->token_dtype);
    if (in->positional == TOKVEC_POS_LEARNED)
        printf("position    %s: %" PRId64 " x %" PRId64 " %s (learned)\n",
               in->position_tensor[0] ? in->position_tensor : "(npy)",
               in->context_length, in->dim, in->position_dtype);
    else if (in->positional == TOKVEC_POS_SINUSOIDAL)
        printf("position    sinusoidal, context_length %" PRId64 "\n",
               in->context_length);
    else
        printf("position    none\n");
    if (in->metadata_json)
        printf("metadata    %s\n", in->metadata_json);

    size_t ns = tokvec_table_shard_count(t);
    if (ns)
        printf("shards      %zu (only those holding the tables are mapped "
               "and listed below)\n",
               ns);
    for (size_t i = 0; i < ns; i++) {
        tokvec_shard sh;
        if (tokvec_table_shard(t, i, &sh) < 0)
            continue;
        printf("  %s  %zu tensors", sh.file, sh.ntensors);
        if (sh.mapped)
            printf("  mapped, %" PRIu64 " bytes", sh.file_size);
        printf("\n");
    }
    size_t n = tokvec_table_tensor_count(t);
    printf("tensors     %zu\n", n);
    for (size_t i = 0; i < n; i++) {
        tokvec_tensor x;
        if (tokvec_table_tensor(t, i, &x) < 0)
            continue;
        char shape[128] = "";
        size_t len = 0;
        for (int d = 0; d < x.ndim && len < sizeof shape - 24; d++)
            len += (size_t)snprintf(shape + len, sizeof shape - len,
                                    "%s%" PRId64, d ? " x " : "", x.shape[d]);
        if (x.ndim == 0)
            snprintf(shape, sizeof shape, "scalar");
        char hex[65];
        sha256_hex(x.data, x.nbytes, hex);
        int64_t bad = count_nonfinite(&x);
        const char *role = "";
        if (!strcmp(x.name, in->token_tensor))
            role = "  <- token";
        else if (in->position_tensor && !strcmp(x.name, in->position_tensor))
            role = "  <- position";
        printf("  %s  %s  [%s]  %" PRIu64 " bytes  sha256 %s", x.name, x.dtype,
               shape, x.nbytes, hex);
        if (x.file)
            printf("  in %s", x.file);
        if (bad >= 0)
            printf("  non-finite %" PRId64, bad);
        printf("%s\n", role);
    }
    if (m)
        tokvec_model_close(m); /* and its table */
    else
        tokvec_table_close(t);
    return 0;
}

/* --- lookup -------------------------------------------------------------- */

static const char lookup_usage[] =
    "usage: tokvec lookup --table FILE [TABLE OPTIONS] [--start-position N]\n"
    "                     [--no-positions] ID...\n"
    "       tokvec lookup --table FILE [TABLE OPTIONS] [--start-position N]\n"
    "                     [--no-positions] [--tokenizer FILE] [--no-special]\n"
    "                     --text TEXT\n"
    "TABLE OPTIONS: [--pos POS.npy] [--token-tensor NAME]\n"
    "               [--position-tensor NAME]\n"
    "\n"
    "Prints the JSON POST /embed returns for one sequence of ids:\n"
    "{\"shape\":[1,S,D],\"dtype\":\"float32\",\"embeddings\":[[[...]]]},\n"
    "each number the shortest decimal that reads back as the same float32.\n"
    "  --table FILE           the table (.safetensors, its shards' index or\n"
    "                         directory, .gguf or .npy)\n"
    "  --pos POS.npy          positions for a .npy token table\n"
    "  --token-tensor NAME, --position-tensor NAME   pick tensors by name\n"
    "  --start-position N     first position (default 0)\n"
    "  --no-positions         token rows only\n"
    "  --text TEXT            the ids of TEXT, as tokvec tokenize gives them\n"
    "  --tokenizer FILE, --no-special   as for tokvec tokenize (the same\n"
    "                         default tokenizer)\n"
    "  -h, --help             this text\n";

int cmd_lookup(int argc, char **argv)
{
    static const char *const flags[] = {"help", "no-positions", "no-special",
                                        NULL};
    static const char *const known[] = {
        "help",         "table",       "start-position",
        "no-positions", "text",        "tokenizer",
        "no-special",   TABLE_OPTIONS, NULL};
    opts_t o = {
        .argc = argc, .argv = argv, .i = 1, .flags = flags, .known = known};
    tokvec_table_opts to = {0};
    const char *path = NULL, *text = NULL, *tokenizer = NULL;
    int special = 1;
    int64_t start = 0;
    unsigned flags_embed = 0;
    int64_t *ids = calloc((size_t)argc, sizeof *ids);
    int64_t n = 0;
    int r, ret = EXIT_USAGE;
    tokvec_table *t = NULL;
    float *vec = NULL;
    char *json = NULL;

    if (!ids)
        return tv_cli_fail(1, "lookup: out of memory");
    for (r = tv_cli_opt_next(&o); r > 0; r = tv_cli_opt_next(&o)) {
        const char *v = o.value;
        if (!o.name) {
            if (tv_cli_parse_i64(v, INT64_MIN, INT64_MAX, &ids[n])) {
                tv_cli_fail(EXIT_USAGE,
                            "lookup: '%s' is not an integer token id", v);
                goto out;
            }
            n++;
        } else if (!strcmp(o.name, "help")) {
            fputs(lookup_usage, stdout);
            ret = 0;
            goto out;
        } else if (!strcmp(o.name, "table")) {
            path = v;
        } else if (!strcmp(o.name, "start-position")) {
            if (tv_cli_parse_i64(v, 0, INT32_MAX, &start)) {
                tv_cli_fail(EXIT_USAGE,
                            "lookup: --start-position '%s' is not a "
                            "non-negative integer",
                            v);
                goto out;
            }
        } else if (!strcmp(o.name, "no-positions")) {
            flags_embed |= TOKVEC_EMBED_NO_POSITIONS;
        } else if (!strcmp(o.name, "text")) {
            text = v;
        } else if (!strcmp(o.name, "tokenizer")) {
            tokenizer = v;
        } else if (!strcmp(o.name, "no-special")) {
            special = 0;
        } else if (!tv_cli_table_option(o.name, v, &to)) {
            tv_cli_unknown_option("lookup", o.name, known);
            goto out;
        }
    }
    if (r < 0) {
        tv_cli_opt_fail("lookup", &o);
        goto out;
    }
    if (text && n) {
        tv_cli_fail(EXIT_USAGE, "lookup: give IDs or --text, not both");
        goto out;
    }
    if (r >= 0 && path && text) {
        ret = tv_cli_text_ids(tokenizer, text, special, &ids, &n);
        if (ret)
            goto out;
    }
    ret = EXIT_USAGE;
    if (r < 0 || !path || n == 0) {
        tv_cli_fail(EXIT_USAGE,
                    "lookup: need --table FILE and at least one ID or a "
                    "--text that has tokens (see tokvec lookup --help)");
        goto out;
    }
    r = tv_cli_open_table(path, &to, &t);
    if (r)
        goto out;

    tokvec_embed_fault f;
    int rc = tokvec_embed_check(t, ids, 1, n, start, flags_embed, &f);
    const tokvec_table_info *in = tokvec_table_get_info(t);
    if (rc == TOKVEC_E_TOKEN_RANGE) {
        tv_cli_fail(EXIT_USAGE,
                    "lookup: token id %" PRId64 " at position %" PRId64
                    " is out of range for vocab_size %" PRId64 " (%s)",
                    f.id, f.position, in->vocab_size, path);
        goto out;
    } else if (rc == TOKVEC_E_POSITION_RANGE) {
        tv_cli_fail(EXIT_USAGE,
                    "lookup: start_position %" PRId64 " + sequence "
                    "length %" PRId64 " exceeds context_length %" PRId64
                    " (%s)",
                    start, n, in->context_length, path);
        goto out;
    } else if (rc < 0) {
        tv_cli_fail(EXIT_USAGE, "lookup: %s", tokvec_strerror(rc));
        goto out;
    }
    ret = 1;
    size_t cap = tv_embed_json_bound(1, n, in->dim, 0);
    vec = malloc(tokvec_embed_size(t, 1, n, flags_embed));
    json = cap ? malloc(cap + 1) : NULL;
    if (!vec || !json) {
        tv_cli_fail(1, "lookup: out of memory");
        goto out;
    }
    rc = tokvec_embed(t, ids, 1, n, start, flags_embed, vec);
    if (rc < 0) {
        tv_cli_fail(1, "lookup: %s", tokvec_strerror(rc));
        goto out;
    }
    size_t len = tv_embed_json(json, vec, 1, n, in->dim, 0);
    json[len++] = '\n';
    if (fwrite(json, 1, len, stdout) != len || fflush(stdout)) {
        tv_cli_fail(1, "lookup: write error: %s", strerror(errno));
        goto out;
    }
    ret = 0;
out:
    tokvec_table_close(t);
    free(vec);
    free(json);
    free(ids);
    return ret;
}

/* --- convert ------------------------------------------------------------- */

static const char convert_usage[] =
    "usage: tokvec convert IN -o OUT.safetensors [--pos POS.npy] "
    "[--dtype T]\n"
    "                      [--token-tensor NAME] [--position-tensor NAME]\n"
    "\n"
    "Writes the token table (and learned position table) of IN -- a .npy,\n"
    "a safetensors file such as a Hugging Face GPT-2 model.safetensors, a\n"
    "sharded checkpoint's index (or its directory) or a GGUF file (rows of\n"
    "quantized types dequantized to float32) -- as a tokvec safetensors file\n"
    "with tok_emb.weight [+ pos_emb.weight].\n"
    "  --pos POS.npy          learned positions for a .npy token table\n"
    "  --token-tensor NAME, --position-tensor NAME   pick tensors by name\n"
    "  --dtype T              f32, f16 or bf16 (default: as stored;\n"
    "                         narrowing rounds to nearest even)\n"
    "  -o, --output FILE      where to write (atomically, by rename)\n"
    "  -h, --help             this text\n";

/* Returns rows x dim of a view converted to dtype `to` in a new buffer
 * (caller frees): the stored bytes when they are `to` values, else the
 * rows widened (or dequantized) and narrowed. */
static void *convert_rows(const tokvec_table *t, int tokens, int64_t rows,
                          int64_t dim, tokvec_dtype to)
{
    size_t n = (size_t)rows * (size_t)dim;
    unsigned char *dst = malloc(n * tokvec_dtype_size(to));
    float *tmp = malloc((size_t)dim * sizeof *tmp); /* widened rows */
    if (!dst || !tmp) {
        free(dst);
        free(tmp);
        return NULL;
    }
    size_t row_out = (size_t)dim * tokvec_dtype_size(to);
    for (int64_t r = 0; r < rows; r++) {
        tokvec_row v;
        int rc = tokens ? tokvec_table_token_row(t, r, &v)
                        : tokvec_table_position_row(t, r, &v);
        if (rc < 0) { /* cannot happen for r < rows; keep it an error */
            free(dst);
            free(tmp);
            return NULL;
        }
        if (v.qtype == TOKVEC_Q_NONE && v.dtype == to && !v.weighted) {
            memcpy(dst + (size_t)r * row_out, v.data, row_out);
        } else {
            tokvec_row_to_f32(&v, tmp);
            tokvec_narrow(to, tmp, dst + (size_t)r * row_out, (size_t)dim);
        }
    }
    free(tmp);
    return dst;
}

int cmd_convert(int argc, char **argv)
{
    static const char *const flags[] = {"help", NULL};
    static const char *const known[] = {"help", "output", "dtype",
                                        TABLE_OPTIONS, NULL};
    opts_t o = {
        .argc = argc, .argv = argv, .i = 1, .flags = flags, .known = known};
    tokvec_table_opts to = {0};
    const char *in_path = NULL, *out_path = NULL;
    int have_dtype = 0, r, ret = EXIT_USAGE;
    tokvec_dtype dtype = TOKVEC_F32;
    tokvec_table *t = NULL;
    void *tok = NULL, *pos = NULL;
    json_t *meta = NULL; /* the input's metadata, while it is written */

    for (r = tv_cli_opt_next(&o); r > 0; r = tv_cli_opt_next(&o)) {
        if (!o.name) {
            if (in_path)
                return tv_cli_fail(EXIT_USAGE, "convert: one input file only");
            in_path = o.value;
        } else if (!strcmp(o.name, "help")) {
            fputs(convert_usage, stdout);
            return 0;
        } else if (!strcmp(o.name, "o") || !strcmp(o.name, "output")) {
            out_path = o.value;
        } else if (!strcmp(o.name, "dtype")) {
            if (tokvec_dtype_parse(o.value, &dtype) < 0)
                return tv_cli_fail(EXIT_USAGE,
                                   "convert: --dtype '%s' is not f32, "
                                   "f16 or bf16",
                                   o.value);
            have_dtype = 1;
        } else if (!tv_cli_table_option(o.name, o.value, &to)) {
            return tv_cli_unknown_option("convert", o.name, known);
        }
    }
    if (r < 0)
        return tv_cli_opt_fail("convert", &o);
    if (!in_path || !out_path)
        return tv_cli_fail(EXIT_USAGE,
                           "convert: need IN and -o OUT (see tokvec "
                           "convert --help)");
    r = tv_cli_open_table(in_path, &to, &t);
    if (r)
        return r;

    const tokvec_table_info *in = tokvec_table_get_info(t);
    if (!have_dtype)
        dtype = in->dtype;
    int learned = in->positional == TOKVEC_POS_LEARNED;
    ret = 1;
    tok = convert_rows(t, 1, in->vocab_size, in->dim, dtype);
    pos = learned ? convert_rows(t, 0, in->context_length, in->dim, dtype)
                  : NULL;
    if (!tok || (learned && !pos)) {
        tv_cli_fail(1, "convert: out of memory");
        goto out;
    }
    tokvec_write_tensor tensors[2] = {
        {TOKEN_TENSOR_NAME, dtype, in->vocab_size, in->dim, tok},
        {POSITION_TENSOR_NAME, dtype, in->context_length, in->dim, pos},
    };
    char ctx_text[32];
    snprintf(ctx_text, sizeof ctx_text, "%" PRId64, in->context_length);
    const char *keys[7] = {"format", "source", "positional", "tokvec_version"};
    const char *values[7] = {"pt", in_path,
                             tokvec_positional_name(in->positional),
                             TOKVEC_VERSION};
    size_t n_meta = 4;
    /* "context_length" only means something with positions. */
    if (in->positional != TOKVEC_POS_NONE) {
        keys[n_meta] = "context_length";
        values[n_meta++] = ctx_text;
    }
    /* A table tokvec init made stays random when converted: its
     * "generator" and "seed" go along (GET /info's random_weights). */
    meta = in->metadata_json ? json_loads(in->metadata_json, 0, NULL) : NULL;
    static const char *const carried[] = {"generator", "seed"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = json_string_value(json_object_get(meta, carried[i]));
        if (v) {
            keys[n_meta] = carried[i];
            values[n_meta++] = v;
        }
    }
    tokvec_write_opts wo = {
        .metadata_keys = keys,
        .metadata_values = values,
        .n_metadata = n_meta,
        .progress = isatty(2) ? tv_cli_progress : NULL,
        .progress_ud = (void *)"convert",
    };
    int rc = tokvec_safetensors_write(out_path, tensors, learned ? 2 : 1, &wo);
    if (rc < 0) {
        tv_cli_fail(1, "%s: cannot write: %s", out_path, tokvec_strerror(rc));
        goto out;
    }
    ret = 0;
out:
    json_decref(meta);
    free(tok);
    free(pos);
    tokvec_table_close(t);
    return ret;
}
