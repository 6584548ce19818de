/* The MPI transport's settle (runtime/transport/mpi.c), on two real ranks:
 * a block's output that travels apart is received straight where the
 * place hook says, whole, and settle returns once it is in; a tail from a
 * rank that died and was forgotten (taken out) does not hold settle past
 * its grace (it fails the run after its timeout without it): settle
 * returns 0 and the run goes on; a rank taken out that is alive after all
 * has no tail received or placed again (nor delivered), and its other
 * messages still come.
 *
 * Each case runs this program again under `mpirun --enable-recovery -np 2`
 * (its ranks do the case, rank 0 prints what it saw); the cases here read
 * that. Skipped in a build without MPI. */
#define _DEFAULT_SOURCE
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <unistd.h>

#include "balancer/base/clock.h"
#include "runtime/transport/transport.h"

#define TAIL ((size_t)32 << 20)         /* rendezvous, not eager, in any BTL */

static char self[4096];

static int place_calls;         /* place hook calls */

static void *place(void *ctx, int src, const struct plb__hdr *h)
{
	(void)src;
	place_calls++;
	return h->tail == TAIL ? ctx : NULL;
}

/* rank 1: a DONE of n bytes of output (byte i is i % 251), its tail
 * apart (PLB_MPI_APART_MIN is set to TAIL / 2: n at least that) */
static int send_done_of(struct plb__transport *t, size_t n)
{
	void *m = plb__msg_alloc(PLB__MSG_DONE, n);
	if (!m)
		return PLB_ENOMEM;
	plb__msg_hdr(m)->tail = n;
	unsigned char *p = plb__msg_data(m);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i % 251);
	return t->ops->send(t, 0, m);
}

static int send_done(struct plb__transport *t)
{
	return send_done_of(t, TAIL);
}

/* rank 0: polls for s seconds, or until a message is delivered (its tail
 * placed in out), or, with until_placed, until a tail's receive is placed:
 * 1 if one was delivered (placed: 2), 0 if none, < 0 on error */
static int poll_for(struct plb__transport *t, unsigned char *out, double s, int until_placed)
{
	t->place = place;
	t->place_ctx = out;
	double end = plb__now() + s;
	while (plb__now() < end && !(until_placed && place_calls)) {
		void *m = NULL;
		int src, rc = t->ops->recv(t, &m, &src);
		if (rc < 0)
			return rc;
		if (rc) {
			int placed = !!(plb__msg_hdr(m)->flags & PLB__F_PLACED);
			plb__msg_free(m);
			return 1 + placed;
		}
		usleep(100);
	}
	return 0;
}

/* One case, on one rank of two; rank 0 prints "RESULT k=v ..." */
static int part(const char *name, int argc, char **argv)
{
	struct plb__transport *t;
	char err[256];
	if (plb__transport_mpi_create(&argc, &argv, &t, err, sizeof err)) {
		printf("RESULT create failed: %s\n", err);
		return 1;
	}
	unsigned char *out = calloc(1, TAIL);
	int rc = 0;
	if (!out)
		return 1;
	if (!strcmp(name, "whole")) {
		/* the tail comes: settle waits for it, and it is all there */
		if (t->rank == 1) {
			rc = send_done(t) || t->ops->flush(t, 20);
		} else {
			int got = poll_for(t, out, 20, 0);
			double t0 = plb__now();
			int s = t->ops->settle(t, 20);
			size_t bad = 0;
			for (size_t i = 0; i < TAIL; i++)
				bad += out[i] != (unsigned char)(i % 251);
			printf("RESULT got=%d settle=%d wrong=%zu waited=%.2f\n", got, s, bad,
			       plb__now() - t0);
		}
	} else if (!strcmp(name, "back") || !strcmp(name, "queued")) {
		/* rank 1 was taken out, and is not dead: it sends two DONEs
		 * whose tails travel apart (of two sizes) and a message
		 * without one. Rank 0 posts no tail receive for it (one that
		 * took another message's tail failed with MPI_ERR_TRUNCATE),
		 * places nothing of it, and the rank's other message still
		 * comes. Neither ends with MPI_Finalize (rank 1's tails are
		 * never received). "queued": the same with messages queued
		 * behind a large one to their rank (the transport's default):
		 * the first DONE's tail is never received, so nothing after
		 * it leaves rank 1. */
		t->no_finalize = 1;
		if (t->rank == 1) {
			void *small = plb__msg_alloc(PLB__MSG_ALIVE, 0);
			rc = send_done(t) || send_done_of(t, TAIL / 2) || !small ||
			     t->ops->send(t, 0, small);
			/* alive until rank 0 says it is done */
			for (double end = plb__now() + 40; plb__now() < end;) {
				void *m = NULL;
				int src;
				if (t->ops->recv(t, &m, &src)) {
					plb__msg_free(m);
					break;
				}
				usleep(1000);
			}
		} else {
			t->ops->forget(t, 1);
			int got = 0, bad = 0, alive = 0;
			t->place = place;
			t->place_ctx = out;
			/* until its other message has come (however slow the
			 * start), and half a second more for anything after it;
			 * queued, 3 s for what should not come */
			double end = plb__now() + (strcmp(name, "queued") ? 30 : 3);
			while (plb__now() < end && !bad) {
				void *m = NULL;
				int src, r = t->ops->recv(t, &m, &src);
				if (r < 0)
					bad = r;
				if (r > 0) {
					got++;
					if (plb__msg_hdr(m)->type == PLB__MSG_ALIVE && !alive++)
						end = fmin(end, plb__now() + 0.5);
					plb__msg_free(m);
				}
				usleep(100);
			}
			void *done = plb__msg_alloc(PLB__MSG_ALIVE, 0);
			if (done && !t->ops->send(t, 1, done) && t->ops->flush(t, 5))
				printf("(rank 1 may not have heard the end: %s)\n", t->err);
			printf("RESULT got=%d alive=%d places=%d err=%d\n", got, alive, place_calls, bad);
		}
	} else if (!strcmp(name, "dead")) {
		/* rank 1 dies with its tail under way; rank 0 takes it out.
		 * The tail cannot arrive whole: its test turns off the
		 * single copy (in which rank 0 would read the tail out of
		 * rank 1's memory by itself, whole, if it came before the
		 * kill), so past the first fragment each piece waits for
		 * rank 1 to progress MPI, and rank 1 makes no MPI call
		 * after the send. */
		if (t->rank == 1) {
			rc = send_done(t);
			raise(SIGKILL);
		} else {
			/* its head comes and its tail's receive is placed, but
			 * the tail never ends: nothing is delivered. Waits
			 * for the placing however slow the start, then gives
			 * the tail time it could not use anyway. */
			int got = poll_for(t, out, 30, 1);
			if (!got)
				got = poll_for(t, out, 0.5, 0);
			t->ops->forget(t, 1);
			t->no_finalize = 1;
			double t0 = plb__now();
			int s = t->ops->settle(t, 10);
			printf("RESULT got=%d places=%d settle=%d waited=%.2f\n", got, place_calls, s,
			       plb__now() - t0);
		}
	} else if (!strcmp(name, "serial")) {
		/* three ranks: rank 0 sends a large serial message to rank 1,
		 * then one to rank 2 (and a small one after it); rank 1 starts
		 * receiving 1 s later (t1, CLOCK_MONOTONIC, one host) and tells
		 * rank 2 when. The second cannot be posted before the first is
		 * done, which needs rank 1's receive: it arrives after t1. */
		if (t->rank == 0) {
			for (int d = 1; d <= 2 && !rc; d++) {
				void *big = plb__msg_alloc(PLB__MSG_ALIVE, (size_t)1 << 20);
				if (big)
					plb__msg_hdr(big)->flags |= PLB__F_SERIAL;
				rc = !big || t->ops->send(t, d, big);
			}
			void *small = plb__msg_alloc(PLB__MSG_ALIVE, 0);
			rc = rc || !small || t->ops->send(t, 2, small) || t->ops->flush(t, 30);
		} else if (t->rank == 1) {
			usleep(1000000);
			double t1 = plb__now();
			void *m = NULL;
			int src;
			for (double end = t1 + 30; !m && plb__now() < end;)
				if (t->ops->recv(t, &m, &src) < 0)
					break;
			plb__msg_free(m);
			void *say = plb__msg_alloc(PLB__MSG_ALIVE, sizeof t1);
			if (say)
				memcpy(plb__msg_data(say), &t1, sizeof t1);
			rc = !m || !say || t->ops->send(t, 2, say) || t->ops->flush(t, 30);
		} else {
			double t2 = NAN, t1 = NAN;
			int got = 0;
			for (double end = plb__now() + 30; got < 3 && plb__now() < end;) {
				void *m = NULL;
				int src, r = t->ops->recv(t, &m, &src);
				if (r < 0)
					break;
				if (r > 0) {
					got++;
					if (src == 0 && plb__msg_hdr(m)->len > 0)
						t2 = plb__now();
					else if (src == 1)
						memcpy(&t1, plb__msg_data(m), sizeof t1);
					plb__msg_free(m);
				}
				usleep(100);
			}
			printf("RESULT got=%d after=%.3f\n", got, t2 - t1);
		}
	}
	fflush(stdout);
	free(out);
	t->ops->destroy(t);
	return rc != 0;
}

/* Runs case name under mpirun with the MCA options mca; its "RESULT"
 * line in res. */
static void run_case_np(const char *name, int np, const char *mca, char *res, size_t len)
{
#ifndef PLB_HAVE_MPI
	(void)name, (void)np, (void)mca, (void)res, (void)len;
	printf("%s: skipped: no MPI in this build\n", name);
	skip();
#else
	char cmd[8192];
	snprintf(cmd, sizeof cmd,
		 "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 mpirun "
		 "--oversubscribe --bind-to none --enable-recovery -np %d %s "
		 "-x PLB_MPI_APART_MIN=%zu '%s' --part %s 2>&1",
		 np, mca, TAIL / 2, self, name);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[256];
	res[0] = '\0';
	while (fgets(line, sizeof line, p)) {
		fputs(line, stdout);    /* (shown by the runner on failure) */
		if (!strncmp(line, "RESULT ", 7))
			snprintf(res, len, "%s", line + 7);
	}
	pclose(p);
	if (!res[0])
		fail_msg("%s: no RESULT line from the ranks", name);
#endif
}

static void run_case(const char *name, const char *mca, char *res, size_t len)
{
	run_case_np(name, 2, mca, res, len);
}

static void test_tail_placed_whole(void **state)
{
	(void)state;
	char r[512];
	int got = -2, settle = -2;
	size_t wrong = 1;
	double waited = 99;
	run_case("whole", "", r, sizeof r);
	assert_int_equal(sscanf(r, "got=%d settle=%d wrong=%zu waited=%lf", &got, &settle,
				&wrong, &waited), 4);
	assert_int_equal(got, 2);       /* delivered, its tail placed */
	assert_int_equal(settle, 0);
	assert_int_equal(wrong, 0);
}

static void test_dead_rank_does_not_hold_settle(void **state)
{
	(void)state;
	char r[512];
	int got = -2, places = -2, settle = -2;
	double waited = 99;
	/* no single copy (see part): the tail waits for its dead sender */
	run_case("dead", "--mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism none",
		 r, sizeof r);
	assert_int_equal(sscanf(r, "got=%d places=%d settle=%d waited=%lf", &got, &places, &settle,
				&waited), 4);
	assert_int_equal(got, 0);       /* its tail never came whole */
	assert_int_equal(places, 1);    /* but its receive was placed */
	assert_int_equal(settle, 0);
	/* its grace (1 s), not the 10 s timeout */
	assert_true(waited < 5);
}

static void test_rank_back_after_forget(void **state)
{
	(void)state;
	char r[512];
	int got = -2, alive = -2, places = -2, err = -2;
	/* the receiving side alone: rank 1 sends everything at once */
	run_case("back", "-x PLB_MPI_QUEUE_MIN=off", r, sizeof r);
	assert_int_equal(sscanf(r, "got=%d alive=%d places=%d err=%d", &got, &alive, &places, &err), 4);
	assert_int_equal(err, 0);
	assert_int_equal(places, 0);    /* no tail of a rank taken out placed */
	assert_int_equal(got, 1);       /* its DONEs dropped, */
	assert_int_equal(alive, 1);     /* its other message delivered */
}

/* A rank's messages to one rank follow a large one only once it is done:
 * rank 1's first DONE (its tail larger than QUEUE_MIN) never completes,
 * as rank 0 posts no tail receive for a rank taken out, so its second
 * DONE and its ALIVE never leave (rank_back_after_forget: sent at once,
 * the ALIVE comes). */
static void test_queued_behind_large(void **state)
{
	(void)state;
	char r[512];
	int got = -2, alive = -2, places = -2, err = -2;
	run_case("queued", "", r, sizeof r);
	assert_int_equal(sscanf(r, "got=%d alive=%d places=%d err=%d", &got, &alive, &places, &err), 4);
	assert_int_equal(err, 0);
	assert_int_equal(places, 0);
	assert_int_equal(got, 0);
	assert_int_equal(alive, 0);
}

/* A large PLB__F_SERIAL message to a rank is posted only once the one
 * before it, to another rank, is done (the master's STARTs): it arrives
 * after that rank began to receive, and the small message after it to
 * the same rank still comes. */
static void test_serial_one_after_another(void **state)
{
	(void)state;
	char r[512];
	int got = -1;
	double after = NAN;
	run_case_np("serial", 3, "", r, sizeof r);
	assert_int_equal(sscanf(r, "got=%d after=%lf", &got, &after), 2);
	assert_int_equal(got, 3);
	if (!(after >= 0))
		fail_msg("the second serial message came %.3f s after the first's receiver began", after);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--part"))
		return part(argv[2], argc, argv);
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail_placed_whole),
		cmocka_unit_test(test_dead_rank_does_not_hold_settle),
		cmocka_unit_test(test_rank_back_after_forget),
		cmocka_unit_test(test_queued_behind_large),
		cmocka_unit_test(test_serial_one_after_another),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
