/* Message buffers (runtime/transport/msgbuf.c): large freed buffers are kept and
 * reused, with a header as fresh as a new one's, or grown for a larger
 * message; small ones are not kept;
 * the cache holds at most its count, drops its smallest first, and
 * plb__msg_cache_clear empties it and says how it did; plb__populate maps
 * the whole pages inside a range and leaves what they hold as it was. */
#define _DEFAULT_SOURCE         /* mmap's MAP_ANONYMOUS, mincore */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sys/mman.h>
#include <unistd.h>

#include "runtime/transport/transport.h"

#define BIG ((size_t)1 << 20)

static int setup(void **state)
{
	(void)state;
	plb__msg_cache_clear(NULL);
	return 0;
}

static void test_reuse_resets_header(void **state)
{
	(void)state;
	void *a = plb__msg_alloc(7, BIG);
	assert_non_null(a);
	struct plb__hdr *h = plb__msg_hdr(a);
	assert_int_equal(h->type, 7);
	assert_int_equal(h->len, BIG);
	h->id = 42;
	h->status = -3;
	h->exec_s = 1.5;
	memset(plb__msg_data(a), 0xab, BIG);
	plb__msg_free(a);

	void *b = plb__msg_alloc(3, BIG / 2);   /* fits in the kept one */
	assert_ptr_equal(b, a);
	h = plb__msg_hdr(b);
	assert_int_equal(h->type, 3);
	assert_int_equal(h->len, BIG / 2);
	assert_int_equal(h->id, 0);
	assert_int_equal(h->status, 0);
	assert_true(h->exec_s == 0);
	plb__msg_free(b);

	struct plb__msg_cache_stats st;
	plb__msg_cache_clear(&st);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.kept, 1);
	assert_true(st.kept_bytes >= BIG + PLB__HDR_SIZE);
	plb__msg_cache_clear(&st);              /* cleared: nothing kept, no counts */
	assert_int_equal(st.kept, 0);
	assert_int_equal(st.hits + st.misses, 0);
}

/* A small buffer is not kept; a large one too small for the next message
 * is grown for it (its pages stay mapped) rather than a new one mapped
 * beside it. */
static void test_small_not_kept_and_too_small_grown(void **state)
{
	(void)state;
	void *s = plb__msg_alloc(1, 100);
	assert_non_null(s);
	plb__msg_free(s);
	void *a = plb__msg_alloc(1, BIG);
	plb__msg_free(a);
	void *b = plb__msg_alloc(1, 2 * BIG);   /* larger than the kept one */
	assert_non_null(b);
	assert_int_equal(plb__msg_hdr(b)->len, 2 * BIG);
	memset(plb__msg_data(b), 0x5a, 2 * BIG);        /* all of it is there */
	struct plb__msg_cache_stats st;
	plb__msg_cache_clear(&st);
	assert_int_equal(st.kept, 0);           /* the 1 MB one became b */
	plb__msg_free(b);
	plb__msg_free(NULL);
	plb__msg_cache_clear(&st);
	assert_int_equal(st.kept, 1);
	assert_true(st.kept_bytes >= 2 * BIG + PLB__HDR_SIZE);
}

/* More freed buffers than the cache holds: the smallest go, and the next
 * allocations get the largest, best fit first. */
static void test_full_drops_smallest(void **state)
{
	(void)state;
	enum { N = 12 };
	void *m[N];
	for (int i = 0; i < N; i++) {
		m[i] = plb__msg_alloc(1, BIG * (size_t)(i + 1));
		assert_non_null(m[i]);
	}
	for (int i = 0; i < N; i++)
		plb__msg_free(m[i]);
	struct plb__msg_cache_stats st;
	void *x = plb__msg_alloc(1, BIG);       /* best fit of those kept: the 5 MB one */
	assert_ptr_equal(x, m[N - 8]);
	void *y = plb__msg_alloc(1, BIG * N);   /* the largest */
	assert_ptr_equal(y, m[N - 1]);
	plb__msg_free(x);
	plb__msg_free(y);
	plb__msg_cache_clear(&st);
	assert_int_equal(st.kept, 8);
	assert_int_equal(st.hits, 2);
}

/* How many of the n pages of size ps at p are resident. */
static size_t resident(const char *p, size_t n, size_t ps)
{
	unsigned char v[64];
	assert_true(n <= sizeof v);
	assert_int_equal(mincore((void *)p, n * ps, v), 0);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += v[i] & 1;
	return k;
}

static void test_populate(void **state)
{
	(void)state;
	enum { PAGES = 16 };
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, PAGES * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(resident(p, PAGES, ps), 0);    /* fresh: nothing mapped yet */
	p[3 * ps + 5] = 'x';                            /* one page written before */
	/* from mid page 1 to mid page 9: the whole pages inside are 2..8 */
	int rc = plb__populate(p + ps + 100, 8 * ps);
	if (rc) {
		/* a kernel without MADV_POPULATE_WRITE (before 5.14) refuses it */
		assert_int_equal(errno, EINVAL);
		print_message("plb__populate refused (kernel before 5.14): only the contents checked\n");
	} else {
		assert_int_equal(resident(p + 2 * ps, 7, ps), 7);
		assert_int_equal(resident(p, 2, ps), 0);        /* partly covered: left */
		assert_int_equal(resident(p + 9 * ps, PAGES - 9, ps), 0);
	}
	assert_int_equal(p[3 * ps + 5], 'x');
	for (size_t i = 2 * ps; i < 9 * ps; i++)
		if (i != 3 * ps + 5)
			assert_int_equal(p[i], 0);
	assert_int_equal(plb__populate(p + 10, 100), 0); /* no whole page inside: nothing to do */
	assert_int_equal(resident(p, 1, ps), 0);
	assert_int_equal(munmap(p, PAGES * ps), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_reuse_resets_header, setup),
		cmocka_unit_test_setup(test_small_not_kept_and_too_small_grown, setup),
		cmocka_unit_test_setup(test_full_drops_smallest, setup),
		cmocka_unit_test(test_populate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
