#include "sink/write_queue.h"

#include "engine/filenames.h"

namespace snapsink::api {

namespace {
// A leader takes at most this much, so that one caller does not wait behind
// an unbounded group (LevelDB caps its groups at 1 MiB the same way).
constexpr size_t kMaxGroupBatches = 4096;
constexpr size_t kMaxGroupBytes = size_t{16} << 20;
}  // namespace

struct WriteQueue::Writer {
  WriteRequest request;
  std::vector<std::string> labels;  // default `at` labels ("SOURCE@N")
  size_t bytes = 0;
  bool done = false;
  std::condition_variable cv;
};

WriteQueue::WriteQueue(Root* root) : root_(root), ingester_(root->env(), root->store(), root->config()) {}
WriteQueue::~WriteQueue() = default;

Status WriteQueue::Write(const WriteBatch& batch, const WriteOptions& options, WriteResult* result) {
  if (result != nullptr) *result = WriteResult();
  if (batch.source().empty()) return Status::InvalidArgument("a write batch needs a source name");
  Writer w;
  WriteRequest& r = w.request;
  r.source = batch.source();
  r.rejects_file = filenames::RejectsFile(root_->path(), batch.source());
  r.stop_on_error = options.stop_on_error;
  r.id_from_content = options.id_from_content;
  if (batch.position()) r.position = &*batch.position();
  r.owner_epoch = batch.owner_epoch();
  r.take_owner = batch.take_owner();
  r.commit_check = &batch.commit_check();
  if (options.producer_check) {
    r.producer_check = [check = &options.producer_check](std::string_view source, std::string_view producer,
                                                         uint32_t epoch, uint64_t first, uint64_t last,
                                                         std::string* split) {
      return (*check)(source, producer, api::ProducerSeqs{epoch, first, last}, split);
    };
  }
  if (batch.progress()) r.progress = SourceState::Progress{batch.progress()->read, batch.progress()->end};
  const auto& records = batch.record_list();
  r.records.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].at.empty()) w.labels.push_back(batch.source() + "@" + std::to_string(i));
  }
  for (size_t i = 0, label = 0; i < records.size(); ++i) {
    const WriteBatch::Record& rec = records[i];
    // readable: the record lies in the batch's buffer, padded past its last record.
    r.records.push_back({rec.data.data(), rec.data.size(), rec.readable,
                         rec.at.empty() ? std::string_view(w.labels[label++]) : rec.at});
    w.bytes += rec.data.size();
  }

  std::unique_lock<std::mutex> lock(mu_);
  writers_.push_back(&w);
  while (!w.done && &w != writers_.front()) w.cv.wait(lock);
  if (!w.done) {
    // The leader: everything queued so far (up to the caps) goes in one commit.
    std::vector<Writer*> group;
    std::vector<WriteRequest*> requests;
    size_t bytes = 0;
    for (Writer* x : writers_) {
      if (!group.empty() && (group.size() >= kMaxGroupBatches || bytes + x->bytes > kMaxGroupBytes)) break;
      group.push_back(x);
      requests.push_back(&x->request);
      bytes += x->bytes;
    }
    lock.unlock();  // later callers queue up meanwhile
    (void)ingester_.Write(requests);  // each request's status holds its outcome
    lock.lock();
    for (Writer* x : group) {
      writers_.pop_front();
      x->done = true;
      if (x != &w) x->cv.notify_one();
    }
    if (!writers_.empty()) writers_.front()->cv.notify_one();
  }
  lock.unlock();
  if (r.status.ok() && result != nullptr) {
    *result = WriteResult();
    static_cast<LineCounts&>(*result) = r.after;
    *result -= r.before;
  }
  return r.status;
}

}  // namespace snapsink::api
