#include "engine/line_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace snapsink {
namespace {
constexpr size_t kBlockBytes = size_t{4} << 20;  // > kMaxLineBytes, so any valid line fits
}

Status LineReader::Open(const std::string& path, uint64_t start, std::unique_ptr<LineReader>* out) {
  std::unique_ptr<LineReader> r(new LineReader);
  r->path_ = path;
  if (path == "-") {
    r->fd_ = STDIN_FILENO;
  } else {
    r->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (r->fd_ < 0) return Status::NotFound("cannot open " + path + ": " + std::strerror(errno));
    r->own_fd_ = true;
  }
  struct stat st;
  if (::fstat(r->fd_, &st) != 0) return Status::IOError("cannot stat " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return Status::InvalidArgument("cannot read " + path + ": is a directory");
  if (S_ISREG(st.st_mode)) r->size_ = st.st_size;
  r->cap_ = kBlockBytes;
  r->buf_.reset(new char[r->cap_ + kLinePadding]);
  std::memset(r->buf_.get() + r->cap_, 0, kLinePadding);
  if (start > 0) {
    if (r->size_ >= 0) {
      if (static_cast<uint64_t>(r->size_) < start) {
        return Status::InvalidArgument(path + ": file is " + std::to_string(r->size_) +
                                       " bytes, shorter than its committed offset " + std::to_string(start));
      }
      if (::lseek(r->fd_, static_cast<off_t>(start), SEEK_SET) < 0) {
        return Status::IOError("cannot seek in " + path + ": " + std::strerror(errno));
      }
      r->file_pos_ = start;
    } else {
      // A pipe: read and drop what was committed before.
      while (r->file_pos_ < start) {
        r->begin_ = r->end_ = 0;
        if (!r->Fill()) {
          SNAPSINK_RETURN_IF_ERROR(r->status_);
          return Status::InvalidArgument(path + ": input is " + std::to_string(r->file_pos_) +
                                         " bytes, shorter than its committed offset " + std::to_string(start));
        }
      }
      r->begin_ = r->end_ - (r->file_pos_ - start);
    }
  }
  *out = std::move(r);
  return Status::OK();
}

LineReader::~LineReader() {
  if (own_fd_ && fd_ >= 0) ::close(fd_);
}

bool LineReader::Fill() {
  if (eof_) return false;
  if (end_ == cap_) {  // compact: keep only the unconsumed tail
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  while (true) {
    ssize_t n = ::read(fd_, buf_.get() + end_, cap_ - end_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status_ = Status::IOError("read " + path_ + ": " + std::strerror(errno));
      return false;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    end_ += static_cast<size_t>(n);
    file_pos_ += static_cast<uint64_t>(n);
    return true;
  }
}

bool LineReader::Next(Line* line) {
  while (true) {
    char* base = buf_.get();
    const char* nl = static_cast<const char*>(std::memchr(base + begin_, '\n', end_ - begin_));
    size_t avail = end_ - begin_;
    if (nl != nullptr || (eof_ && avail > 0) || avail > kMaxLineBytes) {
      size_t len = nl ? static_cast<size_t>(nl - (base + begin_)) : avail;
      if (nl == nullptr && !eof_) return SkipOverlong(line);
      line->data = base + begin_;
      line->size = len;
      line->capacity = cap_ + kLinePadding - begin_;
      line->offset = position();
      line->overlong = len > kMaxLineBytes;
      if (line->overlong) line->size = kMaxLineBytes;
      begin_ += len + (nl ? 1 : 0);
      line->end_offset = position();
      return true;
    }
    if (eof_ || !status_.ok()) return false;
    if (!Fill() && avail == 0) return false;
  }
}

// The line at begin_ has no '\n' within kMaxLineBytes: keep its head, drop
// the rest up to the next '\n'.
bool LineReader::SkipOverlong(Line* line) {
  const uint64_t start = position();
  overlong_.assign(buf_.get() + begin_, kMaxLineBytes);
  overlong_.append(kLinePadding, '\0');
  while (true) {
    const char* nl = static_cast<const char*>(std::memchr(buf_.get() + begin_, '\n', end_ - begin_));
    if (nl != nullptr) {
      begin_ = static_cast<size_t>(nl - buf_.get()) + 1;
      break;
    }
    begin_ = end_ = 0;
    if (!Fill()) {
      if (!status_.ok()) return false;
      break;
    }
  }
  line->data = overlong_.data();
  line->size = kMaxLineBytes;
  line->capacity = overlong_.size();
  line->offset = start;
  line->end_offset = position();
  line->overlong = true;
  return true;
}

}  // namespace snapsink
