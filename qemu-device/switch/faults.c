/* SPDX-License-Identifier: MIT */
/*
 * weft-switch: the fault vocabulary.  The command line (--drop-ppm N) and
 * the control command `set` (drop_ppm=N, --drop-ppm N, --drop-ppm=N) use
 * the same keys through fault_set().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sw.h"

bool parse_u64(const char *t, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!t || !*t || *t == '-')
		return false;
	errno = 0;
	v = strtoull(t, &end, 0);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

enum fkey { F_DROP, F_DROP_PPM, F_ROUTES, F_DELAY, F_JITTER, F_SKEW, F_HOLD };

static const struct {
	const char *name;
	enum fkey key;
	uint64_t min, max;
} keys[] = {
	{ "drop", F_DROP, 0, 0 },
	{ "drop_ppm", F_DROP_PPM, 0, 1000000 },
	{ "routes", F_ROUTES, 1, 64 },
	{ "delay_ns", F_DELAY, 0, UINT64_MAX / 4 },
	{ "jitter_ns", F_JITTER, 0, UINT64_MAX / 4 },
	{ "skew_ns", F_SKEW, 0, UINT64_MAX / 4 },
	{ "hold", F_HOLD, 0, 1u << 22 },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

const char fault_help[] =
	"faults (command line --KEY V, control 'set KEY=V' or 'set --KEY V'):\n"
	"  drop=P (0..1)  drop-ppm=N (0..1000000)  routes=R (1..64)  delay-ns=N\n"
	"  jitter-ns=N  skew-ns=N (route r adds r*N)  hold=FRAMES\n";

size_t fault_nkeys(void)
{
	return NKEYS;
}

const char *fault_key_option(size_t i)
{
	static char opt[NKEYS][16];
	char *p;

	if (i >= NKEYS)
		return NULL;
	snprintf(opt[i], sizeof(opt[i]), "%s", keys[i].name);
	for (p = opt[i]; *p; p++)
		if (*p == '_')
			*p = '-';
	return opt[i];
}

/* name equal to key, '-' and '_' alike. */
static bool same_key(const char *name, const char *key)
{
	for (; *name && *key; name++, key++)
		if (*name != *key && !(*name == '-' && *key == '_'))
			return false;
	return !*name && !*key;
}

int fault_set(struct fault_settings *fs, const char *name, const char *val,
	      char *err, size_t errlen)
{
	size_t i;
	uint64_t x;

	for (i = 0; i < NKEYS && !same_key(name, keys[i].name); i++)
		;
	if (i == NKEYS) {
		snprintf(err, errlen, "unknown fault '%s' (drop, drop-ppm, routes, delay-ns, "
			 "jitter-ns, skew-ns, hold)", name);
		return -1;
	}
	if (keys[i].key == F_DROP) {
		char *end;
		double p = strtod(val, &end);

		if (!*val || *end || !(p >= 0.0 && p <= 1.0)) {
			snprintf(err, errlen, "drop needs a probability 0..1, got '%s'", val);
			return -1;
		}
		fs->ft.drop_ppm = (uint32_t)(p * 1000000.0 + 0.5);
		return 0;
	}
	if (!parse_u64(val, UINT64_MAX, &x)) {
		snprintf(err, errlen, "%s needs a non-negative integer, got '%s'", name, val);
		return -1;
	}
	if (x < keys[i].min || x > keys[i].max) {
		snprintf(err, errlen, "%s=%s out of range (%llu..%llu)", name, val,
			 (unsigned long long)keys[i].min, (unsigned long long)keys[i].max);
		return -1;
	}
	switch (keys[i].key) {
	case F_DROP_PPM: fs->ft.drop_ppm = (uint32_t)x; break;
	case F_ROUTES: fs->ft.routes = (uint32_t)x; break;
	case F_DELAY: fs->ft.delay_ns = x; break;
	case F_JITTER: fs->ft.jitter_ns = x; break;
	case F_SKEW: fs->ft.route_skew_ns = x; break;
	case F_HOLD: fs->hold = x; break;
	case F_DROP: break;
	}
	return 0;
}

int fault_words(struct fault_settings *fs, char **tok, int n, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < n; i++) {
		char name[64], *eq;
		const char *t = tok[i], *val;

		if (!strncmp(t, "--", 2))
			t += 2;
		eq = strchr(t, '=');
		if (eq) {
			snprintf(name, sizeof(name), "%.*s", (int)(eq - t), t);
			val = eq + 1;
		} else if (t != tok[i] && i + 1 < n) {
			snprintf(name, sizeof(name), "%s", t);
			val = tok[++i];
		} else {
			snprintf(err, errlen, "expected KEY=VALUE or --KEY VALUE, got '%s'", tok[i]);
			return -1;
		}
		if (fault_set(fs, name, val, err, errlen))
			return -1;
	}
	return 0;
}
