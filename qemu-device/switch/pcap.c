/* SPDX-License-Identifier: MIT */
/*
 * weft-switch: the pcap writer (nanosecond pcap, link type
 * WEFT_PCAP_LINKTYPE, one record per packet without the length prefix).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sw.h"
#include "wire_io.h"

#define PCAP_MAGIC_NS   0xa1b23c4du

static void pcap_write_hdr(FILE *fp)
{
	unsigned char h[24];

	put_le32(h, PCAP_MAGIC_NS);
	h[4] = 2; h[5] = 0;     /* version 2.4 */
	h[6] = 4; h[7] = 0;
	put_le32(h + 8, 0);     /* thiszone */
	put_le32(h + 12, 0);    /* sigfigs */
	put_le32(h + 16, WEFT_WIRE_MAX_FRAME);
	put_le32(h + 20, WEFT_PCAP_LINKTYPE);
	fwrite(h, 1, sizeof(h), fp);
}

void pcap_record(struct sw *s, const void *frame, size_t len)
{
	unsigned char h[16];
	struct timespec ts;
	size_t incl = len < WEFT_WIRE_MAX_FRAME ? len : WEFT_WIRE_MAX_FRAME;

	if (!s->pcap)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	put_le32(h, (uint32_t)ts.tv_sec);
	put_le32(h + 4, (uint32_t)ts.tv_nsec);
	put_le32(h + 8, (uint32_t)incl);
	put_le32(h + 12, (uint32_t)len);
	if (fwrite(h, 1, sizeof(h), s->pcap) != sizeof(h) ||
	    fwrite(frame, 1, incl, s->pcap) != incl) {
		logmsg("capture to %s failed (%s); capture stopped", s->pcap_path,
		       strerror(errno));
		pcap_stop(s);
		return;
	}
	s->pcap_frames++;
}

void pcap_start(struct sw *s, FILE *fp, const char *path)
{
	pcap_write_hdr(fp);
	s->pcap = fp;
	s->pcap_path = strdup(path);
	s->pcap_frames = 0;
}

void pcap_stop(struct sw *s)
{
	if (!s->pcap)
		return;
	fclose(s->pcap);
	s->pcap = NULL;
	free(s->pcap_path);
	s->pcap_path = NULL;
}

void pcap_tap(void *opaque, uint16_t src, const void *frame, size_t len, bool replayed)
{
	(void)src;
	/* Submitted frames were captured when read; record replays here. */
	if (replayed)
		pcap_record(opaque, frame, len);
}
