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
  Record r;
  r.data.reserve(record.size() + kRecordPadding);
  r.data.assign(record);
  r.at.assign(at);
  records_.push_back(std::move(r));
}

void WriteBatch::SetPosition(std::string position) { position_ = std::move(position); }

void WriteBatch::SetProgress(uint64_t read, uint64_t end) { progress_ = Progress{read, end}; }

void WriteBatch::SetOwner(uint64_t epoch, bool take) {
  owner_epoch_ = epoch;
  take_owner_ = take;
}

void WriteBatch::SetCommitCheck(std::function<Status()> check) { commit_check_ = std::move(check); }

void WriteBatch::Clear() {
  records_.clear();
  position_.reset();
  progress_.reset();
  take_owner_ = false;  // a take is one batch's; the epoch stays for the next
}

}  // namespace snapsink::api
