#include "publish/generation_reader.h"

#include <xxhash.h>

#include <algorithm>

#include <fmt/format.h>

#include "engine/filenames.h"
#include "engine/timeutil.h"
#include "snapshot/checked_json.h"
#include "publish/current_file.h"
#include "publish/generation_parts.h"
#include "snapshot/snapshot_manifest.h"
#include "snapshot/table_cache.h"

namespace snapsink {

Status Reader::OpenTop(Env* env, const std::string& root, uint64_t generation, std::unique_ptr<Reader>* out) {
  std::unique_ptr<Reader> r(new Reader);
  r->env_ = env;
  r->root_ = root;
  // A generation named by CURRENT may be collected between reading CURRENT and
  // pinning it (it stopped being current meanwhile): then read CURRENT again.
  for (int attempt = 0;; ++attempt) {
    uint64_t g = generation;
    CurrentPointer current;
    if (g == 0) {
      SNAPSINK_RETURN_IF_ERROR(ReadCurrentPointer(env, root, &current));
      g = current.generation;
      if (g == 0) return Status::NotFound("nothing is published in " + root + " yet");
    }
    const std::string path = filenames::GenerationManifest(root, g);
    Status s = env->LockFileShared(path, &r->pin_);
    bool exists = false;
    if (s.ok()) SNAPSINK_RETURN_IF_ERROR(env->Exists(path, &exists));
    if (s.ok() && exists) {
      if (generation == 0) {
        // CURRENT names the manifest by number and checksum: both must hold.
        s = ReadTopManifestNamedBy(env, root, current, &r->manifest_);
        if (s.IsNotFound()) return Status::Corruption(s.message());
        SNAPSINK_RETURN_IF_ERROR(s);
        break;
      }
      std::string text;
      SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(path, &text));
      // A given generation that CURRENT names is read as the current one:
      // CURRENT's checksum of it must hold too (docs/FORMAT.md section 4).
      if (ReadCurrentPointer(env, root, &current).ok() && current.generation == g &&
          XXH64(text.data(), text.size(), 0) != current.manifest_xxh64) {
        return Status::Corruption(filenames::Current(root) + ": names generation " + std::to_string(g) +
                                  " with checksum " + Hex64(current.manifest_xxh64) + ", but " + path +
                                  " hashes to " + Hex64(XXH64(text.data(), text.size(), 0)));
      }
      SNAPSINK_RETURN_IF_ERROR(GenerationManifest::Decode(text, path, &r->manifest_));
      if (r->manifest_.generation != g) return Status::Corruption(path + ": names generation " + std::to_string(r->manifest_.generation));
      break;
    }
    r->pin_.reset();
    if (generation != 0 || attempt >= 100) {
      // The current generation's manifest is never removed (gc keeps it, a
      // publish writes it before CURRENT names it): CURRENT that keeps naming
      // a missing one is damage, not "nothing published".
      if ((s.ok() || s.IsNotFound()) && generation == 0) {
        return Status::Corruption(filenames::Current(root) + ": names generation " + std::to_string(g) + ", but " +
                                  path + " is missing");
      }
      if (s.ok() || s.IsNotFound()) return Status::NotFound("generation " + std::to_string(g) + " not found in " + root);
      return s;
    }
  }
  *out = std::move(r);
  return Status::OK();
}

Reader::~Reader() = default;

Status Reader::Open(Env* env, const std::string& root, uint64_t generation, std::unique_ptr<Reader>* out) {
  std::unique_ptr<Reader> r;
  SNAPSINK_RETURN_IF_ERROR(OpenTop(env, root, generation, &r));
  SNAPSINK_RETURN_IF_ERROR(LoadGenerationWindows(env, root, &r->manifest_));
  r->all_loaded_ = true;
  *out = std::move(r);
  return Status::OK();
}

namespace {

const GenerationEntry* FindIn(const std::vector<GenerationEntry>& windows, int64_t window_ms) {
  auto it = std::lower_bound(windows.begin(), windows.end(), window_ms,
                             [](const GenerationEntry& e, int64_t w) { return e.window_ms < w; });
  return it != windows.end() && it->window_ms == window_ms ? &*it : nullptr;
}

}  // namespace

const GenerationEntry* Reader::Find(int64_t window_ms) const {
  if (all_loaded_ || manifest_.parts.empty()) return FindIn(manifest_.windows, window_ms);
  const std::vector<GenerationEntry>* leaf = CachedLeaf(manifest_, window_ms, parts_);
  return leaf == nullptr ? nullptr : FindIn(*leaf, window_ms);
}

Status Reader::Entry(int64_t window_ms, const GenerationEntry** out) {
  *out = nullptr;
  if (!all_loaded_ && !manifest_.parts.empty()) {
    const std::vector<GenerationEntry>* leaf = nullptr;
    SNAPSINK_RETURN_IF_ERROR(FindLeaf(env_, root_, manifest_, window_ms, &parts_, &leaf));
  }
  *out = Find(window_ms);
  return Status::OK();
}

Status Reader::Entries(int64_t lo, int64_t hi, std::vector<GenerationEntry>* out) {
  out->clear();
  if (lo > hi) return Status::OK();
  if (all_loaded_) {
    auto first = std::lower_bound(manifest_.windows.begin(), manifest_.windows.end(), lo,
                                  [](const GenerationEntry& e, int64_t w) { return e.window_ms < w; });
    for (auto it = first; it != manifest_.windows.end() && it->window_ms <= hi; ++it) out->push_back(*it);
    return Status::OK();
  }
  return CollectRange(env_, root_, manifest_, lo, hi, &parts_, out);
}

Status Reader::Snapshot(int64_t window_ms, std::shared_ptr<const SnapshotReader>* out) {
  auto it = files_.find(window_ms);
  if (it == files_.end()) {
    const GenerationEntry* e = nullptr;
    SNAPSINK_RETURN_IF_ERROR(Entry(window_ms, &e));
    if (e == nullptr) return Status::NotFound("window " + FormatIso(window_ms) + " is not in generation " + std::to_string(generation()));
    const std::string dir = filenames::SnapshotDir(root_, window_ms, e->version);
    const std::string manifest_path = filenames::Join(dir, filenames::kSnapshotManifestFile);
    std::string text;
    Status s = env_->ReadFileToString(manifest_path, &text);
    if (s.IsNotFound()) return Missing(manifest_path);
    SNAPSINK_RETURN_IF_ERROR(s);
    if (XXH64(text.data(), text.size(), 0) != e->manifest_xxh64) {
      return Status::Corruption(manifest_path + ": checksum differs from the one generation " + std::to_string(generation()) + " recorded");
    }
    SnapshotManifest m;
    SNAPSINK_RETURN_IF_ERROR(SnapshotManifest::Decode(text, manifest_path, &m));
    // The manifest must be the one of the window and version its leaf
    // names, and name only files that are there (docs/FORMAT.md section 3).
    if (m.window_ms != window_ms || m.version != e->version) {
      return Status::Corruption(manifest_path + ": names window " + FormatIso(m.window_ms) + " v" +
                                std::to_string(m.version) + ", but generation " + std::to_string(generation()) +
                                " names it for " + FormatIso(window_ms) + " v" + std::to_string(e->version));
    }
    bool has_data = false;
    for (const auto& f : m.files) {
      has_data = has_data || f.name == filenames::kDataFile;
      bool exists = false;
      SNAPSINK_RETURN_IF_ERROR(env_->Exists(filenames::Join(dir, f.name), &exists));
      if (!exists) return Missing(filenames::Join(dir, f.name));
    }
    if (!has_data) return Status::Corruption(manifest_path + ": names no data file");
    WindowFile w;
    w.path = filenames::Join(dir, filenames::kDataFile);
    w.rows = m.rows;
    uint64_t file_xxh64 = 0;
    for (const auto& f : m.files) {
      if (f.name == filenames::kDataFile) file_xxh64 = f.xxh64;
    }
    const std::string identity = TableCache::FileIdentity(w.path);
    if (identity.empty()) return Missing(w.path);
    w.cache_key = fmt::format("{}\n{}\n{:016x}", w.path, identity, file_xxh64);
    it = files_.emplace(window_ms, std::move(w)).first;
  }
  const WindowFile& w = it->second;
  std::shared_ptr<const SnapshotReader> reader;
  Status s = TableCache::Default()->Find(env_, w.path, w.cache_key, &reader);
  if (s.IsNotFound()) return Missing(w.path);
  SNAPSINK_RETURN_IF_ERROR(s);
  if (reader->rows() != w.rows) return Status::Corruption(w.path + ": row count differs from its manifest");
  *out = std::move(reader);
  return Status::OK();
}

Status Reader::Missing(const std::string& path) const {
  // A pinned generation's snapshots are never removed: a missing one is damage.
  return Status::Corruption(path + ": missing, but generation " + std::to_string(generation()) + " names it");
}

Status Reader::Get(int64_t window_ms, std::string_view metric, std::string_view key, Row* row) {
  if (last_ == nullptr || window_ms != last_window_) {
    last_.reset();  // let the TableCache close it if it must, before opening another
    SNAPSINK_RETURN_IF_ERROR(Snapshot(window_ms, &last_));
    last_window_ = window_ms;
  }
  return last_->Get(metric, key, row);
}

Status Reader::Scan(int64_t window_ms, const std::string* metric, const std::function<void(const Row&)>& fn) {
  std::shared_ptr<const SnapshotReader> s;
  SNAPSINK_RETURN_IF_ERROR(Snapshot(window_ms, &s));
  return s->Scan(metric, fn);
}

Status Reader::ScanFrom(int64_t window_ms, std::string_view metric, std::string_view key,
                        const std::function<SnapshotReader::ScanNext(const RowView&, SnapshotReader::SeekTo*)>& fn) {
  std::shared_ptr<const SnapshotReader> s;
  SNAPSINK_RETURN_IF_ERROR(Snapshot(window_ms, &s));
  return s->ScanFrom(metric, key, fn);
}

Status Reader::ScanFrom(int64_t window_ms, std::string_view metric, std::string_view key,
                        const std::function<SnapshotReader::ScanNext(const RowView&, SnapshotReader::SeekTo*)>& fn,
                        SnapshotReader::ScanPosition* pos, SnapshotReader::ScanBuffers* buffers) {
  std::shared_ptr<const SnapshotReader> s;
  SNAPSINK_RETURN_IF_ERROR(Snapshot(window_ms, &s));
  return s->ScanFrom(metric, key, fn, pos, buffers);
}

}  // namespace snapsink
