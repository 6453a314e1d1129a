"""TAP output for the cluster tool's own tests (meson suite 'scripts'):
check() prints one point, plan() the plan line and the exit status."""

_counts = {"checks": 0, "failures": 0}


def check(what, ok, detail=""):
    """One TAP point: 'ok N - WHAT', or 'not ok N - WHAT' and DETAIL."""
    _counts["checks"] += 1
    print(f"{'ok' if ok else 'not ok'} {_counts['checks']} - {what}")
    if not ok:
        _counts["failures"] += 1
        print(f"# | {detail}")


def plan():
    """Prints '1..N'; the exit status: 1 when a point failed."""
    print(f"1..{_counts['checks']}")
    return 1 if _counts["failures"] else 0
