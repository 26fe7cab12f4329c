// The files of a root, classified (filenames::ClassifyRootPath): gc removes
// the *.tmp a crash left behind, verify reports the files snapsink does not
// know (a warning: they are not snapsink's, so not its corruption).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/filenames.h"

namespace snapsink {

// Calls fn(relative path, kind) for every entry of the root, parents before
// children, in name order. Does not descend into unknown directories or
// below what snapsink writes.
Status ListRootFiles(Env* env, const std::string& root,
                     const std::function<void(const std::string&, filenames::FileKind)>& fn);

// The relative paths of the unknown entries of root.
Status UnknownRootFiles(Env* env, const std::string& root, std::vector<std::string>* out);

// Removes every *.tmp outside state/ and appends their relative paths to
// *removed. REQUIRES: the caller holds the root's LOCK (a writer between its
// temp file and the rename would lose it).
Status RemoveStrayTempFiles(Env* env, const std::string& root, std::vector<std::string>* removed);

}  // namespace snapsink
