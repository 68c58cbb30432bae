/* embed_text.h -- private to the HTTP front end: text inputs of POST
 * /embed (contract section 7). The parser (request.c) keeps the inputs as
 * rows (tv_text_row); a first job on the worker pool tokenizes them into
 * an ordinary id request (tv_embed_text_resolve), which then goes the way
 * of every /embed request (embed_job.c). See embed_text.c.
 */
#ifndef TV_EMBED_TEXT_H
#define TV_EMBED_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "request.h"
#include "tokvec_model.h"
#include "tokvec_table.h"
#include "tokvec_tokenizer.h"

/* Turns r's rows into r->ids, batch, seq (and r->targets with windows),
 * tokenizing each text with r->text's options on the calling thread (a
 * worker). Rules, in order: max_length windows of the one text (422
 * text_too_short under L + 1 tokens; 400 invalid_request for windows of
 * more than one input); else each row as given, a text cut to
 * context_length - start_position (or max_tokens) when "truncate" (from
 * the end for "left"); rows of different lengths padded with pad_id
 * (their lengths in r->lens), else 422 ragged_batch; 413 past max_batch
 * or max_tokens. 0, or -1 with *e.
 *
 * A pooled request (r->pool) instead keeps every row as its own: a text's
 * ids are, with a Model2Vec model (model non-NULL, its layout), those of
 * StaticModel.encode -- the text cut to M x median token length code
 * points (tokvec_model_text_cut; M = lim->max_sentence_tokens), the
 * unknown token's ids dropped, the first M kept -- and otherwise all of
 * them; id lists are used as given. "" is a 400; a text left with no ids
 * pools to zeros. The rows go one after another into r->ids with r->offs;
 * 413 when they hold more than max_tokens ids in all. tok may be NULL
 * when no row is a text. */
int tv_embed_text_resolve(const tokvec_tokenizer *tok, const tokvec_table *t,
                          const tokvec_model *model, const tv_limits *lim,
                          tv_request *r, tv_error *e);

/* The bytes tv_embed_ids_json may write for r (input_ids, and target_ids
 * with windows; pooled: one list per input, of its ids). */
size_t tv_embed_ids_bound(const tv_request *r);

/* Writes ,"input_ids":[[...]] (and ,"target_ids":[[...]]) at p; returns
 * the bytes written. */
size_t tv_embed_ids_json(char *p, const tv_request *r);

/* A padded batch's (r->lens; never pooled) ,"attention_mask":[[1,1,0],...]
 * (B x S: 1 for a row's real tokens, 0 for its padding): the bytes it may
 * take, and the writer (returns the bytes written). Both 0 when r has no
 * padded rows. */
size_t tv_embed_mask_bound(const tv_request *r);
size_t tv_embed_mask_json(char *p, const tv_request *r);

#endif
