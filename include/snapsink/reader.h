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
  int64_t sum_micros = 0;  // fixed-point micros; utilities/parse.h's FormatMicros prints it
  int64_t events = 0;      // adds + retracts applied
  // A minmax metric's (Sink::SetMetricKind): the least and greatest value
  // applied, in micros; nullopt for a sum metric.
  std::optional<int64_t> min_micros = std::nullopt, max_micros = std::nullopt;
  // A quantiles metric's: the answer to each of QuerySpec::quantiles, in
  // order, in micros (the sketch's estimate rounded to a micro, within its
  // relative accuracy of the value at that rank); nullopt where no value is
  // held. Empty for other kinds or when no quantile was asked.
  std::vector<std::optional<int64_t>> quantile_micros = {};
  // A distinct metric's: the estimated number of distinct items of its
  // events (HyperLogLog; exact-looking while small); nullopt for other kinds.
  std::optional<uint64_t> distinct = std::nullopt;
  bool operator==(const Row&) const = default;
};

// A window of a generation and the version of its snapshot.
struct WindowVersion {
  int64_t window_start_ms = 0;
  uint64_t version = 0;
};

// A query of one generation (Reader::Query, Reader::Rollup): every filter is
// optional, and every one given applies.
struct QuerySpec {
  std::optional<int64_t> window;   // a window start
  std::string metric;              // empty: every metric
  std::optional<std::string> key;  // only this key; with metric, a point lookup per window
  // Only windows from..to, window starts, both inclusive: a reader opens
  // only the snapshots of the windows in the range.
  std::optional<int64_t> from, to;
  // Only metrics / keys that start with these bytes ("" = every one): a
  // range scan of each window (seek to the first row >= the prefix through
  // the block index, stop at the first row past it), not a filter.
  std::string metric_prefix;
  std::string key_prefix;
  // Reader::Rollup only: buckets of this many ms, aligned to the Unix epoch
  // (a window goes to the bucket holding its start; utilities/parse.h's
  // ParseRollup takes only multiples of the window size); 0 = one bucket of
  // everything selected. Reader::Query refuses it.
  std::optional<int64_t> rollup_ms;
  // Quantiles (each in [0, 1]) to answer for every row of a quantiles
  // metric (Row::quantile_micros, RollupRow::quantile_micros).
  std::vector<double> quantiles;
};

// One row of a roll-up: the rows of (metric, key) of the selected windows
// of one bucket, added exactly (fixed point; sums and counts wrap as two's
// complement, as every total of the engine does).
struct RollupRow {
  std::optional<int64_t> bucket_ms;  // the bucket's start; nullopt: rollup_ms 0 (all)
  std::string metric;
  std::string key;
  int64_t count = 0;
  int64_t sum_micros = 0;
  uint64_t windows = 0;  // windows of the generation the bucket holds (of those selected by window/from/to)
  // A minmax metric's: the min of the windows' mins, the max of their maxes.
  std::optional<int64_t> min_micros = std::nullopt, max_micros = std::nullopt;
  // A quantiles metric's: QuerySpec::quantiles answered from the windows'
  // sketches merged (buckets summed: the sketch of all their events).
  std::vector<std::optional<int64_t>> quantile_micros = {};
  // A distinct metric's: the estimate of the windows' sketches merged
  // (registers by max: the estimate of the union of their items).
  std::optional<uint64_t> distinct = std::nullopt;
};

// One row of a query: a Row of a window and that window's version.
struct QueryRow {
  int64_t window_start_ms = 0;
  uint64_t version = 0;
  Row row;
};

class Reader {
 public:
  // generation 0 = the current one. NotFound when nothing is published yet or
  // the generation does not exist (any more), or path is not a root.
  // Errors: NotFound (root is not a root; nothing published; the generation never was, or gc removed it),
  //   Corruption (CURRENT or a manifest damaged, or CURRENT naming a missing manifest), IOError.
  static Result<std::unique_ptr<Reader>> Open(const std::string& root, uint64_t generation = 0);
  // The same, reading only the generation's top manifest: the manifest parts
  // naming a window are read when it is first looked up (Get, Scan, Query,
  // Rollup), so a query of one window reads the parts on that window's path
  // only, not every part of a long history. windows() is empty, and Find
  // answers only for windows looked up already.
  // Errors: as Open.
  static Result<std::unique_ptr<Reader>> OpenTop(const std::string& root, uint64_t generation = 0);
  // The generation root's CURRENT names (0: nothing published yet), read
  // from that one small file: what a server polls to notice a publish
  // before it opens a Reader of it. Corruption naming CURRENT when the file
  // is not one well-formed line.
  // Errors: Corruption (CURRENT is not one well-formed line), IOError.
  static Result<uint64_t> CurrentGeneration(const std::string& root);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  uint64_t generation() const;
  // The windows of the generation, by window start.
  const std::vector<WindowVersion>& windows() const;
  // The version of the window starting at window_start_ms in this
  // generation, or nullopt.
  std::optional<uint64_t> Find(int64_t window_start_ms) const;

  // Errors: NotFound (the window is not in the generation; no such row), Corruption (a checksum or format
  //   that does not hold, naming the file), IOError.
  // Point lookup (decompresses at most one block). NotFound if absent.
  Result<Row> Get(int64_t window_start_ms, std::string_view metric, std::string_view key);
  // Errors: NotFound (the window is not in the generation), Corruption (naming the file), IOError.
  // Every row of a window in (metric, key) byte order; only metric's rows
  // when metric is given. NotFound if the window is not in the generation.
  Status Scan(int64_t window_start_ms, const std::optional<std::string>& metric,
              const std::function<void(const Row&)>& fn);
  // The rows q selects, by window, metric, key.
  // A window not in the generation selects nothing; a metric and key
  // decompress at most one block per window.
  // Errors: InvalidArgument (q.rollup_ms is set: that is Rollup), Corruption (naming the file), IOError.
  Status Query(const QuerySpec& q, std::vector<QueryRow>* out);
  // The rows Query gives, in the same order, one at a time and none held:
  // fn sees each row (valid during the call only) and returns false to stop
  // (then QueryEach returns OK). Memory stays one decompressed block
  // however many rows a window has (what `serve` streams from).
  // Errors: as Query.
  Status QueryEach(const QuerySpec& q, const std::function<bool(const QueryRow&)>& fn);
  // The rows q selects added into buckets of q.rollup_ms (required), by
  // bucket, metric, key.
  // Errors: InvalidArgument (q.rollup_ms unset or negative), Corruption (naming the file), IOError.
  Status Rollup(const QuerySpec& q, std::vector<RollupRow>* out);
  // The rows Rollup gives, in the same order, one at a time: fn sees each
  // row (valid during the call only) and returns false to stop (then
  // RollupEach returns OK). A bucket's windows are merged a key range at a
  // time (each range read from every window of the bucket, about 1 MiB of
  // sums held), so memory stays bounded however many rows or windows a
  // bucket has (what `serve` streams a roll-up from); each range goes on
  // reading every window where the last one stopped, so a row is read
  // about once whatever the number of ranges.
  // Errors: as Rollup.
  Status RollupEach(const QuerySpec& q, const std::function<bool(const RollupRow&)>& fn);

 private:
  struct Impl;
  explicit Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace snapsink::api
