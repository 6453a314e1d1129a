/* SPDX-License-Identifier: MIT */
/*
 * weft-switch: the control socket.  One request line, one reply ("OK\n"
 * and the output, or "ERR message\n"), then the connection closes.  The
 * commands are the table cmds[] (name, handler, usage, help); every JSON
 * reply goes through the writer in text.c.  See docs/switch.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "sw.h"

#define MAX_CTL_CONNS   64u
#define MAX_TOK         32

struct ctlconn {
	struct evsrc ev;
	int fd;
	size_t len;
	char req[CTL_MAX_REQ + 1];
	struct ctlconn *next;
};

/* A command's arguments (after its name) and where its output goes. */
struct req {
	struct sw *s;
	char **arg;
	int n;
	bool json;
	struct sbuf *b;
	struct jw w;
	char err[512];
};

typedef int (*cmd_fn)(struct req *r);

#define FAIL(...) do { snprintf(r->err, sizeof(r->err), __VA_ARGS__); return -1; } while (0)

static bool parse_node(const char *t, uint16_t *node)
{
	uint64_t v;

	if (!parse_u64(t, WEFT_NODE_MAX_UNICAST, &v))
		return false;
	*node = (uint16_t)v;
	return true;
}

/* ---- output shared by several commands ------------------------------------ */

static void faults_out(struct req *r)
{
	struct weft_fabric_faults ft;

	weft_fabric_get_faults(r->s->fab, &ft);
	if (r->json) {
		jw_obj(&r->w);
		jw_key(&r->w, "seed"); jw_u64(&r->w, r->s->seed);
		jw_key(&r->w, "drop_ppm"); jw_u64(&r->w, ft.drop_ppm);
		jw_key(&r->w, "routes"); jw_u64(&r->w, ft.routes);
		jw_key(&r->w, "delay_ns"); jw_u64(&r->w, ft.delay_ns);
		jw_key(&r->w, "jitter_ns"); jw_u64(&r->w, ft.jitter_ns);
		jw_key(&r->w, "skew_ns"); jw_u64(&r->w, ft.route_skew_ns);
		jw_end_obj(&r->w);
	} else {
		sb_printf(r->b, "seed=%" PRIu64 " drop_ppm=%u routes=%u delay_ns=%" PRIu64
			  " jitter_ns=%" PRIu64 " skew_ns=%" PRIu64 "\n", r->s->seed, ft.drop_ppm,
			  ft.routes, ft.delay_ns, ft.jitter_ns, ft.route_skew_ns);
	}
}

static void stats_out(struct req *r, const struct weft_fabric_port_stats *st)
{
	unsigned int d;

	if (!r->json) {
		sb_printf(r->b, " rx_frames=%" PRIu64 " rx_bytes=%" PRIu64 " tx_frames=%" PRIu64
			  " tx_bytes=%" PRIu64 " replayed=%" PRIu64, st->rx_frames, st->rx_bytes,
			  st->tx_frames, st->tx_bytes, st->replayed);
		for (d = 0; d < WEFT_FABRIC_DROP__COUNT; d++)
			sb_printf(r->b, " drop_%s=%" PRIu64, weft_fabric_drop_name(d), st->drops[d]);
		return;
	}
	jw_key(&r->w, "rx_frames"); jw_u64(&r->w, st->rx_frames);
	jw_key(&r->w, "rx_bytes"); jw_u64(&r->w, st->rx_bytes);
	jw_key(&r->w, "tx_frames"); jw_u64(&r->w, st->tx_frames);
	jw_key(&r->w, "tx_bytes"); jw_u64(&r->w, st->tx_bytes);
	jw_key(&r->w, "replayed"); jw_u64(&r->w, st->replayed);
	jw_key(&r->w, "drops");
	jw_obj(&r->w);
	for (d = 0; d < WEFT_FABRIC_DROP__COUNT; d++) {
		jw_key(&r->w, weft_fabric_drop_name(d));
		jw_u64(&r->w, st->drops[d]);
	}
	jw_end_obj(&r->w);
}

/* The node ids with ports, in *ids (caller frees); -1 when out of memory. */
static long port_ids(struct req *r, uint16_t **ids)
{
	size_t n = weft_fabric_ports(r->s->fab, NULL, 0);

	*ids = calloc(n ? n : 1, sizeof(**ids));
	if (!*ids)
		return -1;
	weft_fabric_ports(r->s->fab, *ids, n);
	return (long)n;
}

/* "port 2 attached up held=0" or its JSON fields. */
static void port_head(struct req *r, const char *word, uint16_t id)
{
	bool att = weft_fabric_port_attached(r->s->fab, id);
	bool up = weft_fabric_port_is_up(r->s->fab, id);
	size_t held = weft_fabric_port_held(r->s->fab, id);

	if (!r->json) {
		sb_printf(r->b, "%s %u %s %s held=%zu", word, id, att ? "attached" : "detached",
			  up ? "up" : "down", held);
		return;
	}
	jw_key(&r->w, "node"); jw_u64(&r->w, id);
	jw_key(&r->w, "attached"); jw_bool(&r->w, att);
	jw_key(&r->w, "up"); jw_bool(&r->w, up);
	jw_key(&r->w, "held"); jw_u64(&r->w, held);
}

static void capture_out(struct req *r)
{
	if (r->json) {
		jw_obj(&r->w);
		jw_key(&r->w, "capture"); jw_str(&r->w, r->s->pcap ? r->s->pcap_path : NULL);
		jw_key(&r->w, "frames"); jw_u64(&r->w, r->s->pcap_frames);
		jw_end_obj(&r->w);
	} else if (r->s->pcap) {
		sb_printf(r->b, "capturing to %s, %" PRIu64 " frames\n", r->s->pcap_path,
			  r->s->pcap_frames);
	} else {
		sb_printf(r->b, "not capturing\n");
	}
}

/* ---- commands ------------------------------------------------------------------ */

static int cmd_help(struct req *r);

static int cmd_faults(struct req *r)
{
	if (r->n)
		FAIL("faults takes no arguments");
	faults_out(r);
	return 0;
}

static int cmd_set(struct req *r)
{
	struct fault_settings fs = { .hold = UINT64_MAX };
	char err[400];

	if (!r->n)
		FAIL("set: expected KEY=VALUE... (see 'help')");
	weft_fabric_get_faults(r->s->fab, &fs.ft);
	if (fault_words(&fs, r->arg, r->n, err, sizeof(err)))
		FAIL("set: %s", err);
	weft_fabric_set_faults(r->s->fab, &fs.ft);
	if (fs.hold != UINT64_MAX)
		weft_fabric_set_hold_limit(r->s->fab, (size_t)fs.hold);
	faults_out(r);
	return 0;
}

static int cmd_clear(struct req *r)
{
	struct weft_fabric_faults ft = { .routes = 1 };

	if (r->n)
		FAIL("clear takes no arguments");
	weft_fabric_set_faults(r->s->fab, &ft);
	faults_out(r);
	return 0;
}

static int cmd_port(struct req *r)
{
	uint16_t node;
	bool up;

	if (r->n != 2 || (strcmp(r->arg[1], "up") && strcmp(r->arg[1], "down")))
		FAIL("port: expected 'port NODE up|down'");
	if (!parse_node(r->arg[0], &node))
		FAIL("port: node '%s' is not a unicast node id (0..%u)", r->arg[0],
		     WEFT_NODE_MAX_UNICAST);
	up = !strcmp(r->arg[1], "up");
	if (weft_fabric_set_port_up(r->s->fab, node, up))
		FAIL("port: cannot set node %u %s", node, r->arg[1]);
	logmsg("port %u %s", node, up ? "up" : "down");
	if (r->json) {
		jw_obj(&r->w);
		jw_key(&r->w, "node"); jw_u64(&r->w, node);
		jw_key(&r->w, "up"); jw_bool(&r->w, up);
		jw_end_obj(&r->w);
	} else {
		sb_printf(r->b, "port %u %s\n", node, r->arg[1]);
	}
	return 0;
}

static int cmd_nodes(struct req *r)
{
	uint16_t *ids;
	long np = port_ids(r, &ids), k;

	if (r->n)
		FAIL("nodes takes no arguments");
	if (np < 0)
		FAIL("out of memory");
	if (r->json)
		jw_arr(&r->w);
	for (k = 0; k < np; k++) {
		if (r->json) {
			jw_obj(&r->w);
			port_head(r, "node", ids[k]);
			jw_end_obj(&r->w);
		} else {
			port_head(r, "node", ids[k]);
			sb_printf(r->b, "\n");
		}
	}
	if (r->json)
		jw_end_arr(&r->w);
	free(ids);
	return 0;
}

static int mcast_list(struct req *r)
{
	unsigned int lo = 0, hi = WEFT_NR_MCAST_GROUPS, k;
	uint64_t g;

	if (r->n > 2)
		FAIL("mcast list: expected 'mcast list [GROUP]'");
	if (r->n == 2) {
		if (!parse_u64(r->arg[1], WEFT_NR_MCAST_GROUPS - 1, &g))
			FAIL("mcast: group '%s' out of range 0..%u", r->arg[1],
			     WEFT_NR_MCAST_GROUPS - 1);
		lo = (unsigned int)g;
		hi = lo + 1;
	}
	if (r->json)
		jw_obj(&r->w);
	for (k = lo; k < hi; k++) {
		uint16_t mem[256];
		size_t nm = weft_fabric_mcast_members(r->s->fab, k, mem, 256), j;
		char key[16];

		if (!nm && r->n != 2)
			continue;
		if (r->json) {
			snprintf(key, sizeof(key), "%u", k);
			jw_key(&r->w, key);
			jw_arr(&r->w);
		} else {
			sb_printf(r->b, "group %u:", k);
		}
		for (j = 0; j < nm && j < 256; j++) {
			if (r->json)
				jw_u64(&r->w, mem[j]);
			else
				sb_printf(r->b, " %u", mem[j]);
		}
		if (r->json)
			jw_end_arr(&r->w);
		else
			sb_printf(r->b, "\n");
	}
	if (r->json)
		jw_end_obj(&r->w);
	return 0;
}

static int cmd_mcast(struct req *r)
{
	uint64_t g;
	uint16_t node;
	int rc;

	if (r->n >= 1 && !strcmp(r->arg[0], "list"))
		return mcast_list(r);
	if (r->n != 3 || (strcmp(r->arg[0], "join") && strcmp(r->arg[0], "leave")))
		FAIL("mcast: expected 'mcast join|leave GROUP NODE' or 'mcast list [GROUP]'");
	if (!parse_u64(r->arg[1], WEFT_NR_MCAST_GROUPS - 1, &g))
		FAIL("mcast: group '%s' out of range 0..%u", r->arg[1], WEFT_NR_MCAST_GROUPS - 1);
	if (!parse_node(r->arg[2], &node))
		FAIL("mcast: node '%s' is not a unicast node id (0..%u)", r->arg[2],
		     WEFT_NODE_MAX_UNICAST);
	if (!strcmp(r->arg[0], "join"))
		rc = weft_fabric_mcast_join(r->s->fab, (unsigned int)g, node);
	else
		rc = weft_fabric_mcast_leave(r->s->fab, (unsigned int)g, node);
	if (rc == -EEXIST)
		FAIL("mcast: node %u is already in group %" PRIu64, node, g);
	if (rc == -ENOENT)
		FAIL("mcast: node %u is not in group %" PRIu64, node, g);
	if (rc)
		FAIL("mcast: %s", strerror(-rc));
	if (r->json) {
		jw_obj(&r->w);
		jw_key(&r->w, "op"); jw_str(&r->w, r->arg[0]);
		jw_key(&r->w, "group"); jw_u64(&r->w, g);
		jw_key(&r->w, "address"); jw_u64(&r->w, WEFT_NODE_MCAST_BASE + g);
		jw_key(&r->w, "node"); jw_u64(&r->w, node);
		jw_end_obj(&r->w);
	} else {
		sb_printf(r->b, "mcast %s group %" PRIu64 " (address 0x%x) node %u\n", r->arg[0],
			  g, (unsigned int)(WEFT_NODE_MCAST_BASE + g), node);
	}
	return 0;
}

/* ---- drop rules ------------------------------------------------------------ */

static const struct {
	const char *name;
	uint8_t type;
} pkt_types[] = {
#define PKT_RULE(name, val, rule) { rule, WEFT_PKT_##name },
	WEFT_PKT_LIST(PKT_RULE)
#undef PKT_RULE
};

#define NTYPES (sizeof(pkt_types) / sizeof(pkt_types[0]))

static const char *pkt_type_name(uint8_t t)
{
	size_t i;

	for (i = 0; i < NTYPES; i++)
		if (pkt_types[i].type == t)
			return pkt_types[i].name;
	return t ? "other" : "any";
}

/* One field of a rule: "any" or a number up to max, or a type name. */
static bool rule_field(const char *v, uint64_t max, uint64_t *out, bool type)
{
	size_t i;

	if (!strcmp(v, "any")) {
		*out = type ? 0 : WEFT_FABRIC_ANY;
		return true;
	}
	for (i = 0; type && i < NTYPES; i++)
		if (!strcmp(v, pkt_types[i].name)) {
			*out = pkt_types[i].type;
			return true;
		}
	return parse_u64(v, max, out) && (!type || (*out > 0 && *out < WEFT_PKT_HELLO));
}

static void rule_out(struct req *r, size_t i, const struct weft_fabric_rule *x)
{
	static const char *const names[] = { "src", "src_window", "dst" };
	const uint16_t v[] = { x->src_node, x->src_window, x->dst_node };
	size_t k;

	if (r->json) {
		jw_obj(&r->w);
		jw_key(&r->w, "rule"); jw_u64(&r->w, i);
		for (k = 0; k < 3; k++) {
			jw_key(&r->w, names[k]);
			if (v[k] == WEFT_FABRIC_ANY)
				jw_null(&r->w);
			else
				jw_u64(&r->w, v[k]);
		}
		jw_key(&r->w, "type"); jw_str(&r->w, pkt_type_name(x->type));
		jw_key(&r->w, "left"); jw_u64(&r->w, x->left);
		jw_key(&r->w, "dropped"); jw_u64(&r->w, x->dropped);
		jw_end_obj(&r->w);
		return;
	}
	sb_printf(r->b, "rule %zu:", i);
	for (k = 0; k < 3; k++) {
		if (v[k] == WEFT_FABRIC_ANY)
			sb_printf(r->b, " %s=any", names[k]);
		else
			sb_printf(r->b, " %s=%u", names[k], v[k]);
	}
	sb_printf(r->b, " type=%s left=%" PRIu64 " dropped=%" PRIu64 "\n",
		  pkt_type_name(x->type), x->left, x->dropped);
}

static int drop_add(struct req *r)
{
	struct weft_fabric_rule x = { .src_node = WEFT_FABRIC_ANY, .src_window = WEFT_FABRIC_ANY,
				      .dst_node = WEFT_FABRIC_ANY, .left = 1 };
	uint64_t v;
	int i, rc;

	for (i = 1; i < r->n; i++) {
		const char *t = r->arg[i], *eq = strchr(t, '=');
		char key[16];

		if (!eq || eq - t >= (long)sizeof(key))
			FAIL("drop add: expected KEY=VALUE, got '%s'", t);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - t), t);
		if (!strcmp(key, "src") || !strcmp(key, "dst")) {
			if (!rule_field(eq + 1, WEFT_NODE_MAX_UNICAST, &v, false))
				FAIL("drop add: %s needs a node id 0..%u or any, got '%s'", key,
				     WEFT_NODE_MAX_UNICAST, eq + 1);
			*(key[0] == 's' ? &x.src_node : &x.dst_node) = (uint16_t)v;
		} else if (!strcmp(key, "src-window") || !strcmp(key, "src_window")) {
			if (!rule_field(eq + 1, 0xfffe, &v, false))
				FAIL("drop add: src-window needs a window or any, got '%s'", eq + 1);
			x.src_window = (uint16_t)v;
		} else if (!strcmp(key, "type")) {
			if (!rule_field(eq + 1, 0xff, &v, true))
				FAIL("drop add: unknown packet type '%s' (fifo, rdmaw, rdmar-req, "
				     "completion, tp-rdmar-req, tp-rdmaw, fifo-data, rdmar-fifo-req, "
				     "rdmar-put-req, verbs, a number or any)", eq + 1);
			x.type = (uint8_t)v;
		} else if (!strcmp(key, "count")) {
			if (!parse_u64(eq + 1, UINT32_MAX, &v) || v == 0)
				FAIL("drop add: count needs 1..%u, got '%s'", UINT32_MAX, eq + 1);
			x.left = v;
		} else {
			FAIL("drop add: unknown key '%s' (src, src-window, dst, type, count)", key);
		}
	}
	rc = weft_fabric_add_rule(r->s->fab, &x);
	if (rc == -ENOSPC)
		FAIL("drop add: already %u rules (drop clear)", WEFT_FABRIC_MAX_RULES);
	if (rc < 0)
		FAIL("drop add: %s", strerror(-rc));
	x.dropped = 0;
	rule_out(r, (size_t)rc, &x);
	return 0;
}

static int cmd_drop(struct req *r)
{
	struct weft_fabric_rule x[WEFT_FABRIC_MAX_RULES];
	size_t n, i;

	if (r->n >= 1 && !strcmp(r->arg[0], "add"))
		return drop_add(r);
	if (r->n == 1 && !strcmp(r->arg[0], "clear")) {
		weft_fabric_clear_rules(r->s->fab);
		if (r->json) {
			jw_obj(&r->w);
			jw_key(&r->w, "rules"); jw_u64(&r->w, 0);
			jw_end_obj(&r->w);
		} else {
			sb_printf(r->b, "rules cleared\n");
		}
		return 0;
	}
	if (r->n != 1 || strcmp(r->arg[0], "list"))
		FAIL("drop: expected 'drop add [src=N] [src-window=W] [dst=N] [type=T] "
		     "[count=N]', 'drop list' or 'drop clear'");
	n = weft_fabric_rules(r->s->fab, x, WEFT_FABRIC_MAX_RULES);
	if (r->json)
		jw_arr(&r->w);
	for (i = 0; i < n; i++)
		rule_out(r, i, &x[i]);
	if (r->json)
		jw_end_arr(&r->w);
	return 0;
}

static void switch_stats_out(struct req *r)
{
	struct sw *s = r->s;

	if (r->json) {
		jw_key(&r->w, "switch");
		jw_obj(&r->w);
#define SW_JSON(n) jw_key(&r->w, #n); jw_u64(&r->w, s->st.n);
		SW_STATS_LIST(SW_JSON)
#undef SW_JSON
		jw_key(&r->w, "clients"); jw_u64(&r->w, s->nclients);
		jw_key(&r->w, "node_records"); jw_u64(&r->w, s->nnodes);
		jw_end_obj(&r->w);
		return;
	}
	sb_printf(r->b, "switch");
#define SW_TEXT(n) sb_printf(r->b, " " #n "=%" PRIu64, s->st.n);
	SW_STATS_LIST(SW_TEXT)
#undef SW_TEXT
	sb_printf(r->b, " clients=%zu node_records=%zu queued=%zu parked=%zu capture_mark=%"
		  PRIu64 "\n", s->nclients, s->nnodes, weft_fabric_queued(s->fab),
		  weft_fabric_parked(s->fab), weft_fabric_capture_mark(s->fab));
}

static int cmd_counters(struct req *r)
{
	struct sw *s = r->s;
	uint16_t *ids, only = 0;
	long n, i;

	if (r->n > 1)
		FAIL("counters: expected 'counters [NODE]'");
	if (r->n == 1 && !parse_node(r->arg[0], &only))
		FAIL("counters: node '%s' is not a unicast node id (0..%u)", r->arg[0],
		     WEFT_NODE_MAX_UNICAST);
	if (r->n == 1 && !weft_fabric_port_stats(s->fab, only))
		FAIL("node %u has no port (it never connected, or expired)", only);
	n = port_ids(r, &ids);
	if (n < 0)
		FAIL("out of memory");
	if (r->json) {
		jw_obj(&r->w);
		jw_key(&r->w, "seed"); jw_u64(&r->w, s->seed);
		jw_key(&r->w, "queued"); jw_u64(&r->w, weft_fabric_queued(s->fab));
		jw_key(&r->w, "parked"); jw_u64(&r->w, weft_fabric_parked(s->fab));
		jw_key(&r->w, "capture_mark"); jw_u64(&r->w, weft_fabric_capture_mark(s->fab));
		jw_key(&r->w, "ports");
		jw_arr(&r->w);
	}
	for (i = 0; i < n; i++) {
		if (r->n == 1 && ids[i] != only)
			continue;
		if (r->json)
			jw_obj(&r->w);
		port_head(r, "port", ids[i]);
		stats_out(r, weft_fabric_port_stats(s->fab, ids[i]));
		if (r->json)
			jw_end_obj(&r->w);
		else
			sb_printf(r->b, "\n");
	}
	free(ids);
	if (r->json) {
		jw_end_arr(&r->w);
		jw_key(&r->w, "total");
		jw_obj(&r->w);
		stats_out(r, weft_fabric_total_stats(s->fab));
		jw_end_obj(&r->w);
		switch_stats_out(r);
		jw_end_obj(&r->w);
	} else if (r->n == 0) {
		sb_printf(r->b, "total");
		stats_out(r, weft_fabric_total_stats(s->fab));
		sb_printf(r->b, "\n");
		switch_stats_out(r);
	}
	return 0;
}

static int cmd_mark(struct req *r)
{
	if (r->n)
		FAIL("mark takes no arguments");
	if (r->json) {
		jw_obj(&r->w);
		jw_key(&r->w, "mark"); jw_u64(&r->w, weft_fabric_capture_mark(r->s->fab));
		jw_end_obj(&r->w);
	} else {
		sb_printf(r->b, "%" PRIu64 "\n", weft_fabric_capture_mark(r->s->fab));
	}
	return 0;
}

static int cmd_replay(struct req *r)
{
	uint64_t cnt = 1, before = 0;
	size_t done;
	int i;

	for (i = 0; i < r->n; i++) {
		if (!strncmp(r->arg[i], "before=", 7)) {
			if (!parse_u64(r->arg[i] + 7, UINT64_MAX, &before))
				FAIL("replay: bad mark '%s'", r->arg[i] + 7);
		} else if (!parse_u64(r->arg[i], 1000000, &cnt)) {
			FAIL("replay: expected 'replay [N] [before=MARK]', N 0..1000000, got '%s'",
			     r->arg[i]);
		}
	}
	done = weft_fabric_replay(r->s->fab, before, (size_t)cnt, mono_ns());
	logmsg("replayed %zu captured frame(s)", done);
	if (r->json) {
		jw_obj(&r->w);
		jw_key(&r->w, "replayed"); jw_u64(&r->w, done);
		jw_end_obj(&r->w);
	} else {
		sb_printf(r->b, "replayed %zu\n", done);
	}
	return 0;
}

/* The folder of path (resolved) must be the run folder or inside it, and
 * the file itself not a symbolic link. */
FILE *capture_open(const struct sw *s, const char *path, char *err, size_t errlen)
{
	char *dup, *dir, *base, real[PATH_MAX];
	size_t rl;
	FILE *fp;
	int fd;

	if (!s->run_dir) {
		snprintf(err, errlen, "capture start is refused: the switch has no --run-dir "
			 "(or name the file with --capture on its command line)");
		return NULL;
	}
	dup = strdup(path);
	if (!dup) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	dir = dirname(dup);
	if (!realpath(dir, real)) {
		snprintf(err, errlen, "cannot open capture file %s: %s", path, strerror(errno));
		free(dup);
		return NULL;
	}
	free(dup);
	rl = strlen(s->run_dir);
	if (path[0] != '/' || strncmp(real, s->run_dir, rl) ||
	    (real[rl] != 0 && real[rl] != '/')) {
		snprintf(err, errlen, "capture file %s is outside the switch's run folder %s",
			 path, s->run_dir);
		return NULL;
	}
	base = strrchr(path, '/') + 1;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		snprintf(err, errlen, "capture file %s names a folder", path);
		return NULL;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open capture file %s: %s", path, strerror(errno));
		return NULL;
	}
	fp = fdopen(fd, "wb");
	if (!fp) {
		close(fd);
		snprintf(err, errlen, "out of memory");
	}
	return fp;
}

static int cmd_capture(struct req *r)
{
	struct sw *s = r->s;

	if (r->n == 2 && !strcmp(r->arg[0], "start")) {
		FILE *fp;

		if (s->pcap)
			FAIL("a capture to %s is running; stop it first", s->pcap_path);
		fp = capture_open(s, r->arg[1], r->err, sizeof(r->err));
		if (!fp)
			return -1;
		pcap_start(s, fp, r->arg[1]);
		logmsg("capture to %s started", r->arg[1]);
		if (r->json)
			capture_out(r);
		else
			sb_printf(r->b, "capture to %s\n", r->arg[1]);
	} else if (r->n == 1 && !strcmp(r->arg[0], "stop")) {
		uint64_t frames = s->pcap_frames;

		if (!s->pcap)
			FAIL("capture: no capture is running");
		logmsg("capture to %s stopped, %" PRIu64 " frames", s->pcap_path, frames);
		pcap_stop(s);
		s->pcap_frames = frames;
		if (r->json)
			capture_out(r);
		else
			sb_printf(r->b, "captured %" PRIu64 " frames\n", frames);
		s->pcap_frames = 0;
	} else if (r->n == 1 && !strcmp(r->arg[0], "status")) {
		capture_out(r);
	} else {
		FAIL("capture: expected 'capture start FILE', 'capture stop' or 'capture status'");
	}
	return 0;
}

static const struct {
	const char *name;
	cmd_fn fn;
	const char *usage;
	const char *help;
} cmds[] = {
	{ "help", cmd_help, "help", "this list" },
	{ "faults", cmd_faults, "faults", "show the fault settings" },
	{ "set", cmd_set, "set KEY=VALUE...", "change faults (keys below; also --KEY VALUE)" },
	{ "clear", cmd_clear, "clear", "remove all faults (routes=1, no drop/delay)" },
	{ "port", cmd_port, "port NODE up|down", "take a node's port down or bring it up" },
	{ "nodes", cmd_nodes, "nodes", "ports: attached, up, held frames" },
	{ "mcast", cmd_mcast, "mcast join|leave GROUP NODE | list [GROUP]",
	  "multicast membership (GROUP 0..255)" },
	{ "drop", cmd_drop, "drop add [src=N] [src-window=W] [dst=N] [type=T] [count=N]",
	  "drop the next COUNT (1) matching frames; drop list | clear" },
	{ "counters", cmd_counters, "counters [NODE]", "per-port frames, bytes, drops by reason" },
	{ "mark", cmd_mark, "mark", "capture mark (frames captured so far)" },
	{ "replay", cmd_replay, "replay [N] [before=MARK]", "re-inject N (default 1) captured frames" },
	{ "capture", cmd_capture, "capture start FILE | stop | status",
	  "pcap capture of all frames (FILE inside the run folder)" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void help_text(struct sbuf *b)
{
	size_t i;

	sb_printf(b, "commands:\n");
	for (i = 0; i < NCMDS; i++)
		sb_printf(b, "  %-44s %s\n", cmds[i].usage, cmds[i].help);
	sb_printf(b, "option --json: JSON output (every command but help)\n%s", fault_help);
}

void ctl_print_help(FILE *fp)
{
	struct sbuf b = { 0 };

	help_text(&b);
	if (b.s)
		fputs(b.s, fp);
	free(b.s);
}

static int cmd_help(struct req *r)
{
	help_text(r->b);
	return 0;
}

static void ctl_exec(struct sw *s, char *line, struct sbuf *b)
{
	char *tok[MAX_TOK], *save = NULL, *t;
	struct sbuf out = { 0 };
	struct req r;
	size_t i;
	int n = 0;

	memset(&r, 0, sizeof(r));
	for (t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (!strcmp(t, "--json")) {
			r.json = true;
			continue;
		}
		if (n == MAX_TOK) {
			sb_printf(b, "ERR too many arguments\n");
			return;
		}
		tok[n++] = t;
	}
	if (n == 0) {
		sb_printf(b, "ERR empty command (try 'help')\n");
		return;
	}
	for (i = 0; i < NCMDS && strcmp(cmds[i].name, tok[0]); i++)
		;
	if (i == NCMDS) {
		sb_printf(b, "ERR unknown command '%s' (try 'help')\n", tok[0]);
		return;
	}
	r.s = s;
	r.arg = tok + 1;
	r.n = n - 1;
	r.b = &out;
	jw_init(&r.w, &out);
	if (cmds[i].fn(&r))
		sb_printf(b, "ERR %s\n", r.err);
	else if (out.oom)
		sb_printf(b, "ERR out of memory\n");
	else
		sb_printf(b, "OK\n%.*s", (int)out.len, out.s ? out.s : "");
	free(out.s);
}

/* ---- connections ------------------------------------------------------------------ */

static void ctl_close(struct sw *s, struct ctlconn *k)
{
	struct ctlconn **pp;

	for (pp = &s->ctls; *pp; pp = &(*pp)->next) {
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	}
	s->nctls--;
	close(k->fd);
	free(k);
}

void ctl_free_all(struct sw *s)
{
	while (s->ctls)
		ctl_close(s, s->ctls);
}

void ctl_input(struct sw *s, struct ctlconn *k)
{
	ssize_t n = read(k->fd, k->req + k->len, CTL_MAX_REQ - k->len);
	struct sbuf b = { 0 };
	struct timeval tv = { 2, 0 };
	size_t off = 0;
	char *nl;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		k->len += (size_t)n;
	k->req[k->len] = 0;
	nl = memchr(k->req, '\n', k->len);
	if (!nl && n > 0 && k->len < CTL_MAX_REQ)
		return;
	if (n < 0 || (!nl && k->len == 0)) {
		ctl_close(s, k);
		return;
	}
	if (nl)
		*nl = 0;
	if (!nl && k->len == CTL_MAX_REQ)
		sb_printf(&b, "ERR request longer than %u bytes\n", CTL_MAX_REQ);
	else
		ctl_exec(s, k->req, &b);
	/* Replies are small: send them with a bounded blocking write. */
	fcntl(k->fd, F_SETFL, fcntl(k->fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(k->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (!b.oom && off < b.len) {
		ssize_t w = send(k->fd, b.s + off, b.len - off, MSG_NOSIGNAL);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(b.s);
	ctl_close(s, k);
}

void accept_ctl(struct sw *s)
{
	for (;;) {
		int fd = accept4(s->ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ctlconn *k;
		struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP };

		if (fd < 0)
			return;
		if (s->nctls >= MAX_CTL_CONNS) {
			logmsg("too many control connections (%u): connection refused",
			       MAX_CTL_CONNS);
			close(fd);
			continue;
		}
		k = calloc(1, sizeof(*k));
		if (!k) {
			close(fd);
			continue;
		}
		s->nctls++;
		k->ev.kind = EV_CTL;
		k->fd = fd;
		k->next = s->ctls;
		s->ctls = k;
		e.data.ptr = k;
		if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &e) != 0) {
			logmsg("epoll_ctl add: %s", strerror(errno));
			ctl_close(s, k);
		}
	}
}
