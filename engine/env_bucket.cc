#include "engine/env_bucket.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>
#include <tuple>

#include "engine/crash_point.h"
#include "engine/s3/s3_uri.h"

namespace snapsink {

namespace {

// How many times a PUT whose outcome stayed unknown (or whose object
// vanished between the PUT and the re-read) is sent again, with a pause
// growing from S3Config::retry_base_ms before each new round.
constexpr int kResolveRounds = 8;

void PauseBeforeRound(const S3Config& config, int round) {
  if (round == 0) return;
  thread_local std::mt19937 rng(std::random_device{}());
  const int cap = std::min(config.retry_base_ms << std::min(round - 1, 10), 2000);
  std::uniform_int_distribution<int> jitter(cap / 2, cap);
  std::this_thread::sleep_for(std::chrono::milliseconds(jitter(rng)));
}

// A failed re-read after a PUT whose answer was lost: the outcome stays
// unknown, and the message says so (an IOError keeps its kind).
Status RereadFailed(const std::string& path, const Status& st) {
  if (!st.IsIOError()) return st;
  return Status::IOError(path + ": the answer to its PUT was lost and reading it back failed (nothing is assumed; "
                                "run the command again): " + st.message());
}

struct Where {
  std::string bucket;
  std::string key;
};

Status Locate(const std::string& path, Where* w) { return ParseBucketPath(path, &w->bucket, &w->key); }

// "s3://b/dir" -> "dir/" (the listing prefix of a directory); "" for the bucket.
std::string DirPrefix(const std::string& key) {
  if (key.empty()) return "";
  return key.back() == '/' ? key : key + "/";
}

Status NotInABucket(const std::string& path, const std::string& what) {
  return Status::IOError(path + ": " + what);
}

class BucketWritableFile : public WritableFile {
 public:
  BucketWritableFile(BucketEnv* env, std::string path) : env_(env), path_(std::move(path)) {}
  Status Append(std::string_view data) override {
    if (stored_) return Status::IOError(path_ + ": appended to after it was stored (objects are written once)");
    buf_.append(data);
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Sync() override { return Store(); }
  Status Close() override { return Store(); }

 private:
  Status Store() {
    if (stored_) return Status::OK();
    SNAPSINK_RETURN_IF_ERROR(env_->PutCreateOnly(path_, buf_));
    stored_ = true;
    buf_.clear();
    buf_.shrink_to_fit();
    return Status::OK();
  }
  BucketEnv* const env_;
  const std::string path_;
  std::string buf_;
  bool stored_ = false;
};

class BucketRandomAccessFile : public RandomAccessFile {
 public:
  BucketRandomAccessFile(S3Client* client, ObjectCache* cache, std::string name, Where where, uint64_t size)
      : client_(client), cache_(cache), name_(std::move(name)), where_(std::move(where)), size_(size) {}
  Status Read(uint64_t offset, size_t n, std::string* out) const override {
    if (cache_ == nullptr) return client_->GetRange(where_.bucket, where_.key, offset, n, out);
    const std::string entry = "range " + std::to_string(offset) + "+" + std::to_string(n) + " " + name_;
    if (cache_->Get(entry, out)) return Status::OK();
    SNAPSINK_RETURN_IF_ERROR(client_->GetRange(where_.bucket, where_.key, offset, n, out));
    cache_->Put(entry, *out);
    return Status::OK();
  }
  uint64_t Size() const override { return size_; }

 private:
  S3Client* const client_;
  ObjectCache* const cache_;
  const std::string name_;  // the object, for the cache's entry names
  const Where where_;
  const uint64_t size_;
};

// CURRENT is the one object replaced; every other is written once.
bool Replaced(const std::string& key) {
  const size_t slash = key.find_last_of('/');
  return (slash == std::string::npos ? key : key.substr(slash + 1)) == "CURRENT";
}

}  // namespace

BucketEnv::BucketEnv(S3Config config) : client_(std::move(config)) {}

Status BucketEnv::PutCreateOnly(const std::string& path, std::string_view data) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  MaybeCrash("bucket.before_create_put");
  for (int round = 0; round < kResolveRounds; ++round) {
    PauseBeforeRound(client_.config(), round);
    S3PutOutcome outcome;
    SNAPSINK_RETURN_IF_ERROR(client_.PutCreateOnly(w.bucket, w.key, data, &outcome, nullptr));
    if (outcome == S3PutOutcome::kStored) {
      MaybeCrash("bucket.after_create_put");
      return Status::OK();
    }
    // It exists, or the answer was lost: what is there now decides.
    std::string existing;
    const Status st = client_.Get(w.bucket, w.key, &existing, nullptr);
    if (st.IsNotFound()) continue;  // removed since, or never stored: PUT again
    if (!st.ok()) return RereadFailed(path, st);
    if (existing == data) {
      MaybeCrash("bucket.after_create_put");
      return Status::OK();  // ours (a lost answer), or an identical earlier write
    }
    return Status::Locked(path + ": already exists with other bytes (" + std::to_string(existing.size()) +
                          " bytes, not the " + std::to_string(data.size()) +
                          " being written): objects named by the work are written once, never replaced");
  }
  return Status::IOError(path + ": the outcome of its create-only PUT stayed unknown after " +
                         std::to_string(kResolveRounds) + " rounds of PUT and re-read");
}

Status BucketEnv::ReplaceFileIfVersion(const std::string& path, std::string_view data, const std::string& version,
                                       std::string* new_version) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  MaybeCrash("bucket.before_swap_put");
  for (int round = 0; round < kResolveRounds; ++round) {
    PauseBeforeRound(client_.config(), round);
    S3PutOutcome outcome;
    std::string etag;
    if (version.empty()) {
      SNAPSINK_RETURN_IF_ERROR(client_.PutCreateOnly(w.bucket, w.key, data, &outcome, &etag));
    } else {
      SNAPSINK_RETURN_IF_ERROR(client_.PutIfMatch(w.bucket, w.key, data, version, &outcome, &etag));
    }
    if (outcome == S3PutOutcome::kStored) {
      *new_version = etag;
      MaybeCrash("bucket.after_swap_put");
      return Status::OK();
    }
    // Lost, or unknown (RGW answers 500 to many losers of an If-Match race):
    // what is there now decides.
    std::string current, current_version;
    const Status st = client_.Get(w.bucket, w.key, &current, &current_version);
    const bool missing = st.IsNotFound();
    if (!missing && !st.ok()) return RereadFailed(path, st);
    if (!missing && current == data) {
      *new_version = current_version;
      MaybeCrash("bucket.after_swap_put");
      return Status::OK();  // our PUT landed and its answer was lost
    }
    const bool unchanged = version.empty() ? missing : (!missing && current_version == version);
    if (unchanged) continue;  // nothing happened: PUT again
    return Status::Locked(path + ": replaced by another writer since it was read at version " +
                          (version.empty() ? std::string("(none)") : version) + " (now " +
                          (missing ? std::string("removed") : current_version) +
                          "): this swap lost; read it again and decide anew");
  }
  return Status::IOError(path + ": the outcome of its conditional PUT stayed unknown after " +
                         std::to_string(kResolveRounds) + " rounds of PUT and re-read");
}

Status BucketEnv::NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  *out = std::make_unique<BucketWritableFile>(this, path);
  return Status::OK();
}

Status BucketEnv::NewAppendableFile(const std::string& path, std::unique_ptr<WritableFile>*) {
  return NotInABucket(path, "cannot be appended to in a bucket (objects are written once)");
}

Status BucketEnv::NewRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  uint64_t size = 0;
  std::string etag;
  SNAPSINK_RETURN_IF_ERROR(HeadOnce(w.bucket, w.key, &size, &etag));
  // Ranges are cached by the object and its ETag: an object removed and
  // written again under its name (a root made anew at the same prefix) is
  // another object to the cache.
  *out = std::make_unique<BucketRandomAccessFile>(
      &client_, Replaced(w.key) || etag.empty() ? nullptr : cache_,
      client_.config().endpoint + "/" + w.bucket + "/" + w.key + " " + etag, std::move(w), size);
  return Status::OK();
}

Status BucketEnv::GetMutable(const std::string& bucket, const std::string& key, std::string* data,
                             std::string* version) {
  std::string etag, held;
  {
    std::lock_guard<std::mutex> l(memo_mu_);
    auto it = memo_.find(bucket + "/" + key);
    if (it != memo_.end()) std::tie(etag, held) = it->second;
  }
  std::string body, new_etag;
  if (etag.empty()) {
    SNAPSINK_RETURN_IF_ERROR(client_.Get(bucket, key, &body, &new_etag));
  } else {
    bool modified = true;
    SNAPSINK_RETURN_IF_ERROR(client_.GetIfNoneMatch(bucket, key, etag, &modified, &body, &new_etag));
    if (!modified) {
      body = std::move(held);
      new_etag = etag;
    }
  }
  {
    std::lock_guard<std::mutex> l(memo_mu_);
    if (!new_etag.empty()) memo_[bucket + "/" + key] = {new_etag, body};
  }
  *data = std::move(body);
  if (version != nullptr) *version = new_etag;
  return Status::OK();
}

Status BucketEnv::ReadFileToString(const std::string& path, std::string* out) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  if (Replaced(w.key)) return GetMutable(w.bucket, w.key, out, nullptr);
  if (cache_ == nullptr) return client_.Get(w.bucket, w.key, out, nullptr);
  // An object read whole is cached with its ETag and asked again by a
  // conditional GET: a 304 (no body) confirms the cached bytes, so an object
  // written again under its name is never answered from the cache.
  const std::string entry = "object " + client_.config().endpoint + "/" + w.bucket + "/" + w.key;
  if (named_by_content_ && named_by_content_(w.key)) {
    if (cache_->Get(entry, out)) return Status::OK();
    SNAPSINK_RETURN_IF_ERROR(client_.Get(w.bucket, w.key, out, nullptr));
    cache_->Put(entry, *out);
    return Status::OK();
  }
  std::string held;
  const size_t nl = cache_->Get(entry, &held) ? held.find('\n') : std::string::npos;
  std::string body, etag;
  if (nl != std::string::npos) {
    bool modified = true;
    SNAPSINK_RETURN_IF_ERROR(client_.GetIfNoneMatch(w.bucket, w.key, held.substr(0, nl), &modified, &body, &etag));
    if (!modified) {
      *out = held.substr(nl + 1);
      return Status::OK();
    }
  } else {
    SNAPSINK_RETURN_IF_ERROR(client_.Get(w.bucket, w.key, &body, &etag));
  }
  if (!etag.empty() && etag.find('\n') == std::string::npos) cache_->Put(entry, etag + "\n" + body);
  *out = std::move(body);
  return Status::OK();
}

Status BucketEnv::ReadFileVersioned(const std::string& path, std::string* data, std::string* version) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  if (Replaced(w.key)) return GetMutable(w.bucket, w.key, data, version);
  return client_.Get(w.bucket, w.key, data, version);
}

bool BucketEnv::FileExists(const std::string& path) {
  bool exists = false;
  return Exists(path, &exists).ok() && exists;
}

Status BucketEnv::Exists(const std::string& path, bool* exists) {
  *exists = false;
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  if (!w.key.empty() && w.key.back() != '/') {
    uint64_t size = 0;
    std::string etag;
    const Status s = HeadOnce(w.bucket, w.key, &size, &etag, /*name_missing_bucket=*/false);
    if (s.ok()) {
      *exists = true;
      return Status::OK();
    }
    if (!s.IsNotFound()) return s;  // refused, failing or unreachable: not "missing"
  }
  std::vector<S3ObjectInfo> objects;
  // One page of one key: whether anything lies under the prefix.
  SNAPSINK_RETURN_IF_ERROR(
      client_.List(w.bucket, DirPrefix(w.key), "", &objects, nullptr, 1, /*first_page_only=*/true));
  *exists = !objects.empty();
  return Status::OK();
}

Status BucketEnv::GetFileSize(const std::string& path, uint64_t* size) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  std::string etag;
  return HeadOnce(w.bucket, w.key, size, &etag);
}

Status BucketEnv::HeadOnce(const std::string& bucket, const std::string& key, uint64_t* size, std::string* etag,
                           bool name_missing_bucket) {
  const bool once = cache_ != nullptr && !Replaced(key);
  const std::string name = bucket + "/" + key;
  if (once) {
    std::lock_guard<std::mutex> l(memo_mu_);
    auto it = heads_.find(name);
    if (it != heads_.end()) {
      std::tie(*size, *etag) = it->second;
      return Status::OK();
    }
  }
  SNAPSINK_RETURN_IF_ERROR(client_.Head(bucket, key, size, etag, name_missing_bucket));
  if (once) {
    std::lock_guard<std::mutex> l(memo_mu_);
    if (heads_.size() >= 100000) heads_.clear();  // a bound for a reader that runs for months
    heads_[name] = {*size, *etag};
  }
  return Status::OK();
}

Status BucketEnv::GetChildren(const std::string& dir, std::vector<std::string>* names) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(dir, &w));
  const std::string prefix = DirPrefix(w.key);
  std::vector<S3ObjectInfo> objects;
  std::vector<std::string> dirs;
  SNAPSINK_RETURN_IF_ERROR(client_.List(w.bucket, prefix, "/", &objects, &dirs));
  names->clear();
  for (const S3ObjectInfo& o : objects) {
    if (o.key.size() > prefix.size()) names->push_back(o.key.substr(prefix.size()));
  }
  for (const std::string& d : dirs) {
    std::string name = d.substr(prefix.size());
    if (!name.empty() && name.back() == '/') name.pop_back();
    if (!name.empty()) names->push_back(std::move(name));
  }
  std::sort(names->begin(), names->end());
  names->erase(std::unique(names->begin(), names->end()), names->end());
  return Status::OK();
}

Status BucketEnv::CreateDir(const std::string& path) {
  Where w;
  return Locate(path, &w);
}

Status BucketEnv::CreateDirs(const std::string& path) { return CreateDir(path); }

Status BucketEnv::RemoveFile(const std::string& path) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  return client_.Delete(w.bucket, w.key);
}

Status BucketEnv::RemoveTree(const std::string& path) {
  Where w;
  SNAPSINK_RETURN_IF_ERROR(Locate(path, &w));
  std::vector<S3ObjectInfo> objects;
  SNAPSINK_RETURN_IF_ERROR(client_.List(w.bucket, DirPrefix(w.key), "", &objects, nullptr));
  for (const S3ObjectInfo& o : objects) SNAPSINK_RETURN_IF_ERROR(client_.Delete(w.bucket, o.key));
  if (w.key.empty()) return Status::OK();
  return client_.Delete(w.bucket, w.key);
}

Status BucketEnv::RenameFile(const std::string& from, const std::string&) {
  return NotInABucket(from, "cannot be renamed in a bucket (no atomic rename; CURRENT is replaced by a "
                            "compare-and-swap, every other object is written once)");
}

Status BucketEnv::TruncateFile(const std::string& path, uint64_t) {
  return NotInABucket(path, "cannot be truncated in a bucket (objects are written once)");
}

Status BucketEnv::SyncDir(const std::string& dir) {
  Where w;
  return Locate(dir, &w);  // each PUT is durable when answered
}

Status BucketEnv::LockFile(const std::string& path, std::unique_ptr<FileLock>*) {
  return NotInABucket(path, "cannot be locked in a bucket (a writer's claim there is an epoch claim object "
                            "beside a LOCK on its own disk)");
}

Status BucketEnv::LockFileShared(const std::string& path, std::unique_ptr<FileLock>* lock) {
  return LockFile(path, lock);
}

}  // namespace snapsink
