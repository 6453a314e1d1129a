/*
 * Weft RDMA switch adapter: the link to weft-switch (weft_link.h).
 *
 * Link protocol (include/weft/wire.h): every frame is a 4-byte
 * little-endian length and a packet.  On connect the link sends HELLO
 * and reports itself up only when the switch answers HELLO_ACK with
 * status 0.  The chardev's reconnect-ms option brings the link back after
 * the switch restarts; while it is down the device drops what it sends.
 *
 * Shared memory (weft-host/shm.h, the device's "transport" property):
 * the HELLO asks for it, and when the HELLO_ACK grants it (a memfd and
 * two eventfds come with it) data frames go through two rings in the
 * memfd instead of the socket; an fd handler on the device's eventfd
 * hands the ring's frames over, many per wake-up.  The device copies a
 * ring frame's header and keeps its payload where it is, to place it
 * from there (weft_core_receive_shared): such a record stays in the ring,
 * unconsumed, until the device gives it back (weft_link_release).
 *
 * Threads: every callback from the chardev or the ring's eventfd takes
 * the device's lock (l->lock) before it touches the link or calls the
 * device; the device calls into the link with that lock held.  The
 * ring's eventfd is watched in l->ctx (the device's IOThread, which also
 * polls the ring while frames flow) or, without one, in the main loop.
 * The chardev is only used with the big lock held: the socket chardev
 * reports a close with its write lock held, so a thread that wrote to it
 * under the device's lock could deadlock with it.  The IOThread hands
 * its chardev work (writes, the frames read from the socket, a
 * disconnect, re-opening input) to chr_bh in the main loop.
 *
 * SPDX-License-Identifier: MIT
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/error-report.h"
#include "qemu/lockable.h"
#include "qemu/main-loop.h"
#include "block/aio.h"
#include "trace.h"

#include <glib-unix.h>
#include <sys/mman.h>

#include "weft_link.h"

/* Bytes of frames waiting for the socket before xmit answers -EAGAIN. */
#define WEFT_TXBUF_SIZE         (64 * 1024)
/* Reassembly buffer for frames from the switch. */
#define WEFT_RXBUF_SIZE         (16 * 1024)
#define WEFT_WIRE_FRAME_MAX     (WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_MAX_FRAME)
/*
 * Ring records read and not yet consumed (at most what the ring holds,
 * WEFT_SHM_RING_SIZE / 112 bytes of the smallest record; more are read
 * once older ones are given back).
 */
#define WEFT_SHM_HELD_MAX       1024u
#define WEFT_SHM_HELD_DONE      0x80000000u

QEMU_BUILD_BUG_ON(WEFT_RXBUF_SIZE < 2 * WEFT_WIRE_FRAME_MAX);
QEMU_BUILD_BUG_ON(WEFT_TXBUF_SIZE < 2 * WEFT_WIRE_FRAME_MAX);

static void weft_tx_flush(WeftLink *l);

/* Whether this thread may use the chardev now (see the top comment). */
static bool weft_chr_here(WeftLink *l)
{
    if (!l->ctx || bql_locked()) {
        return true;
    }
    qemu_bh_schedule(l->chr_bh);
    return false;
}

static gboolean weft_tx_writable(void *do_not_use, GIOCondition cond,
                                 void *opaque)
{
    WeftLink *l = opaque;

    QEMU_LOCK_GUARD(l->lock);
    l->tx_watch = 0;
    weft_tx_flush(l);
    if (l->tx_blocked && l->tx_tail - l->tx_head < WEFT_TXBUF_SIZE / 2) {
        l->tx_blocked = false;
        l->ops->kick(l->opaque);
    }
    return G_SOURCE_REMOVE;
}

/* Writes what the socket takes; waits for writability for the rest. */
static void weft_tx_flush(WeftLink *l)
{
    if (l->tx_head < l->tx_tail && !weft_chr_here(l)) {
        return;
    }
    while (l->tx_head < l->tx_tail) {
        int n = qemu_chr_fe_write(l->chr, l->txbuf + l->tx_head,
                                  l->tx_tail - l->tx_head);
        if (n <= 0) {
            break;
        }
        l->tx_head += n;
    }
    if (l->tx_head == l->tx_tail) {
        l->tx_head = l->tx_tail = 0;
        return;
    }
    if (!l->tx_watch && l->connected) {
        l->tx_watch = qemu_chr_fe_add_watch(l->chr, G_IO_OUT | G_IO_HUP,
                                            weft_tx_writable, l);
    }
}

/* Queues one frame (length prefix + packet); false when it does not fit. */
static bool weft_tx_queue(WeftLink *l, const void *pkt, size_t len)
{
    size_t need = WEFT_WIRE_LEN_PREFIX + len;

    if (l->tx_tail + need > WEFT_TXBUF_SIZE && l->tx_head) {
        memmove(l->txbuf, l->txbuf + l->tx_head, l->tx_tail - l->tx_head);
        l->tx_tail -= l->tx_head;
        l->tx_head = 0;
    }
    if (l->tx_tail + need > WEFT_TXBUF_SIZE) {
        return false;
    }
    stl_le_p(l->txbuf + l->tx_tail, len);
    memcpy(l->txbuf + l->tx_tail + WEFT_WIRE_LEN_PREFIX, pkt, len);
    l->tx_tail += need;
    return true;
}

static void weft_link_abort(WeftLink *l, const char *why, uint64_t val);

static void weft_shm_signal(int fd)
{
    uint64_t one = 1;

    if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        trace_weft_link_error("eventfd write", errno);
    }
}

static int weft_shm_xmit(WeftLink *l, const void *pkt, size_t len)
{
    for (;;) {
        int r = weft_shm_push(&l->shm_tx, pkt, len);

        if (r == 0) {
            l->shm_kick = true;
            return 0;
        }
        if (r != -EAGAIN) {
            weft_link_abort(l, "impossible shared-memory ring index", r);
            return -ENOTCONN;
        }
        if (weft_shm_producer_wait(&l->shm_tx, len)) {
            /* The switch writes our eventfd once it has taken frames. */
            l->tx_blocked = true;
            trace_weft_link_tx_busy(WEFT_SHM_RING_SIZE);
            return -EAGAIN;
        }
    }
}

/* Wakes the switch if it sleeps and frames were published since. */
static void weft_shm_flush(WeftLink *l)
{
    if (l->shm && l->shm_kick) {
        l->shm_kick = false;
        if (weft_shm_wake_consumer(&l->shm_tx)) {
            weft_shm_signal(l->shm_efd_switch);
        }
    }
}

int weft_link_xmit(WeftLink *l, const void *pkt, size_t len)
{
    if (!l->up) {
        return -ENOTCONN;
    }
    if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME) {
        /* The core never builds such a packet; refuse rather than send it. */
        return -ENOTCONN;
    }
    if (l->shm) {
        return weft_shm_xmit(l, pkt, len);
    }
    if (!weft_tx_queue(l, pkt, len)) {
        weft_tx_flush(l);
        if (!weft_tx_queue(l, pkt, len)) {
            l->tx_blocked = true;
            trace_weft_link_tx_busy(l->tx_tail - l->tx_head);
            return -EAGAIN;
        }
    }
    return 0;
}

/* Watches the ring's eventfd in the link's context, or stops (NULL). */
static void weft_shm_watch(WeftLink *l, IOHandler *io_read, AioPollFn *poll,
                           IOHandler *poll_ready)
{
    if (l->ctx) {
        aio_set_fd_handler(l->ctx, l->shm_efd, io_read, NULL, poll,
                           poll_ready, l);
    } else {
        qemu_set_fd_handler(l->shm_efd, io_read, NULL, l);
    }
}

static void weft_shm_close(WeftLink *l)
{
    if (l->shm_lent) {
        /* The device copies what it keeps of the ring before it goes. */
        l->ops->unlend(l->opaque);
    }
    l->shm_held_head = l->shm_held_count = l->shm_lent = 0;
    l->shm_freed = false;
    if (l->shm_efd >= 0) {
        weft_shm_watch(l, NULL, NULL, NULL);
        close(l->shm_efd);
        l->shm_efd = -1;
    }
    if (l->shm_efd_switch >= 0) {
        close(l->shm_efd_switch);
        l->shm_efd_switch = -1;
    }
    if (l->shm) {
        munmap(l->shm, WEFT_SHM_SIZE);
        l->shm = NULL;
    }
    l->shm_kick = false;
}

static void weft_link_reset(WeftLink *l)
{
    /* Packets the core holds back for the link are dropped from now on. */
    l->ops->kick(l->opaque);
    weft_shm_close(l);
    if (l->tx_watch) {
        g_source_remove(l->tx_watch);
        l->tx_watch = 0;
    }
    l->tx_head = l->tx_tail = 0;
    l->tx_blocked = false;
    l->rx_len = 0;
    l->rx_throttled = false;
    if (l->up) {
        l->up = false;
        l->ops->set_up(l->opaque, false);
        trace_weft_link_down(l->node_id);
    }
}

static void weft_send_hello(WeftLink *l)
{
    struct weft_wire_hdr h;

    memset(&h, 0, sizeof(h));
    h.version = WEFT_WIRE_VERSION;
    h.type = WEFT_PKT_HELLO;
    h.src_node = cpu_to_le16(l->node_id);
    h.key = cpu_to_le32(WEFT_WIRE_HELLO_MAGIC);
    if (l->shm_want && !l->shm_failed &&
        qemu_chr_has_feature(qemu_chr_fe_get_driver(l->chr),
                             QEMU_CHAR_FEATURE_FD_PASS)) {
        h.flags = WEFT_WF_SHM_REQ;
    }
    if (l->has_token) {
        uint8_t pkt[WEFT_WIRE_HDR_SIZE + WEFT_WIRE_TOKEN_SIZE];

        h.length = cpu_to_le32(WEFT_WIRE_TOKEN_SIZE);
        memcpy(pkt, &h, sizeof(h));
        memcpy(pkt + sizeof(h), l->token, WEFT_WIRE_TOKEN_SIZE);
        weft_tx_queue(l, pkt, sizeof(pkt));
    } else {
        weft_tx_queue(l, &h, sizeof(h));
    }
    weft_tx_flush(l);
    trace_weft_link_hello(l->node_id);
}

/*
 * A protocol violation by the peer: drop the connection (the chardev
 * reconnects by itself when it has reconnect-ms).
 */
static void weft_link_abort(WeftLink *l, const char *why, uint64_t val)
{
    trace_weft_link_error(why, val);
    warn_report("weft: node %u: protocol error from the switch: %s (0x%"
                PRIx64 "); disconnecting", l->node_id, why, val);
    weft_link_reset(l);
    if (weft_chr_here(l)) {
        qemu_chr_fe_disconnect(l->chr);
    } else {
        l->disconnect = true;
    }
}

static void weft_shm_doorbell(void *opaque);
static bool weft_shm_poll(void *opaque);
static void weft_shm_poll_ready(void *opaque);

/*
 * Takes the descriptors that came with a HELLO_ACK granting shared memory
 * and maps the rings.  False (and the link is dropped) when the grant is
 * unusable, or missing with transport=shm.
 */
static bool weft_shm_open(WeftLink *l, bool granted)
{
    int fds[WEFT_SHM_NFDS];
    int n = qemu_chr_fe_get_msgfds(l->chr, fds, WEFT_SHM_NFDS);
    const char *why = NULL;
    struct stat st;
    int i;

    if (!granted) {
        for (i = 0; i < n; i++) {
            close(fds[i]);
        }
        if (l->shm_required) {
            warn_report("weft: node %u: transport=shm but the switch did not "
                        "grant shared memory", l->node_id);
            weft_link_abort(l, "no shared memory", 0);
            return false;
        }
        trace_weft_link_transport(l->node_id, "socket");
        return true;
    }
    if (n != WEFT_SHM_NFDS) {
        why = "descriptors missing";
    } else if (fstat(fds[0], &st) != 0 || st.st_size < WEFT_SHM_SIZE ||
               !(fcntl(fds[0], F_GET_SEALS) & F_SEAL_SHRINK)) {
        why = "memfd too small or not sealed against shrinking";
    } else {
        l->shm = mmap(NULL, WEFT_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                      fds[0], 0);
        if (l->shm == MAP_FAILED) {
            l->shm = NULL;
            why = "mmap failed";
        } else if (!weft_shm_hdr_ok(l->shm)) {
            why = "unknown ring header";
        }
    }
    for (i = 0; i < n; i++) {
        if (i == 0 || why) {
            close(fds[i]);
        }
    }
    if (why) {
        l->shm_failed = true;
        warn_report("weft: node %u: shared memory from the switch unusable "
                    "(%s); reconnecting over the socket alone",
                    l->node_id, why);
        weft_link_abort(l, why, n);
        return false;
    }
    l->shm_efd = fds[1];
    l->shm_efd_switch = fds[2];
    g_unix_set_fd_nonblocking(l->shm_efd, TRUE, NULL);
    g_unix_set_fd_nonblocking(l->shm_efd_switch, TRUE, NULL);
    weft_shm_view_init(&l->shm_rx, l->shm, WEFT_SHM_S2A_OFF, false);
    weft_shm_view_init(&l->shm_rd, l->shm, WEFT_SHM_S2A_OFF, false);
    weft_shm_view_init(&l->shm_tx, l->shm, WEFT_SHM_A2S_OFF, true);
    weft_shm_watch(l, weft_shm_doorbell, weft_shm_poll, weft_shm_poll_ready);
    trace_weft_link_transport(l->node_id, "shm");
    /* Frames the switch put in the ring before we mapped it. */
    l->ops->kick(l->opaque);
    return true;
}

/*
 * Handles one complete packet, whose header h the link looks at (a copy
 * when the packet lies in the switch's ring, shared; the core copies the
 * header before it checks it).  Returns as WeftLinkOps.receive.
 */
static int weft_rx_packet(WeftLink *l, const struct weft_wire_hdr *h,
                          const uint8_t *pkt, size_t len, bool shared)
{
    if (h->type == WEFT_PKT_HELLO_ACK) {
        uint16_t status = le16_to_cpu(h->status);

        if (l->up) {
            trace_weft_link_error("duplicate HELLO_ACK", status);
        } else if (status != WEFT_SW_OK) {
            trace_weft_link_refused(l->node_id, status);
            warn_report("weft: node %u: the switch refused the HELLO "
                        "(status %u)", l->node_id, status);
        } else if (weft_shm_open(l, h->flags & WEFT_WF_SHM)) {
            l->up = true;
            trace_weft_link_up(l->node_id);
            l->ops->set_up(l->opaque, true);
        }
        return 0;
    }
    if (!l->up || h->type == WEFT_PKT_HELLO) {
        trace_weft_link_error(l->up ? "HELLO from the switch"
                                         : "packet before HELLO_ACK",
                              h->type);
        return 0;
    }
    return l->ops->receive(l->opaque, pkt, len, shared);
}

/* Parses the complete frames in rxbuf. */
static void weft_rx_drain(WeftLink *l)
{
    size_t off = 0;

    while (l->rx_len - off >= WEFT_WIRE_LEN_PREFIX) {
        uint32_t len = ldl_le_p(l->rxbuf + off);

        if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME) {
            weft_link_abort(l, "bad frame length", len);
            return;
        }
        if (l->rx_len - off < WEFT_WIRE_LEN_PREFIX + len) {
            break;
        }
        const uint8_t *pkt = l->rxbuf + off + WEFT_WIRE_LEN_PREFIX;

        if (weft_rx_packet(l, (const void *)pkt, pkt, len, false) < 0) {
            break;
        }
        if (!l->rx_len) {
            /* The packet made the link go down: rxbuf was emptied. */
            return;
        }
        off += WEFT_WIRE_LEN_PREFIX + len;
    }
    if (off) {
        memmove(l->rxbuf, l->rxbuf + off, l->rx_len - off);
        l->rx_len -= off;
    }
}

/* Consumes the records at the front of shm_held that are done. */
static void weft_shm_held_pop(WeftLink *l)
{
    while (l->shm_held_count) {
        uint32_t e = l->shm_held[l->shm_held_head];

        if (!(e & WEFT_SHM_HELD_DONE)) {
            break;
        }
        weft_shm_consume(&l->shm_rx, e & ~WEFT_SHM_HELD_DONE);
        l->shm_held_head = (l->shm_held_head + 1) % WEFT_SHM_HELD_MAX;
        l->shm_held_count--;
        l->shm_freed = true;
    }
}

/* Wakes the switch if it waits for room and records were consumed. */
static void weft_shm_rx_wake(WeftLink *l)
{
    if (l->shm && l->shm_freed) {
        l->shm_freed = false;
        if (weft_shm_wake_producer(&l->shm_rx)) {
            weft_shm_signal(l->shm_efd_switch);
        }
    }
}

void weft_link_release(WeftLink *l, const uint8_t *pkt)
{
    uint32_t i;

    if (!l->shm || !l->shm_lent) {
        trace_weft_link_error("release of a packet not kept", 0);
        return;
    }
    /* The oldest entry kept: the ones before it are consumed already. */
    for (i = 0; i < l->shm_held_count; i++) {
        uint32_t *e = &l->shm_held[(l->shm_held_head + i) % WEFT_SHM_HELD_MAX];

        if (!(*e & WEFT_SHM_HELD_DONE)) {
            *e |= WEFT_SHM_HELD_DONE;
            break;
        }
    }
    l->shm_lent--;
    weft_shm_held_pop(l);
}

/*
 * Hands the frames in the switch's ring to the core until the ring is
 * empty (then the consumer sleeps: the switch writes the eventfd for the
 * next frame), the core is full (the next run of the adapter goes on) or
 * too many records are held.  The core copies a frame's header straight
 * from the ring and keeps the record for its payload, or copies it whole;
 * the link decides on a copy of the header.
 */
static void weft_shm_rx_drain(WeftLink *l)
{
    struct weft_wire_hdr h;
    const uint8_t *pkt;
    uint32_t rec;
    int len, r;

    while (l->shm && l->shm_held_count < WEFT_SHM_HELD_MAX) {
        len = weft_shm_peek_ref(&l->shm_rd, &pkt, &rec);
        if (len < 0) {
            weft_link_abort(l, "impossible shared-memory ring index", len);
            return;
        }
        if (len == 0) {
            if (weft_shm_consumer_sleep(&l->shm_rd)) {
                break;
            }
            continue;
        }
        memcpy(&h, pkt, sizeof(h));
        r = weft_rx_packet(l, &h, pkt, len, true);
        if (r < 0) {
            break;
        }
        l->shm_rd.pos += rec;
        if (r == 0 && !l->shm_held_count) {
            weft_shm_consume(&l->shm_rx, rec);
            l->shm_freed = true;
            continue;
        }
        l->shm_held[(l->shm_held_head + l->shm_held_count) %
                    WEFT_SHM_HELD_MAX] = rec | (r ? 0 : WEFT_SHM_HELD_DONE);
        l->shm_held_count++;
        l->shm_lent += r;
    }
    weft_shm_rx_wake(l);
}

/*
 * Room for more bytes only while the core accepts packets and no
 * complete frame is waiting for it.
 */
static int weft_chr_can_read(void *opaque)
{
    WeftLink *l = opaque;

    QEMU_LOCK_GUARD(l->lock);
    if (!l->ops->can_receive(l->opaque)) {
        l->rx_throttled = true;
        return 0;
    }
    if (l->rx_len >= WEFT_WIRE_LEN_PREFIX) {
        uint32_t len = ldl_le_p(l->rxbuf);

        if (len <= WEFT_WIRE_MAX_FRAME &&
            l->rx_len >= WEFT_WIRE_LEN_PREFIX + len) {
            l->rx_throttled = true;
            return 0;
        }
    }
    return WEFT_RXBUF_SIZE - l->rx_len;
}

/*
 * Queues the frames of one chardev read; the device runs the adapter on
 * them at once, in this callback, instead of in a bottom half.
 */
static void weft_chr_read(void *opaque, const uint8_t *buf, int size)
{
    WeftLink *l = opaque;

    QEMU_LOCK_GUARD(l->lock);
    if ((size_t)size > WEFT_RXBUF_SIZE - l->rx_len) {
        weft_link_abort(l, "receive buffer overrun", size);
        return;
    }
    memcpy(l->rxbuf + l->rx_len, buf, size);
    l->rx_len += size;
    l->ops->input(l->opaque);
}

/* The switch published frames, or took some while we waited for room. */
static void weft_shm_doorbell(void *opaque)
{
    WeftLink *l = opaque;
    uint64_t cnt;

    QEMU_LOCK_GUARD(l->lock);
    if (!l->shm) {
        /* Closed while this handler waited for the lock. */
        return;
    }
    if (read(l->shm_efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN) {
        trace_weft_link_error("eventfd read", errno);
    }
    l->tx_blocked = false;
    l->ops->input(l->opaque);
}

/*
 * The IOThread's busy poll (AioContext polling, between its sleeps on
 * the eventfd): true when the switch published a frame that the device
 * can take now.
 */
static bool weft_shm_poll(void *opaque)
{
    WeftLink *l = opaque;

    QEMU_LOCK_GUARD(l->lock);
    return l->shm &&
           qatomic_load_acquire(&l->shm_rd.ctl->head) != l->shm_rd.pos &&
           l->shm_held_count < WEFT_SHM_HELD_MAX &&
           l->ops->can_receive(l->opaque);
}

static void weft_shm_poll_ready(void *opaque)
{
    WeftLink *l = opaque;

    QEMU_LOCK_GUARD(l->lock);
    if (l->shm) {
        l->ops->input(l->opaque);
    }
}

static void weft_chr_event(void *opaque, QEMUChrEvent event)
{
    WeftLink *l = opaque;

    QEMU_LOCK_GUARD(l->lock);
    switch (event) {
    case CHR_EVENT_OPENED:
        weft_link_reset(l);
        l->connected = true;
        trace_weft_link_connected(l->node_id);
        weft_send_hello(l);
        break;
    case CHR_EVENT_CLOSED:
        l->connected = false;
        weft_link_reset(l);
        trace_weft_link_closed(l->node_id);
        break;
    default:
        break;
    }
}

/* ---- Calls from the device ------------------------------------------------ */

void weft_link_deliver(WeftLink *l)
{
    if (l->rx_len && weft_chr_here(l)) {
        weft_rx_drain(l);
    }
    weft_shm_rx_drain(l);
}

void weft_link_flush(WeftLink *l)
{
    weft_tx_flush(l);
    weft_shm_flush(l);
    weft_link_deliver(l);
    weft_shm_rx_wake(l);
    if (l->rx_throttled && l->connected && l->ops->can_receive(l->opaque) &&
        weft_chr_here(l)) {
        l->rx_throttled = false;
        qemu_chr_fe_accept_input(l->chr);
    }
}

/*
 * With an IOThread: the chardev work it handed over, in the main loop.
 * The frames read from the socket go to the device's input, which runs
 * the adapter on them here.
 */
static void weft_link_chr_bh(void *opaque)
{
    WeftLink *l = opaque;

    QEMU_LOCK_GUARD(l->lock);
    if (l->disconnect) {
        l->disconnect = false;
        qemu_chr_fe_disconnect(l->chr);
        return;
    }
    weft_tx_flush(l);
    if (l->tx_blocked && l->tx_tail - l->tx_head < WEFT_TXBUF_SIZE / 2) {
        l->tx_blocked = false;
        l->ops->kick(l->opaque);
    }
    if (l->rx_len) {
        l->ops->input(l->opaque);
    }
    if (l->rx_throttled && l->connected && l->ops->can_receive(l->opaque)) {
        l->rx_throttled = false;
        qemu_chr_fe_accept_input(l->chr);
    }
}

bool weft_link_tx_blocked(const WeftLink *l)
{
    return l->tx_blocked;
}

bool weft_link_is_up(const WeftLink *l)
{
    return l->up;
}

void weft_link_init(WeftLink *l, CharBackend *chr, uint16_t node_id,
                    const uint8_t *token, WeftLinkTransport transport,
                    QemuRecMutex *lock, AioContext *ctx,
                    const WeftLinkOps *ops, void *opaque)
{
    l->chr = chr;
    l->lock = lock;
    l->ctx = ctx;
    if (ctx) {
        l->chr_bh = qemu_bh_new(weft_link_chr_bh, l);
    }
    l->node_id = node_id;
    l->ops = ops;
    l->opaque = opaque;
    if (token) {
        memcpy(l->token, token, WEFT_WIRE_TOKEN_SIZE);
        l->has_token = true;
    }
    l->shm_want = transport != WEFT_LINK_SOCKET;
    l->shm_required = transport == WEFT_LINK_SHM;
    l->shm_efd = l->shm_efd_switch = -1;
    l->txbuf = g_malloc(WEFT_TXBUF_SIZE);
    l->rxbuf = g_malloc(WEFT_RXBUF_SIZE);
    l->shm_held = g_new(uint32_t, WEFT_SHM_HELD_MAX);
    if (qemu_chr_fe_backend_connected(chr)) {
        qemu_chr_fe_set_handlers(chr, weft_chr_can_read, weft_chr_read,
                                 weft_chr_event, NULL, l, NULL, true);
    }
}

void weft_link_fini(WeftLink *l)
{
    qemu_chr_fe_deinit(l->chr, false);
    QEMU_LOCK_GUARD(l->lock);
    weft_shm_close(l);
    memset(l->token, 0, sizeof(l->token));
    l->has_token = false;
    if (l->tx_watch) {
        g_source_remove(l->tx_watch);
        l->tx_watch = 0;
    }
    g_free(l->txbuf);
    g_free(l->rxbuf);
    l->txbuf = l->rxbuf = NULL;
    g_free(l->shm_held);
    l->shm_held = NULL;
    if (l->chr_bh) {
        qemu_bh_delete(l->chr_bh);
        l->chr_bh = NULL;
    }
}
