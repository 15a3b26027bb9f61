#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build: the one libFuzzer driver (product gattlab-fuzz) built once
# with the fuzzer runtime and $SANITIZER, then one copy per target in $OUT, as the engines want:
#   $OUT/fuzz-<target>                  the driver; it runs the target its name says
#   $OUT/fuzz-<target>_seed_corpus.zip  Corpus/<target>/ and the target's codec-made seeds
#   $OUT/fuzz-<target>.dict             its tokens, for the targets that have some
#   $OUT/fuzz-<target>.options          [libfuzzer] max_len = the target's maxLength
#   $OUT/lib/                           libpcap, libbluetooth and what they need (not in the
#                                       runner image); the copies find them by rpath $ORIGIN/lib
# The targets are those `gattlab fuzz list` shows (the driver's --list), so a protocol added to
# the registry is built here with no change to this file.
#
# In the builder container (.clusterfuzzlite/Dockerfile) ClusterFuzzLite sets OUT, SRC, WORK,
# SANITIZER and FUZZING_ENGINE. It also runs directly on a machine with Swift on PATH (CI does,
# through Scripts/clusterfuzzlite-check.sh):
#   OUT=/tmp/out WORK=/tmp/work SRC=$PWD/.. SANITIZER=address FUZZING_ENGINE=libfuzzer .clusterfuzzlite/build.sh
# GATTLAB_FUZZ_CONFIG=debug builds in debug (CI: a fraction of the compile time, the same
# coverage instrumentation and sanitizer); the default, release, is for real campaigns.
# Sanitizers: address (what project.yaml asks for, and what CI runs); thread (the Swift runtime
# linked dynamically and copied to $OUT/lib: with the static one, ThreadSanitizer's allocator
# aborts at start, in Foundation's environment, on Swift 6.3); coverage builds the
# profile-instrumented binaries OSS-Fuzz's coverage reports use. undefined and memory are
# refused: swiftc has no -sanitize=undefined on Linux, and Swift has no MemorySanitizer (OSS-Fuzz
# offers address and thread for Swift).

# The repository: this script's parent folder, or $SRC/gattlab when the Dockerfile copied the
# script to $SRC/build.sh.
root=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$root/Package.swift" ] || root=$SRC/gattlab
cd "$root"
: "${OUT:?OUT: where the fuzz targets go}" "${WORK:=${TMPDIR:-/tmp}/gattlab-fuzz-work}" "${SANITIZER:=address}"
mkdir -p "$OUT" "$WORK"
SWIFT=${SWIFT:-swift}
config=${GATTLAB_FUZZ_CONFIG:-release}

if [ "${FUZZING_ENGINE:-libfuzzer}" != libfuzzer ]; then
  echo "build.sh: FUZZING_ENGINE=$FUZZING_ENGINE: GATTLab's targets are libFuzzer targets only (project.yaml: fuzzing_engines: libfuzzer)" >&2
  exit 1
fi
# The builder image's llvm-symbolizer, for symbolized stack traces in the runner.
[ -x /usr/local/bin/llvm-symbolizer-swift ] && cp /usr/local/bin/llvm-symbolizer-swift "$OUT/llvm-symbolizer"

# One --sanitize for SwiftPM (a second would replace the first): $SANITIZER on every module.
# GATTLAB_FUZZ_INSTRUMENT=$SANITIZER makes Package.swift add the coverage instrumentation
# (-sanitize=fuzzer,$SANITIZER) only to the modules the targets exercise and link libFuzzer into
# the driver: libFuzzer clears and scans every counter after each input, and the rest (crypto, the
# protobuf runtime, transports, renderers) held about half of them. The coverage build keeps
# --sanitize fuzzer on every module, for the coverage reports.
stdlib=(--static-swift-stdlib)
case $SANITIZER in
  address) sanitize=(--sanitize address); export GATTLAB_FUZZ_INSTRUMENT=address ;;
  thread) sanitize=(--sanitize thread); export GATTLAB_FUZZ_INSTRUMENT=thread; stdlib=() ;;
  coverage) sanitize=(--sanitize fuzzer -Xswiftc -profile-generate -Xswiftc -profile-coverage-mapping) ;;
  undefined) echo "build.sh: SANITIZER=undefined is not supported for Swift on Linux (swiftc has no -sanitize=undefined): use address or thread" >&2; exit 1 ;;
  *) echo "build.sh: SANITIZER=$SANITIZER is not supported for Swift (address, thread, coverage)" >&2; exit 1 ;;
esac
# Swift's runtime and Foundation linked in (the runner image has no Swift; with thread they are
# copied instead); the C libraries the capture and transport modules link are copied to $OUT/lib
# and found through DT_RPATH (not RUNPATH, so their own dependencies are found there too).
flags=("${sanitize[@]}" -Xswiftc -DGATTLAB_LIBFUZZER ${stdlib[@]+"${stdlib[@]}"}
       -Xlinker --disable-new-dtags -Xlinker -rpath -Xlinker '$ORIGIN/lib')
scratch=$WORK/gattlab-fuzz-$config-$SANITIZER

# Only the driver, in its own scratch path: a whole-package fuzzer build breaks the executables
# that have a main. Built once per set of instrumented modules, the 4th column of --list: `*`
# (every module the targets exercise: the capture, timeline and device targets) first, then one
# build per codec (SpeakerOTACodec for status, credentials, url and control), each instrumenting
# that module alone, so libFuzzer scans its few thousand counters after each input instead of
# all 175,000. The builds share the scratch path: after the first, only the modules whose
# instrumentation changed and the ones above them are compiled again.
drivers=$WORK/gattlab-fuzz-drivers
rm -rf "$drivers" && mkdir -p "$drivers"
build_driver() {  # MODULES: builds the driver instrumenting MODULES, copied to $drivers/MODULES
  local modules=$1
  if [ "$SANITIZER" = coverage ]; then modules="*"; fi  # the coverage build instruments every module
  local copy=$drivers/${modules/#\*/all}
  if [ ! -f "$copy" ]; then
    echo "build.sh: gattlab-fuzz ($config, $SANITIZER), instrumenting ${modules/#\*/every fuzzed module}" >&2
    GATTLAB_FUZZ_MODULES=$modules "$SWIFT" build -c "$config" --product gattlab-fuzz --scratch-path "$scratch" "${flags[@]}" >&2
    cp "$(GATTLAB_FUZZ_MODULES=$modules "$SWIFT" build -c "$config" --product gattlab-fuzz --scratch-path "$scratch" "${flags[@]}" --show-bin-path)/gattlab-fuzz" "$copy"
  fi
  echo "$copy"
}
bin=$(build_driver "*")

mkdir -p "$OUT/lib"
ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libutil.so*|ld-linux*|libgcc_s.so*|libstdc++.so*|libresolv.so*) ;;
    *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
targets=$("$bin" --list < /dev/null)
[ -n "$targets" ] || { echo "build.sh: gattlab-fuzz --list named no target" >&2; exit 1; }
seeds=$WORK/seeds
n=0
# Sorted by module set, so that each set is built once and the codecs' builds follow one another.
while IFS=$'\t' read -r t max_len tokens modules; do
  driver=$(build_driver "${modules:-*}")
  # A copy of each driver for its first target; after it, hard links to that copy (the same
  # bytes; the engines see one executable per name).
  rm -f "$OUT/fuzz-$t"
  first=$(cat "$driver.first" 2>/dev/null || true)
  if [ -z "$first" ]; then cp "$driver" "$OUT/fuzz-$t"; echo "$OUT/fuzz-$t" > "$driver.first"; else ln "$first" "$OUT/fuzz-$t" 2>/dev/null || cp "$driver" "$OUT/fuzz-$t"; fi
  printf '[libfuzzer]\nmax_len = %s\n' "$max_len" > "$OUT/fuzz-$t.options"
  if [ "$tokens" -gt 0 ]; then "$driver" --target="$t" --dictionary < /dev/null > "$OUT/fuzz-$t.dict"; else rm -f "$OUT/fuzz-$t.dict"; fi
  rm -rf "$seeds" && mkdir -p "$seeds"
  [ -d "Corpus/$t" ] && cp -R "Corpus/$t/." "$seeds/"
  "$driver" --target="$t" --seeds="$seeds" < /dev/null
  rm -f "$OUT/fuzz-${t}_seed_corpus.zip"
  (cd "$seeds" && zip -q -r "$OUT/fuzz-${t}_seed_corpus.zip" .)
  n=$((n + 1))
done < <(sort -t $'\t' -k4,4 -s <<< "$targets")
rm -rf "$seeds"
echo "build.sh: $n targets in $OUT ($config, $SANITIZER, $(ls "$drivers" | grep -vc '\.first$') builds): $(echo "$targets" | cut -f1 | tr '\n' ' ')"
