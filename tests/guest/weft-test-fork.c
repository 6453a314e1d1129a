// SPDX-License-Identifier: MIT
/*
 * Device mappings and fork: the driver's mappings are not inherited
 * (VM_DONTCOPY), so a forked child that touches the parent's doorbell
 * page, send FIFO or receive FIFO gets SIGSEGV, while the parent's
 * window keeps working: packets sent to its own window before, during
 * and after the children arrive intact.  The mappings can never become
 * executable (no VM_MAYEXEC: mprotect(PROT_EXEC) fails).  Needs the
 * adapter's link to the switch (packets go to this node's own window).
 */
#include "wt.h"

#define JOB	0xf0f0u
#define LOG2	4		/* 16 frames each way */

enum touch { T_DB_LOAD, T_DB_STORE, T_SEND, T_RECV };
static const char *const touch_name[] = {
	"loads STATE from the doorbell page", "stores START_TRANSMIT to the doorbell page",
	"writes the send FIFO", "reads the receive FIFO",
};

/* Fork a child that touches one of the parent's mappings; returns the
 * signal that ended it (0 if it exited). */
static int child_touch(struct wt_win *w, enum touch what)
{
	volatile uint64_t sink;
	pid_t pid = fork();
	int st;

	if (pid < 0)
		t_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		switch (what) {
		case T_DB_LOAD:
			sink = w->db[WEFT_DB_STATE / 8];
			break;
		case T_DB_STORE:
			w->db[WEFT_DB_START_TRANSMIT / 8] = 1;
			break;
		case T_SEND:
			w->send[0] = 0xee;
			break;
		case T_RECV:
			sink = w->recv[0];
			break;
		}
		(void)sink;
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		t_bail("waitpid: %s", strerror(errno));
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

/* Send n packets to this node's window and check that each arrives with
 * its payload; returns the packets that did. */
static unsigned int traffic(struct wt_win *w, uint16_t node, uint64_t *produced,
			    uint64_t *consumed, unsigned int n)
{
	uint32_t frames = 1u << LOG2;
	unsigned int i, ok = 0;
	time_t start;

	for (i = 0; i < n; i++) {
		uint64_t idx = *produced;
		volatile struct weft_recv_hdr *rh =
			(volatile struct weft_recv_hdr *)(w->recv +
							  (*consumed & (frames - 1)) * WEFT_FRAME_SIZE);
		const uint8_t *pl = (const uint8_t *)rh + WEFT_FRAME_HDR_SIZE;
		int st;

		wt_send_frames(w, node, (uint16_t)w->o.window, produced, 1);
		st = wt_wait_done((volatile struct weft_send_line *)
				  (w->send + (idx & (frames - 1)) * WEFT_FRAME_SIZE));
		if (st != WEFT_R_OK) {
			t_diag("packet %llu: send status %s", (unsigned long long)idx,
			       wt_reason(st));
			continue;
		}
		start = time(NULL);
		while (!(rh->flags & WEFT_RF_VALID) && time(NULL) - start < 30)
			sched_yield();
		if ((rh->flags & WEFT_RF_VALID) && rh->length == 1024 && pl[0] == (uint8_t)idx &&
		    pl[1023] == (uint8_t)idx)
			ok++;
		rh->flags = 0;
		(*consumed)++;
		w->db[WEFT_DB_RETURN_SLOTS / 8] = 1;
	}
	return ok;
}

int main(void)
{
	struct wt_res base = wt_res(), kids, mid;
	int fd = wt_open(), sig, t;
	struct weft_ioc_query q = wt_query(fd);
	uint64_t produced = 0, consumed = 0;
	unsigned int got;
	struct wt_win win;

	wt_attach_open(fd, JOB, LOG2, &win, "");
	got = traffic(&win, q.node_id, &produced, &consumed, 8);
	OK(got == 8, "before fork: %u of 8 packets to its own window arrived intact", got);

	kids = wt_res();
	for (t = T_DB_LOAD; t <= T_RECV; t++) {
		sig = child_touch(&win, t);
		OK(sig == SIGSEGV, "a forked child that %s gets SIGSEGV (got %s)",
			 touch_name[t], sig ? strsignal(sig) : "no signal");
	}
	mid = wt_res();
	OK(wt_res_equal(&mid, &kids) && mid.windows_open == base.windows_open + 1,
		 "the children changed no driver counter (windows_open %lld)", mid.windows_open);
	OK(win.db[WEFT_DB_STATE / 8] == WEFT_WIN_VALID, "the parent's window is still VALID");

	/* Traffic while a child faults on the doorbell page. */
	if (fork() == 0) {
		win.db[WEFT_DB_START_TRANSMIT / 8] = 1;
		_exit(0);
	}
	got = traffic(&win, q.node_id, &produced, &consumed, 8);
	wait(NULL);
	OK(got == 8, "with a faulting child: %u of 8 packets arrived intact", got);

	errno = 0;
	OK(mprotect((void *)win.db, WEFT_DB_PAGE_SIZE, PROT_READ | PROT_EXEC) == -1 &&
		 errno == EACCES, "mprotect(PROT_EXEC) of the doorbell page fails with EACCES (%s)",
		 strerror(errno));
	errno = 0;
	OK(mprotect(win.send, win.o.send_size, PROT_READ | PROT_EXEC) == -1 &&
		 errno == EACCES, "mprotect(PROT_EXEC) of the send FIFO fails with EACCES (%s)",
		 strerror(errno));

	got = traffic(&win, q.node_id, &produced, &consumed, 8);
	OK(got == 8, "after the children: %u of 8 packets arrived intact", got);
	wt_close_window(fd, &win, "close");
	close(fd);
	mid = wt_res();
	OK(wt_res_equal(&mid, &base), "everything released");
	return t_done();
}
