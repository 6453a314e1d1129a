// SPDX-License-Identifier: GPL-2.0
/*
 * weft.ko: the IP interface weftN, an Ethernet device on a kernel window
 * of its own (the adapter's last window), in FIFO mode.  Frames that fit
 * a FIFO slot go whole; larger unicast frames are cut into pieces and
 * reassembled here; larger IPv4 broadcasts go as pieces whose IP fragment
 * fields are rewritten, so the receivers' IP stacks reassemble them (seed
 * section 1.5.19).  An epoch handshake keeps frames from before an adapter
 * recovery or a reboot away from the stack.  docs/net.md has the protocol.
 */
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_vlan.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/ip.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <net/checksum.h>
#include <net/ip.h>

#include "weft_drv.h"
#include "weft_verbs.h"
#include "weft/names.h"
#include "weft/net.h"

#define WEFT_NET_SEND_LOG2	10	/* 1024 frames, 2 MiB */
#define WEFT_NET_RECV_LOG2	11	/* 2048 frames, 4 MiB */
#define WEFT_NET_REASM		8	/* frames reassembled at once */
#define WEFT_NET_REASM_MS	1000	/* an unfinished reassembly is dropped after */
#define WEFT_NET_ANNOUNCE_MS	50	/* unicast announces to one peer at most every */
#define WEFT_NET_TX_RESERVE	8	/* send slots kept for announces */
/* IP payload bytes per rewritten IPv4 fragment: a multiple of 8. */
#define WEFT_NET_IP_STEP	((WEFT_NET_CHUNK - ETH_HLEN - sizeof(struct iphdr)) & ~7u)

static unsigned int weft_net_mtu = 9000;
module_param_named(net_mtu, weft_net_mtu, uint, 0444);
MODULE_PARM_DESC(net_mtu, "initial MTU of the weftN interfaces, 68..65535 (default 9000)");

/*
 * Interface counters (ethtool -S) and their class: CNT counts traffic or
 * events, RXERR a bad frame from the wire (dropped, counted in rx_errors
 * and rx_dropped), RXDROP another received frame dropped (rx_dropped),
 * TXDROP a frame dropped on transmit (tx_dropped).
 */
enum weft_net_class { WEFT_NSC_CNT, WEFT_NSC_RXERR, WEFT_NSC_RXDROP, WEFT_NSC_TXDROP };

enum weft_net_stat {
#define WEFT_NS_CNT(name)	WEFT_NS_##name,
#define WEFT_NS_RXERR(name)	WEFT_NS_##name,
#define WEFT_NS_RXDROP(name)	WEFT_NS_##name,
#define WEFT_NS_TXDROP(name)	WEFT_NS_##name,
#include "weft_net_stats.h"
#undef WEFT_NS_CNT
#undef WEFT_NS_RXERR
#undef WEFT_NS_RXDROP
#undef WEFT_NS_TXDROP
	WEFT_NS__COUNT
};

static const struct {
	char name[ETH_GSTRING_LEN];
	u8 class;
} weft_net_stat_info[WEFT_NS__COUNT] = {
#define WEFT_NS_CNT(name)	{ #name, WEFT_NSC_CNT },
#define WEFT_NS_RXERR(name)	{ #name, WEFT_NSC_RXERR },
#define WEFT_NS_RXDROP(name)	{ #name, WEFT_NSC_RXDROP },
#define WEFT_NS_TXDROP(name)	{ #name, WEFT_NSC_TXDROP },
#include "weft_net_stats.h"
#undef WEFT_NS_CNT
#undef WEFT_NS_RXERR
#undef WEFT_NS_RXDROP
#undef WEFT_NS_TXDROP
};

/* Extra ethtool -S lines after the interface counters. */
#define WEFT_NET_XSTATS		3	/* epoch, peers_synced, win_recv_dropped */

struct weft_net_peer {
	u32 epoch;		/* its epoch as last announced, 0 = unknown */
	u32 sync_seq;		/* its first frame carrying our epoch */
	u64 born;		/* when its epoch began (its clock) */
	bool synced;		/* it knows our current epoch */
	unsigned long announced;	/* jiffies of our last unicast announce */
};

struct weft_net_reasm {
	struct sk_buff *skb;	/* NULL = free */
	unsigned long start;
	u64 got;		/* pieces received */
	u32 epoch, seq, total;
	u16 src, count, ngot;
	u16 csum_start, csum_offset;
	u8 flags;
};

struct weft_net {
	struct weft_dev *wdev;
	struct net_device *ndev;
	struct napi_struct napi;
	struct weft_window *win;	/* the kernel window, reserved for life */
	void __iomem *db;		/* its doorbell page */
	struct work_struct restart_work;

	/* under wdev->lock */
	bool opened;			/* ndo_open done, ndo_stop not yet */

	/* transmit, under tx_lock */
	spinlock_t tx_lock;
	bool up;			/* window open: frames may be posted */
	u32 tx_head;			/* frames posted */
	u32 tx_clean;			/* frames the adapter marked DONE */
	u32 tx_pending;			/* posted, doorbell not yet rung */
	u32 tx_max_slots;		/* slots one frame of the MTU can take */
	u32 seq;

	/* receive, in NAPI */
	u32 rx_next;			/* entries consumed */
	bool announce_pending;		/* broadcast an announce from NAPI */
	struct weft_net_reasm reasm[WEFT_NET_REASM];

	u32 epoch;			/* this incarnation, never 0 */
	u64 born;			/* CLOCK_REALTIME ns when it began */
	struct weft_net_peer *peers;	/* indexed by node id */
	u64 st[WEFT_NS__COUNT];
};

static inline void weft_net_count(struct weft_net *net, enum weft_net_stat s)
{
	WRITE_ONCE(net->st[s], net->st[s] + 1);
}

/* ---- addresses ----------------------------------------------------------- */

static void weft_net_mac(u8 *mac, u32 adapter, u16 node)
{
	mac[0] = WEFT_NET_MAC0;
	mac[1] = WEFT_NET_MAC1;
	mac[2] = WEFT_NET_MAC2;
	mac[3] = adapter;
	mac[4] = node >> 8;
	mac[5] = node & 0xff;
}

/* The node of a Weft MAC address; false for any other address. */
static bool weft_net_mac_node(const u8 *mac, u16 *node)
{
	u16 n = (mac[4] << 8) | mac[5];

	if (mac[0] != WEFT_NET_MAC0 || mac[1] != WEFT_NET_MAC1 ||
	    mac[2] != WEFT_NET_MAC2 || n > WEFT_NODE_MAX_UNICAST)
		return false;
	*node = n;
	return true;
}

/* ---- transmit ------------------------------------------------------------ */

static struct weft_send_line *weft_net_sline(struct weft_net *net, u32 i)
{
	return net->win->send_va +
	       (size_t)(i & (net->win->send_size / WEFT_FRAME_SIZE - 1)) * WEFT_FRAME_SIZE;
}

static u32 weft_net_tx_free(struct weft_net *net)
{
	return net->win->send_size / WEFT_FRAME_SIZE - (net->tx_head - net->tx_clean);
}

/* Slots one frame of the current MTU can take, either way of cutting it. */
static u32 weft_net_slots(u32 mtu)
{
	u32 frags = DIV_ROUND_UP(mtu + VLAN_ETH_HLEN, WEFT_NET_CHUNK);
	u32 ip = DIV_ROUND_UP(mtu, WEFT_NET_IP_STEP);

	return max(frags, ip) + 1;
}

/* Frames the adapter has processed (DONE), with their status.  tx_lock. */
static void weft_net_tx_clean(struct weft_net *net)
{
	lockdep_assert_held(&net->tx_lock);
	while (net->tx_clean != net->tx_head) {
		struct weft_send_line *l = weft_net_sline(net, net->tx_clean);
		u16 status;

		if (!(READ_ONCE(l->hdr.flags) & WEFT_SF_DONE))
			break;
		dma_rmb();
		status = READ_ONCE(l->hdr.status);
		if (status == WEFT_R_NO_LINK)
			weft_net_count(net, WEFT_NS_tx_no_link);
		else if (status != WEFT_R_OK)
			weft_net_count(net, WEFT_NS_tx_frame_errors);
		net->tx_clean++;
	}
}

static void weft_net_ring(struct weft_net *net)
{
	if (!net->tx_pending)
		return;
	/* writeq orders the frame stores before the doorbell. */
	writeq(net->tx_pending, net->db + WEFT_DB_START_TRANSMIT);
	net->tx_pending = 0;
	weft_net_count(net, WEFT_NS_tx_doorbells);
}

/*
 * Post one FIFO frame: the net header (h->seq set by the caller), plen
 * bytes of prefix, then len bytes of skb from off.  tx_lock held, one
 * free slot checked.
 */
static void weft_net_post(struct weft_net *net, u16 dest, struct weft_net_hdr *h,
			  const void *prefix, u32 plen, const struct sk_buff *skb,
			  u32 off, u32 len)
{
	struct weft_send_line *l = weft_net_sline(net, net->tx_head);
	u8 *p = (u8 *)l + WEFT_FRAME_HDR_SIZE;
	struct weft_send_hdr sh = {
		.dest_node = dest,
		.dest_window = net->win->idx,
		.length = WEFT_NET_HDR_SIZE + plen + len,
		.type = WEFT_SF_FIFO,
	};

	lockdep_assert_held(&net->tx_lock);
	h->version = WEFT_NET_VERSION;
	h->src_epoch = net->epoch;
	memcpy(p, h, sizeof(*h));
	if (plen)
		memcpy(p + WEFT_NET_HDR_SIZE, prefix, plen);
	if (len && skb_copy_bits(skb, off, p + WEFT_NET_HDR_SIZE + plen, len))
		sh.length = WEFT_NET_HDR_SIZE + plen;	/* cannot happen: len checked */
	memcpy(&l->hdr, &sh, sizeof(sh));
	net->tx_head++;
	net->tx_pending++;
}

/* Unicast or broadcast announce of our epoch.  tx_lock held. */
static void weft_net_announce_locked(struct weft_net *net, u16 dest, u32 dst_epoch,
				     u8 flags)
{
	struct weft_net_hdr h = {
		.type = WEFT_NET_ANNOUNCE,
		.flags = flags,
		.frag_count = 1,
		.dst_epoch = dst_epoch,
		.total_len = WEFT_NET_ANNOUNCE_LEN,
	};
	__le64 born = cpu_to_le64(net->born);

	lockdep_assert_held(&net->tx_lock);
	if (!net->up)
		return;
	h.seq = net->seq++;
	weft_net_tx_clean(net);
	if (!weft_net_tx_free(net)) {
		weft_net_count(net, WEFT_NS_tx_drop_fifo_full);
		return;
	}
	weft_net_post(net, dest, &h, &born, sizeof(born), NULL, 0, 0);
	weft_net_count(net, WEFT_NS_tx_announces);
	weft_net_ring(net);
}

static void weft_net_announce(struct weft_net *net, u16 dest, u32 dst_epoch, u8 flags)
{
	spin_lock_bh(&net->tx_lock);
	weft_net_announce_locked(net, dest, dst_epoch, flags);
	spin_unlock_bh(&net->tx_lock);
}

/* Tell a peer our epoch (rate limited per peer): it sent us a stale frame. */
static void weft_net_announce_to(struct weft_net *net, u16 node, u32 its_epoch, u8 flags)
{
	struct weft_net_peer *p = &net->peers[node];

	if (p->announced && time_before(jiffies, p->announced +
					msecs_to_jiffies(WEFT_NET_ANNOUNCE_MS)))
		return;
	p->announced = jiffies ? jiffies : 1;
	weft_net_announce(net, node, its_epoch, flags);
}

/*
 * The seed's large broadcast (section 1.5.19): an IPv4 datagram without
 * options is sent as pieces of WEFT_NET_IP_STEP bytes, each with a copy
 * of the Ethernet and IP headers whose fragment offset, more-fragments
 * flag, length and checksum are rewritten (DF cleared), so that each
 * piece is an IP fragment and the receivers' IP layer reassembles them.
 * Returns false if the frame is not such a datagram.  tx_lock held.
 */
static bool weft_net_xmit_ip_split(struct weft_net *net, struct sk_buff *skb)
{
	struct {
		struct ethhdr eth;
		struct iphdr ip;
	} __packed hd, piece;
	u32 data, off0, o, n;
	u16 frag;

	lockdep_assert_held(&net->tx_lock);
	if (skb->len < sizeof(hd) || skb_copy_bits(skb, 0, &hd, sizeof(hd)) ||
	    hd.eth.h_proto != htons(ETH_P_IP) || hd.ip.version != 4 ||
	    hd.ip.ihl != 5 || ntohs(hd.ip.tot_len) != skb->len - ETH_HLEN)
		return false;
	frag = ntohs(hd.ip.frag_off);
	off0 = (frag & IP_OFFSET) << 3;
	data = skb->len - sizeof(hd);
	weft_net_count(net, WEFT_NS_tx_ip_split);
	for (o = 0; o < data; o += n) {
		struct weft_net_hdr h = {
			.type = WEFT_NET_FRAME,
			.frag_count = 1,
			.seq = net->seq++,
		};
		bool more = o + WEFT_NET_IP_STEP < data;

		n = more ? WEFT_NET_IP_STEP : data - o;
		piece = hd;
		piece.ip.tot_len = htons(sizeof(piece.ip) + n);
		piece.ip.frag_off = htons(((off0 + o) >> 3) |
					  (more || (frag & IP_MF) ? IP_MF : 0));
		piece.ip.check = 0;
		piece.ip.check = ip_fast_csum(&piece.ip, piece.ip.ihl);
		h.total_len = sizeof(piece) + n;
		weft_net_post(net, WEFT_NODE_BROADCAST, &h, &piece, sizeof(piece), skb,
			      sizeof(hd) + o, n);
		weft_net_count(net, WEFT_NS_tx_ip_pieces);
	}
	return true;
}

/* A partial checksum travels as such (the fabric does not corrupt data). */
static void weft_net_csum(const struct sk_buff *skb, struct weft_net_hdr *h)
{
	if (skb->ip_summed != CHECKSUM_PARTIAL)
		return;
	h->flags |= WEFT_NET_F_CSUM;
	h->csum_start = skb_checksum_start_offset(skb);
	h->csum_offset = skb->csum_offset;
}

/* A frame larger than a slot, cut into WEFT_NET_CHUNK pieces.  tx_lock. */
static void weft_net_xmit_frags(struct weft_net *net, struct sk_buff *skb, u16 dest,
				u32 dst_epoch)
{
	u32 count = DIV_ROUND_UP(skb->len, WEFT_NET_CHUNK), i, off;
	u32 seq = net->seq++;	/* one frame number for every piece */

	for (i = 0, off = 0; i < count; i++, off += WEFT_NET_CHUNK) {
		struct weft_net_hdr h = {
			.type = WEFT_NET_FRAG,
			.frag_index = i,
			.frag_count = count,
			.dst_epoch = dst_epoch,
			.seq = seq,
			.total_len = skb->len,
		};

		weft_net_csum(skb, &h);
		weft_net_post(net, dest, &h, NULL, 0, skb, off,
			      min_t(u32, WEFT_NET_CHUNK, skb->len - off));
		weft_net_count(net, WEFT_NS_tx_frags);
	}
	weft_net_count(net, WEFT_NS_tx_frag_frames);
}

/* The queue stops when a frame of the MTU might not fit; tx_lock held. */
static void weft_net_tx_maybe_stop(struct weft_net *net)
{
	u32 size = net->win->send_size / WEFT_FRAME_SIZE, thr;

	lockdep_assert_held(&net->tx_lock);
	if (weft_net_tx_free(net) >= net->tx_max_slots + WEFT_NET_TX_RESERVE)
		return;
	netif_stop_queue(net->ndev);
	weft_net_count(net, WEFT_NS_tx_queue_stops);
	weft_net_ring(net);
	/* Interrupt when at most half the FIFO is still pending. */
	thr = net->tx_head - size / 2;
	if (thr == WEFT_THRESHOLD_OFF0 || thr == WEFT_THRESHOLD_OFF1)
		thr = 1;
	writeq(thr, net->db + WEFT_DB_SEND_THRESHOLD);
	/* It may have passed already: look again. */
	weft_net_tx_clean(net);
	if (weft_net_tx_free(net) >= net->tx_max_slots + WEFT_NET_TX_RESERVE) {
		netif_wake_queue(net->ndev);
		weft_net_count(net, WEFT_NS_tx_queue_wakes);
	}
}

static netdev_tx_t weft_net_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	struct weft_net *net = netdev_priv(ndev);
	const struct ethhdr *eth = (const struct ethhdr *)skb->data;
	u32 len = skb->len, dst_epoch = 0;
	bool bcast;
	u16 dest;

	if (len < ETH_HLEN || skb_headlen(skb) < ETH_HLEN) {
		weft_net_count(net, WEFT_NS_tx_drop_bad);
		goto drop;
	}
	bcast = is_multicast_ether_addr(eth->h_dest);
	if (bcast) {
		/* No adapter command joins a group: multicast goes as broadcast. */
		dest = WEFT_NODE_BROADCAST;
	} else if (!weft_net_mac_node(eth->h_dest, &dest)) {
		weft_net_count(net, WEFT_NS_tx_drop_no_route);
		goto drop;
	}
	if (len > ndev->mtu + VLAN_ETH_HLEN ||
	    len > WEFT_NET_MAX_FRAGS * WEFT_NET_CHUNK) {
		weft_net_count(net, WEFT_NS_tx_drop_too_long);
		goto drop;
	}
	if (!bcast)
		dst_epoch = READ_ONCE(net->peers[dest].epoch);

	spin_lock(&net->tx_lock);
	if (!net->up) {
		spin_unlock(&net->tx_lock);
		weft_net_count(net, WEFT_NS_tx_drop_down);
		goto drop;
	}
	weft_net_tx_clean(net);
	if (weft_net_tx_free(net) < weft_net_slots(len) + 1) {
		weft_net_ring(net);
		spin_unlock(&net->tx_lock);
		weft_net_count(net, WEFT_NS_tx_drop_fifo_full);
		goto drop;
	}
	if (len <= WEFT_NET_CHUNK) {
		struct weft_net_hdr h = {
			.type = WEFT_NET_FRAME,
			.frag_count = 1,
			.dst_epoch = dst_epoch,
			.seq = net->seq++,
			.total_len = len,
		};

		weft_net_csum(skb, &h);
		weft_net_post(net, dest, &h, NULL, 0, skb, 0, len);
		weft_net_count(net, WEFT_NS_tx_frames);
	} else if (!bcast || (skb->ip_summed == CHECKSUM_PARTIAL && skb_checksum_help(skb)) ||
		   !weft_net_xmit_ip_split(net, skb)) {
		weft_net_xmit_frags(net, skb, dest, dst_epoch);
	}
	ndev->stats.tx_packets++;
	ndev->stats.tx_bytes += len;
	weft_net_tx_maybe_stop(net);
	if (!netdev_xmit_more())
		weft_net_ring(net);
	spin_unlock(&net->tx_lock);
	dev_consume_skb_any(skb);
	return NETDEV_TX_OK;

drop:
	ndev->stats.tx_dropped++;
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

/* From NAPI: processed send frames free slots; wake the queue. */
static void weft_net_tx_reap(struct weft_net *net)
{
	spin_lock(&net->tx_lock);
	weft_net_tx_clean(net);
	if (net->up && netif_queue_stopped(net->ndev) &&
	    weft_net_tx_free(net) >= net->tx_max_slots + WEFT_NET_TX_RESERVE) {
		netif_wake_queue(net->ndev);
		weft_net_count(net, WEFT_NS_tx_queue_wakes);
	}
	spin_unlock(&net->tx_lock);
}

/* ---- receive ------------------------------------------------------------- */

static void weft_net_reasm_free(struct weft_net_reasm *r)
{
	dev_kfree_skb_any(r->skb);
	r->skb = NULL;
}

static void weft_net_reasm_flush(struct weft_net *net)
{
	u32 i;

	for (i = 0; i < WEFT_NET_REASM; i++)
		if (net->reasm[i].skb)
			weft_net_reasm_free(&net->reasm[i]);
}

/*
 * A whole Ethernet frame from node src: check it and give it to the
 * stack.  flags/csum_start/csum_offset from the net header.
 */
static void weft_net_deliver(struct weft_net *net, struct sk_buff *skb, u16 src,
			     u8 flags, u16 csum_start, u16 csum_offset)
{
	struct net_device *ndev = net->ndev;
	const struct ethhdr *eth = (const struct ethhdr *)skb->data;
	u32 max = ndev->mtu + ETH_HLEN;
	u16 node;

	if (eth->h_proto == htons(ETH_P_8021Q))
		max += VLAN_HLEN;
	if (skb->len > max) {
		weft_net_count(net, WEFT_NS_rx_drop_too_long);
		goto drop;
	}
	if (!weft_net_mac_node(eth->h_source, &node) || node != src) {
		weft_net_count(net, WEFT_NS_rx_drop_spoofed_src);
		goto drop;
	}
	if (!is_multicast_ether_addr(eth->h_dest) &&
	    !ether_addr_equal(eth->h_dest, ndev->dev_addr) &&
	    !(ndev->flags & IFF_PROMISC)) {
		weft_net_count(net, WEFT_NS_rx_drop_not_for_us);
		goto drop;
	}
	if ((flags & WEFT_NET_F_CSUM) &&
	    (csum_start < ETH_HLEN || !skb_partial_csum_set(skb, csum_start, csum_offset))) {
		weft_net_count(net, WEFT_NS_rx_drop_bad_header);
		goto drop;
	}
	skb->protocol = eth_type_trans(skb, ndev);
	ndev->stats.rx_packets++;
	ndev->stats.rx_bytes += skb->len + ETH_HLEN;
	napi_gro_receive(&net->napi, skb);
	return;
drop:
	dev_kfree_skb_any(skb);
}

static void weft_net_rx_frag(struct weft_net *net, const struct weft_net_hdr *h,
			     u16 src, const u8 *data, u32 len)
{
	u32 max = net->ndev->mtu + VLAN_ETH_HLEN, i, want;
	struct weft_net_reasm *r = NULL, *unused = NULL, *oldest = NULL;
	struct sk_buff *skb;

	weft_net_count(net, WEFT_NS_rx_frags);
	if (h->frag_count < 2 || h->frag_count > WEFT_NET_MAX_FRAGS ||
	    h->frag_index >= h->frag_count || h->total_len > max ||
	    h->total_len <= (u32)(h->frag_count - 1) * WEFT_NET_CHUNK ||
	    h->total_len > (u32)h->frag_count * WEFT_NET_CHUNK) {
		weft_net_count(net, WEFT_NS_rx_drop_bad_frag);
		return;
	}
	want = h->frag_index + 1 < h->frag_count ? WEFT_NET_CHUNK :
	       h->total_len - (h->frag_count - 1) * WEFT_NET_CHUNK;
	if (len != want) {
		weft_net_count(net, WEFT_NS_rx_drop_bad_frag);
		return;
	}
	for (i = 0; i < WEFT_NET_REASM; i++) {
		struct weft_net_reasm *c = &net->reasm[i];

		if (c->skb && time_after(jiffies, c->start +
					 msecs_to_jiffies(WEFT_NET_REASM_MS))) {
			weft_net_count(net, WEFT_NS_rx_drop_reasm_timeout);
			weft_net_reasm_free(c);
		}
		if (!c->skb) {
			if (!unused)
				unused = c;
			continue;
		}
		if (c->src == src && c->epoch == h->src_epoch && c->seq == h->seq)
			r = c;
		if (!oldest || time_before(c->start, oldest->start))
			oldest = c;
	}
	if (r && (r->total != h->total_len || r->count != h->frag_count ||
		  r->flags != h->flags || r->csum_start != h->csum_start ||
		  r->csum_offset != h->csum_offset)) {
		/* The pieces of one frame disagree: none of it is trusted. */
		weft_net_count(net, WEFT_NS_rx_drop_bad_frag);
		weft_net_reasm_free(r);
		return;
	}
	if (!r) {
		r = unused ? unused : oldest;
		if (r->skb) {
			weft_net_count(net, WEFT_NS_rx_drop_reasm_evicted);
			weft_net_reasm_free(r);
		}
		skb = napi_alloc_skb(&net->napi, h->total_len);
		if (!skb) {
			weft_net_count(net, WEFT_NS_rx_drop_nomem);
			return;
		}
		skb_put(skb, h->total_len);
		r->skb = skb;
		r->start = jiffies;
		r->got = 0;
		r->ngot = 0;
		r->src = src;
		r->epoch = h->src_epoch;
		r->seq = h->seq;
		r->total = h->total_len;
		r->count = h->frag_count;
		r->flags = h->flags;
		r->csum_start = h->csum_start;
		r->csum_offset = h->csum_offset;
	}
	if (r->got & BIT_ULL(h->frag_index)) {
		weft_net_count(net, WEFT_NS_rx_drop_dup_frag);
		return;
	}
	memcpy(r->skb->data + h->frag_index * WEFT_NET_CHUNK, data, len);
	r->got |= BIT_ULL(h->frag_index);
	if (++r->ngot < r->count)
		return;
	skb = r->skb;
	r->skb = NULL;
	weft_net_count(net, WEFT_NS_rx_reassembled);
	weft_net_deliver(net, skb, src, r->flags, r->csum_start, r->csum_offset);
}

static void weft_net_rx_announce(struct weft_net *net, const struct weft_net_hdr *h,
				 u16 src, const u8 *data)
{
	struct weft_net_peer *p = &net->peers[src];
	__le64 le;
	u64 born;

	memcpy(&le, data, sizeof(le));
	born = le64_to_cpu(le);
	weft_net_count(net, WEFT_NS_rx_announces);
	if (h->dst_epoch && h->dst_epoch != net->epoch) {
		/* Meant for an earlier incarnation of this interface. */
		weft_net_count(net, WEFT_NS_rx_drop_stale_epoch);
		return;
	}
	if (p->epoch != h->src_epoch) {
		if (p->epoch && born < p->born) {
			/* From an earlier incarnation of the peer. */
			weft_net_count(net, WEFT_NS_rx_drop_stale_peer);
			return;
		}
		WRITE_ONCE(p->epoch, h->src_epoch);
		p->born = born;
		p->synced = false;
	}
	if (h->dst_epoch == net->epoch && !p->synced) {
		p->synced = true;
		p->sync_seq = h->seq;
		weft_net_count(net, WEFT_NS_rx_syncs);
	}
	if (!h->dst_epoch || (h->flags & WEFT_NET_F_REPLY)) {
		/* Answer at once: a handshake is not rate limited. */
		p->announced = jiffies ? jiffies : 1;
		weft_net_announce(net, src, h->src_epoch,
				  h->dst_epoch ? 0 : WEFT_NET_F_REPLY);
	}
}

/*
 * Epoch checks of a data frame (docs/net.md, "Epochs"): a unicast frame
 * must carry our epoch, and come from the peer's known incarnation; a
 * broadcast is taken only from a peer that has sent us our epoch, and
 * only if sent after that.  Returns true if the frame may be delivered.
 */
static bool weft_net_rx_epoch(struct weft_net *net, const struct weft_net_hdr *h,
			      u16 src, bool bcast)
{
	struct weft_net_peer *p = &net->peers[src];

	if (!bcast) {
		if (h->dst_epoch != net->epoch) {
			weft_net_count(net, WEFT_NS_rx_drop_stale_epoch);
			weft_net_announce_to(net, src, h->src_epoch, WEFT_NET_F_REPLY);
			return false;
		}
		if (!p->epoch) {
			/* It knows our epoch: it has heard our announce. */
			WRITE_ONCE(p->epoch, h->src_epoch);
		} else if (p->epoch != h->src_epoch) {
			weft_net_count(net, WEFT_NS_rx_drop_stale_peer);
			weft_net_announce_to(net, src, h->src_epoch, WEFT_NET_F_REPLY);
			return false;
		}
		if (!p->synced) {
			p->synced = true;
			p->sync_seq = h->seq;
			weft_net_count(net, WEFT_NS_rx_syncs);
		}
		return true;
	}
	if (!p->synced || p->epoch != h->src_epoch ||
	    (s32)(h->seq - p->sync_seq) <= 0) {
		weft_net_count(net, WEFT_NS_rx_drop_unsynced);
		weft_net_announce_to(net, src, h->src_epoch, WEFT_NET_F_REPLY);
		return false;
	}
	return true;
}

/* One receive entry, its header line copied; data is the FIFO payload. */
static void weft_net_rx_entry(struct weft_net *net, const struct weft_recv_hdr *rh,
			      const u8 *data)
{
	struct weft_net_hdr h;
	struct sk_buff *skb;
	bool bcast;
	u32 len;

	weft_net_count(net, WEFT_NS_rx_entries);
	if (rh->type != WEFT_RF_FIFO || rh->length < WEFT_NET_HDR_SIZE ||
	    rh->length > WEFT_MAX_PAYLOAD || rh->src_node > WEFT_NODE_MAX_UNICAST) {
		weft_net_count(net, WEFT_NS_rx_drop_bad_header);
		return;
	}
	if (rh->src_window != net->win->idx) {
		weft_net_count(net, WEFT_NS_rx_drop_bad_window);
		return;
	}
	memcpy(&h, data, sizeof(h));
	len = rh->length - WEFT_NET_HDR_SIZE;
	data += WEFT_NET_HDR_SIZE;
	bcast = rh->flags & WEFT_RF_BROADCAST;
	if (h.version != WEFT_NET_VERSION || h.reserved || !h.src_epoch ||
	    (bcast && h.dst_epoch) ||
	    (h.flags & ~(WEFT_NET_F_REPLY | WEFT_NET_F_CSUM)) ||
	    (!(h.flags & WEFT_NET_F_CSUM) && (h.csum_start || h.csum_offset))) {
		weft_net_count(net, WEFT_NS_rx_drop_bad_header);
		return;
	}
	switch (h.type) {
	case WEFT_NET_ANNOUNCE:
		if (len != WEFT_NET_ANNOUNCE_LEN || h.total_len != len ||
		    h.frag_index || h.frag_count != 1) {
			weft_net_count(net, WEFT_NS_rx_drop_bad_header);
			return;
		}
		weft_net_rx_announce(net, &h, rh->src_node, data);
		return;
	case WEFT_NET_FRAME:
		if (h.frag_index || h.frag_count != 1) {
			weft_net_count(net, WEFT_NS_rx_drop_bad_frag);
			return;
		}
		if (h.total_len != len || len < ETH_HLEN) {
			weft_net_count(net, WEFT_NS_rx_drop_bad_length);
			return;
		}
		if (!weft_net_rx_epoch(net, &h, rh->src_node, bcast))
			return;
		weft_net_count(net, WEFT_NS_rx_frames);
		skb = napi_alloc_skb(&net->napi, len);
		if (!skb) {
			weft_net_count(net, WEFT_NS_rx_drop_nomem);
			return;
		}
		skb_put_data(skb, data, len);
		weft_net_deliver(net, skb, rh->src_node, h.flags, h.csum_start, h.csum_offset);
		return;
	case WEFT_NET_FRAG:
		if (!weft_net_rx_epoch(net, &h, rh->src_node, bcast))
			return;
		weft_net_rx_frag(net, &h, rh->src_node, data, len);
		return;
	default:
		weft_net_count(net, WEFT_NS_rx_drop_bad_header);
	}
}

static struct weft_recv_hdr *weft_net_rline(struct weft_net *net, u32 i)
{
	return net->win->recv_va +
	       (size_t)(i & (net->win->recv_size / WEFT_FRAME_SIZE - 1)) * WEFT_FRAME_SIZE;
}

static int weft_net_poll(struct napi_struct *napi, int budget)
{
	struct weft_net *net = container_of(napi, struct weft_net, napi);
	struct weft_recv_hdr *rl, rh;
	u32 thr;
	int done = 0;

	weft_net_tx_reap(net);
	if (net->announce_pending) {
		net->announce_pending = false;
		weft_net_announce(net, WEFT_NODE_BROADCAST, 0, 0);
	}
	while (done < budget) {
		rl = weft_net_rline(net, net->rx_next);
		if (!(READ_ONCE(rl->flags) & WEFT_RF_VALID))
			break;
		dma_rmb();
		memcpy(&rh, rl, sizeof(rh));
		if (rh.seq != net->rx_next)
			weft_net_count(net, WEFT_NS_rx_bad_seq);
		weft_net_rx_entry(net, &rh, (const u8 *)rl + WEFT_FRAME_HDR_SIZE);
		/* Consumed: zero the header line, the slot goes back below. */
		memset(rl, 0, sizeof(*rl));
		net->rx_next++;
		done++;
	}
	if (done)
		writeq(done, net->db + WEFT_DB_RETURN_SLOTS);
	if (done == budget)
		return budget;
	thr = net->rx_next + 1;
	if (thr == WEFT_THRESHOLD_OFF0 || thr == WEFT_THRESHOLD_OFF1)
		return budget;	/* no interrupt can be asked for: poll on */
	if (napi_complete_done(napi, done)) {
		writeq(thr, net->db + WEFT_DB_RECV_THRESHOLD);
		/* An entry written before the threshold raises nothing. */
		rl = weft_net_rline(net, net->rx_next);
		if (READ_ONCE(rl->flags) & WEFT_RF_VALID)
			napi_schedule(napi);
	}
	return done;
}

/* ---- window and interface state ----------------------------------------- */

static void weft_net_lmt_write(struct weft_net *net)
{
	struct weft_window *win = net->win;
	struct weft_lmt lmt;
	const u64 *q = (const u64 *)&lmt;
	u32 i;

	memset(&lmt, 0, sizeof(lmt));
	lmt.recv_fifo_real_address = win->recv_dma;
	lmt.window_state = WEFT_WIN_INVALID;
	lmt.recv_fifo_size = WEFT_NET_RECV_LOG2;
	lmt.window_id = win->idx;
	lmt.recv_mask = (1u << WEFT_NET_RECV_LOG2) - 1;
	lmt.recv_fifo_avail_slots = 1u << WEFT_NET_RECV_LOG2;
	lmt.recv_int_threshold = 1;
	lmt.window_key = WEFT_NET_KEY;
	lmt.rcxt_id = WEFT_RCXT_NONE;
	lmt.int_vect_data = win->idx % net->wdev->nr_handlers;
	lmt.send_fifo_real_address = win->send_dma;
	lmt.config_parm_bcast = 1;
	lmt.send_fifo_size = WEFT_NET_SEND_LOG2;
	lmt.send_quanta_value = WEFT_DEF_QUANTUM;
	lmt.send_mask = (1u << WEFT_NET_SEND_LOG2) - 1;
	lmt.send_int_threshold_hi = WEFT_THRESHOLD_OFF0;
	lmt.rcxt_head = WEFT_RCXT_NONE;
	lmt.rcxt_tail = WEFT_RCXT_NONE;
	lmt.send_quanta_size = WEFT_DEF_QUANTUM;
	lmt.send_rcxt = WEFT_RCXT_NONE;
	for (i = 0; i < sizeof(lmt) / 8; i++)
		writeq(q[i], net->wdev->sram + WEFT_SRAM_LMT_OFF(win->idx) + 8 * i);
}

static void weft_net_carrier(struct weft_net *net)
{
	if (weft_rd(net->wdev, WEFT_REG_STATUS) & WEFT_STATUS_LINK_UP)
		netif_carrier_on(net->ndev);
	else
		netif_carrier_off(net->ndev);
}

/*
 * Open the window with fresh FIFOs and a new epoch, so nothing sent to
 * or received by an earlier incarnation is taken.  wdev->lock held.
 */
static int weft_net_start(struct weft_net *net)
{
	struct weft_dev *wdev = net->wdev;
	u64 state;
	int ret;

	lockdep_assert_held(&wdev->lock);
	memset(net->win->send_va, 0, net->win->send_size);
	memset(net->win->recv_va, 0, net->win->recv_size);
	memset(net->peers, 0, (WEFT_NODE_MAX_UNICAST + 1) * sizeof(*net->peers));
	do {
		net->epoch = get_random_u32();
	} while (!net->epoch);
	net->born = ktime_get_real_ns();
	net->tx_head = 0;
	net->tx_clean = 0;
	net->tx_pending = 0;
	net->rx_next = 0;
	net->announce_pending = false;
	weft_net_lmt_write(net);
	ret = weft_cmd(wdev, WEFT_REG_CMD_OPEN_WINDOW, net->win->idx);
	state = readq(wdev->sram + WEFT_SRAM_LMT_OFF(net->win->idx) +
		      offsetof(struct weft_lmt, window_state)) & 0xffffffffull;
	if (!ret && state != WEFT_WIN_VALID)
		ret = -EIO;
	if (ret) {
		netdev_err(net->ndev, "Open Window %u failed: %d (state %llu)\n",
			   net->win->idx, ret, state);
		return ret;
	}
	spin_lock_bh(&net->tx_lock);
	net->tx_max_slots = weft_net_slots(net->ndev->mtu);
	net->up = true;
	spin_unlock_bh(&net->tx_lock);
	napi_enable(&net->napi);
	/*
	 * A frame that came between Open Window and napi_enable() raised its
	 * threshold event while NAPI was off, and the threshold is behind us
	 * now: poll once, so that frame is taken and the threshold re-armed.
	 */
	napi_schedule(&net->napi);
	weft_net_carrier(net);
	netif_wake_queue(net->ndev);
	weft_net_announce(net, WEFT_NODE_BROADCAST, 0, 0);
	netdev_dbg(net->ndev, "window %u open, epoch 0x%08x\n", net->win->idx, net->epoch);
	return 0;
}

/* Stop using the window; the adapter forgets it.  wdev->lock held. */
static void weft_net_halt(struct weft_net *net)
{
	struct weft_dev *wdev = net->wdev;

	lockdep_assert_held(&wdev->lock);
	spin_lock_bh(&net->tx_lock);
	if (!net->up) {
		spin_unlock_bh(&net->tx_lock);
		return;
	}
	net->up = false;
	spin_unlock_bh(&net->tx_lock);
	netif_tx_disable(net->ndev);
	napi_disable(&net->napi);
	netif_carrier_off(net->ndev);
	weft_cmd(wdev, WEFT_REG_CMD_CLOSE_WINDOW, net->win->idx);
	weft_wait_snapshot(wdev, WEFT_CMD_TIMEOUT_MS);
	weft_net_reasm_flush(net);
}

static int weft_net_open(struct net_device *ndev)
{
	struct weft_net *net = netdev_priv(ndev);
	struct weft_dev *wdev = net->wdev;
	int ret = -ENODEV;

	mutex_lock(&wdev->lock);
	if (!wdev->dead) {
		ret = weft_net_start(net);
		net->opened = !ret;
	}
	mutex_unlock(&wdev->lock);
	return ret;
}

static int weft_net_stop(struct net_device *ndev)
{
	struct weft_net *net = netdev_priv(ndev);

	mutex_lock(&net->wdev->lock);
	net->opened = false;
	weft_net_halt(net);
	mutex_unlock(&net->wdev->lock);
	cancel_work_sync(&net->restart_work);
	return 0;
}

/* A window fatal error on the kernel window: close and reopen it. */
static void weft_net_restart_work(struct work_struct *work)
{
	struct weft_net *net = container_of(work, struct weft_net, restart_work);

	mutex_lock(&net->wdev->lock);
	if (net->opened && !net->wdev->dead && !net->wdev->recovering) {
		weft_net_halt(net);
		if (!weft_net_start(net))
			weft_net_count(net, WEFT_NS_restarts);
	}
	mutex_unlock(&net->wdev->lock);
}

static int weft_net_change_mtu(struct net_device *ndev, int mtu)
{
	struct weft_net *net = netdev_priv(ndev);

	spin_lock_bh(&net->tx_lock);
	WRITE_ONCE(ndev->mtu, mtu);
	net->tx_max_slots = weft_net_slots(mtu);
	spin_unlock_bh(&net->tx_lock);
	return 0;
}

static void weft_net_get_stats64(struct net_device *ndev,
				 struct rtnl_link_stats64 *s)
{
	struct weft_net *net = netdev_priv(ndev);
	u32 i;

	netdev_stats_to_stats64(s, &ndev->stats);
	for (i = 0; i < WEFT_NS__COUNT; i++) {
		u64 v = READ_ONCE(net->st[i]);

		switch (weft_net_stat_info[i].class) {
		case WEFT_NSC_RXERR:
			s->rx_errors += v;
			s->rx_dropped += v;
			break;
		case WEFT_NSC_RXDROP:
			s->rx_dropped += v;
			break;
		}
	}
	s->rx_missed_errors = readl(net->wdev->sram + WEFT_SRAM_LMT_OFF(net->win->idx) +
				    offsetof(struct weft_lmt, recv_dropped));
}

static const struct net_device_ops weft_net_ops = {
	.ndo_open = weft_net_open,
	.ndo_stop = weft_net_stop,
	.ndo_start_xmit = weft_net_xmit,
	.ndo_change_mtu = weft_net_change_mtu,
	.ndo_get_stats64 = weft_net_get_stats64,
	.ndo_validate_addr = eth_validate_addr,
};

/* ---- ethtool ------------------------------------------------------------- */

static void weft_net_get_drvinfo(struct net_device *ndev, struct ethtool_drvinfo *info)
{
	struct weft_net *net = netdev_priv(ndev);

	strscpy(info->driver, WEFT_DRV_NAME, sizeof(info->driver));
	strscpy(info->bus_info, pci_name(net->wdev->pdev), sizeof(info->bus_info));
}

/*
 * The link's nominal speed (docs/net.md): a fabric link has no line rate,
 * so this is the order of what one adapter moves (about 1 GB/s).  ib_core
 * derives the RoCE port's active_speed and width from it, and warned on
 * every port query while it was unknown.
 */
#define WEFT_NET_SPEED SPEED_10000

static int weft_net_get_link_ksettings(struct net_device *ndev,
				       struct ethtool_link_ksettings *ks)
{
	ethtool_link_ksettings_zero_link_mode(ks, supported);
	ethtool_link_ksettings_zero_link_mode(ks, advertising);
	ks->base.speed = netif_carrier_ok(ndev) ? WEFT_NET_SPEED : SPEED_UNKNOWN;
	ks->base.duplex = netif_carrier_ok(ndev) ? DUPLEX_FULL : DUPLEX_UNKNOWN;
	ks->base.port = PORT_OTHER;
	ks->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

static int weft_net_sset_count(struct net_device *ndev, int sset)
{
	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	return WEFT_NS__COUNT + WEFT_NET_XSTATS + WEFT_CNT__COUNT;
}

static void weft_net_get_strings(struct net_device *ndev, u32 sset, u8 *data)
{
	u32 c;

	if (sset != ETH_SS_STATS)
		return;
	for (c = 0; c < WEFT_NS__COUNT; c++) {
		memcpy(data, weft_net_stat_info[c].name, ETH_GSTRING_LEN);
		data += ETH_GSTRING_LEN;
	}
	strscpy(data, "epoch", ETH_GSTRING_LEN);
	data += ETH_GSTRING_LEN;
	strscpy(data, "peers_synced", ETH_GSTRING_LEN);
	data += ETH_GSTRING_LEN;
	strscpy(data, "win_recv_dropped", ETH_GSTRING_LEN);
	data += ETH_GSTRING_LEN;
	for (c = 0; c < WEFT_CNT__COUNT; c++) {
		snprintf(data, ETH_GSTRING_LEN, "hw_%s%s",
			 c >= WEFT_CNT_DROP_BASE ? "DROP_" : "", weft_counter_name(c));
		data += ETH_GSTRING_LEN;
	}
}

static void weft_net_get_stats(struct net_device *ndev, struct ethtool_stats *stats,
			       u64 *data)
{
	struct weft_net *net = netdev_priv(ndev);
	u32 i, synced = 0;

	for (i = 0; i < WEFT_NS__COUNT; i++)
		*data++ = READ_ONCE(net->st[i]);
	*data++ = net->epoch;
	for (i = 0; i <= WEFT_NODE_MAX_UNICAST; i++)
		synced += READ_ONCE(net->peers[i].synced);
	*data++ = synced;
	*data++ = readl(net->wdev->sram + WEFT_SRAM_LMT_OFF(net->win->idx) +
			offsetof(struct weft_lmt, recv_dropped));
	for (i = 0; i < WEFT_CNT__COUNT; i++)
		*data++ = weft_rd(net->wdev, WEFT_REG_CNT(i));
}

static const struct ethtool_ops weft_net_ethtool_ops = {
	.get_drvinfo = weft_net_get_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = weft_net_get_link_ksettings,
	.get_sset_count = weft_net_sset_count,
	.get_strings = weft_net_get_strings,
	.get_ethtool_stats = weft_net_get_stats,
};

/* ---- hooks from the rest of the driver ----------------------------------- */

/*
 * An adapter event (interrupt context, wdev->evlock held).  Returns true
 * if it was for the kernel window and is consumed.
 */
bool weft_net_event(struct weft_dev *wdev, const struct weft_event *ev)
{
	struct weft_net *net = wdev->net;

	lockdep_assert_held(&wdev->evlock);
	if (!net)
		return false;
	if (ev->type == WEFT_EV_LINK) {
		if (!READ_ONCE(net->up))
			return false;
		if (ev->info) {
			netif_carrier_on(net->ndev);
			net->announce_pending = true;
			napi_schedule(&net->napi);
		} else {
			netif_carrier_off(net->ndev);
		}
		return false;
	}
	if (ev->window != net->win->idx)
		return false;
	switch (ev->type) {
	case WEFT_EV_RECV_THRESHOLD:
		weft_net_count(net, WEFT_NS_rx_interrupts);
		napi_schedule(&net->napi);
		break;
	case WEFT_EV_SEND_THRESHOLD:
		napi_schedule(&net->napi);
		break;
	case WEFT_EV_WINDOW_FATAL:
		netdev_warn(net->ndev, "window %u fatal error %u: restarting\n",
			    ev->window, ev->reason);
		schedule_work(&net->restart_work);
		break;
	}
	return true;
}

/* Adapter recovery, before the adapter forgets its windows.  wdev->lock. */
/* The RoCE port's netdev of weft_ib.ko (docs/verbs-linux.md). */
struct net_device *weft_verbs_netdev(struct weft_dev *wdev)
{
	return wdev->net ? wdev->net->ndev : NULL;
}
EXPORT_SYMBOL_GPL(weft_verbs_netdev);

void weft_net_recover_begin(struct weft_dev *wdev)
{
	if (wdev->net)
		weft_net_halt(wdev->net);
}

/* ... and after it is set up again: a new epoch, fresh FIFOs.  wdev->lock. */
void weft_net_recover_end(struct weft_dev *wdev)
{
	struct weft_net *net = wdev->net;

	if (net && net->opened && !weft_net_start(net))
		weft_net_count(net, WEFT_NS_restarts);
}

static void weft_net_free_mem(struct weft_net *net)
{
	struct weft_window *win = net->win;

	if (win) {
		weft_coherent_free(net->wdev, win->send_size, win->send_va, win->send_dma);
		weft_coherent_free(net->wdev, win->recv_size, win->recv_va, win->recv_dma);
		kfree(win);
	}
	if (net->db)
		iounmap(net->db);
	kvfree(net->peers);
}

/* Probe: the interface and its window (the adapter's last).  No lock. */
int weft_net_add(struct weft_dev *wdev)
{
	struct net_device *ndev;
	struct weft_window *win;
	struct weft_net *net;
	unsigned long flags;
	char name[IFNAMSIZ];
	u8 mac[ETH_ALEN];
	u32 w;
	int ret;

	if (wdev->nr_windows < 2) {
		dev_info(&wdev->pdev->dev, "one window only: no network interface\n");
		return 0;
	}
	w = wdev->nr_windows - 1;
	snprintf(name, sizeof(name), WEFT_DRV_NAME "%d", wdev->id);
	ndev = alloc_netdev(sizeof(*net), name, NET_NAME_PREDICTABLE, ether_setup);
	if (!ndev)
		return -ENOMEM;
	SET_NETDEV_DEV(ndev, &wdev->pdev->dev);
	net = netdev_priv(ndev);
	net->wdev = wdev;
	net->ndev = ndev;
	spin_lock_init(&net->tx_lock);
	INIT_WORK(&net->restart_work, weft_net_restart_work);
	netif_napi_add(ndev, &net->napi, weft_net_poll);

	ret = -ENOMEM;
	net->peers = kvcalloc(WEFT_NODE_MAX_UNICAST + 1, sizeof(*net->peers), GFP_KERNEL);
	win = kzalloc(sizeof(*win), GFP_KERNEL);
	net->win = win;
	if (!net->peers || !win)
		goto err;
	win->wdev = wdev;
	win->idx = w;
	win->job_id = WEFT_NET_KEY;
	win->state = WEFT_WS_OPEN;
	win->send_size = (size_t)WEFT_FRAME_SIZE << WEFT_NET_SEND_LOG2;
	win->recv_size = (size_t)WEFT_FRAME_SIZE << WEFT_NET_RECV_LOG2;
	win->send_va = weft_coherent_alloc(wdev, win->send_size, &win->send_dma);
	win->recv_va = weft_coherent_alloc(wdev, win->recv_size, &win->recv_dma);
	net->db = ioremap(wdev->db_phys + (resource_size_t)w * WEFT_DB_PAGE_SIZE,
			  WEFT_DB_PAGE_SIZE);
	if (!win->send_va || !win->recv_va || !net->db)
		goto err;

	weft_net_mac(mac, wdev->id, wdev->node_id);
	eth_hw_addr_set(ndev, mac);
	ndev->netdev_ops = &weft_net_ops;
	ndev->ethtool_ops = &weft_net_ethtool_ops;
	ndev->min_mtu = ETH_MIN_MTU;
	ndev->max_mtu = IP_MAX_MTU;
	ndev->mtu = clamp_t(u32, weft_net_mtu, ETH_MIN_MTU, IP_MAX_MTU);
	ndev->features |= NETIF_F_SG | NETIF_F_HIGHDMA | NETIF_F_HW_CSUM | NETIF_F_RXCSUM;
	ndev->hw_features |= NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_RXCSUM;
	netif_carrier_off(ndev);

	/* Reserved before /dev/weftN exists: user windows never get it. */
	spin_lock_irqsave(&wdev->evlock, flags);
	wdev->win[w] = win;
	wdev->net = net;
	spin_unlock_irqrestore(&wdev->evlock, flags);
	ret = register_netdev(ndev);
	if (ret) {
		spin_lock_irqsave(&wdev->evlock, flags);
		wdev->win[w] = NULL;
		wdev->net = NULL;
		spin_unlock_irqrestore(&wdev->evlock, flags);
		goto err;
	}
	netdev_info(ndev, "window %u, MAC %pM, MTU %u\n", w, ndev->dev_addr, ndev->mtu);
	return 0;

err:
	weft_net_free_mem(net);
	netif_napi_del(&net->napi);
	free_netdev(ndev);
	return ret;
}

/* Remove: the interface goes (closing the window), then its memory. */
void weft_net_del(struct weft_dev *wdev)
{
	struct weft_net *net = wdev->net;
	unsigned long flags;

	if (!net)
		return;
	unregister_netdev(net->ndev);
	cancel_work_sync(&net->restart_work);
	spin_lock_irqsave(&wdev->evlock, flags);
	wdev->win[net->win->idx] = NULL;
	wdev->net = NULL;
	spin_unlock_irqrestore(&wdev->evlock, flags);
	netif_napi_del(&net->napi);
	weft_net_free_mem(net);
	free_netdev(net->ndev);
}
