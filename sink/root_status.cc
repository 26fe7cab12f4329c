#include "sink/root_status.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "engine/filenames.h"
#include "engine/gap_spill.h"
#include "engine/json_escape.h"
#include "engine/long_key.h"
#include "engine/metric_kinds.h"
#include "publish/backfill.h"
#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "engine/window_retention.h"
#include "engine/window_records.h"
#include "publish/current_file.h"
#include "publish/publisher.h"
#include "publish/generation_reader.h"
#include "sink/root_views.h"

namespace snapsink {

const char* WindowStateName(bool dirty, bool closed, bool staged, bool published) {
  if (dirty) return closed ? "closed_unsealed" : "open";
  if (staged) return "staged";
  return published ? "published" : "unpublished";
}
uint64_t ProgressAgeSeconds(int64_t at_ms) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  return now > at_ms ? static_cast<uint64_t>((now - at_ms) / 1000) : 0;
}

namespace {

// Bytes of the regular files under dir (0 if it is missing). Read-only, so
// not through Env: Env is the seam for writes and syncs.
uint64_t TreeBytes(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  uint64_t total = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) {
      const auto n = it->file_size(e2);
      if (!e2) total += n;
    }
  }
  return total;
}

// Every window with state, by start; `state` is set once staged and
// published are known.
Status ReadWindows(Txn* txn, const RootConfig& config, std::optional<int64_t> max_ts,
                   std::map<int64_t, api::WindowStatus>* windows) {
  Status decode;
  std::map<int64_t, Aggregate> totals;
  SNAPSINK_RETURN_IF_ERROR(LedgerTotalsByWindow(txn, &totals));
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kWindows, "", [&](std::string_view k, std::string_view v) {
    WindowState state;
    decode = codec::Decode(v, &state);
    if (!decode.ok()) return false;
    api::WindowStatus w;
    w.window_start_ms = codec::DecodeWindowKey(k);
    w.version = state.last_version;
    w.dirty = state.dirty;
    w.closed = WindowClosed(w.window_start_ms, config.window_ms, max_ts, config.lateness_ms);
    w.closes_at_ms = w.window_start_ms + config.window_ms + config.lateness_ms;
    w.events = totals[w.window_start_ms].events;
    w.count = totals[w.window_start_ms].count;
    (*windows)[w.window_start_ms] = w;
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(decode);
  return txn->Scan(Table::kSeals, "", [&](std::string_view k, std::string_view v) {
    SealRecord seal;
    decode = codec::Decode(v, &seal);
    if (!decode.ok()) return false;
    int64_t w;
    uint64_t version;
    codec::DecodeSealKey(k, &w, &version);
    if (seal.state == SealState::kStaged) {
      auto it = windows->find(w);
      if (it != windows->end()) it->second.staged = true;
    }
    return true;
  });
}

std::string U(uint64_t v) { return std::to_string(v); }
std::string OnGapName(OnGap g) { return g == OnGap::kStop ? "stop" : "accept"; }
// 10000 ppm -> 0.01, as a JSON number.
std::string FormatPpmFraction(uint32_t ppm) {
  std::string s = std::to_string(1000000 + ppm % 1000000).substr(1);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return std::to_string(ppm / 1000000) + (s.empty() ? "" : "." + s);
}

}  // namespace

api::MetricKindInfo PublicKindInfo(const std::string& metric, const MetricSpec& spec) {
  const bool quantiles = spec.kind == MetricKind::kQuantiles;
  const bool distinct = spec.kind == MetricKind::kDistinct;
  return {metric, static_cast<api::MetricKind>(spec.kind), quantiles ? spec.parameter : 0,
          distinct ? static_cast<int>(spec.parameter) : 0};
}

Status GatherRootStatus(Root* root, RootStatus* out) {
  *out = RootStatus();
  const RootConfig& config = root->config();
  out->settings = ToRootSettings(config);
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&txn));
  WatermarkState wm;
  SNAPSINK_RETURN_IF_ERROR(LoadWatermark(txn.get(), &wm));
  if (wm.confirmed) {
    out->max_event_ts = wm.confirmed;
    out->watermark = Watermark(*out->max_event_ts, config.lateness_ms);
  }
  out->held_event_ts = wm.held;
  out->held_producer = wm.held_producer;
  out->watermark_rule = WatermarkRule(config, wm.held, wm.held_producer);
  SNAPSINK_ASSIGN_OR_RETURN(out->oldest_kept_window, OldestKeptWindow(txn.get(), config));

  std::map<int64_t, api::WindowStatus> windows;
  SNAPSINK_RETURN_IF_ERROR(ReadWindows(txn.get(), config, out->max_event_ts, &windows));

  CurrentPointer current;
  SNAPSINK_RETURN_IF_ERROR(ReadCurrentPointer(root->env(), root->path(), &current));
  // A missing CURRENT is "nothing published" only if the state agrees.
  if (current.generation == 0) SNAPSINK_RETURN_IF_ERROR(CheckCurrentPresent(root->env(), root->path(), txn.get()));
  if (current.generation > 0) {
    // Through a Reader, which pins the generation it reads: a publish and a
    // gc beside this command may move CURRENT on and remove the generation
    // read a moment ago ("generation 40 not found" from status or metrics).
    std::unique_ptr<Reader> reader;
    SNAPSINK_RETURN_IF_ERROR(Reader::Open(root->env(), root->path(), 0, &reader));
    out->current_generation = reader->generation();
    SNAPSINK_ASSIGN_OR_RETURN(auto at, Root::GetMetaU64(txn.get(), meta::PublishedAtKey(out->current_generation)));
    if (at) out->published_at_ms = static_cast<int64_t>(*at);
    out->published_windows = reader->windows().size();
    for (const GenerationEntry& e : reader->windows()) {
      auto it = windows.find(e.window_ms);
      if (it != windows.end()) it->second.published = true;
    }
  }
  for (auto& [w, s] : windows) {
    s.state = WindowStateName(s.dirty, s.closed, s.staged, s.published);
    out->windows.push_back(s);
  }

  SNAPSINK_RETURN_IF_ERROR(ScanSources(txn.get(), [&](const std::string& name, const SourceState& state,
                                                      const SourceIdCounts& ids) {
    api::SourceStatus s{ToSourceView(name, state, ids), -1, "", false, std::nullopt};
    if (state.progress) {  // display only: a record that does not read leaves the time unknown
      auto at = Root::GetMetaU64(txn.get(), meta::ProgressAtKey(name));
      if (at.ok() && *at) s.progress_at_ms = static_cast<int64_t>(**at);
    }
    if (IsBackfillSourceName(name)) {
      s.backfill = true;  // an archive read once: no file to look up
    } else {
      // The file by its absolute path as ingest recorded it (status may run
      // elsewhere); a root from before that record: the name as a path.
      std::string_view recorded;
      if (GetRecord(txn.get(), Table::kMeta, SourcePathKey(name), &recorded).ok()) s.path = std::string(recorded);
      const std::string& file = s.path.empty() ? name : s.path;
      struct stat st;
      if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) s.file_size = st.st_size;
    }
    out->sources.push_back(std::move(s));
  }));
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kProducers, "", [&](std::string_view id, std::string_view v) {
    ProducerState p;
    decode = codec::Decode(v, &p);
    if (!decode.ok()) return false;
    ++out->producers;
    if (!p.gaps.empty() || p.spilled > 0) {
      std::vector<Gap> gaps;
      decode = AllOpenGaps(txn.get(), id, p, &gaps);  // with those spilled to their table
      if (!decode.ok()) return false;
      api::ProducerGaps g{std::string(id), p.epoch, {}};
      for (const Gap& r : gaps) g.missing.push_back({r.lo, r.hi - 1});
      out->gaps.push_back(std::move(g));
    }
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(decode);
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kRetired, "", [&](std::string_view, std::string_view) {
    ++out->retired_producers;
    return true;
  }));
  const std::string_view split_prefix = meta::kSplitProducerPrefix;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kMeta, split_prefix, [&](std::string_view k, std::string_view v) {
    out->split_producers.push_back({std::string(k.substr(split_prefix.size())), std::string(v)});
    return true;
  }));
  snapsink::MetricKinds kinds;
  SNAPSINK_RETURN_IF_ERROR(ReadMetricKinds(txn.get(), &kinds));
  for (const auto& [metric, spec] : kinds) {
    out->metrics.push_back(PublicKindInfo(metric, spec));
  }
  SNAPSINK_RETURN_IF_ERROR(ReadIdsInfo(txn.get(), out->max_event_ts, config, &out->ids));

  const std::string& r = root->path();
  for (const auto& [name, dir] : {std::pair{"state", filenames::StateDir(r)},
                                  std::pair{"staging", filenames::StagingDir(r)},
                                  std::pair{"snapshots", filenames::SnapshotsDir(r)},
                                  std::pair{"manifests", filenames::ManifestsDir(r)},
                                  std::pair{"rejects", filenames::RejectsDir(r)}}) {
    out->disk.push_back(DirUsage{name, TreeBytes(dir)});
  }
  out->state_bytes = out->disk[0].bytes;
  return Status::OK();
}


std::string RootStatusJson(const std::string& path, const RootConfig& config, const RootStatus& s) {
  auto opt_time = [](const std::optional<int64_t>& t) { return t ? JsonQuote(FormatIso(*t)) : std::string("null"); };
  std::string o = "{\"root\":" + JsonQuote(path);
  o += ",\"window\":" + JsonQuote(FormatDuration(config.window_ms));
  o += ",\"lateness\":" + JsonQuote(FormatDuration(config.lateness_ms));
  o += ",\"on_gap\":" + JsonQuote(OnGapName(config.on_gap));
  o += ",\"id_horizon\":" + JsonQuote(FormatDuration(config.id_horizon_ms));
  o += ",\"producer_retention\":" +
       (config.producer_retention_ms > 0 ? JsonQuote(FormatDuration(config.producer_retention_ms)) : "null");
  o += ",\"retain\":" + (config.retain_ms > 0 ? JsonQuote(FormatDuration(config.retain_ms)) : "null");
  o += ",\"max_ahead\":" + (config.max_ahead_ms > 0 ? JsonQuote(FormatDuration(config.max_ahead_ms)) : "null");
  o += ",\"max_event_ts\":" + opt_time(s.max_event_ts);
  o += ",\"watermark\":" + opt_time(s.watermark);
  o += ",\"watermark_rule\":" + JsonQuote(WatermarkRule(config));
  o += ",\"watermark_held\":" +
       (s.held_event_ts ? "{\"ts\":" + opt_time(s.held_event_ts) + ",\"producer\":" + JsonQuote(s.held_producer) + "}"
                        : std::string("null"));
  o += ",\"oldest_kept_window\":" + opt_time(s.oldest_kept_window);
  o += ",\"current_generation\":" + U(s.current_generation);
  o += ",\"published_at\":" + opt_time(s.published_at_ms);
  o += ",\"window_states\":{";
  for (size_t i = 0; i < std::size(kWindowStates); ++i) {
    uint64_t n = 0;
    for (const api::WindowStatus& w : s.windows) n += w.state == kWindowStates[i];
    o += (i > 0 ? ",\"" : "\"") + std::string(kWindowStates[i]) + "\":" + U(n);
  }
  o += "}";
  o += ",\"open_windows\":[";
  bool first = true;
  for (const api::WindowStatus& w : s.windows) {
    if (w.state != "open") continue;
    o += first ? "" : ",";
    first = false;
    o += "{\"window\":" + JsonQuote(FormatIso(w.window_start_ms)) +
         ",\"closes_at\":" + JsonQuote(FormatIso(w.closes_at_ms)) + ",\"dirty\":" + (w.dirty ? "true" : "false") +
         ",\"events\":" + std::to_string(w.events) + ",\"count\":" + std::to_string(w.count) + "}";
  }
  o += "],\"staged_windows\":[";
  first = true;
  for (const api::WindowStatus& w : s.windows) {
    if (!w.staged) continue;
    o += first ? "" : ",";
    first = false;
    o += "{\"window\":" + JsonQuote(FormatIso(w.window_start_ms)) + ",\"version\":" + U(w.version) + "}";
  }
  o += "],\"sources\":[";
  first = true;
  for (const api::SourceStatus& src : s.sources) {
    o += first ? "" : ",";
    first = false;
    const api::SourceView& st = src.source;
    o += "{\"source\":" + JsonQuote(st.source) +
         ",\"path\":" + (src.path.empty() ? std::string("null") : JsonQuote(src.path)) +
         ",\"backfill\":" + (src.backfill ? "true" : "false") + ",\"offset\":" + U(st.offset);
    if (st.read) {  // the write path's progress (a Kafka partition): lag = end - read
      o += ",\"size\":null,\"lag\":" + U(*st.end > *st.read ? *st.end - *st.read : 0);
    } else if (src.file_size >= 0) {
      const uint64_t size = static_cast<uint64_t>(src.file_size);
      o += ",\"size\":" + U(size) + ",\"lag\":" + U(size > st.offset ? size - st.offset : 0);
    } else {
      o += ",\"size\":null,\"lag\":null";
    }
    o += ",\"lines\":" + U(st.lines) + ",\"applied\":" + U(st.applied) + ",\"duplicates\":" + U(st.duplicates) +
         ",\"fenced\":" + U(st.fenced) + ",\"rejected\":" + U(st.rejected) + ",\"ignored\":" + U(st.ignored) +
         ",\"duplicates_id\":" + U(st.duplicates_id) + ",\"rejected_horizon\":" + U(st.rejected_horizon) +
         ",\"rejected_retired\":" + U(st.rejected_retired);
    if (st.position || st.read) {  // a source of the write path (a Kafka partition)
      o += ",\"position\":" + (st.position ? JsonQuote(*st.position) : std::string("null"));
      o += ",\"read\":" + (st.read ? U(*st.read) : std::string("null"));
      o += ",\"high_watermark\":" + (st.end ? U(*st.end) : std::string("null"));
      o += ",\"newest_event\":" + opt_time(st.newest_event_ms);
      // When its owner last wrote it, and how long ago (display only: a stopped owner's lag stays as it left it).
      o += ",\"progress_at\":" + opt_time(src.progress_at_ms) + ",\"progress_age_seconds\":" +
           (src.progress_at_ms ? std::to_string(ProgressAgeSeconds(*src.progress_at_ms)) : std::string("null"));
    }
    o += "}";
  }
  o += "],\"producers\":" + U(s.producers) + ",\"retired_producers\":" + U(s.retired_producers);
  o += ",\"split_producers\":[";
  for (size_t i = 0; i < s.split_producers.size(); ++i) {
    o += (i == 0 ? "{\"producer\":" : ",{\"producer\":") + JsonQuote(s.split_producers[i].producer) +
         ",\"sources\":" + JsonQuote(s.split_producers[i].sources) + "}";
  }
  o += "]";
  // Each declared metric's kind; a quantiles one's accuracy as a fraction (0.01 = 1%),
  // a distinct one's precision.
  o += ",\"metrics\":[";
  for (size_t i = 0; i < s.metrics.size(); ++i) {
    const api::MetricKindInfo& m = s.metrics[i];
    o += (i == 0 ? "{\"metric\":" : ",{\"metric\":") + JsonQuote(m.metric) + ",\"kind\":" +
         JsonQuote(api::MetricKindName(m.kind));
    if (m.kind == api::MetricKind::kQuantiles) o += ",\"accuracy\":" + FormatPpmFraction(m.accuracy_ppm);
    if (m.kind == api::MetricKind::kDistinct) o += ",\"precision\":" + std::to_string(m.precision);
    o += "}";
  }
  o += "]";
  o += ",\"ids\":{\"held\":" + U(s.ids.held) + ",\"oldest\":" + opt_time(s.ids.oldest) + ",\"cutoff\":" +
       (s.ids.cutoff ? JsonQuote(FormatIso(*s.ids.cutoff)) : std::string("null")) +
       ",\"table_bytes\":" + U(s.ids.table_bytes) + "}";
  o += ",\"producers_with_gaps\":[";
  first = true;
  for (const api::ProducerGaps& p : s.gaps) {
    o += first ? "" : ",";
    first = false;
    uint64_t missing = 0;
    for (const api::SeqRange& g : p.missing) missing += g.last + 1 - g.first;
    o += "{\"producer\":" + JsonQuote(p.producer) + ",\"epoch\":" + U(p.epoch) + ",\"open_gaps\":" +
         U(p.missing.size()) + ",\"missing\":" + U(missing) + "}";
  }
  o += "],\"disk\":{";
  first = true;
  for (const DirUsage& d : s.disk) {
    o += (first ? "" : ",") + JsonQuote(d.dir) + ":" + U(d.bytes);
    first = false;
  }
  o += "}}\n";
  return o;
}

}  // namespace snapsink
