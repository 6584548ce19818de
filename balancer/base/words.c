/* The nearest word (see words.h). */
#include <string.h>

#include "balancer/base/words.h"

int plb__edit_distance(const char *a, const char *b)
{
	enum { MAX = 99, LEN = 128 };
	size_t la = strlen(a), lb = strlen(b);
	if (la >= LEN || lb >= LEN)
		return MAX;
	int row[LEN];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb] < MAX ? row[lb] : MAX;
}

const char *plb__nearest(const char *w, const char *const *cand, int n)
{
	const char *best = NULL;
	int bd = 0, most = (int)strlen(w) / 3;
	if (most < 1)
		most = 1;
	for (int i = 0; i < n; i++) {
		if (!cand[i])
			continue;
		int d = plb__edit_distance(w, cand[i]);
		if (d <= most && (!best || d < bd)) {
			best = cand[i];
			bd = d;
		}
	}
	return best;
}
