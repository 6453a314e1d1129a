/* SPDX-License-Identifier: MIT */
/* Shared set-up of the libweft tools: options, backends, rendezvous. */
#ifndef WEFT_TOOLS_COMMON_H
#define WEFT_TOOLS_COMMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "libweft.h"

/* rCxts a tool may hold per window: weft-bw's deepest pipeline.  A
 * struct tool_peer of this many (824 bytes) fits one rendezvous blob
 * (WEFT_RDV_MAX). */
#define TOOL_MAX_RCXT   64u
/* getopt_long codes of a tool's own options start here (the common
 * options of tool_main use 'h' and 0x100 on). */
#define TOOL_OPT_BASE   0x200

/* What each side tells the other at rendezvous. */
struct tool_peer {
	uint32_t magic;
	uint16_t node, window;
	uint32_t nr_rcxt;
	uint32_t rcxt[TOOL_MAX_RCXT];
	uint16_t key[TOOL_MAX_RCXT];
	uint64_t buf_pvo;
	uint64_t buf_len;
	uint32_t mode;                  /* tool specific (client -> server) */
	uint32_t count;
	/* --stripe: the second adapter's window and rCxts (nr_rcxt2 = 0
	 * without it); buf_pvo is valid through it too */
	uint16_t node2, window2;
	uint32_t nr_rcxt2;
	uint32_t rcxt2[TOOL_MAX_RCXT];
	uint16_t key2[TOOL_MAX_RCXT];
	/* weft-cnt: the buffer's virtual address, exposed for counter RDMA */
	uint64_t buf_va;
};

struct tool_opts {
	bool json, server, client, sim;
	const char *dev;
	const char *stripe_dev;         /* --stripe: a second adapter of this node */
	uint32_t job;
	int peer_node;
	int peer_window;
	int timeout_ms;
	uint32_t loss_ppm, routes;
	uint64_t min_size, max_size;
	unsigned int iters, depth;
	const char *mode;               /* tool specific */
	uint32_t peer_mode, count;      /* sent to the server at rendezvous */
	uint64_t rel_timeout_ns;
};

struct tool_ctx {
	struct tool_opts o;
	bool server;
	struct weft_dev *dev;
	struct weft_win *win;
	uint8_t *buf;
	size_t buf_len;
	uint64_t buf_pvo;
	uint32_t buf_handle;
	/* --stripe: the second adapter and its window */
	struct weft_dev *dev2;
	struct weft_win *win2;
	struct tool_peer mine, peer;
	FILE *out;                      /* figures go here (client) */
};

struct tool_desc {
	const char *name;
	const char *summary;
	const char *extra_help;         /* tool-specific options */
	uint32_t tag;                   /* rendezvous tag */
	bool two_node;
	bool stripe;                    /* takes --stripe DEV */
	unsigned int nr_rcxt;
	/* rCxts each side allocates, from the options (NULL: nr_rcxt) */
	unsigned int (*rcxt_count)(const struct tool_opts *o);
	uint64_t def_min_size, def_max_size;
	unsigned int def_iters, def_depth;
	const char *def_mode;
	/* buffer bytes each side registers, from the options */
	size_t (*buf_size)(const struct tool_opts *o);
	/* tool-specific options: a getopt_long table ending in a zero entry,
	 * codes from TOOL_OPT_BASE, and what to do with one given (val is its
	 * argument or NULL): 0, or -1 after a message */
	const struct option *options;
	int (*option)(struct tool_opts *o, const struct option *opt, const char *val);
	/* server: runs after set-up (window, buffer, rCxts) and before the
	 * rendezvous.  The reply hands the client the buffer's PVO and the
	 * client may read the buffer at once, so whatever it expects to find
	 * there must be in place before the reply goes out. */
	int (*server_prepare)(struct tool_ctx *c);
	int (*server)(struct tool_ctx *c);
	int (*client)(struct tool_ctx *c);
	int (*single)(struct tool_ctx *c);  /* one-node tools */
};

int tool_main(const struct tool_desc *d, int argc, char **argv);
/* For tools with their own option parser: the defaults, then the run. */
void tool_opts_init(const struct tool_desc *d, struct tool_opts *o);
int tool_run(const struct tool_desc *d, const struct tool_opts *o);

/* Wait for and acknowledge the client's BYE, answering repeated hellos
 * and echoing nothing else. */
int tool_serve_until_bye(struct tool_ctx *c, const struct tool_desc *d);
/* Say BYE to the peer; a message if it does not acknowledge. */
void tool_bye(struct tool_ctx *c, const struct tool_desc *d);
/* A --mode value: one of a, b or "both".  0, or -1 with a message. */
int tool_mode_option(struct tool_opts *o, const char *tool, const char *v, const char *a,
		     const char *b);
/* Poll the window; if nothing is there, wait up to wait_ms.  >0 with an
 * entry in *e, 0 if none, or a negative errno. */
int tool_poll_wait(struct tool_ctx *c, struct weft_entry *e, int wait_ms);
/* After the BYE: acknowledge repeated BYEs for a while. */
int tool_linger(struct tool_ctx *c, const struct tool_desc *d);

uint64_t tool_now_ns(void);
/* The tools' data pattern: byte i of the pattern with this seed. */
uint8_t tool_pat(uint64_t i, uint32_t seed);
/* p[0..n) = the pattern; tool_pat_diff: index of the first byte of p that
 * differs from it, or -1. */
void tool_pat_fill(uint8_t *p, size_t n, uint32_t seed);
long long tool_pat_diff(const uint8_t *p, size_t n, uint32_t seed);
void tool_err(const char *tool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* strerror, with the adapter's own meanings: -ESTALE recovered, -EPIPE fatal. */
const char *tool_strerror(int r);
int tool_parse_size(const char *s, uint64_t *out);
/* The value of option opt, 0..hi: 0, or -1 with a message. */
int tool_int_option(const char *tool, const struct option *opt, const char *v, long hi,
		    long *out);
/* getopt_long over argv[1..] with opts (ending in a zero entry): fn(arg,
 * option, its value or NULL) for each one given, in order.  Returns 0, what
 * fn returned when not 0, or 2 after a message for an unknown option, a
 * missing value or an argument that is not an option. */
int tool_getopt(const char *tool, int argc, char **argv, const struct option *opts,
		int (*fn)(void *arg, const struct option *opt, const char *val), void *arg);
/* Run a reliable op to completion and take its WEFT_ENT_ROP entry: 0, or
 * a negative errno. */
int tool_rop_run(struct tool_ctx *c, struct weft_rop *rop, const struct tool_desc *d);

#endif
