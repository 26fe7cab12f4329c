#include "engine/root.h"

#include <unistd.h>

#include "engine/filenames.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"

namespace snapsink {

std::string meta::BackfillDoneKey(uint32_t version) { return "backfill/v" + std::to_string(version); }
std::string meta::PublishedAtKey(uint64_t generation) { return "published_at/" + std::to_string(generation); }

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

Status LockRoot(Env* env, const std::string& path, std::unique_ptr<FileLock>* lock) {
  const std::string lock_path = filenames::LockFile(path);
  Status s = env->LockFile(lock_path, lock);
  if (s.code() == Status::Code::kLocked) {
    std::string holder;
    (void)env->ReadFileToString(lock_path, &holder);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return Status::Locked("root " + path + " is locked by another writer" +
                          (holder.empty() ? std::string() : " (" + holder + ")"));
  }
  SNAPSINK_RETURN_IF_ERROR(s);
  // Name the holder for whoever is refused next; the lock itself is the fcntl lock.
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(lock_path, &f));
  SNAPSINK_RETURN_IF_ERROR(f->Append("pid " + std::to_string(::getpid()) + "\n"));
  return f->Close();
}

Status Root::Init(Env* env, const std::string& path, RootConfig config) {
  if (config.window_ms <= 0) return Status::InvalidArgument("--window must be greater than zero");
  if (config.lateness_ms < 0) config.lateness_ms = config.window_ms;
  SNAPSINK_RETURN_IF_ERROR(env->CreateDirs(path));
  if (env->FileExists(filenames::Join(filenames::StateDir(path), "data.mdb"))) {
    return Status::InvalidArgument(path + " is already a snapsink root");
  }
  // Never spread a root over someone else's files. What an interrupted init
  // left (the layout's own names) is fine: the rerun finishes it.
  std::vector<std::string> children;
  SNAPSINK_RETURN_IF_ERROR(env->GetChildren(path, &children));
  for (const std::string& c : children) {
    if (c == "." || c == "..") continue;
    if (!filenames::IsRootEntry(c)) {
      return Status::InvalidArgument(path + " is not empty (it holds " + c +
                                     ") and is not a snapsink root; init needs a new or empty directory");
    }
  }
  std::unique_ptr<FileLock> lock;
  SNAPSINK_RETURN_IF_ERROR(LockRoot(env, path, &lock));
  for (const std::string& dir : {filenames::StagingDir(path), filenames::SnapshotsDir(path),
                                 filenames::ManifestsDir(path), filenames::RejectsDir(path),
                                 filenames::StateDir(path)}) {
    SNAPSINK_RETURN_IF_ERROR(env->CreateDir(dir));
  }
  std::unique_ptr<Store> store;
  SNAPSINK_RETURN_IF_ERROR(Store::Open(filenames::StateDir(path), /*create=*/true, &store));
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(store->BeginWrite(&txn));
  SNAPSINK_RETURN_IF_ERROR(PutMetaU64(txn.get(), meta::kFormat, kFormatVersion));
  SNAPSINK_RETURN_IF_ERROR(PutMetaU64(txn.get(), meta::kWindowMs, static_cast<uint64_t>(config.window_ms)));
  SNAPSINK_RETURN_IF_ERROR(PutMetaU64(txn.get(), meta::kLatenessMs, static_cast<uint64_t>(config.lateness_ms)));
  SNAPSINK_RETURN_IF_ERROR(PutMetaU64(txn.get(), meta::kOnGap, static_cast<uint64_t>(config.on_gap)));
  SNAPSINK_RETURN_IF_ERROR(PutMetaU64(txn.get(), meta::kCurrentGeneration, 0));
  SNAPSINK_RETURN_IF_ERROR(PutMetaU64(txn.get(), meta::kLastGeneration, 0));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  return env->SyncDir(path);
}

Status Root::Open(Env* env, const std::string& path, bool writer, std::unique_ptr<Root>* out) {
  const std::string state = filenames::StateDir(path);
  if (!env->FileExists(path)) return Status::NotFound("root " + path + " does not exist");
  if (!env->FileExists(filenames::Join(state, "data.mdb"))) {
    return Status::NotFound(path + " is not a snapsink root (no state/; create one with snapsink init)");
  }
  std::unique_ptr<Root> root(new Root);
  root->env_ = env;
  root->path_ = path;
  if (writer) SNAPSINK_RETURN_IF_ERROR(LockRoot(env, path, &root->lock_));
  SNAPSINK_RETURN_IF_ERROR(Store::Open(state, /*create=*/false, &root->store_));
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store_->BeginRead(&txn));
  SNAPSINK_ASSIGN_OR_RETURN(auto format, GetMetaU64(txn.get(), meta::kFormat));
  if (!format) return Status::Corruption(path + ": state has no format version");
  if (*format > kFormatVersion) {
    return Status::InvalidArgument(path + " was written by a newer snapsink (format " + std::to_string(*format) +
                                   ", this build reads up to " + std::to_string(kFormatVersion) + ")");
  }
  SNAPSINK_ASSIGN_OR_RETURN(auto window, GetMetaU64(txn.get(), meta::kWindowMs));
  SNAPSINK_ASSIGN_OR_RETURN(auto lateness, GetMetaU64(txn.get(), meta::kLatenessMs));
  SNAPSINK_ASSIGN_OR_RETURN(auto on_gap, GetMetaU64(txn.get(), meta::kOnGap));
  if (!window || !lateness || !on_gap) return Status::Corruption(path + ": state has no settings");
  root->config_.window_ms = static_cast<int64_t>(*window);
  root->config_.lateness_ms = static_cast<int64_t>(*lateness);
  root->config_.on_gap = *on_gap == 1 ? OnGap::kStop : OnGap::kAccept;
  *out = std::move(root);
  return Status::OK();
}

}  // namespace snapsink
