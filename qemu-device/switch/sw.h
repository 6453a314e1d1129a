/* SPDX-License-Identifier: MIT */
/*
 * weft-switch internals shared by its modules (docs/switch.md):
 *   weft-switch.c  event loop, sockets, clients, HELLO
 *   listen.c       TCP listeners, TCP client options, peer names
 *   auth.c         node tokens (who may claim a node id)
 *   faults.c       the fault vocabulary of the command line and `set`
 *   pcap.c         the pcap writer
 *   ctl.c          the control socket: one command table, one JSON writer
 *   ctl_client.c   `weft-switch ctl`
 *   text.c         growable text buffer and the JSON writer
 */
#ifndef WEFT_SWITCH_SW_H
#define WEFT_SWITCH_SW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>

#include "fabric.h"
#include "weft/wire.h"

#define PROG            "weft-switch"
#define CTL_MAX_REQ     4096u
#define MAX_CLIENTS     1024u

void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t mono_ns(void);
bool parse_u64(const char *t, uint64_t max, uint64_t *out);

/* ---- text.c: growable text buffer and JSON writer -------------------------- */

struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* JSON writer: commas and nesting are tracked, strings escaped.  Keys are
 * given with jw_key() before a value inside an object. */
struct jw {
	struct sbuf *b;
	int depth;
	bool after_key;
	bool need_comma[16];
};

void jw_init(struct jw *w, struct sbuf *b);
void jw_obj(struct jw *w);
void jw_end_obj(struct jw *w);
void jw_arr(struct jw *w);
void jw_end_arr(struct jw *w);
void jw_key(struct jw *w, const char *k);
void jw_u64(struct jw *w, uint64_t v);
void jw_bool(struct jw *w, bool v);
void jw_str(struct jw *w, const char *s);  /* NULL prints null */
void jw_null(struct jw *w);

/* ---- auth.c: node tokens ------------------------------------------------------ */

struct auth;

/* Load "NODE HEX64" lines from path; the file must be a regular file of
 * this user with no group or other permissions.  NULL and a message in
 * err on error. */
struct auth *auth_load(const char *path, char *err, size_t errlen);
void auth_free(struct auth *a);
/* True if token (WEFT_WIRE_TOKEN_SIZE bytes) is node's token; constant
 * time in the token bytes. */
bool auth_check(const struct auth *a, uint16_t node, const unsigned char *token);
size_t auth_nodes(const struct auth *a);

/* ---- faults.c: one vocabulary for the command line and `set` ------------- */

struct fault_settings {
	struct weft_fabric_faults ft;
	uint64_t hold;          /* UINT64_MAX: unchanged */
};

/* One fault key: name as in `set NAME=V` and `--NAME V` ('-' and '_' are
 * the same).  Returns 0, or -1 with a message in err. */
int fault_set(struct fault_settings *fs, const char *name, const char *val,
	      char *err, size_t errlen);
/* Apply words of `set`: KEY=VALUE, --KEY=VALUE or --KEY VALUE. */
int fault_words(struct fault_settings *fs, char **tok, int n, char *err, size_t errlen);
/* Number of fault keys, and the i-th key's name with '-' (for options). */
size_t fault_nkeys(void);
const char *fault_key_option(size_t i);
extern const char fault_help[];

/* ---- the switch ---------------------------------------------------------------- */

enum ev_kind { EV_LISTEN, EV_TCP_LISTEN, EV_CTL_LISTEN, EV_TIMER, EV_SIGNAL, EV_CLIENT, EV_CTL, EV_SHM };

struct evsrc {
	enum ev_kind kind;
};

#define SW_STATS_LIST(X) \
	X(connections) X(disconnects) X(bad_hello) X(hello_rejected) X(auth_failed) \
	X(unregistered) X(oversize) X(too_many_clients) X(bad_shm) X(tcp_connections) \
	X(hello_timeout)

struct swstats {
#define SW_STAT_FIELD(n) uint64_t n;
	SW_STATS_LIST(SW_STAT_FIELD)
#undef SW_STAT_FIELD
};

struct client;
struct node;
struct ctlconn;

/* A TCP listener (--listen): adapters on other hosts. */
#define SW_MAX_TCP      4
#define SW_ADDR_LEN     80

struct tcp_listener {
	struct evsrc ev;        /* EV_TCP_LISTEN */
	int fd;
	const char *spec;       /* as given */
	char name[SW_ADDR_LEN]; /* the bound address */
};

struct sw {
	struct weft_fabric *fab;
	uint64_t seed;
	int ep;
	struct evsrc lsn_ev, ctl_ev, tmr_ev, sig_ev;
	int lsn_fd, ctl_fd, tmr_fd, sig_fd;
	const char *sock_path, *ctl_path;
	struct tcp_listener tcp[SW_MAX_TCP];
	size_t ntcp;
	char *run_dir;          /* realpath of --run-dir: ctl captures go here */
	struct auth *auth;      /* NULL: --insecure */
	uint64_t timer_due;
	uint64_t expiry_ns;
	struct client *clients;
	size_t nclients;
	struct ctlconn *ctls;
	size_t nctls;
	struct node **nodes;
	size_t nnodes;          /* node records: attached or with output left */
	FILE *pcap;
	char *pcap_path;
	uint64_t pcap_frames;
	struct swstats st;
	bool quit;
	bool verbose;
	bool shm;               /* grant shared memory to adapters asking for it */
	struct epoll_event *batch;      /* events being handled (run) */
	int batch_n, batch_i;
};

/* ---- listen.c: TCP listeners and peer names ------------------------------------ */

/* Listen on spec ("HOST:PORT", "[V6]:PORT"; PORT 0: any free port) and
 * put the bound address in name.  The fd, or -1 and a message in err. */
int listen_tcp(const char *spec, char *name, size_t namelen, char *err, size_t errlen);
/* An accepted TCP connection: no Nagle delay, keepalive, user timeout. */
void tcp_client_setup(int fd);
/* How the log names the peer of fd: "pid P uid U" (SO_PEERCRED) or
 * "tcp ADDRESS:PORT". */
void peer_text(int fd, bool tcp, char *out, size_t outlen);

/* ---- pcap.c ---------------------------------------------------------------------- */

/* Start a capture into an open file (taken over). */
void pcap_start(struct sw *s, FILE *fp, const char *path);
void pcap_record(struct sw *s, const void *frame, size_t len);
void pcap_stop(struct sw *s);
void pcap_tap(void *opaque, uint16_t src, const void *frame, size_t len, bool replayed);

/* ---- ctl.c ------------------------------------------------------------------------- */

void accept_ctl(struct sw *s);
void ctl_input(struct sw *s, struct ctlconn *k);
void ctl_free_all(struct sw *s);
/* Open a capture file given to `capture start`: only inside the run
 * folder.  NULL and a message in err if refused. */
FILE *capture_open(const struct sw *s, const char *path, char *err, size_t errlen);
/* Print the list of commands (from the command table). */
void ctl_print_help(FILE *fp);

/* ---- ctl_client.c -------------------------------------------------------------------- */

int ctl_main(int argc, char **argv);

#endif
