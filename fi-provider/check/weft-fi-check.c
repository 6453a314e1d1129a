// SPDX-License-Identifier: MIT
/*
 * weft-fi-check: the weft libfabric provider's argument checks
 * (docs/libfabric.md "Tests").  Every call gets arguments the libfabric
 * manual pages call invalid and must answer the error they name, without
 * crashing; then one endpoint sends to itself (loopback over an RC QP to
 * its own listener) eager, unexpected and rendezvous tagged messages and
 * checks the bytes.  Prints "ok N - ..." / "not ok N - ..." and exits
 * non-zero when a check failed.
 *
 * Usage: weft-fi-check [--no-loopback]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

static int n_checks, n_failed;

#define CHECK(cond, ...) do {						\
	n_checks++;							\
	if (cond) {							\
		printf("ok %d - ", n_checks);				\
	} else {							\
		n_failed++;						\
		printf("not ok %d - ", n_checks);			\
	}								\
	printf(__VA_ARGS__);						\
	printf("\n");							\
	fflush(stdout);							\
} while (0)

static struct fi_info *hints_rdm(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(2);
	h->caps = FI_TAGGED | FI_MSG;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup("weft");
	return h;
}

static void getinfo_checks(void)
{
	struct fi_info *h, *info = NULL;
	int ret;

	h = hints_rdm();
	h->ep_attr->type = FI_EP_MSG;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == -FI_ENODATA, "fi_getinfo FI_EP_MSG: %d (-FI_ENODATA)", ret);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED | FI_ATOMIC;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == -FI_ENODATA, "fi_getinfo FI_ATOMIC: %d (-FI_ENODATA)", ret);
	h->caps = FI_TAGGED;
	h->tx_attr->inject_size = 1 << 20;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == -FI_ENODATA, "fi_getinfo inject_size 1 MiB: %d (-FI_ENODATA)", ret);
	h->tx_attr->inject_size = 0;
	h->domain_attr->name = strdup("mlx5_0");
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == -FI_ENODATA, "fi_getinfo domain mlx5_0: %d (-FI_ENODATA)", ret);
	fi_freeinfo(h);
}

static int poll_one(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
	int i;

	for (i = 0; i < 2000000; i++) {
		ssize_t r = fi_cq_read(cq, e, 1);

		if (r == 1)
			return 0;
		if (r != -FI_EAGAIN)
			return (int)r;
	}
	return -FI_ETIMEDOUT;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static bool same(const uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return false;
	return true;
}

/* A tagged message with remote CQ data to ourselves: the receive's
 * completion carries FI_REMOTE_CQ_DATA and the data. */
static void loop_data(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self, size_t n,
		      bool recv_first, uint64_t tag)
{
	uint8_t *s = calloc(1, n), *r = calloc(1, n);
	struct fi_cq_tagged_entry e;
	int ctx_s, ctx_r, i, ok = 0;
	ssize_t a = 0, b;

	if (recv_first)
		a = fi_trecv(ep, r, n, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx_r);
	b = fi_tsenddata(ep, s, n, NULL, 0xabcd1234, self, tag, &ctx_s);
	if (!recv_first)
		a = fi_trecv(ep, r, n, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx_r);
	for (i = 0; i < 2 && !a && !b && !poll_one(cq, &e); i++)
		if (e.op_context == &ctx_r && (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xabcd1234 &&
		    e.tag == tag && e.len == n)
			ok = 1;
	CHECK(ok, "fi_tsenddata %zu B %s: the receive completes with FI_REMOTE_CQ_DATA 0xabcd1234",
	      n, recv_first ? "receive first" : "unexpected");
	free(s);
	free(r);
}

/* One tagged message to ourselves: receive first (listed in the adapter)
 * or send first (unexpected), n bytes. */
static void loop_msg(struct fid_ep *ep, struct fid_cq *cq, fi_addr_t self, size_t n,
		     bool recv_first, uint64_t tag)
{
	uint8_t *s = malloc(n ? n : 1), *r = calloc(1, n ? n : 1);
	struct fi_cq_tagged_entry e[2];
	int ctx_s, ctx_r, got = 0, ret = 0, i;
	ssize_t a = 0, b = 0;

	fill(s, n, (uint8_t)tag);
	if (recv_first)
		a = fi_trecv(ep, r, n, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx_r);
	b = fi_tsend(ep, s, n, NULL, self, tag, &ctx_s);
	if (!recv_first)
		a = fi_trecv(ep, r, n, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx_r);
	for (i = 0; i < 2 && !a && !b; i++) {
		ret = poll_one(cq, &e[i]);
		if (ret)
			break;
		got |= e[i].op_context == &ctx_s ? 1 : e[i].op_context == &ctx_r ? 2 : 4;
	}
	CHECK(!a && !b && !ret && got == 3 && same(r, n, (uint8_t)tag),
	      "loopback %zu B tag 0x%llx %s: post %zd/%zd, completions 0x%x (%d), data %s", n,
	      (unsigned long long)tag, recv_first ? "receive first" : "unexpected", a, b, got,
	      ret, same(r, n, (uint8_t)tag) ? "byte-exact" : "differs");
	free(s);
	free(r);
}

int main(int argc, char **argv)
{
	bool loopback = !(argc > 1 && !strcmp(argv[1], "--no-loopback"));
	struct fi_info *h = hints_rdm(), *info = NULL;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq, *bad_cq;
	struct fid_ep *ep;
	struct fid_cntr *cntr;
	struct fi_av_attr ava = { .type = FI_AV_MAP };
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_err_entry err;
	struct fi_cntr_attr cna = { 0 };
	struct fi_cq_tagged_entry ent;
	uint8_t name[64], buf[64] = { 0 };
	size_t len;
	fi_addr_t self = FI_ADDR_NOTAVAIL, a;
	int ret;

	getinfo_checks();
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(!ret && info && !strcmp(info->fabric_attr->prov_name, "weft"),
	      "fi_getinfo -p weft: %d", ret);
	if (ret)
		return 1;
	if (fi_fabric(info->fabric_attr, &fab, NULL) || fi_domain(fab, info, &dom, NULL)) {
		CHECK(0, "fi_fabric, fi_domain");
		return 1;
	}
	ava.type = (enum fi_av_type)77;
	ret = fi_av_open(dom, &ava, &av, NULL);
	CHECK(ret == -FI_EINVAL, "fi_av_open type 77: %d (-FI_EINVAL)", ret);
	ava.type = FI_AV_MAP;
	ret = fi_av_open(dom, &ava, &av, NULL);
	CHECK(!ret, "fi_av_open FI_AV_MAP: %d", ret);
	cqa.format = (enum fi_cq_format)77;
	ret = fi_cq_open(dom, &cqa, &bad_cq, NULL);
	CHECK(ret == -FI_ENOSYS, "fi_cq_open format 77: %d (-FI_ENOSYS)", ret);
	cqa.format = FI_CQ_FORMAT_TAGGED;
	cqa.size = 1 << 30;
	ret = fi_cq_open(dom, &cqa, &bad_cq, NULL);
	CHECK(ret == -FI_EINVAL, "fi_cq_open size 2^30: %d (-FI_EINVAL)", ret);
	cqa.size = 0;
	ret = fi_cq_open(dom, &cqa, &cq, NULL);
	CHECK(!ret, "fi_cq_open: %d", ret);
	cna.events = (enum fi_cntr_events)77;
	ret = fi_cntr_open(dom, &cna, &cntr, NULL);
	CHECK(ret == -FI_ENOSYS, "fi_cntr_open events 77: %d (-FI_ENOSYS)", ret);
	cna.events = FI_CNTR_EVENTS_COMP;
	cna.flags = 1;
	ret = fi_cntr_open(dom, &cna, &cntr, NULL);
	CHECK(ret == -FI_EBADFLAGS, "fi_cntr_open flags 1: %d (-FI_EBADFLAGS)", ret);
	cna.flags = 0;
	ret = fi_cntr_open(dom, &cna, &cntr, NULL);
	CHECK(!ret, "fi_cntr_open: %d", ret);
	ret = fi_endpoint(dom, info, &ep, NULL);
	CHECK(!ret, "fi_endpoint: %d", ret);
	ret = fi_enable(ep);
	CHECK(ret == -FI_ENOAV, "fi_enable unbound: %d (-FI_ENOAV)", ret);
	ret = fi_tsend(ep, buf, 8, NULL, 0, 1, NULL);
	CHECK(ret == -FI_EOPBADSTATE, "fi_tsend before fi_enable: %d (-FI_EOPBADSTATE)", ret);
	ret = fi_ep_bind(ep, &cq->fid, 1ull << 60);
	CHECK(ret == -FI_EBADFLAGS, "fi_ep_bind CQ flag 1<<60: %d (-FI_EBADFLAGS)", ret);
	ret = fi_ep_bind(ep, &cq->fid, 0);
	CHECK(ret == -FI_EINVAL, "fi_ep_bind CQ no direction: %d (-FI_EINVAL)", ret);
	ret = fi_ep_bind(ep, &cntr->fid, FI_REMOTE_WRITE);
	CHECK(ret == -FI_ENOSYS, "fi_ep_bind counter FI_REMOTE_WRITE (no FI_RMA_EVENT): %d (-FI_ENOSYS)",
	      ret);
	if (fi_ep_bind(ep, &av->fid, 0) || fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(ep, &cntr->fid, FI_SEND | FI_RECV) || fi_enable(ep)) {
		CHECK(0, "bind and enable");
		return 1;
	}
	len = 4;
	ret = fi_getname(&ep->fid, name, &len);
	CHECK(ret == -FI_ETOOSMALL && len == 16, "fi_getname 4 B: %d, len %zu (-FI_ETOOSMALL, 16)",
	      ret, len);
	len = sizeof(name);
	ret = fi_getname(&ep->fid, name, &len);
	CHECK(!ret, "fi_getname: %d", ret);
	memset(buf, 0, 16);
	ret = fi_av_insert(av, buf, 1, &a, 0, NULL);
	CHECK(ret == 0 && a == FI_ADDR_NOTAVAIL, "fi_av_insert zero address: %d inserted", ret);
	ret = fi_av_insert(av, name, 1, &a, 1ull << 62, NULL);
	CHECK(ret == -FI_EBADFLAGS, "fi_av_insert flag 1<<62: %d (-FI_EBADFLAGS)", ret);
	ret = fi_av_insert(av, name, 1, &self, 0, NULL);
	CHECK(ret == 1 && self != FI_ADDR_NOTAVAIL, "fi_av_insert own name: %d", ret);
	len = sizeof(buf);
	ret = fi_av_lookup(av, 4000, buf, &len);
	CHECK(ret == -FI_EINVAL, "fi_av_lookup 4000: %d (-FI_EINVAL)", ret);
	ret = fi_tsend(ep, buf, 8, NULL, 1234, 1, NULL);
	CHECK(ret == -FI_EINVAL, "fi_tsend to fi_addr 1234: %d (-FI_EINVAL)", ret);
	ret = fi_tsend(ep, buf, 8, NULL, self, 1ull << 50, NULL);
	CHECK(ret == -FI_EINVAL, "fi_tsend tag 1<<50 (beyond mem_tag_format): %d (-FI_EINVAL)", ret);
	ret = fi_tinject(ep, buf, info->tx_attr->inject_size + 1, self, 1);
	CHECK(ret == -FI_EINVAL, "fi_tinject inject_size + 1: %d (-FI_EINVAL)", ret);
	ret = fi_trecv(ep, NULL, 8, NULL, FI_ADDR_UNSPEC, 1, 0, NULL);
	CHECK(ret == -FI_EINVAL, "fi_trecv NULL buffer: %d (-FI_EINVAL)", ret);
	{
		struct iovec iov[2] = { { buf, 8 }, { buf + 8, 8 } };
		struct fi_msg_tagged m = { .msg_iov = iov, .iov_count = 2, .addr = self, .tag = 1 };

		ret = fi_tsendmsg(ep, &m, 0);
		CHECK(ret == -FI_EINVAL, "fi_tsendmsg 2 iovecs (iov_limit 1): %d (-FI_EINVAL)", ret);
		m.iov_count = 1;
		ret = fi_trecvmsg(ep, &m, FI_DISCARD);
		CHECK(ret == -FI_EINVAL, "fi_trecvmsg FI_DISCARD alone: %d (-FI_EINVAL)", ret);
		ret = fi_trecvmsg(ep, &m, 1ull << 61);
		CHECK(ret == -FI_EBADFLAGS, "fi_trecvmsg flag 1<<61: %d (-FI_EBADFLAGS)", ret);
	}
	ret = fi_cancel(&ep->fid, &ret);
	CHECK(ret == -FI_ENOENT, "fi_cancel unknown context: %d (-FI_ENOENT)", ret);
	ret = (int)fi_cq_read(cq, &ent, 1);
	CHECK(ret == -FI_EAGAIN, "fi_cq_read empty: %d (-FI_EAGAIN)", ret);
	ret = (int)fi_cq_readerr(cq, &err, 5);
	CHECK(ret == -FI_EBADFLAGS, "fi_cq_readerr flags 5: %d (-FI_EBADFLAGS)", ret);
	ret = (int)fi_cq_sread(cq, &ent, 1, NULL, 10);
	CHECK(ret == -FI_EAGAIN, "fi_cq_sread empty, 10 ms: %d (-FI_EAGAIN)", ret);
	ret = fi_close(&dom->fid);
	CHECK(ret == -FI_EBUSY, "fi_close domain with objects open: %d (-FI_EBUSY)", ret);
	if (loopback) {
		loop_msg(ep, cq, self, 100, true, 0x11);
		loop_msg(ep, cq, self, 100, false, 0x12);
		loop_msg(ep, cq, self, 0, true, 0x13);
		loop_msg(ep, cq, self, 65536, true, 0x14);
		loop_msg(ep, cq, self, 65536, false, 0x15);
		loop_data(ep, cq, self, 64, true, 0x16);
		loop_data(ep, cq, self, 64, false, 0x17);
		loop_data(ep, cq, self, 100000, false, 0x18);
		{
			int c;

			ret = fi_trecv(ep, buf, 8, NULL, FI_ADDR_UNSPEC, 0x99, 0, &c);
			ret = ret ? ret : fi_cancel(&ep->fid, &c);
			ret = ret ? ret : poll_one(cq, &ent);
			CHECK(ret == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1 &&
			      err.err == FI_ECANCELED && err.op_context == &c,
			      "fi_cancel of a listed receive: FI_ECANCELED (%d, err %d)", ret,
			      err.err);
		}
		CHECK(fi_cntr_read(cntr) == 16 && fi_cntr_readerr(cntr) == 1,
		      "fi_cntr bound FI_SEND|FI_RECV: %llu completions (16), %llu errors (1: the cancel)",
		      (unsigned long long)fi_cntr_read(cntr), (unsigned long long)fi_cntr_readerr(cntr));
		ret = fi_cntr_wait(cntr, 17, 20);
		CHECK(ret == -FI_ETIMEDOUT, "fi_cntr_wait 17, 20 ms: %d (-FI_ETIMEDOUT)", ret);
	}
	fi_close(&ep->fid);
	fi_close(&cntr->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	ret = fi_close(&dom->fid);
	CHECK(!ret, "fi_close domain: %d", ret);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(h);
	printf("1..%d\n%d of %d checks failed\n", n_checks, n_failed, n_checks);
	return n_failed ? 1 : 0;
}
