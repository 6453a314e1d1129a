/* SPDX-License-Identifier: MIT */
/*
 * IP over Weft: the encapsulation weft.ko's network interface (weftN)
 * puts in the payload of every FIFO packet it sends.  docs/net.md
 * describes the protocol; this header is its only definition.
 *
 * A FIFO payload (at most WEFT_MAX_PAYLOAD bytes) is a struct
 * weft_net_hdr followed by
 *   FRAME     a whole Ethernet frame of total_len bytes;
 *   FRAG      piece frag_index of frag_count of an Ethernet frame of
 *             total_len bytes, cut at multiples of WEFT_NET_CHUNK;
 *   ANNOUNCE  the 8-byte time (ns, the sender's CLOCK_REALTIME) at which
 *             the sender's epoch began, for the epoch handshake.
 * All fields are little-endian.  The packets go to window
 * nr_windows - 1 of every adapter, with key WEFT_NET_KEY.
 */
#ifndef WEFT_NET_H
#define WEFT_NET_H

#include "weft/types.h"
#include "weft/hw.h"

#define WEFT_NET_VERSION        1u
#define WEFT_NET_KEY            0x4e455449u /* window key = job id "ITEN" */

enum weft_net_type {
	WEFT_NET_FRAME = 1,     /* a whole Ethernet frame */
	WEFT_NET_FRAG = 2,      /* one piece of a driver-fragmented frame */
	WEFT_NET_ANNOUNCE = 3,  /* epoch handshake, 8-byte payload */
};

/* weft_net_hdr.flags */
#define WEFT_NET_F_REPLY        0x01u /* ANNOUNCE: answer with a unicast ANNOUNCE */
#define WEFT_NET_F_CSUM         0x02u /* FRAME/FRAG: the checksum at csum_start +
				       * csum_offset is not filled in (partial) */

struct weft_net_hdr {
	uint8_t  version;       /* WEFT_NET_VERSION */
	uint8_t  type;          /* enum weft_net_type */
	uint8_t  flags;         /* WEFT_NET_F_* */
	uint8_t  reserved;      /* 0 */
	uint16_t frag_index;    /* FRAG: piece number, 0..frag_count-1; else 0 */
	uint16_t frag_count;    /* FRAG: pieces, 2..WEFT_NET_MAX_FRAGS; else 1 */
	uint32_t src_epoch;     /* sender interface's epoch (never 0) */
	uint32_t dst_epoch;     /* receiver's epoch as the sender knows it; 0 for broadcast */
	uint32_t seq;           /* sender's frame number in src_epoch, same for all pieces */
	uint32_t total_len;     /* Ethernet frame bytes (FRAME, FRAG); 8 for ANNOUNCE */
	uint16_t csum_start;    /* F_CSUM: where checksumming starts, from the frame start */
	uint16_t csum_offset;   /* F_CSUM: where the checksum goes, from csum_start */
};
WEFT_STATIC_ASSERT(sizeof(struct weft_net_hdr) == 28, "net header");

#define WEFT_NET_HDR_SIZE       28u
/* Ethernet bytes per FIFO packet: a whole frame, or one FRAG piece. */
#define WEFT_NET_CHUNK          (WEFT_MAX_PAYLOAD - WEFT_NET_HDR_SIZE) /* 1892 */
#define WEFT_NET_MAX_FRAGS      64u
#define WEFT_NET_ANNOUNCE_LEN   8u    /* ANNOUNCE payload: uint64_t born */
/* MAC address: 02:57:46:<adapter index>:<node id, big-endian> */
#define WEFT_NET_MAC0           0x02u /* locally administered, unicast */
#define WEFT_NET_MAC1           0x57u /* 'W' */
#define WEFT_NET_MAC2           0x46u /* 'F' */

#endif /* WEFT_NET_H */
