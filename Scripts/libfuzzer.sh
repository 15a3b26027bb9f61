#!/usr/bin/env bash
# Builds the libFuzzer driver (product gattlab-fuzz, every target in one binary) with the fuzzer
# runtime and ASan in its own scratch path, once for all targets, and runs TARGET on a corpus for
# SECONDS through a link fuzz-TARGET (the driver runs the target its name says). Used by
# `make fuzz`.
#   Scripts/libfuzzer.sh TARGET SECONDS [CORPUS_OUT]
# New inputs go to CORPUS_OUT (default Corpus/TARGET); Corpus/TARGET is read as seeds either way.
# Quirks of the device targets: GATTLAB_FUZZ_QUIRKS=ssid-overflow (comma-separated).
# Exit 0 when nothing was found; 1 with the crash file and how to reproduce it printed.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: Scripts/libfuzzer.sh TARGET SECONDS [CORPUS_OUT]}
seconds=${2:?usage: Scripts/libfuzzer.sh TARGET SECONDS [CORPUS_OUT]}
corpus_out=${3:-Corpus/$target}
SWIFT=${SWIFT:-swift}
# release for real campaigns; the CI smoke pass builds debug, which compiles in a fraction of the
# time and still has the coverage instrumentation and ASan that matter for a short run.
CONFIG=${LIBFUZZER_CONFIG:-release}
GATTLAB=${GATTLAB:-.build/debug/gattlab}

# -max_len from the target itself, so the two fuzzers agree on input sizes, and the modules its
# build instruments (* for every one).
read -r max_len modules < <("$GATTLAB" fuzz list --format json | python3 -c '
import json, sys
t = [r for r in json.load(sys.stdin) if r["name"] == sys.argv[1]]
print(t[0]["maxLength"], ",".join(t[0].get("instrumentedModules") or ["*"])) if t else print("")' "$target")
if [ -z "$max_len" ]; then echo "error: no fuzz target '$target' (gattlab fuzz list)" >&2; exit 64; fi

# Only the driver, in .build-fuzz: a whole-package fuzzer build breaks the executables that have
# a main. ASan on every module; GATTLAB_FUZZ_INSTRUMENT=address makes Package.swift put the
# coverage instrumentation (-sanitize=fuzzer,address) only on the modules the targets exercise and
# link libFuzzer into the driver: libFuzzer scans every counter after each input, so counters in
# code no target runs only slow it down. GATTLAB_FUZZ_MODULES narrows that to the target's own
# modules (a codec's targets: that codec alone). One build per set of modules, each in its own
# scratch path (.build-fuzz for every module, .build-fuzz/only-SpeakerOTACodec...), so that switching
# targets does not build again.
export GATTLAB_FUZZ_INSTRUMENT=address GATTLAB_FUZZ_MODULES=$modules
scratch=.build-fuzz
[ "$modules" = "*" ] || scratch=.build-fuzz/only-${modules//,/-}
"$SWIFT" build -c "$CONFIG" --product gattlab-fuzz --scratch-path "$scratch" \
  --sanitize address -Xswiftc -DGATTLAB_LIBFUZZER
bindir=$("$SWIFT" build -c "$CONFIG" --scratch-path "$scratch" --show-bin-path)
ln -sf gattlab-fuzz "$bindir/fuzz-$target"
bin=$bindir/fuzz-$target

mkdir -p "$corpus_out" "Corpus/$target" fuzz-findings
# The target's tokens, when it has some (gattlab-fuzz --dictionary).
dict=()
ASAN_OPTIONS=detect_leaks=0 "$bin" --dictionary < /dev/null > "fuzz-findings/$target.dict"
[ -s "fuzz-findings/$target.dict" ] && dict=(-dict="fuzz-findings/$target.dict")
seeds=()
[ "$(cd "$corpus_out" && pwd)" != "$(cd "Corpus/$target" && pwd)" ] && seeds=("Corpus/$target")
echo "== fuzz-$target for ${seconds}s on $corpus_out ${seeds[*]:-} (-max_len=$max_len${GATTLAB_FUZZ_QUIRKS:+, quirks $GATTLAB_FUZZ_QUIRKS})"
status=0
# ASan's quarantine is what makes RSS large; 2 GB is libFuzzer's default limit, stated here.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} "$bin" -max_total_time="$seconds" -max_len="$max_len" "${dict[@]}" \
  -artifact_prefix="fuzz-findings/$target-" -rss_limit_mb=2048 -print_final_stats=1 \
  "$corpus_out" "${seeds[@]}" 2>&1 | tee "fuzz-findings/$target-libfuzzer.log" || status=$?
if [ "$status" -ne 0 ]; then
  quirk_args=""
  for q in ${GATTLAB_FUZZ_QUIRKS//,/ }; do quirk_args="$quirk_args --quirk $q"; done
  echo "fuzz-$target: libFuzzer stopped with a finding (exit $status); log: fuzz-findings/$target-libfuzzer.log"
  for f in $(ls -t fuzz-findings/"$target"-crash-* fuzz-findings/"$target"-timeout-* fuzz-findings/"$target"-oom-* fuzz-findings/"$target"-leak-* 2>/dev/null | head -3); do
    echo "  finding: $f"
    echo "  reproduce: $GATTLAB fuzz reproduce $f --target $target$quirk_args"
    echo "         or: ${GATTLAB_FUZZ_QUIRKS:+GATTLAB_FUZZ_QUIRKS=$GATTLAB_FUZZ_QUIRKS }.build/debug/gattlab-fuzz --target=$target $f   (standalone driver)"
    echo "         or: $bin $f   (libFuzzer, ASan)"
  done
  exit 1
fi
echo "fuzz-$target: no finding in ${seconds}s"
