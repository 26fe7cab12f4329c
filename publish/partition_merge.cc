// The merged publish of a topic's partitions (partitions/partition_seals.h).
#include <algorithm>
#include <chrono>
#include <map>
#include <queue>
#include <thread>

#include "engine/crash_point.h"
#include "engine/kind_sketch.h"
#include "engine/decimal.h"
#include "engine/filenames.h"
#include "engine/timeutil.h"
#include "engine/window_records.h"
#include "engine/window_retention.h"
#include "engine/writer_lock.h"
#include "partitions/partition_seals.h"
#include "publish/merged_bucket.h"
#include "publish/partition_merge.h"
#include "publish/publisher.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_manifest.h"

namespace snapsink {
namespace {

struct Input {
  int32_t partition = 0;
  PartitionSealRef ref;
  PartitionSealRecord record;
  std::string dir;
};

// One partition's rows of a window, a block at a time.
class Cursor {
 public:
  Status Open(Env* env, const std::string& path) { return SnapshotReader::Open(env, path, &reader_); }
  // Loads the next non-empty block; false at the end.
  Status Next(bool* valid) {
    while (pos_ >= rows_.size()) {
      if (block_ >= reader_->blocks()) {
        *valid = false;
        return Status::OK();
      }
      SNAPSINK_RETURN_IF_ERROR(reader_->ReadBlockRows(block_++, &rows_));
      pos_ = 0;
    }
    *valid = true;
    return Status::OK();
  }
  const Row& row() const { return rows_[pos_]; }
  void Advance() { ++pos_; }
  uint64_t rows() const { return reader_->rows(); }
  bool extended_rows() const { return reader_->extended_rows(); }
  bool sketch_rows() const { return reader_->sketch_rows(); }
  bool distinct_rows() const { return reader_->distinct_rows(); }

 private:
  std::unique_ptr<SnapshotReader> reader_;
  std::vector<Row> rows_;
  size_t pos_ = 0;
  size_t block_ = 0;
};

// Merges r's sketch into out's (a quantile sketch's buckets summed, a
// distinct-count sketch's registers by max: the same bytes in any order of
// partitions).
Status MergeRowSketch(Row* out, const Row& r, int64_t w) {
  const Status st = MergeSketches(&out->sketch, r.sketch);
  if (!st.ok()) {
    return Status::Corruption("merging window " + FormatIso(w) + ": the sketches of metric " + r.metric + " key " +
                              r.key + " do not merge: " + st.ToString());
  }
  return Status::OK();
}

Status AddChecked(int64_t* into, int64_t v, int64_t w, const Row& r, const char* what) {
  if (__builtin_add_overflow(*into, v, into)) {
    return Status::InvalidArgument("merging window " + FormatIso(w) + ": the " + what + " of metric " + r.metric +
                                   " key " + r.key + " overflows");
  }
  return Status::OK();
}

// The k-way merge of the inputs' sorted rows into dir/data (equal (metric,
// key) summed) and dir/manifest.json. Only one block per input is held.
Status MergeWindow(Env* env, const std::string& root, const std::string& dir, int64_t w, int64_t window_size_ms, uint64_t version,
                   const std::vector<Input>& inputs, SnapshotManifest* m) {
  std::vector<Cursor> cursors(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string path = filenames::Join(inputs[i].dir, filenames::kDataFile);
    uint64_t size = 0;
    SNAPSINK_RETURN_IF_ERROR(env->GetFileSize(path, &size));
    if (size != inputs[i].record.data_bytes) {
      return Status::Corruption(path + ": " + std::to_string(size) + " bytes, its seal record says " +
                                std::to_string(inputs[i].record.data_bytes));
    }
    SNAPSINK_RETURN_IF_ERROR(cursors[i].Open(env, path));
    if (cursors[i].rows() != inputs[i].record.rows) {
      return Status::Corruption(path + ": " + std::to_string(cursors[i].rows()) + " rows, its seal record says " +
                                std::to_string(inputs[i].record.rows));
    }
  }
  auto later = [&](size_t a, size_t b) {  // min-heap on (metric, key), then input order
    const Row& x = cursors[a].row();
    const Row& y = cursors[b].row();
    if (int c = x.metric.compare(y.metric); c != 0) return c > 0;
    if (int c = x.key.compare(y.key); c != 0) return c > 0;
    return a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  for (size_t i = 0; i < cursors.size(); ++i) {
    bool valid = false;
    SNAPSINK_RETURN_IF_ERROR(cursors[i].Next(&valid));
    if (valid) heap.push(i);
  }
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(dir));
  SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, filenames::StagingDir(root)));
  SNAPSINK_RETURN_IF_ERROR(env->CreateDirs(dir));
  // Extended rows in, extended rows out (a minmax metric's ranges merge).
  SnapshotWriterOptions options;
  // Sketch rows likewise (a quantiles metric's sketches merge: buckets summed).
  for (const Cursor& c : cursors) {
    options.extended_rows |= c.extended_rows();
    options.sketch_rows |= c.sketch_rows();
    options.distinct_rows |= c.distinct_rows();
  }
  std::unique_ptr<SnapshotWriter> writer;
  SNAPSINK_RETURN_IF_ERROR(SnapshotWriter::Open(env, filenames::Join(dir, filenames::kDataFile), &writer, options));
  Row out;
  bool have = false;
  while (!heap.empty()) {
    const size_t i = heap.top();
    heap.pop();
    const Row& r = cursors[i].row();
    if (have && r.metric == out.metric && r.key == out.key) {
      SNAPSINK_RETURN_IF_ERROR(AddChecked(&out.count, r.count, w, r, "count"));
      SNAPSINK_RETURN_IF_ERROR(AddChecked(&out.sum_micros, r.sum_micros, w, r, "sum"));
      SNAPSINK_RETURN_IF_ERROR(AddChecked(&out.events, r.events, w, r, "events"));
      if (r.min_micros) {
        out.min_micros = out.min_micros ? std::min(*out.min_micros, *r.min_micros) : *r.min_micros;
        out.max_micros = out.max_micros ? std::max(*out.max_micros, *r.max_micros) : *r.max_micros;
      }
      if (!r.sketch.empty()) SNAPSINK_RETURN_IF_ERROR(MergeRowSketch(&out, r, w));
    } else {
      if (have) SNAPSINK_RETURN_IF_ERROR(writer->Add(out));
      out = r;
      have = true;
    }
    cursors[i].Advance();
    bool valid = false;
    SNAPSINK_RETURN_IF_ERROR(cursors[i].Next(&valid));
    if (valid) heap.push(i);
  }
  if (have) SNAPSINK_RETURN_IF_ERROR(writer->Add(out));
  m->window_ms = w;
  m->window_size_ms = window_size_ms;
  m->version = version;
  for (const MetricStats& ms : writer->stats()) {
    m->events = WrappingAdd(m->events, ms.events);
    m->count = WrappingAdd(m->count, ms.count);
    m->sum_micros = WrappingAdd(m->sum_micros, ms.sum_micros);
  }
  SnapshotFileInfo info;
  SNAPSINK_RETURN_IF_ERROR(writer->Finish(&info));
  m->rows = info.rows;
  m->files = {FileEntry{filenames::kDataFile, info.bytes, info.xxh64}};
  SNAPSINK_RETURN_IF_ERROR(WriteFileAtomic(env, filenames::Join(dir, filenames::kSnapshotManifestFile), m->Encode()));
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(filenames::StagingWindowDir(root, w)));
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(filenames::StagingDir(root)));
  return Status::OK();
}

// The seals' ledgers summed per metric: what the merged rows must hold.
std::vector<LedgerEntry> SumLedgers(const std::vector<Input>& inputs) {
  std::map<std::string, Aggregate> sum;
  for (const Input& in : inputs) {
    for (const LedgerEntry& e : in.record.ledger) {
      Aggregate& a = sum[e.metric];
      a.events = WrappingAdd(a.events, e.totals.events);
      a.count = WrappingAdd(a.count, e.totals.count);
      a.sum_micros = WrappingAdd(a.sum_micros, e.totals.sum_micros);
    }
  }
  std::vector<LedgerEntry> out;
  for (auto& [metric, a] : sum) out.push_back(LedgerEntry{metric, a});
  return out;
}

// A window every partition is past whose accepted seals changed since its
// last merged version: its inputs, the identity of that set and its state.
struct Candidate {
  int64_t window_ms = 0;
  std::vector<Input> inputs;
  std::string identity;
  WindowState ws;
};

// Reads every partition's progress and ROOT's merged identities: what a
// publish would merge now. Needs no LOCK: under retention its one write is
// ROOT's watermark, which only rises (an LMDB write transaction; two
// processes raising it at once agree). *oldest_kept is then ROOT's oldest
// kept window: with no candidate a publish is still due when a window has
// to leave (RetentionDue).
Status FindCandidates(Root* root, const std::string& topic, int32_t partitions, MergedPublishResult* result,
                      std::vector<Candidate>* out, std::optional<int64_t>* oldest_kept) {
  out->clear();
  oldest_kept->reset();
  result->missing.clear();
  Env* env = root->env();
  const std::string& path = root->path();
  const RootConfig& config = root->config();
  // 1. Every partition's progress: none yet, nothing can be published.
  std::vector<PartitionProgress> progress(partitions);
  for (int32_t p = 0; p < partitions; ++p) {
    Status s = ReadPartitionProgress(env, path, PartitionSource(topic, p), &progress[p]);
    if (s.IsNotFound()) {
      result->missing.push_back(p);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(s);
  }
  if (!result->missing.empty()) return Status::OK();

  // 1b. Retention (SPEC 13). ROOT ingests nothing here, so its watermark is
  // the partitions': the lowest newest event time among them (as a window
  // waits for the slowest partition; a partition that read up to its high
  // watermark without any event holds nothing back), stored in ROOT where it
  // only rises, so one producer's far-ahead clock moves it only once every
  // partition has gone as far. The publisher's step then leaves the windows
  // beyond retention out and raises ROOT's floor (engine/window_retention.h).
  // No window before ROOT's oldest kept one is merged again: that is what
  // lets gc remove their seal records (partition_seals_gc.cc).
  if (config.retain_ms > 0) {
    std::optional<int64_t> merged_ts;
    bool known = true;
    for (const PartitionProgress& pp : progress) {
      if (pp.max_event_ts) {
        merged_ts = merged_ts ? std::min(*merged_ts, *pp.max_event_ts) : *pp.max_event_ts;
      } else if (pp.position < pp.high_watermark) {
        known = false;
      }
    }
    std::unique_ptr<Txn> txn;
    SNAPSINK_RETURN_IF_ERROR(root->store()->BeginWrite(&txn));
    SNAPSINK_ASSIGN_OR_RETURN(auto stored, Root::GetMetaU64(txn.get(), meta::kMaxEventTs));
    if (known && merged_ts && (!stored || static_cast<int64_t>(*stored) < *merged_ts)) {
      SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kMaxEventTs, static_cast<uint64_t>(*merged_ts)));
      SNAPSINK_RETURN_IF_ERROR(txn->Commit());
      SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&txn));
    }
    SNAPSINK_ASSIGN_OR_RETURN(*oldest_kept, OldestKeptWindow(txn.get(), config));
  }

  // 2. The windows every partition is past whose seals changed since their
  // last merged version.
  std::map<int64_t, std::vector<Input>> windows;
  for (int32_t p = 0; p < partitions; ++p) {
    for (const PartitionSealRef& ref : progress[p].seals) windows[ref.window_ms];
  }
  for (auto& [w, inputs] : windows) {
    if (*oldest_kept && w < **oldest_kept) continue;  // beyond retention: never merged again
    bool past = true;
    std::string identity;
    for (int32_t p = 0; p < partitions && past; ++p) {
      past = progress[p].Past(w, config.window_ms, config.lateness_ms);
      auto it = std::lower_bound(progress[p].seals.begin(), progress[p].seals.end(), w,
                                 [](const PartitionSealRef& r, int64_t x) { return r.window_ms < x; });
      if (it == progress[p].seals.end() || it->window_ms != w) continue;
      Input in;
      in.partition = p;
      in.ref = *it;
      in.dir = filenames::PartitionSealDir(path, PartitionSource(topic, p), w, it->version, it->epoch);
      inputs.push_back(std::move(in));
      identity += std::to_string(p) + ":" + std::to_string(it->epoch) + ":" + std::to_string(it->version) + ",";
    }
    if (!past) continue;
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&read));
    std::string_view stored;
    Status g = read->Get(Table::kMeta, MergedInputsKey(topic, w), &stored);
    if (g.ok() && stored == identity) continue;
    if (!g.ok() && !g.IsNotFound()) return g;
    Candidate c;
    c.window_ms = w;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(read.get(), w, &c.ws));
    c.inputs = std::move(inputs);
    c.identity = std::move(identity);
    out->push_back(std::move(c));
  }
  return Status::OK();
}

// Producers split over partitions, by producer, each with its partitions
// ascending: a producer whose entries in two partitions' lists are of one
// epoch with overlapping seq ranges (PartitionProducers). A partition with
// no list yet has none. Disjoint ranges (a key moved to a partition added
// to the topic) are not a split.
Status SplitProducers(Env* env, const std::string& root, const std::string& topic, int32_t partitions,
                      std::map<std::string, std::vector<int32_t>>* split) {
  std::map<std::string, std::vector<std::pair<int32_t, PartitionProducers::Producer>>> seen;
  for (int32_t p = 0; p < partitions; ++p) {
    PartitionProducers list;
    Status s = ReadPartitionProducers(env, root, PartitionSource(topic, p), &list);
    if (s.IsNotFound()) continue;
    SNAPSINK_RETURN_IF_ERROR(s);
    for (PartitionProducers::Producer& producer : list.producers) {
      std::string id = producer.id;
      seen[std::move(id)].emplace_back(p, std::move(producer));
    }
  }
  split->clear();
  for (const auto& [producer, on] : seen) {
    std::vector<int32_t> over;
    for (size_t i = 0; i < on.size(); ++i) {
      for (size_t j = i + 1; j < on.size(); ++j) {
        const PartitionProducers::Producer& a = on[i].second;
        const PartitionProducers::Producer& b = on[j].second;
        if (a.epoch != b.epoch || a.last < b.first || b.last < a.first) continue;
        over.push_back(on[i].first);
        over.push_back(on[j].first);
      }
    }
    if (over.empty()) continue;
    std::sort(over.begin(), over.end());
    over.erase(std::unique(over.begin(), over.end()), over.end());
    split->emplace(producer, std::move(over));
  }
  return Status::OK();
}

Status PublishMergedOnce(Root* root, const std::string& topic, int32_t partitions, const SplitProducerCheck& on_split,
                         MergedPublishResult* result) {
  *result = MergedPublishResult();
  SNAPSINK_RETURN_IF_ERROR(AdoptBucketCurrent(root, topic));  // a bucket: what the others published
  Env* env = root->env();
  const std::string& path = root->path();
  const RootConfig& config = root->config();
  // A look without LOCK first: most publish points of a follower find
  // nothing new, and a look keeps nobody waiting.
  std::vector<Candidate> candidates;
  std::optional<int64_t> oldest_kept;
  SNAPSINK_RETURN_IF_ERROR(FindCandidates(root, topic, partitions, result, &candidates, &oldest_kept));
  if (candidates.empty()) {
    if (!oldest_kept) return Status::OK();
    // Under retention: due only when a window must leave. A failed look (gc
    // removed the manifest it read, say) is not an answer: look under LOCK.
    Result<bool> due = RetentionDue(env, path, root->store(), config);
    if (due.ok() && !*due) return Status::OK();
  }
  MaybeCrash("merge.before_lock");
  // Under LOCK, again: another process may have published them meanwhile.
  std::unique_ptr<FileLock> lock;
  SNAPSINK_RETURN_IF_ERROR(LockRootWaiting(env, path, kFollowerStepWaitMs, &lock));
  SNAPSINK_RETURN_IF_ERROR(AdoptBucketCurrent(root, topic));
  SNAPSINK_RETURN_IF_ERROR(FindCandidates(root, topic, partitions, result, &candidates, &oldest_kept));
  // A producer in two partitions' states is counted by each: found here,
  // before any of it is published, whichever processes own the partitions.
  if (!candidates.empty() && on_split) {
    std::map<std::string, std::vector<int32_t>> split;
    SNAPSINK_RETURN_IF_ERROR(SplitProducers(env, path, topic, partitions, &split));
    for (const auto& [producer, on] : split) SNAPSINK_RETURN_IF_ERROR(on_split(producer, on));
  }

  std::vector<PendingSnapshot> pending;
  std::vector<std::pair<std::string, std::string>> merged_keys;
  for (Candidate& c : candidates) {
    const int64_t w = c.window_ms;
    std::vector<Input>& inputs = c.inputs;
    for (Input& in : inputs) {
      const std::string name = filenames::Join(in.dir, filenames::kSealRecordFile);
      std::string text;
      SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(name, &text));
      SNAPSINK_RETURN_IF_ERROR(PartitionSealRecord::Decode(text, name, &in.record));
      if (in.record.window_ms != w || in.record.version != in.ref.version || in.record.epoch != in.ref.epoch ||
          in.record.partition != in.partition || in.record.topic != topic) {
        return Status::Corruption(name + ": names another seal than the one its partition's progress accepted");
      }
    }
    PendingSnapshot ps;
    ps.window_ms = w;
    SNAPSINK_ASSIGN_OR_RETURN(ps.version, NextMergedVersion(root, topic, w, c.ws.last_version));
    SnapshotManifest m;
    SNAPSINK_RETURN_IF_ERROR(MergeWindow(env, path, filenames::StagingSnapshotDir(path, w, ps.version), w, config.window_ms,
                                         ps.version, inputs, &m));
    ps.seal.state = SealState::kStaged;
    ps.seal.rows = m.rows;
    ps.seal.ledger = SumLedgers(inputs);  // reconciliation: the merged rows against the seals' counts
    pending.push_back(std::move(ps));
    merged_keys.emplace_back(MergedInputsKey(topic, w), c.identity);
  }
  if (pending.empty() && !oldest_kept) return Status::OK();
  for (size_t i = 0; i < pending.size(); ++i) {  // a bucket: what each window is merged from, for the others
    SNAPSINK_RETURN_IF_ERROR(
        RecordMergedInputs(root, topic, pending[i].window_ms, pending[i].version, merged_keys[i].second));
  }
  if (!pending.empty()) MaybeCrash("merge.before_publish");

  // 3. The publisher's generation step.
  PublishResult pr;
  SNAPSINK_RETURN_IF_ERROR(PublishSnapshots(env, path, root->store(), config, pending, [&](Txn* txn) {
    for (const PendingSnapshot& p : pending) {
      SealRecord published = p.seal;
      published.state = SealState::kPublished;
      SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kSeals, codec::SealKey(p.window_ms, p.version), codec::Encode(published)));
      WindowState ws;
      SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn, p.window_ms, &ws));
      ws.last_version = std::max(ws.last_version, p.version);
      ws.dirty = false;
      SNAPSINK_RETURN_IF_ERROR(WriteWindowState(txn, p.window_ms, ws));
    }
    for (const auto& [k, v] : merged_keys) SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kMeta, k, v));
    return Status::OK();
  }, &pr));
  if (!pending.empty()) MaybeCrash("merge.after_publish");
  result->generation = pr.generation;
  for (const PendingSnapshot& p : pending) result->windows.push_back(p.window_ms);
  return Status::OK();
}

// How many times a merged publish into a bucket that lost a race to another
// process (a version, a generation number or the CURRENT swap) is made
// again from a fresh read.
constexpr int kBucketPublishRounds = 8;

}  // namespace

Status PublishMerged(Root* root, const std::string& topic, int32_t partitions, const SplitProducerCheck& on_split,
                     MergedPublishResult* result) {
  if (!InBucket(root)) return PublishMergedOnce(root, topic, partitions, on_split, result);
  Status s;
  for (int round = 0; round < kBucketPublishRounds; ++round) {
    s = PublishMergedOnce(root, topic, partitions, on_split, result);
    if (!s.IsLocked()) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(20 << std::min(round, 5)));
  }
  return s.Prefixed("merged publish: other processes kept publishing first: ");
}

}  // namespace snapsink
