/* cli_text.c -- tokvec tokenize: text to token ids on the command line.
 *
 * Reads a whole file (or stdin), encodes it with a tokenizer file and
 * prints the ids as one JSON array; --jsonl reads one JSON string per line
 * instead and prints one array per line as each arrives, flushed when no
 * more input is waiting (how the tests feed it many texts at once; a pipe
 * can use it as a service). Exit codes as cli.c: 0 ok, 1 runtime failure,
 * 2 bad usage or a bad file, with one line on stderr.
 * Threads (--threads, default every CPU): a regular file is cut into
 * blocks (of lines with --jsonl, else at tokvec_tokenizer_cut's places)
 * that worker threads encode, each with its own tokvec_tok_state, into
 * their own output buffers; the main thread alone writes them, in order,
 * and at most WINDOW blocks a worker are in flight. The file is read into
 * memory first (read_input: read, not mmap, so that a file truncated
 * meanwhile cannot SIGBUS the process). A pipe is read line by line on the
 * main thread as before.
 * Also the text half of tokvec lookup --text (tv_cli_text_ids).
 */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_text.h"
#include "cli_opts.h"
#include "datadir.h"
#include "log.h"
#include "tokvec_tokenizer.h"

static const char tokenize_usage[] =
    "usage: tokvec tokenize [--tokenizer FILE] [--pattern NAME] "
    "[--no-special]\n"
    "                       [--add-special] [--jsonl [--offsets]]\n"
    "                       [--threads N] [FILE|-]\n"
    "\n"
    "Prints the token ids of FILE (default: standard input) as one JSON\n"
    "array, as tiktoken's encode(text, allowed_special=\"all\").\n"
    "\n"
    "  --tokenizer FILE   encoder.json (vocab.bpe beside it), a directory\n"
    "                     holding such a pair or a tokenizer.json,\n"
    "                     tokenizer.json, or NAME.tiktoken (default:\n"
    "                     $TOKVEC_TOKENIZER, else the built-in\n"
    "                     DATA_DIR/gpt2, shown below)\n"
    "  --pattern NAME     split pattern of a .tiktoken file: gpt2,\n"
    "                     r50k_base, p50k_base, cl100k_base, o200k_base\n"
    "                     (default: from the file name); refused for\n"
    "                     other files, which bring their own\n"
    "  --no-special       special tokens in the text are ordinary text\n"
    "                     (encode_ordinary)\n"
    "  --add-special      add the post-processor's tokens (tokenizer.json:\n"
    "                     [CLS] ... [SEP]; HF's add_special_tokens=True)\n"
    "  --jsonl            each input line is a JSON string; one array a "
    "line\n"
    "  --offsets          with --jsonl: [id, start, stop] per token, the\n"
    "                     byte span of the input it came from\n"
    "  --threads N        threads encoding a FILE (default: every CPU);\n"
    "                     the output is the same, in order\n"
    "  -h, --help         this text\n";

/* The tokenizer of a command (tokenize, lookup): given (--tokenizer; NULL
 * when not given), else datadir.h's default. *path, or an exit status
 * after the message: every source says how to name one. */
static int tokenizer_path(const char *cmd, const char *given, char *buf,
                          size_t len, const char **path)
{
    tv_tok_from from = TV_TOK_FROM_ENV;
    *path = given ? given : tv_default_tokenizer(buf, len, &from);
    if (*path && **path)
        return 0;
    if (given)
        return tv_cli_fail(EXIT_USAGE,
                           "%s: --tokenizer '' is no tokenizer; give "
                           "--tokenizer FILE",
                           cmd);
    if (from == TV_TOK_FROM_ENV)
        return tv_cli_fail(EXIT_USAGE,
                           "%s: TOKVEC_TOKENIZER is empty (no tokenizer); "
                           "give --tokenizer FILE or unset it for the "
                           "built-in %s/gpt2",
                           cmd, tv_data_dir());
    return tv_cli_fail(EXIT_USAGE,
                       "%s: no tokenizer: give --tokenizer FILE or set "
                       "TOKVEC_TOKENIZER (the built-in default %s/gpt2 is "
                       "not there: `make data` puts it there)",
                       cmd, tv_data_dir());
}

static int read_all(FILE *f, char **buf, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (!b)
        return -ENOMEM;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return -ENOMEM;
            }
            b = nb;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        free(b);
        return -EIO;
    }
    *buf = b;
    *len = n;
    return 0;
}

/* v in decimal at buf + n, two digits a step, written from the last into
 * scratch and copied: 8 bytes at once when it is no longer (the bytes
 * past it are written over by what comes next), so buf needs 8 bytes of
 * room past the number; the new n. */
static size_t put_num(char *buf, size_t n, uint64_t v)
{
    static const char pairs[201] = "00010203040506070809"
                                   "10111213141516171819"
                                   "20212223242526272829"
                                   "30313233343536373839"
                                   "40414243444546474849"
                                   "50515253545556575859"
                                   "60616263646566676869"
                                   "70717273747576777879"
                                   "80818283848586878889"
                                   "90919293949596979899";
    char tmp[32], *e = tmp + 24, *d = e; /* 8 bytes past e: 8-byte copy */
    memset(e, 0, 8);
    while (v >= 100) {
        d -= 2;
        memcpy(d, pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) {
        d -= 2;
        memcpy(d, pairs + 2 * v, 2);
    } else {
        *--d = (char)('0' + v);
    }
    size_t len = (size_t)(e - d);
    if (len <= 8)
        memcpy(buf + n, d, 8);
    else
        memcpy(buf + n, d, len);
    return n + len;
}

/* [[id, start, stop], ...] and a newline. */
static int print_spans(const tokvec_tok_ids *ids, FILE *out)
{
    char buf[1 << 16];
    size_t n = 0;
    buf[n++] = '[';
    for (size_t k = 0; k < ids->n; k++) {
        if (n > sizeof buf - 80) {
            if (fwrite(buf, 1, n, out) != n)
                return -EIO;
            n = 0;
        }
        buf[n++] = k ? ',' : '[';
        if (k)
            buf[n++] = '[';
        n = put_num(buf, n, (uint32_t)ids->ids[k]);
        buf[n++] = ',';
        n = put_num(buf, n, ids->offsets[k]);
        buf[n++] = ',';
        n = put_num(buf, n, ids->stops[k]);
        buf[n++] = ']';
    }
    buf[n++] = ']';
    buf[n++] = '\n';
    return fwrite(buf, 1, n, out) == n ? 0 : -EIO;
}

/* Prints n ids, a comma before each (but the first when first), between
 * open and close (strings, maybe empty), through one buffer. */
static int print_list(const int32_t *ids, size_t cnt, int first,
                      const char *open, const char *close, FILE *out)
{
    char buf[1 << 16];
    size_t n = strlen(open);
    memcpy(buf, open, n);
    for (size_t k = 0; k < cnt; k++) {
        if (n > sizeof buf - 16) {
            if (fwrite(buf, 1, n, out) != n)
                return -EIO;
            n = 0;
        }
        if (k || !first)
            buf[n++] = ',';
        n = put_num(buf, n, (uint32_t)ids[k]);
    }
    size_t cl = strlen(close);
    memcpy(buf + n, close, cl);
    n += cl;
    return fwrite(buf, 1, n, out) == n ? 0 : -EIO;
}

/* Prints ids as a JSON array and a newline. */
static int print_ids(const tokvec_tok_ids *ids, FILE *out)
{
    return print_list(ids->ids, ids->n, 1, "[", "]\n", out);
}

/* Whether more input can be read at once: a file always can (no flush
 * until the end); a pipe whose writer waits for our answer cannot. stdin's
 * buffer may still hold lines when this says no: the flush is early, which
 * is harmless. */
static int more_input(FILE *in, int is_file)
{
    struct pollfd p = {.fd = fileno(in), .events = POLLIN};
    return is_file || (poll(&p, 1, 0) == 1 && (p.revents & POLLIN));
}

/* Length of the well-formed UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t need = c >= 0xC2 && c <= 0xDF   ? 1
                  : c >= 0xE0 && c <= 0xEF ? 2
                  : c >= 0xF0 && c <= 0xF4 ? 3
                                           : 9;
    if (need > 3 || need >= n)
        return 0;
    unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    for (size_t j = 1; j <= need; j++) {
        if (p[j] < lo || p[j] > hi)
            return 0;
        lo = 0x80, hi = 0xBF;
    }
    return need + 1;
}

/* The common line, a JSON string of UTF-8 without \u escapes, decoded
 * into out (at least len bytes) without jansson: its length, or -1 for
 * anything else (jansson then decides, with its own errors). */
static long fast_string(const char *line, size_t len, char *out)
{
    const unsigned char *p = (const unsigned char *)line;
    size_t i = 1, o = 0;
    if (!len || p[0] != '"')
        return -1;
    for (;;) {
        if (i >= len)
            return -1;
        unsigned c = p[i];
        if (c == '"')
            break;
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            static const char from[] = "\"\\/bfnrt";
            static const char to[] = "\"\\/\b\f\n\r\t";
            const char *k = i + 1 < len ? strchr(from, p[i + 1]) : NULL;
            if (!k || !p[i + 1])
                return -1;
            out[o++] = to[k - from];
            i += 2;
        } else if (c < 0x80) {
            out[o++] = (char)c;
            i++;
        } else {
            size_t m = utf8_len(p + i, len - i);
            if (!m)
                return -1;
            memcpy(out + o, p + i, m);
            o += m;
            i += m;
        }
    }
    for (i++; i < len; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return -1;
    return (long)o;
}

/* One input line (len bytes, its newline included or not) to one output
 * line in out; *dec (*dcap bytes) is grown to decode it. 0, 2 when it is
 * not a JSON string, or a negative errno. */
static int jsonl_line(const tokvec_tokenizer *t, tokvec_tok_state *st,
                      const char *line, size_t len, unsigned flags,
                      tokvec_tok_ids *ids, char **dec, size_t *dcap, FILE *out)
{
    if (len + 1 > *dcap) {
        char *nd = realloc(*dec, len + 1);
        if (!nd)
            return -ENOMEM;
        *dec = nd;
        *dcap = len + 1;
    }
    long fl = fast_string(line, len, *dec);
    json_error_t je;
    json_t *s = fl >= 0 ? NULL
                        : json_loadb(line, len,
                                     JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    int rc = 2;
    if (fl >= 0 || json_is_string(s))
        rc = tokvec_tokenizer_encode(
            t, st, fl >= 0 ? *dec : json_string_value(s),
            fl >= 0 ? (size_t)fl : json_string_length(s), flags, ids);
    if (rc == 0)
        rc = (flags & TOKVEC_TOK_OFFSETS) ? print_spans(ids, out)
                                          : print_ids(ids, out);
    json_decref(s);
    return rc;
}

/* The message and exit code of jsonl_line's rc (not 0) on line. */
static int jsonl_fail(int rc, size_t line)
{
    if (rc == 2) {
        fprintf(stderr, "tokvec: input line %zu: not a JSON string\n", line);
        return 2;
    }
    fprintf(stderr, "tokvec: %s\n", tokvec_strerror(rc));
    return 1;
}

/* One JSON string per input line, one array per output line, flushed as
 * each line is done when no more input is waiting: a pipeline can feed
 * texts and read their ids as it goes (the input is never held whole),
 * and a file or a full pipe is not slowed by a write per line. */
static int run_jsonl(const tokvec_tokenizer *t, tokvec_tok_state *st, FILE *in,
                     unsigned flags, tokvec_tok_ids *ids)
{
    char *buf = NULL, *dec = NULL;
    size_t cap = 0, line = 0, dcap = 0;
    int code = 0;
    struct stat sb;
    int is_file = fstat(fileno(in), &sb) == 0 && S_ISREG(sb.st_mode);
    while (code == 0) {
        ssize_t len = getline(&buf, &cap, in);
        if (len < 0)
            break;
        line++;
        int rc = jsonl_line(t, st, buf, (size_t)len, flags, ids, &dec, &dcap,
                            stdout);
        if (rc == 0 && !more_input(in, is_file) && fflush(stdout) != 0)
            rc = -EIO;
        if (rc)
            code = jsonl_fail(rc, line);
    }
    if (code == 0 && ferror(in)) {
        fprintf(stderr, "tokvec: input: %s\n", strerror(errno));
        code = 1;
    }
    free(buf);
    free(dec);
    return code;
}

/* --- several threads over a file held in memory --- */

#define BLOCK_BYTES (256 * 1024) /* a block: lines, or text up to a cut */
#define WINDOW 4                 /* blocks in flight a worker */

typedef struct block {
    size_t start, end; /* bytes of the input */
    char *out;         /* its output (mem_open) */
    size_t out_len;
    size_t lines; /* lines done (--jsonl) */
    int rc;       /* 0, or what stopped it: jsonl_line's rc */
    int done;
} block;

typedef struct par {
    const tokvec_tokenizer *t;
    unsigned flags;
    int jsonl;
    const char *text;
    block *b;
    size_t nb, next, written; /* blocks: all, next to take, written */
    int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t window;
} par;

/* A block's output in memory: a FILE whose writes go to the end of a
 * buffer grown by realloc (a large one moves by remapping its pages: no
 * copy, no clearing). glibc's open_memstream copies and clears the whole
 * buffer at each doubling: most of the page faults of a one-line 10 MB
 * input were its. */
typedef struct membuf {
    char **p;
    size_t *n, cap;
} membuf;

static ssize_t mem_write(void *c, const char *s, size_t len)
{
    membuf *m = c;
    if (len > m->cap - *m->n) {
        size_t cap = m->cap ? m->cap : 1 << 16;
        while (cap - *m->n < len) {
            if (cap > SIZE_MAX / 2)
                return 0;
            cap *= 2;
        }
        char *g = realloc(*m->p, cap);
        if (!g)
            return 0; /* fopencookie: 0, an error */
        *m->p = g;
        m->cap = cap;
    }
    memcpy(*m->p + *m->n, s, len);
    *m->n += len;
    return (ssize_t)len;
}

static int mem_close(void *c)
{
    free(c);
    return 0;
}

/* A FILE writing to *p (*n bytes; both set to empty here), or NULL. */
static FILE *mem_open(char **p, size_t *n)
{
    membuf *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    *p = NULL;
    *n = 0;
    m->p = p;
    m->n = n;
    m->cap = 0;
    cookie_io_functions_t io = {.write = mem_write, .close = mem_close};
    FILE *f = fopencookie(m, "w", io);
    if (!f)
        free(m);
    return f;
}

/* Encodes block k (its own state and ids; output into memory). */
static void run_block(par *p, block *k, tokvec_tok_state *st,
                      tokvec_tok_ids *ids, char **dec, size_t *dcap)
{
    FILE *m = mem_open(&k->out, &k->out_len);
    if (!m) {
        k->rc = -ENOMEM;
        return;
    }
    const char *s = p->text;
    if (!p->jsonl) { /* a stretch between cuts: ids, a comma before each */
        k->rc = tokvec_tokenizer_encode(p->t, st, s + k->start,
                                        k->end - k->start, p->flags, ids);
        if (k->rc == 0)
            k->rc = print_list(ids->ids, ids->n, 0, "", "", m);
    }
    for (size_t i = k->start; p->jsonl && i < k->end && k->rc == 0;) {
        const char *nl = memchr(s + i, '\n', k->end - i);
        size_t e = nl ? (size_t)(nl - s) + 1 : k->end;
        k->rc = jsonl_line(p->t, st, s + i, e - i, p->flags, ids, dec, dcap,
                           m);
        k->lines += k->rc == 0;
        i = e;
    }
    if (fclose(m) != 0 && k->rc == 0)
        k->rc = -ENOMEM;
}

static void *worker(void *arg)
{
    par *p = arg;
    tokvec_tok_state *st = tokvec_tok_state_new();
    tokvec_tok_ids ids = {0};
    char *dec = NULL;
    size_t dcap = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next < p->nb &&
               p->next >= p->written + p->window)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop || p->next >= p->nb)
            break;
        block *k = &p->b[p->next++];
        pthread_mutex_unlock(&p->mu);
        if (st)
            run_block(p, k, st, &ids, &dec, &dcap);
        else
            k->rc = -ENOMEM;
        pthread_mutex_lock(&p->mu);
        k->done = 1;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    free(dec);
    tokvec_tok_ids_free(&ids);
    tokvec_tok_state_free(st);
    return NULL;
}

/* The blocks of text: lines (jsonl), else stretches between cuts. */
static block *cut_blocks(const tokvec_tokenizer *t, const char *s, size_t len,
                         int jsonl, size_t *nb)
{
    size_t n = 0, cap = len / BLOCK_BYTES + 2;
    block *b = calloc(cap, sizeof *b);
    for (size_t i = 0; b && i < len; n++) {
        size_t e = len - i > BLOCK_BYTES ? i + BLOCK_BYTES : len;
        if (e < len && jsonl) {
            const char *nl = memchr(s + e - 1, '\n', len - e + 1);
            e = nl ? (size_t)(nl - s) + 1 : len;
        } else if (e < len) {
            e = tokvec_tokenizer_cut(t, s, len, e);
        }
        b[n].start = i;
        b[n].end = e;
        i = e;
    }
    *nb = n;
    return b;
}

/* Encodes text[0..len) on threads, writing what the serial path would. */
static int run_par(const tokvec_tokenizer *t, const char *text, size_t len,
                   unsigned flags, int jsonl, int threads)
{
    par p = {.t = t, .text = text, .jsonl = jsonl};
    p.flags = jsonl ? flags : flags & ~(unsigned)TOKVEC_TOK_ADD_SPECIAL;
    p.window = (size_t)threads * WINDOW;
    p.b = cut_blocks(t, text, len, jsonl, &p.nb);
    if (!p.b) {
        fprintf(stderr, "tokvec: out of memory\n");
        return 1;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    int started = 0, code = 0, rc = 0;
    while (th && started < threads &&
           pthread_create(&th[started], NULL, worker, &p) == 0)
        started++;
    const int32_t *pre = NULL, *post = NULL;
    size_t npre = 0, npost = 0, lines = 0;
    int first = 1;
    if (!jsonl && (flags & TOKVEC_TOK_ADD_SPECIAL))
        tokvec_tokenizer_added(t, &pre, &npre, &post, &npost);
    if (!jsonl) {
        rc = print_list(pre, npre, 1, "[", "", stdout);
        first = npre == 0;
    }
    if (!started)
        rc = -ENOMEM;
    for (size_t i = 0; i < p.nb && rc == 0; i++) {
        block *k = &p.b[i];
        pthread_mutex_lock(&p.mu);
        while (!k->done)
            pthread_cond_wait(&p.cv, &p.mu);
        pthread_mutex_unlock(&p.mu);
        /* the first block's ids must not start with a comma */
        size_t skip = !jsonl && first && k->out_len ? 1 : 0;
        if (k->out_len > skip) {
            if (fwrite(k->out + skip, 1, k->out_len - skip, stdout) !=
                k->out_len - skip)
                rc = -EIO;
            first = 0;
        }
        free(k->out);
        k->out = NULL;
        if (k->rc && rc == 0) {
            code = jsonl ? jsonl_fail(k->rc, lines + k->lines + 1) : 0;
            rc = k->rc;
        }
        lines += k->lines;
        pthread_mutex_lock(&p.mu);
        p.written = i + 1;
        pthread_cond_broadcast(&p.cv);
        pthread_mutex_unlock(&p.mu);
    }
    if (!jsonl && rc == 0)
        rc = print_list(post, npost, first, "", "]\n", stdout);
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    for (size_t i = 0; i < p.nb; i++)
        free(p.b[i].out);
    free(p.b);
    free(th);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    if (rc && !code) {
        fprintf(stderr, "tokvec: tokenize: %s\n", tokvec_strerror(rc));
        code = 1;
    }
    return code;
}

/* A regular file from its start, read whole into memory (*buf NULL: not
 * one, or empty: the serial path). Read, not mapped: a mapped file that
 * is truncated while the workers run is a SIGBUS; read() only returns
 * less. The size is a hint: a file that grows is read to its end. */
static int read_input(FILE *in, char **buf, size_t *len)
{
    struct stat sb;
    int fd = fileno(in);
    *buf = NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
        lseek(fd, 0, SEEK_CUR) != 0)
        return 0;
    size_t cap = (size_t)sb.st_size + 1, n = 0;
    char *b = malloc(cap);
    if (!b)
        return -ENOMEM;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return -ENOMEM;
            }
            b = nb;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(b);
            return -EIO;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n == 0) { /* emptied meanwhile: at its end, as the serial path */
        free(b);
        return 0;
    }
    *buf = b;
    *len = n;
    return 0;
}

int tv_cli_text_ids(const char *tok_path, const char *text, int special,
                    int64_t **ids, int64_t *n)
{
    char buf[4096];
    int code = tokenizer_path("lookup", tok_path, buf, sizeof buf, &tok_path);
    if (code)
        return code;
    char err[512] = "";
    tokvec_tokenizer_opts topts = {.errbuf = err, .errlen = sizeof err};
    tokvec_tokenizer *t = NULL;
    if (tokvec_tokenizer_open(tok_path, &topts, &t) < 0) {
        tv_log_fail("%s", err);
        return 2;
    }
    tokvec_tok_ids out = {0};
    tokvec_tok_state *st = tokvec_tok_state_new();
    int rc = st ? tokvec_tokenizer_encode(t, st, text, strlen(text),
                                          special ? TOKVEC_TOK_SPECIAL : 0,
                                          &out)
                : -ENOMEM;
    int64_t *v = rc == 0 ? malloc((out.n + 1) * sizeof *v) : NULL;
    if (v) {
        for (size_t k = 0; k < out.n; k++)
            v[k] = out.ids[k];
        free(*ids);
        *ids = v;
        *n = (int64_t)out.n;
    }
    tokvec_tok_ids_free(&out);
    tokvec_tok_state_free(st);
    tokvec_tokenizer_close(t);
    if (!v) {
        fprintf(stderr, "tokvec: out of memory\n");
        return 1;
    }
    return 0;
}

/* --pattern names the split of a .tiktoken file, which holds only ranks;
 * every other format brings its own (encoder.json: GPT-2's; tokenizer.json:
 * its pre_tokenizer), so the option would be silently ignored there: 0,
 * or EXIT_USAGE after saying so. */
static int pattern_applies(const tokvec_tokenizer *t, const char *pattern,
                           const char *path)
{
    tokvec_tokenizer_info info;
    if (!pattern)
        return 0;
    tokvec_tokenizer_get_info(t, &info);
    if (!strcmp(info.format, "tiktoken"))
        return 0;
    if (!strcmp(info.format, "tokenizer.json"))
        return tv_cli_fail(EXIT_USAGE,
                           "tokenize: --pattern is for .tiktoken files: "
                           "%s is a tokenizer.json (%s), split by its own "
                           "pre_tokenizer; leave --pattern out",
                           path, info.model);
    return tv_cli_fail(EXIT_USAGE,
                       "tokenize: --pattern is for .tiktoken files: %s is "
                       "GPT-2's encoder.json, always split by the gpt2 "
                       "pattern; leave --pattern out",
                       path);
}

int cmd_tokenize(int argc, char **argv)
{
    static const char *const flags[] = {"help",        "no-special", "jsonl",
                                        "add-special", "offsets",    NULL};
    static const char *const known[] = {"help",       "tokenizer",   "pattern",
                                        "no-special", "add-special", "offsets",
                                        "jsonl",      "threads",     NULL};
    opts_t o = {
        .argc = argc, .argv = argv, .i = 1, .flags = flags, .known = known};
    const char *tok_path = NULL, *in_path = NULL;
    tokvec_tokenizer_opts topts = {0};
    unsigned flags_enc = TOKVEC_TOK_SPECIAL;
    int jsonl = 0, r;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t threads = ncpu > 0 ? ncpu : 1;
    char buf[4096];
    for (r = tv_cli_opt_next(&o); r > 0; r = tv_cli_opt_next(&o)) {
        if (!o.name) {
            if (in_path)
                return tv_cli_fail(EXIT_USAGE,
                                   "tokenize: one FILE only (see tokvec "
                                   "tokenize --help)");
            in_path = o.value;
        } else if (!strcmp(o.name, "help")) {
            fputs(tokenize_usage, stdout);
            printf("\nDATA_DIR: %s\n", tv_data_dir());
            return 0;
        } else if (!strcmp(o.name, "no-special")) {
            flags_enc &= ~(unsigned)TOKVEC_TOK_SPECIAL;
        } else if (!strcmp(o.name, "add-special")) {
            flags_enc |= TOKVEC_TOK_ADD_SPECIAL;
        } else if (!strcmp(o.name, "offsets")) {
            flags_enc |= TOKVEC_TOK_OFFSETS;
        } else if (!strcmp(o.name, "jsonl")) {
            jsonl = 1;
        } else if (!strcmp(o.name, "tokenizer")) {
            tok_path = o.value;
        } else if (!strcmp(o.name, "pattern")) {
            topts.pattern = o.value;
        } else if (!strcmp(o.name, "threads")) {
            if (tv_cli_parse_i64(o.value, 1, 1024, &threads) < 0)
                return tv_cli_fail(EXIT_USAGE,
                                   "tokenize: --threads %s: not a number "
                                   "from 1 to 1024",
                                   o.value);
        } else {
            return tv_cli_unknown_option("tokenize", o.name, known);
        }
    }
    if (r < 0)
        return tv_cli_opt_fail("tokenize", &o);
    int code = tokenizer_path("tokenize", tok_path, buf, sizeof buf,
                              &tok_path);
    if (code)
        return code;
    char err[512] = "";
    topts.errbuf = err;
    topts.errlen = sizeof err;
    tokvec_tokenizer *t = NULL;
    int rc = tokvec_tokenizer_open(tok_path, &topts, &t);
    if (rc < 0) {
        tv_log_fail("%s", err);
        return 2;
    }
    code = pattern_applies(t, topts.pattern, tok_path);
    if (code) {
        tokvec_tokenizer_close(t);
        return code;
    }
    FILE *in = stdin;
    if (in_path && strcmp(in_path, "-"))
        in = fopen(in_path, "rb");
    if (!in) {
        tv_log_fail("%s: %s", in_path, strerror(errno));
        tokvec_tokenizer_close(t);
        return 2;
    }
    char *text = NULL;
    size_t len = 0;
    tokvec_tok_ids ids = {0};
    tokvec_tok_state *st = tokvec_tok_state_new();
    rc = st ? 0 : -ENOMEM;
    if (threads > 1 && rc == 0)
        rc = read_input(in, &text, &len);
    if (text) {
        code = run_par(t, text, len, flags_enc, jsonl, (int)threads);
        jsonl = 1; /* done: nothing more to print */
    } else if (rc == 0 && jsonl)
        code = run_jsonl(t, st, in, flags_enc, &ids);
    else if (rc == 0)
        rc = read_all(in, &text, &len);
    if (rc == 0 && !jsonl) {
        rc = tokvec_tokenizer_encode(t, st, text, len, flags_enc, &ids);
        if (rc == 0)
            rc = print_ids(&ids, stdout);
    }
    if (rc == 0 && fflush(stdout) != 0)
        rc = -EIO;
    if (rc) {
        fprintf(stderr, "tokvec: tokenize: %s\n", tokvec_strerror(rc));
        code = 1;
    }
    if (in != stdin)
        fclose(in);
    free(text);
    tokvec_tok_ids_free(&ids);
    tokvec_tok_state_free(st);
    tokvec_tokenizer_close(t);
    return code;
}
