#include "build_info.h"

// revision.h is written by Scripts/revision.sh (make build, test, install, bench) and ignored by
// git; it holds `#define GATTLAB_GIT_REVISION "..."`. A plain `swift build` has none.
#if __has_include("revision.h")
#include "revision.h"
#endif
#ifndef GATTLAB_GIT_REVISION
#define GATTLAB_GIT_REVISION "unknown"
#endif

const char *gattlab_git_revision(void) { return GATTLAB_GIT_REVISION; }
