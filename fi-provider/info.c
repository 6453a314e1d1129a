// SPDX-License-Identifier: MIT
/*
 * The provider's entry point and fi_getinfo (docs/libfabric.md
 * "Capabilities" and "Limits").
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wfi.h"

#define WFI_CAPS (FI_TAGGED | FI_MSG | FI_SEND | FI_RECV | FI_DIRECTED_RECV | \
		  FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SOURCE | FI_REMOTE_CQ_DATA | WFI_RMA_CAPS | \
		  FI_TRIGGER)
#define WFI_RMA_CAPS (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | \
		      FI_RMA_EVENT)
/* RMA addresses the target's virtual address with the verbs rkey; or,
 * with keys the application chooses (no FI_MR_PROV_KEY in the hints),
 * an offset into the region of that key (key.c). */
#define WFI_RMA_MR (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)
#define WFI_KEYED_MR FI_MR_ALLOCATED

/* The mr_mode FI_RMA and FI_ATOMIC get with these hints, 0 when none fits. */
static uint64_t rma_mr_mode(const struct fi_info *h)
{
	uint64_t m = h && h->domain_attr ? (uint64_t)h->domain_attr->mr_mode : 0;

	if ((m & WFI_RMA_MR) == WFI_RMA_MR)
		return WFI_RMA_MR;
	if (!(m & FI_MR_PROV_KEY) && (m & WFI_KEYED_MR))
		return WFI_KEYED_MR;
	return 0;
}

static void wfi_cleanup(void)
{
}

struct fi_provider wfi_prov = {
	.name = WFI_NAME,
	.version = WFI_PROV_VERSION,
	.getinfo = wfi_getinfo,
	.fabric = wfi_fabric,
	.cleanup = wfi_cleanup,
};

/* The loader refuses providers whose fi_version is below what the caller
 * asks: claim the API of the library that loads us (1.17 for Debian's
 * libfabric1, 2.1 for the staged one); the provider uses only calls both
 * share. */
__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void)
{
	wfi_prov.fi_version = fi_version();
	return &wfi_prov;
}

/* The IPv4 address of weft0 (WEFT_FI_IFACE overrides the name). */
int wfi_local_addr(struct sockaddr_in *sin)
{
	const char *want = getenv("WEFT_FI_IFACE");
	struct ifaddrs *ifs, *i;
	int ret = -FI_ENODATA;

	if (!want)
		want = WFI_IFACE;
	if (getifaddrs(&ifs))
		return -FI_ENODATA;
	for (i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !strcmp(i->ifa_name, want)) {
			memcpy(sin, i->ifa_addr, sizeof(*sin));
			sin->sin_port = 0;
			ret = 0;
			break;
		}
	freeifaddrs(ifs);
	return ret;
}

static int resolve(const char *node, const char *service, struct sockaddr_in *sin)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;

	if (getaddrinfo(node, service, &hints, &res))
		return -FI_ENODATA;
	memcpy(sin, res->ai_addr, sizeof(*sin));
	freeaddrinfo(res);
	return 0;
}

/* NULL when the provider can meet the hints, else the first field it cannot. */
static const char *hints_misfit(const struct fi_info *h)
{
	if (!h)
		return NULL;
	if (h->caps & ~(uint64_t)WFI_CAPS)
		return "caps";
	if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_SOCKADDR_IN &&
	    h->addr_format != FI_SOCKADDR)
		return "addr_format";
	if (h->ep_attr) {
		if (h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_RDM)
			return "ep type";
		if (h->ep_attr->max_msg_size > WFI_MAX_MSG)
			return "max_msg_size";
		if (h->ep_attr->tx_ctx_cnt > 1 && h->ep_attr->tx_ctx_cnt != FI_SHARED_CONTEXT)
			return "tx_ctx_cnt";
		if (h->ep_attr->rx_ctx_cnt > 1)
			return "rx_ctx_cnt";
		if (h->ep_attr->auth_key_size)
			return "auth_key_size";
	}
	if (h->tx_attr && ((h->tx_attr->caps & ~(uint64_t)WFI_CAPS) ||
			   h->tx_attr->inject_size > WFI_EAGER ||
			   h->tx_attr->size > WFI_TX_USER || h->tx_attr->iov_limit > 1 ||
			   (h->tx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS)))
		return "tx_attr";
	if (h->rx_attr && ((h->rx_attr->caps & ~(uint64_t)WFI_CAPS) ||
			   h->rx_attr->size > WFI_RX_SIZE || h->rx_attr->iov_limit > 1 ||
			   h->rx_attr->total_buffered_recv ||
			   (h->rx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS)))
		return "rx_attr";
	if (h->domain_attr) {
		const struct fi_domain_attr *d = h->domain_attr;

		if (d->name && strcmp(d->name, "weft_ib0"))
			return "domain name";
		if (d->cq_data_size > 4 || d->auth_key_size)
			return "cq_data_size or auth key";
		if (d->max_ep_tx_ctx > 1 || d->max_ep_rx_ctx > 1)
			return "max_ep_tx_ctx or max_ep_rx_ctx";
		if ((h->caps & (FI_RMA | FI_ATOMIC)) && !rma_mr_mode(h))
			return "FI_RMA or FI_ATOMIC without FI_MR_VIRT_ADDR|FI_MR_PROV_KEY|FI_MR_ALLOCATED "
			       "or FI_MR_ALLOCATED (keys chosen by the application)";
		if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO)
			return "FI_PROGRESS_AUTO";
	}
	if (h->fabric_attr && h->fabric_attr->name && strcmp(h->fabric_attr->name, WFI_NAME))
		return "fabric name";
	return NULL;
}

static int fill(struct fi_info *fi, const struct fi_info *h, uint32_t version)
{
	uint64_t caps = WFI_CAPS;

	if (h && h->caps)
		caps = h->caps & WFI_CAPS;
	if (!(caps & (FI_TAGGED | FI_MSG | FI_RMA | FI_ATOMIC)))
		caps |= FI_TAGGED | FI_MSG;
	if (caps & (FI_RMA | FI_ATOMIC) && !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	if (!rma_mr_mode(h))
		caps &= ~(uint64_t)WFI_RMA_CAPS;
	if (!(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	if (!(caps & (FI_LOCAL_COMM | FI_REMOTE_COMM)))
		caps |= FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_SOCKADDR_IN;
	fi->tx_attr->caps = caps & ~(uint64_t)(FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |
					       FI_REMOTE_READ | FI_REMOTE_WRITE);
	fi->tx_attr->op_flags = h && h->tx_attr ? h->tx_attr->op_flags &
				(FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |
				 FI_DELIVERY_COMPLETE) : 0;
	fi->tx_attr->msg_order = FI_ORDER_SAS;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = WFI_EAGER;
	fi->tx_attr->size = WFI_TX_USER;
	fi->tx_attr->iov_limit = 1;
	fi->tx_attr->rma_iov_limit = caps & (FI_RMA | FI_ATOMIC) ? 1 : 0;
	fi->rx_attr->caps = caps & ~(uint64_t)(FI_SEND | FI_READ | FI_WRITE);
	fi->rx_attr->op_flags = h && h->rx_attr ? h->rx_attr->op_flags & FI_COMPLETION : 0;
	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = WFI_RX_SIZE;
	fi->rx_attr->iov_limit = 1;
	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = WFI_MAX_MSG;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->mem_tag_format = WFI_TAG_MASK;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;
	fi->domain_attr->name = strdup("weft_ib0");
	fi->domain_attr->threading = h && h->domain_attr && h->domain_attr->threading ?
				     h->domain_attr->threading : FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = h && h->domain_attr && h->domain_attr->av_type ?
				   h->domain_attr->av_type : FI_AV_TABLE;
	fi->domain_attr->mr_mode = caps & (FI_RMA | FI_ATOMIC) ? rma_mr_mode(h) : 0;
	fi->domain_attr->mr_key_size = fi->domain_attr->mr_mode == WFI_KEYED_MR ? 8 : 4;
	fi->domain_attr->cq_data_size = 4;
	fi->domain_attr->cq_cnt = 64;
	fi->domain_attr->ep_cnt = 64;
	fi->domain_attr->tx_ctx_cnt = 64;
	fi->domain_attr->rx_ctx_cnt = 64;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->cntr_cnt = 64;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->mr_cnt = 65536;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->fabric_attr->name = strdup(WFI_NAME);
	fi->fabric_attr->prov_version = WFI_PROV_VERSION;
	fi->fabric_attr->api_version = version;
	if (!fi->domain_attr->name || !fi->fabric_attr->name)
		return -FI_ENOMEM;
	return 0;
}

static int set_addr(void **dst, size_t *len, const struct sockaddr_in *sin)
{
	*dst = malloc(sizeof(*sin));
	if (!*dst)
		return -FI_ENOMEM;
	memcpy(*dst, sin, sizeof(*sin));
	*len = sizeof(*sin);
	return 0;
}

int wfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info)
{
	struct sockaddr_in src, dst;
	bool have_dst = false;
	const char *why;
	struct fi_info *fi;
	int ret;

	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	why = hints_misfit(hints);
	if (why) {
		if (getenv("WEFT_FI_LOG"))
			fprintf(stderr, "weft: fi_getinfo: cannot meet the hints' %s\n", why);
		return -FI_ENODATA;
	}
	if (hints && hints->domain_attr && hints->domain_attr->av_type != FI_AV_UNSPEC &&
	    hints->domain_attr->av_type != FI_AV_MAP && hints->domain_attr->av_type != FI_AV_TABLE)
		return -FI_ENODATA;
	ret = wfi_local_addr(&src);
	if (ret)
		return ret;
	if (flags & FI_SOURCE) {
		if (node || service) {
			ret = resolve(node ? node : inet_ntoa(src.sin_addr), service, &src);
			if (ret)
				return ret;
		}
	} else if (node || service) {
		if (!node)
			return -FI_ENODATA;
		ret = resolve(node, service, &dst);
		if (ret)
			return ret;
		have_dst = true;
	}
	if (hints && hints->src_addr) {
		if (hints->src_addrlen < sizeof(src) ||
		    ((struct sockaddr *)hints->src_addr)->sa_family != AF_INET)
			return -FI_ENODATA;
		memcpy(&src, hints->src_addr, sizeof(src));
	}
	if (hints && hints->dest_addr) {
		if (hints->dest_addrlen < sizeof(dst) ||
		    ((struct sockaddr *)hints->dest_addr)->sa_family != AF_INET)
			return -FI_ENODATA;
		memcpy(&dst, hints->dest_addr, sizeof(dst));
		have_dst = true;
	}
	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	ret = fill(fi, hints, version);
	if (!ret)
		ret = set_addr(&fi->src_addr, &fi->src_addrlen, &src);
	if (!ret && have_dst)
		ret = set_addr(&fi->dest_addr, &fi->dest_addrlen, &dst);
	if (ret) {
		fi_freeinfo(fi);
		return ret;
	}
	*info = fi;
	return 0;
}
