// ParseAhead: the lines of a LineReader in input order, each with its event
// already parsed; the next chunks of lines are read, split and parsed on a
// second thread while the caller applies the current one (ingest on
// two cores; the read and the line split happen there too).
//
// Once the first line is asked for, the LineReader belongs to the helper
// thread: the caller touches it again only through what is safe beside a
// reading thread (positionable, size, dev, ino, which do not change, and
// TailHashAt, which preads) or after Stop(). Resume and SkipBlankTail are
// done before. Results are those of EventParser::Parse on each line, in
// order: what the caller does with them is unchanged, and so is everything
// it commits.
//
// The helper reads and splits up to kDepth chunks (kChunkLines lines or
// kChunkBytes bytes each) ahead of the one being handed out, in order, and
// parses them, the oldest first. The caller shares the parsing: when the
// chunk it needs next is not parsed yet, it parses a filled chunk nobody has
// taken (that one, else the newest), rather than wait (the
// pipeline's rate is then that of two parsers, not of one). Which thread
// parses a chunk changes nothing: each chunk has its own parser, and its
// lines are handed out in input order. The helper lives as long as the
// ParseAhead (a thread per chunk cost a thread start, which preempted the
// caller, every 8192 lines). Meant for regular files: on a pipe a line would
// be handed out only once those chunks are full or the input has ended.
//
// Lines are parsed where the reader read them: a chunk pins the reader's
// blocks its lines lie in (LineReader::Block) until it is handed out, so the
// reader goes on in another block instead of moving them; nothing is copied
// but an overlong line's head. The reader must outlive the ParseAhead (its
// Stop unpins them).
//
// Not thread-safe itself; its helper thread touches only the reader and the
// chunks queued to it or taken by it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/event.h"
#include "engine/event_parser.h"
#include "engine/line_reader.h"

namespace snapsink {

struct ParsedLine {
  Line line;           // data points into the reader's block (pinned), or the chunk's copy of an overlong head
  bool ok = false;     // the line parsed as an event (never for an overlong line)
  Event event;         // when ok; views into the chunk
  std::string reason;  // when !ok and !line.overlong: why it did not parse
  uint64_t producer_hash = 0;  // when ok: ProducerHash(event.producer), taken off the caller's thread
  // When ok and a window size was given: the event's aggregate key
  // (codec::AggKeyInto's bytes for its window), event.metric and event.key
  // views into it; empty for a metric holding a 0x00 byte (its key escapes it).
  std::string_view agg_key;
};

class ParseAhead {
 public:
  // A chunk's lines (about 200 bytes each as parsed) fit a core's L2 cache
  // between Fill and Parse, and between the parse and the apply; 16 of them
  // keep 16,384 lines in flight. (8,192-line chunks, 4 deep, ran 2-9% more
  // CPU time for the same instructions.)
  static constexpr size_t kChunkLines = 1024;
  static constexpr size_t kChunkBytes = size_t{1} << 20;
  static constexpr size_t kDepth = 16;

  // content_ids: EventParser::SetContentIds for every line. window_ms > 0:
  // each event's aggregate key built for windows of that size (agg_key).
  explicit ParseAhead(LineReader* reader, bool content_ids = false, int64_t window_ms = 0)
      : reader_(reader), window_ms_(window_ms) {
    for (Chunk& c : chunks_) c.parser.SetContentIds(content_ids);
  }
  ~ParseAhead() { Stop(); }
  ParseAhead(const ParseAhead&) = delete;
  ParseAhead& operator=(const ParseAhead&) = delete;

  // The next line, valid until the next call; nullptr at the end of the
  // input or on a read error (reader->status() tells).
  const ParsedLine* Next();

  // The line k after the one Next last returned, if it lies in the same
  // (parsed) chunk; nullptr otherwise. Valid as long as that line is: for
  // looking ahead (prefetching), never for applying out of order.
  const ParsedLine* Ahead(size_t k) const {
    if (!handing_out_) return nullptr;
    const Chunk& c = chunks_[head_];
    return next_ - 1 + k < c.count ? &c.lines[next_ - 1 + k] : nullptr;
  }

  // Stops and joins the helper thread: the reader is the caller's again
  // (status(), or reading on). Lines not handed out are dropped. Idempotent.
  void Stop();

 private:
  struct Chunk {
    // The reader's blocks the lines lie in, pinned until the chunk is handed
    // out (or dropped at Stop), in the order the lines reached them.
    std::vector<LineReader::Block*> pins;
    std::deque<std::string> apart;  // each overlong line's head, padded
    size_t line_bytes = 0;          // the lines' bytes (Parse's bound on strings)
    // producer, metric, key and id of each parsed line, back to back
    std::unique_ptr<char[]> strings;
    size_t strings_capacity = 0;
    // lines[0, count) are the chunk's; those past count are kept from an
    // earlier use, so a chunk's lines are not built and destroyed each time.
    std::vector<ParsedLine> lines;
    size_t count = 0;
    EventParser parser;
  };
  // A slot's way: kFree -> kQueued (to be filled) -> kFilled (read and
  // split, not taken) -> kParsing (taken by one thread) -> kParsed -> kFree
  // once handed out.
  enum class SlotState { kFree, kQueued, kFilled, kParsing, kParsed };

  void Fill(Chunk* c);          // up to a chunk of lines from the reader (none at its end)
  static void Unpin(Chunk* c);  // the chunk's lines are no longer used
  void Parse(Chunk* c) const;
  void Launch(size_t slot);      // queues the slot to be filled and parsed
  void Work();  // the helper thread: fills queued slots in order, parses filled ones, until stop_
  // REQUIRES: mu_ held. The filled slot not taken with the lowest (oldest)
  // or highest chunk number; kDepth if none.
  size_t FilledSlot(bool oldest) const;
  // Returns when chunks_[head_] is parsed, parsing filled chunks meanwhile.
  void AwaitHead();

  LineReader* reader_;
  const int64_t window_ms_;
  // A ring: chunks_[head_] is handed out (once its parse is done), the
  // next inflight_ - 1 are being filled or parsed.
  Chunk chunks_[kDepth];
  std::thread helper_;  // runs Work(); not joinable if it could not be started
  bool helper_failed_ = false;  // no thread to be had: chunks are filled and parsed inline
  bool reader_done_ = false;    // Fill's: the reader returned its last line
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_: each slot's state and chunk number (in input order),
  // slots queued for filling as a count after queued_head_, stop request.
  SlotState state_[kDepth] = {};
  uint64_t number_[kDepth] = {};
  uint64_t launched_ = 0;
  size_t queued_head_ = 0, queued_ = 0;
  bool stop_ = false;
  size_t head_ = 0;
  size_t inflight_ = 0;
  bool handing_out_ = false;  // chunks_[head_] is parsed, next_ is its next line
  size_t next_ = 0;
  bool end_ = false;          // a chunk came back empty: no more lines
};

}  // namespace snapsink
