/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the shared-memory rings of weft-host/shm.h: order and
 * contents across many wrap-arounds, a full ring, the wake-up flags, and
 * a hostile peer's impossible indexes and lengths rejected (-EPROTO)
 * without reading or writing outside the ring.
 */
#include <stdlib.h>
#include <string.h>

#include "weft-host/shm.h"
#include "weft_test.h"

static void *shm_new(void)
{
	void *m = aligned_alloc(64, WEFT_SHM_SIZE);

	if (!m)
		t_bail("out of memory");
	weft_shm_init(m);
	return m;
}

/* A packet of len bytes whose bytes all derive from seq. */
static void mkpkt(unsigned char *p, uint32_t len, uint32_t seq)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seq * 31u + i);
	memcpy(p, &seq, sizeof(seq));
}

static bool pkt_ok(const unsigned char *p, uint32_t len, uint32_t seq)
{
	unsigned char want[WEFT_WIRE_MAX_FRAME];

	mkpkt(want, len, seq);
	return memcmp(p, want, len) == 0;
}

static uint32_t len_of(uint32_t seq)
{
	return WEFT_WIRE_HDR_SIZE + (seq * 7919u) % (WEFT_WIRE_MAX_FRAME - WEFT_WIRE_HDR_SIZE + 1);
}

static void test_wrap(void)
{
	void *m = shm_new();
	struct weft_shm_view p, c;
	unsigned char buf[WEFT_WIRE_MAX_FRAME], got[WEFT_WIRE_MAX_FRAME];
	uint32_t sent = 0, recvd = 0, bytes = 0, bad = 0, rec;
	int n;

	CHECK(weft_shm_hdr_ok(m));
	weft_shm_view_init(&p, m, WEFT_SHM_A2S_OFF, true);
	weft_shm_view_init(&c, m, WEFT_SHM_A2S_OFF, false);
	/* Bursts of varying size: the ring wraps about 100 times. */
	while (bytes < 100u * WEFT_SHM_RING_SIZE) {
		uint32_t burst = 1 + sent % 37;

		while (burst--) {
			mkpkt(buf, len_of(sent), sent);
			if (weft_shm_push(&p, buf, len_of(sent)) != 0)
				break;
			bytes += weft_shm_rec_size(len_of(sent));
			sent++;
		}
		while ((n = weft_shm_peek(&c, got, &rec)) > 0) {
			if ((uint32_t)n != len_of(recvd) || !pkt_ok(got, (uint32_t)n, recvd))
				bad++;
			weft_shm_consume(&c, rec);
			recvd++;
		}
		if (n < 0)
			break;
	}
	CHECK(n == 0, "peek said %d", n);
	CHECK(sent == recvd && bad == 0, "sent %u received %u bad %u", sent, recvd, bad);
	CHECK(p.pos == c.pos && p.pos / WEFT_SHM_RING_SIZE >= 100);
	t_checked("%u packets of 104..%u bytes (%u bytes of records) through a %u-byte ring, "
		  "%u wrap-arounds: all in order and intact", sent, WEFT_WIRE_MAX_FRAME, bytes,
		  WEFT_SHM_RING_SIZE, p.pos / WEFT_SHM_RING_SIZE);
	free(m);
}

static void test_full(void)
{
	void *m = shm_new();
	struct weft_shm_view p, c;
	unsigned char buf[WEFT_WIRE_MAX_FRAME];
	uint32_t n = 0, rec;

	weft_shm_view_init(&p, m, WEFT_SHM_S2A_OFF, true);
	weft_shm_view_init(&c, m, WEFT_SHM_S2A_OFF, false);
	mkpkt(buf, WEFT_WIRE_MAX_FRAME, 0);
	while (weft_shm_push(&p, buf, WEFT_WIRE_MAX_FRAME) == 0)
		n++;
	CHECK(n == WEFT_SHM_RING_SIZE / weft_shm_rec_size(WEFT_WIRE_MAX_FRAME), "%u fit", n);
	CHECK(weft_shm_push(&p, buf, WEFT_WIRE_MAX_FRAME) == -EAGAIN);
	CHECK(weft_shm_push(&p, buf, WEFT_WIRE_HDR_SIZE - 1) == -EINVAL);
	CHECK(weft_shm_push(&p, buf, WEFT_WIRE_MAX_FRAME + 1) == -EINVAL);
	/* The producer announces its wait; the consumer's first take wakes it. */
	CHECK(weft_shm_producer_wait(&p, WEFT_WIRE_MAX_FRAME));
	CHECK(weft_shm_peek(&c, buf, &rec) == (int)WEFT_WIRE_MAX_FRAME);
	weft_shm_consume(&c, rec);
	CHECK(weft_shm_wake_producer(&c));
	CHECK(!weft_shm_wake_producer(&c));
	CHECK(weft_shm_push(&p, buf, WEFT_WIRE_MAX_FRAME) == 0);
	/* An empty ring lets the consumer sleep; a push then wakes it once. */
	while (weft_shm_peek(&c, buf, &rec) > 0)
		weft_shm_consume(&c, rec);
	CHECK(!weft_shm_wake_consumer(&p));
	CHECK(weft_shm_consumer_sleep(&c));
	CHECK(weft_shm_push(&p, buf, WEFT_WIRE_HDR_SIZE) == 0);
	CHECK(weft_shm_wake_consumer(&p));
	CHECK(!weft_shm_wake_consumer(&p));
	/* A record that came before the sleep keeps the consumer awake. */
	CHECK(!weft_shm_consumer_sleep(&c));
	CHECK(c.ctl->cons_sleeping == 0);
	t_checked("%u max-size packets fill the ring, the next is refused (-EAGAIN) and bad "
		  "lengths -EINVAL; wake-ups only for a sleeping consumer or waiting producer", n);
	free(m);
}

static void test_hostile(void)
{
	void *m = shm_new();
	struct weft_shm_view p, c;
	unsigned char buf[WEFT_WIRE_MAX_FRAME + 64];
	uint32_t rec, bogus, i;

	weft_shm_view_init(&p, m, WEFT_SHM_A2S_OFF, true);
	weft_shm_view_init(&c, m, WEFT_SHM_A2S_OFF, false);
	mkpkt(buf, 200, 1);
	CHECK(weft_shm_push(&p, buf, 200) == 0);

	/* A producer's head beyond a ring's size, behind the tail, unaligned. */
	c.ctl->head = WEFT_SHM_RING_SIZE + 8;
	CHECK(weft_shm_peek(&c, buf, &rec) == -EPROTO);
	c.ctl->head = (uint32_t)-8;
	CHECK(weft_shm_peek(&c, buf, &rec) == -EPROTO);
	c.ctl->head = 3;
	CHECK(weft_shm_peek(&c, buf, &rec) == -EPROTO);
	c.ctl->head = p.pos;

	/* Record lengths: too short, too long, the pad marker at the end of
	 * what was published, longer than what was published. */
	for (i = 0; i < 4; i++) {
		static const uint32_t lens[4] = { WEFT_WIRE_HDR_SIZE - 1, WEFT_WIRE_MAX_FRAME + 1,
						  WEFT_SHM_PAD, 1000 };

		memcpy(c.data, &lens[i], sizeof(lens[i]));
		CHECK(weft_shm_peek(&c, buf, &rec) == -EPROTO, "length 0x%x", lens[i]);
	}
	bogus = 200;
	memcpy(c.data, &bogus, sizeof(bogus));
	CHECK(weft_shm_peek(&c, buf, &rec) == 200 && pkt_ok(buf, 200, 1));

	/* A record that would run past the end of the data. */
	c.pos = c.ctl->tail = WEFT_SHM_RING_SIZE - 64;
	c.ctl->head = WEFT_SHM_RING_SIZE + 4096;
	bogus = 1000;
	memcpy(c.data + WEFT_SHM_RING_SIZE - 64, &bogus, sizeof(bogus));
	CHECK(weft_shm_peek(&c, buf, &rec) == -EPROTO);
	/* A pad, then a record length that is bogus at the start. */
	bogus = WEFT_SHM_PAD;
	memcpy(c.data + WEFT_SHM_RING_SIZE - 64, &bogus, sizeof(bogus));
	bogus = 0;
	memcpy(c.data, &bogus, sizeof(bogus));
	CHECK(weft_shm_peek(&c, buf, &rec) == -EPROTO);

	/* A consumer's tail ahead of the head or a whole ring behind it. */
	p.ctl->tail = p.pos + 8;
	CHECK(weft_shm_push(&p, buf, 200) == -EPROTO);
	p.ctl->tail = p.pos - WEFT_SHM_RING_SIZE - 8;
	CHECK(weft_shm_push(&p, buf, 200) == -EPROTO);
	p.ctl->tail = p.pos - 4;
	CHECK(weft_shm_push(&p, buf, 200) == -EPROTO);
	CHECK(weft_shm_producer_wait(&p, 200));
	p.ctl->tail = p.pos;
	CHECK(weft_shm_push(&p, buf, 200) == 0);

	/* A corrupted header is seen. */
	((struct weft_shm_hdr *)m)->ring_size = 1u << 30;
	CHECK(!weft_shm_hdr_ok(m));
	t_checked("impossible heads, tails (beyond a ring, behind, unaligned) and record "
		  "lengths (short, long, pad at the end, past the data) are refused with "
		  "-EPROTO; a corrupted header is seen");
	free(m);
}

int main(void)
{
	t_begin("wrap-around");
	test_wrap();
	t_begin("full ring and wake-ups");
	test_full();
	t_begin("hostile peer");
	test_hostile();
	return t_done();
}
