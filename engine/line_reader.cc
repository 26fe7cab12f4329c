#include "engine/line_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <xxhash.h>

namespace snapsink {
namespace {
constexpr size_t kBlockBytes = size_t{4} << 20;  // > kMaxLineBytes + history, so any valid line fits
constexpr char kBom[] = "\xEF\xBB\xBF";

// Reads exactly n bytes at off; false on a short read (the file shrank).
Status PreadFull(int fd, const std::string& path, char* dst, size_t n, uint64_t off, bool* complete) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::IOError("read " + path + ": " + std::strerror(errno));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  *complete = got == n;
  return Status::OK();
}
}  // namespace

Status LineReader::Open(const std::string& path, std::unique_ptr<LineReader>* out) {
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
  if (S_ISREG(st.st_mode)) {
    r->size_ = st.st_size;
    r->dev_ = static_cast<uint64_t>(st.st_dev);
    r->ino_ = static_cast<uint64_t>(st.st_ino);
  }
  r->cap_ = kBlockBytes;
  r->cur_ = r->FreeBlock();
  r->buf_ = r->cur_->bytes.get();
  *out = std::move(r);
  return Status::OK();
}

LineReader::~LineReader() {
  if (own_fd_ && fd_ >= 0) ::close(fd_);
}

Status LineReader::Resume(const SourceState& pos, bool* resumed) {
  *resumed = false;
  if (!positionable() || (pos.flags & SourceState::kHasPosition) == 0) return Status::OK();
  if (pos.dev != dev_ || pos.ino != ino_ || static_cast<uint64_t>(size_) < pos.offset) return Status::OK();
  const size_t k = static_cast<size_t>(std::min<uint64_t>(pos.offset, kPositionCheckBytes));
  bool complete = false;
  SNAPSINK_RETURN_IF_ERROR(PreadFull(fd_, path_, buf_, k, pos.offset - k, &complete));
  if (!complete || XXH3_64bits(buf_, k) != pos.tail_hash) return Status::OK();
  if (::lseek(fd_, static_cast<off_t>(pos.offset), SEEK_SET) < 0) {
    return Status::IOError("cannot seek in " + path_ + ": " + std::strerror(errno));
  }
  begin_ = end_ = k;  // the checked bytes stay as history for TailHash
  file_pos_ = pos.offset;
  *resumed = true;
  return Status::OK();
}

Status LineReader::TailHash(uint64_t pos, uint64_t* hash) {
  const size_t k = static_cast<size_t>(std::min<uint64_t>(pos, kPositionCheckBytes));
  const uint64_t buf_start = file_pos_ - end_;
  if (pos <= file_pos_ && pos - k >= buf_start) {
    *hash = XXH3_64bits(buf_ + (pos - k - buf_start), k);
    return Status::OK();
  }
  // Only after an overlong line: its head is no longer in the buffer.
  return TailHashAt(pos, hash);
}

Status LineReader::TailHashAt(uint64_t pos, uint64_t* hash) const {
  const size_t k = static_cast<size_t>(std::min<uint64_t>(pos, kPositionCheckBytes));
  std::string bytes(k, '\0');
  bool complete = false;
  SNAPSINK_RETURN_IF_ERROR(PreadFull(fd_, path_, bytes.data(), k, pos - k, &complete));
  if (!complete) return Status::IOError(path_ + ": shrank while being read");
  *hash = XXH3_64bits(bytes.data(), k);
  return Status::OK();
}

LineReader::Block* LineReader::FreeBlock() {
  for (const std::unique_ptr<Block>& b : blocks_) {
    // acquire: what an Unpin's thread read of the block is done before it is overwritten
    if (b.get() != cur_ && b->pins.load(std::memory_order_acquire) == 0) return b.get();
  }
  auto b = std::make_unique<Block>();
  b->bytes.reset(new char[cap_ + kLinePadding]);
  std::memset(b->bytes.get() + cap_, 0, kLinePadding);
  blocks_.push_back(std::move(b));
  return blocks_.back().get();
}

void LineReader::KeepHistory() {
  const size_t keep = std::min<size_t>(begin_, kPositionCheckBytes);
  if (cur_->pins.load(std::memory_order_acquire) != 0) {
    // Lines handed out from this block are still in use: go on in another.
    Block* next = FreeBlock();
    std::memcpy(next->bytes.get(), buf_ + begin_ - keep, end_ - begin_ + keep);
    cur_ = next;
    buf_ = next->bytes.get();
  } else {
    std::memmove(buf_, buf_ + begin_ - keep, end_ - begin_ + keep);
  }
  end_ -= begin_ - keep;
  begin_ = keep;
}

bool LineReader::Fill() {
  if (eof_) return false;
  if (end_ == cap_) KeepHistory();
  while (true) {
    ssize_t n = ::read(fd_, buf_ + end_, cap_ - end_);
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

LineReader::Tail LineReader::SkipBlankTail() {
  bom_checked_ = true;
  while (true) {
    for (; begin_ < end_; ++begin_) {
      const char c = buf_[begin_];
      if (c == '\n') {
        ++begin_;
        return Tail::kFinished;
      }
      if (c != ' ' && c != '\t' && c != '\r') return Tail::kOther;
    }
    if (!Fill()) return Tail::kPending;
  }
}

bool LineReader::Next(Line* line) {
  if (!bom_checked_) {
    bom_checked_ = true;
    if (position() == 0) {
      while (end_ - begin_ < 3 && Fill()) {
      }
      if (end_ - begin_ >= 3 && std::memcmp(buf_ + begin_, kBom, 3) == 0) begin_ += 3;
    }
  }
  while (true) {
    char* base = buf_;
    const char* nl = static_cast<const char*>(std::memchr(base + begin_, '\n', end_ - begin_));
    size_t avail = end_ - begin_;
    // kMaxLineBytes + 1: a line of exactly 1 MiB still has its '\r' before the '\n'.
    if (nl != nullptr || (eof_ && avail > 0) || avail > kMaxLineBytes + 1) {
      size_t len = nl ? static_cast<size_t>(nl - (base + begin_)) : avail;
      if (nl == nullptr && !eof_) return SkipOverlong(line);
      const size_t content = len > 0 && base[begin_ + len - 1] == '\r' ? len - 1 : len;
      line->data = base + begin_;
      line->size = len;
      line->capacity = cap_ + kLinePadding - begin_;
      line->offset = position();
      line->overlong = content > kMaxLineBytes;
      line->terminated = nl != nullptr;
      if (line->overlong) line->size = kMaxLineBytes;
      begin_ += len + (nl ? 1 : 0);
      line->end_offset = position();
      return true;
    }
    if (eof_ || !status_.ok()) return false;
    if (!Fill() && avail == 0) return false;
  }
}

bool LineReader::NextInBuffer(Line* line) {
  if (!bom_checked_) return false;
  char* base = buf_;
  const char* nl = static_cast<const char*>(std::memchr(base + begin_, '\n', end_ - begin_));
  if (nl == nullptr) return false;
  const size_t len = static_cast<size_t>(nl - (base + begin_));
  const size_t content = len > 0 && base[begin_ + len - 1] == '\r' ? len - 1 : len;
  if (content > kMaxLineBytes) return false;  // Next hands it out as overlong
  line->data = base + begin_;
  line->size = len;
  line->capacity = cap_ + kLinePadding - begin_;
  line->offset = position();
  line->overlong = false;
  line->terminated = true;
  begin_ += len + 1;
  line->end_offset = position();
  return true;
}

// The line at begin_ has no '\n' within kMaxLineBytes + 1: keep its head,
// drop the rest up to the next '\n'.
bool LineReader::SkipOverlong(Line* line) {
  const uint64_t start = position();
  overlong_.assign(buf_ + begin_, kMaxLineBytes);
  overlong_.append(kLinePadding, '\0');
  bool terminated = false;
  while (true) {
    const char* nl = static_cast<const char*>(std::memchr(buf_ + begin_, '\n', end_ - begin_));
    if (nl != nullptr) {
      begin_ = static_cast<size_t>(nl - buf_) + 1;
      terminated = true;
      break;
    }
    begin_ = end_;
    KeepHistory();
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
  line->terminated = terminated;
  return true;
}

}  // namespace snapsink
