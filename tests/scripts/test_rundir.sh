#!/usr/bin/env bash
# weft-cluster's run directory (docs/cluster.md, "Run directory"): created
# private (mode 0700), and refused when another user owns it, when it is a
# symbolic link or when others may write to it; a cluster.env it cannot
# trust is never sourced.  Named clusters side by side and `list` work.
# Needs no VM.  Run by meson (suite scripts, TAP: one point per check);
# needs root for `chown nobody` (skipped otherwise, which is no pass).
set -uo pipefail
WC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/weft-cluster
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root to create a folder owned by another user"; exit 0; }
id nobody >/dev/null 2>&1 || { echo "1..0 # SKIP no user 'nobody'"; exit 0; }

T=$(mktemp -d /tmp/weft-rundir-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
checks=0 failures=0
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	checks=$((checks + 1))
	if "$@"; then
		echo "ok $checks - $what"
	else
		failures=$((failures + 1))
		echo "not ok $checks - $what"
		sed 's/^/# | /' "$T/out" 2>/dev/null | tail -5
	fi
}
wc_run() { # wc_run RUN_DIR ARGS...: status in $RC, output in $T/out
	local d=$1
	shift
	WEFT_RUN_DIR=$d "$WC" "$@" >"$T/out" 2>&1
	RC=$?
}
mode() { stat -c %a "$1"; }
said() { grep -q -- "$1" "$T/out"; }

# 1. A missing run directory is created with mode 0700.
wc_run "$T/new" list
check "a new run directory is created with mode 700 ($(mode "$T/new" 2>/dev/null)) and list works" \
	eval '[ "$RC" = 0 ] && [ "$(mode "$T/new")" = 700 ] && said "no clusters in"'

# 2. Created in advance by another user: refused, with the reason.
mkdir -m 700 "$T/hijack"
chown nobody "$T/hijack"
for cmd in list "up -n 1" status down; do
	# shellcheck disable=SC2086 # cmd is a command and its arguments
	wc_run "$T/hijack" --name c1 $cmd
	check "'$cmd' refuses a run directory owned by nobody (exit $RC): clear message" \
		eval '[ "$RC" != 0 ] && said "refusing run directory $T/hijack: it belongs to uid $(id -u nobody), not to you"'
done
check "nothing was written into the foreign run directory" \
	eval '[ -z "$(ls -A "$T/hijack")" ]'

# 3. A symbolic link, even to a folder of ours: refused.
mkdir -m 700 "$T/real"
ln -s "$T/real" "$T/link"
wc_run "$T/link" list
check "a run directory that is a symbolic link is refused (exit $RC)" \
	eval '[ "$RC" != 0 ] && said "it is a symbolic link"'

# 4. Ours but writable by others: refused; ours and only readable: tightened.
mkdir "$T/open"
chmod 777 "$T/open"
wc_run "$T/open" list
check "a run directory of mode 777 is refused (exit $RC)" \
	eval '[ "$RC" != 0 ] && said "lets other users write to it" && [ "$(mode "$T/open")" = 777 ]'
mkdir "$T/old"
chmod 755 "$T/old"
wc_run "$T/old" list
check "a run directory of ours with mode 755 is tightened to $(mode "$T/old")" \
	eval '[ "$RC" = 0 ] && [ "$(mode "$T/old")" = 700 ]'

# 5. A cluster.env that is not ours is never sourced.
d=$T/new
mkdir -m 700 "$d/planted"
printf 'NODES=1\ntouch %q\n' "$T/sourced" >"$d/planted/cluster.env"
chown nobody "$d/planted/cluster.env"
wc_run "$d" --name planted status
check "status refuses a cluster.env owned by another user (exit $RC), and did not run it" \
	eval '[ "$RC" != 0 ] && said "refusing to read" && [ ! -e "$T/sourced" ]'
wc_run "$d" --name planted down
check "down refuses it too (exit $RC), without running it" \
	eval '[ "$RC" != 0 ] && [ ! -e "$T/sourced" ]'
chown root "$d/planted/cluster.env"
chmod 666 "$d/planted/cluster.env"
wc_run "$d" --name planted status
check "status refuses a cluster.env that others may write (exit $RC), and did not run it" \
	eval '[ "$RC" != 0 ] && said "refusing to read" && [ ! -e "$T/sourced" ]'

# 6. Named clusters side by side, and list.
rm -rf "$d/planted"
for c in alpha beta; do
	mkdir -m 700 "$d/$c"
	printf 'NODES=%q\n' 2 >"$d/$c/cluster.env"
done
wc_run "$d" list
check "list shows both named clusters" \
	eval '[ "$RC" = 0 ] && said "^alpha: 0 of 2 node(s) running" && said "^beta: 0 of 2 node(s) running"'
wc_run "$d" --name alpha down
check "down of one named cluster works and leaves the other (exit $RC)" \
	eval '[ "$RC" = 0 ] && [ -f "$d/beta/cluster.env" ]'

echo "1..$checks"
echo "# run directory: $checks checks, $failures failed"
[ "$failures" = 0 ]
