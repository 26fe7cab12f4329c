// ParseAhead: the lines of a LineReader in input order, each with its event
// already parsed; the next chunk of lines is parsed on a second thread while
// the caller applies the current one (issue 13: ingest on two cores).
//
// Only parsing moves to the other thread: the LineReader is read on the
// caller's thread only (a chunk's lines are copied out of its block buffer),
// so Resume, TailHash and SkipBlankTail stay the caller's. Results are those
// of EventParser::Parse on each line, in order: what the caller does with
// them is unchanged, and so is everything it commits.
//
// Reading runs up to kDepth - 1 chunks (kChunkLines lines or kChunkBytes
// bytes each) ahead of the line handed out, parsed in order by one helper
// thread that lives as long as the ParseAhead (started with the first
// chunk; a thread per chunk cost a thread start, which preempted the
// caller, every 8192 lines); on a pipe, a line is handed out once those
// chunks are full or the input has ended.
//
// Not thread-safe itself; its helper thread touches only the chunk it parses.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/event.h"
#include "engine/event_parser.h"
#include "engine/line_reader.h"

namespace snapsink {

struct ParsedLine {
  Line line;           // data points into the chunk's copy, padded for simdjson
  bool ok = false;     // the line parsed as an event (never for an overlong line)
  Event event;         // when ok; views into the chunk
  std::string reason;  // when !ok and !line.overlong: why it did not parse
};

class ParseAhead {
 public:
  static constexpr size_t kChunkLines = 8192;
  static constexpr size_t kChunkBytes = size_t{4} << 20;
  static constexpr size_t kDepth = 4;

  // content_ids: EventParser::SetContentIds for every line.
  explicit ParseAhead(LineReader* reader, bool content_ids = false) : reader_(reader) {
    for (Chunk& c : chunks_) c.parser.SetContentIds(content_ids);
  }
  ~ParseAhead();  // stops and joins the helper thread
  ParseAhead(const ParseAhead&) = delete;
  ParseAhead& operator=(const ParseAhead&) = delete;

  // The next line, valid until the next call; nullptr at the end of the
  // input or on a read error (reader->status() tells).
  const ParsedLine* Next();

 private:
  struct Chunk {
    std::string bytes;    // the lines, each followed by kLinePadding bytes
    std::string strings;  // producer, metric and key of each parsed line
    std::vector<ParsedLine> lines;
    EventParser parser;
  };
  bool Fill(Chunk* c);         // caller's thread: up to a chunk of lines from the reader
  static void Parse(Chunk* c);  // helper thread
  bool FillAndLaunch(size_t slot);
  void Work();  // the helper thread: parses queued slots in order until stop_

  LineReader* reader_;
  // A ring: chunks_[head_] is handed out (once its parse is done), the
  // next inflight_ - 1 are being parsed.
  Chunk chunks_[kDepth];
  std::thread helper_;  // runs Work(); not joinable if it could not be started
  bool helper_failed_ = false;  // no thread to be had: chunks are parsed inline
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_: slots filled and waiting for the helper, in order, as
  // a count after queued_head_; which slots are parsed; stop request.
  size_t queued_head_ = 0, queued_ = 0;
  bool parsed_[kDepth] = {};
  bool stop_ = false;
  size_t head_ = 0;
  size_t inflight_ = 0;
  bool handing_out_ = false;  // chunks_[head_] is parsed, next_ is its next line
  size_t next_ = 0;
  bool end_ = false;          // the reader has no more lines
};

}  // namespace snapsink
