// SPDX-License-Identifier: MIT
/*
 * PVO keys of one buffer (the cluster scenario reboot-keys runs it after
 * every reboot): registers a 64 KiB buffer at a fixed address, checks
 * that the key lies in the block of the driver's key epoch (debugfs
 * state, docs/driver.md "PVO keys") and that registering it again in
 * the same boot gives another key, and prints
 *   # mrkey: buffer 0x7e0000000000+65536 key 0xK epoch E
 * as a TAP comment ("# mrkey: ...") with the key of the first
 * registration.
 */
#include "wt.h"

#define JOB	0x6b6bu
#define BUF	((void *)0x7e0000000000ull)
#define LEN	65536u

static int reg(int fd, struct weft_ioc_reg_mr *m)
{
	memset(m, 0, sizeof(*m));
	m->addr = (uintptr_t)BUF;
	m->length = LEN;
	m->job_id = JOB;
	return ioctl(fd, WEFT_IOC_REG_MR, m) ? -errno : 0;
}

int main(void)
{
	struct weft_ioc_job j = { .job_id = JOB };
	struct weft_ioc_dereg_mr d = { 0 };
	struct weft_ioc_reg_mr m1, m2;
	uint32_t key1, key2;
	long long epoch;
	char path[256], *t;
	void *p;
	int fd = wt_open();

	p = mmap(BUF, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != BUF)
		t_bail("mmap at %p: %s", BUF, strerror(errno));
	memset(p, 0x5a, LEN);
	if (ioctl(fd, WEFT_IOC_JOB_ATTACH, &j))
		t_bail("attach: %s", strerror(errno));
	OK(reg(fd, &m1) == 0, "register the buffer");
	key1 = weft_pvo_key(m1.pvo);
	t = wt_read_file(wt_dbg_path(path, sizeof(path), "state"));
	epoch = t ? wt_field(t, "key_epoch") : -1;
	OK(epoch >= 0, "debugfs state shows key_epoch (%lld)", epoch);
	OK(key1 >> 7 == (uint32_t)(epoch % 1023) + 1,
		 "key 0x%x is in the block of epoch %lld (%lld)", key1, epoch, epoch % 1023 + 1);
	d.handle = m1.handle;
	WT_EXPECT_OK(fd, WEFT_IOC_DEREG_MR, &d, "deregister");
	OK(reg(fd, &m2) == 0, "register the same buffer again");
	key2 = weft_pvo_key(m2.pvo);
	OK(key2 != key1, "same boot, new registration: key 0x%x, first 0x%x", key2, key1);
	d.handle = m2.handle;
	WT_EXPECT_OK(fd, WEFT_IOC_DEREG_MR, &d, "deregister");
	t_diag("mrkey: buffer %p+%u key 0x%x epoch %lld", BUF, LEN, key1, epoch);
	close(fd);
	return t_done();
}
