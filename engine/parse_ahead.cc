#include "engine/parse_ahead.h"

#include <cassert>
#include <system_error>

namespace snapsink {

void ParseAhead::Stop() {
  if (!helper_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  helper_.join();
}

void ParseAhead::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || queued_ > 0 || FilledSlot(/*oldest=*/true) < kDepth; });
    if (stop_) return;
    if (queued_ > 0) {
      // Reading first, so the caller finds filled chunks to share.
      const size_t slot = queued_head_;
      lock.unlock();
      Fill(&chunks_[slot]);
      lock.lock();
      queued_head_ = (queued_head_ + 1) % kDepth;
      --queued_;
      state_[slot] = SlotState::kFilled;
    } else {
      const size_t slot = FilledSlot(/*oldest=*/true);
      state_[slot] = SlotState::kParsing;
      lock.unlock();
      Parse(&chunks_[slot]);
      lock.lock();
      state_[slot] = SlotState::kParsed;
    }
    cv_.notify_all();
  }
}

size_t ParseAhead::FilledSlot(bool oldest) const {
  size_t found = kDepth;
  for (size_t i = 0; i < kDepth; ++i) {
    if (state_[i] != SlotState::kFilled) continue;
    if (found == kDepth || (oldest ? number_[i] < number_[found] : number_[i] > number_[found])) found = i;
  }
  return found;
}

void ParseAhead::AwaitHead() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (state_[head_] == SlotState::kParsed) return;
    // Rather than wait: the head if it is only filled, else the newest
    // filled chunk, which the helper (oldest first) reaches last.
    const size_t slot = state_[head_] == SlotState::kFilled ? head_ : FilledSlot(/*oldest=*/false);
    if (slot == kDepth) {
      cv_.wait(lock);
      continue;
    }
    state_[slot] = SlotState::kParsing;
    lock.unlock();
    Parse(&chunks_[slot]);
    lock.lock();
    state_[slot] = SlotState::kParsed;
  }
}

void ParseAhead::Fill(Chunk* c) {
  c->bytes.clear();
  c->count = 0;
  // The lines that lie back to back in the reader's buffer are copied in one
  // piece: [run, run + run_len) is the part not copied yet. Each line's
  // capacity holds its offset in bytes until the copy stops moving.
  const char* run = nullptr;
  size_t run_len = 0;
  auto copy_run = [&] {
    if (run == nullptr) return;
    c->bytes.append(run, run_len);
    c->bytes.append(kLinePadding, '\0');
    run = nullptr;
    run_len = 0;
  };
  Line line;
  while (!reader_done_ && c->count < kChunkLines && c->bytes.size() + run_len < kChunkBytes) {
    if (run == nullptr || !reader_->NextInBuffer(&line)) {
      copy_run();  // before Next, which may move the reader's buffer
      if (!reader_->Next(&line)) {
        reader_done_ = true;
        break;
      }
      run = line.data;
    }
    if (c->count == c->lines.size()) c->lines.emplace_back();
    ParsedLine& p = c->lines[c->count++];
    p.line = line;
    p.line.data = nullptr;
    p.line.capacity = c->bytes.size() + static_cast<size_t>(line.data - run);
    run_len = static_cast<size_t>(line.data - run) + line.size;
    if (line.overlong || !line.terminated) copy_run();  // not in the reader's buffer, or its last line
  }
  copy_run();
  for (size_t i = 0; i < c->count; ++i) {
    ParsedLine& p = c->lines[i];
    p.line.data = c->bytes.data() + p.line.capacity;
    p.line.capacity = c->bytes.size() - p.line.capacity;
  }
}

void ParseAhead::Parse(Chunk* c) {
  // The parser's views die at its next Parse: each string field of each
  // line's Event is copied into c->strings and pointed there at once.
  // c->strings is reserved up front for all of them (a field's unescaped
  // bytes are never more than its bytes in the line, and the fields of the
  // chunk's lines lie apart in c->bytes), so it never moves: one pass over
  // the lines, not a second one to point the views once it stops growing.
  c->strings.clear();
  c->strings.reserve(c->bytes.size());
  auto keep = [c](std::string_view* v) {
    assert(c->strings.capacity() - c->strings.size() >= v->size());
    const size_t at = c->strings.size();
    c->strings.append(*v);
    *v = std::string_view(c->strings.data() + at, v->size());
  };
  for (size_t i = 0; i < c->count; ++i) {
    ParsedLine& p = c->lines[i];
    p.reason.clear();
    p.ok = !p.line.overlong && c->parser.Parse(p.line.data, p.line.size, p.line.capacity, &p.event, &p.reason);
    if (!p.ok) continue;
    p.producer_hash = ProducerHash(p.event.producer);
    keep(&p.event.producer);
    keep(&p.event.metric);
    keep(&p.event.key);
    keep(&p.event.id);
  }
}

void ParseAhead::Launch(size_t slot) {
  if (!helper_.joinable() && !helper_failed_) {
    try {
      helper_ = std::thread(&ParseAhead::Work, this);
    } catch (const std::system_error&) {
      helper_failed_ = true;
    }
  }
  if (helper_failed_) {
    Fill(&chunks_[slot]);  // no thread to be had: read and parse here
    Parse(&chunks_[slot]);
    state_[slot] = SlotState::kParsed;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued_ == 0) queued_head_ = slot;
    ++queued_;
    state_[slot] = SlotState::kQueued;
    number_[slot] = launched_++;
  }
  cv_.notify_all();
}

const ParsedLine* ParseAhead::Next() {
  for (;;) {
    if (handing_out_) {
      if (next_ < chunks_[head_].count) return &chunks_[head_].lines[next_++];
      handing_out_ = false;  // all handed out: the slot is free again
      {
        std::lock_guard<std::mutex> lock(mu_);
        state_[head_] = SlotState::kFree;
      }
      head_ = (head_ + 1) % kDepth;
      --inflight_;
    }
    if (end_) return nullptr;
    while (inflight_ < kDepth) {
      Launch((head_ + inflight_) % kDepth);
      ++inflight_;
    }
    AwaitHead();
    if (chunks_[head_].count == 0) {
      end_ = true;  // the chunks queued behind it come back empty too; Stop drops them
      return nullptr;
    }
    handing_out_ = true;
    next_ = 0;
  }
}

}  // namespace snapsink
