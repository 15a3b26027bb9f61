#!/usr/bin/env bash
# CI's libFuzzer pass: .clusterfuzzlite/build.sh run directly, as ClusterFuzzLite's builder runs
# it (OUT, WORK and SRC in a temporary folder, SANITIZER=address, FUZZING_ENGINE=libfuzzer), then
# every target it put in $OUT run on its unzipped seed corpus for SECONDS. Fails when build.sh
# fails, when a target of `gattlab-fuzz --list` is missing from $OUT (binary, options, seed
# corpus), or on a finding (its file and the command that reproduces it are printed).
#   Scripts/clusterfuzzlite-check.sh [SECONDS]       (default 3)
# GATTLAB_FUZZ_CONFIG defaults to debug here (the build is the cost; a short run needs the
# coverage instrumentation and ASan, not the optimiser); set release to check that build.
# GATTLAB_FUZZ_OUT=DIR keeps the output there (default: a temporary folder); GATTLAB_FUZZ_WORK=DIR
# is build.sh's $WORK (default .build-fuzz/clusterfuzzlite, so a second run rebuilds only what
# changed; a fresh clone, as in CI, builds it all).
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${GATTLAB_FUZZ_OUT:-$tmp/out}
work=${GATTLAB_FUZZ_WORK:-$PWD/.build-fuzz/clusterfuzzlite}
mkdir -p "$out" "$work"

start=$(date +%s)
if ! OUT="$out" WORK="$work" SRC="$(cd .. && pwd)" SANITIZER=address FUZZING_ENGINE=libfuzzer \
     GATTLAB_FUZZ_CONFIG=${GATTLAB_FUZZ_CONFIG:-debug} .clusterfuzzlite/build.sh > "$tmp/build.log" 2>&1; then
  echo "clusterfuzzlite: build.sh FAILED"
  tail -40 "$tmp/build.log" | sed 's/^/  /'
  exit 1
fi
built=$(date +%s)
echo "clusterfuzzlite: $(tail -1 "$tmp/build.log") [$((built - start)) s]"

# The targets that must be there: gattlab fuzz list's in-process ones when gattlab is built (make
# test built it in CI), else what the driver itself lists.
GATTLAB=${GATTLAB:-.build/debug/gattlab}
if [ -x "$GATTLAB" ]; then
  list=$("$GATTLAB" fuzz list --format json | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if not r.get("blackBox"): print(r["name"], r["maxLength"], ",".join(r.get("instrumentedModules") or ["*"]), sep="\t")')
else
  any=$(ls "$out" | grep -m1 -E '^fuzz-[a-z0-9-]+$')
  list=$(ASAN_OPTIONS=detect_leaks=0 "$out/$any" --list < /dev/null | cut -f1,2,4)
fi
[ -n "$list" ] || { echo "clusterfuzzlite: no target listed"; exit 1; }
# One target: its files checked, then run as ClusterFuzzLite runs it (the copy by its name, its
# options' max_len, its dictionary; new inputs to a scratch folder, the seeds read only). Its
# report goes to $tmp/$t.report, its verdict to $tmp/$t.verdict (ok, missing, failed).
check_target() {
  local t=$1 max_len=$2 modules=$3 missing="" dict=()
  for f in "fuzz-$t" "fuzz-$t.options" "fuzz-${t}_seed_corpus.zip"; do [ -e "$out/$f" ] || missing="$missing $f"; done
  grep -qx "max_len = $max_len" "$out/fuzz-$t.options" 2>/dev/null || missing="$missing max_len=$max_len"
  if [ -n "$missing" ]; then
    echo "fuzz-$t: MISSING in \$OUT:$missing" > "$tmp/$t.report"; echo missing > "$tmp/$t.verdict"; return
  fi
  mkdir -p "$tmp/corpus/$t" "$tmp/new/$t" "$tmp/findings"
  unzip -q -o "$out/fuzz-${t}_seed_corpus.zip" -d "$tmp/corpus/$t"
  [ -s "$out/fuzz-$t.dict" ] && dict=(-dict="$out/fuzz-$t.dict")
  if ASAN_OPTIONS=detect_leaks=0 "$out/fuzz-$t" -max_total_time="$seconds" -max_len="$max_len" ${dict[@]+"${dict[@]}"} \
       -artifact_prefix="$tmp/findings/$t-" -rss_limit_mb=2048 -print_final_stats=1 \
       "$tmp/new/$t" "$tmp/corpus/$t" < /dev/null > "$tmp/$t.log" 2>&1; then
    local pcs
    pcs=$(sed -nE 's/^INFO: Loaded [0-9]+ PC tables? \(([0-9]+) PCs\).*/\1/p' "$tmp/$t.log" | head -1)
    printf 'fuzz-%-15s ok  %s  (%s seeds, %s PCs: %s)\n' "$t" "$(grep -E '^stat::number_of_executed_units' "$tmp/$t.log" | awk '{print $2 " runs"}')" \
      "$(ls "$tmp/corpus/$t" | wc -l)" "${pcs:-0}" "$modules" > "$tmp/$t.report"
    echo "ok ${pcs:-0}" > "$tmp/$t.verdict"
  else
    {
      echo "fuzz-$t: FAILED (a finding, or it did not run)"
      grep -E 'finding|ERROR|==[0-9]+==|fuzz-' "$tmp/$t.log" | head -10 | sed 's/^/  /'
      mkdir -p fuzz-findings
      for f in "$tmp/findings/$t"-*; do
        [ -e "$f" ] || continue
        cp "$f" fuzz-findings/
        echo "  finding: fuzz-findings/$(basename "$f")"
        echo "  reproduce: gattlab fuzz reproduce fuzz-findings/$(basename "$f") --target $t"
        echo "         or: .build/debug/gattlab-fuzz --target=$t fuzz-findings/$(basename "$f")   (standalone driver)"
      done
    } > "$tmp/$t.report"
    echo failed > "$tmp/$t.verdict"
  fi
}

# Two targets at a time (a libFuzzer run is one thread; CI has two cores).
while IFS=$'\t' read -r t max_len modules; do
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
  check_target "$t" "$max_len" "${modules:-*}" &
done <<< "$list"
wait

# The reports in list order. The counters each copy has (libFuzzer's "Loaded 1 PC tables (N
# PCs)"): a codec's targets must have far fewer than the targets built with every module
# instrumented, or the per-codec builds (build.sh) are not what runs.
passed=0 failed=0 most_codec=0 fewest_all=0
while IFS=$'\t' read -r t max_len modules; do
  cat "$tmp/$t.report" 2>/dev/null || echo "fuzz-$t: FAILED (no report)"
  read -r verdict pcs < "$tmp/$t.verdict" 2>/dev/null || verdict=failed
  if [ "$verdict" != ok ]; then failed=$((failed + 1)); continue; fi
  passed=$((passed + 1))
  if [ "${modules:-*}" = "*" ]; then
    { [ "$fewest_all" -eq 0 ] || [ "$pcs" -lt "$fewest_all" ]; } && fewest_all=$pcs
  elif [ "$pcs" -gt "$most_codec" ]; then most_codec=$pcs
  fi
done <<< "$list"
echo "clusterfuzzlite: $passed targets ran ${seconds}s each, $failed failed [$(( $(date +%s) - built )) s]"
if [ "$most_codec" -eq 0 ]; then
  echo "clusterfuzzlite: no target ran from a build of its own modules (fuzz list's instrumentedModules): every copy instruments every module"
  failed=$((failed + 1))
elif [ "$fewest_all" -gt 0 ] && [ $((most_codec * 4)) -gt "$fewest_all" ]; then
  echo "clusterfuzzlite: a codec's target has $most_codec PCs, not under a quarter of the $fewest_all of a target built with every module: its own build is not what runs"
  failed=$((failed + 1))
fi
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
