// The POSIX Env. Locks are Linux open-file-description locks (F_OFD_SETLK):
// they belong to the open file, not the process, so two opens in one process
// exclude each other and closing an unrelated descriptor of the same file
// does not drop them (the classic fcntl trap).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <boost/filesystem.hpp>

#include "engine/env.h"
#include "engine/s3/s3_uri.h"

namespace snapsink {
namespace {

Status PosixError(const std::string& what, const std::string& path, int err) {
  // The words every full disk is reported with, whoever notices it.
  const bool full = err == ENOSPC || err == EDQUOT;
  std::string msg = what + " " + path + ": " + (full ? "no space left on device" : std::strerror(err));
  if (err == ENOENT) return Status::NotFound(msg);
  return Status::IOError(msg);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) (void)Close();
  }

  Status Append(std::string_view data) override {
    if (buf_.size() + data.size() > kBufferSize) SNAPSINK_RETURN_IF_ERROR(Flush());
    if (data.size() >= kBufferSize) return WriteAll(data);
    buf_.append(data);
    return Status::OK();
  }
  Status Flush() override {
    Status s = WriteAll(buf_);
    buf_.clear();
    return s;
  }
  Status Sync() override {
    SNAPSINK_RETURN_IF_ERROR(Flush());
    if (::fdatasync(fd_) != 0) return PosixError("fdatasync", path_, errno);
    return Status::OK();
  }
  Status Close() override {
    Status s = Flush();
    if (fd_ >= 0 && ::close(fd_) != 0 && s.ok()) s = PosixError("close", path_, errno);
    fd_ = -1;
    return s;
  }

 private:
  static constexpr size_t kBufferSize = 1 << 16;
  Status WriteAll(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError("write", path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::OK();
  }
  std::string path_;
  int fd_;
  std::string buf_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }
  Status Read(uint64_t offset, size_t n, std::string* out) const override {
    if (offset > size_ || n > size_ - offset) {
      return Status::Corruption(path_ + ": read of " + std::to_string(n) + " bytes at offset " +
                                std::to_string(offset) + " past end of file");
    }
    out->resize(n);
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, out->data() + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError("read", path_, errno);
      }
      if (r == 0) return Status::Corruption(path_ + ": unexpected end of file");
      done += static_cast<size_t>(r);
    }
    return Status::OK();
  }
  uint64_t Size() const override { return size_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class PosixFileLock final : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override { ::close(fd_); }  // closing the description releases the lock

 private:
  int fd_;
};

class PosixEnv final : public Env {
 public:
  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    return OpenForWrite(path, O_TRUNC, out);
  }
  Status NewAppendableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    return OpenForWrite(path, O_APPEND, out);
  }
  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* out) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return PosixError("stat", path, err);
    }
    out->reset(new PosixRandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size)));
    return Status::OK();
  }
  Status ReadFileToString(const std::string& path, std::string* out) override {
    std::unique_ptr<RandomAccessFile> f;
    SNAPSINK_RETURN_IF_ERROR(NewRandomAccessFile(path, &f));
    return f->Read(0, f->Size(), out);
  }
  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
  Status GetFileSize(const std::string& path, uint64_t* size) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError("stat", path, errno);
    *size = static_cast<uint64_t>(st.st_size);
    return Status::OK();
  }
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError("opendir", dir, errno);
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names->emplace_back(e->d_name);
    }
    ::closedir(d);
    std::sort(names->begin(), names->end());
    return Status::OK();
  }
  Status CreateDir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return PosixError("mkdir", path, errno);
    return Status::OK();
  }
  Status CreateDirs(const std::string& path) override {
    boost::system::error_code ec;
    boost::filesystem::create_directories(path, ec);
    if (ec) return Status::IOError("mkdir -p " + path + ": " + ec.message());
    return Status::OK();
  }
  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return PosixError("unlink", path, errno);
    return Status::OK();
  }
  Status RemoveTree(const std::string& path) override {
    boost::system::error_code ec;
    boost::filesystem::remove_all(path, ec);
    if (ec) return Status::IOError("remove " + path + ": " + ec.message());
    return Status::OK();
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return PosixError("rename " + from + " to", to, errno);
    return Status::OK();
  }
  Status TruncateFile(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) return PosixError("truncate", path, errno);
    return Status::OK();
  }
  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", dir, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return PosixError("fsync", dir, err);
    return Status::OK();
  }
  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override {
    return Lock(path, F_WRLCK, O_RDWR | O_CREAT, lock);
  }
  Status LockFileShared(const std::string& path, std::unique_ptr<FileLock>* lock) override {
    return Lock(path, F_RDLCK, O_RDONLY, lock);
  }

 private:
  Status OpenForWrite(const std::string& path, int mode, std::unique_ptr<WritableFile>* out) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | mode, 0644);
    if (fd < 0) return PosixError("open", path, errno);
    out->reset(new PosixWritableFile(path, fd));
    return Status::OK();
  }
  Status Lock(const std::string& path, short type, int flags, std::unique_ptr<FileLock>* lock) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError("open", path, errno);
    struct flock fl;
    std::memset(&fl, 0, sizeof(fl));
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EAGAIN || err == EACCES) return Status::Locked(path + " is locked by another process");
      return PosixError("lock", path, err);
    }
    lock->reset(new PosixFileLock(fd));
    return Status::OK();
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv;
  return env;
}

Status WriteFileAtomic(Env* env, const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(tmp, &f));
  SNAPSINK_RETURN_IF_ERROR(f->Append(data));
  SNAPSINK_RETURN_IF_ERROR(f->Sync());
  SNAPSINK_RETURN_IF_ERROR(f->Close());
  SNAPSINK_RETURN_IF_ERROR(env->RenameFile(tmp, path));
  std::string dir = boost::filesystem::path(path).parent_path().string();
  return env->SyncDir(dir.empty() ? "." : dir);
}

Status Env::ReplaceFileIfVersion(const std::string& path, std::string_view data, const std::string& /*version*/,
                                 std::string* new_version) {
  new_version->clear();
  return WriteFileAtomic(this, path, data);
}

Status EnsureDir(Env* env, const std::string& dir) {
  if (IsBucketPath(dir)) {
    // A bucket has no directories to make (asking whether one exists costs
    // requests): only one the root's Env keeps on this disk is made there.
    const std::string local = env->LocalPath(dir);
    return local != dir ? EnsureDir(Env::Default(), local) : env->CreateDir(dir);
  }
  if (env->FileExists(dir)) return Status::OK();
  const std::string parent = boost::filesystem::path(dir).parent_path().string();
  if (!parent.empty()) SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, parent));
  SNAPSINK_RETURN_IF_ERROR(env->CreateDir(dir));
  return env->SyncDir(parent.empty() ? "." : parent);
}

}  // namespace snapsink
