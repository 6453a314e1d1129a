/* SPDX-License-Identifier: MIT */
/* weft-info: adapter identity, active windows and counters. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "common.h"

static int info(struct tool_ctx *c)
{
	struct weft_dev_info di;
	int r = weft_dev_query(c->dev, &di);
	if (r) {
		tool_err("weft-info", "query: %s", tool_strerror(r));
		return -1;
	}
	uint64_t act[2] = { 0, 0 };
	int have_act = weft_dev_active_windows(c->dev, act) == 0;
	unsigned int n = weft_nr_counters();
	uint64_t val;
	int have_cnt = weft_dev_counter(c->dev, 0, &val) == 0;
	if (c->o.json) {
		printf("{\"backend\":\"%s\",\"device\":\"%s\",\"node_id\":%u,\"windows\":%u,"
		       "\"rcxts\":%" PRIu32 ",\"recovery_count\":%" PRIu32 ",\"handlers\":%" PRIu32
		       ",\"max_payload\":%" PRIu32 ",\"hw_id\":\"0x%016" PRIx64 "\"",
		       di.backend, di.name, di.node_id, di.nr_windows, di.nr_rcxt,
		       di.recovery_count, di.nr_handlers, di.max_payload, di.hw_id);
		if (have_act) {
			printf(",\"active_windows\":[");
			int first = 1;
			for (unsigned int w = 0; w < 128; w++)
				if (act[w / 64] >> (w % 64) & 1) {
					printf("%s%u", first ? "" : ",", w);
					first = 0;
				}
			printf("]");
		}
		if (have_cnt) {
			printf(",\"counters\":{");
			for (unsigned int i = 0; i < n; i++) {
				weft_dev_counter(c->dev, i, &val);
				printf("%s\"%s\":%" PRIu64, i ? "," : "", weft_counter_label(i), val);
			}
			printf("}");
		}
		printf("}\n");
		return 0;
	}
	printf("device        %s (%s backend)\n", di.name, di.backend);
	printf("node id       %u\n", di.node_id);
	printf("hw id         0x%016" PRIx64 " (magic %s, version %u.%u)\n", di.hw_id,
	       (uint32_t)di.hw_id == 0x54464557u ? "ok" : "WRONG",
	       (unsigned int)(di.hw_id >> 48), (unsigned int)(di.hw_id >> 32) & 0xffff);
	printf("windows       %u\n", di.nr_windows);
	printf("rCxts         %" PRIu32 "\n", di.nr_rcxt);
	printf("handlers      %" PRIu32 "\n", di.nr_handlers);
	printf("recoveries    %" PRIu32 "\n", di.recovery_count);
	printf("max payload   %" PRIu32 " bytes\n", di.max_payload);
	if (have_act) {
		printf("active        ");
		int any = 0;
		for (unsigned int w = 0; w < 128; w++)
			if (act[w / 64] >> (w % 64) & 1) {
				printf("%s%u", any ? "," : "", w);
				any = 1;
			}
		printf("%s\n", any ? "" : "(none)");
	}
	if (!have_cnt) {
		printf("counters      not readable (needs root: the PCI BAR in sysfs or the driver's debugfs)\n");
		return 0;
	}
	printf("counters (nonzero):\n");
	for (unsigned int i = 0; i < n; i++) {
		weft_dev_counter(c->dev, i, &val);
		if (val)
			printf("  %-22s %" PRIu64 "\n", weft_counter_label(i), val);
	}
	return 0;
}

static const struct tool_desc desc = {
	.name = "weft-info",
	.summary = "Show a Weft adapter: identity, active windows and counters.",
	.single = info,
};

int main(int argc, char **argv)
{
	return tool_main(&desc, argc, argv);
}
