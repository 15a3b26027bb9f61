#!/bin/sh
# Records the git revision for `gattlab --version` in Sources/CBuildInfo/revision.h (ignored by
# git), rewriting it only when the revision changed so that an unchanged tree rebuilds nothing.
cd "$(dirname "$0")/.." || exit 1
rev=$(git describe --always --dirty --abbrev=12 2>/dev/null) || rev=unknown
header=Sources/CBuildInfo/revision.h
line="#define GATTLAB_GIT_REVISION \"$rev\""
if [ "$(cat "$header" 2>/dev/null)" != "$line" ]; then
  printf '%s\n' "$line" >"$header"
  # A header that did not exist at the last build is not among its recorded dependencies.
  touch Sources/CBuildInfo/build_info.c
fi
