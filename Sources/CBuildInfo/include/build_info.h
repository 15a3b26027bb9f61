#ifndef GATTLAB_BUILD_INFO_H
#define GATTLAB_BUILD_INFO_H

/// The git revision this binary was built from (`git describe --always --dirty`), or "unknown".
const char *gattlab_git_revision(void);

#endif
