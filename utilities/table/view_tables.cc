// api::ToTable (include/snapsink/utilities/table.h): the fields and columns
// of every view (docs/CONTRACT.md 6), on the public
// API only.
#include <algorithm>
#include <cstdio>

#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/table.h"

namespace snapsink::api {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }
std::string I(int64_t v) { return std::to_string(v); }

// An optional time: its ISO text, or JSON null.
void OptTime(Record* r, const std::string& name, const std::optional<int64_t>& t) {
  if (t) {
    r->Str(name, FormatTime(*t));
  } else {
    r->Num(name, "null");
  }
}

Record OpenGap(const GapInfo& g) {
  Record r;
  r.Str("producer", g.producer);
  r.Num("epoch", U(g.epoch));
  r.Num("from_seq", U(g.from_seq));
  r.Num("to_seq", U(g.to_seq));
  r.Num("missing", U(g.missing));
  return r;
}

}  // namespace

Table ToTable(const std::vector<ProducerInfo>& producers) {
  Table t{{"producer", "epoch", "next_seq", "open_gaps", "last_seen", "retired"}, {}};
  for (const ProducerInfo& p : producers) {
    Record r;
    r.Str("producer", p.producer);
    r.Num("epoch", U(p.epoch));
    r.Num("next_seq", U(p.next_seq));
    r.Num("open_gaps", U(p.open_gaps));
    OptTime(&r, "last_seen", p.last_seen);
    r.Bool("retired", p.retired);
    t.records.push_back(std::move(r));
  }
  return t;
}

Table ToTable(const std::vector<GapInfo>& gaps) {
  Table t{{"producer", "epoch", "from_seq", "to_seq", "missing"}, {}};
  for (const GapInfo& g : gaps) t.records.push_back(OpenGap(g));
  return t;
}

Table ToTable(const std::vector<GapInfo>& open, const std::vector<AcceptedGapInfo>& accepted) {
  Table t{{"producer", "epoch", "from_seq", "to_seq", "missing", "state", "accepted_at"}, {}};
  for (const GapInfo& g : open) {
    Record r = OpenGap(g);
    r.Str("state", "open");
    r.Str("accepted_at", "");
    t.records.push_back(std::move(r));
  }
  for (const AcceptedGapInfo& a : accepted) {
    Record r;
    r.Str("producer", a.gap.producer);
    r.Str("epoch", a.gap.epoch ? U(*a.gap.epoch) : "any");
    r.Num("from_seq", U(a.gap.range.first));
    r.Num("to_seq", U(a.gap.range.last));
    r.Str("missing", "");
    r.Str("state", "accepted");
    r.Str("accepted_at", FormatTime(a.accepted_at_ms));
    t.records.push_back(std::move(r));
  }
  return t;
}

Table ToTable(const std::vector<AcceptedSourceGapInfo>& accepted) {
  Table t{{"source", "from_position", "to_position", "missing", "state", "accepted_at"}, {}};
  for (const AcceptedSourceGapInfo& a : accepted) {
    Record r;
    r.Str("source", a.gap.source);
    r.Num("from_position", U(a.gap.first));
    r.Num("to_position", U(a.gap.last));
    r.Num("missing", U(a.gap.last - a.gap.first + 1));
    r.Str("state", "accepted");
    r.Str("accepted_at", FormatTime(a.accepted_at_ms));
    t.records.push_back(std::move(r));
  }
  return t;
}

Table ToTable(const std::vector<SourceView>& sources) {
  Table t{{"source", "offset", "lines", "applied", "duplicates", "fenced", "rejected", "ignored"}, {}};
  // Sources of the write path (a Kafka partition) add their progress; a
  // root of files only prints the columns it always did.
  bool progress = false;
  for (const SourceView& s : sources) progress = progress || s.position || s.read;
  if (progress) t.columns.insert(t.columns.end(), {"position", "high_watermark", "lag", "newest_event"});
  for (const SourceView& s : sources) {
    Record r;
    r.Str("source", s.source);
    r.Num("offset", U(s.offset));
    r.Num("lines", U(s.lines));
    r.Num("applied", U(s.applied));
    r.Num("duplicates", U(s.duplicates));
    r.Num("fenced", U(s.fenced));
    r.Num("rejected", U(s.rejected));
    r.Num("ignored", U(s.ignored));
    r.Num("duplicates_id", U(s.duplicates_id));
    r.Num("rejected_horizon", U(s.rejected_horizon));
    r.Num("rejected_retired", U(s.rejected_retired));
    if (progress) {
      if (s.position) {
        r.Str("position", *s.position);
      } else {
        r.Num("position", "null");
      }
      r.Num("high_watermark", s.end ? U(*s.end) : "null");
      r.Num("lag", s.end && s.read ? U(*s.end > *s.read ? *s.end - *s.read : 0) : "null");
      OptTime(&r, "newest_event", s.newest_event_ms);
    }
    t.records.push_back(std::move(r));
  }
  return t;
}

Table ToTable(const IdsInfo& ids) {
  Table t{{"ids", "oldest", "horizon", "cutoff", "table_bytes"}, {}};
  Record r;
  r.Num("ids", U(ids.held));
  OptTime(&r, "oldest", ids.oldest);
  r.Str("horizon", FormatDuration(ids.horizon_ms));
  OptTime(&r, "cutoff", ids.cutoff);
  r.Num("table_bytes", U(ids.table_bytes));
  t.records.push_back(std::move(r));
  return t;
}

Table ToTable(const std::vector<WindowInfo>& windows) {
  Table t{{"window", "version", "dirty", "closed", "events", "count"}, {}};
  for (const WindowInfo& w : windows) {
    Record r;
    r.Str("window", FormatTime(w.window_start_ms));
    r.Num("version", U(w.version));
    r.Bool("dirty", w.dirty);
    r.Bool("closed", w.closed);
    r.Num("events", I(w.events));
    r.Num("count", I(w.count));
    t.records.push_back(std::move(r));
  }
  return t;
}

Table ToTable(const std::vector<SnapshotInfo>& snapshots) {
  Table t{{"window", "version", "rows", "events", "bytes", "generations", "current"}, {}};
  for (const SnapshotInfo& s : snapshots) {
    Record r;
    r.Str("window", FormatTime(s.window_start_ms));
    r.Num("version", U(s.version));
    r.Num("rows", U(s.rows));
    r.Num("events", I(s.events));
    r.Num("bytes", U(s.bytes));
    r.Num("generations", U(s.generations));
    r.Bool("current", s.current);
    t.records.push_back(std::move(r));
  }
  return t;
}

Table ToTable(const std::vector<GenerationInfo>& generations) {
  Table t{{"generation", "parent", "windows", "rollback_of", "current"}, {}};
  for (const GenerationInfo& g : generations) {
    Record r;
    r.Num("generation", U(g.generation));
    r.Num("parent", U(g.parent));
    r.Num("windows", U(g.windows));
    r.Num("rollback_of", U(g.rollback_of));
    r.Bool("current", g.current);
    t.records.push_back(std::move(r));
  }
  return t;
}

std::string QuantileColumn(double q) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%.10g", q * 100);
  return buf;
}

namespace {

// The quantile columns after `after`, and a row's answers into r.
void AddQuantileColumns(Table* t, const std::string& after, const std::vector<double>& quantiles) {
  auto at = std::find(t->columns.begin(), t->columns.end(), after) + 1;
  for (double q : quantiles) at = t->columns.insert(at, QuantileColumn(q)) + 1;
}

void PutQuantiles(Record* r, const std::vector<double>& quantiles, const std::vector<std::optional<int64_t>>& answers) {
  for (size_t i = 0; i < answers.size() && i < quantiles.size(); ++i) {
    if (answers[i]) r->Num(QuantileColumn(quantiles[i]), FormatMicros(*answers[i]));
  }
}

}  // namespace

Table ToTable(const std::vector<QueryRow>& rows, uint64_t generation, const std::vector<double>& quantiles) {
  Table t{{"window", "metric", "key", "count", "sum", "version", "generation"}, {}};
  // min and max columns only when a row has them (a minmax metric's): the
  // output of sum metrics is what it always was.
  const bool range =
      std::any_of(rows.begin(), rows.end(), [](const QueryRow& q) { return q.row.min_micros.has_value(); });
  if (range) t.columns.insert(t.columns.begin() + 5, {"min", "max"});
  // distinct likewise (a distinct metric's), after them.
  const bool distinct =
      std::any_of(rows.begin(), rows.end(), [](const QueryRow& q) { return q.row.distinct.has_value(); });
  if (distinct) t.columns.insert(t.columns.begin() + (range ? 7 : 5), "distinct");
  AddQuantileColumns(&t, distinct ? "distinct" : range ? "max" : "sum", quantiles);
  const std::string gen = U(generation);
  for (const QueryRow& q : rows) {
    Record r;
    r.Str("window", FormatTime(q.window_start_ms));
    r.Str("metric", q.row.metric);
    r.Str("key", q.row.key);
    r.Num("count", I(q.row.count));
    r.Num("sum", FormatMicros(q.row.sum_micros));
    if (q.row.min_micros && q.row.max_micros) {
      r.Num("min", FormatMicros(*q.row.min_micros));
      r.Num("max", FormatMicros(*q.row.max_micros));
    }
    if (q.row.distinct) r.Num("distinct", U(*q.row.distinct));
    PutQuantiles(&r, quantiles, q.row.quantile_micros);
    r.Num("version", U(q.version));
    r.Num("generation", gen);
    t.records.push_back(std::move(r));
  }
  return t;
}

Table ToTable(const std::vector<RollupRow>& rows, uint64_t generation, const std::vector<double>& quantiles) {
  Table t{{"bucket", "metric", "key", "count", "sum", "windows", "generation"}, {}};
  const bool range =
      std::any_of(rows.begin(), rows.end(), [](const RollupRow& q) { return q.min_micros.has_value(); });
  if (range) t.columns.insert(t.columns.begin() + 5, {"min", "max"});
  // distinct likewise (a distinct metric's), after them.
  const bool distinct =
      std::any_of(rows.begin(), rows.end(), [](const RollupRow& q) { return q.distinct.has_value(); });
  if (distinct) t.columns.insert(t.columns.begin() + (range ? 7 : 5), "distinct");
  AddQuantileColumns(&t, distinct ? "distinct" : range ? "max" : "sum", quantiles);
  const std::string gen = U(generation);
  for (const RollupRow& q : rows) {
    Record r;
    r.Str("bucket", q.bucket_ms ? FormatTime(*q.bucket_ms) : "all");
    r.Str("metric", q.metric);
    r.Str("key", q.key);
    r.Num("count", I(q.count));
    r.Num("sum", FormatMicros(q.sum_micros));
    if (q.min_micros && q.max_micros) {
      r.Num("min", FormatMicros(*q.min_micros));
      r.Num("max", FormatMicros(*q.max_micros));
    }
    if (q.distinct) r.Num("distinct", U(*q.distinct));
    PutQuantiles(&r, quantiles, q.quantile_micros);
    r.Num("windows", U(q.windows));
    r.Num("generation", gen);
    t.records.push_back(std::move(r));
  }
  return t;
}

}  // namespace snapsink::api
