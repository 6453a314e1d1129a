// SPDX-License-Identifier: GPL-2.0
/*
 * weft_ib.ko debugfs: /sys/kernel/debug/weft_ib/<ibdev>/attrs, the device
 * attributes ib_core holds (from query_device at registration), one
 * "name value" line each, for tests that compare them with the adapter's
 * registers (weft.ko's weftN/regs).
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "weft_ib.h"

static struct dentry *weft_ib_dbg_root;

static int weft_ib_attrs_show(struct seq_file *m, void *v)
{
	struct weft_ibdev *dev = m->private;
	const struct ib_device_attr *a = &dev->ibdev.attrs;

	seq_printf(m, "node_guid 0x%016llx\n", be64_to_cpu(dev->ibdev.node_guid));
	seq_printf(m, "max_qp %d\n", a->max_qp);
	seq_printf(m, "max_qp_wr %d\n", a->max_qp_wr);
	seq_printf(m, "max_send_sge %d\n", a->max_send_sge);
	seq_printf(m, "max_recv_sge %d\n", a->max_recv_sge);
	seq_printf(m, "max_cq %d\n", a->max_cq);
	seq_printf(m, "max_cqe %d\n", a->max_cqe);
	seq_printf(m, "max_pd %d\n", a->max_pd);
	seq_printf(m, "max_mr %d\n", a->max_mr);
	seq_printf(m, "max_mw %d\n", a->max_mw);
	seq_printf(m, "max_mr_size 0x%llx\n", a->max_mr_size);
	seq_printf(m, "max_qp_rd_atom %d\n", a->max_qp_rd_atom);
	seq_printf(m, "max_srq %d\n", a->max_srq);
	seq_printf(m, "max_fast_reg_page_list_len %u\n", a->max_fast_reg_page_list_len);
	seq_printf(m, "device_cap_flags 0x%llx\n", a->device_cap_flags);
	seq_printf(m, "uars %u\n", dev->caps.nr_uar);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(weft_ib_attrs);

void weft_ib_debugfs_add(struct weft_ibdev *dev)
{
	dev->dbg = debugfs_create_dir(dev_name(&dev->ibdev.dev), weft_ib_dbg_root);
	debugfs_create_file("attrs", 0400, dev->dbg, dev, &weft_ib_attrs_fops);
}

void weft_ib_debugfs_del(struct weft_ibdev *dev)
{
	debugfs_remove_recursive(dev->dbg);
	dev->dbg = NULL;
}

void weft_ib_debugfs_init(void)
{
	weft_ib_dbg_root = debugfs_create_dir("weft_ib", NULL);
}

void weft_ib_debugfs_exit(void)
{
	debugfs_remove_recursive(weft_ib_dbg_root);
}
