/*
 * QTest for the weft PCI device (qemu-device/qemu/weft.c).
 *
 * No guest runs: the test maps the BARs through libqos, writes LMTs and
 * rCxts through the SRAM aperture, rings doorbells and reads guest RAM.
 * It also plays weft-switch: each QEMU's chardev connects to a UNIX socket
 * the test listens on; the test answers HELLO and relays frames between
 * two QEMU instances, or back into the same one.
 *
 * Each QEMU runs with -d guest_errors,invalid_mem -D <log> so the misuse
 * tests can check the guest-error log; the weft_dma_write and weft_link_*
 * trace events go to the same log (DMA order, link events).  With
 * WEFT_QTEST_SHOW_LOG=1 the logs (and so any -trace output, see
 * QTEST_TRACE) are copied to stderr at the end of each test:
 * scripts/run-qtests.sh uses that for its trace run.
 *
 * SPDX-License-Identifier: MIT
 */

#include "qemu/osdep.h"
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "qemu/bswap.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "libqos/malloc-pc.h"
#include "libqos/pci.h"
#include "libqos/pci-pc.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"

#include "weft/hw.h"
#include "weft/sram.h"
#include "weft/fifo.h"
#include "weft/wire.h"
#include "weft-host/shm.h"
#include "weft/xlate.h"
#include "weft/counters.h"
#include "weft/verbs.h"
#include "weft/cnt.h"
#include "weft/match.h"

/*
 * Hang protection only: every wait below fails the test with a message
 * naming what did not happen when this much time has passed.
 */
#define WAIT_LIMIT_US           (20 * G_USEC_PER_SEC)

#define TEST_WINDOWS            4
#define TEST_RCXTS              64
#define TEST_HANDLERS           4
#define TEST_KEY                0x4a0b      /* window key = job id */
#define FIFO_LOG2               3           /* 8 frames per FIFO */
#define FIFO_BYTES              (WEFT_FRAME_SIZE << FIFO_LOG2)
#define PC_IOAPIC_BASE          0xfec00000ull /* MMIO of the pc machine */

typedef struct WeftNode {
    QTestState *qts;
    QGuestAllocator alloc;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPCIBar regs, sram, db;
    uint64_t regs_size, sram_size, db_size;
    unsigned int node;
    char *log;
    char *sock;
    int listen_fd;          /* the test's switch socket for this node */
    const char *token;      /* hex token the HELLO must carry, or NULL */
    int conn_fd;            /* the device's connection, or -1 */
    uint64_t send_fifo[TEST_WINDOWS];
    uint64_t recv_fifo[TEST_WINDOWS];
    uint64_t send_next[TEST_WINDOWS];
    uint64_t evq;
} WeftNode;

static char *tmpdir;
/*
 * With WEFT_QTEST_IOTHREAD set in the environment, every device runs its
 * adapter in an IOThread (docs/qemu-device.md, "IOThread"): the object
 * on each command line and the device's iothread property.
 */
static const char *io_obj = "";
static const char *io_prop = "";

/* ---- small helpers ------------------------------------------------------- */

static int64_t deadline(void)
{
    return g_get_monotonic_time() + WAIT_LIMIT_US;
}

static void check_deadline(int64_t end, const char *what)
{
    if (g_get_monotonic_time() > end) {
        g_error("weft-test: gave up waiting for %s", what);
    }
}

static char *read_log(WeftNode *n)
{
    char *text = NULL;

    if (!g_file_get_contents(n->log, &text, NULL, NULL)) {
        return g_strdup("");
    }
    return text;
}

/* Polls the device's log until it contains needle. */
static void wait_log(WeftNode *n, const char *needle)
{
    int64_t end = deadline();

    for (;;) {
        g_autofree char *text = read_log(n);

        if (strstr(text, needle)) {
            return;
        }
        if (g_get_monotonic_time() > end) {
            g_error("weft-test: node %u log %s lacks \"%s\"; it has:\n%s",
                    n->node, n->log, needle, text);
        }
        g_usleep(1000);
    }
}

static int count_in_log(WeftNode *n, const char *needle)
{
    g_autofree char *text = read_log(n);
    const char *p = text;
    int count = 0;

    while ((p = strstr(p, needle))) {
        count++;
        p++;
    }
    return count;
}

/* ---- the test's switch: UNIX socket, length-prefixed frames -------------- */

static int sw_listen(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpuint(strlen(path), <, sizeof(sa.sun_path));
    strcpy(sa.sun_path, path);
    unlink(path);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(listen(fd, 4), ==, 0);
    return fd;
}

static bool wait_fd(int fd, short events, int64_t end)
{
    struct pollfd p = { .fd = fd, .events = events };
    int64_t left = (end - g_get_monotonic_time()) / 1000;

    if (left < 0) {
        return false;
    }
    return poll(&p, 1, (int)MIN(left, 1000)) > 0;
}

static int sw_accept(WeftNode *n)
{
    int64_t end = deadline();
    int fd;

    while (!wait_fd(n->listen_fd, POLLIN, end)) {
        check_deadline(end, "the device to connect to the switch socket");
    }
    fd = accept(n->listen_fd, NULL, NULL);
    g_assert_cmpint(fd, >=, 0);
    return fd;
}

static void read_full(int fd, void *buf, size_t len, const char *what)
{
    int64_t end = deadline();
    size_t got = 0;

    while (got < len) {
        ssize_t r;

        if (!wait_fd(fd, POLLIN, end)) {
            check_deadline(end, what);
            continue;
        }
        r = read(fd, (uint8_t *)buf + got, len - got);
        if (r == 0) {
            g_error("weft-test: connection closed while reading %s", what);
        }
        if (r < 0 && errno != EINTR && errno != EAGAIN) {
            g_error("weft-test: read error %s while reading %s",
                    strerror(errno), what);
        }
        if (r > 0) {
            got += r;
        }
    }
}

static void write_full(int fd, const void *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t r = write(fd, (const uint8_t *)buf + done, len - done);

        if (r < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(r, >, 0);
        done += r;
    }
}

/* Reads one frame; returns the packet length. */
static size_t sw_read_frame(int fd, uint8_t *pkt, const char *what)
{
    uint8_t pre[WEFT_WIRE_LEN_PREFIX];
    uint32_t len;

    read_full(fd, pre, sizeof(pre), what);
    len = ldl_le_p(pre);
    g_assert_cmpuint(len, >=, WEFT_WIRE_HDR_SIZE);
    g_assert_cmpuint(len, <=, WEFT_WIRE_MAX_FRAME);
    read_full(fd, pkt, len, what);
    return len;
}

static void sw_write_frame(int fd, const void *pkt, size_t len)
{
    uint8_t pre[WEFT_WIRE_LEN_PREFIX];

    stl_le_p(pre, len);
    write_full(fd, pre, sizeof(pre));
    write_full(fd, pkt, len);
}

static bool sw_frame_ready(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    return poll(&p, 1, 0) > 0;
}

/* ---- one QEMU with one weft device --------------------------------------- */

static void save_dev(QPCIDevice *dev, int devfn, void *data)
{
    QPCIDevice **out = data;

    g_assert_null(*out);
    *out = dev;
}

static uint64_t reg_read(WeftNode *n, uint64_t off)
{
    return qpci_io_readq(n->dev, n->regs, off);
}

static void reg_write(WeftNode *n, uint64_t off, uint64_t val)
{
    qpci_io_writeq(n->dev, n->regs, off, val);
}

static uint64_t counter(WeftNode *n, unsigned int c)
{
    return reg_read(n, WEFT_REG_CNT(c));
}

static uint64_t db_read(WeftNode *n, unsigned int w, uint64_t reg)
{
    return qpci_io_readq(n->dev, n->db, (uint64_t)w * WEFT_DB_PAGE_SIZE + reg);
}

static void db_write(WeftNode *n, unsigned int w, uint64_t reg, uint64_t val)
{
    qpci_io_writeq(n->dev, n->db, (uint64_t)w * WEFT_DB_PAGE_SIZE + reg, val);
}

/* Accepts the device's connection and answers its HELLO with status. */
static void sw_handshake(WeftNode *n, uint16_t status)
{
    uint8_t pkt[WEFT_WIRE_MAX_FRAME];
    struct weft_wire_hdr h;
    size_t len;

    n->conn_fd = sw_accept(n);
    len = sw_read_frame(n->conn_fd, pkt, "the device's HELLO");
    memcpy(&h, pkt, sizeof(h));
    g_assert_cmpuint(h.version, ==, WEFT_WIRE_VERSION);
    g_assert_cmpuint(h.type, ==, WEFT_PKT_HELLO);
    g_assert_cmpuint(le16_to_cpu(h.src_node), ==, n->node);
    g_assert_cmphex(le32_to_cpu(h.key), ==, WEFT_WIRE_HELLO_MAGIC);
    if (n->token) {
        /* The token from the secret object, as raw bytes. */
        size_t i;

        g_assert_cmpuint(len, ==, WEFT_WIRE_HDR_SIZE + WEFT_WIRE_TOKEN_SIZE);
        g_assert_cmpuint(le32_to_cpu(h.length), ==, WEFT_WIRE_TOKEN_SIZE);
        for (i = 0; i < WEFT_WIRE_TOKEN_SIZE; i++) {
            unsigned int byte;

            g_assert_cmpint(sscanf(n->token + 2 * i, "%2x", &byte), ==, 1);
            g_assert_cmphex(pkt[WEFT_WIRE_HDR_SIZE + i], ==, byte);
        }
    } else {
        g_assert_cmpuint(len, ==, WEFT_WIRE_HDR_SIZE);
    }

    memset(&h, 0, sizeof(h));
    h.version = WEFT_WIRE_VERSION;
    h.type = WEFT_PKT_HELLO_ACK;
    h.dst_node = cpu_to_le16(n->node);
    h.status = cpu_to_le16(status);
    sw_write_frame(n->conn_fd, &h, sizeof(h));
}

static void wait_link(WeftNode *n, bool up)
{
    int64_t end = deadline();

    while (!!(reg_read(n, WEFT_REG_STATUS) & WEFT_STATUS_LINK_UP) != up) {
        check_deadline(end, up ? "STATUS.LINK_UP" : "STATUS link down");
        g_usleep(1000);
    }
}

/* Enables the device and maps its BARs and MSI-X (again after a reset). */
static void node_map(WeftNode *n)
{
    qpci_device_enable(n->dev);
    n->regs = qpci_iomap(n->dev, WEFT_BAR_REGS, &n->regs_size);
    n->sram = qpci_iomap(n->dev, WEFT_BAR_SRAM, &n->sram_size);
    n->db = qpci_iomap(n->dev, WEFT_BAR_DOORBELL, &n->db_size);
    qpci_msix_enable(n->dev);
}

typedef enum SwitchMode {
    SW_NONE,        /* no chardev: the link stays down */
    SW_UP,          /* the test listens before QEMU starts; link brought up */
    SW_LATE,        /* chardev to a socket nobody listens on yet */
} SwitchMode;

/*
 * Starts QEMU with a weft device linked as mode says; with a token, the
 * device gets it through a secret object and token-secret; props are
 * more device properties (",name=value...").
 */
/* The PCI function of a started QEMU: found, BARs mapped. */
static void node_attach(WeftNode *n)
{
    pc_alloc_init(&n->alloc, n->qts, ALLOC_NO_FLAGS);
    n->bus = qpci_new_pc(n->qts, &n->alloc);
    qpci_device_foreach(n->bus, WEFT_PCI_VENDOR_ID, WEFT_PCI_DEVICE_ID,
                        save_dev, &n->dev);
    g_assert_nonnull(n->dev);
    node_map(n);
}

static WeftNode *node_start_full(unsigned int node, SwitchMode mode,
                                 const char *token, const char *props)
{
    WeftNode *n = g_new0(WeftNode, 1);
    g_autofree char *chr = NULL;
    g_autofree char *obj = NULL;

    n->node = node;
    n->token = token;
    if (token) {
        obj = g_strdup_printf("-object secret,id=weft-token,data=%s", token);
    }
    n->conn_fd = -1;
    n->listen_fd = -1;
    n->log = g_strdup_printf("%s/qemu-node%u.log", tmpdir, node);
    unlink(n->log);
    if (mode != SW_NONE) {
        n->sock = g_strdup_printf("%s/switch-%u.sock", tmpdir, node);
        unlink(n->sock);
        chr = g_strdup_printf("-chardev socket,id=sw,path=%s,reconnect-ms=200",
                              n->sock);
    }
    if (mode == SW_UP) {
        n->listen_fd = sw_listen(n->sock);
    }
    n->qts = qtest_initf("-machine pc -nodefaults "
                         "-d guest_errors,invalid_mem -D %s "
                         "-trace weft_dma_write -trace 'weft_link_*' %s %s "
                         "%s-device weft,node-id=%u,windows=%u,rcxts=%u,"
                         "handlers=%u%s%s%s%s",
                         n->log, chr ? chr : "", obj ? obj : "", io_obj, node,
                         TEST_WINDOWS, TEST_RCXTS, TEST_HANDLERS,
                         mode != SW_NONE ? ",chardev=sw" : "",
                         token ? ",token-secret=weft-token" : "", props,
                         io_prop);
    node_attach(n);
    if (*io_prop) {
        QDict *rsp = qtest_qmp(n->qts, "{ 'execute': 'qom-get', 'arguments': "
                               "{ 'path': '/machine/peripheral-anon/device[0]',"
                               " 'property': 'iothread' } }");

        /* The device took the IOThread. */
        g_assert_cmpstr(qdict_get_try_str(rsp, "return"), ==,
                        "/objects/weft-io");
        qobject_unref(rsp);
    }

    if (mode == SW_UP) {
        sw_handshake(n, WEFT_SW_OK);
        wait_link(n, true);
    }
    return n;
}

static WeftNode *node_start(unsigned int node, SwitchMode mode)
{
    return node_start_full(node, mode, NULL, "");
}

static void node_stop(WeftNode *n)
{
    if (g_getenv("WEFT_QTEST_SHOW_LOG")) {
        g_autofree char *text = read_log(n);

        fprintf(stderr, "---- weft node %u log (%s) ----\n%s", n->node,
                n->log, text);
    }
    qpci_msix_disable(n->dev);
    g_free(n->dev);
    qpci_free_pc(n->bus);
    alloc_destroy(&n->alloc);
    qtest_quit(n->qts);
    if (n->conn_fd >= 0) {
        close(n->conn_fd);
    }
    if (n->listen_fd >= 0) {
        close(n->listen_fd);
    }
    if (n->sock) {
        unlink(n->sock);
        g_free(n->sock);
    }
    unlink(n->log);
    g_free(n->log);
    g_free(n);
}

/* ---- guest-side set-up, as the driver would do it ------------------------ */

static uint64_t alloc_zeroed(WeftNode *n, size_t len)
{
    uint64_t a = guest_alloc(&n->alloc, len);

    g_assert_cmpuint(a, !=, 0);
    qtest_memset(n->qts, a, 0, len);
    return a;
}

static void sram_write_block(WeftNode *n, uint64_t off, const void *data,
                             size_t len)
{
    size_t i;

    for (i = 0; i < len; i += 8) {
        qpci_io_writeq(n->dev, n->sram, off + i,
                       ldq_le_p((const uint8_t *)data + i));
    }
}

static void sram_read_block(WeftNode *n, uint64_t off, void *data, size_t len)
{
    size_t i;

    for (i = 0; i < len; i += 8) {
        stq_le_p((uint8_t *)data + i, qpci_io_readq(n->dev, n->sram, off + i));
    }
}

/*
 * Writes window w's LMT through BAR 2, issues CMD_OPEN_WINDOW and
 * returns CMD_STATUS.
 */
static uint64_t open_window_at(WeftNode *n, unsigned int w, uint64_t send,
                               uint64_t recv, uint32_t handler)
{
    struct weft_lmt l;

    memset(&l, 0, sizeof(l));
    l.window_id = w;
    l.window_key = TEST_KEY;
    l.send_fifo_real_address = send;
    l.send_fifo_size = FIFO_LOG2;
    l.send_mask = (1u << FIFO_LOG2) - 1;
    l.recv_fifo_real_address = recv;
    l.recv_fifo_size = FIFO_LOG2;
    l.recv_mask = (1u << FIFO_LOG2) - 1;
    l.send_quanta_size = WEFT_DEF_QUANTUM;
    l.int_vect_data = handler;
    l.recv_int_threshold = WEFT_THRESHOLD_OFF0;
    l.send_int_threshold_hi = WEFT_THRESHOLD_OFF0;
    sram_write_block(n, WEFT_SRAM_LMT_OFF(w), &l, sizeof(l));
    reg_write(n, WEFT_REG_CMD_OPEN_WINDOW, w);
    return reg_read(n, WEFT_REG_CMD_STATUS);
}

static void open_window(WeftNode *n, unsigned int w, uint32_t handler)
{
    size_t fifo = (size_t)WEFT_FRAME_SIZE << FIFO_LOG2;

    n->send_fifo[w] = alloc_zeroed(n, fifo);
    n->recv_fifo[w] = alloc_zeroed(n, fifo);
    n->send_next[w] = 0;
    g_assert_cmpuint(open_window_at(n, w, n->send_fifo[w], n->recv_fifo[w],
                                    handler), ==, WEFT_CMD_OK);
    g_assert_cmpuint(db_read(n, w, WEFT_DB_STATE), ==, WEFT_WIN_VALID);
    g_assert_cmpuint(db_read(n, w, WEFT_DB_RECV_AVAIL), ==, 1u << FIFO_LOG2);
}

/* Event queue and interrupt handlers: every handler ready. */
static void setup_interrupts(WeftNode *n)
{
    unsigned int h;

    n->evq = alloc_zeroed(n, 64 * sizeof(struct weft_event));
    reg_write(n, WEFT_REG_INT_CONFIG, TEST_HANDLERS);
    reg_write(n, WEFT_REG_EVQ_BASE, n->evq);
    reg_write(n, WEFT_REG_EVQ_SIZE, 6);
    for (h = 0; h < TEST_HANDLERS; h++) {
        reg_write(n, WEFT_REG_INT_READY, h);
    }
}

/* True when the event queue holds an event of this type for window w. */
static bool find_event(WeftNode *n, unsigned int type, unsigned int w)
{
    uint64_t prod = reg_read(n, WEFT_REG_EVQ_PROD), i;
    struct weft_event ev;

    for (i = 0; i < prod && i < 64; i++) {
        qtest_memread(n->qts, n->evq + i * sizeof(ev), &ev, sizeof(ev));
        g_assert_cmpuint(le32_to_cpu(ev.seq), ==, i + 1);
        if (le16_to_cpu(ev.type) == type && le16_to_cpu(ev.window) == w) {
            return true;
        }
    }
    return false;
}

/* Points MSI-X vector v at guest RAM so a delivered message is visible. */
static uint64_t msix_to_ram(WeftNode *n, unsigned int v)
{
    uint64_t addr = alloc_zeroed(n, 64);
    uint64_t e = n->dev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE;

    QPCIBar bar = n->dev->msix_table_bar;

    qpci_io_writel(n->dev, bar, e + PCI_MSIX_ENTRY_LOWER_ADDR, (uint32_t)addr);
    qpci_io_writel(n->dev, bar, e + PCI_MSIX_ENTRY_UPPER_ADDR, addr >> 32);
    qpci_io_writel(n->dev, bar, e + PCI_MSIX_ENTRY_DATA, 0x5eed0000 | v);
    qpci_io_writel(n->dev, bar, e + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    return addr;
}

/* Writes a FIFO-mode send frame and rings START_TRANSMIT. */
static void post_fifo(WeftNode *n, unsigned int w, uint16_t dst_node,
                      uint16_t dst_window, const void *payload, uint16_t len)
{
    uint64_t slot = n->send_next[w]++ & ((1u << FIFO_LOG2) - 1);
    uint64_t frame = n->send_fifo[w] + slot * WEFT_FRAME_SIZE;
    struct weft_send_line line;

    memset(&line, 0, sizeof(line));
    line.hdr.dest_node = cpu_to_le16(dst_node);
    line.hdr.dest_window = cpu_to_le16(dst_window);
    line.hdr.length = cpu_to_le16(len);
    line.hdr.type = WEFT_SF_FIFO;
    qtest_memwrite(n->qts, frame + WEFT_FRAME_HDR_SIZE, payload, len);
    qtest_memwrite(n->qts, frame, &line, sizeof(line));
    db_write(n, w, WEFT_DB_START_TRANSMIT, 1);
}

/*
 * Waits for the send frame posted last on window w to be marked done;
 * returns its status.
 */
static unsigned int wait_send_done(WeftNode *n, unsigned int w)
{
    uint64_t slot = (n->send_next[w] - 1) & ((1u << FIFO_LOG2) - 1);
    uint64_t frame = n->send_fifo[w] + slot * WEFT_FRAME_SIZE;
    int64_t end = deadline();
    struct weft_send_hdr h;

    for (;;) {
        qtest_memread(n->qts, frame, &h, sizeof(h));
        if (h.flags & WEFT_SF_DONE) {
            return le16_to_cpu(h.status);
        }
        check_deadline(end, "the send frame to be marked done");
        g_usleep(1000);
    }
}

/*
 * Relays every frame between the given nodes' connections until pred()
 * holds (pred sees the nodes); the switch routes by dst_node.
 */
typedef bool (*RelayDone)(WeftNode **nodes, int nr, void *opaque);

static void relay_until(WeftNode **nodes, int nr, RelayDone done,
                        void *opaque, const char *what)
{
    uint8_t pkt[WEFT_WIRE_MAX_FRAME];
    int64_t end = deadline();
    int i, j;

    while (!done(nodes, nr, opaque)) {
        bool moved = false;

        for (i = 0; i < nr; i++) {
            while (sw_frame_ready(nodes[i]->conn_fd)) {
                size_t len = sw_read_frame(nodes[i]->conn_fd, pkt, what);
                uint16_t dst = lduw_le_p(pkt + offsetof(struct weft_wire_hdr,
                                                        dst_node));

                for (j = 0; j < nr; j++) {
                    if (nodes[j]->node == dst) {
                        sw_write_frame(nodes[j]->conn_fd, pkt, len);
                    }
                }
                moved = true;
            }
        }
        check_deadline(end, what);
        if (!moved) {
            g_usleep(1000);
        }
    }
}

static bool recv_valid(WeftNode *n, unsigned int w, unsigned int slot,
                       struct weft_recv_hdr *h)
{
    qtest_memread(n->qts, n->recv_fifo[w] + slot * WEFT_FRAME_SIZE, h,
                  sizeof(*h));
    return h->flags & WEFT_RF_VALID;
}

typedef struct RecvWait {
    WeftNode *node;
    unsigned int window;
    unsigned int slot;
} RecvWait;

static bool relay_done_recv(WeftNode **nodes, int nr, void *opaque)
{
    RecvWait *rw = opaque;
    struct weft_recv_hdr h;

    return recv_valid(rw->node, rw->window, rw->slot, &h);
}

/*
 * Checks in the device's DMA trace that the receive slot's payload lines
 * were written before its header line.
 */
static void check_header_last(WeftNode *n, uint64_t frame)
{
    g_autofree char *text = read_log(n);
    g_autofree char *hdr = g_strdup_printf("DMA write 0x%" PRIx64 "+",
                                           frame);
    g_autofree char *payload = g_strdup_printf("DMA write 0x%" PRIx64 "+",
                                               frame + WEFT_FRAME_HDR_SIZE);
    const char *ph = strstr(text, hdr);
    const char *pp = strstr(text, payload);

    if (!ph || !pp) {
        g_error("weft-test: no DMA trace of the receive frame 0x%" PRIx64
                " in %s:\n%s", frame, n->log, text);
    }
    g_assert_cmpint(pp - text, <, ph - text);
}

/* ---- tests --------------------------------------------------------------- */

static void assert_alive(WeftNode *n)
{
    g_assert_cmphex(reg_read(n, WEFT_REG_ID), ==,
                    WEFT_ID_MAGIC | ((uint64_t)WEFT_HW_VERSION << 32));
}


static void test_identity(void)
{
    WeftNode *n = node_start(7, SW_NONE);
    uint64_t caps;

    g_assert_cmphex(qpci_config_readw(n->dev, PCI_VENDOR_ID), ==,
                    WEFT_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(n->dev, PCI_DEVICE_ID), ==,
                    WEFT_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readb(n->dev, PCI_REVISION_ID), ==,
                    WEFT_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(n->dev, PCI_CLASS_DEVICE), ==,
                    WEFT_PCI_CLASS);
    g_assert_cmpuint(n->regs_size, ==, WEFT_REGS_SIZE);
    g_assert_cmpuint(n->db_size, >=, TEST_WINDOWS * WEFT_DB_PAGE_SIZE);
    g_assert_cmpuint(n->sram_size, >=,
                     WEFT_SRAM_RCXT_OFF(TEST_RCXTS));
    g_assert_cmpuint(qpci_msix_table_size(n->dev), ==, TEST_HANDLERS);

    g_assert_cmphex(reg_read(n, WEFT_REG_ID), ==,
                    WEFT_ID_MAGIC | ((uint64_t)WEFT_HW_VERSION << 32));
    g_assert_cmphex(qpci_io_readl(n->dev, n->regs, WEFT_REG_ID), ==,
                    WEFT_ID_MAGIC);
    g_assert_cmphex(qpci_io_readl(n->dev, n->regs, WEFT_REG_ID + 4), ==,
                    WEFT_HW_VERSION);
    caps = reg_read(n, WEFT_REG_CAPS);
    g_assert_cmpuint(WEFT_CAPS_WINDOWS(caps), ==, TEST_WINDOWS);
    g_assert_cmpuint(WEFT_CAPS_TASKS(caps), ==, WEFT_NR_TASKS);
    g_assert_cmpuint(WEFT_CAPS_TCE_TABLES(caps), ==, WEFT_NR_TCE_TABLES);
    g_assert_cmpuint(WEFT_CAPS_HANDLERS(caps), ==, TEST_HANDLERS);
    g_assert_cmpuint(reg_read(n, WEFT_REG_NR_RCXT), ==, TEST_RCXTS);
    g_assert_cmpuint(reg_read(n, WEFT_REG_NODE_ID), ==, 7);
    /* No chardev: ready, link down. */
    g_assert_cmphex(reg_read(n, WEFT_REG_STATUS), ==, WEFT_STATUS_READY);
    g_assert_cmpuint(reg_read(n, WEFT_REG_ACTIVE_WIN0), ==, 0);
    g_assert_cmpuint(counter(n, WEFT_CNT_GUEST_ERRORS), ==, 0);
    node_stop(n);
}

static void test_open_window(void)
{
    WeftNode *n = node_start(3, SW_NONE);
    size_t fifo = (size_t)WEFT_FRAME_SIZE << FIFO_LOG2;
    uint64_t send = alloc_zeroed(n, fifo), recv = alloc_zeroed(n, fifo);
    struct weft_lmt l;

    /* Never opened: INVALID. */
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_STATE), ==, WEFT_WIN_INVALID);
    g_assert_cmpuint(open_window_at(n, 1, send, recv, 0), ==, WEFT_CMD_OK);
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_STATE), ==, WEFT_WIN_VALID);
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_RECV_AVAIL), ==, 1u << FIFO_LOG2);
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_SEND_READY), ==, 0);

    /* The adapter initialised the LMT it validated; SRAM reads it back. */
    sram_read_block(n, WEFT_SRAM_LMT_OFF(1), &l, sizeof(l));
    g_assert_cmpuint(l.window_state, ==, WEFT_WIN_VALID);
    g_assert_cmpuint(l.window_key, ==, TEST_KEY);
    g_assert_cmphex(l.send_fifo_real_address, ==, send);
    g_assert_cmpuint(l.recv_fifo_avail_slots, ==, 1u << FIFO_LOG2);

    /* Opening it again is refused. */
    reg_write(n, WEFT_REG_CMD_OPEN_WINDOW, 1);
    g_assert_cmpuint(reg_read(n, WEFT_REG_CMD_STATUS), ==, WEFT_CMD_EBUSY);

    /* An LMT whose masks disagree with its sizes is refused. */
    memset(&l, 0, sizeof(l));
    l.window_id = 2;
    l.window_key = TEST_KEY;
    l.send_fifo_real_address = send;
    l.recv_fifo_real_address = recv;
    l.send_fifo_size = l.recv_fifo_size = FIFO_LOG2;
    l.send_mask = 1;
    l.recv_mask = (1u << FIFO_LOG2) - 1;
    l.send_quanta_size = 1;
    sram_write_block(n, WEFT_SRAM_LMT_OFF(2), &l, sizeof(l));
    reg_write(n, WEFT_REG_CMD_OPEN_WINDOW, 2);
    g_assert_cmpuint(reg_read(n, WEFT_REG_CMD_STATUS), ==, WEFT_CMD_EBADLMT);
    g_assert_cmpuint(db_read(n, 2, WEFT_DB_STATE), ==, WEFT_WIN_INVALID);

    /* Close. */
    reg_write(n, WEFT_REG_CMD_CLOSE_WINDOW, 1);
    g_assert_cmpuint(reg_read(n, WEFT_REG_CMD_STATUS), ==, WEFT_CMD_OK);
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_STATE), ==, WEFT_WIN_CLOSED);

    /* The RESET register puts every window back to INVALID ... */
    g_assert_cmpuint(open_window_at(n, 1, send, recv, 0), ==, WEFT_CMD_OK);
    reg_write(n, WEFT_REG_RESET, WEFT_RESET_MAGIC);
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_STATE), ==, WEFT_WIN_INVALID);

    /* ... and so does a PCI reset of the machine. */
    g_assert_cmpuint(open_window_at(n, 1, send, recv, 0), ==, WEFT_CMD_OK);
    qtest_qmp_assert_success(n->qts, "{ 'execute': 'system_reset' }");
    qtest_qmp_eventwait(n->qts, "RESET");
    node_map(n);
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_STATE), ==, WEFT_WIN_INVALID);
    g_assert_cmphex(reg_read(n, WEFT_REG_STATUS), ==, WEFT_STATUS_READY);
    node_stop(n);
}

/*
 * A node whose switch is up, with interrupts set up, window 0 (handler
 * 0) to send from and window 1 (handler 2) to receive in.
 */
static WeftNode *loopback_node(unsigned int node)
{
    WeftNode *n = node_start(node, SW_UP);

    setup_interrupts(n);
    open_window(n, 0, 0);
    open_window(n, 1, 2);
    return n;
}

/*
 * A FIFO packet from window 0 to window 1 of the same node, relayed by
 * the test's switch back into the same device.
 */
static void test_fifo_loopback(void)
{
    WeftNode *n = loopback_node(5);
    static const char msg[] = "weft loopback packet";
    RecvWait rw = { .node = n, .window = 1, .slot = 0 };
    struct weft_recv_hdr h;
    char buf[sizeof(msg)];

    db_write(n, 1, WEFT_DB_RECV_THRESHOLD, 1);

    post_fifo(n, 0, 5, 1, msg, sizeof(msg));
    relay_until(&n, 1, relay_done_recv, &rw, "the loopback packet");
    g_assert_cmpuint(wait_send_done(n, 0), ==, WEFT_R_OK);

    g_assert_true(recv_valid(n, 1, 0, &h));
    g_assert_cmpuint(h.type, ==, WEFT_RF_FIFO);
    g_assert_cmpuint(le16_to_cpu(h.length), ==, sizeof(msg));
    g_assert_cmpuint(le16_to_cpu(h.src_node), ==, 5);
    g_assert_cmpuint(le16_to_cpu(h.src_window), ==, 0);
    qtest_memread(n->qts, n->recv_fifo[1] + WEFT_FRAME_HDR_SIZE, buf,
                  sizeof(buf));
    g_assert_cmpstr(buf, ==, msg);
    check_header_last(n, n->recv_fifo[1]);

    g_assert_cmpuint(db_read(n, 1, WEFT_DB_RECV_COUNT), ==, 1);
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_RECV_AVAIL), ==,
                     (1u << FIFO_LOG2) - 1);
    g_assert_cmpuint(counter(n, WEFT_CNT_TX_PACKETS), ==, 1);
    g_assert_cmpuint(counter(n, WEFT_CNT_RX_FIFO_PACKETS), ==, 1);

    /*
     * The receive threshold event is in the event queue, and its
     * interrupt went to window 1's handler (2): that vector is masked
     * after reset, so its PBA bit is pending.
     */
    g_assert_true(find_event(n, WEFT_EV_RECV_THRESHOLD, 1));
    g_assert_true(qpci_msix_pending(n->dev, 2));
    g_assert_cmphex(reg_read(n, WEFT_REG_INT_PENDING) & (1u << 2), !=, 0);
    node_stop(n);
}

/* Waits (the device may run in an IOThread) until counter c reaches v. */
static void wait_counter(WeftNode *n, unsigned int c, uint64_t v,
                         const char *what)
{
    int64_t end = deadline();

    while (counter(n, c) < v) {
        check_deadline(end, what);
        g_usleep(1000);
    }
    g_assert_cmpuint(counter(n, c), ==, v);
}

/* One loopback packet to window 1 that reaches its receive threshold. */
static void int_mod_packet(WeftNode *n, unsigned int i)
{
    static const char msg[] = "moderated";
    RecvWait rw = { .node = n, .window = 1, .slot = i };

    db_write(n, 1, WEFT_DB_RECV_THRESHOLD, i + 1);
    post_fifo(n, 0, n->node, 1, msg, sizeof(msg));
    relay_until(&n, 1, relay_done_recv, &rw, "a loopback packet");
}

/* The driver's part: events consumed, handler 2 ready again. */
static void int_mod_service(WeftNode *n)
{
    reg_write(n, WEFT_REG_EVQ_CONS, reg_read(n, WEFT_REG_EVQ_PROD));
    reg_write(n, WEFT_REG_INT_READY, 2);
}

/*
 * Interrupt moderation through the device's timer (docs/hw-spec.md 8.1),
 * on the virtual clock that only the test moves: with INT_MOD(2) = 200 us
 * the first event interrupts at once, a second one at the same instant is
 * held until 200 us have passed, and one after an idle spell interrupts
 * at once again.
 */
static void test_int_mod(void)
{
    WeftNode *n = loopback_node(6);
    uint64_t irqs = counter(n, WEFT_CNT_INTERRUPTS);

    reg_write(n, WEFT_REG_INT_MOD(2), WEFT_INT_MOD(200, 0));
    g_assert_cmphex(reg_read(n, WEFT_REG_INT_MOD(2)), ==,
                    WEFT_INT_MOD(200, 0));
    reg_write(n, WEFT_REG_INT_MOD(2), WEFT_INT_MOD(2000, 0));
    g_assert_cmphex(reg_read(n, WEFT_REG_INT_MOD(2)), ==,
                    WEFT_INT_MOD(200, 0));

    int_mod_packet(n, 0);
    wait_counter(n, WEFT_CNT_INTERRUPTS, irqs + 1, "the first interrupt");
    int_mod_service(n);

    int_mod_packet(n, 1);
    g_assert_cmpuint(counter(n, WEFT_CNT_INT_HELD), ==, 1);
    g_assert_cmpuint(counter(n, WEFT_CNT_INTERRUPTS), ==, irqs + 1);
    qtest_clock_step(n->qts, 199 * 1000);
    g_assert_cmpuint(counter(n, WEFT_CNT_INTERRUPTS), ==, irqs + 1);
    g_assert_cmphex(reg_read(n, WEFT_REG_INT_PENDING) & (1u << 2), ==, 0);
    qtest_clock_step(n->qts, 1000);
    wait_counter(n, WEFT_CNT_INTERRUPTS, irqs + 2,
                 "the held interrupt at the end of the period");
    g_assert_cmphex(reg_read(n, WEFT_REG_INT_PENDING) & (1u << 2), !=, 0);
    int_mod_service(n);

    qtest_clock_step(n->qts, 1000 * 1000);
    int_mod_packet(n, 2);
    wait_counter(n, WEFT_CNT_INTERRUPTS, irqs + 3,
                 "the interrupt after an idle spell");
    g_assert_cmpuint(counter(n, WEFT_CNT_INT_HELD), ==, 1);
    node_stop(n);
}

/*
 * The adapter in an IOThread stops with the VM (docs/qemu-device.md,
 * "IOThread"), so that guest RAM and the core stay as a snapshot saves
 * them: a FIFO packet posted while the VM is stopped is not sent, and it
 * goes once the VM runs again.  Only with WEFT_QTEST_IOTHREAD (in the
 * main loop the migration's big lock stops the adapter instead).
 */
static void test_iothread_paused(void)
{
    WeftNode *n = loopback_node(24);
    static const char msg[] = "sent after cont";
    RecvWait rw = { .node = n, .window = 1, .slot = 0 };
    struct weft_recv_hdr h;
    char buf[sizeof(msg)];
    int i;

    qtest_qmp_assert_success(n->qts, "{ 'execute': 'stop' }");
    post_fifo(n, 0, 24, 1, msg, sizeof(msg));
    for (i = 0; i < 20; i++) {
        g_usleep(10000);
        g_assert_cmpuint(counter(n, WEFT_CNT_TX_PACKETS), ==, 0);
    }
    g_assert_false(recv_valid(n, 1, 0, &h));

    qtest_qmp_assert_success(n->qts, "{ 'execute': 'cont' }");
    relay_until(&n, 1, relay_done_recv, &rw, "the packet posted while stopped");
    g_assert_cmpuint(wait_send_done(n, 0), ==, WEFT_R_OK);
    g_assert_true(recv_valid(n, 1, 0, &h));
    qtest_memread(n->qts, n->recv_fifo[1] + WEFT_FRAME_HDR_SIZE, buf,
                  sizeof(buf));
    g_assert_cmpstr(buf, ==, msg);
    g_assert_cmpuint(counter(n, WEFT_CNT_TX_PACKETS), ==, 1);
    node_stop(n);
}

/*
 * Device-initiated recovery (docs/hw-spec.md 9.1): DEBUG_INJECT FATAL
 * sets STATUS.FATAL, posts ADAPTER_FATAL with an interrupt, discards
 * doorbells; RECOVER clears it and bumps the recovery count.
 */
static void test_fatal_inject(void)
{
    WeftNode *n = node_start(9, SW_NONE);
    uint64_t errors = counter(n, WEFT_CNT_GUEST_ERRORS);
    unsigned int h;
    bool pending = false;

    setup_interrupts(n);
    open_window(n, 0, 0);
    reg_write(n, WEFT_REG_DEBUG_INJECT, 0x1234);
    g_assert_cmphex(reg_read(n, WEFT_REG_STATUS) & WEFT_STATUS_FATAL, ==, 0);
    g_assert_cmpuint(counter(n, WEFT_CNT_GUEST_ERRORS), ==, errors + 1);

    reg_write(n, WEFT_REG_DEBUG_INJECT, WEFT_INJECT_FATAL);
    g_assert_cmphex(reg_read(n, WEFT_REG_STATUS) & WEFT_STATUS_FATAL, ==,
                    WEFT_STATUS_FATAL);
    g_assert_true(find_event(n, WEFT_EV_ADAPTER_FATAL, 0xffff));
    g_assert_cmphex(reg_read(n, WEFT_REG_INT_PENDING), !=, 0);
    for (h = 0; h < TEST_HANDLERS; h++) {
        pending |= qpci_msix_pending(n->dev, h);
    }
    g_assert_true(pending);

    db_write(n, 0, WEFT_DB_START_TRANSMIT, 1);
    g_assert_cmpuint(db_read(n, 0, WEFT_DB_SEND_READY), ==, 0);
    g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_ADAPTER_FATAL)), ==, 1);

    reg_write(n, WEFT_REG_RECOVER, WEFT_RECOVER_MAGIC);
    g_assert_cmphex(reg_read(n, WEFT_REG_STATUS) & WEFT_STATUS_FATAL, ==, 0);
    g_assert_cmpuint(reg_read(n, WEFT_REG_RECOVERY_COUNT), ==, 1);
    g_assert_cmpuint(db_read(n, 0, WEFT_DB_STATE), ==, WEFT_WIN_INVALID);
    assert_alive(n);
    node_stop(n);
}

typedef struct MsiWait {
    WeftNode *node;
    uint64_t addr;
} MsiWait;

static bool relay_done_msi(WeftNode **nodes, int nr, void *opaque)
{
    MsiWait *mw = opaque;

    return qtest_readl(mw->node->qts, mw->addr) != 0;
}

/*
 * A FIFO packet between two QEMU instances, with the MSI-X message
 * written into guest RAM of the receiver.
 */
static void test_fifo_two_nodes(void)
{
    WeftNode *a = node_start(1, SW_UP);
    WeftNode *b = node_start(2, SW_UP);
    WeftNode *both[2] = { a, b };
    uint8_t payload[WEFT_MAX_PAYLOAD], buf[WEFT_MAX_PAYLOAD];
    struct weft_recv_hdr h;
    MsiWait mw;
    unsigned int i;

    for (i = 0; i < sizeof(payload); i++) {
        payload[i] = (uint8_t)(i * 7 + 3);
    }
    setup_interrupts(b);
    open_window(a, 2, 0);
    open_window(b, 3, 1);
    db_write(b, 3, WEFT_DB_RECV_THRESHOLD, 1);
    mw.node = b;
    mw.addr = msix_to_ram(b, 1);

    post_fifo(a, 2, 2, 3, payload, sizeof(payload));
    relay_until(both, 2, relay_done_msi, &mw, "the MSI-X message on node 2");
    g_assert_cmphex(qtest_readl(b->qts, mw.addr), ==, 0x5eed0001);

    g_assert_true(recv_valid(b, 3, 0, &h));
    g_assert_cmpuint(le16_to_cpu(h.length), ==, sizeof(payload));
    g_assert_cmpuint(le16_to_cpu(h.src_node), ==, 1);
    g_assert_cmpuint(le16_to_cpu(h.src_window), ==, 2);
    qtest_memread(b->qts, b->recv_fifo[3] + WEFT_FRAME_HDR_SIZE, buf,
                  sizeof(buf));
    g_assert_cmpmem(buf, sizeof(buf), payload, sizeof(payload));
    check_header_last(b, b->recv_fifo[3]);
    g_assert_cmpuint(wait_send_done(a, 2), ==, WEFT_R_OK);
    g_assert_cmpuint(counter(a, WEFT_CNT_TX_FIFO_PACKETS), ==, 1);
    g_assert_cmpuint(counter(b, WEFT_CNT_RX_FIFO_PACKETS), ==, 1);
    node_stop(a);
    node_stop(b);
}

/*
 * The switch writes a burst of frames in one go, far more than the core's
 * receive queue holds: the device must read them under backpressure,
 * reassemble frames split across reads, and hand every one to the core.
 * Window 0 has 8 slots, so 8 packets land and the rest are FIFO_FULL.
 */
#define BURST 300

static void test_fifo_burst(void)
{
    WeftNode *n = node_start(12, SW_UP);
    size_t frame_len = WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE + 100;
    g_autofree uint8_t *stream = g_malloc0(BURST * frame_len);
    int64_t end = deadline();
    struct weft_recv_hdr h;
    uint8_t payload[100];
    unsigned int i;

    open_window(n, 0, 0);
    for (i = 0; i < BURST; i++) {
        uint8_t *f = stream + i * frame_len;
        struct weft_wire_hdr wh;

        memset(&wh, 0, sizeof(wh));
        wh.version = WEFT_WIRE_VERSION;
        wh.type = WEFT_PKT_FIFO;
        wh.dst_node = cpu_to_le16(12);
        wh.src_node = cpu_to_le16(40);
        wh.dst_window = cpu_to_le16(0);
        wh.src_window = cpu_to_le16(i);
        wh.key = cpu_to_le32(TEST_KEY);
        wh.length = cpu_to_le32(sizeof(payload));
        stl_le_p(f, WEFT_WIRE_HDR_SIZE + sizeof(payload));
        memcpy(f + WEFT_WIRE_LEN_PREFIX, &wh, sizeof(wh));
        memset(f + WEFT_WIRE_LEN_PREFIX + sizeof(wh), i & 0xff,
               sizeof(payload));
    }
    write_full(n->conn_fd, stream, BURST * frame_len);

    while (counter(n, WEFT_CNT_RX_FIFO_PACKETS) +
           counter(n, WEFT_CNT_DROP(WEFT_R_FIFO_FULL)) < BURST) {
        check_deadline(end, "the burst to be processed");
        g_usleep(1000);
    }
    g_assert_cmpuint(counter(n, WEFT_CNT_RX_FIFO_PACKETS), ==, 1u << FIFO_LOG2);
    g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_FIFO_FULL)), ==,
                     BURST - (1u << FIFO_LOG2));
    g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_BAD_HEADER)), ==, 0);
    /* The first 8 packets, in order, in the 8 slots. */
    for (i = 0; i < 1u << FIFO_LOG2; i++) {
        g_assert_true(recv_valid(n, 0, i, &h));
        g_assert_cmpuint(le16_to_cpu(h.src_window), ==, i);
        qtest_memread(n->qts, n->recv_fifo[0] + i * WEFT_FRAME_SIZE +
                      WEFT_FRAME_HDR_SIZE, payload, sizeof(payload));
        g_assert_cmpuint(payload[0], ==, i);
        g_assert_cmpuint(payload[sizeof(payload) - 1], ==, i);
    }
    g_assert_cmpuint(db_read(n, 0, WEFT_DB_RECV_AVAIL), ==, 0);
    /* The link survived the burst. */
    g_assert_cmphex(reg_read(n, WEFT_REG_STATUS) & WEFT_STATUS_LINK_UP, !=, 0);
    node_stop(n);
}

/* ---- RDMA ---------------------------------------------------------------- */

#define RDMA_PVO_KEY    0x1234
#define RDMA_TABLE      3
#define RDMA_PAGES      4
#define RDMA_LEN        (3 * 4096 + 100)

/*
 * Registers TCE table RDMA_TABLE over a fresh buffer of RDMA_PAGES 4 KiB
 * pages owned by TEST_KEY; returns the buffer's guest address.
 */
static uint64_t map_buffer(WeftNode *n, unsigned int pages, uint64_t *pvo)
{
    uint64_t buf = alloc_zeroed(n, (size_t)pages * 4096);
    uint64_t table = alloc_zeroed(n, (size_t)pages * 8);
    g_autofree uint64_t *tces = g_new(uint64_t, pages);
    unsigned int i;

    *pvo = weft_pvo_make(RDMA_PVO_KEY, RDMA_TABLE, 0);
    for (i = 0; i < pages; i++) {
        tces[i] = cpu_to_le64(weft_tce_make(weft_pvo_tce_key(*pvo),
                                            (buf >> WEFT_PAGE_SHIFT_4K) + i));
    }
    qtest_memwrite(n->qts, table, tces, (size_t)pages * 8);
    reg_write(n, WEFT_REG_TCE_BASE(RDMA_TABLE), table);
    reg_write(n, WEFT_REG_TCE_CFG(RDMA_TABLE),
              WEFT_TCE_CFG(pages, WEFT_PAGE_SHIFT_4K));
    reg_write(n, WEFT_REG_TCE_OWNER(RDMA_TABLE),
              TEST_KEY | WEFT_TCE_OWNER_VALID);
    return buf;
}

/* Posts an RDMAW or RDMAR request on window w of n (next send slot). */
static void post_rdma(WeftNode *n, unsigned int w, uint8_t type,
                      WeftNode *peer, unsigned int peer_window,
                      uint64_t local_pvo, uint64_t remote_pvo, uint64_t len,
                      uint32_t local_rcxt, uint32_t remote_rcxt, uint32_t tid)
{
    uint64_t slot = n->send_next[w]++ & ((1u << FIFO_LOG2) - 1);
    struct weft_send_line line;

    memset(&line, 0, sizeof(line));
    line.hdr.dest_node = cpu_to_le16(peer->node);
    line.hdr.dest_window = cpu_to_le16(peer_window);
    line.hdr.type = type;
    line.rdma.local_pvo = cpu_to_le64(local_pvo);
    line.rdma.remote_pvo = cpu_to_le64(remote_pvo);
    line.rdma.length = cpu_to_le64(len);
    line.rdma.local_rcxt = cpu_to_le32(local_rcxt);
    line.rdma.remote_rcxt = cpu_to_le32(remote_rcxt);
    line.rdma.remote_rcxt_key =
        cpu_to_le16(reg_read(peer, WEFT_REG_RECOVERY_COUNT));
    line.rdma.notify = WEFT_NOTIFY_BOTH;
    line.rdma.tid = cpu_to_le32(tid);
    line.rdma.user_cookie = cpu_to_le64(0xc00c1e00 | tid);
    qtest_memwrite(n->qts, n->send_fifo[w] + slot * WEFT_FRAME_SIZE, &line,
                   sizeof(line));
    db_write(n, w, WEFT_DB_START_TRANSMIT, 1);
}

static void acquire_rcxt(WeftNode *n, uint32_t r, unsigned int w)
{
    uint16_t key = reg_read(n, WEFT_REG_RECOVERY_COUNT);

    reg_write(n, WEFT_REG_CMD_ACQUIRE_RCXT, WEFT_ACQ(r, w, key));
    g_assert_cmpuint(reg_read(n, WEFT_REG_CMD_STATUS), ==, WEFT_CMD_OK);
}

typedef struct CompWait {
    WeftNode *a, *b;
} CompWait;

static bool relay_done_completions(WeftNode **nodes, int nr, void *opaque)
{
    CompWait *cw = opaque;
    struct weft_recv_hdr ha, hb;

    return recv_valid(cw->a, 1, 0, &ha) && recv_valid(cw->b, 2, 0, &hb);
}

/*
 * The set-up of the RDMA tests: window 1 on a and 2 on b, a buffer of
 * pages mapped on each (guest addresses in buf_*, PVOs in pvo_*), rCxt
 * rcxt_a on a's window 1 and rcxt_b on b's window 2.
 */
static void rdma_setup(WeftNode *a, WeftNode *b, unsigned int pages,
                       uint32_t rcxt_a, uint32_t rcxt_b,
                       uint64_t *buf_a, uint64_t *pvo_a,
                       uint64_t *buf_b, uint64_t *pvo_b)
{
    open_window(a, 1, 0);
    open_window(b, 2, 0);
    *buf_a = map_buffer(a, pages, pvo_a);
    *buf_b = map_buffer(b, pages, pvo_b);
    acquire_rcxt(a, rcxt_a, 1);
    acquire_rcxt(b, rcxt_b, 2);
}

/*
 * Slot 0 of window w of n holds a good completion of an RDMA_LEN-byte
 * operation on rCxt rcxt with (at least) the flags want; the header is
 * left in *h for further checks.
 */
static void assert_rdma_completion(WeftNode *n, unsigned int w, uint8_t want,
                                   uint32_t rcxt, struct weft_recv_hdr *h)
{
    g_assert_true(recv_valid(n, w, 0, h));
    g_assert_cmpuint(h->type, ==, WEFT_RF_COMPLETION);
    g_assert_cmphex(h->flags & want, ==, want);
    g_assert_cmpuint(le16_to_cpu(h->status), ==, WEFT_R_OK);
    g_assert_cmpuint(le32_to_cpu(h->rcxt), ==, rcxt);
    g_assert_cmpuint(le64_to_cpu(h->total_length), ==, RDMA_LEN);
}

static void test_rdma_write(void)
{
    WeftNode *a = node_start(10, SW_UP);
    WeftNode *b = node_start(11, SW_UP);
    WeftNode *both[2] = { a, b };
    uint64_t pvo_a, pvo_b, buf_a, buf_b;
    g_autofree uint8_t *data = g_malloc(RDMA_LEN);
    g_autofree uint8_t *got = g_malloc(RDMA_LEN + 16);
    struct weft_recv_hdr h;
    CompWait cw = { a, b };
    unsigned int i;

    for (i = 0; i < RDMA_LEN; i++) {
        data[i] = (uint8_t)(i ^ (i >> 8) ^ 0x5a);
    }
    rdma_setup(a, b, RDMA_PAGES, 5, 9, &buf_a, &pvo_a, &buf_b, &pvo_b);
    qtest_memwrite(a->qts, buf_a, data, RDMA_LEN);

    /* RDMAW of RDMA_LEN bytes from a:buf_a to b:buf_b + 8. */
    post_rdma(a, 1, WEFT_SF_RDMAW, b, 2, pvo_a, pvo_b + 8, RDMA_LEN, 5, 9, 1);

    relay_until(both, 2, relay_done_completions, &cw,
                "RDMA write completions on both nodes");

    qtest_memread(b->qts, buf_b, got, RDMA_LEN + 16);
    for (i = 0; i < 8; i++) {
        g_assert_cmpuint(got[i], ==, 0);
    }
    g_assert_cmpmem(got + 8, RDMA_LEN, data, RDMA_LEN);
    for (i = RDMA_LEN + 8; i < RDMA_LEN + 16; i++) {
        g_assert_cmpuint(got[i], ==, 0);
    }

    /* Completion at the source (initiator) window ... */
    assert_rdma_completion(a, 1, WEFT_RF_AS_SOURCE, 5, &h);
    g_assert_cmpuint(le32_to_cpu(h.tid), ==, 1);
    g_assert_cmphex(le64_to_cpu(h.user_cookie), ==, 0xc00c1e01);
    /* ... and at the target window. */
    assert_rdma_completion(b, 2, WEFT_RF_AS_TARGET, 9, &h);

    g_assert_cmpuint(counter(a, WEFT_CNT_RDMAW_STARTED), ==, 1);
    g_assert_cmpuint(counter(b, WEFT_CNT_RDMAW_DONE), ==, 1);
    g_assert_cmpuint(counter(a, WEFT_CNT_TX_PACKETS), >=,
                     DIV_ROUND_UP(RDMA_LEN, WEFT_MAX_PAYLOAD));
    node_stop(a);
    node_stop(b);
}

/* QMP query-status of n is "running" (polled up to 10 s). */
static void wait_running(QTestState *qts)
{
    int i;

    for (i = 0; i < 1000; i++) {
        QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-status' }");
        bool running = !strcmp(qdict_get_str(qdict_get_qdict(rsp, "return"),
                                             "status"), "running");

        qobject_unref(rsp);
        if (running) {
            return;
        }
        g_usleep(10000);
    }
    g_assert_not_reached();
}

/*
 * Migration (docs/qemu-device.md, "Migration and snapshots"): the state of
 * node 9, saved to a file, loaded by a second QEMU whose device is node 11
 * (-incoming): registers and SRAM come back, the node id and the key
 * epoch are the loading device's own.
 */
static void test_migration(void)
{
    g_autofree char *file = g_strdup_printf("%s/weft-state", tmpdir);
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *log = g_strdup_printf("%s/qemu-node11.log", tmpdir);
    uint8_t lmt[WEFT_LMT_SIZE], before[WEFT_LMT_SIZE], after[WEFT_LMT_SIZE];
    WeftNode *a = node_start(9, SW_NONE);
    WeftNode *b = g_new0(WeftNode, 1);
    QDict *rsp;
    size_t i;
    int k;

    for (i = 0; i < sizeof(lmt); i++) {
        lmt[i] = (uint8_t)(i * 7 + 1);
    }
    sram_write_block(a, WEFT_SRAM_LMT_OFF(1), lmt, sizeof(lmt));
    sram_read_block(a, WEFT_SRAM_LMT_OFF(1), before, sizeof(before));
    reg_write(a, WEFT_REG_EVQ_BASE, 0x123440);
    reg_write(a, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
    g_assert_cmpuint(reg_read(a, WEFT_REG_KEY_EPOCH), ==, 1);
    g_assert_cmpuint(reg_read(a, WEFT_REG_NODE_ID), ==, 9);

    unlink(file);
    rsp = qtest_qmp(a->qts, "{ 'execute': 'migrate', 'arguments': "
                    "{ 'uri': %s } }", uri);
    g_assert_false(qdict_haskey(rsp, "error"));
    qobject_unref(rsp);
    for (k = 0; k < 1000; k++) {
        const char *st;
        bool done;

        rsp = qtest_qmp(a->qts, "{ 'execute': 'query-migrate' }");
        st = qdict_get_try_str(qdict_get_qdict(rsp, "return"), "status");
        g_assert_cmpstr(st ? st : "", !=, "failed");
        done = st && !strcmp(st, "completed");
        qobject_unref(rsp);
        if (done) {
            break;
        }
        g_usleep(10000);
    }
    g_assert_cmpint(k, <, 1000);
    node_stop(a);

    b->node = 11;
    b->conn_fd = -1;
    b->listen_fd = -1;
    b->log = g_strdup(log);
    b->qts = qtest_initf("-machine pc -nodefaults -d guest_errors,invalid_mem "
                         "-D %s -trace weft_state_loaded -incoming file:%s "
                         "%s-device weft,node-id=11,windows=%u,rcxts=%u,"
                         "handlers=%u%s", log, file, io_obj, TEST_WINDOWS,
                         TEST_RCXTS, TEST_HANDLERS, io_prop);
    wait_running(b->qts);
    node_attach(b);
    g_assert_cmpuint(reg_read(b, WEFT_REG_NODE_ID), ==, 11);
    g_assert_cmpuint(reg_read(b, WEFT_REG_KEY_EPOCH), ==, 0);
    g_assert_cmpuint(reg_read(b, WEFT_REG_EVQ_BASE), ==, 0x123440);
    sram_read_block(b, WEFT_SRAM_LMT_OFF(1), after, sizeof(after));
    g_assert_cmpmem(after, sizeof(after), before, sizeof(before));
    assert_alive(b);
    node_stop(b);
    unlink(file);
}

/*
 * KEY_EPOCH (hw-spec 9): advanced by KEY_EPOCH_NEXT, kept by RESET, and,
 * with an epoch-file, kept across power cycles (QEMU restarts).
 */
static void test_key_epoch(void)
{
    g_autofree char *file = g_strdup_printf("%s/node-epoch", tmpdir);
    g_autofree char *props = g_strdup_printf(",epoch-file=%s", file);
    g_autofree char *txt = NULL;
    WeftNode *n;

    unlink(file);
    n = node_start_full(10, SW_NONE, NULL, props);
    g_assert_cmpuint(reg_read(n, WEFT_REG_KEY_EPOCH), ==, 0);
    reg_write(n, WEFT_REG_KEY_EPOCH_NEXT, 7);
    g_assert_cmpuint(reg_read(n, WEFT_REG_KEY_EPOCH), ==, 0);
    reg_write(n, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
    reg_write(n, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
    reg_write(n, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
    g_assert_cmpuint(reg_read(n, WEFT_REG_KEY_EPOCH), ==, 3);
    g_assert_true(g_file_get_contents(file, &txt, NULL, NULL));
    g_assert_cmpstr(txt, ==, "3\n");
    reg_write(n, WEFT_REG_RESET, WEFT_RESET_MAGIC);
    g_assert_cmpuint(reg_read(n, WEFT_REG_KEY_EPOCH), ==, 3);
    node_stop(n);

    /* Power cycle: the stored epoch comes back. */
    n = node_start_full(10, SW_NONE, NULL, props);
    g_assert_cmpuint(reg_read(n, WEFT_REG_KEY_EPOCH), ==, 3);
    reg_write(n, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
    g_assert_cmpuint(reg_read(n, WEFT_REG_KEY_EPOCH), ==, 4);
    node_stop(n);
    unlink(file);

    /* Without a store the epoch lives as long as the device. */
    n = node_start(10, SW_NONE);
    g_assert_cmpuint(reg_read(n, WEFT_REG_KEY_EPOCH), ==, 0);
    reg_write(n, WEFT_REG_KEY_EPOCH_NEXT, WEFT_EPOCH_MAGIC);
    g_assert_cmpuint(reg_read(n, WEFT_REG_KEY_EPOCH), ==, 1);
    node_stop(n);
}

/* QOM describes every property of the device (what `-device weft,help`
 * prints): device-list-properties lists each with a description. */
static void test_properties(void)
{
    static const char *const want[] = {
        "node-id", "windows", "rcxts", "handlers", "chardev", "token-secret",
        "epoch-file", "verbs-qps", "verbs-cqs", "verbs-pds", "verbs-tpt", "verbs-uars",
    };
    WeftNode *n = node_start(22, SW_NONE);
    QDict *rsp = qtest_qmp(n->qts, "{ 'execute': 'device-list-properties', "
                           "'arguments': { 'typename': 'weft' } }");
    QList *props;
    size_t i;

    g_assert_true(qdict_haskey(rsp, "return"));
    props = qdict_get_qlist(rsp, "return");
    for (i = 0; i < G_N_ELEMENTS(want); i++) {
        const QListEntry *e;
        const char *desc = NULL;

        QLIST_FOREACH_ENTRY(props, e) {
            QDict *p = qobject_to(QDict, qlist_entry_obj(e));

            if (!strcmp(qdict_get_str(p, "name"), want[i])) {
                desc = qdict_get_try_str(p, "description");
            }
        }
        g_test_message("property %s: %s", want[i], desc ? desc : "(none)");
        g_assert_nonnull(desc);
        g_assert_cmpuint(strlen(desc), >, 0);
    }
    qobject_unref(rsp);
    node_stop(n);
}

/* An RDMA read: node a pulls a buffer of node b into its own memory. */
static void test_rdma_read(void)
{
    WeftNode *a = node_start(15, SW_UP);
    WeftNode *b = node_start(16, SW_UP);
    WeftNode *both[2] = { a, b };
    uint64_t pvo_a, pvo_b, buf_a, buf_b;
    g_autofree uint8_t *data = g_malloc(RDMA_LEN);
    g_autofree uint8_t *got = g_malloc(RDMA_LEN);
    struct weft_recv_hdr h;
    CompWait cw = { a, b };
    unsigned int i;

    for (i = 0; i < RDMA_LEN; i++) {
        data[i] = (uint8_t)(i * 13 + 1);
    }
    rdma_setup(a, b, RDMA_PAGES, 7, 8, &buf_a, &pvo_a, &buf_b, &pvo_b);
    qtest_memwrite(b->qts, buf_b + 100, data, RDMA_LEN);

    post_rdma(a, 1, WEFT_SF_RDMAR, b, 2, pvo_a, pvo_b + 100, RDMA_LEN, 7, 8, 4);

    relay_until(both, 2, relay_done_completions, &cw,
                "RDMA read completions on both nodes");
    qtest_memread(a->qts, buf_a, got, RDMA_LEN);
    g_assert_cmpmem(got, RDMA_LEN, data, RDMA_LEN);

    assert_rdma_completion(a, 1, WEFT_RF_AS_SOURCE | WEFT_RF_READ, 7, &h);
    g_assert_cmpuint(le32_to_cpu(h.tid), ==, 4);
    assert_rdma_completion(b, 2, WEFT_RF_AS_TARGET | WEFT_RF_READ, 8, &h);
    g_assert_cmpuint(counter(a, WEFT_CNT_RDMAR_STARTED), ==, 1);
    g_assert_cmpuint(counter(b, WEFT_CNT_RDMAR_SERVED), ==, 1);
    g_assert_cmpuint(counter(a, WEFT_CNT_RDMAR_DONE), ==, 1);
    node_stop(a);
    node_stop(b);
}

/*
 * Hot-plug a second weft device linked through a chardev added over QMP,
 * bring its link up, and unplug it again (ACPI eject): the device's exit
 * path must release everything, and the machine keeps running.
 */
#define HP_SLOT 6

static void test_hotplug(void)
{
    WeftNode *n = node_start(21, SW_NONE);
    WeftNode hp = { .node = 22, .conn_fd = -1 };
    g_autofree char *sock = g_strdup_printf("%s/hotplug.sock", tmpdir);
    g_autofree char *addr = g_strdup_printf("%02x.0", HP_SLOT);
    int64_t end = deadline();
    QPCIDevice *dev;
    QPCIBar regs;
    uint8_t byte;

    hp.listen_fd = sw_listen(sock);
    qtest_qmp_assert_success(n->qts,
        "{ 'execute': 'chardev-add', 'arguments': { 'id': 'hsw', "
        "'backend': { 'type': 'socket', 'data': { 'server': false, "
        "'reconnect-ms': 200, 'addr': { 'type': 'unix', "
        "'data': { 'path': %s } } } } } }", sock);
    if (*io_prop) {
        qtest_qmp_device_add(n->qts, "weft", "hp",
                             "{ 'addr': %s, 'node-id': 22, 'chardev': 'hsw', "
                             "'iothread': 'weft-io' }", addr);
    } else {
        qtest_qmp_device_add(n->qts, "weft", "hp",
                             "{ 'addr': %s, 'node-id': 22, 'chardev': 'hsw' }",
                             addr);
    }
    sw_handshake(&hp, WEFT_SW_OK);

    dev = qpci_device_find(n->bus, QPCI_DEVFN(HP_SLOT, 0));
    g_assert_nonnull(dev);
    g_assert_cmphex(qpci_config_readw(dev, PCI_DEVICE_ID), ==,
                    WEFT_PCI_DEVICE_ID);
    qpci_device_enable(dev);
    regs = qpci_iomap(dev, WEFT_BAR_REGS, NULL);
    g_assert_cmpuint(qpci_io_readq(dev, regs, WEFT_REG_NODE_ID), ==, 22);
    while (!(qpci_io_readq(dev, regs, WEFT_REG_STATUS) & WEFT_STATUS_LINK_UP)) {
        check_deadline(end, "the hot-plugged device's link");
        g_usleep(1000);
    }

    qpci_unplug_acpi_device_test(n->qts, "hp", HP_SLOT);
    g_assert_cmphex(qpci_config_readw(dev, PCI_VENDOR_ID), ==, 0xffff);
    g_free(dev);

    /* The chardev outlives the device; removing it closes the socket. */
    qtest_qmp_assert_success(n->qts, "{ 'execute': 'chardev-remove', "
                             "'arguments': { 'id': 'hsw' } }");
    while (!wait_fd(hp.conn_fd, POLLIN, end)) {
        check_deadline(end, "the chardev's socket to close");
    }
    g_assert_cmpint(read(hp.conn_fd, &byte, 1), ==, 0);
    close(hp.conn_fd);
    close(hp.listen_fd);
    unlink(sock);
    assert_alive(n);
    node_stop(n);
}

/*
 * A 1 MiB RDMA write while the switch does not read: the socket and the
 * device's output buffer fill up, xmit answers -EAGAIN (counted as
 * TX_BLOCKED), and once the switch reads again every packet goes out
 * from where it stopped: nothing dropped, the data complete.
 */
#define BIG_PAGES 256
#define BIG_LEN (BIG_PAGES * 4096)

static void test_rdma_backpressure(void)
{
    WeftNode *a = node_start(30, SW_UP);
    WeftNode *b = node_start(31, SW_UP);
    WeftNode *both[2] = { a, b };
    uint64_t pvo_a, pvo_b, buf_a, buf_b;
    g_autofree uint8_t *data = g_malloc(BIG_LEN);
    g_autofree uint8_t *got = g_malloc(BIG_LEN);
    CompWait cw = { a, b };
    int64_t end = deadline();
    unsigned int i;

    for (i = 0; i < BIG_LEN; i++) {
        data[i] = (uint8_t)(i * 31 + (i >> 12));
    }
    rdma_setup(a, b, BIG_PAGES, 1, 2, &buf_a, &pvo_a, &buf_b, &pvo_b);
    qtest_memwrite(a->qts, buf_a, data, BIG_LEN);

    post_rdma(a, 1, WEFT_SF_RDMAW, b, 2, pvo_a, pvo_b, BIG_LEN, 1, 2, 1);
    while (counter(a, WEFT_CNT_TX_BLOCKED) == 0) {
        check_deadline(end, "the device to find the socket full");
        g_usleep(1000);
    }
    relay_until(both, 2, relay_done_completions, &cw,
                "the 1 MiB RDMA write's completions");
    qtest_memread(b->qts, buf_b, got, BIG_LEN);
    g_assert_cmpmem(got, BIG_LEN, data, BIG_LEN);
    g_assert_cmpuint(counter(a, WEFT_CNT_DROP(WEFT_R_NO_LINK)), ==, 0);
    g_assert_cmpuint(counter(a, WEFT_CNT_TX_PACKETS), >=,
                     DIV_ROUND_UP(BIG_LEN, WEFT_MAX_PAYLOAD));
    g_assert_cmpuint(counter(b, WEFT_CNT_RDMAW_DONE), ==, 1);
    node_stop(a);
    node_stop(b);
}

/* ---- link ---------------------------------------------------------------- */

/* Without a switch the device keeps working and counts what it drops. */
static void test_link_absent(void)
{
    WeftNode *n = node_start(4, SW_NONE);
    static const char msg[] = "nobody listens";

    open_window(n, 0, 0);
    post_fifo(n, 0, 9, 0, msg, sizeof(msg));
    g_assert_cmpuint(wait_send_done(n, 0), ==, WEFT_R_NO_LINK);
    g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_NO_LINK)), ==, 1);
    g_assert_cmpuint(counter(n, WEFT_CNT_TX_PACKETS), ==, 0);
    g_assert_cmphex(reg_read(n, WEFT_REG_ID) & 0xffffffffu, ==, WEFT_ID_MAGIC);
    node_stop(n);
}

/*
 * Every wire packet is untrusted: random frames (valid length prefixes,
 * random headers and payloads, every packet type) must neither crash the
 * device nor desynchronise the stream; a good packet sent afterwards
 * still arrives.
 */
static void test_link_garbage(void)
{
    WeftNode *n = node_start(14, SW_UP);
    static const char msg[] = "still in sync";
    RecvWait rw = { .node = n, .window = 1, .slot = 0 };
    uint8_t pkt[WEFT_WIRE_MAX_FRAME];
    struct weft_wire_hdr *h = (struct weft_wire_hdr *)pkt;
    unsigned int i, j;

    open_window(n, 0, 0);
    open_window(n, 1, 0);
    acquire_rcxt(n, 3, 1);
    for (i = 0; i < 400; i++) {
        size_t len = g_test_rand_int_range(WEFT_WIRE_HDR_SIZE,
                                           WEFT_WIRE_MAX_FRAME + 1);

        for (j = 0; j < len; j++) {
            pkt[j] = g_test_rand_int();
        }
        /*
         * Half of them aimed at this node's windows and rCxts, so they
         * get past the first checks.
         */
        if (i & 1) {
            h->version = WEFT_WIRE_VERSION;
            h->type = 1 + i % 6;
            h->dst_node = cpu_to_le16(14);
            h->dst_window = cpu_to_le16(i % 3);
            h->key = cpu_to_le32(TEST_KEY);
            h->rcxt = cpu_to_le32(i % 5);
            h->rcxt_key = 0;
        }
        sw_write_frame(n->conn_fd, pkt, len);
    }
    assert_alive(n);
    post_fifo(n, 0, 14, 1, msg, sizeof(msg));
    relay_until(&n, 1, relay_done_recv, &rw, "a good packet after garbage");
    g_assert_cmphex(reg_read(n, WEFT_REG_STATUS) & WEFT_STATUS_LINK_UP, !=, 0);
    g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_BAD_HEADER)) +
                     counter(n, WEFT_CNT_DROP(WEFT_R_NOT_FOR_US)), >, 0);
    node_stop(n);
}

/*
 * The switch is not there when QEMU starts: the device works, counts
 * what it drops, and connects once the switch appears.
 */
static void test_link_late_switch(void)
{
    WeftNode *n = node_start(13, SW_LATE);
    static const char msg[] = "switch came up";
    RecvWait rw = { .node = n, .window = 1, .slot = 0 };

    open_window(n, 0, 0);
    open_window(n, 1, 0);
    post_fifo(n, 0, 13, 1, msg, sizeof(msg));
    g_assert_cmpuint(wait_send_done(n, 0), ==, WEFT_R_NO_LINK);
    g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_NO_LINK)), ==, 1);

    n->listen_fd = sw_listen(n->sock);
    sw_handshake(n, WEFT_SW_OK);
    wait_link(n, true);
    post_fifo(n, 0, 13, 1, msg, sizeof(msg));
    relay_until(&n, 1, relay_done_recv, &rw, "a packet once the switch is up");
    g_assert_cmpuint(wait_send_done(n, 0), ==, WEFT_R_OK);
    g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_NO_LINK)), ==, 1);
    node_stop(n);
}

/*
 * The switch goes away and comes back; a corrupt frame drops the
 * connection; a refused HELLO keeps the link down.
 */
static void test_link_reconnect(void)
{
    WeftNode *n = node_start(6, SW_UP);
    static const char msg[] = "after reconnect";
    RecvWait rw = { .node = n, .window = 1, .slot = 0 };
    uint8_t bad[WEFT_WIRE_LEN_PREFIX];

    close(n->conn_fd);
    n->conn_fd = -1;
    wait_link(n, false);

    /* Refused HELLO: the link stays down. */
    sw_handshake(n, WEFT_SW_NODE_IN_USE);
    wait_log(n, "switch refused HELLO, status 1");
    g_assert_cmphex(reg_read(n, WEFT_REG_STATUS) & WEFT_STATUS_LINK_UP, ==, 0);
    close(n->conn_fd);

    /*
     * The device reconnects by itself; a frame longer than the maximum
     * makes it drop the connection.
     */
    sw_handshake(n, WEFT_SW_OK);
    wait_link(n, true);
    stl_le_p(bad, WEFT_WIRE_MAX_FRAME + 1);
    write_full(n->conn_fd, bad, sizeof(bad));
    wait_log(n, "protocol error from the switch: bad frame length");
    wait_link(n, false);
    close(n->conn_fd);

    sw_handshake(n, WEFT_SW_OK);
    wait_link(n, true);
    open_window(n, 0, 0);
    open_window(n, 1, 0);
    post_fifo(n, 0, 6, 1, msg, sizeof(msg));
    relay_until(&n, 1, relay_done_recv, &rw, "a packet after reconnecting");
    node_stop(n);
}

/*
 * token-secret: the HELLO carries the node's token (checked in
 * sw_handshake), also after a reconnect, and the link comes up.
 */
static void test_link_token(void)
{
    static const char token[] =
        "00112233445566778899aabbccddeeff0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    WeftNode *n = node_start_full(7, SW_UP, token, "");

    close(n->conn_fd);
    n->conn_fd = -1;
    wait_link(n, false);
    sw_handshake(n, WEFT_SW_OK);
    wait_link(n, true);
    node_stop(n);
}

/* Accepts the device's connection and reads its HELLO; returns its flags. */
static uint8_t sw_read_hello(WeftNode *n)
{
    uint8_t pkt[WEFT_WIRE_MAX_FRAME];
    struct weft_wire_hdr h;

    n->conn_fd = sw_accept(n);
    sw_read_frame(n->conn_fd, pkt, "the device's HELLO");
    memcpy(&h, pkt, sizeof(h));
    g_assert_cmpuint(h.type, ==, WEFT_PKT_HELLO);
    return h.flags;
}

/* HELLO_ACK status 0 with flags, and nfds descriptors (SCM_RIGHTS). */
static void sw_ack(WeftNode *n, uint8_t flags, const int *fds, size_t nfds)
{
    uint8_t b[WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE];
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(WEFT_SHM_NFDS * sizeof(int))];
    } u;
    struct iovec iov = { b, sizeof(b) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct weft_wire_hdr h;
    struct cmsghdr *cm;

    memset(&h, 0, sizeof(h));
    h.version = WEFT_WIRE_VERSION;
    h.type = WEFT_PKT_HELLO_ACK;
    h.flags = flags;
    h.dst_node = cpu_to_le16(n->node);
    stl_le_p(b, WEFT_WIRE_HDR_SIZE);
    memcpy(b + WEFT_WIRE_LEN_PREFIX, &h, sizeof(h));
    if (nfds) {
        memset(&u, 0, sizeof(u));
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
    }
    g_assert_cmpint(sendmsg(n->conn_fd, &m, 0), ==, sizeof(b));
}

/*
 * transport=socket never asks for shared memory; transport=shm refuses a
 * switch that does not grant it; granted, a packet goes out through the
 * device's ring and comes back in through the switch's (the test plays
 * the switch), with no byte on the socket.
 */
static void test_link_transport(void)
{
    static const char msg[] = "through shared memory";
    WeftNode *n = node_start_full(14, SW_LATE, NULL, ",transport=socket");
    RecvWait rw = { .window = 1, .slot = 0 };
    struct weft_shm_view from_dev, to_dev;
    uint8_t pkt[WEFT_WIRE_MAX_FRAME];
    int fds[WEFT_SHM_NFDS];
    uint64_t one = 1;
    int64_t end;
    uint32_t rec;
    void *mem;
    int len;

    n->listen_fd = sw_listen(n->sock);
    g_assert_cmphex(sw_read_hello(n), ==, 0);
    sw_ack(n, 0, NULL, 0);
    wait_link(n, true);
    node_stop(n);

    n = node_start_full(15, SW_LATE, NULL, ",transport=shm");
    rw.node = n;
    n->listen_fd = sw_listen(n->sock);
    g_assert_cmphex(sw_read_hello(n), ==, WEFT_WF_SHM_REQ);
    sw_ack(n, 0, NULL, 0);
    wait_log(n, "protocol error from the switch: no shared memory");
    g_assert_cmphex(reg_read(n, WEFT_REG_STATUS) & WEFT_STATUS_LINK_UP, ==, 0);
    close(n->conn_fd);

    /* The device reconnects; this time the switch grants the rings. */
    g_assert_cmphex(sw_read_hello(n), ==, WEFT_WF_SHM_REQ);
    fds[0] = memfd_create("weft-test-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    fds[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    fds[2] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    g_assert_cmpint(fds[0], >=, 0);
    g_assert_cmpint(ftruncate(fds[0], WEFT_SHM_SIZE), ==, 0);
    g_assert_cmpint(fcntl(fds[0], F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW),
                    ==, 0);
    mem = mmap(NULL, WEFT_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
               fds[0], 0);
    g_assert(mem != MAP_FAILED);
    weft_shm_init(mem);
    weft_shm_view_init(&from_dev, mem, WEFT_SHM_A2S_OFF, false);
    weft_shm_view_init(&to_dev, mem, WEFT_SHM_S2A_OFF, true);
    sw_ack(n, WEFT_WF_SHM, fds, WEFT_SHM_NFDS);
    wait_link(n, true);
    wait_log(n, "frames over the shm");

    open_window(n, 0, 0);
    open_window(n, 1, 0);
    post_fifo(n, 0, 15, 1, msg, sizeof(msg));
    end = deadline();
    while ((len = weft_shm_peek(&from_dev, pkt, &rec)) == 0) {
        check_deadline(end, "a packet in the device's ring");
        g_usleep(1000);
    }
    g_assert_cmpint(len, ==, WEFT_WIRE_HDR_SIZE + sizeof(msg));
    weft_shm_consume(&from_dev, rec);
    g_assert_cmpint(weft_shm_push(&to_dev, pkt, len), ==, 0);
    if (weft_shm_wake_consumer(&to_dev)) {
        g_assert_cmpint(write(fds[1], &one, sizeof(one)), ==, sizeof(one));
    }
    end = deadline();
    while (!relay_done_recv(&n, 1, &rw)) {
        check_deadline(end, "the packet from the switch's ring");
        g_usleep(1000);
    }
    g_assert_cmpuint(wait_send_done(n, 0), ==, WEFT_R_OK);
    g_assert_false(sw_frame_ready(n->conn_fd));
    node_stop(n);
    munmap(mem, WEFT_SHM_SIZE);
    close(fds[0]);
    close(fds[1]);
    close(fds[2]);
}

/* ---- misuse -------------------------------------------------------------- */

static void test_misuse(void)
{
    WeftNode *n = node_start(8, SW_NONE);
    g_autofree char *evq_msg = NULL;
    uint64_t errors = 0;

    /* Past the registers of BAR 0 (still inside the BAR). */
    g_assert_cmpuint(reg_read(n, 0x8000), ==, 0);
    reg_write(n, 0xf000, 0x1234);
    wait_log(n, "weft: regs: write to unknown offset 0xf000");
    g_assert_cmpuint(counter(n, WEFT_CNT_GUEST_ERRORS), >=, errors + 2);
    errors = counter(n, WEFT_CNT_GUEST_ERRORS);
    /* A write to a read-only register. */
    reg_write(n, WEFT_REG_ID, 0);
    wait_log(n, "write to read-only ID");
    assert_alive(n);

    /* Misaligned and 2-byte accesses: refused by QEMU's memory core. */
    qpci_io_readl(n->dev, n->regs, 0x2);
    wait_log(n, "region 'weft-regs', reason: invalid size");
    qpci_io_writew(n->dev, n->db, 0, 1);
    wait_log(n, "region 'weft-doorbells', reason: invalid size");
    assert_alive(n);

    /* Bad SRAM indices: beyond the used SRAM, a bad rCxt and window. */
    g_assert_cmpuint(qpci_io_readq(n->dev, n->sram, n->sram_size - 8), ==, 0);
    wait_log(n, "sram: read beyond the used SRAM");
    qpci_io_writeq(n->dev, n->sram, WEFT_SRAM_RCXT_OFF(TEST_RCXTS), 1);
    wait_log(n, "sram: write beyond the used SRAM");
    reg_write(n, WEFT_REG_CMD_ACQUIRE_RCXT, WEFT_ACQ(TEST_RCXTS, 0, 0));
    g_assert_cmpuint(reg_read(n, WEFT_REG_CMD_STATUS), ==, WEFT_CMD_EINVAL);
    wait_log(n, "weft: CMD_ACQUIRE_RCXT: command refused");
    reg_write(n, WEFT_REG_CMD_OPEN_WINDOW, TEST_WINDOWS);
    g_assert_cmpuint(reg_read(n, WEFT_REG_CMD_STATUS), ==, WEFT_CMD_EINVAL);
    wait_log(n, "weft: CMD_OPEN_WINDOW: command refused");
    assert_alive(n);

    /* Doorbells of a closed window and of a window that does not exist. */
    open_window(n, 1, 0);
    reg_write(n, WEFT_REG_CMD_CLOSE_WINDOW, 1);
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_STATE), ==, WEFT_WIN_CLOSED);
    db_write(n, 1, WEFT_DB_START_TRANSMIT, 1);
    wait_log(n, "weft: START_TRANSMIT: doorbell discarded");
    g_assert_cmpuint(db_read(n, 1, WEFT_DB_SEND_READY), ==, 0);
    db_write(n, 2, WEFT_DB_RETURN_SLOTS, 1);
    g_assert_cmpint(count_in_log(n, "doorbell discarded"), ==, 2);
    if (n->db_size > TEST_WINDOWS * WEFT_DB_PAGE_SIZE) {
        db_write(n, TEST_WINDOWS, WEFT_DB_START_TRANSMIT, 1);
        wait_log(n, "doorbell: write beyond the last window");
    }
    db_read(n, 0, WEFT_DB_START_TRANSMIT);
    wait_log(n, "doorbell: read of write-only START_TRANSMIT");
    assert_alive(n);

    /*
     * DMA outside guest RAM.  The event queue is put on the device's own
     * registers (MMIO, not RAM), and window 3's send FIFO far beyond RAM:
     * StartTransmit makes the adapter read the frame (refused), which is
     * a window fatal error whose event write is refused as well.
     */
    reg_write(n, WEFT_REG_INT_CONFIG, TEST_HANDLERS);
    reg_write(n, WEFT_REG_EVQ_BASE, n->regs.addr);
    reg_write(n, WEFT_REG_EVQ_SIZE, 4);
    reg_write(n, WEFT_REG_INT_READY, 0);
    g_assert_cmpuint(open_window_at(n, 3, 0x7f0000000000ull,
                                    alloc_zeroed(n, FIFO_BYTES),
                                    0), ==, WEFT_CMD_OK);
    db_write(n, 3, WEFT_DB_START_TRANSMIT, 1);
    wait_log(n, "DMA read of 128 bytes at 0x7f0000000000 outside guest RAM");
    evq_msg = g_strdup_printf("DMA write of %zu bytes at 0x%" PRIx64
                              " outside guest RAM", sizeof(struct weft_event),
                              n->regs.addr);
    wait_log(n, evq_msg);
    g_assert_cmpuint(db_read(n, 3, WEFT_DB_STATE), ==, WEFT_WIN_FATAL);
    g_assert_cmpuint(counter(n, WEFT_CNT_WINDOW_FATAL), ==, 1);
    g_assert_cmpuint(reg_read(n, WEFT_REG_EVQ_PROD), ==, 0);
    assert_alive(n);
    /*
     * Another device's MMIO (the I/O APIC of the pc machine) is not RAM
     * either: the adapter must not read a send frame from it.
     */
    g_assert_cmpuint(open_window_at(n, 2, PC_IOAPIC_BASE,
                                    alloc_zeroed(n, FIFO_BYTES),
                                    0), ==, WEFT_CMD_OK);
    db_write(n, 2, WEFT_DB_START_TRANSMIT, 1);
    wait_log(n, "DMA read of 128 bytes at 0xfec00000 outside guest RAM");
    g_assert_cmpuint(db_read(n, 2, WEFT_DB_STATE), ==, WEFT_WIN_FATAL);
    g_assert_cmpuint(counter(n, WEFT_CNT_WINDOW_FATAL), ==, 2);
    assert_alive(n);
    g_assert_cmpuint(counter(n, WEFT_CNT_GUEST_ERRORS), >, errors);
    node_stop(n);
}


/* ---- verbs engine (docs/hw-spec.md section 16) ---------------------------- */

#define V_STAG          WEFT_STAG(1, 1)

/*
 * Runs a 64-byte command block k (verbs or counter engine) through the
 * command register reg; returns the status register's value, fills resp.
 */
static uint64_t cmd_block(WeftNode *n, uint64_t reg, uint64_t status_reg,
                          const void *k, struct weft_vcmd_resp *resp)
{
    uint64_t a = alloc_zeroed(n, 128 + 64);
    uint64_t st;

    a = (a + 63) & ~63ull;
    qtest_memwrite(n->qts, a, k, 64);
    reg_write(n, reg, a);
    st = reg_read(n, status_reg);
    if (resp) {
        qtest_memread(n->qts, a + 64, resp, sizeof(*resp));
        g_assert_cmpuint(resp->status, ==, st);
    }
    return st;
}

/* Runs a verbs command block; returns VERBS_CMD_STATUS, fills resp. */
static uint64_t vcmd(WeftNode *n, const struct weft_vcmd *k,
                     struct weft_vcmd_resp *resp)
{
    return cmd_block(n, WEFT_REG_VERBS_CMD, WEFT_REG_VERBS_CMD_STATUS, k, resp);
}

static void uar_write(WeftNode *n, uint32_t uar, uint64_t reg, uint64_t val)
{
    qpci_io_writeq(n->dev, n->db, reg_read(n, WEFT_REG_VERBS_UAR_OFF) +
                   (uint64_t)uar * WEFT_DB_PAGE_SIZE + reg, val);
}

typedef struct VQp {
    uint32_t qpn;
    uint64_t sq, rq;
    uint32_t sq_prod, rq_prod;
} VQp;

static void vqp_create(WeftNode *n, VQp *q, uint32_t qpn, uint32_t type)
{
    struct weft_vcmd k = { .op = WEFT_VCMD_CREATE_QP, .handle = qpn };

    q->qpn = qpn;
    q->sq = alloc_zeroed(n, 16 << 7);
    q->rq = alloc_zeroed(n, 16 << 6);
    k.u.qp.sq_addr = q->sq;
    k.u.qp.rq_addr = q->rq;
    k.u.qp.type = type;
    k.u.qp.pd = 1;
    k.u.qp.send_cq = 1;
    k.u.qp.recv_cq = 1;
    k.u.qp.sq_log2 = 4;
    k.u.qp.sq_stride_log2 = 7;
    k.u.qp.rq_log2 = 4;
    k.u.qp.rq_stride_log2 = 6;
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
}

static void vqp_connect(WeftNode *n, VQp *q, uint32_t peer)
{
    struct weft_vcmd k = { .op = WEFT_VCMD_MODIFY_QP, .handle = q->qpn };

    k.u.mod.mask = WEFT_VQPA_STATE | WEFT_VQPA_ACCESS;
    k.u.mod.state = WEFT_VQPS_INIT;
    k.u.mod.access = WEFT_VACC_REMOTE;
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
    k.u.mod.mask = WEFT_VQPA_STATE | WEFT_VQPA_AV | WEFT_VQPA_DEST_QPN |
                   WEFT_VQPA_RQ_PSN | WEFT_VQPA_MAX_DEST_RD_ATOMIC |
                   WEFT_VQPA_MIN_RNR_TIMER;
    k.u.mod.state = WEFT_VQPS_RTR;
    k.u.mod.dest_node = n->node;
    k.u.mod.dest_qpn = peer;
    k.u.mod.max_dest_rd_atomic = 4;
    k.u.mod.min_rnr_timer = 1;
    /* RTS before RTR is refused: the state machine is checked. */
    g_assert_cmpuint(vcmd(n, &(struct weft_vcmd){ .op = WEFT_VCMD_MODIFY_QP,
                     .handle = q->qpn, .u.mod = { .mask = WEFT_VQPA_STATE,
                     .state = WEFT_VQPS_RTS } }, NULL), ==, WEFT_CMD_ESTATE);
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
    k.u.mod.mask = WEFT_VQPA_STATE | WEFT_VQPA_SQ_PSN | WEFT_VQPA_TIMEOUT |
                   WEFT_VQPA_RETRY_CNT | WEFT_VQPA_RNR_RETRY |
                   WEFT_VQPA_MAX_QP_RD_ATOMIC;
    k.u.mod.state = WEFT_VQPS_RTS;
    k.u.mod.timeout = 14;
    k.u.mod.retry_cnt = 7;
    k.u.mod.rnr_retry = 7;
    k.u.mod.max_rd_atomic = 4;
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
}

static void vpost_send(WeftNode *n, VQp *q, uint32_t uar, uint64_t wr_id,
                       uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct weft_vwqe w = { .wr_id = wr_id, .opcode = WEFT_VWR_SEND,
                           .flags = WEFT_VWQE_SIGNALED, .num_sge = 1 };
    struct weft_vsge sg = { .addr = addr, .length = len, .lkey = lkey };
    uint64_t slot = q->sq + ((uint64_t)(q->sq_prod & 15) << 7);

    qtest_memwrite(n->qts, slot, &w, sizeof(w));
    qtest_memwrite(n->qts, slot + sizeof(w), &sg, sizeof(sg));
    q->sq_prod++;
    uar_write(n, uar, WEFT_UAR_SQ_DB, WEFT_UAR_DB(q->qpn, q->sq_prod));
}

static void vpost_recv(WeftNode *n, VQp *q, uint64_t wr_id, uint64_t addr,
                       uint32_t len)
{
    struct weft_vrwqe w = { .wr_id = wr_id, .num_sge = 1 };
    struct weft_vsge sg = { .addr = addr, .length = len, .lkey = V_STAG };
    uint64_t slot = q->rq + ((uint64_t)(q->rq_prod & 15) << 6);

    qtest_memwrite(n->qts, slot, &w, sizeof(w));
    qtest_memwrite(n->qts, slot + sizeof(w), &sg, sizeof(sg));
    q->rq_prod++;
    uar_write(n, 0, WEFT_UAR_RQ_DB, WEFT_UAR_DB(q->qpn, q->rq_prod));
}

/* Polls CQE number idx of a 16-entry CQ ring (first pass: owner 1). */
static void vpoll(WeftNode *n, uint64_t ring, unsigned int idx,
                  struct weft_vcqe *e)
{
    int64_t end = deadline();

    for (;;) {
        qtest_memread(n->qts, ring + (uint64_t)idx * sizeof(*e), e, sizeof(*e));
        if (e->owner == 1) {
            return;
        }
        check_deadline(end, "a verbs CQE");
        g_usleep(1000);
    }
}

/* PD 1 and CQ 1 (16 entries); returns the CQ ring's address. */
static uint64_t vbase(WeftNode *n)
{
    struct weft_vcmd k = { .op = WEFT_VCMD_CREATE_PD, .handle = 1 };
    struct weft_vcmd_resp resp;
    uint64_t ring, ci;

    g_assert_cmpuint(vcmd(n, &k, &resp), ==, WEFT_CMD_OK);
    g_assert_cmpuint(vcmd(n, &k, &resp), ==, WEFT_CMD_EBUSY);   /* twice */
    ring = alloc_zeroed(n, 16 * sizeof(struct weft_vcqe));
    ci = alloc_zeroed(n, 64);
    k = (struct weft_vcmd){ .op = WEFT_VCMD_CREATE_CQ, .handle = 1 };
    k.u.cq.ring_addr = ring;
    k.u.cq.ci_addr = ci;
    k.u.cq.log2_entries = 4;
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
    return ring;
}

/* Registers V_STAG: VA 0x10000, 8 KiB over the pages ATT[0] and ATT[1]. */
static void vreg_mr(WeftNode *n, uint64_t page0, uint64_t page1)
{
    struct weft_vcmd k = { .op = WEFT_VCMD_REG_MR, .handle = V_STAG };
    uint64_t att = alloc_zeroed(n, 16);

    qtest_writeq(n->qts, att, page0);
    qtest_writeq(n->qts, att + 8, page1);
    k.u.mr.va = 0x10000;
    k.u.mr.length = 8192;
    k.u.mr.att_addr = att;
    k.u.mr.pd = 1;
    k.u.mr.access = WEFT_VACC_ALL;
    k.u.mr.page_shift = 12;
    k.u.mr.att_level = WEFT_ATT_DIRECT;
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
}

static void test_verbs_loopback(void)
{
    WeftNode *n = node_start(5, SW_NONE);
    struct weft_vcmd k;
    struct weft_vcmd_resp resp;
    struct weft_vcqe e;
    struct weft_tpt_entry t;
    uint64_t ring, buf, pages[2], dump;
    uint8_t data[6000], got[6000];
    VQp a, b;
    unsigned int i;

    g_assert_cmpuint(reg_read(n, WEFT_REG_VERBS_NR_QP), ==, WEFT_VERBS_DEF_QP);
    g_assert_cmpuint(reg_read(n, WEFT_REG_VERBS_NR_CQ), ==, WEFT_VERBS_DEF_CQ);
    g_assert_cmpuint(reg_read(n, WEFT_REG_VERBS_NR_PD), ==, WEFT_VERBS_DEF_PD);
    g_assert_cmpuint(reg_read(n, WEFT_REG_VERBS_NR_TPT), ==, WEFT_VERBS_DEF_TPT);
    g_assert_cmpuint(reg_read(n, WEFT_REG_VERBS_UAR_OFF), ==,
                     WEFT_MAX_WINDOWS * WEFT_DB_PAGE_SIZE);
    g_assert_cmpuint(n->db_size, >=, reg_read(n, WEFT_REG_VERBS_UAR_OFF) +
                     WEFT_VERBS_DEF_UAR * WEFT_DB_PAGE_SIZE);

    ring = vbase(n);

    /* A region of two 4 KiB pages, listed in reverse order. */
    pages[0] = alloc_zeroed(n, 8192);
    pages[0] = (pages[0] + 4095) & ~4095ull;
    buf = alloc_zeroed(n, 3 * 4096);
    buf = (buf + 4095) & ~4095ull;
    pages[1] = pages[0];
    pages[0] = buf;
    vreg_mr(n, pages[1], pages[0]);
    dump = alloc_zeroed(n, 64);
    k = (struct weft_vcmd){ .op = WEFT_VCMD_QUERY_TPT, .handle = 1 };
    k.u.query.addr = dump;
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
    qtest_memread(n->qts, dump, &t, sizeof(t));
    g_assert_cmphex(t.stag, ==, V_STAG);
    g_assert_cmpuint(t.flags & WEFT_TPTF_VALID, ==, WEFT_TPTF_VALID);

    /* Two RC QPs of this adapter connected to each other: loopback. */
    vqp_create(n, &a, 2, WEFT_VQPT_RC);
    vqp_create(n, &b, 3, WEFT_VQPT_RC);
    vqp_connect(n, &a, 3);
    vqp_connect(n, &b, 2);
    for (i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(i * 7 + 3);
    }
    /* Send 4000 bytes from VA 0x10000 (ATT entry 0 = pages[1]); receive
     * them at VA 0x10000 + 4046, across the page boundary (pages[0]). */
    qtest_memwrite(n->qts, pages[1], data, 4000);
    vpost_recv(n, &b, 77, 0x10000 + 4046, 4096);
    vpost_send(n, &a, 0, 55, 0x10000, 4000, V_STAG);
    vpoll(n, ring, 0, &e);
    vpoll(n, ring, 1, &e);
    for (i = 0; i < 2; i++) {
        qtest_memread(n->qts, ring + i * sizeof(e), &e, sizeof(e));
        g_assert_cmpuint(e.status, ==, WEFT_VWC_SUCCESS);
        g_assert_true((e.wr_id == 55 && e.qpn == 2 && e.opcode == WEFT_VWC_SEND) ||
                      (e.wr_id == 77 && e.qpn == 3 && e.opcode == WEFT_VWC_RECV &&
                       e.byte_len == 4000));
    }
    qtest_memread(n->qts, pages[1] + 4046, got, 50);
    qtest_memread(n->qts, pages[0], got + 50, 3950);
    g_assert_cmpmem(got, 4000, data, 4000);
    g_assert_cmpuint(counter(n, WEFT_CNT_V_CQES), ==, 2);

    /* Error paths. */
    k = (struct weft_vcmd){ .op = WEFT_VCMD_CREATE_QP, .handle = 9 };
    k.u.qp.type = WEFT_VQPT_RC;
    k.u.qp.pd = 77;                 /* no such PD */
    g_assert_cmpuint(vcmd(n, &k, &resp), ==, WEFT_CMD_EINVAL);
    reg_write(n, WEFT_REG_VERBS_CMD, 0xfec00000ull);  /* not RAM */
    g_assert_cmpuint(reg_read(n, WEFT_REG_VERBS_CMD_STATUS), ==, WEFT_CMD_EFAULT);
    /* A doorbell from a UAR page that does not own the QP. */
    uar_write(n, 3, WEFT_UAR_SQ_DB, WEFT_UAR_DB(2, a.sq_prod + 1));
    g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_UAR_MISMATCH)), ==, 1);
    /* A send naming a stale STag: error CQE, nothing sent. */
    vpost_send(n, &a, 0, 56, 0x10000, 64, WEFT_STAG(1, 2));
    vpoll(n, ring, 2, &e);
    g_assert_cmpuint(e.wr_id, ==, 56);
    g_assert_cmpuint(e.status, ==, WEFT_VWC_LOC_PROT_ERR);
    g_assert_cmpuint(e.byte_len, ==, WEFT_R_STAG_INSTANCE);
    /* Reset destroys every verbs object. */
    reg_write(n, WEFT_REG_RESET, WEFT_RESET_MAGIC);
    k = (struct weft_vcmd){ .op = WEFT_VCMD_QUERY_QP, .handle = 2 };
    k.u.query.addr = dump;
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_EINVAL);
    assert_alive(n);
    node_stop(n);
}

/* A UD QP of the loopback adapter in RTS; qkey for INIT. */
static void vud_create(WeftNode *n, VQp *q, uint32_t qpn, uint32_t qkey)
{
    static const uint8_t states[] = { WEFT_VQPS_INIT, WEFT_VQPS_RTR, WEFT_VQPS_RTS };
    struct weft_vcmd k;
    unsigned int i;

    vqp_create(n, q, qpn, WEFT_VQPT_UD);
    for (i = 0; i < 3; i++) {
        k = (struct weft_vcmd){ .op = WEFT_VCMD_MODIFY_QP, .handle = qpn };
        k.u.mod.mask = WEFT_VQPA_STATE | (i == 0 ? WEFT_VQPA_QKEY : 0) |
                       (i == 2 ? WEFT_VQPA_SQ_PSN : 0);
        k.u.mod.state = states[i];
        k.u.mod.qkey = qkey;
        g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
    }
}

/* ---- counter engine (docs/hw-spec.md section 18) --------------------------- */

/* Runs a counter command block; returns CNT_CMD_STATUS, fills resp. */
static uint64_t ccmd(WeftNode *n, const struct weft_cnt_cmd *k,
                     struct weft_vcmd_resp *resp)
{
    return cmd_block(n, WEFT_REG_CNT_CMD, WEFT_REG_CNT_CMD_STATUS, k, resp);
}

/*
 * The counter engine's registers and commands through the PCI device:
 * object and exposure counts, CREATE writing the status block through
 * DMA, QUERY dumping the object, refusals, DESTROY, EXPOSE/UNEXPOSE.
 */
static void test_counters_regs(void)
{
    WeftNode *n = node_start(5, SW_NONE);
    struct weft_cnt_cmd k;
    struct weft_vcmd_resp resp;
    struct weft_cnt_block blk;
    struct weft_cnt_obj_dump d;
    uint64_t pages[2], list, block, dump;

    g_assert_cmpuint(reg_read(n, WEFT_REG_CNT_NR_OBJ), ==, WEFT_CNT_NR_OBJ);
    g_assert_cmpuint(reg_read(n, WEFT_REG_CNT_NR_EXP), ==, WEFT_CNT_NR_EXP);

    pages[0] = (alloc_zeroed(n, 3 * 4096) + 4095) & ~4095ull;
    pages[1] = pages[0] + 4096;
    list = alloc_zeroed(n, sizeof(pages));
    qtest_memwrite(n->qts, list, pages, sizeof(pages));
    block = alloc_zeroed(n, 16);
    dump = alloc_zeroed(n, sizeof(d));

    k = (struct weft_cnt_cmd){ .op = WEFT_CNT_CMD_CREATE, .handle = 3 };
    k.u.create.block_addr = block;
    k.u.create.pages_addr = list;
    k.u.create.length = 5000;
    k.u.create.first_off = 100;
    k.u.create.flags = WEFT_CNTF_IRQ;
    g_assert_cmpuint(ccmd(n, &k, &resp), ==, WEFT_CMD_OK);
    g_assert_cmpuint(resp.out[0], ==, 1);
    qtest_memread(n->qts, block, &blk, sizeof(blk));
    g_assert_cmpuint(blk.count, ==, 5000);
    g_assert_cmpuint(blk.gen, ==, 1);
    /* The same id again is busy; a block that is not 8-byte aligned and
     * a page list outside RAM are refused. */
    g_assert_cmpuint(ccmd(n, &k, NULL), ==, WEFT_CMD_EBUSY);
    k.handle = 4;
    k.u.create.block_addr = block + 4;
    g_assert_cmpuint(ccmd(n, &k, NULL), ==, WEFT_CMD_EINVAL);
    k.u.create.block_addr = block;
    k.u.create.pages_addr = 0xfec00000ull;
    g_assert_cmpuint(ccmd(n, &k, NULL), ==, WEFT_CMD_EFAULT);

    k = (struct weft_cnt_cmd){ .op = WEFT_CNT_CMD_QUERY, .handle = 3 };
    k.u.query.addr = dump;
    g_assert_cmpuint(ccmd(n, &k, NULL), ==, WEFT_CMD_OK);
    qtest_memread(n->qts, dump, &d, sizeof(d));
    g_assert_cmpuint(d.live, ==, 1);
    g_assert_cmpuint(d.length, ==, 5000);
    g_assert_cmpuint(d.first_off, ==, 100);
    g_assert_cmpuint(d.block_addr, ==, block);

    /* A post with the wrong generation is refused; DESTROY frees the id. */
    k = (struct weft_cnt_cmd){ .op = WEFT_CNT_CMD_POST, .handle = 3 };
    k.u.post.gen = 2;
    k.u.post.dir = WEFT_CNT_READ;
    k.u.post.length = 5000;
    g_assert_cmpuint(ccmd(n, &k, NULL), ==, WEFT_CMD_EINVAL);
    k = (struct weft_cnt_cmd){ .op = WEFT_CNT_CMD_DESTROY, .handle = 3 };
    k.u.obj.gen = 1;
    g_assert_cmpuint(ccmd(n, &k, NULL), ==, WEFT_CMD_OK);
    g_assert_cmpuint(ccmd(n, &k, NULL), ==, WEFT_CMD_EINVAL);

    k = (struct weft_cnt_cmd){ .op = WEFT_CNT_CMD_EXPOSE, .handle = 0 };
    k.u.expose.va = 0x7f0000000000ull;
    k.u.expose.length = 8192;
    k.u.expose.pages_addr = list;
    k.u.expose.rights = WEFT_CNT_R_READ;
    k.u.expose.peer = WEFT_CNT_ANY_PEER;
    g_assert_cmpuint(ccmd(n, &k, &resp), ==, WEFT_CMD_OK);
    k = (struct weft_cnt_cmd){ .op = WEFT_CNT_CMD_UNEXPOSE, .handle = 0 };
    k.u.obj.gen = (uint16_t)resp.out[0];
    g_assert_cmpuint(ccmd(n, &k, NULL), ==, WEFT_CMD_OK);

    /* An EVENT counter (18.7): a zeroed block, no region; BIND refusals
     * name their reason. */
    qtest_memset(n->qts, block, 0xff, 16);
    k = (struct weft_cnt_cmd){ .op = WEFT_CNT_CMD_CREATE, .handle = 5 };
    k.u.create.block_addr = block;
    k.u.create.mode = WEFT_CNT_MODE_EVENT;
    g_assert_cmpuint(ccmd(n, &k, &resp), ==, WEFT_CMD_OK);
    qtest_memread(n->qts, block, &blk, sizeof(blk));
    g_assert_cmpuint(blk.count, ==, 0);
    g_assert_cmpuint(blk.error, ==, 0);
    k = (struct weft_cnt_cmd){ .op = WEFT_CNT_CMD_BIND_QP, .handle = 5 };
    k.u.bind.gen = (uint16_t)resp.out[0];
    k.u.bind.slot = 1;
    k.u.bind.qpn = 2;               /* no QP created */
    g_assert_cmpuint(ccmd(n, &k, &resp), ==, WEFT_CMD_EINVAL);
    g_assert_cmpuint(resp.reason, ==, WEFT_R_QP_INVALID);
    k.u.bind.events = 0x80;         /* no such event */
    g_assert_cmpuint(ccmd(n, &k, &resp), ==, WEFT_CMD_EINVAL);
    g_assert_cmpuint(resp.reason, ==, WEFT_R_CNT_MODE);
    k.handle = 6;                   /* not live */
    g_assert_cmpuint(ccmd(n, &k, &resp), ==, WEFT_CMD_EINVAL);
    g_assert_cmpuint(resp.reason, ==, WEFT_R_CNT_OBJ_INVALID);

    reg_write(n, WEFT_REG_CNT_CMD, 0xfec00000ull);  /* not RAM */
    g_assert_cmpuint(reg_read(n, WEFT_REG_CNT_CMD_STATUS), ==, WEFT_CMD_EFAULT);
    node_stop(n);
}

/*
 * RoCE v2 addressing through the device (docs/hw-spec.md 16.13): GID
 * table commands, a UD send from QP 4 to the GSI (QP 1) of the same
 * adapter, and the IPv4 header the receive starts with.
 */
static void test_verbs_ud_grh(void)
{
    WeftNode *n = node_start(6, SW_NONE);
    struct weft_vcmd k;
    struct weft_vcmd_resp resp;
    struct weft_vgid_entry g;
    struct weft_vcqe e;
    struct weft_vwqe w = { .wr_id = 41, .opcode = WEFT_VWR_SEND,
                           .flags = WEFT_VWQE_SIGNALED, .num_sge = 1 };
    struct weft_vsge sg = { .addr = 0x10000, .length = 100, .lkey = V_STAG };
    static const uint8_t sgid[16] = { [10] = 0xff, [11] = 0xff, 192, 168, 7, 1 };
    static const uint8_t dgid[16] = { [10] = 0xff, [11] = 0xff, 192, 168, 7, 2 };
    uint8_t hdr[WEFT_VERBS_GRH_SIZE], data[100], got[100];
    uint64_t ring, buf, dump;
    unsigned int i, sum = 0;
    VQp a, gsi;

    ring = vbase(n);
    buf = alloc_zeroed(n, 3 * 4096);
    buf = (buf + 4095) & ~4095ull;
    vreg_mr(n, buf, buf + 4096);

    /* The GID table: two entries, a refused one, a dump. */
    for (i = 0; i < 2; i++) {
        k = (struct weft_vcmd){ .op = WEFT_VCMD_SET_GID, .handle = i };
        k.u.gid.port = WEFT_VERBS_PORT;
        k.u.gid.type = WEFT_VGID_IPV4;
        memcpy(k.u.gid.gid, i ? dgid : sgid, 16);
        g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
    }
    k.handle = 2;
    k.u.gid.type = WEFT_VGID_IPV6;
    g_assert_cmpuint(vcmd(n, &k, &resp), ==, WEFT_CMD_EINVAL);
    g_assert_cmpuint(resp.reason, ==, WEFT_R_GID_TYPE);
    dump = alloc_zeroed(n, 64);
    k = (struct weft_vcmd){ .op = WEFT_VCMD_QUERY_GID, .handle = 1 };
    k.u.query.addr = dump;
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
    qtest_memread(n->qts, dump, &g, sizeof(g));
    g_assert_cmpuint(g.valid, ==, 1);
    g_assert_cmpuint(g.type, ==, WEFT_VGID_IPV4);
    g_assert_cmpmem(g.gid, 16, dgid, 16);

    vud_create(n, &gsi, WEFT_VERBS_GSI_QPN, WEFT_VERBS_GSI_QKEY);
    vud_create(n, &a, 4, WEFT_VERBS_GSI_QKEY);
    for (i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(i * 5 + 1);
    }
    qtest_memwrite(n->qts, buf, data, sizeof(data));
    vpost_recv(n, &gsi, 42, 0x10000 + 4096, 256);
    w.u.ud.dest_qpn = WEFT_VERBS_GSI_QPN;
    w.u.ud.qkey = WEFT_VERBS_GSI_QKEY;
    w.u.ud.dest_node = n->node;
    w.u.ud.sgid_index = 0;
    w.u.ud.hop_limit = 64;
    memcpy(w.u.ud.dgid, dgid, 16);
    qtest_memwrite(n->qts, a.sq, &w, sizeof(w));
    qtest_memwrite(n->qts, a.sq + sizeof(w), &sg, sizeof(sg));
    a.sq_prod++;
    uar_write(n, 0, WEFT_UAR_SQ_DB, WEFT_UAR_DB(a.qpn, a.sq_prod));
    vpoll(n, ring, 0, &e);
    vpoll(n, ring, 1, &e);
    for (i = 0; i < 2; i++) {
        qtest_memread(n->qts, ring + i * sizeof(e), &e, sizeof(e));
        g_assert_cmpuint(e.status, ==, WEFT_VWC_SUCCESS);
        if (e.wr_id == 42) {
            g_assert_cmpuint(e.qpn, ==, WEFT_VERBS_GSI_QPN);
            g_assert_cmpuint(e.byte_len, ==, WEFT_VERBS_GRH_SIZE + 100);
            g_assert_cmpuint(e.src_qpn, ==, 4);
            g_assert_cmpuint(e.src_node, ==, n->node);
            g_assert_cmphex(e.flags & (WEFT_VCQE_GRH | WEFT_VCQE_NET_IPV4 |
                                       WEFT_VCQE_NET_IPV6), ==,
                            WEFT_VCQE_GRH | WEFT_VCQE_NET_IPV4);
        } else {
            g_assert_cmpuint(e.wr_id, ==, 41);
        }
    }
    qtest_memread(n->qts, buf + 4096, hdr, sizeof(hdr));
    for (i = 0; i < 20; i++) {
        g_assert_cmpuint(hdr[i], ==, 0);
    }
    g_assert_cmphex(hdr[20], ==, 0x45);
    g_assert_cmpuint(hdr[29], ==, 17);                  /* UDP */
    g_assert_cmpmem(hdr + 32, 4, sgid + 12, 4);
    g_assert_cmpmem(hdr + 36, 4, dgid + 12, 4);
    for (i = 20; i < 40; i += 2) {
        sum += (unsigned int)hdr[i] << 8 | hdr[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    g_assert_cmphex(sum, ==, 0xffff);                   /* checksum holds */
    qtest_memread(n->qts, buf + 4096 + WEFT_VERBS_GRH_SIZE, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));

    /* Reset clears the table. */
    reg_write(n, WEFT_REG_RESET, WEFT_RESET_MAGIC);
    k = (struct weft_vcmd){ .op = WEFT_VCMD_QUERY_GID, .handle = 1 };
    k.u.query.addr = dump;
    g_assert_cmpuint(vcmd(n, &k, NULL), ==, WEFT_CMD_OK);
    qtest_memread(n->qts, dump, &g, sizeof(g));
    g_assert_cmpuint(g.valid, ==, 0);
    assert_alive(n);
    node_stop(n);
}

/* ---- Header matching (docs/matching.md, hw-spec 17) ---------------------- */

static uint64_t mdoorbell(WeftNode *n, uint64_t blk, const struct weft_match_op *op)
{
    qtest_memwrite(n->qts, blk, op, sizeof(*op));
    reg_write(n, WEFT_REG_MATCH_DOORBELL, blk);
    return reg_read(n, WEFT_REG_MATCH_DB_STATUS);
}

static void mpoll(WeftNode *n, uint64_t ring, uint64_t idx,
                  struct weft_match_cqe *e)
{
    int64_t end = deadline();

    while (reg_read(n, WEFT_REG_MATCH_CQ_PROD) <= idx) {
        check_deadline(end, "a matching completion");
        g_usleep(1000);
    }
    qtest_memread(n->qts, ring + (idx % 16) * sizeof(*e), e, sizeof(*e));
    reg_write(n, WEFT_REG_MATCH_CQ_CONS, idx + 1);
}

/*
 * The matching registers and doorbell of the real device: a receive
 * posted with CR, a loopback send that matches it (one copy, the Match
 * Compl ID), an unexpected send kept in the UMB and taken by a later
 * post, a queue dump (the DUMP operation and the command QUERY_HQ), an
 * overflow that stops the queue with an event, and refused hostile
 * operations.
 */
static void test_match_loopback(void)
{
    WeftNode *n = node_start(6, SW_NONE);
    struct weft_match_op op;
    struct weft_match_cqe e;
    struct weft_match_dump d;
    uint64_t ring, blk, src, dst, dump, idx = 0;
    uint8_t data[1000], got[1000];
    unsigned int i;

    setup_interrupts(n);
    g_assert_cmpuint(WEFT_MATCH_CAPS_QUEUES(reg_read(n, WEFT_REG_MATCH_CAPS)), ==,
                     WEFT_MATCH_NR_QUEUES);
    g_assert_cmpuint(reg_read(n, WEFT_REG_MATCH_UMB), ==,
                     WEFT_MATCH_DEF_UMB | (uint64_t)WEFT_MATCH_DEF_FRAG << 32);
    ring = alloc_zeroed(n, 64 * 16 + 64);
    ring = (ring + 63) & ~63ull;
    blk = alloc_zeroed(n, 64);
    src = alloc_zeroed(n, sizeof(data));
    dst = alloc_zeroed(n, sizeof(data));
    dump = alloc_zeroed(n, 4 * sizeof(d));
    for (i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(i * 13 + 1);
    }
    qtest_memwrite(n->qts, src, data, sizeof(data));

    /* Without a ring every operation is refused. */
    memset(&op, 0, sizeof(op));
    op.opcode = WEFT_MOP_POST;
    op.match = WEFT_MW(0, 1, 7, 42);
    g_assert_cmphex(mdoorbell(n, blk, &op), ==,
                    WEFT_CMD_ESTATE | (uint64_t)WEFT_R_MATCH_CQ << 32);
    reg_write(n, WEFT_REG_MATCH_CQ_BASE, ring);
    reg_write(n, WEFT_REG_MATCH_CQ_SIZE, 4);
    reg_write(n, WEFT_REG_MATCH_QCFG(3), WEFT_QCFG(WEFT_QCFG_ENABLE, 2, 0));
    g_assert_cmphex(reg_read(n, WEFT_REG_MATCH_QCFG(3)), ==,
                    WEFT_QCFG(WEFT_QCFG_ENABLE, 2, 0));

    /* Post with CR, then a loopback send that matches it. */
    op.queue = 3;
    op.flags = WEFT_MOPF_CR;
    op.node = WEFT_MATCH_ANY_SOURCE;
    op.addr = dst;
    op.len = sizeof(data);
    op.match_id = 0x77;
    op.req_id = 0x55;
    g_assert_cmpuint(mdoorbell(n, blk, &op), ==, WEFT_CMD_OK);
    mpoll(n, ring, idx++, &e);
    g_assert_cmpuint(e.type, ==, WEFT_MCQE_POSTED);
    g_assert_cmpuint(e.req_id, ==, 0x55);
    memset(&op, 0, sizeof(op));
    op.opcode = WEFT_MOP_SEND;
    op.queue = 3;
    op.match = WEFT_MW(0, 1, 7, 42);
    op.node = 6;
    op.addr = src;
    op.len = sizeof(data);
    op.req_id = 9;
    g_assert_cmpuint(mdoorbell(n, blk, &op), ==, WEFT_CMD_OK);
    for (i = 0; i < 2; i++) {
        mpoll(n, ring, idx++, &e);
        if (e.type == WEFT_MCQE_SEND_DONE) {
            g_assert_cmpuint(e.req_id, ==, 9);
            continue;
        }
        g_assert_cmpuint(e.type, ==, WEFT_MCQE_MATCH_COPY);
        g_assert_cmpuint(e.status, ==, 0);
        g_assert_cmpuint(e.match_id, ==, 0x77);
        g_assert_cmpuint(e.written, ==, sizeof(data));
        g_assert_cmpuint(e.flags & WEFT_MCQEF_LOOPBACK, ==, WEFT_MCQEF_LOOPBACK);
    }
    qtest_memread(n->qts, dst, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmpuint(counter(n, WEFT_CNT_M_MATCHES), ==, 1);

    /* Unexpected: kept in the UMB, dumped, taken by the next post. */
    op.match = WEFT_MW(0, 1, 7, 43);
    g_assert_cmpuint(mdoorbell(n, blk, &op), ==, WEFT_CMD_OK);
    mpoll(n, ring, idx++, &e);
    g_assert_cmpuint(e.type, ==, WEFT_MCQE_SEND_DONE);
    memset(&op, 0, sizeof(op));
    op.opcode = WEFT_MOP_DUMP;
    op.flags = WEFT_MOPF_UEQ;
    op.queue = 3;
    op.addr = dump;
    op.len = 4 * sizeof(d);
    g_assert_cmpuint(mdoorbell(n, blk, &op), ==, WEFT_CMD_OK);
    mpoll(n, ring, idx++, &e);
    g_assert_cmpuint(e.type, ==, WEFT_MCQE_DUMP);
    g_assert_cmpuint(e.length, ==, 1);
    qtest_memread(n->qts, dump, &d, sizeof(d));
    g_assert_cmphex(d.match, ==, WEFT_MW(0, 1, 7, 43));
    g_assert_cmpuint(d.kind, ==, WEFT_MDUMP_UMB);
    /* The same entry through the verbs command QUERY_HQ: written before
     * VERBS_CMD returns, no completion; refusals with their reasons. */
    {
        struct weft_vcmd k = { .op = WEFT_VCMD_QUERY_HQ, .handle = 3 };
        struct weft_vcmd_resp r;
        uint64_t prod = reg_read(n, WEFT_REG_MATCH_CQ_PROD);

        qtest_memset(n->qts, dump, 0, 4 * sizeof(d));
        k.u.hq.addr = dump;
        k.u.hq.len = 4 * sizeof(d);
        k.u.hq.flags = WEFT_HQF_UEQ;
        g_assert_cmpuint(vcmd(n, &k, &r), ==, WEFT_CMD_OK);
        g_assert_cmpuint(r.out[0], ==, 1);
        g_assert_cmpuint(r.out[1], ==, 1);
        g_assert_cmpuint(r.out[2], ==, 0);
        qtest_memread(n->qts, dump, &d, sizeof(d));
        g_assert_cmphex(d.match, ==, WEFT_MW(0, 1, 7, 43));
        g_assert_cmpuint(d.kind, ==, WEFT_MDUMP_UMB);
        g_assert_cmpuint(d.len, ==, sizeof(data));
        g_assert_cmpuint(reg_read(n, WEFT_REG_MATCH_CQ_PROD), ==, prod);
        k.handle = WEFT_MATCH_NR_QUEUES;
        g_assert_cmpuint(vcmd(n, &k, &r), ==, WEFT_CMD_EINVAL);
        g_assert_cmpuint(r.reason, ==, WEFT_R_HQ_QUEUE);
        k.handle = 3;
        k.u.hq.len = sizeof(d) - 1;
        g_assert_cmpuint(vcmd(n, &k, &r), ==, WEFT_CMD_EINVAL);
        g_assert_cmpuint(r.reason, ==, WEFT_R_HQ_SHORT);
        k.u.hq.len = sizeof(d);
        k.u.hq.addr = 0xfec00000ull;    /* not RAM */
        g_assert_cmpuint(vcmd(n, &k, &r), ==, WEFT_CMD_EFAULT);
        g_assert_cmpuint(r.reason, ==, WEFT_R_HQ_BUF);
        g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_HQ_BUF)), ==, 1);
    }
    g_assert_cmpuint(reg_read(n, WEFT_REG_MATCH_UMB_FREE), ==,
                     WEFT_MATCH_DEF_UMB / WEFT_MATCH_DEF_FRAG - 8);
    qtest_memset(n->qts, dst, 0, sizeof(data));
    memset(&op, 0, sizeof(op));
    op.opcode = WEFT_MOP_POST;
    op.queue = 3;
    op.match = WEFT_MW(WEFT_MW_WC_TAG, 1, 7, 0);
    op.node = WEFT_MATCH_ANY_SOURCE;
    op.addr = dst;
    op.len = sizeof(data);
    op.match_id = 0x78;
    g_assert_cmpuint(mdoorbell(n, blk, &op), ==, WEFT_CMD_OK);
    mpoll(n, ring, idx++, &e);
    g_assert_cmpuint(e.type, ==, WEFT_MCQE_MATCH_COPY);
    g_assert_cmpuint(e.match_id, ==, 0x78);
    qtest_memread(n->qts, dst, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));

    /* Quota 2: the third post stops the queue and raises an event. */
    op.match = WEFT_MW(0, 1, 7, 100);
    for (i = 0; i < 3; i++) {
        g_assert_cmpuint(mdoorbell(n, blk, &op), ==, WEFT_CMD_OK);
    }
    mpoll(n, ring, idx++, &e);
    g_assert_cmpuint(e.type, ==, WEFT_MCQE_OP_ERROR);
    g_assert_cmpuint(e.status, ==, WEFT_R_MATCH_STORE_FULL);
    g_assert_cmphex(reg_read(n, WEFT_REG_MATCH_STOPPED0), ==, 1ull << 3);
    /* Queue events name no window (0xffff); rcxt is the queue. */
    g_assert_true(find_event(n, WEFT_EV_MATCH_STOPPED, 0xffff));
    reg_write(n, WEFT_REG_MATCH_QSTAT(3), WEFT_QSTAT_STOPPED);
    g_assert_cmphex(reg_read(n, WEFT_REG_MATCH_STOPPED0), ==, 0);

    /* Hostile operations: refused with a reason, nothing queued. */
    op.match = 0;
    g_assert_cmphex(mdoorbell(n, blk, &op), ==,
                    WEFT_CMD_EINVAL | (uint64_t)WEFT_R_MATCH_ZERO_WORD << 32);
    op.match = WEFT_MW(0, 1, 7, 1);
    op.queue = 999;
    g_assert_cmphex(mdoorbell(n, blk, &op), ==,
                    WEFT_CMD_EINVAL | (uint64_t)WEFT_R_MATCH_QUEUE << 32);
    op.queue = 3;
    op.opcode = 77;
    g_assert_cmphex(mdoorbell(n, blk, &op), ==,
                    WEFT_CMD_EINVAL | (uint64_t)WEFT_R_MATCH_BAD_OP << 32);
    reg_write(n, WEFT_REG_MATCH_DOORBELL, 0xfec00000ull);   /* not RAM */
    g_assert_cmphex(reg_read(n, WEFT_REG_MATCH_DB_STATUS), ==,
                    WEFT_CMD_EFAULT | (uint64_t)WEFT_R_DMA_ERROR << 32);
    g_assert_cmpuint(counter(n, WEFT_CNT_DROP(WEFT_R_MATCH_ZERO_WORD)), ==, 1);
    assert_alive(n);
    node_stop(n);
}

int main(int argc, char **argv)
{
    int r;

    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("weft-qtest-XXXXXX", NULL);
    g_assert_nonnull(tmpdir);
    if (g_getenv("WEFT_QTEST_IOTHREAD")) {
        io_obj = "-object iothread,id=weft-io ";
        io_prop = ",iothread=weft-io";
    }

    qtest_add_func("/weft/identity", test_identity);
    qtest_add_func("/weft/key-epoch", test_key_epoch);
    qtest_add_func("/weft/fatal-inject", test_fatal_inject);
    qtest_add_func("/weft/open-window", test_open_window);
    qtest_add_func("/weft/fifo/loopback", test_fifo_loopback);
    qtest_add_func("/weft/int-mod", test_int_mod);
    qtest_add_func("/weft/fifo/two-nodes", test_fifo_two_nodes);
    qtest_add_func("/weft/fifo/burst", test_fifo_burst);
    qtest_add_func("/weft/rdma/write", test_rdma_write);
    qtest_add_func("/weft/rdma/read", test_rdma_read);
    qtest_add_func("/weft/rdma/backpressure", test_rdma_backpressure);
    qtest_add_func("/weft/link/absent", test_link_absent);
    qtest_add_func("/weft/link/reconnect", test_link_reconnect);
    qtest_add_func("/weft/link/late-switch", test_link_late_switch);
    qtest_add_func("/weft/link/garbage", test_link_garbage);
    qtest_add_func("/weft/link/token", test_link_token);
    qtest_add_func("/weft/link/transport", test_link_transport);
    qtest_add_func("/weft/misuse", test_misuse);
    qtest_add_func("/weft/migration", test_migration);
    qtest_add_func("/weft/hotplug", test_hotplug);
    qtest_add_func("/weft/properties", test_properties);
    qtest_add_func("/weft/verbs/loopback", test_verbs_loopback);
    qtest_add_func("/weft/match/loopback", test_match_loopback);
    qtest_add_func("/weft/verbs/ud-grh", test_verbs_ud_grh);
    qtest_add_func("/weft/counters/regs", test_counters_regs);
    if (*io_prop) {
        qtest_add_func("/weft/iothread/paused", test_iothread_paused);
    }

    r = g_test_run();
    rmdir(tmpdir);
    g_free(tmpdir);
    return r;
}
