// LineReader: the lines of a file or of standard input, read in large blocks.
//
// Each line is handed out as a view into the block buffer, followed by at
// least kLinePadding readable bytes, so simdjson can parse it in place. A
// line longer than kMaxLineBytes (not counting the '\r' of a "\r\n") is
// handed out as `overlong` with its first kMaxLineBytes bytes only; the rest
// is skipped, however long it is. A UTF-8 byte order mark at offset 0 is
// skipped. The last line of the input may lack its '\n' (`terminated` false):
// the caller decides whether it is whole (SPEC 1).
//
// A regular file can be positioned (Resume) and has an identity (device,
// inode, the hash of the bytes before a position: SourceState). Standard
// input and other pipes are always read from their start.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/state_codec.h"
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
  bool terminated = true;      // false: the input ended before a '\n'
};

class LineReader {
 public:
  // path "-" is standard input. Reads from the start.
  static Status Open(const std::string& path, std::unique_ptr<LineReader>* out);
  ~LineReader();

  // A regular file: it has an identity and a position can be resumed.
  bool positionable() const { return size_ >= 0; }
  uint64_t dev() const { return dev_; }
  uint64_t ino() const { return ino_; }
  // Size of the input when opened, or -1 for a pipe.
  int64_t size() const { return size_; }

  // If the file is the one `pos` was taken in (pos has a position, same
  // device and inode, at least pos.offset bytes, the same hash of the bytes
  // before pos.offset), moves to pos.offset and sets *resumed. Otherwise the
  // reader stays at the start. REQUIRES: nothing read yet.
  Status Resume(const SourceState& pos, bool* resumed);

  // XXH3-64 of the up to kPositionCheckBytes input bytes before `pos`
  // (<= position()); from the bytes read when they are still in the buffer.
  Status TailHash(uint64_t pos, uint64_t* hash);
  // The same hash, always read from the file (pread): safe while another
  // thread reads lines (ParseAhead), as it touches no buffer or position.
  Status TailHashAt(uint64_t pos, uint64_t* hash) const;

  // After a line taken without its '\n': skips ' ', '\t', '\r' and one '\n'.
  enum class Tail { kFinished, kPending, kOther };  // '\n' skipped / input ended first / other byte next
  Tail SkipBlankTail();

  // Next line into *line; false at the end of input (check status()).
  bool Next(Line* line);
  // Next, only for a line that lies whole in the bytes already read (its
  // '\n' found, not overlong, the byte order mark already checked): false,
  // and nothing consumed, where Next would read more or take another path.
  // The line handed out is the one Next would give; while this returns
  // true the buffer does not move, so consecutive lines lie back to back
  // (a chunk of ParseAhead's takes them one after another).
  bool NextInBuffer(Line* line);
  const Status& status() const { return status_; }
  uint64_t position() const { return file_pos_ - (end_ - begin_); }

  // A block: the buffer lines are handed out from. While pinned (ParseAhead
  // pins the blocks its chunks' lines lie in, so they are parsed where they
  // were read), the reader never moves or overwrites its bytes: when it
  // needs room it goes on in a block nobody pins (a new one if none), the
  // history and the unconsumed bytes copied there. Unpinned, bytes move as
  // they always did (a line is valid until the next Next).
  struct Block {
    std::unique_ptr<char[]> bytes;
    std::atomic<uint32_t> pins{0};
  };
  // The block the lines handed out now lie in (all but an overlong line's
  // head, which is held apart).
  Block* block() const { return cur_; }
  // Pin: on the thread that reads lines. Unpin: on any thread, once done
  // with the block's bytes.
  static void Pin(Block* b) { b->pins.fetch_add(1, std::memory_order_relaxed); }
  static void Unpin(Block* b) { b->pins.fetch_sub(1, std::memory_order_release); }
  // How many blocks the reader has made (tests: a pinned block was kept).
  size_t blocks_made() const { return blocks_.size(); }

 private:
  LineReader() = default;
  bool Fill();  // reads more at end_; false at EOF or error
  bool SkipOverlong(Line* line);
  void KeepHistory();  // drops consumed bytes but the last kPositionCheckBytes
  Block* FreeBlock();  // a block nobody pins, not the current one (made if none)

  std::string path_;
  int fd_ = -1;
  bool own_fd_ = false;
  int64_t size_ = -1;
  uint64_t dev_ = 0, ino_ = 0;
  std::vector<std::unique_ptr<Block>> blocks_;
  Block* cur_ = nullptr;       // the block being read into
  char* buf_ = nullptr;        // cur_'s bytes
  size_t cap_ = 0;             // usable bytes in buf_ (padding comes after)
  size_t begin_ = 0, end_ = 0; // unconsumed bytes [begin_, end_); before them, bytes consumed
  uint64_t file_pos_ = 0;      // input offset of buf_[end_]
  bool eof_ = false;
  bool bom_checked_ = false;
  Status status_;
  std::string overlong_;       // head of an overlong line being skipped
};

}  // namespace snapsink
