// query, and inspect snapshots|generations: what readers see.
#include <cstdio>
#include <map>

#include "engine/decimal.h"
#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "publish/current_file.h"
#include "publish/publisher.h"
#include "publish/reader.h"
#include "tools/commands.h"
#include "tools/window_arg.h"

namespace snapsink {

Status CmdQuery(const QueryArgs& a) {
  Env* env = Env::Default();
  if (!env->FileExists(filenames::StateDir(a.root))) {
    return Status::NotFound(a.root + " is not a snapsink root");
  }
  int64_t window = 0;
  if (!a.window.empty()) {
    // The window size is a setting of the root; a time names the window holding it.
    std::unique_ptr<Root> root;
    SNAPSINK_RETURN_IF_ERROR(Root::Open(env, a.root, /*writer=*/false, &root));
    SNAPSINK_RETURN_IF_ERROR(ParseWindowArg("--window", a.window, root->config().window_ms, &window));
  }
  std::unique_ptr<Reader> reader;
  Status s = Reader::Open(env, a.root, a.generation, &reader);
  if (s.IsNotFound() && a.generation == 0) {
    std::fprintf(stderr, "snapsink: %s\n", s.message().c_str());
    PrintRecords({}, {"window", "metric", "key", "count", "sum", "version", "generation"}, a.format);
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(s);
  std::vector<GenerationEntry> windows;
  if (!a.window.empty()) {
    if (const GenerationEntry* e = reader->Find(window)) windows.push_back(*e);
  } else {
    windows = reader->windows();
  }
  const std::string gen = std::to_string(reader->generation());
  std::vector<Record> records;
  auto emit = [&](const GenerationEntry& e, const Row& row) {
    Record r;
    r.Str("window", FormatIso(e.window_ms));
    r.Str("metric", row.metric);
    r.Str("key", row.key);
    r.Num("count", std::to_string(row.count));
    r.Num("sum", FormatMicros(row.sum_micros));
    r.Num("version", std::to_string(e.version));
    r.Num("generation", gen);
    records.push_back(std::move(r));
  };
  for (const GenerationEntry& e : windows) {
    if (!a.metric.empty() && a.has_key) {
      Row row;
      Status g = reader->Get(e.window_ms, a.metric, a.key, &row);
      if (g.IsNotFound()) continue;
      SNAPSINK_RETURN_IF_ERROR(g);
      emit(e, row);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(reader->Scan(e.window_ms, a.metric.empty() ? nullptr : &a.metric, [&](const Row& row) {
      if (!a.has_key || row.key == a.key) emit(e, row);
    }));
  }
  PrintRecords(records, {"window", "metric", "key", "count", "sum", "version", "generation"}, a.format);
  if (records.empty() && (!a.window.empty() || !a.metric.empty() || a.has_key)) {
    std::string filter;
    if (!a.window.empty()) filter += " --window " + a.window;
    if (!a.metric.empty()) filter += " --metric " + a.metric;
    if (a.has_key) filter += " --key " + a.key;
    std::fprintf(stderr, "snapsink: no rows in generation %s match%s\n", gen.c_str(), filter.c_str());
  }
  return Status::OK();
}

Status InspectPublished(Root* root, const std::string& what, OutputFormat format) {
  Env* env = root->env();
  CurrentPointer pointer;
  SNAPSINK_RETURN_IF_ERROR(ReadCurrentPointer(env, root->path(), &pointer));
  const uint64_t current = pointer.generation;
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::ManifestsDir(root->path()), &names);
  if (!s.ok() && !s.IsNotFound()) return s;
  std::map<uint64_t, GenerationManifest> generations;
  for (const std::string& n : names) {
    uint64_t g;
    if (!filenames::ParseGenerationName(n, &g)) continue;
    Status read = ReadGenerationManifest(env, root->path(), g, &generations[g]);
    if (read.IsNotFound()) {  // gc removed it since the listing: not shown
      generations.erase(g);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(read);
  }
  std::vector<Record> records;
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
    PrintRecords(records, {"generation", "parent", "windows", "rollback_of", "current"}, format);
    return Status::OK();
  }
  // snapshots: every published snapshot directory, and which generations use it.
  std::vector<std::string> windows;
  s = env->GetChildren(filenames::SnapshotsDir(root->path()), &windows);
  if (!s.ok() && !s.IsNotFound()) return s;
  for (const std::string& wname : windows) {
    int64_t w;
    if (!filenames::ParseWindowDirName(wname, &w)) continue;
    std::vector<std::string> versions;
    s = env->GetChildren(filenames::SnapshotWindowDir(root->path(), w), &versions);
    if (s.IsNotFound()) continue;  // gc removed the window since the listing
    SNAPSINK_RETURN_IF_ERROR(s);
    for (const std::string& vname : versions) {
      uint64_t v;
      if (!filenames::ParseVersionDirName(vname, &v)) continue;
      const std::string dir = filenames::SnapshotDir(root->path(), w, v);
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
  PrintRecords(records, {"window", "version", "rows", "events", "bytes", "generations", "current"}, format);
  return Status::OK();
}

}  // namespace snapsink
