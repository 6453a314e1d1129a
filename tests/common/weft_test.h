/* SPDX-License-Identifier: MIT */
/*
 * The one assertion header of every Weft C test program (host and guest).
 * Programs speak TAP (version 13 syntax, the plan at the end), which meson
 * reads with `protocol: 'tap'`; see docs/testing.md.
 *
 * A test point is one "ok N - WHAT" or "not ok N - WHAT" line.  Checks
 * (CHECK, CHECK_EQ, REQUIRE) count into the open point; a point is "ok"
 * only if it had at least one check and all of them held.
 *
 *   t_begin("what")       open a point named up front; the next t_begin,
 *                         t_point or t_done closes it
 *   t_point("what")       close the open point, naming it after the fact
 *                         (the checks since the last point)
 *   OK(cond, "what")      a point of exactly one check
 *   CHECK(cond[, fmt...]) a check; a failed one prints a "# FAIL" line and
 *                         the program goes on
 *   REQUIRE(cond[, ...])  a check that ends the program (not ok, plan,
 *                         exit 1) when it fails
 *   t_checked(fmt...)     a "# checked: ..." line, printed only when every
 *                         check of the open point held so far
 *   t_diag(fmt...)        a "# ..." line: figures, context
 *   t_bail(fmt...)        "Bail out! ..." and exit 2: a set-up failure
 *   return t_done();      close the open point, print the plan and the
 *                         totals; 0 when every point passed (a program
 *                         that exits without it gets the open point and
 *                         the plan printed at exit, whatever its status)
 *   t_child()             first call in a forked child that checks: its
 *                         points become "#" lines and its counts start at
 *                         zero; it exits with t_failures() != 0 and the
 *                         parent checks that status
 * Nothing else may be printed on stdout (stderr is free).
 */
#ifndef WEFT_TEST_H
#define WEFT_TEST_H

#include <stdbool.h>

#define T_PRINTF(f, a) __attribute__((format(printf, f, a)))

void t_begin(const char *fmt, ...) T_PRINTF(1, 2);
void t_point(const char *fmt, ...) T_PRINTF(1, 2);
bool t_ok(bool ok, const char *file, int line, const char *fmt, ...) T_PRINTF(4, 5);
bool t_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...)
	T_PRINTF(5, 6);
bool t_check_eq(unsigned long long a, unsigned long long b, const char *file, int line,
		const char *what);
void t_checked(const char *fmt, ...) T_PRINTF(1, 2);
void t_diag(const char *fmt, ...) T_PRINTF(1, 2);
__attribute__((noreturn)) void t_bail(const char *fmt, ...) T_PRINTF(1, 2);
__attribute__((noreturn)) void t_abort(void);
int t_done(void);
void t_child(void);
/* Checks and failed checks so far, in the whole program. */
unsigned long t_checks(void);
unsigned long t_failures(void);

#define CHECK(cond, ...) t_check(!!(cond), __FILE__, __LINE__, #cond, " " __VA_ARGS__)
#define CHECK_EQ(a, b, what) \
	t_check_eq((unsigned long long)(a), (unsigned long long)(b), __FILE__, __LINE__, what)
#define REQUIRE(cond, ...) do { \
	if (!t_check(!!(cond), __FILE__, __LINE__, #cond, " " __VA_ARGS__)) \
		t_abort(); \
} while (0)
#define OK(cond, ...) t_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#endif /* WEFT_TEST_H */
