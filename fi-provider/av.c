// SPDX-License-Identifier: MIT
/* Address vectors (FI_AV_MAP and FI_AV_TABLE): a bounded table of endpoint
 * names (struct sockaddr_in, the incarnation in sin_zero: wfi.h); an
 * fi_addr_t is the entry's index under both types. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wfi.h"

static int av_close(struct fid *fid)
{
	struct wfi_av *av = container_of(fid, struct wfi_av, av_fid.fid);

	if (av->refs)
		return -FI_EBUSY;
	av->dom->refs--;
	free(av->tab);
	free(av->used);
	free(av);
	return 0;
}

static bool addr_ok(const struct sockaddr_in *sin)
{
	return sin->sin_family == AF_INET && sin->sin_port != 0 && sin->sin_addr.s_addr != 0;
}

/* Doubles the table, up to WFI_AV_MAX entries; false when it cannot. */
static bool grow(struct wfi_av *av)
{
	size_t cap = av->cap * 2 > WFI_AV_MAX ? WFI_AV_MAX : av->cap * 2;
	struct sockaddr_in *tab;
	uint8_t *used;

	if (cap <= av->cap)
		return false;
	tab = realloc(av->tab, cap * sizeof(*tab));
	if (!tab)
		return false;
	av->tab = tab;
	used = realloc(av->used, cap);
	if (!used)
		return false;
	memset(used + av->cap, 0, cap - av->cap);
	av->used = used;
	av->cap = cap;
	return true;
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	struct wfi_av *av = container_of(fav, struct wfi_av, av_fid);
	const struct sockaddr_in *in = addr;
	size_t i, j;
	int done = 0;

	(void)context;
	if (!addr && count)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)FI_MORE)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&av->dom->lock);
	for (i = 0; i < count; i++) {
		fi_addr_t a = FI_ADDR_NOTAVAIL;

		if (addr_ok(&in[i])) {
			for (j = 0; j < av->cap; j++)
				if (!av->used[j])
					break;
			if (j == av->cap && !grow(av))
				j = av->cap + 1;
			if (j < av->cap) {
				av->tab[j] = in[i];	/* its incarnation too */
				av->used[j] = 1;
				av->count++;
				a = j;
				done++;
			}
		}
		if (fi_addr)
			fi_addr[i] = a;
	}
	pthread_mutex_unlock(&av->dom->lock);
	return done;
}

static int av_insertsvc(struct fid_av *fav, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char *end;
	unsigned long port;

	if (!node || !service)
		return -FI_EINVAL;
	port = strtoul(service, &end, 10);
	if (*end || !port || port > 65535 || inet_pton(AF_INET, node, &sin.sin_addr) != 1)
		return -FI_EINVAL;
	sin.sin_port = htons((uint16_t)port);
	return av_insert(fav, &sin, 1, fi_addr, flags, context);
}

static int av_insertsym(struct fid_av *fav, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *fi_addr, uint64_t flags,
			void *context)
{
	(void)fav;
	(void)node;
	(void)nodecnt;
	(void)service;
	(void)svccnt;
	(void)fi_addr;
	(void)flags;
	(void)context;
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct wfi_av *av = container_of(fav, struct wfi_av, av_fid);
	size_t i;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (!fi_addr && count)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->dom->lock);
	for (i = 0; i < count; i++) {
		if (fi_addr[i] >= av->cap || !av->used[fi_addr[i]]) {
			ret = -FI_EINVAL;
			continue;
		}
		av->used[fi_addr[i]] = 0;
		av->count--;
	}
	pthread_mutex_unlock(&av->dom->lock);
	return ret;
}

int wfi_av_get(struct wfi_av *av, fi_addr_t a, struct sockaddr_in *sin)
{
	if (!av || a >= av->cap || !av->used[a])
		return -FI_EINVAL;
	*sin = av->tab[a];
	return 0;
}

/* The entry with this name, else one with its address and port and no
 * incarnation (whoever listens there). */
fi_addr_t wfi_av_find(struct wfi_av *av, const struct sockaddr_in *sin)
{
	fi_addr_t any = FI_ADDR_NOTAVAIL;
	uint64_t inc = wfi_name_inc(sin);
	size_t i;

	if (!av)
		return FI_ADDR_NOTAVAIL;
	for (i = 0; i < av->cap; i++) {
		if (!av->used[i] || !wfi_same_place(&av->tab[i], sin))
			continue;
		if (wfi_name_inc(&av->tab[i]) == inc)
			return i;
		if (!wfi_name_inc(&av->tab[i]) && any == FI_ADDR_NOTAVAIL)
			any = i;
	}
	return any;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct wfi_av *av = container_of(fav, struct wfi_av, av_fid);
	struct sockaddr_in sin;
	int ret;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	pthread_mutex_lock(&av->dom->lock);
	ret = wfi_av_get(av, fi_addr, &sin);
	pthread_mutex_unlock(&av->dom->lock);
	if (ret)
		return ret;
	memcpy(addr, &sin, *addrlen < sizeof(sin) ? *addrlen : sizeof(sin));
	ret = *addrlen < sizeof(sin) ? -FI_ETOOSMALL : 0;
	*addrlen = sizeof(sin);
	return ret;
}

static const char *av_straddr(struct fid_av *fav, const void *addr, char *buf, size_t *len)
{
	const struct sockaddr_in *sin = addr;
	char ip[INET_ADDRSTRLEN], s[80];
	uint64_t inc;
	int n;

	(void)fav;
	if (!addr || !buf || !len)
		return NULL;
	if (!inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip)))
		return NULL;
	inc = wfi_name_inc(sin);
	n = snprintf(s, sizeof(s), "fi_sockaddr_in://%s:%u", ip, ntohs(sin->sin_port));
	if (inc)	/* the incarnation as a URI query (docs/libfabric.md "Names") */
		n += snprintf(s + n, sizeof(s) - (size_t)n, "?inc=%016llx", (unsigned long long)inc);
	if (*len)
		snprintf(buf, *len, "%s", s);
	*len = (size_t)n + 1;
	return buf;
}

static int no_av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **set,
		     void *ctx)
{
	(void)av;
	(void)attr;
	(void)set;
	(void)ctx;
	return -FI_ENOSYS;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = wfi_no_bind,
	.control = wfi_no_control,
	.ops_open = wfi_no_ops_open,
};

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = no_av_set,
};

int wfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **fav,
		void *context)
{
	struct wfi_domain *d = container_of(domain, struct wfi_domain, domain_fid);
	struct wfi_av *av;
	size_t cap;

	if (!attr || !fav)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->flags & ~(uint64_t)(FI_EVENT | FI_READ | FI_SYMMETRIC) ||
	    (attr->flags & (FI_EVENT | FI_READ)) || attr->name || attr->rx_ctx_bits)
		return -FI_ENOSYS;
	cap = attr->count ? attr->count : 256;
	if (cap > WFI_AV_MAX)
		return -FI_EINVAL;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->cap = cap;
	av->tab = calloc(cap, sizeof(*av->tab));
	av->used = calloc(cap, 1);
	if (!av->tab || !av->used) {
		free(av->tab);
		free(av->used);
		free(av);
		return -FI_ENOMEM;
	}
	av->dom = d;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &av_fi_ops;
	av->av_fid.ops = &av_ops;
	d->refs++;
	*fav = &av->av_fid;
	return 0;
}
