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

// Removes every *.tmp outside state/ and partitions/ and appends their
// relative paths to *removed. REQUIRES: the caller holds the root's LOCK (a
// writer between its temp file and the rename would lose it). partitions/ is
// left alone: its seal records and checkpoints are written by the
// partitions' owners under their claim locks, not under LOCK, so a temp
// there may be another process's write in progress (a seal record's temp is
// even a directory). The owners clean up after themselves: a checkpoint
// write removes older names' temps, a seal record's write first removes a
// temp of the same name; a crashed owner's temp of a seal it never wrote
// again stays (small; verify does not count temps as problems).
Status RemoveStrayTempFiles(Env* env, const std::string& root, std::vector<std::string>* removed);

}  // namespace snapsink
