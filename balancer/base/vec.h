/* A growing array, the one pattern every layer repeats: append an element,
 * doubling the room when it is full. Pure libc. */
#ifndef PLB_BASE_VEC_H
#define PLB_BASE_VEC_H

#include <stddef.h>

#include "plb_errors.h"

/* Appends x to the array *v of *n (capacity *cap) elements of size sz.
 * Returns 0 or PLB_ENOMEM (then nothing changed). */
PLB_WUR int plb__push(void *v, size_t *n, size_t *cap, size_t sz, const void *x);

#endif
