/* Message buffers, with a small cache of large ones.
 *
 * A block's data travels in one buffer per message (transport.h), tens of
 * MB for a large block. glibc serves such sizes with mmap and gives them
 * back with munmap, so every block paid one page fault per 4 KiB where the
 * master packs its input and again where the kernel writes its output:
 * 18% of plb-mm's samples on one CPU PU were in the page-fault handler
 * (`perf record -g build/plb-mm --config X --n 4096 --prec single`, X with
 * one `cpu = 1` node). Freed buffers of at least PLB__MSG_CACHE_MIN bytes
 * are kept (at most PLB__MSG_CACHE_N of them and PLB__MSG_CACHE_MAX bytes
 * in all) and the smallest that fits serves the next message, its pages
 * already mapped. When none fits, the largest kept one is grown
 * (cache_grow): blocks grow through a run, and a new buffer for each
 * larger one was fresh memory to zero every time (a PU of plb-bs's demo
 * spent 30% of its samples zeroing pages; 7% with growth). A new large
 * buffer, or a grown one's added part, is mapped in one call
 * (MADV_POPULATE_WRITE, Linux 5.14+; ignored where it is refused) rather
 * than one fault per page, and from 2 MiB on with transparent huge pages
 * (MADV_HUGEPAGE: used where /sys/kernel/mm/transparent_hugepage/enabled
 * says madvise or always). `build/bench/bench_msgbuf` times the ways to
 * fill 48 MB; on the 2-core development VM (2026-11-23): fresh malloc
 * 0.16-0.18 s, a new buffer 0.009 s (0.072 s before it asked for huge
 * pages), a kept one 0.003 s. Threads share the cache under one mutex. */
#define _DEFAULT_SOURCE         /* madvise */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

#include "runtime/transport/transport.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PLB__MSG_CACHE_N   8
#define PLB__MSG_CACHE_MIN ((size_t)256 << 10)
#define PLB__MSG_CACHE_MAX ((size_t)1 << 30)

static struct {
	pthread_mutex_t mu;
	int n;
	size_t bytes;
	void *buf[PLB__MSG_CACHE_N];
	size_t cap[PLB__MSG_CACHE_N];
	unsigned long hits, misses;
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Takes kept buffer i out of the cache (its mutex held). */
static void *remove_at(int i)
{
	void *buf = cache.buf[i];
	cache.bytes -= cache.cap[i];
	cache.n--;
	cache.buf[i] = cache.buf[cache.n];
	cache.cap[i] = cache.cap[cache.n];
	return buf;
}

static void *cache_take(size_t need)
{
	void *buf = NULL;
	pthread_mutex_lock(&cache.mu);
	int best = -1;
	for (int i = 0; i < cache.n; i++)
		if (cache.cap[i] >= need && (best < 0 || cache.cap[i] < cache.cap[best]))
			best = i;
	if (best >= 0) {
		buf = remove_at(best);
		cache.hits++;
	} else if (need >= PLB__MSG_CACHE_MIN) {
		cache.misses++;
	}
	pthread_mutex_unlock(&cache.mu);
	return buf;
}

/* No kept buffer fits: the largest kept one, grown to need bytes. glibc
 * grows an mmap'd block with mremap, which moves its pages instead of
 * copying them, so only the part added is fresh memory (*fresh: from
 * there). NULL when none is kept or it cannot grow. */
static void *cache_grow(size_t need, size_t *fresh)
{
	pthread_mutex_lock(&cache.mu);
	int big = -1;
	for (int i = 0; i < cache.n; i++)
		if (big < 0 || cache.cap[i] > cache.cap[big])
			big = i;
	void *buf = NULL;
	if (big >= 0) {
		*fresh = cache.cap[big];
		buf = remove_at(big);
	}
	pthread_mutex_unlock(&cache.mu);
	if (!buf)
		return NULL;
	void *b = realloc(buf, need);
	if (!b)
		free(buf);
	return b;
}

/* The whole pages inside [buf, buf + len): *a and the length (0: none). */
static size_t whole_pages(void *buf, size_t len, void **a)
{
	long ps = sysconf(_SC_PAGESIZE);        /* glibc: a load, no system call */
	uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
	uintptr_t s = ((uintptr_t)buf + page - 1) & ~(page - 1);
	uintptr_t e = ((uintptr_t)buf + len) & ~(page - 1);
	*a = (void *)s;
	return e > s ? e - s : 0;
}

int plb__populate(void *buf, size_t len)
{
	void *a;
	size_t n = whole_pages(buf, len, &a);
	return n ? madvise(a, n, MADV_POPULATE_WRITE) : 0;
}

/* A new buffer of at least 2 MiB asks for transparent huge pages (where
 * the system leaves them to madvise) before it is mapped: 512 times
 * fewer pages to map and zero. */
static void populate_new(void *buf, size_t len)
{
	void *a;
	size_t n = whole_pages(buf, len, &a);
	if (n >= ((size_t)2 << 20))
		(void)madvise(a, n, MADV_HUGEPAGE);
	if (n)
		(void)madvise(a, n, MADV_POPULATE_WRITE);
}

void *plb__msg_alloc(uint32_t type, size_t len)
{
	size_t need = PLB__HDR_SIZE + len;
	int large = need >= PLB__MSG_CACHE_MIN;
	void *buf = large ? cache_take(need) : NULL;
	size_t fresh = 0;
	if (!buf && large && (buf = cache_grow(need, &fresh))) {
		populate_new((char *)buf + fresh, need - fresh);
	} else if (!buf) {
		if (!(buf = malloc(need)))
			return NULL;
		if (large)
			populate_new(buf, need);
	}
	memset(buf, 0, PLB__HDR_SIZE);
	plb__msg_hdr(buf)->type = type;
	plb__msg_hdr(buf)->len = len;
	return buf;
}

void plb__msg_free(void *buf)
{
	if (!buf)
		return;
	size_t cap = malloc_usable_size(buf);
	if (cap < PLB__MSG_CACHE_MIN || cap > PLB__MSG_CACHE_MAX) {
		free(buf);
		return;
	}
	pthread_mutex_lock(&cache.mu);
	/* full: the smallest of the cached ones and this one goes */
	while (cache.n > 0 && (cache.n == PLB__MSG_CACHE_N ||
			       cache.bytes + cap > PLB__MSG_CACHE_MAX)) {
		int small = 0;
		for (int i = 1; i < cache.n; i++)
			if (cache.cap[i] < cache.cap[small])
				small = i;
		if (cache.cap[small] >= cap)
			break;
		free(remove_at(small));
	}
	if (cache.n < PLB__MSG_CACHE_N && cache.bytes + cap <= PLB__MSG_CACHE_MAX) {
		cache.buf[cache.n] = buf;
		cache.cap[cache.n] = cap;
		cache.n++;
		cache.bytes += cap;
		buf = NULL;
	}
	pthread_mutex_unlock(&cache.mu);
	free(buf);
}

void plb__msg_cache_clear(struct plb__msg_cache_stats *st)
{
	pthread_mutex_lock(&cache.mu);
	if (st) {
		st->hits = cache.hits;
		st->misses = cache.misses;
		st->kept = cache.n;
		st->kept_bytes = cache.bytes;
	}
	for (int i = 0; i < cache.n; i++)
		free(cache.buf[i]);
	cache.n = 0;
	cache.bytes = 0;
	cache.hits = cache.misses = 0;
	pthread_mutex_unlock(&cache.mu);
}
