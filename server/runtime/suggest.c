/* suggest.c -- the closest name to a misspelt one (see suggest.h).
 *
 * What must hold: bounded work and stack (names over 63 bytes are never
 * suggested nor compared), no allocation; pure, so any thread may call.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "suggest.h"

#define NAME_MAX_LEN 63

static int fold(char c)
{
    return c == '-' ? '_' : tolower((unsigned char)c);
}

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

size_t tv_edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
    /* d[i][j]: distance of a[0..i) and b[0..j). */
    size_t d[NAME_MAX_LEN + 1][NAME_MAX_LEN + 1];
    if (na > NAME_MAX_LEN || nb > NAME_MAX_LEN)
        return SIZE_MAX;
    for (size_t i = 0; i <= na; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            size_t cost = fold(a[i - 1]) != fold(b[j - 1]);
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1,
                           d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
                fold(a[i - 2]) == fold(b[j - 1]) &&
                d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1;
        }
    return d[na][nb];
}

/* word[0..n) starts name (folded as in the distance). */
static bool is_prefix(const char *word, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!name[i] || fold(word[i]) != fold(name[i]))
            return false;
    return true;
}

const char *tv_suggest(const char *word, size_t n, const char *const *names,
                       size_t count)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < count; i++) {
        size_t m = strlen(names[i]);
        size_t d = tv_edit_distance(word, n, names[i], m);
        size_t longer = n > m ? n : m;
        bool typo = d <= 2 && 3 * d <= longer;
        bool cut = n >= 3 && 2 * n >= m && n < m &&
                   is_prefix(word, n, names[i]);
        if ((typo || cut) && d < best_d) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}
