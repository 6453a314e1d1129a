/* SPDX-License-Identifier: MIT */
/*
 * `weft-switch ctl --socket CTLPATH [--json] COMMAND [ARGS...]`: send one
 * command line to a running switch's control socket and print the reply.
 * Exit status 0 success, 1 refused by the switch, 2 usage or unreachable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sw.h"

static void ctl_usage(FILE *fp)
{
	fprintf(fp, "usage: " PROG " ctl --socket CTLPATH [--json] COMMAND [ARGS...]\n\n");
	ctl_print_help(fp);
}

int ctl_main(int argc, char **argv)
{
	const char *path = NULL;
	struct sockaddr_un a;
	char req[CTL_MAX_REQ + 2];
	size_t len = 0;
	bool json = false;
	char *reply = NULL;
	size_t rlen = 0, rcap = 0;
	int i, fd;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strncmp(argv[i], "--socket=", 9)) {
			path = argv[i] + 9;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			ctl_usage(stdout);
			return 0;
		} else {
			break;
		}
	}
	if (!path) {
		fprintf(stderr, PROG " ctl: error: --socket CTLPATH is required\n");
		return 2;
	}
	if (i == argc) {
		fprintf(stderr, PROG " ctl: error: no command given (try 'help')\n");
		return 2;
	}
	if (json)
		len += (size_t)snprintf(req, sizeof(req), "--json");
	for (; i < argc; i++) {
		char abs[PATH_MAX + 1];
		const char *arg = argv[i];

		/* capture start FILE: the switch may run in another folder. */
		if (i >= 2 && !strcmp(argv[i - 2], "capture") && !strcmp(argv[i - 1], "start") &&
		    arg[0] != '/') {
			char cwd[PATH_MAX];

			if (!getcwd(cwd, sizeof(cwd)) ||
			    snprintf(abs, sizeof(abs), "%s/%s", cwd, arg) >= (int)sizeof(abs)) {
				fprintf(stderr, PROG " ctl: error: capture path too long\n");
				return 2;
			}
			arg = abs;
		}
		if (strpbrk(arg, " \t\r\n") || len + strlen(arg) + 2 > CTL_MAX_REQ) {
			fprintf(stderr, PROG " ctl: error: argument '%s' has blanks or is too long\n",
				arg);
			return 2;
		}
		len += (size_t)snprintf(req + len, sizeof(req) - len, "%s%s", len ? " " : "", arg);
	}
	req[len++] = '\n';
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, PROG " ctl: error: socket path %s is too long\n", path);
		return 2;
	}
	memcpy(a.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fprintf(stderr, PROG " ctl: error: cannot connect to control socket %s: %s%s\n",
			path, strerror(errno),
			errno == ENOENT || errno == ECONNREFUSED ? " (is weft-switch running?)" : "");
		if (fd >= 0)
			close(fd);
		return 2;
	}
	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len) {
		fprintf(stderr, PROG " ctl: error: sending to %s: %s\n", path, strerror(errno));
		close(fd);
		return 2;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t n;

		if (rcap - rlen < 4096) {
			char *nr = realloc(reply, rcap + 65536);

			if (!nr) {
				fprintf(stderr, PROG " ctl: error: out of memory\n");
				free(reply);
				close(fd);
				return 2;
			}
			reply = nr;
			rcap += 65536;
		}
		n = read(fd, reply + rlen, rcap - rlen - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		rlen += (size_t)n;
	}
	close(fd);
	if (!reply || rlen == 0) {
		fprintf(stderr, PROG " ctl: error: no reply from %s\n", path);
		free(reply);
		return 2;
	}
	reply[rlen] = 0;
	if (!strncmp(reply, "OK\n", 3)) {
		fputs(reply + 3, stdout);
		free(reply);
		return 0;
	}
	if (!strncmp(reply, "ERR ", 4))
		fprintf(stderr, PROG " ctl: error: %s", reply + 4);
	else
		fprintf(stderr, PROG " ctl: error: malformed reply: %s\n", reply);
	free(reply);
	return 1;
}

