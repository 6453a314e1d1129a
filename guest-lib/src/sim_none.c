/* SPDX-License-Identifier: MIT */
/* libweft built without the sim backend (guest builds): the simnet
 * entry points exist and report that the backend is missing. */
#include <errno.h>
#include <stdio.h>

#include "libweft.h"

int weft_simnet_available(void)
{
	return 0;
}

struct weft_simnet *weft_simnet_new(const struct weft_simnet_attr *attr, char *err,
				    size_t errlen)
{
	(void)attr;
	if (err)
		snprintf(err, errlen, "libweft was built without the sim backend");
	errno = ENOTSUP;
	return NULL;
}

void weft_simnet_free(struct weft_simnet *net)
{
	(void)net;
}

struct weft_dev *weft_simnet_open(struct weft_simnet *net, unsigned int index, char *err,
				  size_t errlen)
{
	(void)net;
	(void)index;
	if (err)
		snprintf(err, errlen, "libweft was built without the sim backend");
	errno = ENOTSUP;
	return NULL;
}

int weft_simnet_set_faults(struct weft_simnet *net, uint32_t drop_ppm, uint32_t routes,
			   uint64_t delay_ns, uint64_t jitter_ns)
{
	(void)net;
	(void)drop_ppm;
	(void)routes;
	(void)delay_ns;
	(void)jitter_ns;
	return -ENOTSUP;
}

int weft_simnet_set_port_up(struct weft_simnet *net, unsigned int index, int up)
{
	(void)net;
	(void)index;
	(void)up;
	return -ENOTSUP;
}

int weft_simnet_mcast_join(struct weft_simnet *net, unsigned int group, unsigned int index)
{
	(void)net;
	(void)group;
	(void)index;
	return -ENOTSUP;
}
