/* tok_hf.c -- what every stage of a Hugging Face pipeline (tok_hf.h)
 * shares, below them all: the one-line refusal of a stage read from
 * tokenizer.json, and freeing a state's pipeline buffers, which
 * tokvec_tok_state_free (tok_bpe.c) calls for any tokenizer.
 * Threads: a tv_hf_buf belongs to one tokvec_tok_state, so to one thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tok_hf.h"

int tv_hf_bad(char *err, size_t errlen, const char *where, const char *what)
{
    snprintf(err, errlen, "%s: %s", where, what);
    return TOKVEC_E_TOKENIZER;
}

int tv_hf_buf_get(tokvec_tok_state *s)
{
    if (!s->hf)
        s->hf = calloc(1, sizeof *s->hf);
    return s->hf ? 0 : -ENOMEM;
}

void tv_hf_buf_free(tv_hf_buf *b)
{
    if (!b)
        return;
    for (int k = 0; k < 2; k++) {
        free(b->t[k].cp);
        free(b->t[k].a0);
        free(b->t[k].a1);
        free(b->w[k]);
    }
    free(b->u8);
    free(b->u8ch);
    free(b->ph);
    tv_uni_work_free(b->uw);
    tv_uni_toks_free(&b->ut);
    free(b->nt.cp);
    free(b->nt.a0);
    free(b->nt.a1);
    free(b->nu8);
    free(b->nu8ch);
    free(b->hits.hit);
    free(b->hits2.hit);
    free(b);
}
