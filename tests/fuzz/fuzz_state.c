// SPDX-License-Identifier: MIT
/* Fuzz target for the adapter state loader (fuzz_state.h). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_state.h"
#include "weft_sim.h"
#include "weft_sim_verbs.h"

#define FS_BUF          (256u << 10)
#define FS_ROUNDS       64u             /* sim rounds run on a loaded state */

struct fs {
	struct weft_sim *s;
	uint8_t *good, *buf;
	size_t len;
	struct fs_stats st;
};

/* Node 0 and 1: PD 1, CQ 1, a registered buffer, RC QPs 2 connected,
 * RDMA writes posted from node 0, a window each with a FIFO packet. */
static int fs_setup(struct fs *f)
{
	struct weft_sim *s = f->s;
	struct wsv_cq cq[2];
	struct wsv_qp q[2];
	struct weft_sim_window win[2];
	uint64_t buf[2];
	unsigned int i;
	uint8_t msg[64] = { 1, 2, 3 };
	struct weft_sim_window_cfg wc = { .job = 9, .send_log2 = 4, .recv_log2 = 4, .window = 1 };

	for (i = 0; i < 2; i++) {
		buf[i] = weft_sim_alloc(s, i, FS_BUF, 4096);
		if (!buf[i] || wsv_pd(s, i, 1) || wsv_cq_create(s, i, 1, 8, 0, &cq[i]) ||
		    wsv_reg_mr(s, i, WEFT_STAG(1, 1), 1, buf[i], buf[i], FS_BUF, WEFT_VACC_ALL,
			       WEFT_ATT_DIRECT, 12) ||
		    wsv_qp_create(s, i, 2, WEFT_VQPT_RC, 1, 1, 1, 5, 5, WEFT_VQPF_SQ_REG, &q[i]) ||
		    weft_sim_job_attach(s, i, 9) < 0 ||
		    weft_sim_open_window(s, i, &wc, &win[i]))
			return -1;
	}
	if (wsv_connect(s, &q[0], &q[1], NULL))
		return -1;
	for (i = 0; i < 4; i++) {
		struct weft_vwqe w = { .wr_id = i, .opcode = WEFT_VWR_WRITE,
				       .flags = WEFT_VWQE_SIGNALED };
		struct weft_vsge sg = { .addr = buf[0] + i * 65536, .length = 65536,
					.lkey = WEFT_STAG(1, 1) };

		w.u.rdma.remote_addr = buf[1] + i * 65536;
		w.u.rdma.rkey = WEFT_STAG(1, 1);
		if (wsv_post_send(s, &q[0], &w, &sg, 1, true))
			return -1;
	}
	if (weft_sim_post_fifo(&win[0], 1, 1, msg, sizeof(msg)))
		return -1;
	for (i = 0; i < 3; i++)
		weft_sim_progress(s);
	return weft_core_save(weft_sim_core(s, 0), &f->good, &f->len);
}

struct fs *fs_new(uint64_t seed)
{
	struct weft_sim_config cfg = {
		.nr_nodes = 2, .mem_size = 8u << 20, .seed = seed,
		.faults = { .routes = 1, .delay_ns = 2000, .drop_ppm = 20000 },
		.nr_rcxt = 32, .verbs_qps = 16, .verbs_cqs = 8, .verbs_pds = 4, .verbs_tpt = 64,
		.match_store = 4096, .umb_size = 4096, .matchers = 2,
	};
	struct fs *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->s = weft_sim_new(&cfg, NULL, 0);
	if (!f->s || fs_setup(f) || !(f->buf = malloc(f->len))) {
		fs_free(f);
		return NULL;
	}
	f->st.stream_bytes = f->len;
	return f;
}

void fs_free(struct fs *f)
{
	if (!f)
		return;
	weft_sim_free(f->s);
	free(f->good);
	free(f->buf);
	free(f);
}

void fs_input(struct fs *f, struct fz_src *src)
{
	struct weft_core *c = weft_sim_core(f->s, 0);
	size_t len = f->len, at;
	unsigned int n, i, k;
	char err[200];

	memcpy(f->buf, f->good, f->len);
	n = 1 + (unsigned int)fz_src_below(src, 8);
	for (i = 0; i < n; i++) {
		/* Anywhere, or in the first 4 KiB (the header, the
		 * configuration and the core's registers), or the last. */
		switch (fz_src_below(src, 3)) {
		case 0:
			at = fz_src_below(src, len);
			break;
		case 1:
			at = fz_src_below(src, len < 4096 ? len : 4096);
			break;
		default:
			at = len - 1 - fz_src_below(src, len < 4096 ? len : 4096);
			break;
		}
		switch (fz_src_below(src, 4)) {
		case 0:
			f->buf[at] ^= (uint8_t)(1u << fz_src_below(src, 8));
			break;
		case 1:
			f->buf[at] = (uint8_t)fz_src_u64(src);
			break;
		case 2:
			for (k = 0; k < 4 && at + k < len; k++)
				f->buf[at + k] = 0xff;
			break;
		default:
			for (k = 0; k < 4 && at + k < len; k++)
				f->buf[at + k] = 0;
			break;
		}
	}
	if (fz_src_below(src, 16) == 0)
		len -= 1 + fz_src_below(src, len);
	f->st.inputs++;
	if (weft_core_load(c, f->buf, len, err, sizeof(err)) != 0) {
		f->st.refused++;
		return;
	}
	f->st.loaded++;
	for (i = 0; i < FS_ROUNDS; i++)
		weft_sim_progress(f->s);
	if (weft_core_load(c, f->good, f->len, err, sizeof(err)) != 0)
		f->st.violations++;
}

const struct fs_stats *fs_stats(const struct fs *f)
{
	return &f->st;
}
