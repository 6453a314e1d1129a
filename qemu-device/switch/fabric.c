/* SPDX-License-Identifier: MIT */
/*
 * Weft fabric model.  See fabric.h for the API and docs/switch.md for the
 * semantics (routing, faults, hold of frames for absent nodes, replay).
 *
 * Frames live in one of two places:
 *  - in flight on a route, ordered by (due time, sequence number): a FIFO
 *    of frames due in submission order (each due no earlier than the one
 *    before it, as with a fixed delay: O(1) each way), and a binary
 *    min-heap for the rest (jitter, route skew); the next due is the
 *    earlier of their heads;
 *  - a per-port FIFO ("parked"): frames that became due while their
 *    destination was absent (held) or refused them with -EAGAIN.
 * Both together never hold more than max_queued frames.
 *
 * The bytes of a submitted frame are copied once, into a reference
 * counted buffer (struct fbuf) that its copies for every destination,
 * the capture ring and a sink that holds it (weft_fabric_frame_hold)
 * share: no copy per destination, per captured frame or per delivery.
 */
#include "fabric.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define NR_UNICAST ((size_t)WEFT_NODE_MAX_UNICAST + 1)

/* Freed buffers the fabric keeps for reuse (at most about 2 KiB each,
 * so at most 8.5 MB; a 4 MiB burst in flight is about 2,200 frames), and
 * as many freed frame records (48 bytes each). */
#define FRAME_CACHE_MAX 4096u

/* The bytes of one frame, shared by its copies (reference counted).
 * Sized by class so that small frames do not pin 2 KiB each. */
struct fbuf {
	struct fbuf *next;      /* cache link */
	uint16_t cls;           /* index in buf_class */
	uint32_t refs;
	uint32_t len;
	unsigned char prefix[WEFT_WIRE_LEN_PREFIX];     /* len, little-endian */
	unsigned char data[];
};

_Static_assert(offsetof(struct fbuf, data) - offsetof(struct fbuf, prefix) ==
	       WEFT_WIRE_LEN_PREFIX, "the length prefix sits right before the frame");
_Static_assert(offsetof(struct fbuf, data) % 8 == 0, "frames are 8-byte aligned");

/* The largest class holds a verbs frame; the one below it, any other. */
static const uint32_t buf_class[] = { 256, 512, 1024, WEFT_WIRE_HDR_SIZE + WEFT_MAX_PAYLOAD,
				       WEFT_WIRE_MAX_FRAME };
#define NR_BUF_CLASSES (sizeof(buf_class) / sizeof(buf_class[0]))

/* One copy of a frame on its way to one destination. */
struct fframe {
	struct fframe *next;    /* in-flight FIFO or parked FIFO link */
	uint64_t due;
	uint64_t seq;
	uint16_t src;
	uint16_t dst;
	bool replayed;
	bool held;              /* counted in f->nheld */
	struct fbuf *buf;
};

struct fport {
	uint16_t node;
	bool known;             /* attached at least once: a valid destination */
	bool attached;
	bool up;
	uint32_t next_route;
	uint64_t progress_at;   /* last frame taken, or when it reached its quota */
	bool stall_seen;        /* poll saw it stalled: no more wake-ups for it */
	uint64_t detached_at;   /* UINT64_MAX: detached, not yet seen by poll */
	struct fframe *park_head, *park_tail;
	size_t nparked;
	size_t queued;          /* frames for this node: in flight + parked */
	struct weft_fabric_port_stats st;
};

struct mgroup {
	uint16_t *nodes;
	size_t n, cap;
};

struct capslot {
	uint64_t seq;
	uint16_t src;
	struct fbuf *buf;       /* a reference, NULL: empty */
};

struct weft_fabric {
	uint64_t rng;
	struct weft_fabric_faults ft;
	size_t max_queued;
	size_t hold_limit;
	size_t port_limit;      /* frames queued for one attached node */
	size_t nqueued;         /* in flight + parked */
	size_t nheld;           /* parked for absent destinations */
	size_t nattached;
	uint64_t stall_ns;      /* 0: a congested port never stalls */
	uint64_t expiry_ns;     /* 0: nothing expires */
	uint64_t seq;

	struct fframe **heap;
	struct fframe *fifo_head, *fifo_tail;   /* in flight, due in order */
	size_t nfifo;
	/* Freed frame records and buffers kept for reuse: a frame costs
	 * no malloc/free in steady state (at most FRAME_CACHE_MAX of each
	 * are kept). */
	struct fframe *frame_cache;
	size_t ncached;
	struct fbuf *buf_cache[NR_BUF_CLASSES];
	size_t nbufs_cached;
	size_t nheap;

	uint16_t *scratch;      /* destination list, NR_UNICAST entries */
	struct fport **port;    /* indexed by node id, lazily allocated */
	struct fport **plist;   /* dense list of allocated ports */
	size_t nports, capports;

	struct mgroup mcast[WEFT_NR_MCAST_GROUPS];

	struct capslot *cap;
	size_t ncap_slots;
	uint64_t cap_count;     /* frames captured so far (= next mark) */

	weft_fabric_tap_fn tap;
	void *tap_opaque;

	struct weft_fabric_rule rules[WEFT_FABRIC_MAX_RULES];
	size_t nrules;

	struct weft_fabric_port_stats total;
};

/* ---- random numbers: splitmix64, reproducible from the seed ------------ */

static uint64_t rng_next(struct weft_fabric *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_below(struct weft_fabric *f, uint64_t n)
{
	return n ? rng_next(f) % n : 0;
}

/* ---- heap --------------------------------------------------------------- */

static bool frame_before(const struct fframe *a, const struct fframe *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_push(struct weft_fabric *f, struct fframe *fr)
{
	size_t i = f->nheap++;

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!frame_before(fr, f->heap[p]))
			break;
		f->heap[i] = f->heap[p];
		i = p;
	}
	f->heap[i] = fr;
}

static struct fframe *heap_pop(struct weft_fabric *f);

/* A frame in flight: to the FIFO when it is due no earlier than the
 * FIFO's last (its sequence number is higher), else to the heap. */
static void flight_push(struct weft_fabric *f, struct fframe *fr)
{
	if (f->fifo_tail && frame_before(fr, f->fifo_tail)) {
		heap_push(f, fr);
		return;
	}
	fr->next = NULL;
	if (f->fifo_tail)
		f->fifo_tail->next = fr;
	else
		f->fifo_head = fr;
	f->fifo_tail = fr;
	f->nfifo++;
}

/* The frame in flight due first; NULL when none is. */
static struct fframe *flight_first(const struct weft_fabric *f)
{
	struct fframe *h = f->nheap ? f->heap[0] : NULL;

	if (!f->fifo_head || (h && frame_before(h, f->fifo_head)))
		return h;
	return f->fifo_head;
}

/* Takes flight_first(f), which is not NULL. */
static struct fframe *flight_pop(struct weft_fabric *f)
{
	struct fframe *fr = f->fifo_head;

	if (!fr || (f->nheap && frame_before(f->heap[0], fr)))
		return heap_pop(f);
	f->fifo_head = fr->next;
	if (!f->fifo_head)
		f->fifo_tail = NULL;
	f->nfifo--;
	fr->next = NULL;
	return fr;
}

static struct fframe *heap_pop(struct weft_fabric *f)
{
	struct fframe *top = f->heap[0], *last = f->heap[--f->nheap];
	size_t i = 0, n = f->nheap;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && frame_before(f->heap[c + 1], f->heap[c]))
			c++;
		if (!frame_before(f->heap[c], last))
			break;
		f->heap[i] = f->heap[c];
		i = c;
	}
	if (n)
		f->heap[i] = last;
	return top;
}

/* ---- ports -------------------------------------------------------------- */

/* The port of a node; NULL if it has none or is not a unicast node. */
static struct fport *port_find(const struct weft_fabric *f, uint16_t node)
{
	return node <= WEFT_NODE_MAX_UNICAST ? f->port[node] : NULL;
}

static struct fport *port_get(struct weft_fabric *f, uint16_t node, bool create)
{
	struct fport *p;

	if (node > WEFT_NODE_MAX_UNICAST)
		return NULL;
	p = f->port[node];
	if (p || !create)
		return p;
	if (f->nports == f->capports) {
		size_t nc = f->capports ? 2 * f->capports : 16;
		struct fport **nl = realloc(f->plist, nc * sizeof(*nl));

		if (!nl)
			return NULL;
		f->plist = nl;
		f->capports = nc;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->node = node;
	p->up = true;
	f->plist[f->nports++] = p;
	f->port[node] = p;
	return p;
}

static void count_drop(struct weft_fabric *f, struct fport *p, enum weft_fabric_drop d)
{
	if (p)
		p->st.drops[d]++;
	f->total.drops[d]++;
}

/* A buffer of size class cls and one reference; NULL when out of
 * memory. */
static struct fbuf *buf_get_class(struct weft_fabric *f, uint16_t cls)
{
	struct fbuf *b = f->buf_cache[cls];

	if (b) {
		f->buf_cache[cls] = b->next;
		f->nbufs_cached--;
	} else {
		b = malloc(sizeof(*b) + buf_class[cls]);
		if (!b)
			return NULL;
		b->cls = cls;
	}
	b->refs = 1;
	return b;
}

/* A buffer with room for len bytes (<= WEFT_WIRE_MAX_FRAME). */
static struct fbuf *buf_get(struct weft_fabric *f, size_t len)
{
	uint16_t cls = 0;

	while (buf_class[cls] < len)
		cls++;
	return buf_get_class(f, cls);
}

static void buf_set_len(struct fbuf *b, size_t len)
{
	b->len = (uint32_t)len;
	b->prefix[0] = (unsigned char)len;
	b->prefix[1] = (unsigned char)(len >> 8);
	b->prefix[2] = (unsigned char)(len >> 16);
	b->prefix[3] = (unsigned char)(len >> 24);
}

/* A buffer holding a copy of frame and its length prefix. */
static struct fbuf *buf_new(struct weft_fabric *f, const void *frame, size_t len)
{
	struct fbuf *b = buf_get(f, len);

	if (b) {
		buf_set_len(b, len);
		memcpy(b->data, frame, len);
	}
	return b;
}

static void buf_put(struct weft_fabric *f, struct fbuf *b)
{
	if (--b->refs)
		return;
	if (f->nbufs_cached >= FRAME_CACHE_MAX) {
		free(b);
		return;
	}
	b->next = f->buf_cache[b->cls];
	f->buf_cache[b->cls] = b;
	f->nbufs_cached++;
}

static struct fbuf *buf_of(const void *frame)
{
	return (struct fbuf *)((unsigned char *)(uintptr_t)frame - offsetof(struct fbuf, data));
}

void weft_fabric_frame_hold(const void *frame)
{
	buf_of(frame)->refs++;
}

void weft_fabric_frame_release(struct weft_fabric *f, const void *frame)
{
	buf_put(f, buf_of(frame));
}

void *weft_fabric_frame_alloc(struct weft_fabric *f)
{
	struct fbuf *b = buf_get_class(f, NR_BUF_CLASSES - 1);

	return b ? b->data : NULL;
}

/* A frame record from the cache if it has one; NULL when out of memory. */
static struct fframe *frame_alloc(struct weft_fabric *f)
{
	struct fframe *fr = f->frame_cache;

	if (!fr)
		return malloc(sizeof(*fr));
	f->frame_cache = fr->next;
	f->ncached--;
	return fr;
}

static void frame_free(struct weft_fabric *f, struct fframe *fr)
{
	if (fr->held)
		f->nheld--;
	f->nqueued--;
	f->port[fr->dst]->queued--;
	buf_put(f, fr->buf);
	if (f->ncached >= FRAME_CACHE_MAX) {
		free(fr);
		return;
	}
	fr->next = f->frame_cache;
	f->frame_cache = fr;
	f->ncached++;
}

static void park(struct weft_fabric *f, struct fport *p, struct fframe *fr, bool held)
{
	fr->next = NULL;
	if (held && !fr->held) {
		fr->held = true;
		f->nheld++;
	}
	if (p->park_tail)
		p->park_tail->next = fr;
	else
		p->park_head = fr;
	p->park_tail = fr;
	p->nparked++;
}

static struct fframe *unpark(struct fport *p)
{
	struct fframe *fr = p->park_head;

	p->park_head = fr->next;
	if (!p->park_head)
		p->park_tail = NULL;
	p->nparked--;
	return fr;
}

/* ---- life cycle ---------------------------------------------------------- */

struct weft_fabric *weft_fabric_new(uint64_t seed, size_t max_queued,
				    size_t capture_frames)
{
	struct weft_fabric *f;

	if (max_queued == 0)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->rng = seed;
	f->ft.routes = 1;
	f->max_queued = max_queued;
	f->hold_limit = max_queued / 2;
	f->port_limit = max_queued;
	f->heap = calloc(max_queued, sizeof(*f->heap));
	f->port = calloc(NR_UNICAST, sizeof(*f->port));
	f->scratch = calloc(NR_UNICAST, sizeof(*f->scratch));
	if (capture_frames)
		f->cap = calloc(capture_frames, sizeof(*f->cap));
	if (!f->heap || !f->port || !f->scratch || (capture_frames && !f->cap)) {
		free(f->scratch);
		free(f->heap);
		free(f->port);
		free(f->cap);
		free(f);
		return NULL;
	}
	f->ncap_slots = capture_frames;
	return f;
}

void weft_fabric_free(struct weft_fabric *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nheap; i++)
		frame_free(f, f->heap[i]);
	while (f->fifo_head) {
		struct fframe *fr = f->fifo_head;

		f->fifo_head = fr->next;
		frame_free(f, fr);
	}
	for (i = 0; i < f->nports; i++) {
		struct fport *p = f->plist[i];

		while (p->park_head)
			frame_free(f, unpark(p));
	}
	for (i = 0; i < f->nports; i++)
		free(f->plist[i]);
	for (i = 0; i < f->ncap_slots; i++)
		if (f->cap[i].buf)
			buf_put(f, f->cap[i].buf);
	while (f->frame_cache) {
		struct fframe *fr = f->frame_cache;

		f->frame_cache = fr->next;
		free(fr);
	}
	for (i = 0; i < NR_BUF_CLASSES; i++) {
		while (f->buf_cache[i]) {
			struct fbuf *b = f->buf_cache[i];

			f->buf_cache[i] = b->next;
			free(b);
		}
	}
	for (i = 0; i < WEFT_NR_MCAST_GROUPS; i++)
		free(f->mcast[i].nodes);
	free(f->cap);
	free(f->plist);
	free(f->port);
	free(f->scratch);
	free(f->heap);
	free(f);
}

void weft_fabric_set_faults(struct weft_fabric *f, const struct weft_fabric_faults *ft)
{
	f->ft = *ft;
	if (f->ft.routes == 0)
		f->ft.routes = 1;
	if (f->ft.drop_ppm > 1000000)
		f->ft.drop_ppm = 1000000;
}

void weft_fabric_get_faults(const struct weft_fabric *f, struct weft_fabric_faults *ft)
{
	*ft = f->ft;
}

void weft_fabric_set_tap(struct weft_fabric *f, weft_fabric_tap_fn fn, void *opaque)
{
	f->tap = fn;
	f->tap_opaque = opaque;
}

void weft_fabric_set_hold_limit(struct weft_fabric *f, size_t frames)
{
	f->hold_limit = frames < f->max_queued ? frames : f->max_queued;
}

void weft_fabric_set_port_limit(struct weft_fabric *f, size_t frames)
{
	if (frames == 0)
		frames = 1;
	f->port_limit = frames < f->max_queued ? frames : f->max_queued;
}

void weft_fabric_set_stall_ns(struct weft_fabric *f, uint64_t ns)
{
	f->stall_ns = ns;
}

void weft_fabric_set_expiry_ns(struct weft_fabric *f, uint64_t ns)
{
	f->expiry_ns = ns;
}

static bool port_full(const struct weft_fabric *f, const struct fport *p)
{
	return f->port_limit < f->max_queued && p->queued >= f->port_limit;
}

/* An attached port at its quota that has taken nothing for stall_ns. */
static bool port_stalled(const struct weft_fabric *f, const struct fport *p, uint64_t now)
{
	return f->stall_ns && p->attached && p->up && port_full(f, p) &&
	       now >= p->progress_at && now - p->progress_at >= f->stall_ns;
}

/* A destination that is present but has port_limit frames queued takes
 * no more for now (backpressure on the senders to it only), unless it
 * has stalled: then its frames are dropped instead. */
static bool dst_congested(const struct weft_fabric *f, uint16_t dst, uint64_t now)
{
	const struct fport *p = f->port[dst];

	return p && p->attached && p->up && port_full(f, p) && !port_stalled(f, p, now);
}

static bool any_congested(const struct weft_fabric *f, uint16_t src, uint16_t dst,
			  uint64_t now)
{
	size_t i;

	if (f->port_limit >= f->max_queued)
		return false;
	if (dst <= WEFT_NODE_MAX_UNICAST)
		return dst_congested(f, dst, now);
	if (dst == WEFT_NODE_BROADCAST) {
		for (i = 0; i < f->nports; i++)
			if (f->plist[i]->node != src && dst_congested(f, f->plist[i]->node, now))
				return true;
		return false;
	}
	if (dst - WEFT_NODE_MCAST_BASE < WEFT_NR_MCAST_GROUPS) {
		const struct mgroup *g = &f->mcast[dst - WEFT_NODE_MCAST_BASE];

		for (i = 0; i < g->n; i++)
			if (g->nodes[i] != src && dst_congested(f, g->nodes[i], now))
				return true;
	}
	return false;
}

/* ---- ports ---------------------------------------------------------------- */

/* The port of a unicast node, made if new: 0, -EINVAL or -ENOMEM. */
static int port_make(struct weft_fabric *f, uint16_t node, struct fport **pp)
{
	if (node > WEFT_NODE_MAX_UNICAST)
		return -EINVAL;
	*pp = port_get(f, node, true);
	return *pp ? 0 : -ENOMEM;
}

int weft_fabric_attach(struct weft_fabric *f, uint16_t node)
{
	struct fport *p;
	int r = port_make(f, node, &p);

	if (r)
		return r;
	if (p->attached)
		return -EBUSY;
	p->attached = true;
	p->known = true;
	f->nattached++;
	return 0;
}

void weft_fabric_detach(struct weft_fabric *f, uint16_t node)
{
	struct fport *p = port_get(f, node, false);

	if (p && p->attached) {
		p->attached = false;
		p->detached_at = UINT64_MAX;
		f->nattached--;
	}
}

int weft_fabric_set_port_up(struct weft_fabric *f, uint16_t node, bool up)
{
	struct fport *p;
	int r = port_make(f, node, &p);

	if (r)
		return r;
	p->up = up;
	return 0;
}

bool weft_fabric_port_is_up(const struct weft_fabric *f, uint16_t node)
{
	const struct fport *p = port_find(f, node);

	return !p || p->up;
}

size_t weft_fabric_port_held(const struct weft_fabric *f, uint16_t node)
{
	const struct fport *p = port_find(f, node);

	return p ? p->nparked : 0;
}

/* ---- multicast ------------------------------------------------------------ */

/* Node's index in the group (g->n if not a member) with the group in *gp;
 * -EINVAL if group or node is out of range. */
static long mcast_find(struct weft_fabric *f, unsigned int group, uint16_t node,
		       struct mgroup **gp)
{
	struct mgroup *g;
	size_t i;

	if (group >= WEFT_NR_MCAST_GROUPS || node > WEFT_NODE_MAX_UNICAST)
		return -EINVAL;
	g = &f->mcast[group];
	for (i = 0; i < g->n && g->nodes[i] != node; i++)
		;
	*gp = g;
	return (long)i;
}

int weft_fabric_mcast_join(struct weft_fabric *f, unsigned int group, uint16_t node)
{
	struct mgroup *g;
	long i = mcast_find(f, group, node, &g);

	if (i < 0)
		return (int)i;
	if ((size_t)i < g->n)
		return -EEXIST;
	if (g->n == g->cap) {
		size_t nc = g->cap ? 2 * g->cap : 8;
		uint16_t *nn = realloc(g->nodes, nc * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		g->nodes = nn;
		g->cap = nc;
	}
	g->nodes[g->n++] = node;
	return 0;
}

int weft_fabric_mcast_leave(struct weft_fabric *f, unsigned int group, uint16_t node)
{
	struct mgroup *g;
	long i = mcast_find(f, group, node, &g);

	if (i < 0)
		return (int)i;
	if ((size_t)i == g->n)
		return -ENOENT;
	g->nodes[i] = g->nodes[--g->n];
	return 0;
}

size_t weft_fabric_mcast_members(const struct weft_fabric *f, unsigned int group,
				 uint16_t *out, size_t max)
{
	const struct mgroup *g;
	size_t i;

	if (group >= WEFT_NR_MCAST_GROUPS)
		return 0;
	g = &f->mcast[group];
	for (i = 0; i < g->n && i < max; i++)
		out[i] = g->nodes[i];
	return g->n;
}

/* ---- submit --------------------------------------------------------------- */

/* The capture ring takes a reference to the frame's buffer (no copy). */
static void capture(struct weft_fabric *f, uint16_t src, struct fbuf *b)
{
	struct capslot *s;

	if (!f->ncap_slots) {
		f->cap_count++;
		return;
	}
	s = &f->cap[f->cap_count % f->ncap_slots];
	if (s->buf)
		buf_put(f, s->buf);
	b->refs++;
	s->buf = b;
	s->src = src;
	s->seq = f->cap_count++;
}

/* Destinations of a frame from src addressed to dst.  Returns how many
 * were written to out (at most max); 0 means there is no route. */
static size_t destinations(struct weft_fabric *f, uint16_t src, uint16_t dst,
			   uint16_t *out, size_t max)
{
	size_t n = 0, i;

	if (dst <= WEFT_NODE_MAX_UNICAST) {
		struct fport *p = f->port[dst];

		if (p && p->known && max)
			out[n++] = dst;
	} else if (dst == WEFT_NODE_BROADCAST) {
		/* Only nodes that are there: nothing is held for a broadcast. */
		for (i = 0; i < f->nports && n < max; i++)
			if (f->plist[i]->attached && f->plist[i]->node != src)
				out[n++] = f->plist[i]->node;
	} else if (dst - WEFT_NODE_MCAST_BASE < WEFT_NR_MCAST_GROUPS) {
		struct mgroup *g = &f->mcast[dst - WEFT_NODE_MCAST_BASE];

		for (i = 0; i < g->n && n < max; i++) {
			struct fport *p = f->port[g->nodes[i]];

			if (g->nodes[i] != src && p && p->attached)
				out[n++] = g->nodes[i];
		}
	}
	return n;
}

static size_t nr_destinations(const struct weft_fabric *f, uint16_t dst)
{
	if (dst == WEFT_NODE_BROADCAST)
		return f->nattached;
	if (dst > WEFT_NODE_MAX_UNICAST && dst - WEFT_NODE_MCAST_BASE < WEFT_NR_MCAST_GROUPS)
		return f->mcast[dst - WEFT_NODE_MCAST_BASE].n;
	return 1;
}

/* now + delay + r * skew + jitter, saturated below UINT64_MAX (which
 * means "never" to weft_fabric_next_due()). */
static uint64_t due_time(uint64_t now, uint64_t delay, uint64_t r, uint64_t skew,
			 uint64_t jitter)
{
	uint64_t t, rs;

	if (__builtin_mul_overflow(r, skew, &rs) || __builtin_add_overflow(now, delay, &t) ||
	    __builtin_add_overflow(t, rs, &t) || __builtin_add_overflow(t, jitter, &t) ||
	    t == UINT64_MAX)
		return UINT64_MAX - 1;
	return t;
}

/* ---- drop rules ------------------------------------------------------------ */

int weft_fabric_add_rule(struct weft_fabric *f, const struct weft_fabric_rule *r)
{
	bool src_ok = r->src_node <= WEFT_NODE_MAX_UNICAST || r->src_node == WEFT_FABRIC_ANY;
	bool dst_ok = r->dst_node <= WEFT_NODE_MAX_UNICAST || r->dst_node == WEFT_FABRIC_ANY;

	if (r->left == 0 || !src_ok || !dst_ok)
		return -EINVAL;
	if (f->nrules == WEFT_FABRIC_MAX_RULES)
		return -ENOSPC;
	f->rules[f->nrules] = *r;
	f->rules[f->nrules].dropped = 0;
	return (int)f->nrules++;
}

size_t weft_fabric_rules(const struct weft_fabric *f, struct weft_fabric_rule *out,
			 size_t max)
{
	size_t i;

	for (i = 0; i < f->nrules && i < max; i++)
		out[i] = f->rules[i];
	return f->nrules;
}

void weft_fabric_clear_rules(struct weft_fabric *f)
{
	f->nrules = 0;
}

/* Does a rule take this copy (and count it)? */
static bool rule_drops(struct weft_fabric *f, const struct weft_wire_hdr *hp, uint16_t src,
		       uint16_t dst)
{
	struct weft_wire_hdr h;
	size_t i;

	if (!f->nrules)
		return false;
	memcpy(&h, hp, sizeof(h));
	for (i = 0; i < f->nrules; i++) {
		struct weft_fabric_rule *r = &f->rules[i];

		if (r->left && (r->src_node == WEFT_FABRIC_ANY || r->src_node == src) &&
		    (r->src_window == WEFT_FABRIC_ANY || r->src_window == h.src_window) &&
		    (r->dst_node == WEFT_FABRIC_ANY || r->dst_node == dst) &&
		    (r->type == 0 || r->type == h.type)) {
			r->left--;
			r->dropped++;
			return true;
		}
	}
	return false;
}

/* Route the copies of one frame (each takes a reference to its buffer);
 * the caller checked the capacity.  Returns the number of copies queued. */
static size_t route(struct weft_fabric *f, struct fport *sp, uint16_t src,
		    struct fbuf *b, uint64_t now, bool replayed)
{
	const struct weft_wire_hdr *hp = (const struct weft_wire_hdr *)b->data;
	uint16_t *dsts = f->scratch;
	size_t nd, i, queued = 0;
	uint16_t dst = hp->dst_node;

	nd = destinations(f, src, dst, dsts, nr_destinations(f, dst));
	if (nd == 0) {
		count_drop(f, sp, WEFT_FABRIC_DROP_NO_ROUTE);
		return 0;
	}
	for (i = 0; i < nd; i++) {
		struct fport *dp = f->port[dsts[i]];
		struct fframe *fr;
		uint64_t r;

		if (!dp->up) {
			count_drop(f, dp, WEFT_FABRIC_DROP_PORT_DOWN);
			continue;
		}
		if (port_stalled(f, dp, now)) {
			count_drop(f, dp, WEFT_FABRIC_DROP_STALLED);
			continue;
		}
		if (!dp->attached && port_full(f, dp)) {
			/* An absent node's quota: in flight plus held. */
			count_drop(f, dp, WEFT_FABRIC_DROP_ABSENT);
			continue;
		}
		if (rule_drops(f, hp, src, dsts[i])) {
			count_drop(f, dp, WEFT_FABRIC_DROP_RULE);
			continue;
		}
		if (f->ft.drop_ppm && rng_below(f, 1000000) < f->ft.drop_ppm) {
			count_drop(f, dp, WEFT_FABRIC_DROP_RANDOM);
			continue;
		}
		if (f->nqueued >= f->max_queued) {
			/* Only when one broadcast has more copies than the
			 * whole fabric holds (see weft_fabric_submit). */
			count_drop(f, dp, WEFT_FABRIC_DROP_OVERFLOW);
			continue;
		}
		fr = frame_alloc(f);
		if (!fr) {
			count_drop(f, dp, WEFT_FABRIC_DROP_OVERFLOW);
			continue;
		}
		b->refs++;
		fr->buf = b;
		fr->src = src;
		fr->dst = dsts[i];
		fr->replayed = replayed;
		fr->held = false;
		fr->next = NULL;
		fr->seq = f->seq++;
		r = f->ft.routes > 1 ? (sp ? sp->next_route++ : 0) % f->ft.routes : 0;
		fr->due = due_time(now, f->ft.delay_ns, r, f->ft.route_skew_ns,
				   f->ft.jitter_ns ? rng_below(f, f->ft.jitter_ns + 1) : 0);
		f->nqueued++;
		if (++dp->queued == f->port_limit) {
			dp->progress_at = now;
			dp->stall_seen = false;
		}
		flight_push(f, fr);
		queued++;
	}
	return queued;
}

static bool frame_valid(uint16_t src_node, const void *frame, size_t len)
{
	struct weft_wire_hdr h;

	if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME)
		return false;
	memcpy(&h, frame, sizeof(h));
	return h.version == WEFT_WIRE_VERSION &&
	       h.length == len - WEFT_WIRE_HDR_SIZE &&
	       h.src_node == src_node &&
	       h.type != 0 && h.type < WEFT_PKT_HELLO;
}

/* Submit a frame; own: the caller's buffer from weft_fabric_frame_alloc()
 * holding it (the fabric's unless -EAGAIN), or NULL to copy frame. */
static int submit(struct weft_fabric *f, uint16_t src_node, const void *frame, size_t len,
		  uint64_t now, struct fbuf *own)
{
	struct fport *sp = port_find(f, src_node);
	struct fbuf *b;
	size_t need;
	uint16_t dst;

	if (!sp || !sp->attached) {
		count_drop(f, sp, WEFT_FABRIC_DROP_NOT_REGISTERED);
		goto dropped;
	}
	if (!frame_valid(src_node, frame, len)) {
		sp->st.rx_frames++;
		sp->st.rx_bytes += len;
		f->total.rx_frames++;
		f->total.rx_bytes += len;
		count_drop(f, sp, WEFT_FABRIC_DROP_BAD_FRAME);
		goto dropped;
	}
	memcpy(&dst, (const unsigned char *)frame + offsetof(struct weft_wire_hdr, dst_node),
	       sizeof(dst));
	need = nr_destinations(f, dst);
	if ((need > f->max_queued - f->nqueued && f->nqueued > 0) ||
	    any_congested(f, src_node, dst, now))
		return -EAGAIN;
	sp->st.rx_frames++;
	sp->st.rx_bytes += len;
	f->total.rx_frames++;
	f->total.rx_bytes += len;
	if (f->tap)
		f->tap(f->tap_opaque, src_node, frame, len, false);
	/* The one copy of the frame's bytes in the fabric (none if the
	 * caller built it in a fabric buffer). */
	if (own) {
		b = own;
		buf_set_len(b, len);
	} else {
		b = buf_new(f, frame, len);
		if (!b) {
			count_drop(f, sp, WEFT_FABRIC_DROP_OVERFLOW);
			return 0;
		}
	}
	capture(f, src_node, b);
	if (!sp->up)
		count_drop(f, sp, WEFT_FABRIC_DROP_PORT_DOWN);
	else
		route(f, sp, src_node, b, now, false);
	buf_put(f, b);
	return 0;
dropped:
	if (own)
		buf_put(f, own);
	return 0;
}

int weft_fabric_submit(struct weft_fabric *f, uint16_t src_node,
		       const void *frame, size_t len, uint64_t now)
{
	return submit(f, src_node, frame, len, now, NULL);
}

int weft_fabric_submit_frame(struct weft_fabric *f, uint16_t src_node,
			     void *frame, size_t len, uint64_t now)
{
	return submit(f, src_node, frame, len, now, buf_of(frame));
}

/* ---- delivery ------------------------------------------------------------- */

struct pollctx {
	weft_fabric_deliver_fn fn;
	void *opaque;
	size_t delivered;
	uint64_t now;
};

static void delivered(struct weft_fabric *f, struct pollctx *c, struct fport *p,
		      struct fframe *fr)
{
	c->delivered++;
	p->progress_at = c->now;
	p->stall_seen = false;
	p->st.tx_frames++;
	p->st.tx_bytes += fr->buf->len;
	f->total.tx_frames++;
	f->total.tx_bytes += fr->buf->len;
	if (fr->replayed) {
		p->st.replayed++;
		f->total.replayed++;
	}
	frame_free(f, fr);
}

/* Hand a due frame to its destination, or park/drop it. */
static void deliver_one(struct weft_fabric *f, struct pollctx *c, struct fframe *fr)
{
	struct fport *p = f->port[fr->dst];

	if (!p->up) {
		count_drop(f, p, WEFT_FABRIC_DROP_PORT_DOWN);
		frame_free(f, fr);
		return;
	}
	if (!p->attached) {
		if (!fr->held && f->nheld >= f->hold_limit) {
			count_drop(f, p, WEFT_FABRIC_DROP_ABSENT);
			frame_free(f, fr);
			return;
		}
		park(f, p, fr, true);
		return;
	}
	/* Behind frames it refused earlier, keep the order. */
	if (p->park_head ||
	    c->fn(c->opaque, fr->dst, fr->buf->data, fr->buf->len) == -EAGAIN) {
		park(f, p, fr, false);
		return;
	}
	delivered(f, c, p, fr);
}

/* Retry the parked frames of an attached or down port, in order. */
static void drain_parked(struct weft_fabric *f, struct pollctx *c, struct fport *p)
{
	while (p->park_head) {
		struct fframe *fr = p->park_head;

		if (!p->up) {
			unpark(p);
			count_drop(f, p, WEFT_FABRIC_DROP_PORT_DOWN);
			frame_free(f, fr);
			continue;
		}
		if (!p->attached)
			return;
		if (c->fn(c->opaque, fr->dst, fr->buf->data, fr->buf->len) == -EAGAIN)
			return;
		unpark(p);
		delivered(f, c, p, fr);
	}
}

/* now >= t + d, without overflow. */
static bool past(uint64_t now, uint64_t t, uint64_t d)
{
	return now >= t && now - t >= d;
}

/* Forget a detached port: its counters go (the totals keep them). */
static void port_forget(struct weft_fabric *f, size_t i)
{
	struct fport *p = f->plist[i];

	f->port[p->node] = NULL;
	f->plist[i] = f->plist[--f->nports];
	free(p);
}

/* Drop what absent nodes have held too long; forget long-gone ports. */
static void expire(struct weft_fabric *f, uint64_t now)
{
	size_t i = f->nports;

	while (i-- > 0) {
		struct fport *p = f->plist[i];

		if (p->attached)
			continue;
		if (p->detached_at == UINT64_MAX)
			p->detached_at = now;
		while (p->park_head && past(now, p->park_head->due, f->expiry_ns)) {
			count_drop(f, p, WEFT_FABRIC_DROP_EXPIRED);
			frame_free(f, unpark(p));
		}
		if (p->up && p->queued == 0 && past(now, p->detached_at, f->expiry_ns))
			port_forget(f, i);
	}
}

size_t weft_fabric_poll(struct weft_fabric *f, uint64_t now,
			weft_fabric_deliver_fn fn, void *opaque)
{
	struct pollctx c = { fn, opaque, 0, now };
	size_t i;

	if (f->expiry_ns)
		expire(f, now);
	for (i = 0; i < f->nports; i++) {
		struct fport *p = f->plist[i];

		if (p->park_head)
			drain_parked(f, &c, p);
		if (port_stalled(f, p, now))
			p->stall_seen = true;
	}
	for (;;) {
		struct fframe *fr = flight_first(f);

		if (!fr || fr->due > now)
			break;
		deliver_one(f, &c, flight_pop(f));
	}
	return c.delivered;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - 1 - b ? UINT64_MAX - 1 : a + b;
}

uint64_t weft_fabric_next_due(const struct weft_fabric *f)
{
	const struct fframe *first = flight_first(f);
	uint64_t t = first ? first->due : UINT64_MAX;
	size_t i;

	if (!f->stall_ns && !f->expiry_ns)
		return t;
	for (i = 0; i < f->nports; i++) {
		const struct fport *p = f->plist[i];
		uint64_t d = UINT64_MAX;

		/* Only deadlines that poll() will act on, so that none is
		 * reported again once it has passed. */
		if (p->attached && f->stall_ns && port_full(f, p) && !p->stall_seen)
			d = sat_add(p->progress_at, f->stall_ns);
		else if (!p->attached && f->expiry_ns && p->detached_at == UINT64_MAX)
			d = 0;  /* not stamped yet: poll now */
		else if (!p->attached && f->expiry_ns && p->park_head)
			d = sat_add(p->park_head->due, f->expiry_ns);
		else if (!p->attached && f->expiry_ns && p->up && p->queued == 0)
			d = sat_add(p->detached_at, f->expiry_ns);
		if (d < t)
			t = d;
	}
	return t;
}

size_t weft_fabric_queued(const struct weft_fabric *f)
{
	return f->nqueued;
}

size_t weft_fabric_parked(const struct weft_fabric *f)
{
	return f->nqueued - f->nheap - f->nfifo;
}

/* ---- capture and replay --------------------------------------------------- */

uint64_t weft_fabric_capture_mark(const struct weft_fabric *f)
{
	return f->cap_count;
}

size_t weft_fabric_replay(struct weft_fabric *f, uint64_t before_mark,
			  size_t n, uint64_t now)
{
	uint64_t first, s, end;
	size_t done = 0;

	if (!f->ncap_slots)
		return 0;
	end = (before_mark && before_mark < f->cap_count) ? before_mark : f->cap_count;
	first = f->cap_count > f->ncap_slots ? f->cap_count - f->ncap_slots : 0;
	for (s = first; s < end && done < n; s++) {
		struct capslot *cs = &f->cap[s % f->ncap_slots];
		struct weft_wire_hdr h;
		unsigned char copy[WEFT_WIRE_MAX_FRAME];

		if (!cs->buf || cs->seq != s)
			continue;
		memcpy(&h, cs->buf->data, sizeof(h));
		if (nr_destinations(f, h.dst_node) > f->max_queued - f->nqueued)
			break;
		if (f->tap) {
			memcpy(copy, cs->buf->data, cs->buf->len);
			copy[offsetof(struct weft_wire_hdr, flags)] |= WEFT_WF_REPLAYED;
			f->tap(f->tap_opaque, cs->src, copy, cs->buf->len, true);
		}
		route(f, port_get(f, cs->src, false), cs->src, cs->buf, now, true);
		done++;
	}
	return done;
}

/* ---- statistics ----------------------------------------------------------- */

const struct weft_fabric_port_stats *weft_fabric_port_stats(const struct weft_fabric *f,
							   uint16_t node)
{
	const struct fport *p = port_find(f, node);

	return p ? &p->st : NULL;
}

const struct weft_fabric_port_stats *weft_fabric_total_stats(const struct weft_fabric *f)
{
	return &f->total;
}

size_t weft_fabric_ports(const struct weft_fabric *f, uint16_t *out, size_t max)
{
	size_t i;

	for (i = 0; i < f->nports && i < max; i++)
		out[i] = f->plist[i]->node;
	return f->nports;
}

bool weft_fabric_port_attached(const struct weft_fabric *f, uint16_t node)
{
	const struct fport *p = port_find(f, node);

	return p && p->attached;
}

const char *weft_fabric_drop_name(unsigned int d)
{
	static const char *const names[] = {
#define WEFT_FABRIC_DROP_NAME(n) #n,
		WEFT_FABRIC_DROP_LIST(WEFT_FABRIC_DROP_NAME)
#undef WEFT_FABRIC_DROP_NAME
	};

	return d < WEFT_FABRIC_DROP__COUNT ? names[d] : "UNKNOWN";
}
