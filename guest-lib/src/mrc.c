/* SPDX-License-Identifier: MIT */
/*
 * Lazy deregistration cache (seed 1.2.11 and 1.5.20).
 *
 * The address space is cut into fragments of 2^frag_shift bytes (16 MiB
 * by default) grouped into 4 GiB segments.  A hash table maps a segment
 * number to its record: a bit vector of mapped fragments (bit set = the
 * fragment holds at least one registration) and an array, indexed by bit
 * number, of fragment records.  A fragment record keeps up to MAPS_PER_FRAG
 * registrations, each of the part of the fragment covered by one mapping
 * (a VMA for the kernel backend, an allocation for the sim backend), with
 * the identity of that mapping, its PVO and handle, and the seed's
 * idle_count and use_count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

#define MAPS_PER_FRAG   4
#define SEG_SHIFT       32
#define HASH_BUCKETS    64

struct frag_map {
	int valid;
	uint64_t start, end;            /* registered range */
	struct weft_be_map ident;       /* mapping behind it at registration */
	uint64_t pvo;
	uint32_t handle;
	uint32_t idle_count;
	uint32_t use_count;
	uint64_t lru;
};

struct frag {
	struct frag_map m[MAPS_PER_FRAG];
};

struct seg {
	uint64_t segno;
	struct seg *next;
	uint32_t *bits;                 /* frags_per_seg / 32 words */
	struct frag **frags;            /* indexed by bit number */
};

struct weft_mrc {
	struct weft_dev *dev;
	uint32_t job;
	uint32_t shift;
	uint32_t frags_per_seg;
	uint32_t idle_limit;
	uint32_t max_maps;
	uint64_t last_tick_ns;
	uint64_t lru_clock;
	struct seg *hash[HASH_BUCKETS];
	struct weft_mrc_stats st;
};

struct weft_mrc *weft_mrc_new(struct weft_dev *dev, const struct weft_mrc_attr *attr)
{
	uint32_t shift = attr->frag_shift ? attr->frag_shift : 24;
	if (shift < 12 || shift > 30 || attr->job_id == 0 || !dev->be->ops->map_lookup) {
		errno = EINVAL;
		return NULL;
	}
	if (weft_dev_job_attach(dev, attr->job_id) != 0)
		return NULL;
	struct weft_mrc *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->dev = dev;
	c->job = attr->job_id;
	c->shift = shift;
	c->frags_per_seg = 1u << (SEG_SHIFT - shift);
	c->idle_limit = attr->idle_limit ? attr->idle_limit : 60;
	c->max_maps = attr->max_frags ? attr->max_frags : 1024;
	c->last_tick_ns = weft_dev_now_ns(dev);
	return c;
}

static void map_drop(struct weft_mrc *c, struct frag_map *m)
{
	if (!m->valid)
		return;
	weft_mr_dereg(c->dev, m->handle);
	m->valid = 0;
	c->st.deregistrations++;
	c->st.mapped--;
}

/* Recompute a fragment's bit after its maps changed. */
static void seg_update_bit(struct seg *s, uint32_t bit)
{
	struct frag *f = s->frags[bit];
	int any = 0;
	for (int i = 0; f && i < MAPS_PER_FRAG; i++)
		any |= f->m[i].valid;
	if (any)
		s->bits[bit / 32] |= 1u << (bit % 32);
	else
		s->bits[bit / 32] &= ~(1u << (bit % 32));
}

void weft_mrc_free(struct weft_mrc *c)
{
	if (!c)
		return;
	for (int h = 0; h < HASH_BUCKETS; h++) {
		struct seg *s = c->hash[h];
		while (s) {
			struct seg *next = s->next;
			for (uint32_t b = 0; b < c->frags_per_seg; b++) {
				if (!s->frags[b])
					continue;
				for (int i = 0; i < MAPS_PER_FRAG; i++)
					map_drop(c, &s->frags[b]->m[i]);
				free(s->frags[b]);
			}
			free(s->bits);
			free(s->frags);
			free(s);
			s = next;
		}
	}
	free(c);
}

static struct seg *seg_find(struct weft_mrc *c, uint64_t segno, int create)
{
	unsigned int h = (unsigned int)((segno * 0x9e3779b97f4a7c15ull) >> 58) % HASH_BUCKETS;
	for (struct seg *s = c->hash[h]; s; s = s->next)
		if (s->segno == segno)
			return s;
	if (!create)
		return NULL;
	struct seg *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->bits = calloc((c->frags_per_seg + 31) / 32, sizeof(uint32_t));
	s->frags = calloc(c->frags_per_seg, sizeof(*s->frags));
	if (!s->bits || !s->frags) {
		free(s->bits);
		free(s->frags);
		free(s);
		return NULL;
	}
	s->segno = segno;
	s->next = c->hash[h];
	c->hash[h] = s;
	return s;
}

/* First address of the fragment holding addr. */
static uint64_t frag_start(const struct weft_mrc *c, uint64_t addr)
{
	return addr & ~((1ull << c->shift) - 1);
}

/* Fragment record of an address; NULL if none (or create fails). */
static struct frag *frag_of(struct weft_mrc *c, uint64_t addr, int create, struct seg **sp,
			    uint32_t *bitp)
{
	struct seg *s = seg_find(c, addr >> SEG_SHIFT, create);
	if (!s)
		return NULL;
	uint32_t bit = (uint32_t)((addr >> c->shift) & (c->frags_per_seg - 1));
	if (!s->frags[bit] && create)
		s->frags[bit] = calloc(1, sizeof(struct frag));
	*sp = s;
	*bitp = bit;
	return s->frags[bit];
}

static int ident_same(const struct weft_be_map *a, const struct weft_be_map *b)
{
	return a->start == b->start && a->dev == b->dev && a->ino == b->ino &&
	       a->off == b->off && a->serial == b->serial;
}

/* Apply fn to every map of every fragment. */
static unsigned int for_each_map(struct weft_mrc *c, int (*fn)(struct weft_mrc *, struct frag_map *, void *),
				 void *arg)
{
	unsigned int n = 0;
	for (int h = 0; h < HASH_BUCKETS; h++)
		for (struct seg *s = c->hash[h]; s; s = s->next)
			for (uint32_t b = 0; b < c->frags_per_seg; b++) {
				if (!(s->bits[b / 32] & (1u << (b % 32))))
					continue;
				for (int i = 0; i < MAPS_PER_FRAG; i++)
					if (s->frags[b]->m[i].valid && fn(c, &s->frags[b]->m[i], arg))
						n++;
				seg_update_bit(s, b);
			}
	return n;
}

static int age_one(struct weft_mrc *c, struct frag_map *m, void *arg)
{
	uint32_t ticks = *(uint32_t *)arg;
	m->idle_count = m->idle_count + ticks < m->idle_count ? UINT32_MAX : m->idle_count + ticks;
	if (m->idle_count >= c->idle_limit && m->use_count == 0) {
		map_drop(c, m);
		c->st.evictions++;
		return 1;
	}
	return 0;
}

unsigned int weft_mrc_age(struct weft_mrc *c, unsigned int ticks)
{
	uint32_t t = ticks;
	return for_each_map(c, age_one, &t);
}

static int drop_idle(struct weft_mrc *c, struct frag_map *m, void *arg)
{
	(void)arg;
	if (m->use_count)
		return 0;
	map_drop(c, m);
	c->st.evictions++;
	return 1;
}

static int find_lru(struct weft_mrc *c, struct frag_map *m, void *arg)
{
	(void)c;
	struct frag_map **best = arg;
	if (!m->use_count && (!*best || m->lru < (*best)->lru))
		*best = m;
	return 0;
}

/* One tick per elapsed second of the device clock. */
static void auto_age(struct weft_mrc *c)
{
	uint64_t now = weft_dev_now_ns(c->dev);
	if (now - c->last_tick_ns < 1000000000ull)
		return;
	uint64_t ticks = (now - c->last_tick_ns) / 1000000000ull;
	c->last_tick_ns += ticks * 1000000000ull;
	weft_mrc_age(c, ticks > UINT32_MAX ? UINT32_MAX : (unsigned int)ticks);
}

static int map_register(struct weft_mrc *c, struct frag_map *m, uint64_t start, uint64_t end,
			const struct weft_be_map *ident)
{
	if (c->st.mapped >= c->max_maps) {
		struct frag_map *lru = NULL;
		for_each_map(c, find_lru, &lru);
		if (lru) {
			map_drop(c, lru);
			c->st.evictions++;
		}
	}
	uint64_t pvo;
	uint32_t handle;
	int r = weft_mr_reg(c->dev, c->job, (const void *)(uintptr_t)start, end - start, &pvo,
			    &handle);
	if (r) {
		/* Mappings are dropped when a mapping fails; then try once more. */
		if (for_each_map(c, drop_idle, NULL) == 0)
			return r;
		r = weft_mr_reg(c->dev, c->job, (const void *)(uintptr_t)start, end - start, &pvo,
				&handle);
		if (r)
			return r;
	}
	m->valid = 1;
	m->start = start;
	m->end = end;
	m->ident = *ident;
	m->pvo = pvo;
	m->handle = handle;
	m->idle_count = 0;
	m->use_count = 0;
	c->st.registrations++;
	c->st.mapped++;
	return 0;
}

int weft_mrc_get(struct weft_mrc *c, const void *addr, size_t len, struct weft_mr_seg *segs,
		 unsigned int max)
{
	if (!addr || !len || !max)
		return -EINVAL;
	uint64_t a = (uint64_t)(uintptr_t)addr;
	if (a + len < a)
		return -EINVAL;
	auto_age(c);
	uint64_t end = a + len, pos = a;
	unsigned int n = 0;
	struct weft_be_map ident = { 0 };
	int have_ident = 0;
	int r = 0;
	while (pos < end) {
		if (!have_ident || pos < ident.start || pos >= ident.end) {
			r = c->dev->be->ops->map_lookup(c->dev->be, pos, &ident);
			if (r)
				break;
			if (ident.end <= pos) {
				r = -EFAULT;
				break;
			}
			have_ident = 1;
		}
		uint64_t fstart = frag_start(c, pos);
		uint64_t fend = fstart + (1ull << c->shift);
		uint64_t pend = end;
		if (pend > fend)
			pend = fend;
		if (pend > ident.end)
			pend = ident.end;
		struct seg *s;
		uint32_t bit;
		struct frag *f = frag_of(c, pos, 1, &s, &bit);
		if (!f) {
			r = -ENOMEM;
			break;
		}
		struct frag_map *m = NULL;
		for (int i = 0; i < MAPS_PER_FRAG; i++)
			if (f->m[i].valid && f->m[i].start <= pos && pend <= f->m[i].end)
				m = &f->m[i];
		uint64_t rs = fstart > ident.start ? fstart : ident.start;
		uint64_t re = fend < ident.end ? fend : ident.end;
		if (m && ident_same(&m->ident, &ident)) {
			c->st.hits++;
		} else if (m) {
			/* The mapping behind the fragment changed: unmap, remap. */
			if (m->use_count) {
				r = -EBUSY;
				break;
			}
			map_drop(c, m);
			r = map_register(c, m, rs, re, &ident);
			if (r) {
				c->st.failures++;
				seg_update_bit(s, bit);
				break;
			}
			c->st.remaps++;
		} else {
			/* Miss: a free map slot, else the least recently used idle one. */
			for (int i = 0; i < MAPS_PER_FRAG && !m; i++)
				if (!f->m[i].valid)
					m = &f->m[i];
			for (int i = 0; i < MAPS_PER_FRAG && !m; i++)
				if (!f->m[i].use_count && (!m || f->m[i].lru < m->lru))
					m = &f->m[i];
			if (!m) {
				r = -EBUSY;
				break;
			}
			map_drop(c, m);
			/* A map of the same mapping that does not cover the range
			 * (the mapping grew) is replaced too. */
			for (int i = 0; i < MAPS_PER_FRAG; i++)
				if (f->m[i].valid && &f->m[i] != m && f->m[i].use_count == 0 &&
				    f->m[i].start < re && rs < f->m[i].end)
					map_drop(c, &f->m[i]);
			r = map_register(c, m, rs, re, &ident);
			if (r) {
				c->st.failures++;
				seg_update_bit(s, bit);
				break;
			}
			c->st.misses++;
		}
		seg_update_bit(s, bit);
		m->idle_count = 0;
		m->use_count++;
		m->lru = ++c->lru_clock;
		uint64_t pvo = m->pvo + (pos - m->start);
		if (n && segs[n - 1].pvo + segs[n - 1].len == pvo) {
			segs[n - 1].len += pend - pos;
		} else if (n == max) {
			m->use_count--;
			r = -E2BIG;
			break;
		} else {
			segs[n].pvo = pvo;
			segs[n].len = pend - pos;
			segs[n].offset = pos - a;
			n++;
		}
		pos = pend;
	}
	if (r) {
		if (pos > a)
			weft_mrc_put(c, addr, pos - a);
		return r;
	}
	return (int)n;
}

void weft_mrc_put(struct weft_mrc *c, const void *addr, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)addr, end = a + len, pos = a;
	while (pos < end) {
		uint64_t fend = frag_start(c, pos) + (1ull << c->shift);
		struct seg *s;
		uint32_t bit;
		struct frag *f = frag_of(c, pos, 0, &s, &bit);
		uint64_t next = end < fend ? end : fend;
		for (int i = 0; f && i < MAPS_PER_FRAG; i++) {
			struct frag_map *m = &f->m[i];
			if (m->valid && m->start <= pos && pos < m->end) {
				if (m->use_count)
					m->use_count--;
				if (m->end < next)
					next = m->end;
				break;
			}
		}
		pos = next;
	}
}

void weft_mrc_invalidate(struct weft_mrc *c, const void *addr, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)addr, end = a + len, pos = a;
	while (pos < end) {
		uint64_t fend = frag_start(c, pos) + (1ull << c->shift);
		struct seg *s;
		uint32_t bit;
		struct frag *f = frag_of(c, pos, 0, &s, &bit);
		for (int i = 0; f && i < MAPS_PER_FRAG; i++)
			if (f->m[i].valid && f->m[i].start < end && a < f->m[i].end)
				map_drop(c, &f->m[i]);
		if (f)
			seg_update_bit(s, bit);
		pos = fend;
	}
}

void weft_mrc_get_stats(const struct weft_mrc *c, struct weft_mrc_stats *s)
{
	*s = c->st;
}
