// SnapshotCompressor: compresses a SnapshotWriter's blocks on a second
// thread, one block at a time, while the writer encodes the next one (seal
// on two cores: zstd is about half of a seal's CPU time). The writer hands
// a block over (Submit), and later takes its compressed bytes back (Take)
// before the next Submit, so blocks reach the file in their order and the
// file's bytes are those of compressing inline: the same zstd context, level
// and input.
//
// Not thread-safe itself: one writer thread calls it. The context passed to
// the constructor is used only on the helper thread while a block is
// submitted and not yet taken.
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
  SnapshotCompressor(ZSTD_CCtx_s* cctx, int level) : cctx_(cctx), level_(level) {}
  ~SnapshotCompressor();
  SnapshotCompressor(const SnapshotCompressor&) = delete;
  SnapshotCompressor& operator=(const SnapshotCompressor&) = delete;

  // Starts compressing *block (swapped out: *block comes back as a spare
  // buffer, empty). REQUIRES: nothing submitted and not taken. False if no
  // thread could be started (the caller compresses inline).
  bool Submit(std::string* block);
  bool pending() const { return pending_; }
  // Waits for the submitted block. *compressed: its bytes; *usize: its
  // uncompressed size; *xxh64: XXH64 of the compressed bytes (seed 0); an
  // error message from zstd ("" if none) in *error.
  void Take(std::string* compressed, uint32_t* usize, uint64_t* xxh64, std::string* error);

 private:
  void Work();

  ZSTD_CCtx_s* const cctx_;
  const int level_;
  std::thread helper_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_ while a block is in flight.
  bool has_input_ = false, done_ = false, stop_ = false;
  std::string input_, output_, error_;
  uint64_t xxh64_ = 0;
  bool pending_ = false;  // the writer's: submitted, not taken
};

}  // namespace snapsink
