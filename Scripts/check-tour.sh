#!/usr/bin/env bash
# Runs the README's five-minute tour as written, so that it cannot rot: every command line of the
# ```sh block under "## A five-minute tour", in order, with `gattlab` from PATH (after make
# install). A line's expected exit status is 0 unless it ends with a comment "# exit N: ...".
# The commands run in a scratch folder holding a link to Captures/, as if pasted in the clone.
#   PATH=$PREFIX/bin:$PATH Scripts/check-tour.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v gattlab >/dev/null || { echo "check-tour: gattlab is not on PATH (make install first)" >&2; exit 2; }

lines=$(awk '
  /^## A five-minute tour/ { tour = 1; next }
  tour && /^## /           { exit }
  tour && /^```sh/         { code = 1; next }
  tour && code && /^```/   { code = 0; next }
  tour && code             { print }
' "$root/README.md")
[ -n "$lines" ] || { echo "check-tour: no \`\`\`sh block under '## A five-minute tour' in README.md" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$root/Captures" "$work/Captures"
cd "$work"

passed=0 failed=0
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  expected=0
  if [[ "$line" =~ \#\ exit\ ([0-9]+) ]]; then expected=${BASH_REMATCH[1]}; fi
  out=$(timeout 300 bash -o pipefail -c "$line" 2>&1 </dev/null)
  status=$?
  if [ "$status" = "$expected" ]; then
    passed=$((passed + 1))
    echo "PASS exit $status  $line"
  else
    failed=$((failed + 1))
    echo "FAIL exit $status (README says $expected)  $line"
    printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
  fi
done <<<"$lines"
echo "tour: $passed passed, $failed failed"
[ "$failed" = 0 ]
