/* A worker's store of kept input (runtime/core/resident.c): blocks sent in
 * parts, some kept; a block is read from the parts sent and the store,
 * copied only where it spans several kept parts; between runs,
 * plb__store_merge joins adjacent kept parts into one buffer, after which
 * such a block is read in place with the same bytes, and the messages the
 * parts came in are freed (an ASan build sees a leak or a read of one). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "runtime/core/resident.h"
#include "runtime/transport/transport.h"

#define UNIT 12                 /* bytes of input per unit */

/* The byte that unit u's input has at position k. */
static char byte_of(uint64_t u, int k)
{
	return (char)(u * 7 + (uint64_t)k * 13 + 1);
}

/* A DISPATCH of [off, off + units) that sends the n parts seg (with their
 * input) and relies on the store for the rest; kept with PLB__F_KEEP. */
static void *dispatch(uint64_t off, uint64_t units, const struct plb__range *seg, int n, int keep)
{
	size_t len = sizeof(struct plb__segs) + (size_t)n * sizeof *seg;
	for (int k = 0; k < n; k++)
		len += seg[k].len * UNIT;
	void *m = plb__msg_alloc(PLB__MSG_DISPATCH, len);
	assert_non_null(m);
	struct plb__hdr *h = plb__msg_hdr(m);
	h->offset = off;
	h->units = units;
	h->flags = PLB__F_SEGMENTS | (keep ? PLB__F_KEEP : 0);
	char *d = plb__msg_data(m);
	struct plb__segs hd = {(uint64_t)n, 0};
	memcpy(d, &hd, sizeof hd);
	memcpy(d + sizeof hd, seg, (size_t)n * sizeof *seg);
	char *at = d + sizeof hd + (size_t)n * sizeof *seg;
	for (int k = 0; k < n; k++)
		for (uint64_t u = seg[k].off; u < seg[k].off + seg[k].len; u++)
			for (int b = 0; b < UNIT; b++)
				*at++ = byte_of(u, b);
	return m;
}

static void take(struct plb__store *s, void *m)
{
	char err[256] = "";
	int rc = plb__store_take(s, m, UNIT, err, sizeof err);
	if (rc)
		fail_msg("take: %s", err);
}

/* A block of [off, off + units) sent whole and kept. */
static void keep(struct plb__store *s, uint64_t off, uint64_t units)
{
	take(s, dispatch(off, units, &(struct plb__range){off, units}, 1, 1));
}

/* Reads block [off, off + units) (all kept) and checks its bytes;
 * returns whether it had to be copied. */
static int read_block(struct plb__store *s, uint64_t off, uint64_t units)
{
	void *m = dispatch(off, units, NULL, 0, 0);
	take(s, m);
	const void *in = NULL;
	void *tmp = NULL;
	assert_int_equal(plb__store_input(s, m, UNIT, &in, &tmp), 0);
	assert_non_null(in);
	const char *p = in;
	for (uint64_t u = off; u < off + units; u++)
		for (int b = 0; b < UNIT; b++)
			if (*p++ != byte_of(u, b))
				fail_msg("unit %llu byte %d wrong", (unsigned long long)u, b);
	int copied = tmp != NULL;
	free(tmp);
	plb__msg_free(m);
	return copied;
}

static void test_merge_reads_in_place(void **state)
{
	(void)state;
	struct plb__store s;
	assert_int_equal(plb__store_init(&s), 0);
	/* run 1: [0, 100) kept in three blocks; [200, 250) apart; [250, 300)
	 * sent in two parts around kept [260, 270) */
	keep(&s, 0, 10);
	keep(&s, 10, 40);
	keep(&s, 50, 50);
	keep(&s, 200, 50);
	keep(&s, 260, 10);
	struct plb__range two[2] = {{250, 10}, {270, 30}};
	take(&s, dispatch(250, 50, two, 2, 1));
	assert_int_equal(s.part.n, 7);
	assert_int_equal(s.nmsg, 6);
	/* run 2 reads across kept parts: a copy */
	assert_true(read_block(&s, 5, 90));
	assert_true(read_block(&s, 240, 40));
	assert_false(read_block(&s, 20, 20));   /* inside one part */

	/* between runs: [0, 100) and [200, 300) become one part each */
	double bytes = plb__store_merge(&s, UNIT);
	assert_true(bytes == 200.0 * UNIT);
	assert_int_equal(s.part.n, 2);
	assert_int_equal((int)s.part.units, 200);
	assert_int_equal(s.nmsg, 2);            /* the six freed, two new */
	assert_false(read_block(&s, 5, 90));
	assert_false(read_block(&s, 0, 100));
	assert_false(read_block(&s, 240, 40));
	/* nothing left to join: nothing copied, nothing freed */
	assert_true(plb__store_merge(&s, UNIT) == 0);
	assert_int_equal(s.part.n, 2);
	assert_int_equal(s.nmsg, 2);

	/* a part kept later beside a merged one joins it at the next merge */
	keep(&s, 100, 20);
	assert_true(read_block(&s, 90, 30));
	assert_true(plb__store_merge(&s, UNIT) == 120.0 * UNIT);
	assert_int_equal(s.part.n, 2);
	assert_int_equal(s.nmsg, 2);
	assert_false(read_block(&s, 90, 30));
	plb__store_fini(&s);
}

/* A store whose parts are all apart: a merge changes nothing. */
static void test_merge_leaves_parts_apart(void **state)
{
	(void)state;
	struct plb__store s;
	assert_int_equal(plb__store_init(&s), 0);
	keep(&s, 0, 10);
	keep(&s, 20, 10);
	const char *d0 = s.data[0], *d1 = s.data[1];
	assert_true(plb__store_merge(&s, UNIT) == 0);
	assert_int_equal(s.part.n, 2);
	assert_int_equal(s.nmsg, 2);
	assert_ptr_equal(s.data[0], d0);
	assert_ptr_equal(s.data[1], d1);
	assert_false(read_block(&s, 20, 10));
	plb__store_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_reads_in_place),
		cmocka_unit_test(test_merge_leaves_parts_apart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
