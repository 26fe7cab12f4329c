#include "engine/root.h"

#include <unistd.h>

#include <filesystem>

#include "engine/crash_point.h"
#include "engine/filenames.h"
#include "engine/root_bucket.h"
#include "engine/s3/s3_uri.h"
#include "engine/status.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"

namespace snapsink {

std::string meta::BackfillDoneKey(uint64_t version) { return "backfill/v" + std::to_string(version); }
std::string meta::PublishedAtKey(uint64_t generation) { return "published_at/" + std::to_string(generation); }
std::string meta::ProgressAtKey(std::string_view source) { return "progress_at/" + std::string(source); }
std::string meta::SplitProducerKey(std::string_view producer) { return kSplitProducerPrefix + std::string(producer); }

Result<std::optional<uint64_t>> Root::GetMetaU64(Txn* txn, std::string_view key) {
  std::string_view v;
  Status s = txn->Get(Table::kMeta, key, &v);
  if (s.IsNotFound()) return std::optional<uint64_t>();
  if (!s.ok()) return s;
  if (v.size() != 8) return Status::Corruption("malformed meta record " + std::string(key));
  return std::optional<uint64_t>(codec::GetU64(v.data()));
}

Status Root::PutMetaU64(Txn* txn, std::string_view key, uint64_t value) {
  std::string v;
  codec::PutU64(&v, value);
  return txn->Put(Table::kMeta, key, v);
}

Status Root::RaiseFormat(Txn* txn) { return RaiseFormatTo(txn, kProducerTimesFormat); }

Status Root::RaiseFormatTo(Txn* txn, uint32_t to) {
  SNAPSINK_ASSIGN_OR_RETURN(auto format, GetMetaU64(txn, meta::kFormat));
  if (format && *format >= to) return Status::OK();
  return PutMetaU64(txn, meta::kFormat, to);
}

namespace {

std::string ParentDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string HalfMade(const std::string& path, bool init_finishes) {
  return path + " is a half-made root from an interrupted init; " +
         (init_finishes ? "run snapsink init again to finish it (or remove it)"
                        : "remove it and run snapsink init again");
}

// True when path holds something only init makes (a crash's leftovers).
bool HasLayout(Env* env, const std::string& path) {
  for (const std::string& d : {filenames::InitStateDir(path), filenames::StateDir(path), filenames::StagingDir(path),
                               filenames::SnapshotsDir(path), filenames::ManifestsDir(path),
                               filenames::RejectsDir(path)}) {
    if (env->FileExists(d)) return true;
  }
  return false;
}

// Nothing was ever published from a root whose state fails to open this way:
// an init of an older snapsink stopped before its settings were committed.
bool NeverPublished(Env* env, const std::string& path) {
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::ManifestsDir(path), &names);
  return !env->FileExists(filenames::Current(path)) && (s.IsNotFound() || (s.ok() && names.empty()));
}

// Writes the settings into a new environment in dir and makes it durable.
Status BuildState(Env* env, const std::string& dir, const RootConfig& config, const MetricKinds& kinds) {
  SNAPSINK_RETURN_IF_ERROR(env->CreateDir(dir));
  {
    std::unique_ptr<Store> store;
    SNAPSINK_RETURN_IF_ERROR(Store::Open(env->LocalPath(dir), /*create=*/true, &store));
    std::unique_ptr<Txn> txn;
    SNAPSINK_RETURN_IF_ERROR(store->BeginWrite(&txn));
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kFormat, kProducerTimesFormat));
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kWindowMs, static_cast<uint64_t>(config.window_ms)));
    SNAPSINK_RETURN_IF_ERROR(
        Root::PutMetaU64(txn.get(), meta::kLatenessMs, static_cast<uint64_t>(config.lateness_ms)));
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kOnGap, static_cast<uint64_t>(config.on_gap)));
    SNAPSINK_RETURN_IF_ERROR(
        Root::PutMetaU64(txn.get(), meta::kIdHorizonMs, static_cast<uint64_t>(config.id_horizon_ms)));
    SNAPSINK_RETURN_IF_ERROR(
        Root::PutMetaU64(txn.get(), meta::kProducerRetentionMs, static_cast<uint64_t>(config.producer_retention_ms)));
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kRetainMs, static_cast<uint64_t>(config.retain_ms)));
    SNAPSINK_RETURN_IF_ERROR(
        Root::PutMetaU64(txn.get(), meta::kMaxAheadMs, static_cast<uint64_t>(config.max_ahead_ms)));
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kCurrentGeneration, 0));
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kLastGeneration, 0));
    for (const auto& [metric, spec] : kinds) SNAPSINK_RETURN_IF_ERROR(SetMetricKind(txn.get(), metric, spec));
    SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  }
  return env->SyncDir(dir);  // the names data.mdb and lock.mdb
}

}  // namespace

// init's commit point: the rename of state.init-tmp/ to state/. Everything
// before it (ROOT and its empty layout directories, LOCK, the environment
// in state.init-tmp/) is durable first; a failure removes what this call
// made, a crash leaves a half-made root that a rerun finishes. The caller
// checks the settings (api::Sink::Create, naming the public fields).
Status Root::Init(Env* env, const std::string& path, RootConfig config, const MetricKinds& kinds) {
  if (config.lateness_ms < 0) config.lateness_ms = config.window_ms;
  return InitWithState(env, path, [&](const std::string& dir) { return BuildState(env, dir, config, kinds); });
}

Status Root::InitWithState(Env* env, const std::string& path,
                           const std::function<Status(const std::string& dir)>& build) {
  const std::string state = filenames::StateDir(path), building = filenames::InitStateDir(path);
  bool existed = false;
  SNAPSINK_RETURN_IF_ERROR(env->Exists(path, &existed));
  if (existed && env->FileExists(state)) {
    std::unique_ptr<Root> root;
    Status s = Open(env, path, Access::kReadOnly, &root);
    return s.ok() ? Status::InvalidArgument(path + " is already a snapsink root") : s;
  }
  std::error_code ec;  // read-only, so not through Env
  if (existed && !IsBucketPath(path) && !std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(path + " exists and is not a directory; init needs a new or empty directory");
  }
  SNAPSINK_RETURN_IF_ERROR(env->CreateDirs(path));
  if (existed) {
    // Never spread a root over someone else's files. What an interrupted init
    // left (the layout's own names) is fine: the rerun finishes it.
    std::vector<std::string> children;
    SNAPSINK_RETURN_IF_ERROR(env->GetChildren(path, &children));
    for (const std::string& c : children) {
      if (!filenames::IsRootEntry(c)) {
        return Status::InvalidArgument(path + " is not empty (it holds " + c +
                                       ") and is not a snapsink root; init needs a new or empty directory");
      }
    }
  }
  std::vector<std::string> made;  // what to remove if this init fails, deepest last
  if (!existed) made.push_back(path);
  if (!env->FileExists(filenames::LockFile(path))) made.push_back(filenames::LockFile(path));
  std::unique_ptr<FileLock> lock;
  Status s = LockRoot(env, path, &lock);
  if (s.IsLocked()) return s;  // another init (or writer) has it
  // Another init finished while this one waited for nothing: its root stays.
  if (s.ok() && env->FileExists(state)) return Status::InvalidArgument(path + " is already a snapsink root");
  if (s.ok() && !existed) s = env->SyncDir(ParentDir(path));
  if (s.ok()) s = env->RemoveTree(building);  // a crashed init's
  for (const std::string& dir : {filenames::StagingDir(path), filenames::SnapshotsDir(path),
                                 filenames::ManifestsDir(path), filenames::RejectsDir(path)}) {
    if (!s.ok()) break;
    bool there = false;
    s = env->Exists(dir, &there);  // in a bucket, an error is never "missing" (nor removed on failure)
    if (!s.ok()) break;
    if (!there) made.push_back(dir);
    s = env->CreateDir(dir);
  }
  if (s.ok()) made.push_back(building);
  if (s.ok()) s = env->SyncDir(path);
  if (s.ok()) MaybeCrash("init.after_layout");
  if (s.ok()) s = build(building);
  if (s.ok()) s = env->SyncDir(path);
  if (s.ok()) MaybeCrash("init.before_rename");
  bool renamed = false;
  if (s.ok()) renamed = (s = env->RenameFile(building, state)).ok();
  if (s.ok()) s = env->SyncDir(path);
  if (s.ok()) return Status::OK();
  // Changes nothing when it fails: take back the rename, then what was made.
  if (renamed) (void)env->RenameFile(state, building);
  for (auto it = made.rbegin(); it != made.rend(); ++it) (void)env->RemoveTree(*it);
  if (!made.empty()) (void)env->SyncDir(existed ? path : ParentDir(path));
  return s;
}

Status Root::CheckIsRoot(Env* env, const std::string& path) {
  if (IsBucketPath(path)) return CheckBucketRoot(env, path);
  const std::string state = filenames::StateDir(path);
  if (!env->FileExists(path)) {
    return Status::NotFound("root " + path + " does not exist (snapsink init " + path + " creates one)");
  }
  if (!env->FileExists(filenames::LmdbDataFile(state))) {
    if (!env->FileExists(state) && HasLayout(env, path)) return Status::NotFound(HalfMade(path, true));
    if (env->FileExists(state)) return Status::NotFound(HalfMade(path, false));
    return Status::NotFound(path + " is not a snapsink root (no state/; create one with snapsink init)");
  }
  return Status::OK();
}

Status Root::Open(Env* env, const std::string& path, Access access, std::unique_ptr<Root>* out) {
  const bool writer = access == Access::kWriter;
  const bool read_only = access == Access::kReadOnly;
  if (IsBucketPath(path)) {
    // It reads ROOT/settings (a missing one is CheckBucketRoot's error): no second GET of it.
    SNAPSINK_RETURN_IF_ERROR(PrepareBucketState(env, path, writer || !read_only));
  } else {
    SNAPSINK_RETURN_IF_ERROR(CheckIsRoot(env, path));
  }
  const std::string state = filenames::StateDir(path);
  std::unique_ptr<Root> root(new Root);
  root->env_ = env;
  root->path_ = path;
  if (writer) SNAPSINK_RETURN_IF_ERROR(LockRoot(env, path, &root->lock_));
  uint64_t data_size = 1;
  (void)env->GetFileSize(filenames::LmdbDataFile(state), &data_size);
  if (data_size == 0 && NeverPublished(env, path)) return Status::NotFound(HalfMade(path, false));
  const std::string lmdb = env->LocalPath(state);
  Status s = read_only ? Store::OpenReadOnly(lmdb, &root->store_) : Store::Open(lmdb, /*create=*/false, &root->store_);
  if (!s.ok()) {
    // An older init created state/ in place and could stop before its first commit.
    if ((s.IsNotFound() || s.IsCorruption()) && NeverPublished(env, path)) {
      return Status::NotFound(HalfMade(path, false) + " (" + s.message() + ")");
    }
    return s;
  }
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store_->BeginRead(&txn));
  SNAPSINK_ASSIGN_OR_RETURN(auto format, GetMetaU64(txn.get(), meta::kFormat));
  if (!format) {
    if (NeverPublished(env, path)) return Status::NotFound(HalfMade(path, false));
    return Status::Corruption(path + ": state has no format version");
  }
  if (*format > kNewestFormat) {
    return Status::InvalidArgument(path + " was written by a newer snapsink (format " + std::to_string(*format) +
                                   ", this build reads up to " + std::to_string(kNewestFormat) + ")");
  }
  if (*format < kOldestReadableFormat) {
    return Status::InvalidArgument(path + " was written by an older snapsink (format " + std::to_string(*format) +
                                   ", with 32-bit versions); this build reads format " +
                                   std::to_string(kProducerTimesFormat) +
                                   ": convert it in place with Sink::Upgrade (a dry run first shows what it changes)");
  }
  SNAPSINK_ASSIGN_OR_RETURN(auto window, GetMetaU64(txn.get(), meta::kWindowMs));
  SNAPSINK_ASSIGN_OR_RETURN(auto lateness, GetMetaU64(txn.get(), meta::kLatenessMs));
  SNAPSINK_ASSIGN_OR_RETURN(auto on_gap, GetMetaU64(txn.get(), meta::kOnGap));
  if (!window || !lateness || !on_gap) return Status::Corruption(path + ": state has no settings");
  root->config_.window_ms = static_cast<int64_t>(*window);
  root->config_.lateness_ms = static_cast<int64_t>(*lateness);
  root->config_.on_gap = *on_gap == 1 ? OnGap::kStop : OnGap::kAccept;
  SNAPSINK_ASSIGN_OR_RETURN(auto horizon, GetMetaU64(txn.get(), meta::kIdHorizonMs));
  SNAPSINK_ASSIGN_OR_RETURN(auto retention, GetMetaU64(txn.get(), meta::kProducerRetentionMs));
  if (horizon) root->config_.id_horizon_ms = static_cast<int64_t>(*horizon);
  if (retention) root->config_.producer_retention_ms = static_cast<int64_t>(*retention);
  // Absent in a root made before these settings: keep every window, no limit.
  SNAPSINK_ASSIGN_OR_RETURN(auto retain, GetMetaU64(txn.get(), meta::kRetainMs));
  SNAPSINK_ASSIGN_OR_RETURN(auto max_ahead, GetMetaU64(txn.get(), meta::kMaxAheadMs));
  root->config_.retain_ms = static_cast<int64_t>(retain.value_or(0));
  root->config_.max_ahead_ms = static_cast<int64_t>(max_ahead.value_or(0));
  txn.reset();
  if (writer) SNAPSINK_RETURN_IF_ERROR(root->store_->CreateMissingTables());
  *out = std::move(root);
  return Status::OK();
}

Status Root::ReloadHistorySettings() {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(store_->BeginRead(&txn));
  SNAPSINK_ASSIGN_OR_RETURN(auto retain, GetMetaU64(txn.get(), meta::kRetainMs));
  SNAPSINK_ASSIGN_OR_RETURN(auto max_ahead, GetMetaU64(txn.get(), meta::kMaxAheadMs));
  config_.retain_ms = static_cast<int64_t>(retain.value_or(0));
  config_.max_ahead_ms = static_cast<int64_t>(max_ahead.value_or(0));
  return Status::OK();
}

Status Root::SetHistorySettings(std::optional<int64_t> retain_ms, std::optional<int64_t> max_ahead_ms) {
  if (lock_ == nullptr) return Status::InvalidArgument("changing settings needs the writer lock");
  if (retain_ms && *retain_ms < 0) return OutOfRange("retain_ms", *retain_ms, "must not be negative");
  if (max_ahead_ms && *max_ahead_ms < 0) {
    return OutOfRange("max_ahead_ms", *max_ahead_ms, "must not be negative");
  }
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(store_->BeginWrite(&txn));
  if (retain_ms) SNAPSINK_RETURN_IF_ERROR(PutMetaU64(txn.get(), meta::kRetainMs, static_cast<uint64_t>(*retain_ms)));
  if (max_ahead_ms) {
    SNAPSINK_RETURN_IF_ERROR(PutMetaU64(txn.get(), meta::kMaxAheadMs, static_cast<uint64_t>(*max_ahead_ms)));
  }
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  if (retain_ms) config_.retain_ms = *retain_ms;
  if (max_ahead_ms) config_.max_ahead_ms = *max_ahead_ms;
  return Status::OK();
}

}  // namespace snapsink
