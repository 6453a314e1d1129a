/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "simtest.h"

struct weft_sim *st_sim(const struct weft_sim_config *cfg)
{
	char err[160] = "";
	struct weft_sim *s = weft_sim_new(cfg, err, sizeof(err));

	REQUIRE(s != NULL, "weft_sim_new: %s", err);
	return s;
}

static void open_win(struct weft_sim *s, unsigned int node, struct st_node *out,
		     uint32_t fifo_log2, bool bcast)
{
	struct weft_sim_window_cfg wc = {
		.job = out->job, .send_log2 = fifo_log2, .recv_log2 = fifo_log2,
		.bcast = bcast, .window = 0,
	};
	int rc = weft_sim_open_window(s, node, &wc, &out->win);

	REQUIRE(rc == 0, "node %u: open window: %d", node, rc);
}

void st_node_setup(struct weft_sim *s, unsigned int node, uint32_t job, uint64_t len,
		   uint32_t fifo_log2, bool bcast, struct st_node *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->job = job;
	rc = weft_sim_job_attach(s, node, job);
	REQUIRE(rc >= 0, "node %u: job attach: %d", node, rc);
	open_win(s, node, out, fifo_log2, bcast);
	out->len = len;
	if (!len)
		return;
	out->buf = weft_sim_alloc(s, node, len, 4096);
	REQUIRE(out->buf != 0, "node %u: cannot allocate %llu bytes", node,
	      (unsigned long long)len);
	out->mr = weft_sim_reg_mr(s, node, job, out->buf, len, 0, &out->pvo);
	REQUIRE(out->mr > 0, "node %u: reg_mr: %d", node, out->mr);
}

void st_node_reattach(struct weft_sim *s, unsigned int node, struct st_node *n,
		      uint32_t fifo_log2)
{
	int rc = weft_sim_job_attach(s, node, n->job);

	REQUIRE(rc >= 0, "node %u: job attach after reboot: %d", node, rc);
	open_win(s, node, n, fifo_log2, false);
	if (!n->len)
		return;
	n->mr = weft_sim_reg_mr(s, node, n->job, n->buf, n->len, 0, &n->pvo);
	REQUIRE(n->mr > 0, "node %u: reg_mr after reboot: %d", node, n->mr);
}

void st_fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

long long st_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i;

	if (!memcmp(a, b, n))
		return -1;
	for (i = 0; i < n && a[i] == b[i]; i++)
		;
	return (long long)i;
}

unsigned int st_completions(struct st_node *n)
{
	struct weft_recv_hdr h;
	unsigned int k = 0;

	while (weft_sim_poll_recv(&n->win, &h, NULL, 0) == 1)
		if (h.type == WEFT_RF_COMPLETION && h.status == 0)
			k++;
	return k;
}

uint64_t st_counter_sum(struct weft_sim *s, unsigned int c)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < weft_sim_nr_nodes(s); i++)
		sum += weft_sim_counter(s, i, c);
	return sum;
}
