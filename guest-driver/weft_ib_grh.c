// SPDX-License-Identifier: GPL-2.0
/*
 * weft_ib.ko: the network header of UD receives on kernel QPs.  The
 * adapter writes the source node and QP into the 40 bytes before the data
 * and zeroes the rest (hw-spec 16.7); ib_core (ib_mad, ib_cm, rdma_cm)
 * needs a RoCE v2 header there (union rdma_network_hdr): 20 zero bytes and
 * an IPv4 header with the sender's and this node's addresses.  The sender's
 * address is the ARP entry of weftN whose MAC names the source node
 * (docs/net.md); the receiver's is weftN's first IPv4 address.
 */
#include <linux/dma-direct.h>
#include <linux/etherdevice.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <net/arp.h>
#include <net/ip.h>
#include <rdma/ib_verbs.h>

#include "weft_ib.h"

struct weft_grh_find {
	struct net_device *ndev;
	u8 mac[ETH_ALEN];
	__be32 addr;
};

static void weft_grh_match(struct neighbour *n, void *cookie)
{
	struct weft_grh_find *f = cookie;

	if (!f->addr && n->dev == f->ndev && (n->nud_state & NUD_VALID) &&
	    ether_addr_equal(n->ha, f->mac))
		f->addr = *(__be32 *)n->primary_key;
}

static __be32 weft_grh_local(struct net_device *ndev)
{
	const struct in_ifaddr *ifa;
	struct in_device *in;
	__be32 a = 0;

	rcu_read_lock();
	in = __in_dev_get_rcu(ndev);
	if (in) {
		in_dev_for_each_ifa_rcu(ifa, in) {
			a = ifa->ifa_local;
			break;
		}
	}
	rcu_read_unlock();
	return a;
}

/*
 * Rewrites the first 40 bytes of the receive buffer at DMA address dma.
 * Returns false (and leaves the buffer alone) when the addresses are not
 * known or the buffer cannot be reached.
 */
bool weft_ib_grh_fill(struct weft_ibdev *dev, u64 dma, u16 src_node, u32 byte_len)
{
	struct weft_grh_find f = { .ndev = dev->ndev };
	struct device *d = &dev->pdev->dev;
	union rdma_network_hdr *h;
	phys_addr_t pa;
	__be32 local;

	if (!dma || byte_len < WEFT_VERBS_GRH_SIZE || device_iommu_mapped(d))
		return false;
	pa = dma_to_phys(d, dma);
	if (!pfn_valid(PHYS_PFN(pa)) ||
	    PHYS_PFN(pa) != PHYS_PFN(pa + WEFT_VERBS_GRH_SIZE - 1))
		return false;
	memcpy(f.mac, dev->ndev->dev_addr, ETH_ALEN);
	f.mac[4] = src_node >> 8;
	f.mac[5] = src_node & 0xff;
	local = weft_grh_local(dev->ndev);
	if (ether_addr_equal(f.mac, dev->ndev->dev_addr))
		f.addr = local;
	else
		neigh_for_each(&arp_tbl, weft_grh_match, &f);
	if (!f.addr || !local)
		return false;
	h = phys_to_virt(pa);
	memset(h, 0, sizeof(*h));
	h->roce4grh.version = 4;
	h->roce4grh.ihl = 5;
	h->roce4grh.tot_len = htons(byte_len - 20);
	h->roce4grh.frag_off = htons(IP_DF);
	h->roce4grh.ttl = 64;
	h->roce4grh.protocol = IPPROTO_UDP;
	h->roce4grh.saddr = f.addr;
	h->roce4grh.daddr = local;
	ip_send_check(&h->roce4grh);
	return true;
}
