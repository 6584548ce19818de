/* Sets of units as sorted ranges (ranges.h). */
#include <stdlib.h>
#include <string.h>

#include "balancer/ranges.h"

int plb__ranges_find(const struct plb__ranges *s, uint64_t off)
{
	int lo = 0, hi = s->n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (s->r[mid].off + s->r[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int plb__ranges_add(struct plb__ranges *s, uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	uint64_t end = off + len, had = 0;
	/* [i, j): the ranges it overlaps or touches (one ending at off too) */
	int i = off ? plb__ranges_find(s, off - 1) : 0, j = i;
	for (; j < s->n && s->r[j].off <= end; j++) {
		if (s->r[j].off < off)
			off = s->r[j].off;
		if (s->r[j].off + s->r[j].len > end)
			end = s->r[j].off + s->r[j].len;
		had += s->r[j].len;
	}
	if (i == j) {
		if (s->n == s->cap) {
			int cap = s->cap ? 2 * s->cap : 8;
			struct plb__range *r = realloc(s->r, (size_t)cap * sizeof *r);
			if (!r)
				return PLB_ENOMEM;
			s->r = r;
			s->cap = cap;
		}
		memmove(&s->r[i + 1], &s->r[i], (size_t)(s->n - i) * sizeof *s->r);
		s->n++;
	} else {
		memmove(&s->r[i + 1], &s->r[j], (size_t)(s->n - j) * sizeof *s->r);
		s->n -= j - i - 1;
	}
	s->r[i] = (struct plb__range){off, end - off};
	s->units += end - off - had;
	return 0;
}

int plb__ranges_gaps(const struct plb__ranges *s, uint64_t off, uint64_t len,
		     struct plb__range *out, int max, uint64_t *units)
{
	uint64_t at = off, end = off + len, lack = 0;
	int n = 0;
	for (int i = plb__ranges_find(s, off); at < end; i++) {
		uint64_t next = i < s->n && s->r[i].off < end ? s->r[i].off : end;
		if (next > at) {
			if (n < max)
				out[n] = (struct plb__range){at, next - at};
			lack += next - at;
			n++;
		}
		if (i >= s->n || s->r[i].off >= end)
			break;
		at = s->r[i].off + s->r[i].len;
	}
	if (units)
		*units = lack;
	return n;
}

void plb__ranges_clear(struct plb__ranges *s)
{
	s->n = 0;
	s->units = 0;
}

void plb__ranges_free(struct plb__ranges *s)
{
	free(s->r);
	*s = (struct plb__ranges){0};
}
