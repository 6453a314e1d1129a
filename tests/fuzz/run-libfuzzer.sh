#!/usr/bin/env bash
# Build and briefly run the libFuzzer target of the Weft core.
#
#   tests/fuzz/run-libfuzzer.sh [RUNS] [-- extra libFuzzer options]
#   WEFT_FUZZ_TARGET=match tests/fuzz/run-libfuzzer.sh ...   (matching engine)
#   WEFT_FUZZ_TARGET=state tests/fuzz/run-libfuzzer.sh ...   (state loader)
#   WEFT_FUZZ_TARGET=wire tests/fuzz/run-libfuzzer.sh ...    (libfabric provider's wire)
#
# Needs clang with -fsanitize=fuzzer (Debian: clang + libclang-rt-14-dev).
# When that is missing it says so and exits 2: nothing is built and
# nothing counts as run.  The build goes to build-libfuzzer/ (git-ignored);
# the corpus to build-libfuzzer/corpus/.  RUNS defaults to 20000 inputs.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

runs=${1:-20000}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift

out=$WEFT_ROOT/build-libfuzzer
mkdir -p "$out/corpus"
CC=${CLANG:-clang}
if ! command -v "$CC" >/dev/null; then
	echo "run-libfuzzer: clang not found; install clang and libclang-rt-14-dev" >&2
	exit 2
fi
probe=$out/probe.c
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' >"$probe"
if ! "$CC" -fsanitize=fuzzer "$probe" -o "$out/probe" 2>"$out/probe.log"; then
	echo "run-libfuzzer: $CC -fsanitize=fuzzer does not link here (see $out/probe.log);" \
		"install libclang-rt-14-dev" >&2
	exit 2
fi

# Every source of the core and the sim (verbs included), as the meson
# targets weft-core and weft-sim build them, plus the fuzz engine.
src=(
	"$WEFT_ROOT"/qemu-device/core/*.c
	"$WEFT_ROOT"/qemu-device/switch/fabric.c
	"$WEFT_ROOT"/qemu-device/sim/*.c
	"$WEFT_ROOT"/guest-driver/policy/weft_policy.c
	"$WEFT_ROOT"/tests/fuzz/fuzz_engine.c
	"$WEFT_ROOT"/tests/fuzz/fuzz_src.c
)
# WEFT_FUZZ_TARGET=match fuzzes the header-matching engine (fuzz_match.h),
# WEFT_FUZZ_TARGET=state the adapter state loader (fuzz_state.h),
# WEFT_FUZZ_TARGET=wire the provider's wire decoders alone (fuzz_wire.h).
target=weft-libfuzzer
corpus=$out/corpus
if [ "${WEFT_FUZZ_TARGET:-core}" = match ]; then
	src+=("$WEFT_ROOT"/tests/fuzz/fuzz_match.c "$WEFT_ROOT"/tests/fuzz/fuzz_match_libfuzzer.c)
	target=weft-libfuzzer-match
	corpus=$out/corpus-match
	mkdir -p "$corpus"
elif [ "${WEFT_FUZZ_TARGET:-core}" = state ]; then
	src+=("$WEFT_ROOT"/tests/fuzz/fuzz_state.c "$WEFT_ROOT"/tests/fuzz/fuzz_state_libfuzzer.c)
	target=weft-libfuzzer-state
	corpus=$out/corpus-state
	mkdir -p "$corpus"
elif [ "${WEFT_FUZZ_TARGET:-core}" = wire ]; then
	src=("$WEFT_ROOT"/tests/fuzz/fuzz_src.c "$WEFT_ROOT"/tests/fuzz/fuzz_wire.c
		"$WEFT_ROOT"/tests/fuzz/fuzz_wire_libfuzzer.c "$WEFT_ROOT"/fi-provider/wire.c)
	target=weft-libfuzzer-wire
	corpus=$out/corpus-wire
	mkdir -p "$corpus"
else
	src+=("$WEFT_ROOT"/tests/fuzz/fuzz_libfuzzer.c)
fi
weft_log "building the libFuzzer target"
"$CC" -std=gnu11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$WEFT_ROOT/include" -I"$WEFT_ROOT/qemu-device/core" \
	-I"$WEFT_ROOT/qemu-device/switch" -I"$WEFT_ROOT/qemu-device/sim" \
	-I"$WEFT_ROOT/guest-driver/policy" -I"$WEFT_ROOT/fi-provider" \
	"${src[@]}" -o "$out/$target"
weft_log "running $runs inputs"
"$out/$target" -runs="$runs" -max_len=4096 -seed=1 "$@" "$corpus"
