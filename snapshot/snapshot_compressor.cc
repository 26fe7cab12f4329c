#include "snapshot/snapshot_compressor.h"

#include <xxhash.h>
#include <zstd.h>

#include <system_error>

namespace snapsink {

SnapshotCompressor::~SnapshotCompressor() {
  if (helper_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    queued_cv_.notify_all();
    helper_.join();
  }
  ZSTD_freeCCtx(helper_cctx_);
}

bool SnapshotCompressor::Submit(std::string* block) {
  if (!helper_.joinable()) {
    if (helper_cctx_ == nullptr) helper_cctx_ = ZSTD_createCCtx();
    if (helper_cctx_ == nullptr) return false;
    try {
      helper_ = std::thread(&SnapshotCompressor::Work, this);
    } catch (const std::system_error&) {
      return false;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[(head_ + in_flight_) % kSlots];
    s.input.swap(*block);
    block->clear();
    s.state = SlotState::kQueued;
    in_flight_++;
  }
  queued_cv_.notify_one();
  return true;
}

SnapshotCompressor::Slot* SnapshotCompressor::FirstQueued() {
  for (size_t i = 0; i < in_flight_; i++) {
    Slot& s = slots_[(head_ + i) % kSlots];
    if (s.state == SlotState::kQueued) return &s;
  }
  return nullptr;
}

void SnapshotCompressor::Compress(ZSTD_CCtx_s* cctx, Slot* s) const {
  // Only the thread that moved the slot to kBusy touches its buffers until
  // it is kDone.
  s->output.resize(ZSTD_compressBound(s->input.size()));
  const size_t n = ZSTD_compressCCtx(cctx, s->output.data(), s->output.size(), s->input.data(), s->input.size(), level_);
  s->error.clear();
  if (ZSTD_isError(n)) {
    s->error = ZSTD_getErrorName(n);
    s->output.clear();
  } else {
    s->output.resize(n);
  }
  s->xxh64 = XXH64(s->output.data(), s->output.size(), 0);
}

void SnapshotCompressor::TakeOldest(ZSTD_CCtx_s* cctx, std::string* compressed, uint32_t* usize, uint64_t* xxh64,
                                    std::string* error) {
  std::unique_lock<std::mutex> lock(mu_);
  Slot& oldest = slots_[head_];
  while (oldest.state != SlotState::kDone) {
    Slot* s = FirstQueued();
    if (s == nullptr) {
      done_cv_.wait(lock);
      continue;
    }
    s->state = SlotState::kBusy;
    lock.unlock();
    Compress(cctx, s);
    lock.lock();
    s->state = SlotState::kDone;
  }
  compressed->swap(oldest.output);
  *usize = static_cast<uint32_t>(oldest.input.size());
  *xxh64 = oldest.xxh64;
  error->swap(oldest.error);
  oldest.error.clear();
  oldest.state = SlotState::kFree;
  head_ = (head_ + 1) % kSlots;
  in_flight_--;
}

void SnapshotCompressor::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Slot* s = nullptr;
    queued_cv_.wait(lock, [&] { return stop_ || (s = FirstQueued()) != nullptr; });
    if (stop_) return;
    s->state = SlotState::kBusy;
    lock.unlock();
    Compress(helper_cctx_, s);
    lock.lock();
    s->state = SlotState::kDone;
    done_cv_.notify_one();
  }
}

}  // namespace snapsink
