/*
 * Weft RDMA switch adapter: the link to weft-switch.
 *
 * The transport between the device and the switch, behind a few calls:
 * framing over the chardev (include/weft/wire.h: a 4-byte little-endian
 * length and a packet), the transmit queue and its writability watch, the
 * HELLO / HELLO_ACK handshake with the node token, and the shared-memory
 * rings and eventfds (weft-host/shm.h) that a switch on this host may
 * grant.  The device (weft.c) owns the adapter; the link calls it back
 * through WeftLinkOps and never runs the adapter itself.
 *
 * SPDX-License-Identifier: MIT
 */

#ifndef HW_WEFT_LINK_H
#define HW_WEFT_LINK_H

#include "chardev/char-fe.h"
#include "qemu/thread.h"
#include "weft/wire.h"
#include "weft-host/shm.h"

typedef enum WeftLinkTransport {
    WEFT_LINK_AUTO,         /* shared memory when granted, else the socket */
    WEFT_LINK_SHM,          /* no link without shared memory */
    WEFT_LINK_SOCKET,       /* frames only over the socket */
} WeftLinkTransport;

typedef struct WeftLinkOps {
    /* Whether the device takes packets now (else input is held back). */
    bool (*can_receive)(void *opaque);
    /*
     * One packet from the switch, len WEFT_WIRE_HDR_SIZE ..
     * WEFT_WIRE_MAX_FRAME, not yet validated beyond its length.  shared:
     * it lies in the switch's ring, which the switch may change until the
     * device gives it back.  Returns -EAGAIN when not taken (the device
     * is full; it is offered again later), 0 when taken (copied, or
     * dropped), 1 when the device keeps it (shared only): the device then
     * gives it back with weft_link_release(), in the order received.
     */
    int (*receive)(void *opaque, const uint8_t *pkt, size_t len, bool shared);
    /*
     * The device copies what it still keeps of the packets it was given
     * and gives them back (weft_link_release()), before the ring goes.
     */
    void (*unlend)(void *opaque);
    /*
     * Frames arrived: the device calls weft_link_deliver() and runs the
     * adapter, now, from this callback.
     */
    void (*input)(void *opaque);
    /* Run the adapter soon: transmit room is back or the link changed. */
    void (*kick)(void *opaque);
    /* The switch accepted the HELLO (true), or the link went down. */
    void (*set_up)(void *opaque, bool up);
} WeftLinkOps;

typedef struct WeftLink {
    CharBackend *chr;       /* the device's chardev property */
    /* The device's lock, taken by every callback into the link. */
    QemuRecMutex *lock;
    /* Where the ring's eventfd is watched and polled; NULL: main loop. */
    AioContext *ctx;
    /* With ctx: the main-loop bottom half that does the chardev's work. */
    QEMUBH *chr_bh;
    bool disconnect;        /* chr_bh drops the connection (protocol error) */
    uint16_t node_id;
    const WeftLinkOps *ops;
    void *opaque;

    /* The node's token for the switch (HELLO payload), if any. */
    bool has_token;
    uint8_t token[WEFT_WIRE_TOKEN_SIZE];

    bool connected;         /* the chardev is open */
    bool up;                /* HELLO_ACK received */
    bool tx_blocked;        /* xmit answered -EAGAIN: wait for room */
    /*
     * can_read refused input: the chardev must be told when room is
     * back.  qemu_chr_fe_accept_input() notifies the main loop (an
     * eventfd write), so it is called only then.
     */
    bool rx_throttled;
    guint tx_watch;
    uint8_t *txbuf;
    size_t tx_head;         /* first unsent byte */
    size_t tx_tail;         /* end of queued bytes */
    uint8_t *rxbuf;
    size_t rx_len;

    /* Shared-memory transport */
    bool shm_want;          /* ask for it in the HELLO */
    bool shm_required;      /* transport=shm: no link without it */
    bool shm_failed;        /* the last grant was unusable: ask no more */
    void *shm;              /* the mapped memfd, NULL: the socket is used */
    struct weft_shm_view shm_rx;    /* switch -> adapter, consumed here */
    /*
     * The same ring, at the next record to read.  The records between
     * shm_rx.pos and shm_rd.pos are read but still held: each entry of
     * shm_held is one, oldest first, its size and WEFT_SHM_HELD_DONE once
     * the device has given it back (or never kept it).  Records are
     * consumed, in order, when no older one is held.
     */
    struct weft_shm_view shm_rd;
    uint32_t *shm_held;
    uint32_t shm_held_head;
    uint32_t shm_held_count;
    uint32_t shm_lent;      /* entries the device keeps */
    bool shm_freed;         /* consumed since the switch was last woken */
    struct weft_shm_view shm_tx;    /* adapter -> switch, produced here */
    int shm_efd;            /* wakes the device */
    int shm_efd_switch;     /* wakes the switch */
    bool shm_kick;          /* published since the switch was last woken */
} WeftLink;

/*
 * Sets up the link on chr (which may have no backend: the link then stays
 * down) and installs the chardev handlers.  token is NULL or
 * WEFT_WIRE_TOKEN_SIZE bytes, copied.  lock is the device's (its callbacks
 * into the link's users run with it held); ctx is the AioContext that
 * watches and polls the shared-memory ring, NULL for the main loop.
 */
void weft_link_init(WeftLink *l, CharBackend *chr, uint16_t node_id,
                    const uint8_t *token, WeftLinkTransport transport,
                    QemuRecMutex *lock, AioContext *ctx,
                    const WeftLinkOps *ops, void *opaque);
/* Closes the chardev and the rings, wipes the token, frees the buffers. */
void weft_link_fini(WeftLink *l);
/*
 * Queues one packet for the switch.  0, -EAGAIN when the transmit queue
 * or ring is full (kick comes when room is back), -ENOTCONN while the
 * link is down or for a packet of an impossible length.
 */
int weft_link_xmit(WeftLink *l, const void *pkt, size_t len);
/*
 * Sends what is queued, wakes the switch for what was published, hands
 * the frames that wait to the device's receive callback, and re-opens
 * input once the device can take packets again.
 */
void weft_link_flush(WeftLink *l);
/* Hands the frames that wait (socket buffer, ring) to receive. */
void weft_link_deliver(WeftLink *l);
/*
 * The device gives back a packet it kept from the ring (receive returned
 * 1); packets come back in the order they were received.
 */
void weft_link_release(WeftLink *l, const uint8_t *pkt);
/* Whether the last xmit found no room and none has come back yet. */
bool weft_link_tx_blocked(const WeftLink *l);
/* Whether the switch accepted the HELLO. */
bool weft_link_is_up(const WeftLink *l);

#endif /* HW_WEFT_LINK_H */
