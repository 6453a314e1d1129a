// SPDX-License-Identifier: MIT
/*
 * A process killed in the middle of a transfer: its windows, rCxts,
 * registrations and pinned pages are released (driver debugfs counters).
 */
#include "wt.h"

#define JOB	0x4b111u

static void child(int ready_fd)
{
	int fd = wt_open(), k;
	struct weft_ioc_job j = { .job_id = JOB };
	struct weft_ioc_query q = wt_query(fd);
	struct weft_ioc_rcxt r;
	struct weft_ioc_reg_mr m;
	struct wt_win win;
	size_t len = 1 << 20;
	uint64_t produced = 0;
	uint8_t *buf;

	if (ioctl(fd, WEFT_IOC_JOB_ATTACH, &j) || wt_open_window(fd, JOB, 6, &win))
		_exit(10);
	for (k = 0; k < 8; k++) {
		memset(&r, 0, sizeof(r));
		r.window = win.o.window;
		if (ioctl(fd, WEFT_IOC_ALLOC_RCXT, &r))
			_exit(11);
	}
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(buf, 1, len);
	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)buf;
	m.length = len;
	m.job_id = JOB;
	if (ioctl(fd, WEFT_IOC_REG_MR, &m))
		_exit(12);
	/* Traffic to itself, first one FIFO's worth, then forever. */
	wt_send_frames(&win, q.node_id, (uint16_t)win.o.window, &produced, 64);
	if (write(ready_fd, "r", 1) != 1)
		_exit(13);
	for (;;) {
		wt_send_frames(&win, q.node_id, (uint16_t)win.o.window, &produced, 64);
	}
}

int main(void)
{
	struct wt_res base = wt_res(), mid, end;
	int pipefd[2], st, round;

	wt_res_print("start", &base);
	for (round = 0; round < 3; round++) {
		pid_t pid;
		char c;

		if (pipe(pipefd))
			wt_fatal("pipe: %s", strerror(errno));
		pid = fork();
		if (pid == 0) {
			close(pipefd[0]);
			child(pipefd[1]);
		}
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1) {
			waitpid(pid, &st, 0);
			wt_fatal("child failed to set up (status 0x%x)", st);
		}
		close(pipefd[0]);
		mid = wt_res();
		wt_res_print("child running", &mid);
		WT_CHECK(mid.windows_open == base.windows_open + 1 &&
			 mid.rcxts_held == base.rcxts_held + 8 &&
			 mid.mrs == base.mrs + 1 &&
			 mid.pages_pinned == base.pages_pinned + 256,
			 "round %d: child holds 1 window, 8 rCxts, 1 MR, 256 pinned pages", round);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		WT_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "round %d: child killed", round);
		end = wt_res();
		wt_res_print("after kill", &end);
		WT_CHECK(wt_res_equal(&end, &base),
			 "round %d: windows, rCxts, MRs and pinned pages released", round);
	}
	return wt_done("weft-test-kill");
}
