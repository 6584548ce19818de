/* A growing array, the one pattern every layer repeats: append an element,
 * doubling the room when it is full; and a binary heap on one. Pure libc. */
#ifndef PLB_BASE_VEC_H
#define PLB_BASE_VEC_H

#include <stddef.h>

#include "plb_errors.h"

/* Appends x to the array *v of *n (capacity *cap) elements of size sz.
 * Returns 0 or PLB_ENOMEM (then nothing changed). */
PLB_WUR int plb__push(void *v, size_t *n, size_t *cap, size_t sz, const void *x);

/* A binary heap on such an array, the element before(a, b) says comes
 * first on top (v[0]): x added (0 or PLB_ENOMEM), or the top taken out
 * into *top (*n > 0). Elements of at most 64 bytes. */
PLB_WUR int plb__heap_push(void *v, size_t *n, size_t *cap, size_t sz, const void *x,
			   int (*before)(const void *, const void *));
void plb__heap_pop(void *v, size_t *n, size_t sz, void *top,
		   int (*before)(const void *, const void *));

#endif
