#include "engine/parse_ahead.h"

#include <cassert>
#include <cstring>
#include <system_error>

#include "engine/state_codec.h"
#include "engine/timeutil.h"

namespace snapsink {

void ParseAhead::Stop() {
  if (helper_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    helper_.join();
  }
  for (Chunk& c : chunks_) Unpin(&c);  // the lines not handed out are dropped
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
  c->count = 0;
  c->line_bytes = 0;
  c->apart.clear();
  // Each line stays where the reader read it: the chunk pins the blocks
  // its lines lie in (the reader goes on in another block rather than move
  // them) until it is handed out. Only an overlong line's head, which the
  // reader holds apart and overwrites with the next one, is copied.
  Line line;
  while (!reader_done_ && c->count < kChunkLines && c->line_bytes < kChunkBytes) {
    if (!reader_->NextInBuffer(&line) && !reader_->Next(&line)) {
      reader_done_ = true;
      break;
    }
    if (line.overlong) {
      std::string& head = c->apart.emplace_back(line.data, line.size);
      head.append(kLinePadding, '\0');
      line.data = head.data();
      line.capacity = head.size();
    } else if (c->pins.empty() || c->pins.back() != reader_->block()) {
      LineReader::Pin(reader_->block());
      c->pins.push_back(reader_->block());
    }
    if (c->count == c->lines.size()) c->lines.emplace_back();
    c->lines[c->count++].line = line;
    c->line_bytes += line.size;
  }
}

void ParseAhead::Unpin(Chunk* c) {
  for (LineReader::Block* b : c->pins) LineReader::Unpin(b);
  c->pins.clear();
}

void ParseAhead::Parse(Chunk* c) const {
  // The parser's views die at its next Parse: each string field of each
  // line's Event is copied into c->strings and pointed there at once.
  // c->strings holds all of them (a field's unescaped bytes are never more
  // than its bytes in the line, and the fields of a line lie apart in it),
  // so it never moves: one pass over the lines, not a second one to point
  // the views once it stops growing; and it is never zeroed or grown a
  // field at a time (a plain copy per field). An aggregate key is its
  // metric and key with kPlainAggKeyExtra bytes more.
  const size_t need = c->line_bytes + codec::kPlainAggKeyExtra * c->count;
  if (c->strings_capacity < need) {
    c->strings.reset(new char[need]);
    c->strings_capacity = need;
  }
  char* to = c->strings.get();
  auto keep = [&to, c](std::string_view* v) {
    assert(static_cast<size_t>(to - c->strings.get()) + v->size() <= c->strings_capacity);
    if (!v->empty()) std::memcpy(to, v->data(), v->size());
    *v = std::string_view(to, v->size());
    to += v->size();
  };
  for (size_t i = 0; i < c->count; ++i) {
    ParsedLine& p = c->lines[i];
    p.reason.clear();
    p.ok = !p.line.overlong && c->parser.Parse(p.line.data, p.line.size, p.line.capacity, &p.event, &p.reason);
    if (!p.ok) continue;
    p.producer_hash = ProducerHash(p.event.producer);
    keep(&p.event.producer);
    keep(&p.event.id);
    p.agg_key = std::string_view();
    const std::string_view metric = p.event.metric, key = p.event.key;
    if (window_ms_ > 0 && std::memchr(metric.data(), '\0', metric.size()) == nullptr) {
      // The key the apply thread looks the aggregate up by, in place of the
      // metric's and key's copies (which become views into it).
      const size_t size = codec::kPlainAggKeyExtra + metric.size() + key.size();
      assert(static_cast<size_t>(to - c->strings.get()) + size <= c->strings_capacity);
      codec::PlainAggKeyTo(to, WindowStart(p.event.ts_ms, window_ms_), metric, key);
      p.event.metric = std::string_view(to + 8, metric.size());
      p.event.key = std::string_view(to + codec::kPlainAggKeyExtra + metric.size(), key.size());
      p.agg_key = std::string_view(to, size);
      to += size;
    } else {
      keep(&p.event.metric);
      keep(&p.event.key);
    }
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
      Unpin(&chunks_[head_]);
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
