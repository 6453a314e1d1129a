// SPDX-License-Identifier: MIT
/* The fi_ops_msg and fi_ops_tagged entry points: argument checks, the
 * endpoint's default flags, the domain lock (FI_THREAD_SAFE). */
#include "wfi.h"

#define WFI_TX_FLAGS (FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
		      FI_INJECT_COMPLETE | FI_MORE | FI_FENCE | FI_TRIGGER)
#define WFI_RX_FLAGS (FI_COMPLETION | FI_PEEK | FI_CLAIM | FI_DISCARD | FI_MORE)

static struct wfi_ep *to_ep(struct fid_ep *fep)
{
	return wfi_ep_of(fep);
}

static ssize_t send_locked(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
			   uint64_t tag, uint64_t data, void *ctx, uint64_t flags, bool msg)
{
	struct wfi_ep *ep = to_ep(fep);
	ssize_t ret;

	if (flags & ~(uint64_t)WFI_TX_FLAGS)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&ep->dom->lock);
	if (flags & FI_TRIGGER) {
		/* Checked as the send would be, posted at the threshold (trigger.c). */
		struct wfi_trig w = { .type = msg ? FI_OP_SEND : FI_OP_TSEND, .buf = (void *)buf,
				      .len = len, .dest = dest, .tag = tag, .data = data,
				      .ctx = ctx, .flags = flags };

		if ((!buf && len) || len > WFI_MAX_MSG || (!msg && (tag & ~WFI_TAG_MASK)) ||
		    ((flags & FI_INJECT) && len > WFI_EAGER))
			ret = -FI_EINVAL;
		else
			ret = wfi_trig_add(ep, &w);
	} else {
		ret = wfi_send(ep, buf, len, dest, tag, data, ctx, flags, msg);
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static ssize_t recv_locked(struct fid_ep *fep, void *buf, size_t len, fi_addr_t src,
			   uint64_t tag, uint64_t ignore, void *ctx, uint64_t flags, bool msg)
{
	struct wfi_ep *ep = to_ep(fep);
	ssize_t ret;

	if (flags & ~(uint64_t)WFI_RX_FLAGS)
		return -FI_EBADFLAGS;
	if (msg && (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)))
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&ep->dom->lock);
	ret = wfi_recv(ep, buf, len, src, tag, ignore, ctx, flags, msg);
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static int one_iov(const struct iovec *iov, size_t count, void **buf, size_t *len)
{
	if (count > 1 || (count && !iov))
		return -FI_EINVAL;
	*buf = count ? iov[0].iov_base : NULL;
	*len = count ? iov[0].iov_len : 0;
	return 0;
}

/* ---- fi_ops_msg ---------------------------------------------------------- */

static ssize_t m_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
		      void *ctx)
{
	(void)desc;
	return recv_locked(ep, buf, len, src, 0, 0, ctx, wfi_op_flags(ep, FI_RECV), true);
}

static ssize_t m_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, void *ctx)
{
	void *buf;
	size_t len;

	(void)desc;
	if (one_iov(iov, count, &buf, &len))
		return -FI_EINVAL;
	return m_recv(ep, buf, len, NULL, src, ctx);
}

static ssize_t m_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	void *buf;
	size_t len;

	if (!msg || one_iov(msg->msg_iov, msg->iov_count, &buf, &len))
		return -FI_EINVAL;
	return recv_locked(ep, buf, len, msg->addr, 0, 0, msg->context, flags, true);
}

static ssize_t m_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
		      fi_addr_t dest, void *ctx)
{
	(void)desc;
	return send_locked(ep, buf, len, dest, 0, 0, ctx, wfi_op_flags(ep, FI_TRANSMIT), true);
}

static ssize_t m_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, void *ctx)
{
	void *buf;
	size_t len;

	(void)desc;
	if (one_iov(iov, count, &buf, &len))
		return -FI_EINVAL;
	return m_send(ep, buf, len, NULL, dest, ctx);
}

static ssize_t m_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	void *buf;
	size_t len;

	if (!msg || one_iov(msg->msg_iov, msg->iov_count, &buf, &len))
		return -FI_EINVAL;
	return send_locked(ep, buf, len, msg->addr, 0, msg->data, msg->context, flags, true);
}

static ssize_t m_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
	return send_locked(ep, buf, len, dest, 0, 0, NULL, FI_INJECT, true);
}

static ssize_t m_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dest, void *ctx)
{
	(void)desc;
	return send_locked(ep, buf, len, dest, 0, data, ctx,
			   wfi_op_flags(ep, FI_TRANSMIT) | FI_REMOTE_CQ_DATA, true);
}

static ssize_t m_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest)
{
	return send_locked(ep, buf, len, dest, 0, data, NULL, FI_INJECT | FI_REMOTE_CQ_DATA, true);
}

struct fi_ops_msg wfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = m_recv,
	.recvv = m_recvv,
	.recvmsg = m_recvmsg,
	.send = m_send,
	.sendv = m_sendv,
	.sendmsg = m_sendmsg,
	.inject = m_inject,
	.senddata = m_senddata,
	.injectdata = m_injectdata,
};

/* ---- fi_ops_tagged ------------------------------------------------------- */

static ssize_t t_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t tag, uint64_t ignore, void *ctx)
{
	(void)desc;
	return recv_locked(ep, buf, len, src, tag, ignore, ctx, wfi_op_flags(ep, FI_RECV), false);
}

static ssize_t t_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	void *buf;
	size_t len;

	(void)desc;
	if (one_iov(iov, count, &buf, &len))
		return -FI_EINVAL;
	return t_recv(ep, buf, len, NULL, src, tag, ignore, ctx);
}

static ssize_t t_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	void *buf = NULL;
	size_t len = 0;

	if (!msg)
		return -FI_EINVAL;
	if (!(flags & (FI_PEEK | FI_DISCARD)) && one_iov(msg->msg_iov, msg->iov_count, &buf, &len))
		return -FI_EINVAL;
	if ((flags & (FI_PEEK | FI_DISCARD)) && msg->iov_count &&
	    one_iov(msg->msg_iov, msg->iov_count, &buf, &len))
		return -FI_EINVAL;
	return recv_locked(ep, buf, len, msg->addr, msg->tag, msg->ignore, msg->context, flags,
			   false);
}

static ssize_t t_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
		      fi_addr_t dest, uint64_t tag, void *ctx)
{
	(void)desc;
	return send_locked(ep, buf, len, dest, tag, 0, ctx, wfi_op_flags(ep, FI_TRANSMIT), false);
}

static ssize_t t_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, uint64_t tag, void *ctx)
{
	void *buf;
	size_t len;

	(void)desc;
	if (one_iov(iov, count, &buf, &len))
		return -FI_EINVAL;
	return t_send(ep, buf, len, NULL, dest, tag, ctx);
}

static ssize_t t_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	void *buf;
	size_t len;

	if (!msg || one_iov(msg->msg_iov, msg->iov_count, &buf, &len))
		return -FI_EINVAL;
	return send_locked(ep, buf, len, msg->addr, msg->tag, msg->data, msg->context, flags,
			   false);
}

static ssize_t t_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			uint64_t tag)
{
	return send_locked(ep, buf, len, dest, tag, 0, NULL, FI_INJECT, false);
}

static ssize_t t_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dest, uint64_t tag, void *ctx)
{
	(void)desc;
	return send_locked(ep, buf, len, dest, tag, data, ctx,
			   wfi_op_flags(ep, FI_TRANSMIT) | FI_REMOTE_CQ_DATA, false);
}

static ssize_t t_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t tag)
{
	return send_locked(ep, buf, len, dest, tag, data, NULL, FI_INJECT | FI_REMOTE_CQ_DATA,
			   false);
}

struct fi_ops_tagged wfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = t_recv,
	.recvv = t_recvv,
	.recvmsg = t_recvmsg,
	.send = t_send,
	.sendv = t_sendv,
	.sendmsg = t_sendmsg,
	.inject = t_inject,
	.senddata = t_senddata,
	.injectdata = t_injectdata,
};
