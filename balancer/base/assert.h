/* Internal invariants: PLB_ASSERT(c) aborts with file:line and the failed
 * condition. For what can only be wrong through a bug in plb; a user's
 * mistake gets a message that says how to fix it instead. */
#ifndef PLB_BASE_ASSERT_H
#define PLB_BASE_ASSERT_H

#define PLB_ASSERT(c)                                                        \
	do {                                                                  \
		if (!(c))                                                     \
			plb__assert_fail(#c, __FILE__, __LINE__);             \
	} while (0)
_Noreturn void plb__assert_fail(const char *cond, const char *file, int line);

#endif
