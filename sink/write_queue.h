// Internal to sink/: group commit for Sink::Write (LevelDB's DBImpl::Write
// writers queue is the model). Callers queue up; the one at the front (the
// leader) takes every batch queued behind it, applies them in ONE LMDB
// transaction through its Ingester (engine/ingest.h), and tells each caller
// its own outcome; the next caller queued becomes the next leader.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

#include "engine/ingest.h"
#include "engine/root.h"
#include "snapsink/write_batch.h"

namespace snapsink::api {

class WriteQueue {
 public:
  explicit WriteQueue(Root* root);
  ~WriteQueue();
  // Thread-safe against concurrent Write calls (not against the Sink's other
  // methods: the caller sequences those).
  Status Write(const WriteBatch& batch, const WriteOptions& options, WriteResult* result);

 private:
  struct Writer;
  Root* root_;
  std::mutex mu_;
  std::deque<Writer*> writers_;  // guarded by mu_; the front one leads
  Ingester ingester_;            // used by the leader only, outside mu_
};

}  // namespace snapsink::api
