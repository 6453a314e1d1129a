/* SPDX-License-Identifier: MIT */
/*
 * Weft adapter model: conditional RDMA (seed 1.5.12, hw-spec 5.4).
 *
 * A COND frame arms one of the window's conditional queues with a count
 * N.  The next N RDMAW frames of the window become its members: their
 * rCxts are tagged, and each member's SOURCE completion that reaches this
 * adapter counts once.  The RDMAW frame after the members is the signal:
 * it goes at once when all N completions are in, otherwise the adapter
 * holds a copy (the frame is marked done, so the send FIFO moves on) and
 * hands it to the transmit engine when the last completion arrives.
 * COND_CTL frames clear, set and query a queue; every COND and COND_CTL
 * frame gets the queue's state written back into its header line.
 */
#include <string.h>

#include "weft/names.h"
#include "weft_core_int.h"

static void ready(struct weft_core *c, unsigned int w, unsigned int g)
{
	struct weft_condq *q = &c->win[w].cond[g];

	q->state = WEFT_COND_FIRED;
	q->fired++;
	c->win[w].cond_ready |= (uint8_t)(1u << g);
	weft_set_active(c, w, true);
	if (c->ops.kick)
		c->ops.kick(c->opaque);
}

/* Queue g's held signal may go once every member has completed. */
static void maybe_fire(struct weft_core *c, unsigned int w, unsigned int g)
{
	struct weft_condq *q = &c->win[w].cond[g];

	if (q->state == WEFT_COND_HELD && q->done >= q->expect)
		ready(c, w, g);
}

/* Untag every rCxt of window w that is a member of queue g. */
static void untag(struct weft_core *c, unsigned int w, unsigned int g)
{
	uint32_t r;

	for (r = 0; r < c->cfg.nr_rcxt; r++)
		if (c->cond_tag[r] == g + 1 && weft_rcxt(c, r)->local_window == w)
			c->cond_tag[r] = 0;
}

static void clear(struct weft_core *c, unsigned int w, unsigned int g)
{
	struct weft_win *win = &c->win[w];

	untag(c, w, g);
	memset(&win->cond[g], 0, sizeof(win->cond[g]));
	win->cond_ready &= (uint8_t)~(1u << g);
	if (win->cond_collect == g + 1)
		win->cond_collect = 0;
}

int weft_cond_frame(struct weft_core *c, unsigned int w, struct weft_send_line *line)
{
	struct weft_cond_req r;
	struct weft_win *win = &c->win[w];
	struct weft_condq *q;
	unsigned int status = WEFT_R_OK;

	memcpy(&r, &line->rdma, sizeof(r));
	if (r.cond >= WEFT_NR_COND) {
		weft_tx_frame_done(c, w, line, WEFT_R_BAD_HEADER);
		return 1;
	}
	q = &win->cond[r.cond];
	if (line->hdr.type == WEFT_SF_COND) {
		if (r.value == 0 || r.value > WEFT_COND_MAX_MEMBERS) {
			status = WEFT_R_LENGTH;
		} else if (win->cond_collect || (q->state != WEFT_COND_IDLE &&
						 q->state != WEFT_COND_FIRED)) {
			status = WEFT_R_COND_BUSY;
		} else {
			/* Tags of an earlier round (before a close) must not
			 * count towards this one. */
			untag(c, w, r.cond);
			q->state = WEFT_COND_COLLECTING;
			q->expect = r.value;
			q->done = 0;
			q->tagged = 0;
			win->cond_collect = (uint8_t)(r.cond + 1);
		}
	} else if (r.op == WEFT_COND_CLEAR) {
		clear(c, w, r.cond);
	} else if (r.op == WEFT_COND_SET) {
		q->done = r.value;
		maybe_fire(c, w, r.cond);
	} else if (r.op != WEFT_COND_QUERY) {
		status = WEFT_R_BAD_HEADER;
	}
	r.q_state = q->state;
	r.q_expect = q->expect;
	r.q_done = q->done;
	r.q_tagged = q->tagged;
	r.q_fired = q->fired;
	memcpy(&line->rdma, &r, sizeof(r));
	weft_tx_frame_done(c, w, line, status);
	return 1;
}

bool weft_cond_hold(struct weft_core *c, unsigned int w, struct weft_send_line *line)
{
	struct weft_win *win = &c->win[w];
	const struct weft_rdma_req *rq = &line->rdma;
	unsigned int g;
	struct weft_condq *q;

	if (rq->local_rcxt < c->cfg.nr_rcxt)
		c->cond_tag[rq->local_rcxt] = 0;
	if (!win->cond_collect)
		return false;
	g = win->cond_collect - 1u;
	q = &win->cond[g];
	/* A refused frame is neither a member nor the signal: the RDMAW
	 * engine marks it with its reason. */
	if (weft_tx_req_check(c, w, line, false) != WEFT_R_OK)
		return false;
	if (q->state == WEFT_COND_COLLECTING) {
		if (!(rq->notify & WEFT_NOTIFY_SOURCE)) {
			/* A member must report back to this adapter. */
			weft_tx_frame_done(c, w, line, WEFT_R_COND_BUSY);
			return true;
		}
		c->cond_tag[rq->local_rcxt] = (uint8_t)(g + 1);
		if (++q->tagged == q->expect)
			q->state = WEFT_COND_WAITING;
		return false;
	}
	/* The signal. */
	win->cond_collect = 0;
	if (q->done >= q->expect) {
		q->state = WEFT_COND_FIRED;
		q->fired++;
		return false;
	}
	q->state = WEFT_COND_HELD;
	q->signal = *line;
	weft_tx_frame_done(c, w, line, WEFT_R_OK);
	return true;
}

bool weft_cond_take(struct weft_core *c, unsigned int w, struct weft_send_line *line)
{
	struct weft_win *win = &c->win[w];
	unsigned int g;

	if (!win->cond_ready)
		return false;
	g = (unsigned int)__builtin_ctz(win->cond_ready);
	win->cond_ready &= (uint8_t)~(1u << g);
	*line = win->cond[g].signal;
	return true;
}

void weft_cond_completion(struct weft_core *c, unsigned int w, uint32_t r)
{
	unsigned int g = c->cond_tag[r];
	struct weft_condq *q;

	if (!g || g > WEFT_NR_COND)
		return;
	c->cond_tag[r] = 0;
	q = &c->win[w].cond[g - 1];
	if (q->state < WEFT_COND_COLLECTING || q->state > WEFT_COND_HELD)
		return;
	q->done++;
	maybe_fire(c, w, g - 1);
}

void weft_cond_reset(struct weft_core *c, unsigned int w)
{
	unsigned int g;

	for (g = 0; g < WEFT_NR_COND; g++)
		if (c->win[w].cond[g].state != WEFT_COND_IDLE || c->win[w].cond_ready)
			clear(c, w, g);
}
