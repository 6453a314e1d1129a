/* SPDX-License-Identifier: MIT */
/*
 * PVO keys across reboots, with the shipped driver policy
 * (guest-driver/policy/) running in the sim's driver:
 *  - 1,000 node reboots, each re-registering the same buffer after 0..100
 *    other registrations: the buffer never gets a key it had before, no
 *    key of any registration comes back, and every boot takes exactly one
 *    new adapter key epoch (one key block of 128);
 *  - one boot with 1,000 registrations takes a new epoch every 128 keys
 *    and still repeats nothing;
 *  - the documented window: a key can come back only after 1,023 further
 *    epochs (docs/driver.md, "PVO keys"), and exactly then it does.
 */
#include <string.h>

#include "simtest.h"
#include "weft_policy.h"

#define REBOOTS         1000u
#define JOB             77u

static uint8_t seen_buf[1u << 17];      /* keys the buffer had */
static uint8_t seen_all[1u << 17];      /* keys of every registration */

static uint64_t epoch(struct weft_sim *s)
{
	return weft_sim_reg_read(s, 0, WEFT_REG_KEY_EPOCH);
}

/* Register [addr, addr + len) and return its PVO key (the MR is kept). */
static uint32_t reg(struct weft_sim *s, uint64_t addr, uint64_t len, int *handle)
{
	uint64_t pvo = 0;
	int h = weft_sim_reg_mr(s, 0, JOB, addr, len, 12, &pvo);

	REQUIRE(h > 0, "reg_mr: %d", h);
	if (handle)
		*handle = h;
	return weft_pvo_key(pvo);
}

/* A registration and its deregistration; returns the key. */
static uint32_t reg_dereg(struct weft_sim *s, uint64_t addr)
{
	int h;
	uint32_t key = reg(s, addr, 4096, &h);

	REQUIRE(weft_sim_dereg_mr(s, 0, h) == 0, "dereg");
	return key;
}

int main(void)
{
	struct weft_sim_config cfg = { .nr_nodes = 1, .mem_size = 16u << 20, .seed = 5 };
	struct weft_sim *s = st_sim(&cfg);
	uint64_t buf, other, rng = 12345, e0, e, first_epoch;
	uint32_t boot, key, first_key, i, extra, keys_total = 0, extra_max = 0;

	buf = weft_sim_alloc(s, 0, 64u << 10, 4096);
	other = weft_sim_alloc(s, 0, 4096, 4096);
	REQUIRE(buf && other, "alloc");
	first_epoch = epoch(s);

	for (boot = 0; boot < REBOOTS; boot++) {
		REQUIRE(weft_sim_node_reboot(s, 0) == 0, "reboot %u", boot);
		e0 = epoch(s);
		REQUIRE(weft_sim_job_attach(s, 0, JOB) >= 0, "attach");
		/* Other registrations first, a different number each boot. */
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		extra = (uint32_t)(rng >> 33) % 101;
		if (extra > extra_max)
			extra_max = extra;
		for (i = 0; i < extra; i++) {
			key = reg_dereg(s, other);
			REQUIRE(key && !seen_all[key], "boot %u: key 0x%x repeated", boot, key);
			seen_all[key] = 1;
			keys_total++;
		}
		key = reg(s, buf, 64u << 10, NULL);
		REQUIRE(key != 0, "key 0");
		REQUIRE(!seen_buf[key], "boot %u: the buffer's key 0x%x came back", boot, key);
		REQUIRE(!seen_all[key], "boot %u: key 0x%x repeated", boot, key);
		seen_buf[key] = seen_all[key] = 1;
		keys_total++;
		REQUIRE(epoch(s) == e0, "boot %u: %u keys took more than one block", boot,
		      extra + 1);
		REQUIRE(e0 == first_epoch + boot + 1, "boot %u: epoch %llu, want %llu", boot,
		      (unsigned long long)e0, (unsigned long long)(first_epoch + boot + 1));
	}
	t_checked("%u reboots, the buffer got %u different keys; %u keys in all "
		  "(0..%u other registrations per boot), none repeated; epochs %llu..%llu",
		  REBOOTS, REBOOTS, keys_total, extra_max,
		  (unsigned long long)first_epoch + 1, (unsigned long long)epoch(s));
	t_point("keys: 1000 reboots never repeat a key of the same buffer, nor any key");

	/* One boot, many registrations: a new epoch every 128 keys. */
	REQUIRE(weft_sim_node_reboot(s, 0) == 0, "reboot");
	REQUIRE(weft_sim_job_attach(s, 0, JOB) >= 0, "attach");
	e0 = epoch(s);
	for (i = 0; i < 1000; i++) {
		key = reg_dereg(s, other);
		REQUIRE(key && !seen_all[key], "long boot: key 0x%x repeated", key);
		seen_all[key] = 1;
		keys_total++;
	}
	e = epoch(s);
	REQUIRE(e - e0 == 1000 / (1u << WEFT_KEY_SEQ_BITS), "1000 keys took %llu more epochs",
	      (unsigned long long)(e - e0));
	t_checked("one boot with 1000 registrations took %llu more epochs, no key repeated "
		  "(%u keys in all)", (unsigned long long)(e - e0), keys_total);
	t_point("keys: a new epoch every 128 keys within a boot");

	/* The window: the key of an epoch's first registration comes back
	 * after exactly WEFT_KEY_BLOCKS epochs, never before. */
	REQUIRE(weft_sim_node_reboot(s, 0) == 0, "reboot");
	REQUIRE(weft_sim_job_attach(s, 0, JOB) >= 0, "attach");
	e0 = epoch(s);
	first_key = reg_dereg(s, other);
	for (i = 1; i < WEFT_KEY_BLOCKS; i++) {
		REQUIRE(weft_sim_node_reboot(s, 0) == 0, "reboot");
		REQUIRE(weft_sim_job_attach(s, 0, JOB) >= 0, "attach");
		key = reg_dereg(s, other);
		REQUIRE(key != first_key, "key 0x%x back after %u epochs", key, i);
	}
	REQUIRE(weft_sim_node_reboot(s, 0) == 0, "reboot");
	REQUIRE(weft_sim_job_attach(s, 0, JOB) >= 0, "attach");
	key = reg_dereg(s, other);
	REQUIRE(epoch(s) - e0 == WEFT_KEY_BLOCKS && key == first_key,
	      "after %llu epochs key 0x%x, first 0x%x", (unsigned long long)(epoch(s) - e0),
	      key, first_key);
	t_checked("a first key comes back after exactly %u epochs, not before", WEFT_KEY_BLOCKS);
	t_point("keys: the documented window of %u epochs", WEFT_KEY_BLOCKS);
	weft_sim_free(s);
	return t_done();
}
