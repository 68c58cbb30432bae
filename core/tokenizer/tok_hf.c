/* tok_hf.c -- what every stage of a Hugging Face pipeline (tok_hf.h)
 * shares, below them all: freeing a state's pipeline buffers, which
 * tokvec_tok_state_free (tok_bpe.c) calls for any tokenizer.
 * Threads: a tv_hf_buf belongs to one tokvec_tok_state, so to one thread.
 */
#include <stdlib.h>

#include "tok_hf.h"

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
    free(b);
}
