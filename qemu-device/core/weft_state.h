/* SPDX-License-Identifier: MIT */
/*
 * Saved adapter state (docs/qemu-device.md, "Migration and snapshots"):
 * the writer and the reader of the byte stream that weft_core_save()
 * makes and weft_core_load() takes.  Nothing here is part of the API.
 *
 * The stream is a sequence of records.  A struct record holds a whole C
 * struct as its bytes, with its pointer fields zeroed: a field added to
 * the struct is carried without code of its own.  A table record holds
 * the elements of an array that are not all zero, each with its index.
 * Every record starts with its name's hash, its element size and its
 * element count, and the reader refuses a record whose three differ from
 * what this build expects: a stream from a build whose structs differ is
 * refused as a whole, with the struct named, and never half loaded.
 * Pointer fields are named by offset lists; the pointed-to data follows
 * as records of the engine that owns it (weft_state.c for the core,
 * weft_verbs_save/load in weft_verbs_obj.c, weft_match.c, weft_cnt.c).
 * Deadline fields (absolute now_ns() values, 0 = none) are named the same
 * way and travel as time left, so the stream carries no clock value.
 */
#ifndef WEFT_STATE_H
#define WEFT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEFT_STATE_MAGIC        0x5441545354464557ull   /* "WEFTSTAT" */
#define WEFT_STATE_VERSION      1u

/* The pointer fields and the deadline fields (uint64_t) of a struct,
 * by offset. */
struct weft_state_layout {
	const size_t *ptr;
	unsigned int nptr;
	const size_t *dl;
	unsigned int ndl;
};

#define WEFT_STATE_N(a) ((unsigned int)(sizeof(a) / sizeof((a)[0])))

struct weft_state_w {
	uint64_t now;           /* the clock at save */
	uint8_t *buf;
	size_t len, cap;
	bool oom;
};

struct weft_state_r {
	uint64_t now;           /* the clock at load */
	const uint8_t *buf;
	size_t len, off;
	char *err;
	size_t errlen;
	bool bad;
};

void weft_state_put(struct weft_state_w *w, const void *p, size_t n);
void weft_state_put_u32(struct weft_state_w *w, uint32_t v);
void weft_state_put_u64(struct weft_state_w *w, uint64_t v);
/* One struct of size bytes, its pointer fields (lay, may be NULL) as 0. */
void weft_state_put_struct(struct weft_state_w *w, const char *name, const void *p,
			   size_t size, const struct weft_state_layout *lay);
/* The elements of an n-element table that are not all zero (pointer
 * fields counted as zero and written as 0). */
void weft_state_put_table(struct weft_state_w *w, const char *name, const void *base,
			  uint32_t n, size_t esize, const struct weft_state_layout *lay);

/* The first failure's message (printf format); returns false. */
bool weft_state_fail(struct weft_state_r *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool weft_state_get(struct weft_state_r *r, void *p, size_t n);
bool weft_state_get_u32(struct weft_state_r *r, uint32_t *v);
bool weft_state_get_u64(struct weft_state_r *r, uint64_t *v);
/* Reads a struct record into p; p's pointer fields keep their values. */
bool weft_state_get_struct(struct weft_state_r *r, const char *name, void *p, size_t size,
			   const struct weft_state_layout *lay);
/* Reads a table record of exactly n elements into base: the elements not
 * in the stream become zero (pointers too: the caller's tables are fresh,
 * their pointers NULL), those in it keep their pointer fields. */
bool weft_state_get_table(struct weft_state_r *r, const char *name, void *base, uint32_t n,
			  size_t esize, const struct weft_state_layout *lay);
/* The bool fields at offsets off[0..n) of count structs of stride bytes
 * from base hold 0 or 1 (read as bytes: another value is refused before
 * any code reads it as a bool). */
bool weft_state_bools(struct weft_state_r *r, const char *what, const void *base, size_t count,
		      size_t stride, const size_t *off, unsigned int n);
#define WEFT_STATE_BOOLS(r, what, base, count, type, ...)                       \
	({                                                                      \
		static const size_t bo_[] = { __VA_ARGS__ };                    \
		weft_state_bools(r, what, base, count, sizeof(type), bo_,        \
				 WEFT_STATE_N(bo_));                             \
	})
/* A count from the stream that must be at most max; false (and the
 * reader failed) otherwise. */
bool weft_state_get_count(struct weft_state_r *r, const char *what, uint64_t *v, uint64_t max);

/* A deadline (absolute now_ns() value, 0 = none) as time left at save,
 * and back at load: for deadlines the layouts do not name. */
static inline uint64_t weft_state_rel(const struct weft_state_w *w, uint64_t d)
{
	return d ? (d > w->now ? d - w->now + 1 : 1) : 0;
}

static inline uint64_t weft_state_abs(const struct weft_state_r *r, uint64_t rel)
{
	return rel ? r->now + rel - 1 : 0;
}

/* Per-engine save/load of what the engine owns (after its struct). */
struct weft_core;
void weft_verbs_save(const struct weft_core *c, struct weft_state_w *w);
bool weft_verbs_load(struct weft_core *c, struct weft_state_r *r);
void weft_match_save(const struct weft_core *c, struct weft_state_w *w);
bool weft_match_load(struct weft_core *c, struct weft_state_r *r);
void weft_cnt_save(const struct weft_core *c, struct weft_state_w *w);
bool weft_cnt_load(struct weft_core *c, struct weft_state_r *r);

#endif /* WEFT_STATE_H */
