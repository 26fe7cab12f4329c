// query: rows of the current (or a given) generation (api::Reader::Query).
#include <cstdio>
#include <memory>
#include <filesystem>
#include <string>
#include <vector>

#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/query_text.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

// A roll-up as json or csv, printed as it is made (api::Reader::RollupEach,
// a batch of rows at a time): the bytes PrintTable prints of its rows
// whole, without holding them. A csv header is the whole answer's (min and
// max, distinct, when a row has them), so a first pass looks for such rows. *rows:
// how many were printed.
Status PrintRollup(api::Reader* reader, const api::QuerySpec& spec, OutputFormat format, size_t* rows) {
  bool range = false, distinct = false;
  if (format == OutputFormat::kCsv) {
    SNAPSINK_RETURN_IF_ERROR(reader->RollupEach(spec, [&](const api::RollupRow& r) {
      range = range || r.min_micros.has_value();
      distinct = distinct || r.distinct.has_value();
      return !distinct;  // a distinct row has a range too: nothing more to learn
    }));
  }
  std::vector<api::RollupRow> batch(range ? 1 : 0);
  if (range) batch[0].min_micros = batch[0].max_micros = 0;
  if (distinct) batch[0].distinct = 0;
  const std::vector<std::string> columns = api::ToTable(batch, 0, spec.quantiles).columns;
  batch.clear();
  const std::string header = api::FormatRecords({}, columns, format);  // "" for json
  std::fwrite(header.data(), 1, header.size(), stdout);
  const auto flush = [&] {
    if (batch.empty()) return;
    const std::string text =
        api::FormatRecords(api::ToTable(batch, reader->generation(), spec.quantiles).records, columns, format);
    std::fwrite(text.data() + header.size(), 1, text.size() - header.size(), stdout);
    batch.clear();
  };
  *rows = 0;
  Status s = reader->RollupEach(spec, [&](const api::RollupRow& r) {
    batch.push_back(r);
    ++*rows;
    if (batch.size() >= 512) flush();
    return true;
  });
  flush();
  return s;
}

Status CmdQuery(const QueryArgs& a) {
  // Opened first: it tells a path that is not a root ("X is not a snapsink
  // root") before anything else is said about the arguments. Only the top
  // manifest: a query reads the manifest parts of the windows it selects.
  Result<std::unique_ptr<api::Reader>> reader = api::Reader::OpenTop(a.root, a.generation);
  const bool in_bucket = a.root.rfind("s3://", 0) == 0;  // its state/ is not a local directory
  const bool not_a_root = !reader.ok() && reader.status().IsNotFound() &&
                          (in_bucket ? !api::Sink::OpenReadOnly(a.root).ok()
                                     : !std::filesystem::exists(std::filesystem::path(a.root) / "state"));
  if (not_a_root) return reader.status();
  api::QueryText text;
  if (!a.window.empty()) text.window = a.window;
  if (!a.from.empty()) text.from = a.from;
  if (!a.to.empty()) text.to = a.to;
  if (a.has_rollup) text.rollup = a.rollup;
  if (!a.quantile.empty()) text.quantile = a.quantile;
  text.metric = a.metric;
  if (a.has_key) text.key = a.key;
  text.metric_prefix = a.metric_prefix;
  text.key_prefix = a.key_prefix;
  int64_t window_size_ms = 0;
  if (text.window || text.from || text.to || text.rollup) {
    // The window size is a setting of the root; a time names the window holding it.
    SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(a.root));
    window_size_ms = sink->settings().window_size_ms;
  }
  api::QuerySpec spec;
  SNAPSINK_RETURN_IF_ERROR(
      api::ParseQuery(text, window_size_ms, &spec, {"--window", "--from", "--to", "--rollup", "--quantile"}));
  if (!reader.ok() && reader.status().IsNotFound() && a.generation == 0) {
    // No CURRENT: nothing published, unless the state records a generation
    // (then GetStatus fails naming it and the fix).
    SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(a.root));
    SNAPSINK_RETURN_IF_ERROR(sink->GetStatus().status());
    std::fprintf(stderr, "snapsink: %s\n", reader.status().message().c_str());
    PrintTable(a.has_rollup ? api::ToTable(std::vector<api::RollupRow>{}, 0)
                            : api::ToTable(std::vector<api::QueryRow>{}, 0), a.format);
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(reader.status());
  bool empty = false;
  if (spec.rollup_ms && a.format != OutputFormat::kTable) {
    size_t rows = 0;
    SNAPSINK_RETURN_IF_ERROR(PrintRollup(reader->get(), spec, a.format, &rows));
    empty = rows == 0;
  } else if (spec.rollup_ms) {  // a table's columns are as wide as its widest cell: held whole
    std::vector<api::RollupRow> rows;
    SNAPSINK_RETURN_IF_ERROR((*reader)->Rollup(spec, &rows));
    PrintTable(api::ToTable(rows, (*reader)->generation(), spec.quantiles), a.format);
    empty = rows.empty();
  } else {
    std::vector<api::QueryRow> rows;
    SNAPSINK_RETURN_IF_ERROR((*reader)->Query(spec, &rows));
    PrintTable(api::ToTable(rows, (*reader)->generation(), spec.quantiles), a.format);
    empty = rows.empty();
  }
  const bool filtered = !a.window.empty() || !a.metric.empty() || a.has_key || !a.from.empty() || !a.to.empty() ||
                        !a.metric_prefix.empty() || !a.key_prefix.empty();
  if (empty && filtered) {
    std::string filter;
    if (!a.window.empty()) filter += " --window " + a.window;
    if (!a.from.empty()) filter += " --from " + a.from;
    if (!a.to.empty()) filter += " --to " + a.to;
    if (!a.metric.empty()) filter += " --metric " + a.metric;
    if (!a.metric_prefix.empty()) filter += " --metric-prefix " + a.metric_prefix;
    if (a.has_key) filter += " --key " + a.key;
    if (!a.key_prefix.empty()) filter += " --key-prefix " + a.key_prefix;
    std::fprintf(stderr, "snapsink: no rows in generation %llu match%s\n",
                 static_cast<unsigned long long>((*reader)->generation()), filter.c_str());
  }
  return Status::OK();
}

}  // namespace

Command RegisterQuery(CLI::App& app) {
  struct Flags {
    QueryArgs args;
    std::string format = "table";
  };
  auto f = std::make_shared<Flags>();
  QueryArgs* a = &f->args;
  auto* c = app.add_subcommand("query", "Read the current (or a given) generation");
  AddRoot(c, &a->root);
  AddBucketCache(c);
  c->add_option("--window", a->window, WindowHelp("Only this window."));
  c->add_option("--metric", a->metric, "Only this metric");
  CLI::Option* key = c->add_option("--key", a->key, "Only this key");
  c->add_option("--from", a->from, WindowHelp("Only windows from this one on (inclusive)."));
  c->add_option("--to", a->to, WindowHelp("Only windows up to this one (inclusive)."));
  c->add_option("--metric-prefix", a->metric_prefix, "Only metrics starting with this (a range scan)");
  c->add_option("--key-prefix", a->key_prefix, "Only keys starting with this (a range scan)");
  c->add_option("--quantile", a->quantile,
                "A quantiles metric's rows: these quantiles, comma-separated (e.g. 0.5,0.9,0.99), as columns "
                "p50, p90, p99");
  CLI::Option* rollup =
      c->add_option("--rollup", a->rollup,
                    "Add the rows into buckets of this duration (a multiple of the window size, aligned to the "
                    "Unix epoch; e.g. 1d), or all: bucket, metric, key, count, sum, windows, generation");
  c->add_option("--generation", a->generation, "Read this generation (1 or more) instead of the current one")
      ->check(AtLeast(1));
  c->add_option("--format", f->format, "table (default), json (one object per line) or csv")
      ->check(OneOf({"table", "json", "csv"}));
  c->footer(Footer(ExitStatusLine({{Exit::kOk, "ok (a filter that matches nothing says so on stderr)"},
                                   Exit::kFailure, Exit::kCorruption}),
                   "snapsink query /data/orders --window 2026-10-21T10:30:00Z --format json"));
  return {c, [f, key, rollup] {
            QueryArgs& q = f->args;
            q.has_key = key->count() > 0;
            q.has_rollup = rollup->count() > 0;
            q.format = f->format == "json"  ? OutputFormat::kJson
                       : f->format == "csv" ? OutputFormat::kCsv
                                            : OutputFormat::kTable;
            return CmdQuery(q);
          }};
}

}  // namespace snapsink
