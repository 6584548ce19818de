/* The nearest word: for "did you mean" in messages about a mistyped
 * option or key. Pure libc. */
#ifndef PLB_BASE_WORDS_H
#define PLB_BASE_WORDS_H

/* The number of single-character insertions, deletions and substitutions
 * that turn a into b (Levenshtein), counted up to 99. */
int plb__edit_distance(const char *a, const char *b);

/* Of the n words cand (NULL entries skipped), the one nearest w, if it is
 * near enough to be what was meant: at most a third of w's length away
 * (at least 1); the first of equals. Else NULL. */
const char *plb__nearest(const char *w, const char *const *cand, int n);

#endif
