#include "tests/fault_env.h"

#include <algorithm>

#include <boost/filesystem.hpp>

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;

std::string Normalize(const std::string& p) {
  std::string s = fs::path(p).lexically_normal().generic_string();
  if (s.size() > 2 && s.compare(s.size() - 2, 2, "/.") == 0) s.resize(s.size() - 2);
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string Parent(const std::string& p) {
  std::string parent = fs::path(p).parent_path().generic_string();
  return Normalize(parent.empty() ? "." : parent);
}

bool IsUnder(const std::string& p, const std::string& dir) {
  return p == dir || (p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && p[dir.size()] == '/');
}

// p with its prefix `from` replaced by `to`. REQUIRES: IsUnder(p, from).
std::string Reroot(const std::string& p, const std::string& from, const std::string& to) {
  return to + p.substr(from.size());
}

}  // namespace

class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionEnv* env, std::unique_ptr<WritableFile> base,
                    std::shared_ptr<FaultInjectionEnv::FileState> state)
      : env_(env), base_(std::move(base)), state_(std::move(state)) {}

  Status Append(std::string_view data) override {
    SNAPSINK_RETURN_IF_ERROR(env_->CountOp("append", Path()));
    SNAPSINK_RETURN_IF_ERROR(base_->Append(data));
    std::lock_guard<std::mutex> l(env_->mu_);
    state_->size += data.size();
    return Status::OK();
  }
  Status Flush() override {
    SNAPSINK_RETURN_IF_ERROR(env_->CountOp("flush", Path()));
    return base_->Flush();
  }
  Status Sync() override {
    SNAPSINK_RETURN_IF_ERROR(env_->CountOp("sync", Path()));
    SNAPSINK_RETURN_IF_ERROR(base_->Sync());
    std::lock_guard<std::mutex> l(env_->mu_);
    state_->synced = state_->size;
    return Status::OK();
  }
  Status Close() override {
    SNAPSINK_RETURN_IF_ERROR(env_->CountOp("close", Path()));
    return base_->Close();
  }

 private:
  std::string Path() {
    std::lock_guard<std::mutex> l(env_->mu_);
    return state_->path;
  }
  FaultInjectionEnv* const env_;
  std::unique_ptr<WritableFile> base_;
  std::shared_ptr<FaultInjectionEnv::FileState> state_;
};

FaultInjectionEnv::FaultInjectionEnv(Env* base) : base_(base) {}
FaultInjectionEnv::~FaultInjectionEnv() = default;

void FaultInjectionEnv::FailAtOp(uint64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  fail_at_ = n;
  ops_ = 0;
  failed_ = false;
  once_ = false;
}

void FaultInjectionEnv::FailOnlyOp(uint64_t n) {
  FailAtOp(n);
  std::lock_guard<std::mutex> l(mu_);
  once_ = true;
}

uint64_t FaultInjectionEnv::mutating_ops() const {
  std::lock_guard<std::mutex> l(mu_);
  return ops_;
}

bool FaultInjectionEnv::failed() const {
  std::lock_guard<std::mutex> l(mu_);
  return failed_;
}

size_t FaultInjectionEnv::pending_names() const {
  std::lock_guard<std::mutex> l(mu_);
  return pending_.size();
}

size_t FaultInjectionEnv::files_with_unsynced_data() const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const auto& [path, f] : files_) n += f->size > f->synced ? 1 : 0;
  return n;
}

Status FaultInjectionEnv::CountOp(const char* what, const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  ++ops_;
  if (once_ ? ops_ == fail_at_ : (failed_ || (fail_at_ != 0 && ops_ >= fail_at_))) {
    failed_ = true;
    return Status::IOError(std::string("fault injection: ") + what + " " + path + " failed (operation " +
                           std::to_string(ops_) + ")");
  }
  return Status::OK();
}

std::shared_ptr<FaultInjectionEnv::FileState> FaultInjectionEnv::Track(const std::string& path, uint64_t durable_size) {
  auto state = std::make_shared<FileState>();
  state->path = path;
  state->size = durable_size;
  state->synced = durable_size;
  files_[path] = state;
  return state;
}

void FaultInjectionEnv::RenameTracked(const std::string& from, const std::string& to) {
  std::map<std::string, std::shared_ptr<FileState>> moved;
  for (auto it = files_.begin(); it != files_.end();) {
    if (IsUnder(it->first, to)) {  // replaced by the rename
      it = files_.erase(it);
    } else if (IsUnder(it->first, from)) {
      it->second->path = Reroot(it->first, from, to);
      moved[it->second->path] = it->second;
      it = files_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [p, f] : moved) files_[p] = f;
  for (PendingName& n : pending_) {
    if (IsUnder(n.path, from)) n.path = Reroot(n.path, from, to);
    if (n.kind == PendingName::kRename && IsUnder(n.from, from)) n.from = Reroot(n.from, from, to);
  }
}

void FaultInjectionEnv::ForgetUnder(const std::string& path) {
  for (auto it = files_.begin(); it != files_.end();) {
    it = IsUnder(it->first, path) ? files_.erase(it) : std::next(it);
  }
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const PendingName& n) { return IsUnder(n.path, path); }),
                 pending_.end());
}

Status FaultInjectionEnv::NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) {
  SNAPSINK_RETURN_IF_ERROR(CountOp("create", path));
  const std::string p = Normalize(path);
  const bool existed = base_->FileExists(path);
  std::unique_ptr<WritableFile> file;
  SNAPSINK_RETURN_IF_ERROR(base_->NewWritableFile(path, &file));
  std::lock_guard<std::mutex> l(mu_);
  auto state = Track(p, 0);
  if (!existed) pending_.push_back(PendingName{PendingName::kCreateFile, p, "", false, ""});
  out->reset(new FaultWritableFile(this, std::move(file), std::move(state)));
  return Status::OK();
}

Status FaultInjectionEnv::NewAppendableFile(const std::string& path, std::unique_ptr<WritableFile>* out) {
  SNAPSINK_RETURN_IF_ERROR(CountOp("open for append", path));
  const std::string p = Normalize(path);
  const bool existed = base_->FileExists(path);
  uint64_t size = 0;
  if (existed) SNAPSINK_RETURN_IF_ERROR(base_->GetFileSize(path, &size));
  std::unique_ptr<WritableFile> file;
  SNAPSINK_RETURN_IF_ERROR(base_->NewAppendableFile(path, &file));
  std::lock_guard<std::mutex> l(mu_);
  auto it = files_.find(p);
  std::shared_ptr<FileState> state = it != files_.end() ? it->second : Track(p, size);
  if (!existed) pending_.push_back(PendingName{PendingName::kCreateFile, p, "", false, ""});
  out->reset(new FaultWritableFile(this, std::move(file), std::move(state)));
  return Status::OK();
}

Status FaultInjectionEnv::NewRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out) {
  return base_->NewRandomAccessFile(path, out);
}

Status FaultInjectionEnv::ReadFileToString(const std::string& path, std::string* out) {
  return base_->ReadFileToString(path, out);
}

bool FaultInjectionEnv::FileExists(const std::string& path) { return base_->FileExists(path); }

Status FaultInjectionEnv::GetFileSize(const std::string& path, uint64_t* size) { return base_->GetFileSize(path, size); }

Status FaultInjectionEnv::GetChildren(const std::string& dir, std::vector<std::string>* names) {
  return base_->GetChildren(dir, names);
}

Status FaultInjectionEnv::CreateDir(const std::string& path) {
  SNAPSINK_RETURN_IF_ERROR(CountOp("mkdir", path));
  const bool existed = base_->FileExists(path);
  SNAPSINK_RETURN_IF_ERROR(base_->CreateDir(path));
  std::lock_guard<std::mutex> l(mu_);
  if (!existed) pending_.push_back(PendingName{PendingName::kCreateDir, Normalize(path), "", false, ""});
  return Status::OK();
}

Status FaultInjectionEnv::CreateDirs(const std::string& path) {
  SNAPSINK_RETURN_IF_ERROR(CountOp("mkdir -p", path));
  std::vector<std::string> missing;  // deepest first
  for (std::string p = Normalize(path); !p.empty() && p != "." && p != "/" && !base_->FileExists(p); p = Parent(p)) {
    missing.push_back(p);
  }
  SNAPSINK_RETURN_IF_ERROR(base_->CreateDirs(path));
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    pending_.push_back(PendingName{PendingName::kCreateDir, *it, "", false, ""});
  }
  return Status::OK();
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  SNAPSINK_RETURN_IF_ERROR(CountOp("unlink", path));
  SNAPSINK_RETURN_IF_ERROR(base_->RemoveFile(path));
  std::lock_guard<std::mutex> l(mu_);
  ForgetUnder(Normalize(path));
  return Status::OK();
}

Status FaultInjectionEnv::RemoveTree(const std::string& path) {
  SNAPSINK_RETURN_IF_ERROR(CountOp("rm -rf", path));
  SNAPSINK_RETURN_IF_ERROR(base_->RemoveTree(path));
  std::lock_guard<std::mutex> l(mu_);
  ForgetUnder(Normalize(path));
  return Status::OK();
}

Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  SNAPSINK_RETURN_IF_ERROR(CountOp("rename", from + " -> " + to));
  PendingName n{PendingName::kRename, Normalize(to), Normalize(from), false, ""};
  boost::system::error_code ec;
  if (fs::is_regular_file(to, ec)) {
    // Keep the replaced bytes, to put them back if the rename is undone.
    n.replaced_file = true;
    SNAPSINK_RETURN_IF_ERROR(base_->ReadFileToString(to, &n.replaced));
  }
  SNAPSINK_RETURN_IF_ERROR(base_->RenameFile(from, to));
  std::lock_guard<std::mutex> l(mu_);
  RenameTracked(n.from, n.path);
  pending_.push_back(std::move(n));
  return Status::OK();
}

Status FaultInjectionEnv::TruncateFile(const std::string& path, uint64_t size) {
  SNAPSINK_RETURN_IF_ERROR(CountOp("truncate", path));
  SNAPSINK_RETURN_IF_ERROR(base_->TruncateFile(path, size));
  std::lock_guard<std::mutex> l(mu_);
  auto it = files_.find(Normalize(path));
  if (it != files_.end()) {
    it->second->size = size;
    it->second->synced = std::min(it->second->synced, size);
  }
  return Status::OK();
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  SNAPSINK_RETURN_IF_ERROR(CountOp("fsync dir", dir));
  SNAPSINK_RETURN_IF_ERROR(base_->SyncDir(dir));
  const std::string d = Normalize(dir);
  std::lock_guard<std::mutex> l(mu_);
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const PendingName& n) { return Parent(n.path) == d; }),
                 pending_.end());
  return Status::OK();
}

Status FaultInjectionEnv::LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) {
  return base_->LockFile(path, lock);
}

Status FaultInjectionEnv::LockFileShared(const std::string& path, std::unique_ptr<FileLock>* lock) {
  return base_->LockFileShared(path, lock);
}

void FaultInjectionEnv::MarkAllDurable() {
  std::lock_guard<std::mutex> l(mu_);
  files_.clear();
  pending_.clear();
}

Status FaultInjectionEnv::PowerCut() {
  std::lock_guard<std::mutex> l(mu_);
  Status first;
  auto note = [&](Status s) {
    if (first.ok() && !s.ok()) first = std::move(s);
  };
  // 1. Data: back to what the last Sync() covered.
  for (const auto& [path, f] : files_) {
    uint64_t size = 0;
    if (!base_->GetFileSize(path, &size).ok()) continue;  // gone meanwhile
    if (size > f->synced) note(base_->TruncateFile(path, f->synced));
  }
  // 2. Names, newest first.
  for (size_t i = pending_.size(); i-- > 0;) {
    const PendingName n = pending_[i];
    switch (n.kind) {
      case PendingName::kCreateFile:
        note(base_->RemoveFile(n.path));
        break;
      case PendingName::kCreateDir:
        note(base_->RemoveTree(n.path));
        break;
      case PendingName::kRename: {
        if (!base_->FileExists(n.path)) break;  // removed since: cannot undo
        // The old name's directory may have been removed since (removals
        // count as durable); the rename was not, so it comes back.
        note(base_->CreateDirs(Parent(n.from)));
        note(base_->RenameFile(n.path, n.from));
        if (n.replaced_file) {
          std::unique_ptr<WritableFile> f;
          Status s = base_->NewWritableFile(n.path, &f);
          if (s.ok()) s = f->Append(n.replaced);
          if (s.ok()) s = f->Sync();
          if (s.ok()) s = f->Close();
          note(s);
        }
        // Older entries named things by their post-rename paths.
        for (size_t j = 0; j < i; ++j) {
          PendingName& o = pending_[j];
          if (IsUnder(o.path, n.path)) o.path = Reroot(o.path, n.path, n.from);
          if (o.kind == PendingName::kRename && IsUnder(o.from, n.path)) o.from = Reroot(o.from, n.path, n.from);
        }
        break;
      }
    }
  }
  files_.clear();
  pending_.clear();
  fail_at_ = 0;
  failed_ = false;
  once_ = false;
  ops_ = 0;
  return first;
}

}  // namespace snapsink::testing
