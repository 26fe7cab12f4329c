// snapsink public API: reading published snapshots.
//
// A Reader pins one generation of a root (the current one, or a given one)
// with a shared lock on its manifest: gc, in any process, keeps it and every
// snapshot it names until the Reader is gone. Everything a Reader returns
// comes from that one generation, however many publishes happen meanwhile.
// Every read checks checksums: damaged data is Status Corruption naming the
// file, never a wrong number. A Reader needs no lock of the root and never
// blocks its writer. Not thread-safe; open one per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snapsink/status.h"

namespace snapsink::api {

// One aggregate of a window: (metric, key) -> count, exact sum, events.
struct Row {
  std::string metric;
  std::string key;
  int64_t count = 0;
  int64_t sum_micros = 0;  // fixed-point micros; FormatMicros prints it
  int64_t events = 0;      // adds + retracts applied
};

// A window of a generation and the version of its snapshot.
struct WindowVersion {
  int64_t window_ms = 0;
  uint64_t version = 0;
};

// A query of one generation (Reader::Query): every filter is optional.
struct QuerySpec {
  std::optional<int64_t> window;   // a window start
  std::string metric;              // empty: every metric
  std::optional<std::string> key;  // only this key; with metric, a point lookup per window
};

// One row of a query: a Row of a window and that window's version.
struct QueryRow {
  int64_t window_ms = 0;
  uint64_t version = 0;
  Row row;
};

class Reader {
 public:
  // generation 0 = the current one. NotFound when nothing is published yet or
  // the generation does not exist (any more), or path is not a root.
  static Result<std::unique_ptr<Reader>> Open(const std::string& root, uint64_t generation = 0);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  uint64_t generation() const;
  // The windows of the generation, by window start.
  const std::vector<WindowVersion>& windows() const;
  // The version of window_ms in this generation, or nullopt.
  std::optional<uint64_t> Find(int64_t window_ms) const;

  // Point lookup (decompresses at most one block). NotFound if absent.
  Result<Row> Get(int64_t window_ms, std::string_view metric, std::string_view key);
  // Every row of a window in (metric, key) byte order; only metric's rows
  // when metric is given. NotFound if the window is not in the generation.
  Status Scan(int64_t window_ms, const std::optional<std::string>& metric, const std::function<void(const Row&)>& fn);
  // The rows q selects, by window, metric, key: what `snapsink query` prints.
  // A window not in the generation selects nothing; a metric and key
  // decompress at most one block per window.
  Status Query(const QuerySpec& q, std::vector<QueryRow>* out);

 private:
  struct Impl;
  explicit Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace snapsink::api
