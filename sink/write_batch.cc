#include "snapsink/write_batch.h"

#include <utility>

namespace snapsink::api {

namespace {
// Readable bytes past a record's end let the parser read it in place
// (simdjson's padding, 64 bytes); without them it copies the line first.
constexpr size_t kRecordPadding = 64;
}  // namespace

WriteBatch::WriteBatch(std::string source) : source_(std::move(source)) {}

void WriteBatch::Add(std::string_view record, std::string_view at) {
  slots_.push_back({data_.size(), record.size(), labels_.size(), at.size()});
  // The padding is past the last record; an earlier one has the next
  // records after it as well. reserve() grows the buffer geometrically.
  data_.reserve(data_.size() + record.size() + kRecordPadding);
  data_.append(record);
  labels_.append(at);
}

std::vector<WriteBatch::Record> WriteBatch::record_list() const {
  std::vector<Record> out;
  out.reserve(slots_.size());
  for (const Slot& s : slots_) {
    out.push_back({std::string_view(data_.data() + s.data_at, s.data_size),
                   std::string_view(labels_.data() + s.label_at, s.label_size), data_.capacity() - s.data_at});
  }
  return out;
}

void WriteBatch::SetPosition(std::string position) { position_ = std::move(position); }

void WriteBatch::SetProgress(uint64_t read, uint64_t end) { progress_ = Progress{read, end}; }

void WriteBatch::SetOwner(uint64_t epoch, bool take) {
  owner_epoch_ = epoch;
  take_owner_ = take;
}

void WriteBatch::SetCommitCheck(std::function<Status()> check) { commit_check_ = std::move(check); }

void WriteBatch::Clear() {
  // The buffers go: a batch kept between rounds (one per Kafka partition)
  // then holds no memory while it waits.
  std::string().swap(data_);
  std::string().swap(labels_);
  std::vector<Slot>().swap(slots_);
  position_.reset();
  progress_.reset();
  take_owner_ = false;  // a take is one batch's; the epoch stays for the next
}

}  // namespace snapsink::api
