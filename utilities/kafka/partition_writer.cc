#include "utilities/kafka/partition_writer.h"

#include <algorithm>
#include <charconv>
#include <thread>

namespace snapsink::kafka {

std::string SourceName(std::string_view topic, int32_t partition) {
  return "kafka:" + std::string(topic) + "/" + std::to_string(partition);
}

PartitionWriter::PartitionWriter(api::Sink* sink, std::string topic, api::WriteOptions options)
    : sink_(sink), topic_(std::move(topic)), options_(options) {}

PartitionWriter::Partition& PartitionWriter::Get(int32_t p) {
  auto it = parts_.find(p);
  if (it == parts_.end()) {
    it = parts_.emplace(p, Partition{}).first;
    it->second.batch = api::WriteBatch(Source(p));
    it->second.at_prefix = Source(p) + "@";
  }
  return it->second;
}

size_t PartitionWriter::Add(int32_t p, int64_t offset, std::string_view payload) {
  Partition& part = Get(p);
  if (offset < part.next) return 0;
  // An empty record or a tombstone (no value) is one empty line: rejected
  // and counted like any other (docs/EVENTS.md), never skipped.
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), offset);
  label_.assign(part.at_prefix).append(digits, end);
  part.batch.Add(payload, label_);
  part.next = offset + 1;
  return payload.size();
}

Status PartitionWriter::FlushOne(int32_t p, api::WriteResult* sum) {
  Partition& part = Get(p);
  if (part.batch.records() == 0 && part.next == part.committed && !part.refresh) return Status::OK();
  part.refresh = false;
  part.batch.SetPosition(std::to_string(part.next));
  part.batch.SetProgress(static_cast<uint64_t>(part.next), static_cast<uint64_t>(std::max(part.hwm, part.next)));
  if (commit_check_) {
    part.batch.SetCommitCheck([this, p] { return commit_check_(p); });
  }
  api::Sink* target = part.sink != nullptr ? part.sink : sink_;
  if (target == nullptr) {
    // A partition of a run with a state per partition whose start failed
    // (its state never opened; the run stops with that error): nothing of
    // it is written, and whoever owns it next reads it from its position.
    part.batch.Clear();
    part.next = part.committed;
    return Status::OK();
  }
  api::WriteResult wr;
  Status s = target->Write(part.batch, options_, &wr);
  part.batch.Clear();
  if (!s.ok()) {
    if (part.committed >= 0) part.next = part.committed;  // nothing of the batch was applied
    return s.Prefixed(Source(p) + ": ");
  }
  part.committed = part.next;
  if (sum) {
    *sum += wr;
  }
  return Status::OK();
}

Status PartitionWriter::Flush(api::WriteResult* sum, std::vector<std::pair<int32_t, int64_t>>* flushed) {
  struct Job {
    int32_t p;
    int64_t before;
    Status s;
    api::WriteResult r;
  };
  std::vector<Job> jobs;
  for (auto& [p, part] : parts_) {
    if (part.batch.records() > 0 || part.next != part.committed || part.refresh) {
      jobs.push_back({p, part.committed, {}, {}});
    }
  }
  // Concurrent Writes commit together (Sink::Write's group commit): about
  // one LMDB transaction a round instead of one per partition.
  std::vector<std::thread> threads;
  for (size_t i = 1; i < jobs.size() && parallel_; ++i) {
    threads.emplace_back([this, &job = jobs[i]] { job.s = FlushOne(job.p, &job.r); });
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i == 0 || !parallel_) jobs[i].s = FlushOne(jobs[i].p, &jobs[i].r);
  }
  for (std::thread& t : threads) t.join();
  Status first;
  for (Job& job : jobs) {
    if (!job.s.ok()) {
      if (on_failure_ && on_failure_(job.p, job.s)) continue;
      if (first.ok()) first = job.s;
      continue;
    }
    if (sum) {
      *sum += job.r;
    }
    const int64_t committed = parts_.at(job.p).committed;
    if (committed != job.before && flushed) flushed->emplace_back(job.p, committed);
  }
  return first;
}

}  // namespace snapsink::kafka
