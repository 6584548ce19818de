/* Matching config [node] sections to worker ranks: host matches first,
 * then host = * sections in file order; every mismatch is an error naming
 * the section (file:line) or the rank. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/config/config.h"

static void load(const char *text, struct plb__config *c)
{
	char err[512];
	assert_int_equal(plb__config_load_text("n.ini", text, strlen(text), c, err, sizeof err), 0);
}

/* Named hosts go to their ranks wherever they are; * sections to the rest
 * in file order; short and fully qualified names match. */
static void test_assign_order(void **state)
{
	(void)state;
	struct plb__config c;
	load("[run]\nunits = 10\n"
	     "[node any1]\nhost = *\ncpu = 1\n"
	     "[node b]\nhost = b.cluster\ncpu = 1\n"
	     "[node any2]\ncpu = 1\n"
	     "[node a]\nhost = a\ncpu = 1\n", &c);
	const char *hosts[] = {"x", "a.cluster", "b", "y"};
	int assign[4];
	char err[512] = "";
	assert_int_equal(plb__nodes_assign(&c, hosts, 4, 0, assign, err, sizeof err), 0);
	assert_int_equal(assign[1], 3);         /* a.cluster -> [node a] */
	assert_int_equal(assign[2], 1);         /* b -> [node b] (b.cluster) */
	assert_int_equal(assign[0], 0);         /* then * in file order */
	assert_int_equal(assign[3], 2);
	plb__config_fini(&c);
}

/* Too few ranks names the section left over; too many names the rank; a
 * host nobody runs on names its host line. */
static void test_assign_errors(void **state)
{
	(void)state;
	struct plb__config c;
	int assign[3];
	char err[512];
	const char *hosts[] = {"h1", "h2", "h3"};

	load("[run]\nunits = 10\n[node a]\ncpu = 1\n[node b]\ncpu = 1\n", &c);
	assert_int_equal(plb__nodes_assign(&c, hosts, 1, 0, assign, err, sizeof err), PLB_ECONFIG);
	assert_non_null(strstr(err, "n.ini:5: [node b] gets no worker rank"));
	assert_non_null(strstr(err, "mpirun -np 3"));
	assert_int_equal(plb__nodes_assign(&c, hosts, 3, 0, assign, err, sizeof err), PLB_ECONFIG);
	assert_non_null(strstr(err, "worker rank 3 (host h3) gets no [node] section"));
	plb__config_fini(&c);

	load("[run]\nunits = 10\n[node a]\ncpu = 1\nhost = elsewhere\n", &c);
	assert_int_equal(plb__nodes_assign(&c, hosts, 1, 0, assign, err, sizeof err), PLB_ECONFIG);
	assert_non_null(strstr(err, "n.ini:5: [node a] host = elsewhere"));
	plb__config_fini(&c);

	/* two fully qualified names that differ do not match */
	load("[run]\nunits = 10\n[node a]\ncpu = 1\nhost = a.one\n", &c);
	const char *fq[] = {"a.two"};
	assert_int_equal(plb__nodes_assign(&c, fq, 1, 0, assign, err, sizeof err), PLB_ECONFIG);
	plb__config_fini(&c);
}

/* One process: the first section naming this host, else the first *; the
 * others are not used and are no error. */
static void test_assign_single(void **state)
{
	(void)state;
	struct plb__config c;
	int assign[1];
	char err[512];
	const char *me[] = {"ws"};

	load("[run]\nunits = 10\n[node a]\ncpu = 1\n[node b]\nhost = ws.lab\ncpu = 1\n[node c]\ncpu = 1\n", &c);
	assert_int_equal(plb__nodes_assign(&c, me, 1, 1, assign, err, sizeof err), 0);
	assert_int_equal(assign[0], 1);
	const char *other[] = {"elsewhere"};
	assert_int_equal(plb__nodes_assign(&c, other, 1, 1, assign, err, sizeof err), 0);
	assert_int_equal(assign[0], 0);
	plb__config_fini(&c);

	load("[run]\nunits = 10\n[node b]\nhost = ws2\ncpu = 1\n", &c);
	assert_int_equal(plb__nodes_assign(&c, other, 1, 1, assign, err, sizeof err), PLB_ECONFIG);
	assert_non_null(strstr(err, "no [node] section for this host (elsewhere)"));
	plb__config_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_assign_order),
		cmocka_unit_test(test_assign_errors),
		cmocka_unit_test(test_assign_single),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
