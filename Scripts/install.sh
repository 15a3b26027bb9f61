#!/usr/bin/env bash
# make install / make uninstall.
#   Scripts/install.sh PREFIX              installs the release build (make install builds it first)
#   Scripts/install.sh --uninstall PREFIX  removes exactly the files the install listed
# Installs $PREFIX/bin/gattlab, man pages generated from the argument parser's own help
# (swift-argument-parser's generate-manual plugin: gattlab.1 and one page per subcommand), and
# the completion scripts the parser generates for bash, zsh and fish, in their usual places.
# Every installed file is listed in $PREFIX/share/gattlab/installed-files, which uninstall reads.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}

uninstall=false
if [ "${1:-}" = "--uninstall" ]; then uninstall=true; shift; fi
prefix=${1:?usage: Scripts/install.sh [--uninstall] PREFIX}
list="$prefix/share/gattlab/installed-files"

if $uninstall; then
  if [ ! -f "$list" ]; then
    echo "gattlab: error: nothing to uninstall ($list not found)" >&2
    echo "gattlab: hint: give the PREFIX used for make install: make uninstall PREFIX=..." >&2
    exit 66
  fi
  while IFS= read -r f; do
    [ -n "$f" ] && rm -f "$prefix/$f"
  done < "$list"
  rm -f "$list"
  rmdir "$prefix/share/gattlab" 2>/dev/null || true
  echo "removed gattlab from $prefix"
  exit 0
fi

binary=.build/release/gattlab
[ -x "$binary" ] || { echo "gattlab: error: $binary not built (make install builds it)" >&2; exit 66; }

# Man pages: the plugin builds the package in release and runs generate-manual on gattlab.
manuals=.build/install-man
rm -rf "$manuals"
# generate-manual adds pages beside old ones: start from none, so a removed subcommand's page goes.
find .build/plugins -type d -path '*GenerateManual*' -name gattlab -prune -exec rm -rf {} + 2>/dev/null || true
"$SWIFT" package plugin generate-manual --multi-page --section 1 \
  --authors "the GATTLab developers" >"$manuals.log" 2>&1 \
  || { cat "$manuals.log" >&2; echo "gattlab: error: generating the man pages failed" >&2; exit 70; }
generated=$(find .build/plugins -type d -path '*GenerateManual*' -name gattlab | head -n 1)
[ -n "$generated" ] && ls "$generated"/*.1 >/dev/null 2>&1 \
  || { echo "gattlab: error: generate-manual wrote no page for gattlab" >&2; exit 70; }
mkdir -p "$manuals"
cp "$generated"/*.1 "$manuals"/

files=(bin/gattlab)
install -D -m 0755 "$binary" "$prefix/bin/gattlab"
for page in "$manuals"/*.1; do
  install -D -m 0644 "$page" "$prefix/share/man/man1/$(basename "$page")"
  files+=("share/man/man1/$(basename "$page")")
done
completion() {  # shell, path under PREFIX
  mkdir -p "$(dirname "$prefix/$2")"
  "$binary" --generate-completion-script "$1" >"$prefix/$2"
  chmod 0644 "$prefix/$2"
  files+=("$2")
}
completion bash share/bash-completion/completions/gattlab
completion zsh share/zsh/site-functions/_gattlab
completion fish share/fish/vendor_completions.d/gattlab.fish

mkdir -p "$(dirname "$list")"
printf '%s\n' "${files[@]}" >"$list"
echo "installed $("$prefix/bin/gattlab" --version | head -n 1) into $prefix (${#files[@]} files, listed in $list)"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "note: $prefix/bin is not on your PATH" ;; esac
