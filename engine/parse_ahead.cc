#include "engine/parse_ahead.h"

#include <system_error>

namespace snapsink {

ParseAhead::~ParseAhead() {
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
    cv_.wait(lock, [this] { return stop_ || queued_ > 0; });
    if (stop_) return;
    const size_t slot = queued_head_;
    lock.unlock();
    Parse(&chunks_[slot]);
    lock.lock();
    queued_head_ = (queued_head_ + 1) % kDepth;
    --queued_;
    parsed_[slot] = true;
    cv_.notify_all();
  }
}

bool ParseAhead::Fill(Chunk* c) {
  c->bytes.clear();
  c->lines.clear();
  Line line;
  while (c->lines.size() < kChunkLines && c->bytes.size() < kChunkBytes && reader_->Next(&line)) {
    ParsedLine& p = c->lines.emplace_back();
    p.line = line;
    p.line.data = nullptr;
    p.line.capacity = c->bytes.size();  // its offset in bytes until the copy stops moving
    c->bytes.append(line.data, line.size);
    c->bytes.append(kLinePadding, '\0');
  }
  for (ParsedLine& p : c->lines) {
    p.line.data = c->bytes.data() + p.line.capacity;
    p.line.capacity = p.line.size + kLinePadding;
  }
  return !c->lines.empty();
}

void ParseAhead::Parse(Chunk* c) {
  // The parser's views die at its next Parse: keep every string_view field of
  // each line's Event as an offset into c->strings, and point the views there
  // once it stops growing.
  struct Spans {
    size_t producer, metric, key, id;
  };
  std::vector<Spans> spans(c->lines.size());
  c->strings.clear();
  for (size_t i = 0; i < c->lines.size(); ++i) {
    ParsedLine& p = c->lines[i];
    p.reason.clear();
    p.ok = !p.line.overlong && c->parser.Parse(p.line.data, p.line.size, p.line.capacity, &p.event, &p.reason);
    if (!p.ok) continue;
    spans[i] = {c->strings.size(), 0, 0, 0};
    c->strings.append(p.event.producer);
    spans[i].metric = c->strings.size();
    c->strings.append(p.event.metric);
    spans[i].key = c->strings.size();
    c->strings.append(p.event.key);
    spans[i].id = c->strings.size();
    c->strings.append(p.event.id);
  }
  for (size_t i = 0; i < c->lines.size(); ++i) {
    ParsedLine& p = c->lines[i];
    if (!p.ok) continue;
    const char* base = c->strings.data();
    p.event.producer = std::string_view(base + spans[i].producer, p.event.producer.size());
    p.event.metric = std::string_view(base + spans[i].metric, p.event.metric.size());
    p.event.key = std::string_view(base + spans[i].key, p.event.key.size());
    p.event.id = std::string_view(base + spans[i].id, p.event.id.size());
  }
}

bool ParseAhead::FillAndLaunch(size_t slot) {
  Chunk* c = &chunks_[slot];
  if (!Fill(c)) return false;
  if (!helper_.joinable() && !helper_failed_) {
    try {
      helper_ = std::thread(&ParseAhead::Work, this);
    } catch (const std::system_error&) {
      helper_failed_ = true;
    }
  }
  if (helper_failed_) {
    Parse(c);  // no thread to be had: parse here
    parsed_[slot] = true;
    return true;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued_ == 0) queued_head_ = slot;
    ++queued_;
  }
  cv_.notify_all();
  return true;
}

const ParsedLine* ParseAhead::Next() {
  for (;;) {
    if (handing_out_) {
      if (next_ < chunks_[head_].lines.size()) return &chunks_[head_].lines[next_++];
      handing_out_ = false;  // all handed out: the slot is free again
      head_ = (head_ + 1) % kDepth;
      --inflight_;
    }
    while (!end_ && inflight_ < kDepth) {
      if (!FillAndLaunch((head_ + inflight_) % kDepth)) {
        end_ = true;
      } else {
        ++inflight_;
      }
    }
    if (inflight_ == 0) return nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return parsed_[head_]; });
      parsed_[head_] = false;
    }
    handing_out_ = true;
    next_ = 0;
  }
}

}  // namespace snapsink
