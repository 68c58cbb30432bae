/* suggest.h -- "did you mean --port?": the closest of a list of names to a
 * misspelt one, for the messages of unknown options, keys and variables.
 *
 * Names compare case-insensitively with '-' and '_' as the same character
 * (a flag "--max-body-byte", a key "max_body_byte" and a variable
 * "TOKVEC_MAX_BODY_BYTE" all find "max_body_bytes"). Pure functions of
 * their arguments: any thread.
 */
#ifndef TV_SUGGEST_H
#define TV_SUGGEST_H

#include <stddef.h>

/* Optimal string alignment distance between a[0..na) and b[0..nb):
 * insertions, deletions, substitutions and swaps of two neighbours cost 1
 * ("prot" -> "port" is 1). Names longer than 63 bytes: SIZE_MAX. */
size_t tv_edit_distance(const char *a, size_t na, const char *b, size_t nb);

/* The name in names[0..count) closest to word[0..n), or NULL when none is
 * close enough to be a likely typo: a distance of at most 2 and at most a
 * third of the longer name, or word cut short (a prefix of the name, of 3
 * bytes or more and at least half of it: "max-body" -> "max_body_bytes").
 * Among those the least distance wins; ties go to the earlier name. */
const char *tv_suggest(const char *word, size_t n, const char *const *names,
                       size_t count);

#endif
