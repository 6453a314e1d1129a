// SPDX-License-Identifier: MIT
/*
 * Recovery while a process has its window mapped and keeps touching it
 * (doorbell stores and loads, send and receive FIFO stores and loads):
 * the process gets no signal, the doorbell page reads STATE not VALID, its
 * FIFOs keep their contents, every ioctl on the old window, rCxt and
 * registration fails with ESTALE, mmap of the old window with ESTALE, and
 * closing the window (round 0) or the fd (round 1) releases everything.
 */
#include <signal.h>
#include <sys/wait.h>

#include "wt.h"

#define JOB	0x57a1u
#define ROUNDS	2

static volatile sig_atomic_t stop;

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

/* Child: hammer the window until told, then check the errors.  Exit 0 if
 * every check passed; a signal would show in the parent's wait status. */
static int child(int round, int ready_fd)
{
	static uint8_t buf[16384] __attribute__((aligned(4096)));
	struct weft_ioc_rcxt r, r2;
	struct weft_ioc_reg_mr m;
	struct weft_ioc_dereg_mr d;
	struct weft_ioc_window cw;
	struct wt_win win;
	uint64_t loops = 0, st, after = 0;
	int fd = wt_open();
	void *p;
	char c = 'r';

	t_child();
	signal(SIGUSR1, on_usr1);
	wt_attach_open(fd, JOB, 3, &win, "child: ");
	wt_rcxt_mr(fd, JOB, &win, buf, sizeof(buf), &r, &m, "child: ");
	memset(win.send + WEFT_FRAME_SIZE, 0x5a, 64);
	if (write(ready_fd, &c, 1) != 1)
		return 1;
	while (!stop) {
		/* Doorbell loads and (no-op) stores, FIFO loads and stores. */
		st = win.db[WEFT_DB_STATE / 8];
		(void)win.db[WEFT_DB_SEND_READY / 8];
		win.db[WEFT_DB_START_TRANSMIT / 8] = 0;
		win.db[WEFT_DB_RETURN_SLOTS / 8] = 0;
		win.db[WEFT_DB_RECV_THRESHOLD / 8] = 0;
		win.send[2 * WEFT_FRAME_SIZE + (loops * 64) % WEFT_FRAME_SIZE] ^= 1;
		(void)*(volatile uint8_t *)(win.recv + (loops * 64) % win.o.recv_size);
		if (st != WEFT_WIN_VALID)
			after++;
		loops++;
	}
	WT_CHECK(after > 0, "child kept touching the window after the recovery (%" PRIu64
		 " of %" PRIu64 " loops saw STATE not VALID)", after, loops);
	st = win.db[WEFT_DB_STATE / 8];
	WT_CHECK(st != WEFT_WIN_VALID, "doorbell page reads STATE %" PRIu64 " (not VALID)", st);
	WT_CHECK(win.send[WEFT_FRAME_SIZE + 1] == 0x5a, "send FIFO still holds what was written");
	r2 = r;
	WT_EXPECT_ERR(fd, WEFT_IOC_ALLOC_RCXT, &r2, ESTALE, "child: ALLOC_RCXT on the old window");
	WT_EXPECT_ERR(fd, WEFT_IOC_FREE_RCXT, &r, ESTALE, "child: FREE_RCXT of the old rCxt");
	memset(&d, 0, sizeof(d));
	d.handle = m.handle;
	WT_EXPECT_ERR(fd, WEFT_IOC_DEREG_MR, &d, ESTALE, "child: DEREG_MR of the old registration");
	errno = 0;
	p = mmap(NULL, win.o.send_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)win.o.send_offset);
	WT_CHECK(p == MAP_FAILED && errno == ESTALE, "child: mmap of the old window -> ESTALE (%s)",
		 p == MAP_FAILED ? strerror(errno) : "mapped");
	if (round == 0) {
		memset(&cw, 0, sizeof(cw));
		cw.window = win.o.window;
		WT_EXPECT_OK(fd, WEFT_IOC_CLOSE_WINDOW, &cw, "child: closing the old window");
		wt_unmap_window(&win);
	}
	/* Round 1: exit with the window mapped; the fd release frees it. */
	return wt_failures ? 1 : 0;
}

static int trigger(int round)
{
	char path[256];

	if (round == 0)
		snprintf(path, sizeof(path), "/sys/class/misc/%s/device/recover", wt_devname());
	else
		wt_dbg_path(path, sizeof(path), "recover");
	return wt_write_file(path, "1");
}

int main(void)
{
	struct wt_res base = wt_res(), now;
	int round;

	for (round = 0; round < ROUNDS; round++) {
		int pfd[2], status, ret;
		pid_t pid;
		char c;

		if (pipe(pfd))
			wt_fatal("pipe: %s", strerror(errno));
		pid = fork();
		if (pid < 0)
			wt_fatal("fork: %s", strerror(errno));
		if (pid == 0) {
			close(pfd[0]);
			_exit(child(round, pfd[1]));
		}
		close(pfd[1]);
		if (read(pfd[0], &c, 1) != 1)
			wt_fatal("child did not start");
		close(pfd[0]);
		usleep(100000);
		ret = trigger(round);
		WT_CHECK(ret == 0, "round %d: recovery requested (%s)", round,
			 ret ? strerror(-ret) : "ok");
		usleep(300000);         /* the child keeps touching its mappings */
		kill(pid, SIGUSR1);
		if (waitpid(pid, &status, 0) != pid)
			wt_fatal("waitpid: %s", strerror(errno));
		WT_CHECK(!WIFSIGNALED(status), "round %d: child not killed by a signal (%s)", round,
			 WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "none");
		WT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			 "round %d: child's checks passed (exit %d)", round,
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		now = wt_res();
		WT_CHECK(wt_res_equal(&now, &base), "round %d: everything released (%s)", round,
			 round ? "fd closed with the window mapped" : "window closed");
		if (!wt_res_equal(&now, &base)) {
			wt_res_print("before", &base);
			wt_res_print("after", &now);
		}
	}
	return wt_done("weft-test-stale");
}
