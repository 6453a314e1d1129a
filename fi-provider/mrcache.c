// SPDX-License-Identifier: MIT
/*
 * The registration cache (docs/libfabric.md "Registration cache"): with
 * mr_mode 0 the application's buffers come unregistered, and the
 * rendezvous and RMA buffers need a verbs MR.  A domain keeps at most
 * WFI_MRC_ENTRIES registrations of WFI_MRC_BYTES in all, each of the
 * page-aligned range around a buffer, evicting the least recently used
 * unused one for room.
 *
 * A cached MR pins the pages the buffer had when it was registered; after
 * free() or munmap() the same virtual address can map other pages, and
 * the MR would move the old ones.  So every hit is validated: the page
 * frame numbers of the buffer's pages, read from /proc/self/pagemap (the
 * kernel's own page tables), must be those recorded at registration.
 * The MR holds its pages pinned, so they cannot be freed and given to
 * another mapping while it exists: equal frames mean the same pages.  A
 * changed or absent page invalidates the entry (dropped when no operation
 * uses it) and the buffer is registered again.  Without frame numbers
 * (pagemap shows them only with CAP_SYS_ADMIN) or with WEFT_FI_MR_CACHE=0,
 * every operation registers its buffer and deregisters it when done.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wfi.h"

#define PM_PRESENT (1ull << 63)
#define PM_PFN ((1ull << 55) - 1)

/* The frames of n pages from start (0 for a page not present). */
static int frames(struct wfi_mrc *c, uintptr_t start, size_t n, uint64_t *out)
{
	size_t bytes = n * sizeof(*out), i;
	off_t off = (off_t)(start / (uintptr_t)c->page * sizeof(*out));

	if (pread(c->pagemap, out, bytes, off) != (ssize_t)bytes)
		return -1;
	for (i = 0; i < n; i++)
		out[i] = out[i] & PM_PRESENT ? out[i] & PM_PFN : 0;
	return 0;
}

void wfi_mrc_init(struct wfi_domain *d)
{
	struct wfi_mrc *c = &d->mrc;
	const char *env = getenv("WEFT_FI_MR_CACHE");
	uint64_t pfn = 0;
	uint8_t *probe;

	memset(c, 0, sizeof(*c));
	c->pagemap = -1;
	c->page = sysconf(_SC_PAGESIZE);
	if ((env && !strcmp(env, "0")) || c->page <= 0)
		return;
	c->scratch = malloc(WFI_MRC_REGION / (size_t)c->page * sizeof(*c->scratch));
	probe = aligned_alloc((size_t)c->page, (size_t)c->page);
	c->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (probe)
		probe[0] = 1;	/* present, so that it has a frame */
	if (!c->scratch || !probe || c->pagemap < 0 ||
	    frames(c, (uintptr_t)probe, 1, &pfn) || !pfn) {
		/* No frame numbers to validate with: no cache. */
		if (c->pagemap >= 0)
			close(c->pagemap);
		c->pagemap = -1;
		free(c->scratch);
		c->scratch = NULL;
	}
	free(probe);
	c->st.enabled = c->pagemap >= 0;
}

static void drop(struct wfi_reg *r)
{
	ibv_dereg_mr(r->mr);
	free(r->pfn);
	free(r);
}

/* Entry i leaves the table: freed now, or by its last user. */
static void unlink_ent(struct wfi_mrc *c, int i)
{
	struct wfi_reg *r = c->ent[i];

	c->ent[i] = c->ent[--c->n];
	c->st.entries = (uint64_t)c->n;
	c->st.bytes -= r->len;
	r->cached = false;
	if (!r->refs)
		drop(r);
}

void wfi_mrc_fini(struct wfi_domain *d)
{
	struct wfi_mrc *c = &d->mrc;

	while (c->n)
		unlink_ent(c, c->n - 1);
	if (c->pagemap >= 0)
		close(c->pagemap);
	c->pagemap = -1;
	free(c->scratch);
	c->scratch = NULL;
	if (getenv("WEFT_FI_LOG"))
		fprintf(stderr, "weft: registration cache: %llu hits, %llu misses, %llu evictions, "
			"%llu invalidations, %llu uncached\n", (unsigned long long)c->st.hits,
			(unsigned long long)c->st.misses, (unsigned long long)c->st.evictions,
			(unsigned long long)c->st.invalidations, (unsigned long long)c->st.uncached);
}

/* Does entry r still hold the pages of [a, a + n pages)? */
static bool valid(struct wfi_mrc *c, struct wfi_reg *r, uintptr_t a, size_t n)
{
	size_t first = (a - r->start) / (size_t)c->page, i;

	if (frames(c, a, n, c->scratch))
		return false;
	for (i = 0; i < n; i++)
		if (!c->scratch[i] || c->scratch[i] != r->pfn[first + i])
			return false;
	return true;
}

/* Room for len more bytes: evict unused entries, least recently used
 * first.  False when what is left is in use. */
static bool room(struct wfi_mrc *c, size_t len)
{
	while (c->n == WFI_MRC_ENTRIES || c->st.bytes + len > WFI_MRC_BYTES) {
		int i, lru = -1;

		for (i = 0; i < c->n; i++)
			if (!c->ent[i]->refs && (lru < 0 || c->ent[i]->last < c->ent[lru]->last))
				lru = i;
		if (lru < 0)
			return false;
		c->st.evictions++;
		unlink_ent(c, lru);
	}
	return true;
}

static struct wfi_reg *reg_new(struct wfi_domain *d, uintptr_t start, size_t len, int access)
{
	struct wfi_reg *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->mr = ibv_reg_mr(d->pd, (void *)start, len, access);
	if (!r->mr) {
		free(r);
		return NULL;
	}
	r->start = start;
	r->len = len;
	r->refs = 1;
	return r;
}

/* A registration covering [buf, buf + len) with at least ACCESS
 * (IBV_ACCESS_LOCAL_WRITE or IBV_ACCESS_REMOTE_READ), or NULL. */
struct wfi_reg *wfi_reg_get(struct wfi_domain *d, void *buf, size_t len, int access)
{
	struct wfi_mrc *c = &d->mrc;
	uintptr_t pg = (uintptr_t)c->page, a = (uintptr_t)buf & ~(pg - 1);
	size_t alen = (((uintptr_t)buf + len + pg - 1) & ~(pg - 1)) - a, n = alen / pg;
	struct wfi_reg *r;
	int i;

	if (c->pagemap < 0 || alen > WFI_MRC_REGION)
		goto uncached;
	for (i = 0; i < c->n; i++) {
		r = c->ent[i];
		if (a < r->start || a + alen > r->start + r->len)
			continue;
		if (!valid(c, r, a, n)) {
			/* Freed or remapped since: its pages are not the buffer's. */
			c->st.invalidations++;
			unlink_ent(c, i--);
			continue;
		}
		c->st.hits++;
		r->refs++;
		r->last = ++c->tick;
		return r;
	}
	if (!room(c, alen))
		goto uncached;
	r = reg_new(d, a, alen, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!r)
		goto uncached;		/* read-only memory, say: registered as asked */
	r->pfn = malloc(n * sizeof(*r->pfn));
	if (!r->pfn || frames(c, a, n, r->pfn)) {
		r->refs = 0;
		drop(r);
		goto uncached;
	}
	for (i = 0; i < (int)n; i++)
		if (!r->pfn[i]) {	/* not present although pinned: not cacheable */
			r->refs = 0;
			drop(r);
			goto uncached;
		}
	c->st.misses++;
	r->cached = true;
	r->last = ++c->tick;
	c->ent[c->n++] = r;
	c->st.entries = (uint64_t)c->n;
	c->st.bytes += alen;
	return r;
uncached:
	r = reg_new(d, (uintptr_t)buf, len, access);
	if (r)
		c->st.uncached++;
	return r;
}

void wfi_reg_put(struct wfi_domain *d, struct wfi_reg *r)
{
	(void)d;
	if (!r || --r->refs > 0 || r->cached)
		return;
	drop(r);
}

static int mrc_stats(struct fid_domain *domain, struct fi_weft_mrc_stats *st)
{
	struct wfi_domain *d;

	if (!domain || domain->fid.fclass != FI_CLASS_DOMAIN || !st)
		return -FI_EINVAL;
	d = container_of(domain, struct wfi_domain, domain_fid);
	pthread_mutex_lock(&d->lock);
	*st = d->mrc.st;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static struct fi_weft_mrc_ops mrc_ops = {
	.size = sizeof(struct fi_weft_mrc_ops),
	.stats = mrc_stats,
};

/* fi_open_ops on the domain: FI_WEFT_MRC_OPS (fi_weft.h). */
int wfi_domain_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx)
{
	(void)ctx;
	return wfi_ops_named(fid, name, flags, ops, FI_WEFT_MRC_OPS, &mrc_ops);
}
