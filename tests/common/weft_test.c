/* SPDX-License-Identifier: MIT */
/* TAP output and check accounting for the C test programs (weft_test.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft_test.h"

#define T_SHOWN_FAILS 20        /* "# FAIL" lines shown per point */

static struct {
	char name[512];
	bool open;
	bool child;                     /* a forked child: no points of its own */
	bool done;                      /* the plan is out */
	pid_t pid;                      /* the process that prints the plan */
	unsigned long checks, fails;    /* of the open point */
	unsigned long points, bad_points;
	unsigned long all_checks, all_fails;
} t;

/* A description on one line, with '#' escaped (TAP would read a directive). */
static void t_vname(char *buf, size_t len, const char *fmt, va_list ap)
{
	char raw[512];
	size_t i, o = 0;

	vsnprintf(raw, sizeof(raw), fmt, ap);
	for (i = 0; raw[i] && o + 2 < len; i++) {
		if (raw[i] == '#')
			buf[o++] = '\\';
		buf[o++] = raw[i] == '\n' ? ' ' : raw[i];
	}
	buf[o] = '\0';
}

static void t_line(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* Close the open point: ok only with at least one check, all held. */
static void t_close(void)
{
	bool ok;

	if (!t.open && !t.checks)
		return;
	ok = t.checks && !t.fails;
	if (t.fails > T_SHOWN_FAILS)
		printf("# %lu more failed checks in this point\n", t.fails - T_SHOWN_FAILS);
	if (t.child) {
		printf("# child: %s - %s", ok ? "ok" : "not ok", t.name[0] ? t.name : "checks");
	} else {
		t.points++;
		if (!ok)
			t.bad_points++;
		printf("%s %lu - %s", ok ? "ok" : "not ok", t.points, t.name[0] ? t.name : "checks");
	}
	if (!t.checks)
		printf(" (no check ran)");
	else if (t.checks > 1)
		printf(" (%lu checks)", t.checks);
	printf("\n");
	fflush(stdout);
	t.open = false;
	t.checks = t.fails = 0;
	t.name[0] = '\0';
}

static void t_vbegin(const char *fmt, va_list ap)
{
	t_close();
	t_vname(t.name, sizeof(t.name), fmt, ap);
	t.open = true;
}

void t_begin(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_vbegin(fmt, ap);
	va_end(ap);
}

void t_point(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_vname(t.name, sizeof(t.name), fmt, ap);
	va_end(ap);
	t.open = true;
	t_close();
}

static void t_count(bool ok, const char *file, int line, const char *expr, const char *fmt,
		    va_list ap)
{
	t.checks++;
	t.all_checks++;
	if (ok)
		return;
	t.fails++;
	t.all_fails++;
	if (t.fails > T_SHOWN_FAILS)
		return;
	printf("# FAIL %s:%d:", file, line);
	if (expr)
		printf(" %s:", expr);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

bool t_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_count(ok, file, line, expr, fmt, ap);
	va_end(ap);
	return ok;
}

bool t_check_eq(unsigned long long a, unsigned long long b, const char *file, int line,
		const char *what)
{
	return t_check(a == b, file, line, NULL, " %s: got %llu (0x%llx), want %llu (0x%llx)",
		       what, a, a, b, b);
}

bool t_ok(bool ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_vbegin(fmt, ap);
	va_end(ap);
	t_check(ok, file, line, NULL, "%s", "");
	t_close();
	return ok;
}

void t_checked(const char *fmt, ...)
{
	va_list ap;

	if (!t.checks || t.fails)
		return;
	va_start(ap, fmt);
	t_line("# checked: ", fmt, ap);
	va_end(ap);
}

void t_diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_line("# ", fmt, ap);
	va_end(ap);
}

void t_bail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_line("Bail out! ", fmt, ap);
	va_end(ap);
	t.done = true;
	exit(2);
}

static void t_totals(void)
{
	t.done = true;
	printf("1..%lu\n", t.points);
	printf("# %lu points, %lu failed; %lu checks, %lu failed\n", t.points, t.bad_points,
	       t.all_checks, t.all_fails);
	fflush(stdout);
}

void t_abort(void)
{
	t.open = true;
	if (!t.fails)
		t.fails = 1;
	t_close();
	printf("# stopped at the first failed REQUIRE\n");
	t_totals();
	exit(1);
}

int t_done(void)
{
	t_close();
	if (!t.points) {
		printf("not ok 1 - the program ran no check\n");
		t.points = t.bad_points = 1;
	}
	t_totals();
	return t.bad_points ? 1 : 0;
}

void t_child(void)
{
	t.child = true;
	t.open = false;
	t.checks = t.fails = t.all_checks = t.all_fails = 0;
	t.name[0] = '\0';
}

/* A program that returns from main without t_done (written against an
 * older harness) still ends its TAP: the open point and the plan. */
static void t_at_exit(void)
{
	if (t.done || t.child || getpid() != t.pid || (!t.points && !t.open && !t.checks))
		return;
	t_close();
	t_totals();
}

__attribute__((constructor)) static void t_init(void)
{
	t.pid = getpid();
	atexit(t_at_exit);
}

unsigned long t_checks(void)
{
	return t.all_checks;
}

unsigned long t_failures(void)
{
	return t.all_fails;
}
