#include "engine/object_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/crash_point.h"

namespace snapsink {

namespace {

constexpr char kMagic[8] = {'S', 'N', 'S', 'K', 'C', 'A', 'C', '1'};
constexpr char kTmp[] = ".tmp.";

std::string FileOf(const std::string& name) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(XXH64(name.data(), name.size(), 0)));
  return buf;
}

bool IsEntryFile(const std::string& f) {
  return f.size() == 16 && std::all_of(f.begin(), f.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool ReadAll(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0;
  if (ok) {
    out->resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (ok && got < out->size()) {
      const ssize_t n = ::read(fd, out->data() + got, out->size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ok = false;
      if (n > 0) got += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  return ok;
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Header(const std::string& name, std::string_view data) {
  std::string h(kMagic, sizeof(kMagic));
  const uint32_t name_len = static_cast<uint32_t>(name.size());
  const uint64_t len = data.size(), sum = XXH64(data.data(), data.size(), 0);
  h.append(reinterpret_cast<const char*>(&name_len), sizeof(name_len));
  h += name;
  h.append(reinterpret_cast<const char*>(&len), sizeof(len));
  h.append(reinterpret_cast<const char*>(&sum), sizeof(sum));
  return h;
}

enum class Check { kGood, kOtherName, kDamaged };

// The bytes of an entry file, checked against its header.
Check Decode(const std::string& file, const std::string& name, std::string* out) {
  size_t at = sizeof(kMagic);
  uint32_t name_len = 0;
  if (file.size() < at + sizeof(name_len) || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) {
    return Check::kDamaged;
  }
  std::memcpy(&name_len, file.data() + at, sizeof(name_len));
  at += sizeof(name_len);
  uint64_t len = 0, sum = 0;
  if (file.size() < at + name_len + sizeof(len) + sizeof(sum)) return Check::kDamaged;
  const std::string_view stored(file.data() + at, name_len);
  at += name_len;
  std::memcpy(&len, file.data() + at, sizeof(len));
  at += sizeof(len);
  std::memcpy(&sum, file.data() + at, sizeof(sum));
  at += sizeof(sum);
  if (file.size() - at != len || XXH64(file.data() + at, len, 0) != sum) return Check::kDamaged;
  if (stored != name) return Check::kOtherName;  // two names, one hash: not ours
  out->assign(file.data() + at, len);
  return Check::kGood;
}

// The pid in "<entry>.tmp.<pid>.<n>", or 0.
pid_t TmpWriter(const std::string& f) {
  const size_t at = f.find(kTmp);
  if (at == std::string::npos) return 0;
  return static_cast<pid_t>(std::strtol(f.c_str() + at + std::strlen(kTmp), nullptr, 10));
}

}  // namespace

std::string ObjectCache::DefaultDir() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  return base + "/snapsink-cache-" + std::to_string(::getuid());
}

Status ObjectCache::Open(const std::string& dir, uint64_t capacity, std::unique_ptr<ObjectCache>* out) {
  if (dir.empty()) return Status::InvalidArgument("--cache-dir: empty");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::InvalidArgument("--cache-dir " + dir + ": cannot be made (" + std::strerror(errno) +
                                   "): name a directory this user can write");
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("--cache-dir " + dir + ": not a directory");
  }
  if (st.st_uid != ::getuid()) {
    return Status::InvalidArgument("--cache-dir " + dir + ": belongs to another user (uid " +
                                   std::to_string(st.st_uid) + "); name a directory of your own");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::InvalidArgument("--cache-dir " + dir + ": not writable by this user");
  }
  out->reset(new ObjectCache(dir, capacity));
  (*out)->Load();
  return Status::OK();
}

void ObjectCache::Load() {
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return;
  struct Found {
    std::string name;
    uint64_t size;
    int64_t mtime_ns;
  };
  std::vector<Found> found;
  while (dirent* e = ::readdir(d)) {
    const std::string f = e->d_name;
    const std::string path = dir_ + "/" + f;
    if (const pid_t writer = TmpWriter(f); writer > 0) {
      // Left by a process that crashed while writing it: never an entry.
      if (::kill(writer, 0) != 0 && errno == ESRCH) ::unlink(path.c_str());
      continue;
    }
    struct stat st;
    if (!IsEntryFile(f) || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    found.push_back({f, static_cast<uint64_t>(st.st_size),
                     static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.mtime_ns < b.mtime_ns; });
  std::lock_guard<std::mutex> l(mu_);
  for (const Found& f : found) Touch(f.name, f.size);  // oldest first: the newest ends up in front
  EvictLocked();
}

void ObjectCache::Forget(const std::string& file) {
  auto it = index_.find(file);
  if (it == index_.end()) return;
  total_ -= it->second.size;
  lru_.erase(it->second.at);
  index_.erase(it);
}

void ObjectCache::Touch(const std::string& file, uint64_t size) {
  auto it = index_.find(file);
  if (it != index_.end()) {
    total_ -= it->second.size;
    lru_.splice(lru_.begin(), lru_, it->second.at);
    it->second.size = size;
  } else {
    lru_.push_front(file);
    index_[file] = Slot{lru_.begin(), size};
  }
  total_ += size;
}

void ObjectCache::EvictLocked() {
  while (total_ > capacity_ && lru_.size() > 1) {
    const std::string victim = lru_.back();
    ::unlink((dir_ + "/" + victim).c_str());
    Forget(victim);
    ++evictions_;
  }
}

uint64_t ObjectCache::bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return total_;
}

bool ObjectCache::Get(const std::string& name, std::string* out) {
  const std::string file = FileOf(name);
  const std::string path = dir_ + "/" + file;
  std::string bytes;
  if (!ReadAll(path, &bytes)) {
    ++misses_;
    std::lock_guard<std::mutex> l(mu_);
    Forget(file);  // evicted by another process
    return false;
  }
  const Check c = Decode(bytes, name, out);
  std::lock_guard<std::mutex> l(mu_);
  if (c != Check::kGood) {
    ++misses_;
    if (c == Check::kDamaged) {
      ::unlink(path.c_str());
      Forget(file);
    }
    return false;
  }
  ++hits_;
  Touch(file, bytes.size());
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // used now, for every process sharing the directory
  return true;
}

void ObjectCache::Put(const std::string& name, std::string_view data) {
  const std::string header = Header(name, data);
  const uint64_t size = header.size() + data.size();
  if (size > capacity_) return;
  const std::string file = FileOf(name);
  const std::string tmp = dir_ + "/" + file + kTmp + std::to_string(::getpid()) + "." + std::to_string(++seq_);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool ok = WriteAll(fd, header) && WriteAll(fd, data);
  ::close(fd);
  MaybeCrash("cache.before_rename");
  if (!ok || ::rename(tmp.c_str(), (dir_ + "/" + file).c_str()) != 0) {
    ::unlink(tmp.c_str());
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  Touch(file, size);
  EvictLocked();
}

}  // namespace snapsink
