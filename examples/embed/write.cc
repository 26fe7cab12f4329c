// embed_write ROOT EVENTS.ndjson: feeds a root from memory with the write
// path (snapsink/write_batch.h) and keeps its input position in the root:
// the file's lines are held in memory (as a consumer holds its records),
// written in batches of 50 lines, each with the index of the next line as
// the source's position, committed with the batch's effects. Restarted
// after a crash it resumes from Sink::Position, so every event is applied
// exactly once. Then it seals every window, publishes, and prints the
// published rows (stdout); progress goes to stderr.
//
// Crash on purpose at a crash point, then run again: the rows printed equal
// a clean run's.
//   SNAPSINK_CRASH_AT=ingest.after_commit SNAPSINK_CRASH_HIT=3 embed_write R events.ndjson  # exits 99
//   embed_write R events.ndjson
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <snapsink/reader.h>
#include <snapsink/sink.h>
#include <snapsink/utilities/parse.h>

namespace api = snapsink::api;

static int Fail(const snapsink::Status& s) {
  std::fprintf(stderr, "embed_write: %s\n", s.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: embed_write ROOT EVENTS.ndjson\n");
    return 2;
  }
  const std::string root = argv[1];
  std::vector<std::string> lines;
  {
    std::ifstream in(argv[2]);
    if (!in) return Fail(snapsink::Status::NotFound(std::string("cannot read ") + argv[2]));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::unique_ptr<api::Sink> sink;
  if (auto opened = api::Sink::Open(root); opened.ok()) {
    sink = std::move(*opened);
  } else {  // a first run: create the root
    api::InitOptions init;
    init.window_size_ms = 60 * 1000;
    if (snapsink::Status s = api::Sink::Create(root, init); !s.ok()) return Fail(s);
    auto created = api::Sink::Open(root);
    if (!created.ok()) return Fail(created.status());
    sink = std::move(*created);
  }
  auto position = sink->Position("memory");
  if (!position.ok()) return Fail(position.status());
  size_t next = *position ? std::stoul(**position) : 0;
  std::fprintf(stderr, "embed_write: %s at line %zu of %zu\n", *position ? "resuming" : "starting", next, lines.size());
  constexpr size_t kBatch = 50;
  for (; next < lines.size(); next += kBatch) {
    api::WriteBatch batch("memory");
    const size_t end = std::min(lines.size(), next + kBatch);
    for (size_t i = next; i < end; ++i) batch.Add(lines[i], "line " + std::to_string(i + 1));
    batch.SetPosition(std::to_string(end));
    if (snapsink::Status s = sink->Write(batch); !s.ok()) return Fail(s);
  }
  api::SealOptions all;
  all.all = true;
  if (auto sealed = sink->Seal(all); !sealed.ok()) return Fail(sealed.status());
  if (auto published = sink->Publish(); !published.ok()) return Fail(published.status());
  sink.reset();

  auto reader = api::Reader::Open(root);
  if (!reader.ok()) return Fail(reader.status());
  for (const api::WindowVersion& w : (*reader)->windows()) {
    snapsink::Status s = (*reader)->Scan(w.window_start_ms, std::nullopt, [&](const api::Row& row) {
      std::printf("%s v%llu %s %s count=%lld sum=%s\n", api::FormatTime(w.window_start_ms).c_str(),
                  static_cast<unsigned long long>(w.version), row.metric.c_str(), row.key.c_str(),
                  static_cast<long long>(row.count), api::FormatMicros(row.sum_micros).c_str());
    });
    if (!s.ok()) return Fail(s);
  }
  return 0;
}
