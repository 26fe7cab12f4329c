// LineReader: the lines of a file or of standard input, read in large blocks.
//
// Each line is handed out as a view into the block buffer, followed by at
// least kLinePadding readable bytes, so simdjson can parse it in place. A
// line longer than kMaxLineBytes is handed out as `overlong` with its first
// kMaxLineBytes bytes only; the rest is skipped, however long it is.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/status.h"

namespace snapsink {

inline constexpr size_t kMaxLineBytes = size_t{1} << 20;  // SPEC 7: 1 MiB
inline constexpr size_t kLinePadding = 64;                // >= simdjson::SIMDJSON_PADDING

struct Line {
  const char* data = nullptr;  // without the '\n'
  size_t size = 0;
  size_t capacity = 0;         // readable bytes from data on (>= size + kLinePadding)
  uint64_t offset = 0;         // of the line's first byte in the input
  uint64_t end_offset = 0;     // just past the line's '\n' (or the end of input)
  bool overlong = false;
};

class LineReader {
 public:
  // path "-" is standard input. Starts at byte `start` (for stdin: skips it).
  static Status Open(const std::string& path, uint64_t start, std::unique_ptr<LineReader>* out);
  ~LineReader();

  // Size of the input, or -1 for a pipe.
  int64_t size() const { return size_; }
  // Next line into *line; false at the end of input (check status()).
  bool Next(Line* line);
  const Status& status() const { return status_; }
  uint64_t position() const { return file_pos_ - (end_ - begin_); }

 private:
  LineReader() = default;
  bool Fill();  // reads more at end_; false at EOF or error
  bool SkipOverlong(Line* line);

  std::string path_;
  int fd_ = -1;
  bool own_fd_ = false;
  int64_t size_ = -1;
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;             // usable bytes in buf_ (padding comes after)
  size_t begin_ = 0, end_ = 0; // unconsumed bytes [begin_, end_)
  uint64_t file_pos_ = 0;      // input offset of buf_[end_]
  bool eof_ = false;
  Status status_;
  std::string overlong_;       // head of an overlong line being skipped
};

}  // namespace snapsink
