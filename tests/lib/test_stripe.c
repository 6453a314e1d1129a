/* SPDX-License-Identifier: MIT */
/*
 * Checklist item 73, the adapter half: one RDMA write striped by libweft
 * (weft_stripe_*) over both adapters of a node, on the sim backend with
 * two nodes of two adapters each (adapters 0, 1 and 2, 3), 1% loss and
 * reordering.  One registration per buffer (node-global tables, item 24)
 * gives the PVOs of both paths.  Checks: the target buffer is byte-exact,
 * both adapters carried half of the chunks, and the user got exactly one
 * completion for the message.  docs/libweft.md, "Striping".
 */
#include <errno.h>
#include <string.h>

#include "libweft.h"
#include "weft_test.h"

#define JOB     73u
#define LEN     (4u << 20)
#define CHUNK   (64u << 10)

int main(void)
{
	struct weft_simnet_attr a = { .nodes = 4, .adapters = 2, .seed = 73, .delay_ns = 2000,
				      .jitter_ns = 3000, .routes = 4, .drop_ppm = 10000,
				      .flags = WEFT_SIMNET_F_SOLO };
	struct weft_dev *d[4];
	struct weft_win *w[4];
	uint32_t rc[4], h_src, h_dst;
	uint16_t rk[4];
	uint64_t p_src, p_dst;
	struct weft_stripe st;
	struct weft_entry e;
	unsigned int finishes = 0;
	char err[256];
	uint8_t *src, *dst;

	if (!weft_simnet_available())
		t_bail("libweft was built without the sim backend");
	struct weft_simnet *sn = weft_simnet_new(&a, err, sizeof(err));
	REQUIRE(sn, "sim backend: %s", err);
	for (unsigned int i = 0; i < 4; i++) {
		struct weft_win_attr wa = { .job_id = JOB, .recv_log2 = 8 };
		int r;

		d[i] = weft_simnet_open(sn, i, err, sizeof(err));
		REQUIRE(d[i], "open %u: %s", i, err);
		w[i] = weft_win_open(d[i], &wa, &r);
		REQUIRE(w[i], "window %u: %s", i, strerror(-r));
		REQUIRE(weft_rcxt_alloc(w[i], &rc[i], &rk[i]) == 0, "rcxt %u", i);
		weft_win_set_retry(w[i], 200000, 2000000, 50);
	}
	src = weft_dev_alloc(d[0], LEN);
	dst = weft_dev_alloc(d[2], LEN);
	REQUIRE(src && dst, "alloc");
	for (size_t i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 7 + (i >> 12));
	memset(dst, 0, LEN);
	REQUIRE(weft_mr_reg(d[0], JOB, src, LEN, &p_src, &h_src) == 0, "reg src");
	REQUIRE(weft_mr_reg(d[2], JOB, dst, LEN, &p_dst, &h_dst) == 0, "reg dst");

	memset(&st, 0, sizeof(st));
	st.nr_paths = 2;
	st.length = LEN;
	st.chunk = CHUNK;
	for (unsigned int i = 0; i < 2; i++) {
		struct weft_stripe_path *p = &st.path[i];

		p->win = w[i];
		p->node = weft_win_node(w[2 + i]);
		p->window = (uint16_t)weft_win_id(w[2 + i]);
		p->local_rcxt = rc[i];
		p->remote_rcxt = rc[2 + i];
		p->remote_rcxt_key = rk[2 + i];
		p->local_pvo = p_src;
		p->remote_pvo = p_dst;
	}
	REQUIRE(weft_win_node(w[0]) != weft_win_node(w[1]), "the two paths share an adapter");
	REQUIRE(weft_stripe_write(&st) == 0, "stripe write");
	REQUIRE(weft_stripe_wait(&st, 60000) == 1, "the striped write did not finish");
	finishes++;
	REQUIRE(st.state == WEFT_ROP_DONE, "stripe failed: %s", strerror(-st.error));
	/* Nothing more finishes it: drain every window for a while. */
	for (int k = 0; k < 200; k++)
		for (unsigned int i = 0; i < 4; i++)
			while (weft_win_poll(w[i], &e) == 1)
				if (weft_stripe_entry(&st, &e) == 1)
					finishes++;
	CHECK_EQ(finishes, 1u, "completions of the message");
	CHECK_EQ(st.chunks, LEN / CHUNK, "chunks completed");
	t_point("item 73: one striped 4 MiB write finished with exactly one completion "
		"(%llu chunks)", (unsigned long long)st.chunks);

	CHECK(!memcmp(src, dst, LEN), "target buffer differs");
	t_point("item 73: the target buffer is byte-exact after reassembly");

	struct weft_win_stats s0, s1;
	weft_win_get_stats(w[0], &s0);
	weft_win_get_stats(w[1], &s1);
	CHECK_EQ(st.path[0].bytes, LEN / 2, "bytes over adapter 0");
	CHECK_EQ(st.path[1].bytes, LEN / 2, "bytes over adapter 1");
	CHECK(s0.rop_done == LEN / CHUNK / 2 && s1.rop_done == LEN / CHUNK / 2,
	      "chunks per adapter %llu and %llu", (unsigned long long)s0.rop_done,
	      (unsigned long long)s1.rop_done);
	t_point("item 73: chunks went round robin, half over each adapter "
		"(%llu and %llu retries under 1%% loss)", (unsigned long long)s0.rop_retries,
		(unsigned long long)s1.rop_retries);

	REQUIRE(weft_mr_dereg(d[0], h_src) == 0 && weft_mr_dereg(d[2], h_dst) == 0, "dereg");
	for (unsigned int i = 0; i < 4; i++)
		weft_dev_close(d[i]);
	weft_simnet_free(sn);
	return t_done();
}
