// SPDX-License-Identifier: MIT
/*
 * A process touches only its own windows, rCxts and registrations: a
 * second process (its own open of the device) cannot mmap, close or use
 * the first one's window, nor free its rCxt or deregister its memory.
 */
#include "wt.h"

#define JOB	0x150150u

int main(void)
{
	struct wt_res base = wt_res(), now;
	int fd = wt_open(), pipefd[2], st;
	struct weft_ioc_rcxt r;
	struct weft_ioc_reg_mr m;
	struct wt_win win;
	static uint8_t buf[8192] __attribute__((aligned(4096)));
	pid_t pid;
	char c;

	wt_attach_open(fd, JOB, 3, &win, "");
	wt_rcxt_mr(fd, JOB, &win, buf, sizeof(buf), &r, &m, "");
	t_diag("owner: window %u, rCxt %u, MR handle %u", win.o.window, r.rcxt, m.handle);
	if (pipe(pipefd))
		wt_fatal("pipe: %s", strerror(errno));

	pid = fork();
	if (pid == 0) {
		/* Another process with its own open of the device. */
		int fd2, k;
		void *p;
		struct weft_ioc_window cw = { .window = win.o.window };
		struct weft_ioc_rcxt r2 = r;
		struct weft_ioc_dereg_mr d = { .handle = m.handle };
		struct weft_ioc_job j2 = { .job_id = JOB };
		uint64_t offs[3] = { win.o.db_offset, win.o.send_offset, win.o.recv_offset };
		uint64_t sizes[3] = { WEFT_DB_PAGE_SIZE, win.o.send_size, win.o.recv_size };
		const char *names[3] = { "doorbell page", "send FIFO", "receive FIFO" };

		close(fd);
		t_child();
		fd2 = wt_open();
		for (k = 0; k < 3; k++) {
			errno = 0;
			p = mmap(NULL, sizes[k], PROT_READ | PROT_WRITE, MAP_SHARED, fd2,
				 (off_t)offs[k]);
			WT_CHECK(p == MAP_FAILED && errno == EACCES,
				 "other process: mmap of the %s -> EACCES (%s)", names[k],
				 strerror(errno));
		}
		WT_EXPECT_ERR(fd2, WEFT_IOC_CLOSE_WINDOW, &cw, ENOENT,
			      "other process: CLOSE_WINDOW");
		WT_EXPECT_ERR(fd2, WEFT_IOC_FREE_RCXT, &r2, ENOENT, "other process: FREE_RCXT");
		r2.rcxt = 0;
		WT_EXPECT_ERR(fd2, WEFT_IOC_ALLOC_RCXT, &r2, ENOENT,
			      "other process: ALLOC_RCXT on the window");
		WT_EXPECT_ERR(fd2, WEFT_IOC_DEREG_MR, &d, ENOENT, "other process: DEREG_MR");
		WT_EXPECT_ERR(fd2, WEFT_IOC_JOB_DETACH, &j2, ENOENT,
			      "other process: JOB_DETACH of a job it never attached");
		m.handle = 0;
		m.job_id = JOB;
		WT_EXPECT_ERR(fd2, WEFT_IOC_REG_MR, &m, ENOENT,
			      "other process: REG_MR into the job without attaching");
		close(fd2);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(3);
		_exit(wt_failures ? 1 : 0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &c, 1) != 1)
		WT_CHECK(0, "child finished its checks");
	waitpid(pid, &st, 0);
	WT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "other process' checks passed (status 0x%x)",
		 st);
	WT_CHECK(win.db[WEFT_DB_STATE / 8] == WEFT_WIN_VALID, "owner's window still VALID");
	{
		struct weft_ioc_rcxt r3 = r;

		WT_EXPECT_OK(fd, WEFT_IOC_FREE_RCXT, &r3, "owner frees its rCxt");
	}
	close(fd);
	wt_unmap_window(&win);
	now = wt_res();
	WT_CHECK(wt_res_equal(&now, &base), "everything released after the owner closed");
	return wt_done("weft-test-isolation");
}
