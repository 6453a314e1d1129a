/* SPDX-License-Identifier: MIT */
/*
 * What the provider's check programs (weft-fi-check, weft-fi-wire) share:
 * their TAP-like checks, a clock, and an endpoint of their own.
 */
#ifndef FI_CHECK_H
#define FI_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

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

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* An endpoint of its own: fabric, domain, AV, CQ, enabled endpoint. */
struct side {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static int side_open(struct side *s, const char *node, const char *service, uint64_t flags)
{
	struct fi_info *h = hints_rdm();
	struct fi_av_attr ava = { .type = FI_AV_MAP };
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	int ret;

	memset(s, 0, sizeof(*s));
	h->caps |= FI_DIRECTED_RECV;
	ret = fi_getinfo(FI_VERSION(1, 5), node, service, flags, h, &s->info);
	fi_freeinfo(h);
	ret = ret ? ret : fi_fabric(s->info->fabric_attr, &s->fab, NULL);
	ret = ret ? ret : fi_domain(s->fab, s->info, &s->dom, NULL);
	ret = ret ? ret : fi_av_open(s->dom, &ava, &s->av, NULL);
	ret = ret ? ret : fi_cq_open(s->dom, &cqa, &s->cq, NULL);
	ret = ret ? ret : fi_endpoint(s->dom, s->info, &s->ep, NULL);
	ret = ret ? ret : fi_ep_bind(s->ep, &s->av->fid, 0);
	ret = ret ? ret : fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	return ret ? ret : fi_enable(s->ep);
}

static void side_close(struct side *s)
{
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	if (s->av)
		fi_close(&s->av->fid);
	if (s->dom)
		fi_close(&s->dom->fid);
	if (s->fab)
		fi_close(&s->fab->fid);
	fi_freeinfo(s->info);
}

#endif
