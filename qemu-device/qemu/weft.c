/*
 * Weft RDMA switch adapter: the QEMU PCI device.
 *
 * This file is the QOM/PCI wrapper around the QEMU-free adapter model in
 * core/ (as hw/net/e1000e.c wraps e1000e_core.c): it maps the BARs onto
 * the core's MMIO entry points, gives the core guest memory, MSI-X and a
 * main-loop bottom half that runs its tasks, and carries the core's
 * packets to weft-switch over the link of weft_link.c (framing, HELLO,
 * shared-memory rings).  While the link is down the core counts what it
 * drops.
 *
 * With the iothread property the adapter runs in that IOThread instead
 * of the main loop: its bottom half, its timer and the shared-memory
 * ring's eventfd (polled while frames flow) live in the IOThread's
 * AioContext, DMA goes straight to guest RAM without the big lock, and
 * MSI-X messages are sent by a main-loop bottom half.  The core is
 * single-threaded: one lock (WeftState.lock) is held around every call
 * into it, from the vCPUs' MMIO, the IOThread, the chardev in the main
 * loop, reset and migration.  Lock order: the big lock, then the
 * device's; nothing takes the big lock with the device's held.
 *
 * SPDX-License-Identifier: MIT
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/lockable.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "block/aio.h"
#include "block/aio-wait.h"
#include "system/iothread.h"
#include "system/runstate.h"
#include "chardev/char-fe.h"
#include "crypto/secret_common.h"
#include "exec/memory.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "hw/resettable.h"
#include "migration/vmstate.h"
#include "trace.h"

#include "weft_core.h"
#include "weft_link.h"
#include "weft/names.h"

#define TYPE_WEFT "weft"
OBJECT_DECLARE_SIMPLE_TYPE(WeftState, WEFT)

/*
 * Packets or commands per bottom-half run: bounds the time one main-loop
 * iteration spends in the adapter.
 */
#define WEFT_POLL_BUDGET        64

struct WeftState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion sram;
    MemoryRegion db;

    struct weft_core *core;
    /*
     * Held around every call into the core and the link (the core is
     * single-threaded); recursive because a chardev disconnect from
     * inside the link reports its close event at once.
     */
    QemuRecMutex lock;
    QEMUBH *poll_bh;
    /*
     * poll_bh is scheduled, or the adapter is being run inline
     * (weft_link_input): a kick needs no new schedule.  Every
     * qemu_bh_schedule() notifies the AioContext, an eventfd write,
     * which was the largest single cost per received frame.
     */
    bool poll_pending;
    bool kicked;            /* the core asked for a poll since the last one */
    QEMUTimer *timer;       /* the core's one timer (verbs, held irqs) */

    /* With an IOThread (property iothread); all NULL/0 without. */
    IOThread *iothread;
    AioContext *ctx;        /* the IOThread's: poll_bh, timer, the ring */
    QEMUBH *irq_bh;         /* main loop: sends the vectors in irq_pending */
    uint32_t irq_pending;   /* vectors raised since irq_bh last ran */
    VMChangeStateEntry *vmsc;
    /*
     * The VM is stopped: the IOThread neither runs the adapter nor takes
     * frames, so guest RAM and the core stay as a snapshot or migration
     * saves them.  The main loop cannot run while they are saved; the
     * IOThread could.
     */
    bool paused;
    /* The core's saved state while a migration stream is written or read. */
    uint8_t *state;
    uint32_t state_len;

    /* Properties */
    uint32_t node_id;
    uint32_t nr_windows;
    uint32_t nr_rcxt;
    uint32_t nr_handlers;
    uint32_t verbs_qps, verbs_cqs, verbs_pds, verbs_tpt, verbs_uars;
    uint32_t match_store, umb_size, umb_frag, matchers, match_step;
    uint64_t rndv_threshold;
    uint32_t rx_overlap;
    char *token_secret;     /* id of a secret object holding the node token */
    CharBackend chr;
    char *epoch_file;       /* the adapter's non-volatile key epoch */
    char *transport;        /* auto, shm or socket */

    WeftLink link;          /* to weft-switch over chr */

    /*
     * A region of guest RAM in the bus-master address space, mapped once
     * (under lock) and used by every DMA that falls inside it: one
     * translation for many DMAs.  Unmapped by dma_listener at every
     * change of the memory map (begin and commit of a transaction, with
     * the big lock, which is taken before the device's).
     */
    MemoryRegionCache ram;
    bool ram_mapped;
    hwaddr ram_base;        /* bus address of ram's first byte */
    hwaddr ram_len;
    MemoryListener dma_listener;
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
    AddressSpace *as = pci_get_address_space(&s->parent_obj);

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

static void weft_ram_unmap(WeftState *s)
{
    if (s->ram_mapped) {
        address_space_cache_destroy(&s->ram);
        s->ram_mapped = false;
    }
}

/* A transaction on the memory map begins or ends: the mapping may go. */
static void weft_dma_map_changed(MemoryListener *listener)
{
    WeftState *s = container_of(listener, WeftState, dma_listener);

    QEMU_LOCK_GUARD(&s->lock);
    weft_ram_unmap(s);
}

/*
 * Maps the whole region of writable guest RAM that holds addr (its
 * section of the bus-master address space) instead of the one mapped;
 * false, and the mapping kept, when addr is not in such RAM.
 */
static bool weft_ram_map(WeftState *s, uint64_t addr)
{
    AddressSpace *as = pci_get_address_space(&s->parent_obj);
    MemoryRegionCache probe = { 0 };
    hwaddr base, size;
    MemoryRegion *mr;
    int64_t l;

    RCU_READ_LOCK_GUARD();
    address_space_cache_init(&probe, as, addr, 1, true);
    base = probe.mrs.offset_within_address_space;
    size = int128_gethi(probe.mrs.size) ? UINT64_MAX - base + 1 :
           int128_get64(probe.mrs.size);
    mr = probe.mrs.mr;
    if (!probe.ptr || !memory_region_is_ram(mr) ||
        memory_region_is_ram_device(mr) || mr->readonly || !size) {
        address_space_cache_destroy(&probe);
        return false;
    }
    address_space_cache_destroy(&probe);
    weft_ram_unmap(s);
    l = address_space_cache_init(&s->ram, as, base, size, true);
    s->ram_mapped = true;
    if (l <= 0 || !s->ram.ptr) {
        weft_ram_unmap(s);
        return false;
    }
    s->ram_base = base;
    s->ram_len = l;
    trace_weft_dma_map(base, l);
    return true;
}

static bool weft_ram_holds(const WeftState *s, uint64_t addr, size_t len)
{
    return s->ram_mapped && addr >= s->ram_base &&
           addr - s->ram_base <= s->ram_len &&
           len <= s->ram_len - (addr - s->ram_base);
}

/*
 * A DMA with one address translation of its own: when [addr, addr + len)
 * lies in one region of RAM (writable RAM for a write), a copy from or
 * to its host memory, then for a write the dirty marking and
 * translated-code invalidation of any DMA.  1 when done, 0 when the
 * range needs the general path (several regions, an IOMMU, not RAM:
 * checked and refused there).  With bus mastering off, the address space
 * ends in no RAM.
 */
static int weft_dma_once(WeftState *s, uint64_t addr, void *buf,
                         size_t len, bool is_write)
{
    AddressSpace *as = pci_get_address_space(&s->parent_obj);
    MemoryRegionCache cache = { 0 };
    MemoryRegion *mr;
    int done = 0;

    RCU_READ_LOCK_GUARD();
    if (address_space_cache_init(&cache, as, addr, len, is_write) <
        (int64_t)len || !cache.ptr) {
        goto out;
    }
    mr = cache.mrs.mr;
    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        (is_write && mr->readonly)) {
        goto out;
    }
    if (is_write) {
        address_space_write_cached(&cache, 0, buf, len);
        address_space_cache_invalidate(&cache, 0, len);
    } else {
        address_space_read_cached(&cache, 0, buf, len);
    }
    done = 1;
out:
    address_space_cache_destroy(&cache);
    return done;
}

/*
 * A DMA without a translation of its own where it can: into the region
 * of writable guest RAM mapped (or mapped now: the first DMA into a
 * region after a change of the memory map), a copy from or to its host
 * memory, then for a write the dirty marking and translated-code
 * invalidation of any DMA.  Anything else (read-only memory, not RAM)
 * goes through weft_dma_once.  1 when done, 0 as weft_dma_once.
 */
static int weft_dma_direct(WeftState *s, uint64_t addr, void *buf,
                           size_t len, bool is_write)
{
    hwaddr off;

    if (len == 0 || addr + len - 1 < addr) {
        return 0;
    }
    if (!weft_ram_holds(s, addr, len) &&
        (!weft_ram_map(s, addr) || !weft_ram_holds(s, addr, len))) {
        return weft_dma_once(s, addr, buf, len, is_write);
    }
    off = addr - s->ram_base;
    if (is_write) {
        address_space_write_cached(&s->ram, off, buf, len);
        address_space_cache_invalidate(&s->ram, off, len);
    } else {
        address_space_read_cached(&s->ram, off, buf, len);
    }
    return 1;
}

/*
 * A range over several regions of RAM, as one direct copy per region,
 * after the check of the whole range.  With an IOThread the general
 * path of pci_dma_* is not used: it dispatches to MMIO when the guest
 * remapped memory since the check, which needs the big lock.  A range
 * remapped between the check and the copy is refused part way.
 */
static bool weft_dma_split(WeftState *s, uint64_t addr, uint8_t *buf,
                           size_t len, bool is_write)
{
    AddressSpace *as = pci_get_address_space(&s->parent_obj);

    if (!weft_dma_is_ram(s, addr, len, is_write)) {
        return false;
    }
    while (len) {
        hwaddr xlat, l = len;

        WITH_RCU_READ_LOCK_GUARD() {
            address_space_translate(as, addr, &xlat, &l, is_write,
                                    MEMTXATTRS_UNSPECIFIED);
        }
        if (!l || !weft_dma_direct(s, addr, buf, l, is_write)) {
            return false;
        }
        addr += l;
        buf += l;
        len -= l;
    }
    return true;
}

static bool weft_dma(WeftState *s, uint64_t addr, void *buf, size_t len,
                     bool is_write)
{
    if (weft_dma_direct(s, addr, buf, len, is_write)) {
        return true;
    }
    if (s->iothread) {
        return weft_dma_split(s, addr, buf, len, is_write);
    }
    return weft_dma_is_ram(s, addr, len, is_write) &&
           (is_write ? pci_dma_write(&s->parent_obj, addr, buf, len) :
            pci_dma_read(&s->parent_obj, addr, buf, len)) == MEMTX_OK;
}

static int weft_op_dma_read(void *opaque, uint64_t addr, void *buf,
                            size_t len)
{
    WeftState *s = opaque;

    if (!weft_dma(s, addr, buf, len, false)) {
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

    if (!weft_dma(s, addr, (void *)buf, len, true)) {
        trace_weft_dma_error("write", addr, len);
        return -1;
    }
    trace_weft_dma_write(addr, len);
    return 0;
}

/* Sends an MSI-X message; with the big lock held. */
static void weft_msix_notify(WeftState *s, unsigned int vector)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    if (!msix_enabled(pdev)) {
        trace_weft_irq_dropped(vector, "MSI-X disabled");
        return;
    }
    trace_weft_irq(vector);
    msix_notify(pdev, vector);
}

/*
 * The vectors the IOThread raised, one message each however often it
 * raised them since the last run: the interrupts of a batch of
 * completions are coalesced until the main loop's next iteration.
 */
static void weft_irq_bh(void *opaque)
{
    WeftState *s = opaque;
    uint32_t pending = qatomic_xchg(&s->irq_pending, 0);

    while (pending) {
        unsigned int v = ctz32(pending);

        pending &= pending - 1;
        weft_msix_notify(s, v);
    }
}

static void weft_op_irq(void *opaque, unsigned int vector)
{
    WeftState *s = opaque;

    if (vector >= s->nr_handlers) {
        trace_weft_irq_dropped(vector, "no such MSI-X vector");
        return;
    }
    if (s->irq_bh) {
        /* msix_notify needs the big lock, which the IOThread never takes. */
        qatomic_or(&s->irq_pending, 1u << vector);
        qemu_bh_schedule(s->irq_bh);
        return;
    }
    weft_msix_notify(s, vector);
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
    if (h && h->type == WEFT_PKT_MATCH &&
        le32_to_cpu(h->length) >= sizeof(struct weft_match_whdr)) {
        struct weft_match_whdr m;

        /* The matching header follows the wire header in the packet. */
        memcpy(&m, h + 1, sizeof(m));
        trace_weft_match_pkt(kind == WEFT_TR_PKT_TX ? "sent" :
                             kind == WEFT_TR_PKT_RX ? "received" : "dropped",
                             weft_mwop_name(m.op), src, dst, le16_to_cpu(m.queue),
                             le64_to_cpu(m.match), len,
                             kind == WEFT_TR_PKT_DROP ? weft_reason_name(reason) : "");
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
    weft_link_flush(&s->link);
    s->poll_pending = false;
    /* With the link full, its kick when room is back restarts the polling. */
    if ((more && !weft_link_tx_blocked(&s->link)) || s->kicked) {
        weft_schedule_poll(s);
    }
}

static void weft_poll_bh(void *opaque)
{
    WeftState *s = opaque;

    QEMU_LOCK_GUARD(&s->lock);
    if (s->paused) {
        /* The VM is stopped: resuming schedules a run. */
        s->poll_pending = false;
        return;
    }
    s->poll_pending = true;
    weft_run_adapter(s);
}

/* ---- Link callbacks -------------------------------------------------------- */

static bool weft_link_can_receive(void *opaque)
{
    WeftState *s = opaque;

    return !s->paused && weft_core_can_receive(s->core);
}

static int weft_link_receive(void *opaque, const uint8_t *pkt, size_t len,
                             bool shared)
{
    WeftState *s = opaque;

    return shared ? weft_core_receive_shared(s->core, pkt, len) :
                    weft_core_receive(s->core, pkt, len);
}

static void weft_link_unlend(void *opaque)
{
    WeftState *s = opaque;

    weft_core_rx_unlend(s->core);
}

/* The core is done with a packet it kept in the switch's ring. */
static void weft_op_rx_release(void *opaque, const void *pkt)
{
    WeftState *s = opaque;

    weft_link_release(&s->link, pkt);
}

/*
 * Frames arrived: hands them to the core and runs the adapter on them at
 * once, instead of in a bottom half scheduled for it.
 */
static void weft_link_input(void *opaque)
{
    WeftState *s = opaque;
    bool pending = s->poll_pending;

    if (s->paused) {
        /* Frames wait in the link until the VM runs again. */
        return;
    }
    s->poll_pending = true;
    weft_link_deliver(&s->link);
    if (pending) {
        /* poll_bh is scheduled already and runs the adapter. */
        return;
    }
    weft_run_adapter(s);
}

static void weft_link_kick(void *opaque)
{
    weft_schedule_poll(opaque);
}

static void weft_link_set_up(void *opaque, bool up)
{
    WeftState *s = opaque;

    weft_core_set_link(s->core, up);
}

static const WeftLinkOps weft_link_ops = {
    .can_receive = weft_link_can_receive,
    .receive = weft_link_receive,
    .unlend = weft_link_unlend,
    .input = weft_link_input,
    .kick = weft_link_kick,
    .set_up = weft_link_set_up,
};

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
        QEMU_LOCK_GUARD(&s->lock);                                          \
        return fn##_read(s->core, addr, size);                              \
    }                                                                       \
                                                                            \
    static void weft_##name##_write(void *opaque, hwaddr addr, uint64_t val, \
                                    unsigned size)                          \
    {                                                                       \
        WeftState *s = opaque;                                              \
                                                                            \
        QEMU_LOCK_GUARD(&s->lock);                                          \
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

    QEMU_LOCK_GUARD(&s->lock);
    if (s->paused) {
        /*
         * Fired as the VM stopped: again once it runs (the virtual clock
         * stands still meanwhile).
         */
        timer_mod(s->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
        return;
    }
    trace_weft_timer(qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    weft_core_timer(s->core);
    weft_schedule_poll(s);
}

static int weft_op_xmit(void *opaque, const void *pkt, size_t len)
{
    WeftState *s = opaque;

    return weft_link_xmit(&s->link, pkt, len);
}

static const struct weft_core_ops weft_core_ops = {
    .dma_read = weft_op_dma_read,
    .dma_write = weft_op_dma_write,
    .rx_release = weft_op_rx_release,
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
 * *has_token stays false without token-secret.
 */
static bool weft_load_token(WeftState *s, uint8_t *token, bool *has_token,
                            Error **errp)
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
        token[i] = (uint8_t)(hi << 4 | lo);
    }
    *has_token = true;
    return true;
}

/*
 * Checks the properties and derives from them what realize needs: the
 * core's configuration (the core checks its own ranges), the node token
 * and the link's transport.
 */
static bool weft_check_properties(WeftState *s, struct weft_core_config *cfg,
                                  uint8_t *token, bool *has_token,
                                  WeftLinkTransport *transport, Error **errp)
{
    if (s->node_id > WEFT_NODE_MAX_UNICAST) {
        error_setg(errp, "weft: node-id %u is out of range 0..%u",
                   s->node_id, WEFT_NODE_MAX_UNICAST);
        return false;
    }
    if (!weft_load_token(s, token, has_token, errp)) {
        return false;
    }
    if (!s->transport || !strcmp(s->transport, "auto")) {
        *transport = WEFT_LINK_AUTO;
    } else if (!strcmp(s->transport, "shm")) {
        *transport = WEFT_LINK_SHM;
    } else if (!strcmp(s->transport, "socket")) {
        *transport = WEFT_LINK_SOCKET;
    } else {
        error_setg(errp, "weft: transport is auto, shm or socket, not '%s'",
                   s->transport);
        return false;
    }
    *cfg = (struct weft_core_config) {
        .node_id = s->node_id,
        .nr_windows = s->nr_windows,
        .nr_rcxt = s->nr_rcxt,
        .nr_handlers = s->nr_handlers,
        .verbs_qps = s->verbs_qps,
        .verbs_cqs = s->verbs_cqs,
        .verbs_pds = s->verbs_pds,
        .verbs_tpt = s->verbs_tpt,
        .verbs_uars = s->verbs_uars,
        .rx_overlap = s->rx_overlap,
        .match_store = s->match_store,
        .umb_size = s->umb_size,
        .umb_frag = s->umb_frag,
        .matchers = s->matchers,
        .match_step = s->match_step,
        .rndv_threshold = s->rndv_threshold,
        .match_epoch = g_random_int(),
    };
    return weft_epoch_load(s, &cfg->key_epoch, errp);
}

/*
 * Config space and the BARs: registers (0), SRAM (2) and doorbells (4) on
 * the core, MSI-X with every vector in use in its own BAR.
 */
static bool weft_init_bars(WeftState *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    unsigned int v;

    pci_config_set_revision(pdev->config, WEFT_PCI_REVISION);
    pci_config_set_interrupt_pin(pdev->config, 1);

    memory_region_init_io(&s->regs, OBJECT(s), &weft_regs_ops, s,
                          "weft-regs", WEFT_REGS_SIZE);
    pci_register_bar(pdev, WEFT_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);

    if (msix_init_exclusive_bar(pdev, s->nr_handlers, WEFT_BAR_MSIX,
                                errp)) {
        return false;
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
    return true;
}

/*
 * With an IOThread: the VM stops (the adapter stops touching guest RAM
 * and the core before the state is saved; a run in progress finishes
 * first, under the lock) or runs again (the adapter resumes).
 */
static void weft_vm_state_change(void *opaque, bool running, RunState state)
{
    WeftState *s = opaque;

    QEMU_LOCK_GUARD(&s->lock);
    s->paused = !running;
    if (running) {
        weft_schedule_poll(s);
    }
}

/*
 * The adapter's context: the main loop, or with the iothread property
 * that IOThread's AioContext for poll_bh, the timer and the ring, and a
 * main-loop bottom half for MSI-X.
 */
static void weft_init_context(WeftState *s)
{
    DeviceState *dev = DEVICE(s);

    if (!s->iothread) {
        s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, weft_timer_cb, s);
        s->poll_bh = qemu_bh_new_guarded(weft_poll_bh, s,
                                         &dev->mem_reentrancy_guard);
        return;
    }
    object_ref(OBJECT(s->iothread));
    s->ctx = iothread_get_aio_context(s->iothread);
    s->timer = aio_timer_new(s->ctx, QEMU_CLOCK_VIRTUAL, SCALE_NS,
                             weft_timer_cb, s);
    /*
     * No re-entrancy guard: it would refuse the vCPUs' MMIO while the
     * IOThread runs.  DMA never reaches MMIO (weft_dma_is_ram).
     */
    s->poll_bh = aio_bh_new(s->ctx, weft_poll_bh, s);
    s->irq_bh = qemu_bh_new(weft_irq_bh, s);
    s->paused = !runstate_is_running();
    s->vmsc = qemu_add_vm_change_state_handler(weft_vm_state_change, s);
}

static void weft_iothread_quiesce(void *opaque)
{
}

/* Undoes weft_init_context once nothing schedules work any more. */
static void weft_fini_context(WeftState *s)
{
    if (s->timer) {
        timer_del(s->timer);
    }
    if (s->iothread) {
        qemu_del_vm_change_state_handler(s->vmsc);
        s->vmsc = NULL;
        /* A handler or bottom half running in the IOThread finishes. */
        aio_wait_bh_oneshot(s->ctx, weft_iothread_quiesce, NULL);
        qemu_bh_delete(s->irq_bh);
        s->irq_bh = NULL;
        object_unref(OBJECT(s->iothread));
        s->ctx = NULL;
    }
    if (s->poll_bh) {
        qemu_bh_delete(s->poll_bh);
        s->poll_bh = NULL;
    }
    timer_free(s->timer);
    s->timer = NULL;
}

static void weft_realize(PCIDevice *pdev, Error **errp)
{
    WeftState *s = WEFT(pdev);
    struct weft_core_config cfg;
    WeftLinkTransport transport;
    uint8_t token[WEFT_WIRE_TOKEN_SIZE];
    bool has_token = false;
    char err[256] = "";

    if (!weft_check_properties(s, &cfg, token, &has_token, &transport,
                               errp)) {
        goto out;
    }
    qemu_rec_mutex_init(&s->lock);
    s->dma_listener = (MemoryListener) {
        .name = "weft-dma",
        .begin = weft_dma_map_changed,
        .commit = weft_dma_map_changed,
    };
    memory_listener_register(&s->dma_listener, &address_space_memory);
    weft_init_context(s);
    s->core = weft_core_new(&cfg, &weft_core_ops, s, err, sizeof(err));
    if (!s->core) {
        error_setg(errp, "weft: %s", err[0] ? err : "bad configuration");
        goto fail;
    }
    if (!weft_init_bars(s, errp)) {
        goto fail;
    }
    /* The link may report the chardev open at once: it kicks poll_bh. */
    weft_link_init(&s->link, &s->chr, s->node_id, has_token ? token : NULL,
                   transport, &s->lock, s->ctx, &weft_link_ops, s);
    goto out;

fail:
    memory_listener_unregister(&s->dma_listener);
    weft_fini_context(s);
    /* A NULL core is a no-op here. */
    weft_core_free(s->core);
    s->core = NULL;
    qemu_rec_mutex_destroy(&s->lock);
out:
    memset(token, 0, sizeof(token));
}

static void weft_exit(PCIDevice *pdev)
{
    WeftState *s = WEFT(pdev);

    WITH_QEMU_LOCK_GUARD(&s->lock) {
        /*
         * With an IOThread: from here on it neither runs the adapter nor
         * uses the link (nor schedules the link's bottom half), whatever
         * is still queued for it.
         */
        s->paused = s->iothread != NULL;
    }
    weft_link_fini(&s->link);
    weft_fini_context(s);
    msix_uninit_exclusive_bar(pdev);
    weft_core_free(s->core);
    s->core = NULL;
    memory_listener_unregister(&s->dma_listener);
    weft_ram_unmap(s);
    qemu_rec_mutex_destroy(&s->lock);
}

static void weft_reset_hold(Object *obj, ResetType type)
{
    WeftState *s = WEFT(obj);

    trace_weft_reset(s->node_id);
    QEMU_LOCK_GUARD(&s->lock);
    weft_core_reset(s->core);
    /*
     * The connection to the switch is not adapter state and survives a
     * reset; keep the core's view of it in line with the wrapper's.
     */
    weft_core_set_link(s->core, weft_link_is_up(&s->link));
}

/* ---- Migration and snapshots ------------------------------------------- */

/*
 * The adapter's state travels as one buffer that the core writes and
 * reads (weft_core_save/weft_core_load: versioned, every struct's size
 * checked, every index bounds-checked, refused whole or loaded whole).
 * The switch link does not travel: the loading device keeps its own
 * connection, node id and key epoch, and peers see a restarted node
 * (docs/qemu-device.md, "Migration and snapshots").
 */
#define WEFT_STATE_MAX (1u << 30)

static int weft_pre_save(void *opaque)
{
    WeftState *s = opaque;
    uint8_t *buf;
    size_t len;

    /* With an IOThread, the VM stopped first (weft_vm_state_change). */
    QEMU_LOCK_GUARD(&s->lock);
    if (weft_core_save(s->core, &buf, &len) < 0) {
        error_report("weft: node %u: out of memory saving the adapter state",
                     s->node_id);
        return -ENOMEM;
    }
    if (len > WEFT_STATE_MAX) {
        free(buf);
        error_report("weft: node %u: the adapter state (%zu bytes) is over "
                     "%u bytes", s->node_id, len, WEFT_STATE_MAX);
        return -EFBIG;
    }
    s->state = buf;
    s->state_len = len;
    return 0;
}

static int weft_post_save(void *opaque)
{
    WeftState *s = opaque;

    free(s->state);
    s->state = NULL;
    s->state_len = 0;
    return 0;
}

static bool weft_state_len_ok(void *opaque, int version_id)
{
    WeftState *s = opaque;

    return s->state_len <= WEFT_STATE_MAX;
}

static int weft_post_load(void *opaque, int version_id)
{
    WeftState *s = opaque;
    char err[256] = "";
    int rc;

    QEMU_LOCK_GUARD(&s->lock);
    rc = weft_core_load(s->core, s->state, s->state_len, err, sizeof(err));
    g_free(s->state);
    s->state = NULL;
    s->state_len = 0;
    if (rc < 0) {
        error_report("weft: node %u: the adapter state was refused: %s",
                     s->node_id, err);
        return rc;
    }
    trace_weft_state_loaded(s->node_id);
    weft_core_set_link(s->core, weft_link_is_up(&s->link));
    return 0;
}

static const VMStateDescription weft_vmstate = {
    .name = TYPE_WEFT,
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = weft_pre_save,
    .post_save = weft_post_save,
    .post_load = weft_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, WeftState),
        VMSTATE_MSIX(parent_obj, WeftState),
        VMSTATE_UINT32(state_len, WeftState),
        VMSTATE_VALIDATE("adapter state size", weft_state_len_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(state, WeftState, 0, NULL, state_len),
        VMSTATE_END_OF_LIST()
    },
};

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
    /* Header matching (include/weft/match.h, docs/matching.md). */
    DEFINE_PROP_UINT32("match-store", WeftState, match_store, WEFT_MATCH_DEF_STORE),
    DEFINE_PROP_UINT32("umb-size", WeftState, umb_size, WEFT_MATCH_DEF_UMB),
    DEFINE_PROP_UINT32("umb-frag", WeftState, umb_frag, WEFT_MATCH_DEF_FRAG),
    DEFINE_PROP_UINT32("matchers", WeftState, matchers, WEFT_MATCH_DEF_MATCHERS),
    DEFINE_PROP_UINT32("match-step", WeftState, match_step, WEFT_MATCH_DEF_STEP),
    DEFINE_PROP_UINT64("rndv-threshold", WeftState, rndv_threshold,
                       WEFT_MATCH_DEF_RNDV_THRESHOLD),
    DEFINE_PROP_CHR("chardev", WeftState, chr),
    DEFINE_PROP_STRING("epoch-file", WeftState, epoch_file),
    DEFINE_PROP_STRING("token-secret", WeftState, token_secret),
    DEFINE_PROP_STRING("transport", WeftState, transport),
    DEFINE_PROP_LINK("iothread", WeftState, iothread, TYPE_IOTHREAD,
                     IOThread *),
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
    dc->vmsd = &weft_vmstate;
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
    object_class_property_set_description(klass, "iothread",
        "id of an IOThread object (-object iothread,id=ID) that runs the "
        "adapter and polls the shared-memory ring, off the main loop");
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
