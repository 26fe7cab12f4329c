// SnapshotCompressor: compresses a SnapshotWriter's blocks on both cores
// while the writer encodes the next ones (zstd is more than half of a
// seal's CPU time). The writer hands blocks over (Submit), up to kSlots at
// a time, and takes them back oldest first (TakeOldest), so blocks reach
// the file in their order. A helper thread compresses the oldest waiting
// block; a writer that finds every slot taken and the oldest block not yet
// done compresses a later waiting one itself rather than wait, so both
// threads stay busy. Each block is compressed alone (ZSTD_compressCCtx,
// the writer's level), so the file's bytes are those of compressing every
// block inline, whichever thread compressed which block.
//
// Not thread-safe itself: one writer thread calls it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

struct ZSTD_CCtx_s;

namespace snapsink {

class SnapshotCompressor {
 public:
  static constexpr size_t kSlots = 4;  // blocks in flight

  explicit SnapshotCompressor(int level) : level_(level) {}
  ~SnapshotCompressor();
  SnapshotCompressor(const SnapshotCompressor&) = delete;
  SnapshotCompressor& operator=(const SnapshotCompressor&) = delete;

  // Starts compressing *block (swapped out: *block comes back as a spare
  // buffer, empty). REQUIRES: !full(). False if no thread or zstd context
  // could be had (the caller compresses inline, after taking every block
  // in flight).
  bool Submit(std::string* block);
  bool full() const { return in_flight_ == kSlots; }
  bool empty() const { return in_flight_ == 0; }
  // Takes the oldest block in flight (REQUIRES: !empty()). While it is not
  // done, compresses a later waiting block with cctx on the calling thread,
  // or waits. *compressed: its bytes; *usize: its uncompressed size;
  // *xxh64: XXH64 of the compressed bytes (seed 0); an error message from
  // zstd ("" if none) in *error.
  void TakeOldest(ZSTD_CCtx_s* cctx, std::string* compressed, uint32_t* usize, uint64_t* xxh64, std::string* error);

 private:
  enum class SlotState { kFree, kQueued, kBusy, kDone };
  struct Slot {
    SlotState state = SlotState::kFree;
    std::string input, output, error;
    uint64_t xxh64 = 0;
  };
  // The first queued slot from the oldest, or nullptr. REQUIRES: mu_ held.
  Slot* FirstQueued();
  // Compresses s->input into s->output (outside mu_).
  void Compress(ZSTD_CCtx_s* cctx, Slot* s) const;
  void Work();

  const int level_;
  ZSTD_CCtx_s* helper_cctx_ = nullptr;  // the helper thread's
  std::thread helper_;
  std::mutex mu_;
  std::condition_variable queued_cv_;  // the helper waits for a queued slot or stop_
  std::condition_variable done_cv_;    // the writer waits for a slot to be done
  // Guarded by mu_ (the writer alone changes head_ and in_flight_, under it).
  Slot slots_[kSlots];
  size_t head_ = 0;       // the oldest slot in flight
  size_t in_flight_ = 0;  // slots from head_ (in ring order) not yet taken
  bool stop_ = false;
};

}  // namespace snapsink
