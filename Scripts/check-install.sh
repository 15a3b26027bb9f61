#!/usr/bin/env bash
# Checks what `make install PREFIX=P` put in P, as a user would meet it, then that
# `make uninstall PREFIX=P` takes exactly that away. Ends with "install: N passed, N failed".
#   Scripts/check-install.sh P        (after make install PREFIX=P)
set -uo pipefail
cd "$(dirname "$0")/.."
prefix=${1:?usage: Scripts/check-install.sh PREFIX}
passed=0 failed=0
check() {  # name, command...
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then
    passed=$((passed + 1)); echo "PASS $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"; printf '%s\n' "$out" | tail -n 15 | sed 's/^/    /'
  fi
}

# man renders the pages and the shells load their completions; as root, install what is
# missing (a user's machine has man; zsh and fish are what their users have).
missing=""
for tool in man:man-db zsh:zsh fish:fish; do command -v "${tool%%:*}" >/dev/null || missing="$missing ${tool#*:}"; done
if [ -n "$missing" ] && [ "$(id -u)" = 0 ]; then
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

bin=$prefix/bin/gattlab
check "bin/gattlab runs and names its git revision" \
  bash -c "'$bin' --version | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{7,}|unknown)'"
check "the installed binary decodes the demo capture" "$bin" info Captures/speaker-ota-demo.btsnoop
check "man -l renders gattlab.1 with its exit codes" \
  bash -c "MANWIDTH=100 man -l '$prefix/share/man/man1/gattlab.1' 2>/dev/null | grep -q 'interrupted by SIGINT'"
check "one man page per subcommand (gattlab.timeline.1 shows --fail-on)" \
  bash -c "MANWIDTH=100 man -l '$prefix/share/man/man1/gattlab.timeline.1' 2>/dev/null | grep -q -- '--fail-on'"
check "bash completes 'gattlab ti<TAB>' to timeline" bash -c "
  source '$prefix/share/bash-completion/completions/gattlab'
  COMP_WORDS=(gattlab ti); COMP_CWORD=1; COMP_LINE='gattlab ti'; COMP_POINT=\${#COMP_LINE}
  _gattlab gattlab ti gattlab
  printf '%s\n' \"\${COMPREPLY[@]}\" | grep -qx timeline"
check "zsh reads the completion (#compdef gattlab, no syntax error)" bash -c "
  head -n 1 '$prefix/share/zsh/site-functions/_gattlab' | grep -q '^#compdef gattlab' && zsh -n '$prefix/share/zsh/site-functions/_gattlab'"
check "fish completes 'gattlab ti<TAB>' to timeline" bash -c "
  fish --no-config -c \"source '$prefix/share/fish/vendor_completions.d/gattlab.fish'; complete -C 'gattlab ti'\" | grep -q '^timeline'"

listed=$(wc -l <"$prefix/share/gattlab/installed-files")
make -s uninstall PREFIX="$prefix" >/dev/null
check "make uninstall removed all $listed files it listed and its list" \
  bash -c "[ -z \"\$(find '$prefix' -type f)\" ]"

echo "install: $passed passed, $failed failed"
[ "$failed" = 0 ]
