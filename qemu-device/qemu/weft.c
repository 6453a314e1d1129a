/*
 * Weft RDMA switch adapter: the QEMU PCI device.
 *
 * This file is the QOM/PCI wrapper around the QEMU-free adapter model in
 * core/ (as hw/net/e1000e.c wraps e1000e_core.c): it maps the BARs onto
 * the core's MMIO entry points, gives the core guest memory, MSI-X and a
 * main-loop bottom half that runs its tasks, and carries the core's
 * packets to weft-switch over a character device.
 *
 * Link protocol (include/weft/wire.h): every frame is a 4-byte
 * little-endian length and a packet.  On connect the device sends HELLO
 * and reports the link up only when the switch answers HELLO_ACK with
 * status 0.  The chardev's reconnect-ms option brings the link back after
 * the switch restarts; while it is down the core counts what it drops.
 *
 * Shared memory (weft-host/shm.h, the "transport" property): the
 * HELLO asks for it, and when the HELLO_ACK grants it (a memfd and two
 * eventfds come with it) data frames go through two rings in the memfd
 * instead of the socket; an fd handler on the device's eventfd drains
 * the ring into the core, many frames per wake-up.
 *
 * SPDX-License-Identifier: MIT
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "chardev/char-fe.h"
#include "crypto/secret_common.h"
#include "exec/memory.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "hw/resettable.h"
#include "migration/blocker.h"
#include "trace.h"

#include <glib-unix.h>
#include <sys/mman.h>

#include "weft_core.h"
#include "weft/names.h"
#include "weft-host/shm.h"

#define TYPE_WEFT "weft"
OBJECT_DECLARE_SIMPLE_TYPE(WeftState, WEFT)

/*
 * Packets or commands per bottom-half run: bounds the time one main-loop
 * iteration spends in the adapter.
 */
#define WEFT_POLL_BUDGET        64
/* Bytes of frames waiting for the socket before xmit answers -EAGAIN. */
#define WEFT_TXBUF_SIZE         (64 * 1024)
/* Reassembly buffer for frames from the switch. */
#define WEFT_RXBUF_SIZE         (16 * 1024)
#define WEFT_WIRE_FRAME_MAX     (WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_MAX_FRAME)

QEMU_BUILD_BUG_ON(WEFT_RXBUF_SIZE < 2 * WEFT_WIRE_FRAME_MAX);
QEMU_BUILD_BUG_ON(WEFT_TXBUF_SIZE < 2 * WEFT_WIRE_FRAME_MAX);

struct WeftState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion sram;
    MemoryRegion db;

    struct weft_core *core;
    QEMUBH *poll_bh;
    /*
     * poll_bh is scheduled, or the adapter is being run inline
     * (weft_chr_read): a kick needs no new schedule.  Every
     * qemu_bh_schedule() notifies the AioContext, an eventfd write,
     * which was the largest single cost per received frame.
     */
    bool poll_pending;
    bool kicked;            /* the core asked for a poll since the last one */
    /*
     * weft_chr_can_read refused input: the chardev must be told when room
     * is back.  qemu_chr_fe_accept_input() notifies the main loop (an
     * eventfd write), so it is called only then.
     */
    bool rx_throttled;
    QEMUTimer *timer;       /* the core's one timer (verbs transport) */
    Error *migration_blocker;

    /* Properties */
    uint32_t node_id;
    uint32_t nr_windows;
    uint32_t nr_rcxt;
    uint32_t nr_handlers;
    uint32_t verbs_qps, verbs_cqs, verbs_pds, verbs_tpt, verbs_uars;
    uint32_t rx_overlap;
    char *token_secret;     /* id of a secret object holding the node token */
    CharBackend chr;
    char *epoch_file;       /* the adapter's non-volatile key epoch */
    char *transport;        /* auto, shm or socket */

    /* The node's token for the switch (HELLO payload), if any. */
    bool has_token;
    uint8_t token[WEFT_WIRE_TOKEN_SIZE];

    /* Link to weft-switch */
    bool connected;         /* the chardev is open */
    bool link_up;           /* HELLO_ACK received */
    bool tx_blocked;        /* xmit answered -EAGAIN: poll on writability */
    guint tx_watch;
    uint8_t *txbuf;
    size_t tx_head;         /* first unsent byte */
    size_t tx_tail;         /* end of queued bytes */
    uint8_t *rxbuf;
    size_t rx_len;

    /* Shared-memory transport (weft-host/shm.h) */
    bool shm_want;          /* ask for it in the HELLO */
    bool shm_required;      /* transport=shm: no link without it */
    bool shm_failed;        /* the last grant was unusable: ask no more */
    void *shm;              /* the mapped memfd, NULL: the socket is used */
    struct weft_shm_view shm_rx;    /* switch -> adapter, consumed here */
    struct weft_shm_view shm_tx;    /* adapter -> switch, produced here */
    int shm_efd;            /* wakes the device */
    int shm_efd_switch;     /* wakes the switch */
    bool shm_kick;          /* published since the switch was last woken */
    uint8_t *shm_pkt;       /* a frame copied out of the ring */
};

/* ---- Guest memory -------------------------------------------------------- */

/*
 * True when every byte of [addr, addr + len) is guest RAM (and writable
 * RAM for a write) in the device's bus-master address space.  The core
 * relies on "nothing is written" when a range is refused, and DMA must
 * never reach MMIO (our own BARs included).
 */
static bool weft_dma_is_ram(WeftState *s, uint64_t addr, size_t len,
                            bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));

    if (len == 0) {
        return true;
    }
    if (addr + len - 1 < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &l,
                                                   is_write,
                                                   MEMTXATTRS_UNSPECIFIED);

        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (is_write && mr->readonly) || l == 0) {
            return false;
        }
        addr += l;
        len -= l;
    }
    return true;
}

static int weft_op_dma_read(void *opaque, uint64_t addr, void *buf,
                            size_t len)
{
    WeftState *s = opaque;

    if (!weft_dma_is_ram(s, addr, len, false) ||
        pci_dma_read(PCI_DEVICE(s), addr, buf, len) != MEMTX_OK) {
        trace_weft_dma_error("read", addr, len);
        return -1;
    }
    trace_weft_dma_read(addr, len);
    return 0;
}

static int weft_op_dma_write(void *opaque, uint64_t addr, const void *buf,
                             size_t len)
{
    WeftState *s = opaque;

    if (!weft_dma_is_ram(s, addr, len, true) ||
        pci_dma_write(PCI_DEVICE(s), addr, buf, len) != MEMTX_OK) {
        trace_weft_dma_error("write", addr, len);
        return -1;
    }
    trace_weft_dma_write(addr, len);
    return 0;
}

static void weft_op_irq(void *opaque, unsigned int vector)
{
    WeftState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);

    if (vector >= s->nr_handlers) {
        trace_weft_irq_dropped(vector, "no such MSI-X vector");
        return;
    }
    if (!msix_enabled(pdev)) {
        trace_weft_irq_dropped(vector, "MSI-X disabled");
        return;
    }
    trace_weft_irq(vector);
    msix_notify(pdev, vector);
}

static uint64_t weft_op_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void weft_schedule_poll(WeftState *s)
{
    if (!s->poll_pending) {
        s->poll_pending = true;
        qemu_bh_schedule(s->poll_bh);
    }
}

static void weft_op_kick(void *opaque)
{
    WeftState *s = opaque;

    s->kicked = true;
    weft_schedule_poll(s);
}

/* ---- Observability ------------------------------------------------------- */

static void weft_trace_pkt(enum weft_trace_kind kind,
                           const struct weft_wire_hdr *h, size_t len,
                           unsigned int reason)
{
    const char *type = h ? weft_pkt_type_name(h->type) : "-";
    unsigned int src = h ? le16_to_cpu(h->src_node) : 0;
    unsigned int dst = h ? le16_to_cpu(h->dst_node) : 0;
    unsigned int win = h ? le16_to_cpu(h->dst_window) : 0;

    if (h && h->type == WEFT_PKT_VERBS &&
        le32_to_cpu(h->length) >= sizeof(struct weft_vhdr)) {
        struct weft_vhdr v;

        /* The transport header follows the wire header in the packet. */
        memcpy(&v, h + 1, sizeof(v));
        switch (kind) {
        case WEFT_TR_PKT_TX:
            trace_weft_verbs_pkt_tx(weft_vop_name(v.opcode), src, dst,
                                    le32_to_cpu(v.dst_qpn), le32_to_cpu(v.psn),
                                    v.flags, len);
            break;
        case WEFT_TR_PKT_RX:
            trace_weft_verbs_pkt_rx(weft_vop_name(v.opcode), src, dst,
                                    le32_to_cpu(v.dst_qpn), le32_to_cpu(v.psn),
                                    v.flags, len);
            break;
        default:
            trace_weft_verbs_pkt_drop(weft_vop_name(v.opcode), src, dst,
                                      le32_to_cpu(v.dst_qpn),
                                      le32_to_cpu(v.psn),
                                      weft_reason_name(reason),
                                      weft_reason_text(reason));
            break;
        }
        return;
    }
    switch (kind) {
    case WEFT_TR_PKT_TX:
        trace_weft_pkt_tx(type, src, dst, win, len);
        break;
    case WEFT_TR_PKT_RX:
        trace_weft_pkt_rx(type, src, dst, win, len);
        break;
    default:
        trace_weft_pkt_drop(type, src, dst, win, weft_reason_name(reason),
                            weft_reason_text(reason));
        break;
    }
}

static void weft_op_trace(void *opaque, const struct weft_trace *ev)
{
    const char *name = ev->name ? ev->name : "-";

    switch (ev->kind) {
    case WEFT_TR_REG_READ:
        trace_weft_reg_read(name, ev->addr, ev->val, ev->size);
        break;
    case WEFT_TR_REG_WRITE:
        trace_weft_reg_write(name, ev->addr, ev->val, ev->size);
        break;
    case WEFT_TR_SRAM_READ:
        trace_weft_sram_read(name, ev->addr, ev->val, ev->size);
        break;
    case WEFT_TR_SRAM_WRITE:
        trace_weft_sram_write(name, ev->addr, ev->val, ev->size);
        break;
    case WEFT_TR_DB_READ:
        trace_weft_db_read(ev->window, name, ev->addr, ev->val);
        break;
    case WEFT_TR_DB_WRITE:
        if (ev->addr >= (uint64_t)WEFT_MAX_WINDOWS * WEFT_DB_PAGE_SIZE) {
            trace_weft_uar_write(ev->window, name, ev->addr, ev->val);
        } else {
            trace_weft_db_write(ev->window, name, ev->addr, ev->val);
        }
        break;
    case WEFT_TR_PKT_TX:
    case WEFT_TR_PKT_RX:
    case WEFT_TR_PKT_DROP:
        weft_trace_pkt(ev->kind, ev->hdr, ev->len, ev->reason);
        break;
    case WEFT_TR_CMD:
        /*
         * size carries the CMD_STATUS value; msg is set when the command
         * or doorbell was refused or discarded, which is guest misuse.
         */
        trace_weft_cmd(name, ev->window, ev->val, ev->size,
                       weft_reason_name(ev->reason));
        if (ev->msg) {
            trace_weft_guest_error(ev->msg);
            qemu_log_mask(LOG_GUEST_ERROR, "weft: %s: %s (data 0x%" PRIx64
                          ", window %u, status %u, %s)\n", name, ev->msg,
                          ev->val, ev->window, ev->size,
                          weft_reason_text(ev->reason));
        }
        break;
    case WEFT_TR_IRQ:
        /* weft_op_irq traces the delivery itself. */
        break;
    case WEFT_TR_EVENT:
        trace_weft_event(ev->val, ev->window, weft_reason_name(ev->reason));
        break;
    case WEFT_TR_WINDOW_FATAL:
        trace_weft_window_fatal(ev->window, weft_reason_name(ev->reason),
                                ev->val);
        break;
    case WEFT_TR_GUEST_ERROR:
        trace_weft_guest_error(ev->msg ? ev->msg : name);
        qemu_log_mask(LOG_GUEST_ERROR, "weft: %s\n",
                      ev->msg ? ev->msg : name);
        break;
    }
}

/* ---- Link to weft-switch ------------------------------------------------- */

static void weft_tx_flush(WeftState *s);

static gboolean weft_tx_writable(void *do_not_use, GIOCondition cond,
                                 void *opaque)
{
    WeftState *s = opaque;

    s->tx_watch = 0;
    weft_tx_flush(s);
    if (s->tx_blocked && s->tx_tail - s->tx_head < WEFT_TXBUF_SIZE / 2) {
        s->tx_blocked = false;
        weft_schedule_poll(s);
    }
    return G_SOURCE_REMOVE;
}

/* Writes what the socket takes; waits for writability for the rest. */
static void weft_tx_flush(WeftState *s)
{
    while (s->tx_head < s->tx_tail) {
        int n = qemu_chr_fe_write(&s->chr, s->txbuf + s->tx_head,
                                  s->tx_tail - s->tx_head);
        if (n <= 0) {
            break;
        }
        s->tx_head += n;
    }
    if (s->tx_head == s->tx_tail) {
        s->tx_head = s->tx_tail = 0;
        return;
    }
    if (!s->tx_watch && s->connected) {
        s->tx_watch = qemu_chr_fe_add_watch(&s->chr, G_IO_OUT | G_IO_HUP,
                                            weft_tx_writable, s);
    }
}

/* Queues one frame (length prefix + packet); false when it does not fit. */
static bool weft_tx_queue(WeftState *s, const void *pkt, size_t len)
{
    size_t need = WEFT_WIRE_LEN_PREFIX + len;

    if (s->tx_tail + need > WEFT_TXBUF_SIZE && s->tx_head) {
        memmove(s->txbuf, s->txbuf + s->tx_head, s->tx_tail - s->tx_head);
        s->tx_tail -= s->tx_head;
        s->tx_head = 0;
    }
    if (s->tx_tail + need > WEFT_TXBUF_SIZE) {
        return false;
    }
    stl_le_p(s->txbuf + s->tx_tail, len);
    memcpy(s->txbuf + s->tx_tail + WEFT_WIRE_LEN_PREFIX, pkt, len);
    s->tx_tail += need;
    return true;
}

static void weft_link_abort(WeftState *s, const char *why, uint64_t val);

static void weft_shm_signal(int fd)
{
    uint64_t one = 1;

    if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        trace_weft_link_error("eventfd write", errno);
    }
}

static int weft_shm_xmit(WeftState *s, const void *pkt, size_t len)
{
    for (;;) {
        int r = weft_shm_push(&s->shm_tx, pkt, len);

        if (r == 0) {
            s->shm_kick = true;
            return 0;
        }
        if (r != -EAGAIN) {
            weft_link_abort(s, "impossible shared-memory ring index", r);
            return -ENOTCONN;
        }
        if (weft_shm_producer_wait(&s->shm_tx, len)) {
            /* The switch writes our eventfd once it has taken frames. */
            s->tx_blocked = true;
            trace_weft_link_tx_busy(WEFT_SHM_RING_SIZE);
            return -EAGAIN;
        }
    }
}

/* Wakes the switch if it sleeps and frames were published since. */
static void weft_shm_flush(WeftState *s)
{
    if (s->shm && s->shm_kick) {
        s->shm_kick = false;
        if (weft_shm_wake_consumer(&s->shm_tx)) {
            weft_shm_signal(s->shm_efd_switch);
        }
    }
}

static int weft_op_xmit(void *opaque, const void *pkt, size_t len)
{
    WeftState *s = opaque;

    if (!s->link_up) {
        return -ENOTCONN;
    }
    if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME) {
        /* The core never builds such a packet; refuse rather than send it. */
        return -ENOTCONN;
    }
    if (s->shm) {
        return weft_shm_xmit(s, pkt, len);
    }
    if (!weft_tx_queue(s, pkt, len)) {
        weft_tx_flush(s);
        if (!weft_tx_queue(s, pkt, len)) {
            s->tx_blocked = true;
            trace_weft_link_tx_busy(s->tx_tail - s->tx_head);
            return -EAGAIN;
        }
    }
    return 0;
}

static void weft_shm_close(WeftState *s)
{
    if (s->shm_efd >= 0) {
        qemu_set_fd_handler(s->shm_efd, NULL, NULL, NULL);
        close(s->shm_efd);
        s->shm_efd = -1;
    }
    if (s->shm_efd_switch >= 0) {
        close(s->shm_efd_switch);
        s->shm_efd_switch = -1;
    }
    if (s->shm) {
        munmap(s->shm, WEFT_SHM_SIZE);
        s->shm = NULL;
    }
    s->shm_kick = false;
}

static void weft_link_reset(WeftState *s)
{
    /* Packets the core holds back for the link are dropped from now on. */
    weft_schedule_poll(s);
    weft_shm_close(s);
    if (s->tx_watch) {
        g_source_remove(s->tx_watch);
        s->tx_watch = 0;
    }
    s->tx_head = s->tx_tail = 0;
    s->tx_blocked = false;
    s->rx_len = 0;
    s->rx_throttled = false;
    if (s->link_up) {
        s->link_up = false;
        weft_core_set_link(s->core, false);
        trace_weft_link_down(s->node_id);
    }
}

static void weft_send_hello(WeftState *s)
{
    struct weft_wire_hdr h;

    memset(&h, 0, sizeof(h));
    h.version = WEFT_WIRE_VERSION;
    h.type = WEFT_PKT_HELLO;
    h.src_node = cpu_to_le16(s->node_id);
    h.key = cpu_to_le32(WEFT_WIRE_HELLO_MAGIC);
    if (s->shm_want && !s->shm_failed &&
        qemu_chr_has_feature(qemu_chr_fe_get_driver(&s->chr),
                             QEMU_CHAR_FEATURE_FD_PASS)) {
        h.flags = WEFT_WF_SHM_REQ;
    }
    if (s->has_token) {
        uint8_t pkt[WEFT_WIRE_HDR_SIZE + WEFT_WIRE_TOKEN_SIZE];

        h.length = cpu_to_le32(WEFT_WIRE_TOKEN_SIZE);
        memcpy(pkt, &h, sizeof(h));
        memcpy(pkt + sizeof(h), s->token, WEFT_WIRE_TOKEN_SIZE);
        weft_tx_queue(s, pkt, sizeof(pkt));
    } else {
        weft_tx_queue(s, &h, sizeof(h));
    }
    weft_tx_flush(s);
    trace_weft_link_hello(s->node_id);
}

/*
 * A protocol violation by the peer: drop the connection (the chardev
 * reconnects by itself when it has reconnect-ms).
 */
static void weft_link_abort(WeftState *s, const char *why, uint64_t val)
{
    trace_weft_link_error(why, val);
    warn_report("weft: node %u: protocol error from the switch: %s (0x%"
                PRIx64 "); disconnecting", s->node_id, why, val);
    weft_link_reset(s);
    qemu_chr_fe_disconnect(&s->chr);
}

static void weft_shm_doorbell(void *opaque);

/*
 * Takes the descriptors that came with a HELLO_ACK granting shared memory
 * and maps the rings.  False (and the link is dropped) when the grant is
 * unusable, or missing with transport=shm.
 */
static bool weft_shm_open(WeftState *s, bool granted)
{
    int fds[WEFT_SHM_NFDS];
    int n = qemu_chr_fe_get_msgfds(&s->chr, fds, WEFT_SHM_NFDS);
    const char *why = NULL;
    struct stat st;
    int i;

    if (!granted) {
        for (i = 0; i < n; i++) {
            close(fds[i]);
        }
        if (s->shm_required) {
            warn_report("weft: node %u: transport=shm but the switch did not "
                        "grant shared memory", s->node_id);
            weft_link_abort(s, "no shared memory", 0);
            return false;
        }
        trace_weft_link_transport(s->node_id, "socket");
        return true;
    }
    if (n != WEFT_SHM_NFDS) {
        why = "descriptors missing";
    } else if (fstat(fds[0], &st) != 0 || st.st_size < WEFT_SHM_SIZE ||
               !(fcntl(fds[0], F_GET_SEALS) & F_SEAL_SHRINK)) {
        why = "memfd too small or not sealed against shrinking";
    } else {
        s->shm = mmap(NULL, WEFT_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                      fds[0], 0);
        if (s->shm == MAP_FAILED) {
            s->shm = NULL;
            why = "mmap failed";
        } else if (!weft_shm_hdr_ok(s->shm)) {
            why = "unknown ring header";
        }
    }
    for (i = 0; i < n; i++) {
        if (i == 0 || why) {
            close(fds[i]);
        }
    }
    if (why) {
        s->shm_failed = true;
        warn_report("weft: node %u: shared memory from the switch unusable "
                    "(%s); reconnecting over the socket alone",
                    s->node_id, why);
        weft_link_abort(s, why, n);
        return false;
    }
    s->shm_efd = fds[1];
    s->shm_efd_switch = fds[2];
    g_unix_set_fd_nonblocking(s->shm_efd, TRUE, NULL);
    g_unix_set_fd_nonblocking(s->shm_efd_switch, TRUE, NULL);
    weft_shm_view_init(&s->shm_rx, s->shm, WEFT_SHM_S2A_OFF, false);
    weft_shm_view_init(&s->shm_tx, s->shm, WEFT_SHM_A2S_OFF, true);
    qemu_set_fd_handler(s->shm_efd, weft_shm_doorbell, NULL, s);
    trace_weft_link_transport(s->node_id, "shm");
    /* Frames the switch put in the ring before we mapped it. */
    weft_schedule_poll(s);
    return true;
}

/*
 * Handles one complete packet; false when the core's queue is full and
 * the packet has to be offered again later.
 */
static bool weft_rx_packet(WeftState *s, const uint8_t *pkt, size_t len)
{
    const struct weft_wire_hdr *h = (const void *)pkt;

    if (h->type == WEFT_PKT_HELLO_ACK) {
        uint16_t status = le16_to_cpu(h->status);

        if (s->link_up) {
            trace_weft_link_error("duplicate HELLO_ACK", status);
        } else if (status != WEFT_SW_OK) {
            trace_weft_link_refused(s->node_id, status);
            warn_report("weft: node %u: the switch refused the HELLO "
                        "(status %u)", s->node_id, status);
        } else if (weft_shm_open(s, h->flags & WEFT_WF_SHM)) {
            s->link_up = true;
            trace_weft_link_up(s->node_id);
            weft_core_set_link(s->core, true);
        }
        return true;
    }
    if (!s->link_up || h->type == WEFT_PKT_HELLO) {
        trace_weft_link_error(s->link_up ? "HELLO from the switch"
                                         : "packet before HELLO_ACK",
                              h->type);
        return true;
    }
    return weft_core_receive(s->core, pkt, len) != -EAGAIN;
}

/* Parses the complete frames in rxbuf. */
static void weft_rx_drain(WeftState *s)
{
    size_t off = 0;

    while (s->rx_len - off >= WEFT_WIRE_LEN_PREFIX) {
        uint32_t len = ldl_le_p(s->rxbuf + off);

        if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME) {
            weft_link_abort(s, "bad frame length", len);
            return;
        }
        if (s->rx_len - off < WEFT_WIRE_LEN_PREFIX + len) {
            break;
        }
        if (!weft_rx_packet(s, s->rxbuf + off + WEFT_WIRE_LEN_PREFIX, len)) {
            break;
        }
        if (!s->rx_len) {
            /* The packet made the link go down: rxbuf was emptied. */
            return;
        }
        off += WEFT_WIRE_LEN_PREFIX + len;
    }
    if (off) {
        memmove(s->rxbuf, s->rxbuf + off, s->rx_len - off);
        s->rx_len -= off;
    }
}

/*
 * Hands the frames in the switch's ring to the core until the ring is
 * empty (then the consumer sleeps: the switch writes the eventfd for the
 * next frame) or the core is full (the next run of the adapter goes on).
 */
static void weft_shm_rx_drain(WeftState *s)
{
    bool took = false;
    uint32_t rec;
    int len;

    while (s->shm) {
        len = weft_shm_peek(&s->shm_rx, s->shm_pkt, &rec);
        if (len < 0) {
            weft_link_abort(s, "impossible shared-memory ring index", len);
            return;
        }
        if (len == 0) {
            if (weft_shm_consumer_sleep(&s->shm_rx)) {
                break;
            }
            continue;
        }
        if (!weft_rx_packet(s, s->shm_pkt, len)) {
            break;
        }
        weft_shm_consume(&s->shm_rx, rec);
        took = true;
    }
    if (s->shm && took && weft_shm_wake_producer(&s->shm_rx)) {
        weft_shm_signal(s->shm_efd_switch);
    }
}

/*
 * Room for more bytes only while the core accepts packets and no
 * complete frame is waiting for it.
 */
static int weft_chr_can_read(void *opaque)
{
    WeftState *s = opaque;

    if (!weft_core_can_receive(s->core)) {
        s->rx_throttled = true;
        return 0;
    }
    if (s->rx_len >= WEFT_WIRE_LEN_PREFIX) {
        uint32_t len = ldl_le_p(s->rxbuf);

        if (len <= WEFT_WIRE_MAX_FRAME &&
            s->rx_len >= WEFT_WIRE_LEN_PREFIX + len) {
            s->rx_throttled = true;
            return 0;
        }
    }
    return WEFT_RXBUF_SIZE - s->rx_len;
}

static void weft_run_adapter(WeftState *s);

/*
 * Queues the frames of one chardev read and runs the adapter on them at
 * once, in this callback, instead of in a bottom half scheduled for it.
 */
static void weft_chr_read(void *opaque, const uint8_t *buf, int size)
{
    WeftState *s = opaque;
    size_t n = MIN((size_t)size, WEFT_RXBUF_SIZE - s->rx_len);
    bool pending = s->poll_pending;

    if (n < (size_t)size) {
        weft_link_abort(s, "receive buffer overrun", size);
        return;
    }
    memcpy(s->rxbuf + s->rx_len, buf, n);
    s->rx_len += n;
    s->poll_pending = true;
    weft_rx_drain(s);
    if (pending) {
        /* poll_bh is scheduled already and runs the adapter. */
        return;
    }
    weft_run_adapter(s);
}

/* The switch published frames, or took some while we waited for room. */
static void weft_shm_doorbell(void *opaque)
{
    WeftState *s = opaque;
    uint64_t cnt;
    bool pending = s->poll_pending;

    if (read(s->shm_efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN) {
        trace_weft_link_error("eventfd read", errno);
    }
    if (s->tx_blocked) {
        s->tx_blocked = false;
        s->kicked = true;
    }
    s->poll_pending = true;
    weft_shm_rx_drain(s);
    if (pending) {
        return;
    }
    weft_run_adapter(s);
}

static void weft_chr_event(void *opaque, QEMUChrEvent event)
{
    WeftState *s = opaque;

    switch (event) {
    case CHR_EVENT_OPENED:
        weft_link_reset(s);
        s->connected = true;
        trace_weft_link_connected(s->node_id);
        weft_send_hello(s);
        break;
    case CHR_EVENT_CLOSED:
        s->connected = false;
        weft_link_reset(s);
        trace_weft_link_closed(s->node_id);
        break;
    default:
        break;
    }
}

/* ---- Adapter tasks ------------------------------------------------------- */

/*
 * Runs one budget of adapter tasks with poll_pending set (kicks meanwhile
 * only note themselves) and schedules poll_bh if work is left or the core
 * kicked during the run.
 */
static void weft_run_adapter(WeftState *s)
{
    bool more;

    s->kicked = false;
    more = weft_core_poll(s->core, WEFT_POLL_BUDGET);
    weft_tx_flush(s);
    weft_shm_flush(s);
    if (s->rx_len) {
        weft_rx_drain(s);
    }
    weft_shm_rx_drain(s);
    if (s->rx_throttled && s->connected && weft_core_can_receive(s->core)) {
        s->rx_throttled = false;
        qemu_chr_fe_accept_input(&s->chr);
    }
    s->poll_pending = false;
    /* With the socket full, the writability watch restarts the polling. */
    if ((more && !s->tx_blocked) || s->kicked) {
        weft_schedule_poll(s);
    }
}

static void weft_poll_bh(void *opaque)
{
    WeftState *s = opaque;

    s->poll_pending = true;
    weft_run_adapter(s);
}

/* ---- MMIO ---------------------------------------------------------------- */

/*
 * One BAR region: MemoryRegionOps named weft_<name>_ops whose accessors
 * forward to the core's <fn>_read and <fn>_write.
 */
#define WEFT_MMIO_REGION(name, fn)                                          \
    static uint64_t weft_##name##_read(void *opaque, hwaddr addr,           \
                                       unsigned size)                       \
    {                                                                       \
        WeftState *s = opaque;                                              \
                                                                            \
        return fn##_read(s->core, addr, size);                              \
    }                                                                       \
                                                                            \
    static void weft_##name##_write(void *opaque, hwaddr addr, uint64_t val, \
                                    unsigned size)                          \
    {                                                                       \
        WeftState *s = opaque;                                              \
                                                                            \
        fn##_write(s->core, addr, val, size);                               \
    }                                                                       \
                                                                            \
    static const MemoryRegionOps weft_##name##_ops = {                      \
        .read = weft_##name##_read,                                         \
        .write = weft_##name##_write,                                       \
        .endianness = DEVICE_LITTLE_ENDIAN,                                 \
        .valid = { .min_access_size = 4, .max_access_size = 8 },            \
        .impl = { .min_access_size = 4, .max_access_size = 8 },             \
    }

WEFT_MMIO_REGION(regs, weft_core_reg);
WEFT_MMIO_REGION(sram, weft_core_sram);
WEFT_MMIO_REGION(db, weft_core_db);

/* ---- QOM ----------------------------------------------------------------- */

/* ---- Non-volatile key epoch (hw-spec 9) ------------------------------------ */

/* Stored in decimal in the epoch-file, replaced atomically. */
static int weft_op_epoch_store(void *opaque, uint64_t epoch)
{
    WeftState *s = opaque;
    g_autoptr(GError) gerr = NULL;
    g_autofree char *txt = NULL;

    if (!s->epoch_file) {
        return 0;
    }
    txt = g_strdup_printf("%" PRIu64 "\n", epoch);
    if (!g_file_set_contents(s->epoch_file, txt, -1, &gerr)) {
        error_report("weft: node %u: cannot store the key epoch in %s: %s",
                     s->node_id, s->epoch_file, gerr->message);
        return -1;
    }
    return 0;
}

/* The stored epoch, 0 when the file does not exist yet. */
static bool weft_epoch_load(WeftState *s, uint64_t *epoch, Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    g_autofree char *txt = NULL;
    const char *end;

    *epoch = 0;
    if (!s->epoch_file) {
        return true;
    }
    if (!g_file_get_contents(s->epoch_file, &txt, NULL, &gerr)) {
        if (g_error_matches(gerr, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
            return true;
        }
        error_setg(errp, "weft: epoch-file %s: %s", s->epoch_file, gerr->message);
        return false;
    }
    if (qemu_strtou64(txt, &end, 10, epoch) < 0 || (*end && *end != '\n')) {
        error_setg(errp, "weft: epoch-file %s does not hold a decimal epoch",
                   s->epoch_file);
        return false;
    }
    return true;
}

static void weft_op_timer_arm(void *opaque, uint64_t deadline)
{
    WeftState *s = opaque;

    if (deadline) {
        timer_mod(s->timer, deadline);
    } else {
        timer_del(s->timer);
    }
}

static void weft_timer_cb(void *opaque)
{
    WeftState *s = opaque;

    trace_weft_timer(qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    weft_core_timer(s->core);
    weft_schedule_poll(s);
}

static const struct weft_core_ops weft_core_ops = {
    .dma_read = weft_op_dma_read,
    .dma_write = weft_op_dma_write,
    .irq = weft_op_irq,
    .xmit = weft_op_xmit,
    .now_ns = weft_op_now_ns,
    .kick = weft_op_kick,
    .timer_arm = weft_op_timer_arm,
    .trace = weft_op_trace,
    .epoch_store = weft_op_epoch_store,
};

/*
 * The node token from the secret object named by token-secret: exactly
 * 2 * WEFT_WIRE_TOKEN_SIZE hex digits (a trailing newline is allowed).
 */
static bool weft_load_token(WeftState *s, Error **errp)
{
    g_autofree char *hex = NULL;
    size_t len, i;

    if (!s->token_secret) {
        return true;
    }
    hex = qcrypto_secret_lookup_as_utf8(s->token_secret, errp);
    if (!hex) {
        return false;
    }
    len = strlen(hex);
    if (len && hex[len - 1] == '\n') {
        len--;
    }
    if (len != 2 * WEFT_WIRE_TOKEN_SIZE) {
        error_setg(errp, "weft: the token in secret '%s' must be %u hex digits",
                   s->token_secret, 2 * WEFT_WIRE_TOKEN_SIZE);
        return false;
    }
    for (i = 0; i < WEFT_WIRE_TOKEN_SIZE; i++) {
        int hi = g_ascii_xdigit_value(hex[2 * i]);
        int lo = g_ascii_xdigit_value(hex[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            error_setg(errp, "weft: the token in secret '%s' is not hex",
                       s->token_secret);
            return false;
        }
        s->token[i] = (uint8_t)(hi << 4 | lo);
    }
    s->has_token = true;
    return true;
}

static void weft_realize(PCIDevice *pdev, Error **errp)
{
    WeftState *s = WEFT(pdev);
    struct weft_core_config cfg = {
        .nr_windows = s->nr_windows,
        .nr_rcxt = s->nr_rcxt,
        .nr_handlers = s->nr_handlers,
        .verbs_qps = s->verbs_qps,
        .verbs_cqs = s->verbs_cqs,
        .verbs_pds = s->verbs_pds,
        .verbs_tpt = s->verbs_tpt,
        .verbs_uars = s->verbs_uars,
        .rx_overlap = s->rx_overlap,
    };
    char err[256] = "";
    unsigned int v;

    if (s->node_id > WEFT_NODE_MAX_UNICAST) {
        error_setg(errp, "weft: node-id %u is out of range 0..%u",
                   s->node_id, WEFT_NODE_MAX_UNICAST);
        return;
    }
    if (!weft_load_token(s, errp)) {
        return;
    }
    if (!s->transport || !strcmp(s->transport, "auto")) {
        s->shm_want = true;
    } else if (!strcmp(s->transport, "shm")) {
        s->shm_want = s->shm_required = true;
    } else if (strcmp(s->transport, "socket")) {
        error_setg(errp, "weft: transport is auto, shm or socket, not '%s'",
                   s->transport);
        return;
    }
    s->shm_efd = s->shm_efd_switch = -1;
    cfg.node_id = s->node_id;
    if (!weft_epoch_load(s, &cfg.key_epoch, errp)) {
        return;
    }
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, weft_timer_cb, s);
    s->core = weft_core_new(&cfg, &weft_core_ops, s, err, sizeof(err));
    if (!s->core) {
        error_setg(errp, "weft: %s", err[0] ? err : "bad configuration");
        timer_free(s->timer);
        s->timer = NULL;
        return;
    }

    error_setg(&s->migration_blocker,
               "weft: migration is not supported (the adapter's SRAM, "
               "tasks and switch link are not migrated)");
    if (migrate_add_blocker(&s->migration_blocker, errp) < 0) {
        weft_core_free(s->core);
        s->core = NULL;
        timer_free(s->timer);
        s->timer = NULL;
        return;
    }

    pci_config_set_revision(pdev->config, WEFT_PCI_REVISION);
    pci_config_set_interrupt_pin(pdev->config, 1);

    memory_region_init_io(&s->regs, OBJECT(s), &weft_regs_ops, s,
                          "weft-regs", WEFT_REGS_SIZE);
    pci_register_bar(pdev, WEFT_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);

    if (msix_init_exclusive_bar(pdev, s->nr_handlers, WEFT_BAR_MSIX,
                                errp)) {
        migrate_del_blocker(&s->migration_blocker);
        weft_core_free(s->core);
        s->core = NULL;
        timer_free(s->timer);
        s->timer = NULL;
        return;
    }
    for (v = 0; v < s->nr_handlers; v++) {
        msix_vector_use(pdev, v);
    }

    memory_region_init_io(&s->sram, OBJECT(s), &weft_sram_ops, s,
                          "weft-sram", weft_core_sram_bar_size(s->core));
    pci_register_bar(pdev, WEFT_BAR_SRAM, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->sram);

    memory_region_init_io(&s->db, OBJECT(s), &weft_db_ops, s,
                          "weft-doorbells", weft_core_db_bar_size(s->core));
    pci_register_bar(pdev, WEFT_BAR_DOORBELL,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->db);

    s->txbuf = g_malloc(WEFT_TXBUF_SIZE);
    s->rxbuf = g_malloc(WEFT_RXBUF_SIZE);
    s->shm_pkt = g_malloc(WEFT_WIRE_MAX_FRAME);
    s->poll_bh = qemu_bh_new_guarded(weft_poll_bh, s,
                                     &DEVICE(pdev)->mem_reentrancy_guard);

    if (qemu_chr_fe_backend_connected(&s->chr)) {
        qemu_chr_fe_set_handlers(&s->chr, weft_chr_can_read, weft_chr_read,
                                 weft_chr_event, NULL, s, NULL, true);
    }
}

static void weft_exit(PCIDevice *pdev)
{
    WeftState *s = WEFT(pdev);

    qemu_chr_fe_deinit(&s->chr, false);
    weft_shm_close(s);
    memset(s->token, 0, sizeof(s->token));
    s->has_token = false;
    if (s->tx_watch) {
        g_source_remove(s->tx_watch);
        s->tx_watch = 0;
    }
    qemu_bh_delete(s->poll_bh);
    s->poll_bh = NULL;
    timer_free(s->timer);
    s->timer = NULL;
    msix_uninit_exclusive_bar(pdev);
    migrate_del_blocker(&s->migration_blocker);
    weft_core_free(s->core);
    s->core = NULL;
    g_free(s->txbuf);
    g_free(s->rxbuf);
    g_free(s->shm_pkt);
    s->txbuf = s->rxbuf = s->shm_pkt = NULL;
}

static void weft_reset_hold(Object *obj, ResetType type)
{
    WeftState *s = WEFT(obj);

    trace_weft_reset(s->node_id);
    weft_core_reset(s->core);
    /*
     * The connection to the switch is not adapter state and survives a
     * reset; keep the core's view of it in line with the wrapper's.
     */
    weft_core_set_link(s->core, s->link_up);
}

static const Property weft_properties[] = {
    DEFINE_PROP_UINT32("node-id", WeftState, node_id, 0),
    DEFINE_PROP_UINT32("windows", WeftState, nr_windows, WEFT_DEF_WINDOWS),
    DEFINE_PROP_UINT32("rcxts", WeftState, nr_rcxt, WEFT_DEF_RCXT),
    DEFINE_PROP_UINT32("handlers", WeftState, nr_handlers, WEFT_DEF_HANDLERS),
    DEFINE_PROP_UINT32("verbs-qps", WeftState, verbs_qps, WEFT_VERBS_DEF_QP),
    DEFINE_PROP_UINT32("verbs-cqs", WeftState, verbs_cqs, WEFT_VERBS_DEF_CQ),
    DEFINE_PROP_UINT32("verbs-pds", WeftState, verbs_pds, WEFT_VERBS_DEF_PD),
    DEFINE_PROP_UINT32("verbs-tpt", WeftState, verbs_tpt, WEFT_VERBS_DEF_TPT),
    DEFINE_PROP_UINT32("verbs-uars", WeftState, verbs_uars, WEFT_VERBS_DEF_UAR),
    DEFINE_PROP_UINT32("rx-overlap", WeftState, rx_overlap, 0),
    DEFINE_PROP_CHR("chardev", WeftState, chr),
    DEFINE_PROP_STRING("epoch-file", WeftState, epoch_file),
    DEFINE_PROP_STRING("token-secret", WeftState, token_secret),
    DEFINE_PROP_STRING("transport", WeftState, transport),
};

static void weft_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    k->realize = weft_realize;
    k->exit = weft_exit;
    k->vendor_id = WEFT_PCI_VENDOR_ID;
    k->device_id = WEFT_PCI_DEVICE_ID;
    k->revision = WEFT_PCI_REVISION;
    k->class_id = WEFT_PCI_CLASS;
    rc->phases.hold = weft_reset_hold;
    dc->desc = "Weft RDMA switch adapter";
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    device_class_set_props(dc, weft_properties);

    object_class_property_set_description(klass, "node-id",
        "switch node id of this adapter (0..61439); unique on the switch");
    object_class_property_set_description(klass, "windows",
        "number of user windows, each with its own doorbell page (1..128)");
    object_class_property_set_description(klass, "rcxts",
        "number of RDMA contexts (rCxts) in the adapter SRAM (16..131072)");
    object_class_property_set_description(klass, "handlers",
        "interrupt handlers, one MSI-X vector each (1..16)");
    object_class_property_set_description(klass, "verbs-qps",
        "verbs engine: queue pairs (2..1048576; QP 1 is the GSI)");
    object_class_property_set_description(klass, "verbs-cqs",
        "verbs engine: completion queues (1..1048576)");
    object_class_property_set_description(klass, "verbs-pds",
        "verbs engine: protection domains (1..1048576)");
    object_class_property_set_description(klass, "verbs-tpt",
        "verbs engine: MR/MW entries of the memory TPT (1..16777216)");
    object_class_property_set_description(klass, "verbs-uars",
        "verbs engine: UAR doorbell pages in BAR 4, one per user context "
        "(1..4096)");
    object_class_property_set_description(klass, "rx-overlap",
        "receive entries (2..4) whose header lines may be written out of "
        "slot order in one poll (seed item 15); 0 = always in order");
    object_class_property_set_description(klass, "token-secret",
        "id of a secret object (-object secret,id=ID,file=F) with this "
        "node's switch token, 64 hex digits; sent in the HELLO");
    object_class_property_set_description(klass, "chardev",
        "socket chardev connected to weft-switch (use reconnect-ms=); "
        "without it the link stays down and sent packets are dropped");
    object_class_property_set_description(klass, "transport",
        "auto (default): shared-memory rings with a switch on this host "
        "that grants them, else the socket; shm: only shared memory; "
        "socket: frames only over the chardev");
    object_class_property_set_description(klass, "epoch-file",
        "file that stores the adapter's non-volatile key epoch (KEY_EPOCH) "
        "across power cycles; without it the epoch starts at 0");
}

static const TypeInfo weft_info = {
    .name = TYPE_WEFT,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(WeftState),
    .class_init = weft_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { }
    },
};

static void weft_register_types(void)
{
    type_register_static(&weft_info);
}

type_init(weft_register_types)
