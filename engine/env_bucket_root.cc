#include "engine/env_bucket_root.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "engine/crash_point.h"
#include "engine/s3/s3_uri.h"

namespace snapsink {

namespace {

// How many times a CURRENT swap that lost its compare-and-swap (or a
// writer epoch claim that lost its create-only PUT) starts again from a
// fresh read.
constexpr int kSwapRounds = 8;

// How many uploads into the bucket are in flight at once (UploadEach).
constexpr size_t kUploadsInFlight = 4;

// The first component of a path under a root that lives on the local disk.
bool LocalEntry(std::string_view first) {
  for (std::string_view n :
       {"state", "state.init-tmp", "state.checkpoint", "staging", "LOCK", "LOCK.follower", "LOCK.queue", "rejects"}) {
    if (first == n) return true;
  }
  return false;
}

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// True when a component of rel ends with ".tmp": a temp file, or a file in a
// temp directory (a seal record being written), both on the writer's disk.
bool InTemp(std::string_view rel) {
  while (!rel.empty()) {
    const size_t slash = rel.find('/');
    if (EndsWith(rel.substr(0, slash), ".tmp")) return true;
    if (slash == std::string_view::npos) break;
    rel.remove_prefix(slash + 1);
  }
  return false;
}

std::string Parent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The generation a CURRENT line names (0 when it names none).
uint64_t GenerationOf(std::string_view current) {
  uint64_t g = 0;
  for (char c : current) {
    if (c < '0' || c > '9') break;
    g = g * 10 + static_cast<uint64_t>(c - '0');
  }
  return g;
}

// A reader's pin of a generation, or gc's test of one, on an object in the
// bucket: a bucket has no locks, and gc there cannot see readers on other
// machines (it keeps --keep-generations; README, A root in a bucket).
class NoLock : public FileLock {};

std::string QuotedLine(std::string_view current) {
  std::string s(current);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return "\"" + s + "\"";
}

std::string EpochName(uint64_t epoch) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%020llu", static_cast<unsigned long long>(epoch));
  return buf;
}

bool ParseEpochName(std::string_view name, uint64_t* epoch) {
  if (name.size() != 20) return false;
  uint64_t e = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
    e = e * 10 + static_cast<uint64_t>(c - '0');
  }
  *epoch = e;
  return true;
}

// A local file's bytes, mapped read-only for an upload: a staged snapshot
// of many megabytes goes to the wire (and its SHA-256) from the page cache,
// not through a copy into a fresh heap buffer first.
class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile() {
    if (base_ != nullptr) ::munmap(base_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  Status Open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error(path, "open");
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const Status s = Error(path, "stat");
      ::close(fd);
      return s;
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p == MAP_FAILED) {
        const Status s = Error(path, "mmap");
        ::close(fd);
        return s;
      }
      base_ = p;
    }
    ::close(fd);
    return Status::OK();
  }
  std::string_view bytes() const { return {static_cast<const char*>(base_), base_ == nullptr ? 0 : size_}; }

 private:
  static Status Error(const std::string& path, const char* what) {
    const int e = errno;
    std::string msg = path + ": " + what + ": " + std::strerror(e);
    return e == ENOENT ? Status::NotFound(msg) : Status::IOError(msg);
  }
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

BucketRootEnv::BucketRootEnv(std::string root, std::string state_dir, S3Config config)
    : root_(std::move(root)), state_dir_(std::move(state_dir)), bucket_(std::move(config)) {
  if (state_dir_.empty()) {
    char tmpl[] = "/tmp/snapsink-bucket-reader-XXXXXX";
    const char* made = mkdtemp(tmpl);
    state_dir_ = made != nullptr ? made : "/tmp/snapsink-bucket-reader";
    scratch_ = true;
  }
}

BucketRootEnv::~BucketRootEnv() {
  if (scratch_) (void)Env::Default()->RemoveTree(state_dir_);
}

bool BucketRootEnv::Local(const std::string& path, std::string* local) const {
  if (path.size() <= root_.size() + 1 || path.compare(0, root_.size(), root_) != 0 || path[root_.size()] != '/') {
    if (IsBucketPath(path)) return false;
    *local = path;  // not under the root and not in a bucket: an ordinary local path
    return true;
  }
  const std::string rel = path.substr(root_.size() + 1);
  const std::string first = rel.substr(0, rel.find('/'));
  if (!LocalEntry(first) && !InTemp(rel)) return false;
  *local = state_dir_ + "/" + rel;
  return true;
}

std::string BucketRootEnv::LocalPath(const std::string& path) {
  std::string local;
  return Local(path, &local) ? local : path;
}

Status BucketRootEnv::NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) {
  std::string local;
  if (!Local(path, &local)) return bucket_.NewWritableFile(path, out);
  SNAPSINK_RETURN_IF_ERROR(Env::Default()->CreateDirs(Parent(local)));
  return Env::Default()->NewWritableFile(local, out);
}

Status BucketRootEnv::NewAppendableFile(const std::string& path, std::unique_ptr<WritableFile>* out) {
  std::string local;
  if (!Local(path, &local)) return bucket_.NewAppendableFile(path, out);
  SNAPSINK_RETURN_IF_ERROR(Env::Default()->CreateDirs(Parent(local)));
  return Env::Default()->NewAppendableFile(local, out);
}

Status BucketRootEnv::NewRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out) {
  std::string local;
  return Local(path, &local) ? Env::Default()->NewRandomAccessFile(local, out) : bucket_.NewRandomAccessFile(path, out);
}

Status BucketRootEnv::ReadFileToString(const std::string& path, std::string* out) {
  std::string local;
  return Local(path, &local) ? Env::Default()->ReadFileToString(local, out) : bucket_.ReadFileToString(path, out);
}

bool BucketRootEnv::FileExists(const std::string& path) {
  std::string local;
  return Local(path, &local) ? Env::Default()->FileExists(local) : bucket_.FileExists(path);
}

Status BucketRootEnv::Exists(const std::string& path, bool* exists) {
  std::string local;
  return Local(path, &local) ? Env::Default()->Exists(local, exists) : bucket_.Exists(path, exists);
}

Status BucketRootEnv::GetFileSize(const std::string& path, uint64_t* size) {
  std::string local;
  return Local(path, &local) ? Env::Default()->GetFileSize(local, size) : bucket_.GetFileSize(path, size);
}

Status BucketRootEnv::GetChildren(const std::string& dir, std::vector<std::string>* names) {
  std::string local;
  if (Local(dir, &local)) return Env::Default()->GetChildren(local, names);
  SNAPSINK_RETURN_IF_ERROR(bucket_.GetChildren(dir, names));
  if (dir != root_) return Status::OK();
  // The root itself: its entries in the bucket and those on this disk.
  std::vector<std::string> here;
  if (Env::Default()->GetChildren(state_dir_, &here).ok()) {
    for (const std::string& n : here) {
      if (LocalEntry(n)) names->push_back(n);
    }
  }
  std::sort(names->begin(), names->end());
  names->erase(std::unique(names->begin(), names->end()), names->end());
  return Status::OK();
}

Status BucketRootEnv::CreateDir(const std::string& path) {
  std::string local;
  if (path == root_) return Env::Default()->CreateDirs(state_dir_);
  return Local(path, &local) ? Env::Default()->CreateDirs(local) : bucket_.CreateDir(path);
}

Status BucketRootEnv::CreateDirs(const std::string& path) { return CreateDir(path); }

Status BucketRootEnv::RemoveFile(const std::string& path) {
  std::string local;
  return Local(path, &local) ? Env::Default()->RemoveFile(local) : bucket_.RemoveFile(path);
}

Status BucketRootEnv::RemoveTree(const std::string& path) {
  std::string local;
  return Local(path, &local) ? Env::Default()->RemoveTree(local) : bucket_.RemoveTree(path);
}

Status BucketRootEnv::Upload(const std::string& local, const std::string& to) {
  Env* disk = Env::Default();
  std::vector<std::string> files;
  if (disk->GetChildren(local, &files).ok()) {
    // A directory (a staged snapshot, a partition's seal record): every file,
    // manifest.json or seal.json last, so one whose manifest or seal.json is
    // in the bucket is whole.
    // The others go up a few at once (each PUT waits on the server far more
    // than on this machine); the last ones only when all of them are in.
    const auto last = std::stable_partition(files.begin(), files.end(), [](const std::string& n) {
      return n != "manifest.json" && n != "seal.json";
    });
    SNAPSINK_RETURN_IF_ERROR(UploadFiles(local, to, {files.begin(), last}));
    SNAPSINK_RETURN_IF_ERROR(UploadFiles(local, to, {last, files.end()}));
    // The local copy goes, its manifest.json or seal.json first: a copy
    // left without it (a crash part way through the removal) is one the
    // bucket holds whole (the publish's rerun asks the bucket then).
    for (auto it = last; it != files.end(); ++it) SNAPSINK_RETURN_IF_ERROR(disk->RemoveFile(local + "/" + *it));
    MaybeCrash("bucket.removing_upload");
    return disk->RemoveTree(local);
  }
  if (to == root_ + "/CURRENT") {
    std::string bytes;
    SNAPSINK_RETURN_IF_ERROR(disk->ReadFileToString(local, &bytes));
    SNAPSINK_RETURN_IF_ERROR(SwapCurrent(bytes));
  } else {
    MappedFile file;
    SNAPSINK_RETURN_IF_ERROR(file.Open(local));
    SNAPSINK_RETURN_IF_ERROR(bucket_.PutCreateOnly(to, file.bytes()));
  }
  return disk->RemoveFile(local);
}

Status BucketRootEnv::UploadFiles(const std::string& local, const std::string& to,
                                  const std::vector<std::string>& names) {
  return UploadEach(names.size(), [&](size_t i) {
    MappedFile file;
    SNAPSINK_RETURN_IF_ERROR(file.Open(local + "/" + names[i]));
    SNAPSINK_RETURN_IF_ERROR(bucket_.PutCreateOnly(to + "/" + names[i], file.bytes()));
    MaybeCrash("bucket.upload_file");
    return Status::OK();
  });
}

Status BucketRootEnv::RenameFile(const std::string& from, const std::string& to) {
  std::string lfrom, lto;
  const bool from_local = Local(from, &lfrom), to_local = Local(to, &lto);
  if (from_local && to_local) return Env::Default()->RenameFile(lfrom, lto);
  if (from_local) return Upload(lfrom, to);
  return bucket_.RenameFile(from, to);  // refused: no rename in a bucket
}

Status BucketRootEnv::TruncateFile(const std::string& path, uint64_t size) {
  std::string local;
  return Local(path, &local) ? Env::Default()->TruncateFile(local, size) : bucket_.TruncateFile(path, size);
}

Status BucketRootEnv::SyncDir(const std::string& dir) {
  std::string local;
  if (dir == root_) return Env::Default()->SyncDir(state_dir_);
  return Local(dir, &local) ? Env::Default()->SyncDir(local) : bucket_.SyncDir(dir);
}

Status BucketRootEnv::LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) {
  std::string local;
  if (!Local(path, &local)) {
    *lock = std::make_unique<NoLock>();
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(Env::Default()->CreateDirs(Parent(local)));
  SNAPSINK_RETURN_IF_ERROR(Env::Default()->LockFile(local, lock));
  if (path != root_ + "/LOCK" || scratch_) return Status::OK();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (shared_) return Status::OK();  // many publishers: fenced at the swap, not by epochs
  }
  Status s = ClaimEpoch();
  if (!s.ok()) lock->reset();
  return s;
}

Status BucketRootEnv::LockFileShared(const std::string& path, std::unique_ptr<FileLock>* lock) {
  std::string local;
  if (!Local(path, &local)) {
    *lock = std::make_unique<NoLock>();
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(Env::Default()->CreateDirs(Parent(local)));
  return Env::Default()->LockFileShared(local, lock);
}

Status BucketRootEnv::ReadFileVersioned(const std::string& path, std::string* data, std::string* version) {
  std::string local;
  if (Local(path, &local)) return Env::ReadFileVersioned(path, data, version);
  return bucket_.ReadFileVersioned(path, data, version);
}

Status BucketRootEnv::ReplaceFileIfVersion(const std::string& path, std::string_view data, const std::string& version,
                                           std::string* new_version) {
  std::string local;
  if (Local(path, &local)) return Env::ReplaceFileIfVersion(path, data, version, new_version);
  return bucket_.ReplaceFileIfVersion(path, data, version, new_version);
}

void BucketRootEnv::ExpectCurrent(std::string built_on) {
  std::lock_guard<std::mutex> l(mu_);
  shared_ = true;
  built_on_ = std::move(built_on);
}

void BucketRootEnv::SharePublishing() {
  std::lock_guard<std::mutex> l(mu_);
  shared_ = true;
}

Status BucketRootEnv::ModifiedTimes(const std::string& dir, std::map<std::string, int64_t>* out) {
  std::string bucket, key;
  SNAPSINK_RETURN_IF_ERROR(ParseBucketPath(dir, &bucket, &key));
  const std::string prefix = key.empty() || key.back() == '/' ? key : key + "/";
  std::vector<S3ObjectInfo> objects;
  SNAPSINK_RETURN_IF_ERROR(bucket_.client()->List(bucket, prefix, "", &objects, nullptr));
  out->clear();
  for (const S3ObjectInfo& o : objects) (*out)[o.key.substr(prefix.size())] = o.last_modified_ms;
  return Status::OK();
}

void BucketRootEnv::UseCache(std::unique_ptr<ObjectCache> cache) {
  cache_ = std::move(cache);
  bucket_.SetCache(cache_.get());
  // A part is named by the XXH64 of its bytes, which its reader checks.
  const std::string parts = root_.substr(root_.find('/', 5) + 1) + "/manifests/parts/";
  bucket_.SetNamedByContent([parts](const std::string& key) { return key.rfind(parts, 0) == 0; });
}

uint64_t BucketRootEnv::epoch() const {
  std::lock_guard<std::mutex> l(mu_);
  return epoch_;
}

Status BucketRootEnv::NewestEpoch(uint64_t* epoch, std::string* who) {
  std::vector<std::string> names;
  SNAPSINK_RETURN_IF_ERROR(bucket_.GetChildren(root_ + "/writers", &names));
  *epoch = 0;
  std::string newest;
  for (const std::string& n : names) {
    uint64_t e = 0;
    if (ParseEpochName(n, &e) && e > *epoch) {
      *epoch = e;
      newest = n;
    }
  }
  if (who == nullptr) return Status::OK();
  who->clear();
  if (*epoch != 0) (void)bucket_.ReadFileToString(root_ + "/writers/" + newest, who);
  while (!who->empty() && who->back() == '\n') who->pop_back();
  return Status::OK();
}

Status BucketRootEnv::ClaimEpoch() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (epoch_ != 0) return Status::OK();  // a follower's lock taken again: the same writer
  }
  char host[256] = {0};
  (void)gethostname(host, sizeof(host) - 1);
  const std::string who = std::string("host ") + host + " pid " + std::to_string(getpid()) + " state " + state_dir_;
  for (int round = 0; round < kSwapRounds; ++round) {
    uint64_t newest = 0;
    SNAPSINK_RETURN_IF_ERROR(NewestEpoch(&newest, nullptr));
    Status s = bucket_.PutCreateOnly(root_ + "/writers/" + EpochName(newest + 1), who + "\n");
    if (s.IsLocked()) continue;  // another writer took that epoch: read again
    SNAPSINK_RETURN_IF_ERROR(s);
    {
      std::lock_guard<std::mutex> l(mu_);
      epoch_ = newest + 1;
    }
    MaybeCrash("bucket.claimed_epoch");
    return Status::OK();
  }
  return Status::Locked(root_ + "/writers: other writers kept claiming epochs; try again");
}

Status BucketRootEnv::SwapCurrent(std::string_view data) {
  const std::string path = root_ + "/CURRENT";
  const uint64_t ours = GenerationOf(data);
  for (int round = 0; round < kSwapRounds; ++round) {
    std::string old, version;
    Status s = bucket_.ReadFileVersioned(path, &old, &version);
    if (s.IsNotFound()) {
      old.clear();
      version.clear();
    } else if (!s.ok()) {
      return s;
    }
    if (old == data) return Status::OK();  // already swapped (a rerun, a lost answer, a twin writer)
    bool shared = false;
    std::string built_on;
    {
      std::lock_guard<std::mutex> l(mu_);
      shared = shared_;
      built_on = built_on_;
    }
    if (shared && old != built_on) {
      return Status::Locked(path + ": not replaced: it names " +
                            (old.empty() ? std::string("nothing") : QuotedLine(old)) + ", this publish was built on " +
                            (built_on.empty() ? std::string("nothing") : QuotedLine(built_on)) +
                            "; another process published first");
    }
    const uint64_t mine = shared ? 0 : epoch();
    if (mine != 0) {
      uint64_t newest = 0;
      SNAPSINK_RETURN_IF_ERROR(NewestEpoch(&newest, nullptr));
      if (newest > mine) {
        std::string who;
        SNAPSINK_RETURN_IF_ERROR(NewestEpoch(&newest, &who));
        return Status::Locked(path + ": not replaced: this writer's epoch " + std::to_string(mine) +
                              " was fenced by epoch " + std::to_string(newest) + " (" + who +
                              "); another writer took the root");
      }
    }
    if (!shared && !old.empty() && GenerationOf(old) >= ours) {
      return Status::Locked(path + ": not replaced: it names " + QuotedLine(old) + ", this writer would name " +
                            QuotedLine(data) + "; another writer published into this root");
    }
    std::string new_version;
    s = bucket_.ReplaceFileIfVersion(path, data, version, &new_version);
    if (s.IsLocked()) continue;  // lost the race: decide again from a fresh read
    return s;
  }
  return Status::Locked(path + ": other writers kept replacing it; nothing was overwritten, try again");
}

Status UploadEach(size_t n, const std::function<Status(size_t)>& one) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first_error;
  auto work = [&] {
    for (size_t i = next++; i < n && !failed; i = next++) {
      Status s = one(i);
      if (!s.ok()) {
        std::lock_guard<std::mutex> l(mu);
        if (first_error.ok()) first_error = s;
        failed = true;
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min(n, kUploadsInFlight); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return first_error;
}

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::string> state_dirs;
  std::set<std::string> shared;  // SetBucketSharedPublishing
  std::map<std::string, api::BucketAccess> options;
  std::map<std::string, std::unique_ptr<BucketRootEnv>> envs;
};

Registry* TheRegistry() {
  static Registry* r = new Registry;  // never destroyed: Envs outlive every static user
  return r;
}

Status CheckRootPath(const std::string& path) {
  std::string bucket, key;
  SNAPSINK_RETURN_IF_ERROR(ParseBucketPath(path, &bucket, &key));
  if (bucket.empty() || key.empty() || path.back() == '/' || key.find("//") != std::string::npos) {
    return Status::InvalidArgument("root " + path + ": expected s3://BUCKET/PREFIX (a prefix, no trailing /)");
  }
  return Status::OK();
}

}  // namespace

Status SetBucketSharedPublishing(const std::string& path) {
  SNAPSINK_RETURN_IF_ERROR(CheckRootPath(path));
  Registry* r = TheRegistry();
  std::lock_guard<std::mutex> l(r->mu);
  r->shared.insert(path);
  auto it = r->envs.find(path);
  if (it != r->envs.end()) it->second->SharePublishing();
  return Status::OK();
}

Status SetBucketRootOptions(const std::string& path, const api::BucketAccess& options) {
  SNAPSINK_RETURN_IF_ERROR(CheckRootPath(path));
  Registry* r = TheRegistry();
  std::lock_guard<std::mutex> l(r->mu);
  if (r->envs.count(path) != 0 && !(r->options[path] == options)) {
    return Status::InvalidArgument(path + ": already opened with other endpoint, keys or cache settings");
  }
  r->options[path] = options;
  return Status::OK();
}

Status SetBucketStateDir(const std::string& path, const std::string& dir) {
  SNAPSINK_RETURN_IF_ERROR(CheckRootPath(path));
  Registry* r = TheRegistry();
  std::lock_guard<std::mutex> l(r->mu);
  auto it = r->envs.find(path);
  if (it != r->envs.end() && it->second->state_dir() != dir) {
    return Status::InvalidArgument(path + ": already opened with state directory " + it->second->state_dir());
  }
  r->state_dirs[path] = dir;
  return Status::OK();
}

ObjectCache* CacheOfRoot(const std::string& path) {
  Registry* r = TheRegistry();
  std::lock_guard<std::mutex> l(r->mu);
  auto it = r->envs.find(path);
  return it == r->envs.end() ? nullptr : it->second->cache();
}

Status EnvForRoot(const std::string& path, Env** out) {
  if (!IsBucketPath(path)) {
    *out = Env::Default();
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(CheckRootPath(path));
  Registry* r = TheRegistry();
  std::lock_guard<std::mutex> l(r->mu);
  auto it = r->envs.find(path);
  if (it == r->envs.end()) {
    const api::BucketAccess o = r->options[path];
    S3Config config;
    Status s = S3Config::FromEnvironment(&config, {o.endpoint, o.region, o.access_key_id, o.secret_access_key});
    if (!s.ok()) return Status::InvalidArgument("root " + path + ": " + s.message());
    std::unique_ptr<ObjectCache> cache;
    if (o.cache) {
      SNAPSINK_RETURN_IF_ERROR(ObjectCache::Open(o.cache_dir.empty() ? ObjectCache::DefaultDir() : o.cache_dir,
                                                 o.cache_bytes == 0 ? ObjectCache::kDefaultCapacity : o.cache_bytes,
                                                 &cache));
    }
    auto dir = r->state_dirs.find(path);
    it = r->envs
             .emplace(path, std::make_unique<BucketRootEnv>(path, dir == r->state_dirs.end() ? "" : dir->second,
                                                            std::move(config)))
             .first;
    if (r->shared.count(path) > 0) it->second->SharePublishing();
    if (cache) it->second->UseCache(std::move(cache));
    if (o.gc_min_age_ms >= 0) it->second->set_gc_min_age_ms(o.gc_min_age_ms);
  }
  *out = it->second.get();
  return Status::OK();
}

}  // namespace snapsink
