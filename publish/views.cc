#include "publish/views.h"

#include <functional>
#include <map>
#include <utility>

#include "engine/decimal.h"
#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/window_records.h"
#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "publish/current_file.h"
#include "publish/publisher.h"
#include "publish/snapshot_manifest.h"

namespace snapsink {

const std::vector<std::string>& QueryColumns() {
  static const std::vector<std::string> columns = {"window", "metric", "key", "count", "sum", "version", "generation"};
  return columns;
}

namespace {

// The query of both Readers (publish/reader.h and the public one): windows
// are (start, version) pairs; get(w, &row) is a point lookup (NotFound when
// absent); scan(w, fn) calls fn for each row of w (only q.metric's when set).
template <typename RowT, typename GetFn, typename ScanFn>
Status QueryRows(const std::vector<std::pair<int64_t, uint64_t>>& windows, uint64_t generation, const QuerySpec& q,
                 GetFn&& get, ScanFn&& scan, std::vector<Record>* out) {
  const std::string gen = std::to_string(generation);
  auto emit = [&](int64_t window_ms, uint64_t version, const RowT& row) {
    Record r;
    r.Str("window", FormatIso(window_ms));
    r.Str("metric", row.metric);
    r.Str("key", row.key);
    r.Num("count", std::to_string(row.count));
    r.Num("sum", FormatMicros(row.sum_micros));
    r.Num("version", std::to_string(version));
    r.Num("generation", gen);
    out->push_back(std::move(r));
  };
  for (const auto& [w, version] : windows) {
    if (q.window && *q.window != w) continue;
    if (!q.metric.empty() && q.key) {
      RowT row;
      Status g = get(w, &row);
      if (g.IsNotFound()) continue;
      SNAPSINK_RETURN_IF_ERROR(g);
      emit(w, version, row);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(scan(w, [&](const RowT& row) {
      if (!q.key || row.key == *q.key) emit(w, version, row);
    }));
  }
  return Status::OK();
}

}  // namespace

Status QueryRecords(Reader* reader, const QuerySpec& q, std::vector<Record>* out) {
  std::vector<std::pair<int64_t, uint64_t>> windows;
  for (const GenerationEntry& e : reader->windows()) windows.emplace_back(e.window_ms, e.version);
  return QueryRows<Row>(
      windows, reader->generation(), q,
      [&](int64_t w, Row* row) { return reader->Get(w, q.metric, *q.key, row); },
      [&](int64_t w, const std::function<void(const Row&)>& fn) {
        return reader->Scan(w, q.metric.empty() ? nullptr : &q.metric, fn);
      },
      out);
}

Status QueryRecords(api::Reader* reader, const QuerySpec& q, std::vector<Record>* out) {
  std::vector<std::pair<int64_t, uint64_t>> windows;
  for (const api::WindowVersion& e : reader->windows()) windows.emplace_back(e.window_ms, e.version);
  std::optional<std::string> metric;
  if (!q.metric.empty()) metric = q.metric;
  return QueryRows<api::Row>(
      windows, reader->generation(), q,
      [&](int64_t w, api::Row* row) {
        Result<api::Row> r = reader->Get(w, q.metric, *q.key);
        if (!r.ok()) return r.status();
        *row = std::move(*r);
        return Status::OK();
      },
      [&](int64_t w, const std::function<void(const api::Row&)>& fn) { return reader->Scan(w, metric, fn); }, out);
}

Status PublishedRecords(Env* env, const std::string& root, const std::string& what, std::vector<Record>* out,
                        std::vector<std::string>* columns) {
  CurrentPointer pointer;
  SNAPSINK_RETURN_IF_ERROR(ReadCurrentPointer(env, root, &pointer));
  const uint64_t current = pointer.generation;
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::ManifestsDir(root), &names);
  if (!s.ok() && !s.IsNotFound()) return s;
  std::map<uint64_t, GenerationManifest> generations;
  for (const std::string& n : names) {
    uint64_t g;
    if (!filenames::ParseGenerationName(n, &g)) continue;
    Status read = ReadGenerationManifest(env, root, g, &generations[g]);
    if (read.IsNotFound()) {  // gc removed it since the listing: not shown
      generations.erase(g);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(read);
  }
  std::vector<Record>& records = *out;
  if (what == "generations") {
    for (const auto& [g, m] : generations) {
      Record r;
      r.Num("generation", std::to_string(g));
      r.Num("parent", std::to_string(m.parent));
      r.Num("windows", std::to_string(m.windows.size()));
      r.Num("rollback_of", std::to_string(m.rollback_of));
      r.Bool("current", g == current);
      records.push_back(std::move(r));
    }
    *columns = {"generation", "parent", "windows", "rollback_of", "current"};
    return Status::OK();
  }
  // snapshots: every published snapshot directory, and which generations use it.
  std::vector<std::string> windows;
  s = env->GetChildren(filenames::SnapshotsDir(root), &windows);
  if (!s.ok() && !s.IsNotFound()) return s;
  for (const std::string& wname : windows) {
    int64_t w;
    if (!filenames::ParseWindowDirName(wname, &w)) continue;
    std::vector<std::string> versions;
    s = env->GetChildren(filenames::SnapshotWindowDir(root, w), &versions);
    if (s.IsNotFound()) continue;  // gc removed the window since the listing
    SNAPSINK_RETURN_IF_ERROR(s);
    for (const std::string& vname : versions) {
      uint64_t v;
      if (!filenames::ParseVersionDirName(vname, &v)) continue;
      const std::string dir = filenames::SnapshotDir(root, w, v);
      std::string text;
      SnapshotManifest m;
      s = env->ReadFileToString(filenames::Join(dir, filenames::kSnapshotManifestFile), &text);
      if (s.IsNotFound()) continue;  // ... or this snapshot
      SNAPSINK_RETURN_IF_ERROR(s);
      SNAPSINK_RETURN_IF_ERROR(SnapshotManifest::Decode(text, dir, &m));
      uint64_t bytes = 0;
      for (const FileEntry& f : m.files) bytes += f.bytes;
      bool in_current = false;
      uint64_t used_by = 0;
      for (const auto& [g, gm] : generations) {
        for (const GenerationEntry& e : gm.windows) {
          if (e.window_ms == w && e.version == v) {
            ++used_by;
            if (g == current) in_current = true;
          }
        }
      }
      Record r;
      r.Str("window", FormatIso(w));
      r.Num("version", std::to_string(v));
      r.Num("rows", std::to_string(m.rows));
      r.Num("events", std::to_string(m.events));
      r.Num("bytes", std::to_string(bytes));
      r.Num("generations", std::to_string(used_by));
      r.Bool("current", in_current);
      records.push_back(std::move(r));
    }
  }
  *columns = {"window", "version", "rows", "events", "bytes", "generations", "current"};
  return Status::OK();
}

Status WindowRecords(const Root& root, Txn* txn, std::vector<Record>* out, std::vector<std::string>* columns) {
  *columns = {"window", "version", "dirty", "closed", "events", "count"};
  // Ledger totals per window, then the window records.
  std::map<int64_t, Aggregate> totals;
  SNAPSINK_RETURN_IF_ERROR(LedgerTotalsByWindow(txn, &totals));
  Status decode;
  SNAPSINK_ASSIGN_OR_RETURN(auto max_ts, Root::GetMetaU64(txn, meta::kMaxEventTs));
  std::optional<int64_t> wm;
  if (max_ts) wm = static_cast<int64_t>(*max_ts);
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kWindows, "", [&](std::string_view k, std::string_view v) {
    WindowState w;
    decode = codec::Decode(v, &w);
    if (!decode.ok()) return false;
    const int64_t start = codec::DecodeWindowKey(k);
    const Aggregate& t = totals[start];
    Record r;
    r.Str("window", FormatIso(start));
    r.Num("version", std::to_string(w.last_version));
    r.Bool("dirty", w.dirty);
    r.Bool("closed", WindowClosed(start, root.config().window_ms, wm, root.config().lateness_ms));
    r.Num("events", std::to_string(t.events));
    r.Num("count", std::to_string(t.count));
    out->push_back(std::move(r));
    return true;
  }));
  return decode;
}

}  // namespace snapsink
