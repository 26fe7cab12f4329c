#include "snapshot/snapshot_compressor.h"

#include <xxhash.h>
#include <zstd.h>

#include <system_error>

namespace snapsink {

SnapshotCompressor::~SnapshotCompressor() {
  if (!helper_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  helper_.join();
}

bool SnapshotCompressor::Submit(std::string* block) {
  if (!helper_.joinable()) {
    try {
      helper_ = std::thread(&SnapshotCompressor::Work, this);
    } catch (const std::system_error&) {
      return false;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    input_.swap(*block);
    block->clear();
    has_input_ = true;
    done_ = false;
  }
  pending_ = true;
  cv_.notify_all();
  return true;
}

void SnapshotCompressor::Take(std::string* compressed, uint32_t* usize, uint64_t* xxh64, std::string* error) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
  compressed->swap(output_);
  *usize = static_cast<uint32_t>(input_.size());
  *xxh64 = xxh64_;
  error->swap(error_);
  error_.clear();
  done_ = false;
  pending_ = false;
}

void SnapshotCompressor::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || has_input_; });
    if (stop_) return;
    has_input_ = false;
    lock.unlock();
    // The writer touches neither buffer until Take, which waits for done_.
    output_.resize(ZSTD_compressBound(input_.size()));
    const size_t n = ZSTD_compressCCtx(cctx_, output_.data(), output_.size(), input_.data(), input_.size(), level_);
    std::string error;
    if (ZSTD_isError(n)) {
      error = ZSTD_getErrorName(n);
      output_.clear();
    } else {
      output_.resize(n);
    }
    const uint64_t h = XXH64(output_.data(), output_.size(), 0);
    lock.lock();
    xxh64_ = h;
    error_ = std::move(error);
    done_ = true;
    cv_.notify_all();
  }
}

}  // namespace snapsink
