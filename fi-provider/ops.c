// SPDX-License-Identifier: MIT
/*
 * The answers for calls the provider does not offer: fi_errno(3)'s
 * -FI_ENOSYS, never a crash (libfabric's own fi_no_* are not exported),
 * and fi_open_ops of the provider's own extensions (fi_weft.h).
 */
#include <string.h>

#include "wfi.h"

int wfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS;
}

int wfi_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

int wfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)ctx;
	return -FI_ENOSYS;
}

/* fi_open_ops(fid, name, flags, ops): table when name is want. */
int wfi_ops_named(struct fid *fid, const char *name, uint64_t flags, void **ops,
		  const char *want, void *table)
{
	if (!fid || !name || !ops)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (strcmp(name, want))
		return -FI_ENOSYS;
	*ops = table;
	return 0;
}
