/* SPDX-License-Identifier: MIT */
/*
 * Shared-memory transport between an adapter and weft-switch on one host
 * (docs/switch.md, "Shared-memory transport").
 *
 * An adapter asks for it with WEFT_WF_SHM_REQ in its HELLO's flags.  A
 * switch that grants it answers HELLO_ACK (status 0) with WEFT_WF_SHM in
 * flags and passes three descriptors with SCM_RIGHTS on that message, in
 * this order: a memfd of WEFT_SHM_SIZE bytes (created and sealed against
 * shrinking by the switch), an eventfd that wakes the adapter and an
 * eventfd that wakes the switch.  From then on data frames go through
 * the two rings in the memfd; the socket carries nothing more, but its
 * closing still ends the connection.
 *
 * The memfd holds a struct weft_shm_hdr and two rings: adapter -> switch
 * (WEFT_SHM_A2S_OFF) and switch -> adapter (WEFT_SHM_S2A_OFF), each a
 * struct weft_shm_ring and WEFT_SHM_RING_SIZE bytes of records.  A ring
 * has one producer and one consumer.  head and tail are free-running byte
 * counters (the position in the data is the counter modulo the size),
 * written only by the producer and by the consumer respectively.  A
 * record is a 4-byte length and one packet (struct weft_wire_hdr and its
 * payload, WEFT_WIRE_HDR_SIZE .. WEFT_WIRE_MAX_FRAME bytes), padded to 8
 * bytes; it never wraps: where the rest of the data is too short for the
 * next record, the producer writes the length WEFT_SHM_PAD and goes on at
 * the start.
 *
 * Wake-ups: a consumer that found its ring empty sets cons_sleeping and
 * looks once more before it waits on its eventfd; a producer that
 * published a record takes cons_sleeping back to 0 and signals only if it
 * was set.  A producer that found the ring full sets prod_waiting and
 * looks once more; a consumer that freed room takes prod_waiting back and
 * then signals the producer's eventfd.  So an eventfd is written only
 * when its reader sleeps, not per frame.
 *
 * Trust: each side checks everything it reads from the memory it shares
 * with its peer.  The consumer copies a record out before it looks at
 * it, and every index and length is bounded (weft_shm_pop() and
 * weft_shm_push() return -EPROTO for a peer's index or length that is
 * not possible); the switch then drops the connection, as for a broken
 * stream.  The layout is fixed by this header, not read from the memory.
 */
#ifndef WEFT_SHM_H
#define WEFT_SHM_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "weft/wire.h"

#define WEFT_SHM_MAGIC          0x4d485357u /* "WSHM" */
#define WEFT_SHM_VERSION        1u
#define WEFT_SHM_RING_SIZE      (256u * 1024u) /* data bytes per ring */
#define WEFT_SHM_CTL_SIZE       256u           /* struct weft_shm_ring, padded */
#define WEFT_SHM_A2S_OFF        4096u
#define WEFT_SHM_S2A_OFF        (WEFT_SHM_A2S_OFF + WEFT_SHM_CTL_SIZE + WEFT_SHM_RING_SIZE)
#define WEFT_SHM_SIZE           (WEFT_SHM_S2A_OFF + WEFT_SHM_CTL_SIZE + WEFT_SHM_RING_SIZE)
#define WEFT_SHM_ALIGN          8u
#define WEFT_SHM_PAD            0xffffffffu /* record length: skip to the start */
#define WEFT_SHM_NFDS           3u          /* memfd, adapter's and switch's eventfd */

/* weft_wire_hdr.flags of HELLO and HELLO_ACK */
#define WEFT_WF_SHM_REQ         0x01u /* HELLO: the adapter can use shared memory */
#define WEFT_WF_SHM             0x02u /* HELLO_ACK: descriptors attached, rings in use */

struct weft_shm_hdr {
	uint32_t magic;         /* WEFT_SHM_MAGIC */
	uint32_t version;       /* WEFT_SHM_VERSION */
	uint32_t size;          /* WEFT_SHM_SIZE */
	uint32_t ring_size;     /* WEFT_SHM_RING_SIZE */
	uint32_t a2s_off;       /* WEFT_SHM_A2S_OFF */
	uint32_t s2a_off;       /* WEFT_SHM_S2A_OFF */
};

/* Each counter on its own cache line: the two sides write different ones. */
struct weft_shm_ring {
	uint32_t head;          /* producer: bytes published */
	uint8_t pad0[60];
	uint32_t tail;          /* consumer: bytes consumed */
	uint8_t pad1[60];
	uint32_t cons_sleeping; /* consumer waits on its eventfd */
	uint8_t pad2[60];
	uint32_t prod_waiting;  /* producer waits for room */
	uint8_t pad3[60];
};
WEFT_STATIC_ASSERT(sizeof(struct weft_shm_ring) == WEFT_SHM_CTL_SIZE, "shm ring control");
WEFT_STATIC_ASSERT((WEFT_SHM_RING_SIZE & (WEFT_SHM_RING_SIZE - 1)) == 0, "shm ring size");

/*
 * One side's view of one ring: the shared control and data, and this
 * side's own copy of its counter (the shared one is only published).
 */
struct weft_shm_view {
	struct weft_shm_ring *ctl;
	uint8_t *data;
	uint32_t pos;           /* producer: head; consumer: tail */
};

static inline void weft_shm_init(void *mem)
{
	struct weft_shm_hdr *h = (struct weft_shm_hdr *)mem;

	memset(mem, 0, WEFT_SHM_SIZE);
	h->magic = WEFT_SHM_MAGIC;
	h->version = WEFT_SHM_VERSION;
	h->size = WEFT_SHM_SIZE;
	h->ring_size = WEFT_SHM_RING_SIZE;
	h->a2s_off = WEFT_SHM_A2S_OFF;
	h->s2a_off = WEFT_SHM_S2A_OFF;
}

/* True when the header at mem is the one this build writes. */
static inline bool weft_shm_hdr_ok(const void *mem)
{
	const struct weft_shm_hdr *h = (const struct weft_shm_hdr *)mem;

	return h->magic == WEFT_SHM_MAGIC && h->version == WEFT_SHM_VERSION &&
	       h->size == WEFT_SHM_SIZE && h->ring_size == WEFT_SHM_RING_SIZE &&
	       h->a2s_off == WEFT_SHM_A2S_OFF && h->s2a_off == WEFT_SHM_S2A_OFF;
}

/* A view of the ring at offset off (WEFT_SHM_A2S_OFF or WEFT_SHM_S2A_OFF)
 * as its producer (starting at the published head) or consumer. */
static inline void weft_shm_view_init(struct weft_shm_view *v, void *mem, uint32_t off,
				      bool producer)
{
	v->ctl = (struct weft_shm_ring *)((uint8_t *)mem + off);
	v->data = (uint8_t *)mem + off + WEFT_SHM_CTL_SIZE;
	v->pos = producer ? __atomic_load_n(&v->ctl->head, __ATOMIC_RELAXED)
			  : __atomic_load_n(&v->ctl->tail, __ATOMIC_RELAXED);
}

static inline uint32_t weft_shm_rec_size(uint32_t len)
{
	return (WEFT_WIRE_LEN_PREFIX + len + WEFT_SHM_ALIGN - 1) & ~(WEFT_SHM_ALIGN - 1);
}

/* A counter of the peer is possible when it is aligned and at most a
 * ring's size away from ours in the right direction. */
static inline bool weft_shm_span_ok(uint32_t head, uint32_t tail)
{
	return head - tail <= WEFT_SHM_RING_SIZE && (head - tail) % WEFT_SHM_ALIGN == 0;
}

/*
 * Producer: publish one packet of len bytes.  0, -EAGAIN when the ring
 * has no room for it (nothing written), -EINVAL for a length outside the
 * wire's bounds, -EPROTO when the consumer's tail is impossible.
 */
static inline int weft_shm_push(struct weft_shm_view *v, const void *pkt, uint32_t len)
{
	uint32_t tail = __atomic_load_n(&v->ctl->tail, __ATOMIC_ACQUIRE);
	uint32_t need = weft_shm_rec_size(len);
	uint32_t at = v->pos % WEFT_SHM_RING_SIZE;
	uint32_t skip = 0;

	if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME)
		return -EINVAL;
	if (!weft_shm_span_ok(v->pos, tail))
		return -EPROTO;
	if (WEFT_SHM_RING_SIZE - at < need)
		skip = WEFT_SHM_RING_SIZE - at;
	if (WEFT_SHM_RING_SIZE - (v->pos - tail) < skip + need)
		return -EAGAIN;
	if (skip) {
		uint32_t pad = WEFT_SHM_PAD;

		memcpy(v->data + at, &pad, sizeof(pad));
		v->pos += skip;
		at = 0;
	}
	memcpy(v->data + at, &len, sizeof(len));
	memcpy(v->data + at + WEFT_WIRE_LEN_PREFIX, pkt, len);
	v->pos += need;
	__atomic_store_n(&v->ctl->head, v->pos, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Consumer: where the next packet lies in the ring, without consuming
 * it: *pkt is set to its first byte, and the length (read once and
 * checked) is returned; 0 when the ring is empty, -EPROTO when the
 * producer's head or a record length is impossible.  The bytes stay in
 * memory the producer shares: it may change them meanwhile, so whoever
 * reads them copies what it checks before checking it, once.  *rec is
 * set to the bytes weft_shm_consume() then takes (the record and a pad
 * before it).
 */
static inline int weft_shm_peek_ref(struct weft_shm_view *v, const uint8_t **pkt, uint32_t *rec)
{
	uint32_t head = __atomic_load_n(&v->ctl->head, __ATOMIC_ACQUIRE);
	uint32_t at = v->pos % WEFT_SHM_RING_SIZE;
	uint32_t avail, len, skip = 0;

	*rec = 0;
	if (!weft_shm_span_ok(head, v->pos))
		return -EPROTO;
	avail = head - v->pos;
	if (!avail)
		return 0;
	if (WEFT_SHM_RING_SIZE - at < WEFT_WIRE_LEN_PREFIX)
		return -EPROTO;
	memcpy(&len, v->data + at, sizeof(len));
	if (len == WEFT_SHM_PAD) {
		skip = WEFT_SHM_RING_SIZE - at;
		if (avail <= skip)
			return -EPROTO;
		avail -= skip;
		at = 0;
		memcpy(&len, v->data, sizeof(len));
	}
	if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME ||
	    weft_shm_rec_size(len) > avail || WEFT_SHM_RING_SIZE - at < weft_shm_rec_size(len))
		return -EPROTO;
	*pkt = v->data + at + WEFT_WIRE_LEN_PREFIX;
	*rec = skip + weft_shm_rec_size(len);
	return (int)len;
}

/*
 * Consumer: copy the next packet into buf (WEFT_WIRE_MAX_FRAME bytes)
 * without consuming it; returns as weft_shm_peek_ref().
 */
static inline int weft_shm_peek(struct weft_shm_view *v, void *buf, uint32_t *rec)
{
	const uint8_t *pkt;
	int len = weft_shm_peek_ref(v, &pkt, rec);

	if (len > 0)
		memcpy(buf, pkt, (size_t)len);
	return len;
}

/* Consumer: the packet weft_shm_peek() returned is taken. */
static inline void weft_shm_consume(struct weft_shm_view *v, uint32_t rec)
{
	v->pos += rec;
	__atomic_store_n(&v->ctl->tail, v->pos, __ATOMIC_RELEASE);
}

/* Producer, after publishing: true when the consumer sleeps and its
 * eventfd must be written (the flag is taken back here). */
static inline bool weft_shm_wake_consumer(struct weft_shm_view *v)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&v->ctl->cons_sleeping, __ATOMIC_RELAXED))
		return false;
	return __atomic_exchange_n(&v->ctl->cons_sleeping, 0, __ATOMIC_SEQ_CST) != 0;
}

/* Consumer, after taking records: true when the producer waits for room
 * and its eventfd must be written. */
static inline bool weft_shm_wake_producer(struct weft_shm_view *v)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&v->ctl->prod_waiting, __ATOMIC_RELAXED))
		return false;
	return __atomic_exchange_n(&v->ctl->prod_waiting, 0, __ATOMIC_SEQ_CST) != 0;
}

/*
 * Consumer, before waiting on its eventfd: announces the sleep and
 * returns true if the ring is empty (then wait), false if a record came
 * in meanwhile (then the flag is taken back; go on reading).
 */
static inline bool weft_shm_consumer_sleep(struct weft_shm_view *v)
{
	__atomic_store_n(&v->ctl->cons_sleeping, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&v->ctl->head, __ATOMIC_ACQUIRE) == v->pos)
		return true;
	__atomic_store_n(&v->ctl->cons_sleeping, 0, __ATOMIC_RELAXED);
	return false;
}

/*
 * Producer, after weft_shm_push() said -EAGAIN: announces the wait and
 * returns true if the ring is still too full for a record of len bytes
 * (then wait for the eventfd), false if room came meanwhile.
 */
static inline bool weft_shm_producer_wait(struct weft_shm_view *v, uint32_t len)
{
	uint32_t tail;

	__atomic_store_n(&v->ctl->prod_waiting, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	tail = __atomic_load_n(&v->ctl->tail, __ATOMIC_ACQUIRE);
	/* Room for the record and a pad before it, whatever the position. */
	if (weft_shm_span_ok(v->pos, tail) &&
	    WEFT_SHM_RING_SIZE - (v->pos - tail) >= 2 * weft_shm_rec_size(len))
		return false;
	return true;
}

#endif /* WEFT_SHM_H */
