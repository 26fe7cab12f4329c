// Internal to sink/: what a ReadOnlySink / Sink handle holds, and the
// conversions between the public records (include/snapsink/) and the
// engine's. Nothing here is installed.
#pragma once

#include <memory>

#include "engine/root.h"
#include "publish/root_status.h"
#include "publish/seal.h"
#include "snapsink/sink.h"

namespace snapsink::api {

class WriteQueue;  // sink/write_queue.h

struct ReadOnlySink::Impl {
  std::unique_ptr<Root> root;
  std::shared_ptr<WriteQueue> writes;  // a Sink's group commit (Sink::Write); after root: destroyed first
  RootSettings settings;
  bool read_only = false;  // LMDB opened read-only (Sink::OpenReadOnly)
};

// A handle opened read-only reopens its store for writing (still without
// LOCK): backfill's last step, the merged publish.
Status ReopenWritableHandle(ReadOnlySink::Impl* impl);

inline SealedWindow ToPublic(const snapsink::SealedWindow& s) {
  return {s.window_ms, static_cast<uint64_t>(s.version), s.rows, s.events};
}

// The public RootStatus (GetStatus) of the engine's (publish/root_status.h).
RootStatus ToPublic(const snapsink::RootStatus& s);

}  // namespace snapsink::api
