// embed ROOT EVENTS.ndjson: creates a root (1 minute windows) unless ROOT
// is one already (a rerun), ingests the file, seals every window and publishes, then reads the rows back with the
// public Reader: a scan of each window and a point lookup of its first row.
// Prints one line per row; exits non-zero on any error.
#include <cstdio>
#include <string>

#include <snapsink/reader.h>
#include <snapsink/sink.h>
#include <snapsink/utilities/parse.h>

namespace api = snapsink::api;

static int Fail(const snapsink::Status& s) {
  std::fprintf(stderr, "embed: %s\n", s.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: embed ROOT EVENTS.ndjson\n");
    return 2;
  }
  const std::string root = argv[1], events = argv[2];
  api::InitOptions init;
  init.window_size_ms = 60 * 1000;
  // The first run creates the root; a rerun goes on with the one it made
  // (the file's lines already read are not read again).
  if (!api::Sink::OpenReadOnly(root).ok()) {
    if (snapsink::Status s = api::Sink::Create(root, init); !s.ok()) return Fail(s);
  }
  {
    auto sink = api::Sink::Open(root);  // the writer: holds the root's LOCK
    if (!sink.ok()) return Fail(sink.status());
    api::RunOptions run;
    run.ingest.files = {events};
    run.final = true;
    api::RunResult r;
    if (snapsink::Status s = (*sink)->Run(run, &r); !s.ok()) return Fail(s);
    for (const api::SourceInfo& src : r.ingest.sources) {
      std::printf("ingested %s: %llu lines, %llu applied\n", src.source.c_str(),
                  static_cast<unsigned long long>(src.lines), static_cast<unsigned long long>(src.applied));
    }
    if (r.publish.generation == 0) {
      std::printf("nothing new to publish\n");
    } else {
      std::printf("published generation %llu: %zu window(s)\n",
                  static_cast<unsigned long long>(r.publish.generation), r.publish.windows);
    }
  }
  auto reader = api::Reader::Open(root);
  if (!reader.ok()) return Fail(reader.status());
  size_t rows = 0;
  for (const api::WindowVersion& w : (*reader)->windows()) {
    api::Row first;
    bool have_first = false;
    snapsink::Status s = (*reader)->Scan(w.window_start_ms, std::nullopt, [&](const api::Row& row) {
      if (!have_first) first = row;
      have_first = true;
      ++rows;
      std::printf("%s v%llu %s %s count=%lld sum=%s\n", api::FormatTime(w.window_start_ms).c_str(),
                  static_cast<unsigned long long>(w.version), row.metric.c_str(), row.key.c_str(),
                  static_cast<long long>(row.count), api::FormatMicros(row.sum_micros).c_str());
    });
    if (!s.ok()) return Fail(s);
    if (!have_first) continue;
    auto got = (*reader)->Get(w.window_start_ms, first.metric, first.key);
    if (!got.ok()) return Fail(got.status());
    if (got->count != first.count || got->sum_micros != first.sum_micros) {
      std::fprintf(stderr, "embed: Get and Scan disagree on %s/%s\n", first.metric.c_str(), first.key.c_str());
      return 1;
    }
  }
  if (rows == 0) {
    std::fprintf(stderr, "embed: no rows published\n");
    return 1;
  }
  std::printf("ok: %zu row(s) in generation %llu\n", rows, static_cast<unsigned long long>((*reader)->generation()));
  return 0;
}
