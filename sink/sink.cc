// Sink and ReadOnlySink: the public handle over engine/ and publish/.
// Thin by design: each method opens nothing new, calls the engine function
// that does the work and converts its records.
#include "snapsink/sink.h"
#include "snapsink/bucket_access.h"

#include <filesystem>
#include <limits>

#include "engine/ddsketch.h"
#include "engine/hyperloglog.h"
#include "engine/env_bucket_root.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/line_reader.h"
#include "engine/long_key.h"
#include "engine/metric_kinds.h"
#include "engine/root_bucket.h"
#include "engine/root_files.h"
#include "engine/s3/s3_uri.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"
#include "publish/backfill.h"
#include "publish/backfill_impact.h"
#include "publish/maintenance.h"
#include "publish/publisher.h"
#include "publish/rollback.h"
#include "publish/upgrade.h"
#include "sink/follower.h"
#include "sink/root_status.h"
#include "sink/root_target.h"
#include "sink/sink_impl.h"
#include "sink/write_queue.h"

namespace snapsink::api {

namespace {

// A writer into a root in a bucket keeps its state in a local directory it
// must name: a scratch state would publish from nothing.
Status CheckWriterEnv(Env* env, const std::string& path) {
  auto* bucket = dynamic_cast<BucketRootEnv*>(env);
  if (bucket == nullptr || bucket->has_state_dir()) return Status::OK();
  return Status::InvalidArgument(path + ": writing into a root in a bucket needs --state DIR, a local directory "
                                 "for its LMDB state (the same DIR on every run of this writer; run, ingest, seal, "
                                 "publish, gc, rollback, backfill, gaps and metric take it)");
}

Status OpenRoot(const std::string& path, bool writer, std::unique_ptr<SinkImpl>* out) {
  auto impl = std::make_unique<SinkImpl>();
  impl->read_only = !writer;
  Env* env = nullptr;
  SNAPSINK_RETURN_IF_ERROR(EnvForRoot(path, &env));
  if (writer) SNAPSINK_RETURN_IF_ERROR(CheckWriterEnv(env, path));
  SNAPSINK_RETURN_IF_ERROR(
      Root::Open(env, path, writer ? Root::Access::kWriter : Root::Access::kReadOnly, &impl->root));
  impl->settings = ToPublic(impl->root->config());
  *out = std::move(impl);
  return Status::OK();
}

// Backfill writes the live state in its last step: a handle opened
// read-only reopens its store for writing (still without LOCK). One LMDB
// environment per process, so the read-only one is closed first.
Status ReopenWritable(SinkImpl* impl) {
  if (!impl->read_only) return Status::OK();
  const std::string path = impl->root->path();
  Env* env = impl->root->env();
  SNAPSINK_RETURN_IF_ERROR(CheckWriterEnv(env, path));
  impl->root.reset();
  Status s = Root::Open(env, path, Root::Access::kUnlocked, &impl->root);
  if (!s.ok()) {
    (void)Root::Open(env, path, Root::Access::kReadOnly, &impl->root);  // keep the handle usable for reads
    return s;
  }
  impl->read_only = false;
  return Status::OK();
}

SourceInfo SourceToPublic(const std::string& source, const SourceState& s) {
  return {s, source, s.offset};  // LineCounts, then its own fields
}

// SPEC 7: every input must be readable before any of them changes state. A
// file that is not the one its position was taken in is no error: it is
// read from its start (SPEC 5).
Status CheckInputs(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    if (f == "-") continue;
    std::unique_ptr<LineReader> r;
    SNAPSINK_RETURN_IF_ERROR(LineReader::Open(f, &r));
  }
  return Status::OK();
}

SourceState Minus(const SourceState& a, const SourceState& b) {
  SourceState d;
  d.offset = a.offset;
  static_cast<LineCounts&>(d) = a;
  d -= b;
  return d;
}

Status IngestInto(Root* root, const IngestOptions& o, IngestResult* result) {
  if (!o.source.empty() && o.files.size() > 1) {
    return Status::InvalidArgument("a source name names one input; give one file with it");
  }
  SNAPSINK_RETURN_IF_ERROR(CheckInputs(o.files));
  Ingester ingester(root->env(), root->store(), root->config());
  for (const std::string& file : o.files) {
    snapsink::IngestOptions opt;
    opt.path = file;
    opt.source = o.source.empty() ? file : o.source;
    opt.commit_every = o.commit_every;
    opt.stop_on_error = o.stop_on_error;
    opt.id_from_content = o.id_from_content;
    opt.input_final = o.final;
    opt.on_note = o.on_note;
    opt.rejects_file = filenames::RejectsFile(root->path(), opt.source);
    if (o.on_progress) {
      opt.on_commit = [&](const SourceState& s, int64_t size) { o.on_progress(opt.source, s.offset, size, s.lines); };
    }
    SourceState st, before;
    Status s = ingester.Run(opt, &st, &before);
    if (s.ok() || s.IsGap() || s.IsBadInput()) {
      result->sources.push_back(SourceToPublic(opt.source, st));
      result->this_run.push_back(SourceToPublic(opt.source, Minus(st, before)));
      result->rejects_files.push_back(root->env()->LocalPath(opt.rejects_file));  // where it is on disk
      if (o.on_source_done) o.on_source_done(*result);
    }
    SNAPSINK_RETURN_IF_ERROR(s);
  }
  return Status::OK();
}

// Sink::Run's inputs as the Driver's source with an end (sink/follower.h):
// every file, and standard input, read to its end in its one poll. A stop
// (a gap under --on-gap stop or past the gap limit, bad input under
// --on-error stop) commits everything before its line and ends the source:
// what that applied is sealed and published as a run without --final would
// have (the closed windows only: a stop is not the end of the input, so
// --final's "seal every window" does not apply, and a window still open is
// not given a version that the rerun would have to replace), then the stop
// is the run's status (exit 3 or 2): a stop never holds back what came
// before it.
class IngestSource : public StepSource {
 public:
  IngestSource(IngestOptions options, IngestResult* result) : options_(std::move(options)), result_(result) {}
  Status Poll(Root* root, bool, bool* more) override {
    *more = false;
    Status s = IngestInto(root, options_, result_);
    if (!s.IsGap() && !s.IsBadInput()) return s;
    stop_ = s;
    return Status::OK();
  }
  void Wait(int64_t) override {}
  void Wake() override {}
  bool HasEnd() const override { return true; }
  Status Ended() const override { return stop_; }

 private:
  IngestOptions options_;
  IngestResult* result_;
  Status stop_;
};

Status SealRoot(Root* root, const SealOptions& o, std::vector<SealedWindow>* out) {
  const int64_t size = root->config().window_ms;
  std::vector<int64_t> windows = o.windows;
  if (windows.empty()) {
    SNAPSINK_RETURN_IF_ERROR(DirtyWindows(root->store(), root->config(), o.all, &windows));
  }
  for (int64_t w : windows) {
    if (WindowStart(w, size) != w) {
      return Status::InvalidArgument("window " + FormatIso(w) + ": not the start of a " + snapsink::FormatDuration(size) +
                                     " window");
    }
  }
  SealTarget t{root->env(), root->path(), root->store(), size};
  return SealWindows(t, windows, out);
}

Status PublishRoot(Root* root, PublishResult* out) {
  return PublishStaged(root->env(), root->path(), root->store(), root->config(), out);
}

}  // namespace

Status ReopenWritableHandle(SinkImpl* impl) { return ReopenWritable(impl); }

Status GatherUnsealed(Root* root, UnsealedWindows* out) {
  RootStatus s;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(root, &s));
  *out = UnsealedWindows();
  for (const WindowStatus& w : s.windows) {
    if (!w.closed && w.dirty) out->open.push_back({w.window_start_ms, w.closes_at_ms});
  }
  out->watermark = s.watermark;
  return Status::OK();
}

ReadOnlySink::ReadOnlySink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReadOnlySink::~ReadOnlySink() = default;

const std::string& ReadOnlySink::path() const { return impl_->root->path(); }
const RootSettings& ReadOnlySink::settings() const { return impl_->settings; }

Status ReadOnlySink::Verify(VerifyReport* report) const {
  *report = VerifyReport();
  Root* root = impl_->root.get();
  // A root in a bucket read without the writer's state has a stand-in
  // state (settings only): nothing there to reconcile against.
  auto* bucket = dynamic_cast<BucketRootEnv*>(root->env());
  Store* live = bucket != nullptr && !bucket->has_state_dir() ? nullptr : root->store();
  Status s = snapsink::Verify(root->env(), root->path(), live, &report->problems, &report->notes,
                              &report->snapshots_checked);
  std::vector<std::string> unknown;
  Status u = UnknownRootFiles(root->env(), root->path(), &unknown);
  for (const std::string& f : unknown) report->warnings.push_back("unknown file in root: " + f);
  SNAPSINK_RETURN_IF_ERROR(s);
  return u;
}

Result<std::unique_ptr<Reader>> ReadOnlySink::NewReader(uint64_t generation) const {
  return Reader::Open(path(), generation);
}

Status Backfill(ReadOnlySink& handle, const BackfillOptions& o, BackfillResult* result) {
  if (o.version == 0) return OutOfRange("BackfillOptions::version", 0, "must be at least 1");
  SinkImpl* impl = SinkAccess::Get(&handle);
  if (impl->writer) {
    return Status::InvalidArgument("backfill runs from a ReadOnlySink: it takes the root's LOCK itself to publish");
  }
  *result = BackfillResult();
  if (o.dry_run) return PlanBackfill(impl->root.get(), o, &result->already_done, &result->impact);
  SNAPSINK_RETURN_IF_ERROR(ReopenWritable(impl));
  SNAPSINK_RETURN_IF_ERROR(RunBackfill(impl->root.get(), o, result));
  for (const std::string& f : o.files) {
    result->rejects_files.push_back(impl->root->env()->LocalPath(  // where it is on disk
        filenames::BackfillRejectsFile(handle.path(), o.version, o.source.empty() ? f : o.source)));
  }
  return Status::OK();
}

namespace {

// InitOptions::metrics as the state keeps them, each checked as
// SetMetricKind checks one, and no metric twice.
Status InitMetricKinds(const InitOptions& o, snapsink::MetricKinds* out) {
  for (const MetricKindInfo& m : o.metrics) {
    const std::string field = "InitOptions::metrics " + (m.metric.empty() ? std::string("(empty name)") : m.metric);
    if (m.metric.empty() || m.metric.size() > 128) {
      return Status::InvalidArgument(field + ": a metric name of " + std::to_string(m.metric.size()) +
                                     " bytes, expected 1..128");
    }
    if (m.kind == MetricKind::kQuantiles && m.accuracy_ppm != 0 &&
        (m.accuracy_ppm < DDSketch::kMinAccuracyPpm || m.accuracy_ppm > DDSketch::kMaxAccuracyPpm)) {
      return OutOfRange(field + " accuracy_ppm", m.accuracy_ppm, "must be 100..500000 (0: 10000, 1%)");
    }
    if (m.kind == MetricKind::kDistinct && m.precision != 0 && !HyperLogLog::ValidPrecision(m.precision)) {
      return OutOfRange(field + " precision", m.precision,
                        "must be " + std::to_string(HyperLogLog::kMinPrecision) + ".." +
                            std::to_string(HyperLogLog::kMaxPrecision) + " (0: " +
                            std::to_string(HyperLogLog::kDefaultPrecision) + ")");
    }
    const snapsink::MetricSpec spec{
        static_cast<snapsink::MetricKind>(m.kind),
        m.kind == MetricKind::kDistinct ? static_cast<uint32_t>(m.precision) : m.accuracy_ppm};
    if (!out->emplace(m.metric, spec).second) {
      return Status::InvalidArgument(field + ": named twice; declare each metric once");
    }
  }
  return Status::OK();
}

}  // namespace

Status Sink::Create(const std::string& path, const InitOptions& o) {
  RootConfig config;
  config.window_ms = o.window_size_ms;
  config.lateness_ms = o.lateness_ms.value_or(o.window_size_ms);
  config.on_gap = o.on_gap == GapPolicy::kStop ? OnGap::kStop : OnGap::kAccept;
  config.id_horizon_ms = o.id_horizon_ms;
  config.producer_retention_ms = o.producer_retention_ms;
  config.retain_ms = o.retain_ms;
  config.max_ahead_ms = o.max_ahead_ms.value_or(o.retain_ms > 0 ? RootConfig::kDefaultMaxAheadMs : 0);
  // Each setting checked here, once, in the order InitOptions declares them.
  if (o.window_size_ms <= 0) {
    return OutOfRange("InitOptions::window_size_ms", o.window_size_ms, "must be greater than zero");
  }
  if (config.lateness_ms < 0) return OutOfRange("InitOptions::lateness_ms", config.lateness_ms, "must not be negative");
  if (o.id_horizon_ms <= 0) return OutOfRange("InitOptions::id_horizon_ms", o.id_horizon_ms, "must be greater than zero");
  if (o.producer_retention_ms < 0) {
    return OutOfRange("InitOptions::producer_retention_ms", o.producer_retention_ms, "must not be negative");
  }
  if (o.retain_ms < 0) return OutOfRange("InitOptions::retain_ms", o.retain_ms, "must not be negative");
  if (config.max_ahead_ms < 0) return OutOfRange("InitOptions::max_ahead_ms", config.max_ahead_ms, "must not be negative");
  snapsink::MetricKinds kinds;
  SNAPSINK_RETURN_IF_ERROR(InitMetricKinds(o, &kinds));
  Env* env = nullptr;
  SNAPSINK_RETURN_IF_ERROR(EnvForRoot(path, &env));
  if (IsBucketPath(path)) return InitBucketRoot(env, path, config, kinds);
  return Root::Init(env, path, config, kinds);
}

Status Sink::UseStateDir(const std::string& path, const std::string& dir) {
  if (!IsBucketPath(path)) {
    return Status::InvalidArgument(path + ": a local state directory is for a root in a bucket (s3://BUCKET/PREFIX)");
  }
  if (dir.empty()) return Status::InvalidArgument(path + ": the state directory is empty");
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(dir, ec).lexically_normal().string();
  if (ec) return Status::InvalidArgument("--state " + dir + ": " + ec.message());
  return SetBucketStateDir(path, absolute);
}

Status UseBucketAccess(const std::string& path, const BucketAccess& access) {
  if (!IsBucketPath(path)) {
    return Status::InvalidArgument(path + ": an endpoint, keys and a cache are for a root in a bucket (s3://BUCKET/PREFIX)");
  }
  return SetBucketRootOptions(path, access);
}

Result<std::unique_ptr<Sink>> Sink::Open(const std::string& path) {
  std::unique_ptr<SinkImpl> impl;
  SNAPSINK_RETURN_IF_ERROR(OpenRoot(path, /*writer=*/true, &impl));
  impl->writer = true;
  impl->writes = std::make_shared<WriteQueue>(impl->root.get());
  return std::unique_ptr<Sink>(new Sink(std::move(impl)));
}

Result<std::unique_ptr<Sink>> Sink::OpenFollower(const std::string& path) {
  // LOCK first, as `run --follow` does: a plain writer refuses at once, and
  // another follower is found after its step.
  auto opened = Open(path);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<Sink> sink = std::move(*opened);
  Root* root = sink->impl_->root.get();
  SNAPSINK_RETURN_IF_ERROR(LockFollower(root->env(), path, &sink->impl_->follower_lock));
  root->ReleaseWriterLock().reset();  // from here LOCK is held one step at a time (sink/step.cc)
  return sink;
}

Result<std::unique_ptr<ReadOnlySink>> Sink::OpenReadOnly(const std::string& path) {
  std::unique_ptr<SinkImpl> impl;
  SNAPSINK_RETURN_IF_ERROR(OpenRoot(path, /*writer=*/false, &impl));
  return SinkAccess::NewReadOnly(std::move(impl));
}

Result<UpgradeResult> Sink::Upgrade(const std::string& path, bool dry_run) {
  if (IsBucketPath(path)) {
    return Status::InvalidArgument(path + ": a root in a bucket is made in this build's format; upgrade converts "
                                   "local roots only");
  }
  UpgradeResult out;
  SNAPSINK_RETURN_IF_ERROR(UpgradeRoot(Env::Default(), path, dry_run, &out));
  return out;
}

Status Sink::Ingest(const IngestOptions& options, IngestResult* result) {
  IngestResult local;
  if (result == nullptr) result = &local;
  *result = IngestResult();
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "Ingest"));
  return IngestInto(impl_->root.get(), options, result);
}

Status Sink::Write(const WriteBatch& batch, const WriteOptions& options, WriteResult* result) {
  if (result != nullptr) *result = WriteResult();
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "Write"));
  return impl_->writes->Write(batch, options, result);
}

Result<std::optional<std::string>> Sink::Position(const std::string& source) const {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(impl_->root->store()->BeginRead(&txn));
  std::string_view v;
  Status s = snapsink::GetRecord(txn.get(), snapsink::Table::kSources, source, &v);
  if (s.IsNotFound()) return std::optional<std::string>();
  SNAPSINK_RETURN_IF_ERROR(s);
  SourceState st;
  SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, &st));
  return st.position;
}

Result<std::vector<SealedWindow>> Sink::Seal(const SealOptions& options) {
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "Seal"));
  std::vector<SealedWindow> sealed;
  SNAPSINK_RETURN_IF_ERROR(SealRoot(impl_->root.get(), options, &sealed));
  return sealed;
}

Result<PublishResult> Sink::Publish() {
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "Publish"));
  PublishResult r;
  SNAPSINK_RETURN_IF_ERROR(PublishRoot(impl_->root.get(), &r));
  return r;
}

Status Sink::Run(const RunOptions& options, RunResult* result) {
  RunResult local;
  if (result == nullptr) result = &local;
  *result = RunResult();
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "Run"));
  IngestOptions ingest = options.ingest;
  ingest.final = ingest.final || options.final;
  IngestSource source(std::move(ingest), &result->ingest);
  DriveOptions d;  // the Driver's source with an end: one step, as this handle holds LOCK
  d.final = options.final;
  d.on_sealed = [result](const std::vector<SealedWindow>& sealed) { result->sealed = sealed; };
  d.on_unsealed = [result](const UnsealedWindows& why) { result->nothing_sealed = why; };
  d.on_published = [result](const PublishResult& r) { result->publish = r; };
  RootTarget target(impl_->root.get(), &source, /*follower_for_life=*/false);
  Driver driver(&target, std::move(d));
  return driver.Run();
}

Result<UnsealedWindows> ReadOnlySink::Unsealed() const {
  UnsealedWindows out;
  SNAPSINK_RETURN_IF_ERROR(GatherUnsealed(impl_->root.get(), &out));
  return out;
}

Result<GcResult> Sink::Gc(uint64_t keep) {
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "Gc"));
  Root* root = impl_->root.get();
  GcResult out;
  SNAPSINK_RETURN_IF_ERROR(CollectGarbage(root->env(), root->path(), root->store(), keep, &out));
  return out;
}

Result<RollbackResult> Sink::Rollback(uint64_t generation, bool dry_run) {
  if (!dry_run) SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "Rollback"));
  Root* root = impl_->root.get();
  RollbackResult r;
  SNAPSINK_RETURN_IF_ERROR(snapsink::Rollback(root->env(), root->path(), root->store(), generation, dry_run, &r));
  return r;
}

Result<RollbackResult> ReadOnlySink::RollbackDryRun(uint64_t generation) const {
  Root* root = impl_->root.get();
  RollbackResult r;
  SNAPSINK_RETURN_IF_ERROR(
      snapsink::Rollback(root->env(), root->path(), root->store(), generation, /*dry_run=*/true, &r));
  return r;
}

Status Sink::SetHistory(std::optional<int64_t> retain_ms, std::optional<int64_t> max_ahead_ms) {
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "SetHistory"));
  SNAPSINK_RETURN_IF_ERROR(impl_->root->SetHistorySettings(retain_ms, max_ahead_ms));
  impl_->settings = ToPublic(impl_->root->config());
  return Status::OK();
}

}  // namespace snapsink::api
