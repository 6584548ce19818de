/* The plb handle's small pieces that every file of the core uses (the
 * first error's message, the kernel table, the handshake's receive), kept
 * apart from plb.c so that the master and the worker do not call back
 * into init and finalize. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "balancer/base/clock.h"
#include "runtime/core/rt.h"

#define HANDSHAKE_S 120.0       /* before the config is read: [network] startup_timeout_s's default */

/* The handshake's limit on silence: the config's, once there is one. */
double plb__handshake_s(const struct plb *p)
{
	return p->have_cfg ? p->cfg.startup_timeout_s : HANDSHAKE_S;
}

/* Wait for the next message (any type) from anyone, for at most
 * plb__handshake_s(p) + extra_s. */
int plb__handshake_recv(struct plb *p, void **msg, int *src, const char *what, double extra_s)
{
	struct plb__backoff bo = {0};
	double limit = plb__handshake_s(p) + extra_s, end = plb__now() + limit;
	plb__backoff_reset(&bo);
	for (;;) {
		int got = p->tp->ops->recv(p->tp, msg, src);
		if (got < 0)
			return plb__fail(p, got, "waiting for %s: %s", what, p->tp->err);
		if (got)
			return 0;
		if (plb__now() > end)
			return plb__fail(p, PLB_EIO, "waited %.0f s for %s", limit, what);
		plb__backoff_sleep(&bo, p->tp->ops->pending(p->tp));
	}
}

void plb__name_silent(struct plb *p, int n, const int *ranks, int (*said)(const void *ctx, int k),
		      const void *ctx, const char *why)
{
	char list[160] = "";
	size_t len = 0;
	int count = 0;
	for (int k = 0; k < n; k++) {
		if (said(ctx, k))
			continue;
		if (count++ < 8 && len < sizeof list)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", len ? ", " : "",
						ranks ? ranks[k] : k + 1);
	}
	if (count > 8 && len < sizeof list)
		snprintf(list + len, sizeof list - len, " and %d more", count - 8);
	size_t e = strlen(p->err);
	if (count && e < sizeof p->err - 1)
		snprintf(p->err + e, sizeof p->err - e, ": silent: rank%s %s (%s)", count > 1 ? "s" : "",
			 list, why);
}

int plb__fail(struct plb *p, int rc, const char *fmt, ...)
{
	if (!p->err[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err, sizeof p->err, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int plb__send(struct plb *p, int dst, const struct plb__hdr *h, const void *head, size_t hlen,
	      const void *data, size_t dlen)
{
	void *msg = plb__msg_alloc(h->type, hlen + dlen);
	if (!msg)
		return plb__fail(p, PLB_ENOMEM, "out of memory");
	*plb__msg_hdr(msg) = *h;
	plb__msg_hdr(msg)->len = hlen + dlen;
	if (hlen)
		memcpy(plb__msg_data(msg), head, hlen);
	if (dlen)
		memcpy((char *)plb__msg_data(msg) + hlen, data, dlen);
	int rc = p->tp->ops->send(p->tp, dst, msg);
	return rc ? plb__fail(p, rc, "sending to rank %d: %s", dst, p->tp->err) : 0;
}

const struct plb_kernel *plb__kernel_find(const struct plb *p, const char *name)
{
	for (int i = 0; i < p->nkernels; i++)
		if (p->kernels[i] && p->kernels[i]->name && !strcmp(p->kernels[i]->name, name))
			return p->kernels[i];
	return NULL;
}

int plb_is_master(const plb_t *p)
{
	return p && p->master;
}

unsigned plb_version(void)
{
	return PLB_VERSION;
}

const char *plb__version_text(unsigned v, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
	return buf;
}

int plb__abi_check(unsigned abi, const char *what, char *err, size_t len)
{
	char mine[32];
	if (abi >= 1 && abi <= PLB_ABI)
		return 0;
	if (!abi)
		snprintf(err, len, "%s has no ABI stamp: start its initialiser with PLB_INIT (plb.h), as in {PLB_INIT, ...}",
			 what);
	else
		snprintf(err, len, "%s is from a plb.h of ABI %u, newer than this library's (ABI %d, plb %s): build against the plb.h of the library it runs with",
			 what, abi, PLB_ABI, plb__version_text(PLB_VERSION, mine, sizeof mine));
	return PLB_EINVAL;
}

int plb__peer_version(struct plb *p, int rank, const char *host, unsigned version)
{
	char mine[32], theirs[32];
	if (version == PLB_VERSION)
		return 0;
	return plb__fail(p, PLB_ESTATE, "rank %d (%s) runs plb %s, the master plb %s: every rank must run the same plb (rebuild the program, or install one plb on every node)",
			 rank, host, plb__version_text(version, theirs, sizeof theirs),
			 plb__version_text(PLB_VERSION, mine, sizeof mine));
}

const char *plb_errmsg(const plb_t *p)
{
	return p ? p->err : "no plb handle";
}
