#include "publish/generation_parts.h"

#include <xxhash.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "engine/crash_point.h"
#include "engine/env_bucket_root.h"
#include "engine/filenames.h"
#include "engine/s3/s3_uri.h"
#include "snapshot/checked_json.h"

namespace snapsink {

namespace {

// The bytes of part `ref`, checked against its name.
Status ReadPartBytes(Env* env, const std::string& root, const std::string& named_by, const GenerationPartRef& ref,
                     std::string* text) {
  const std::string path = filenames::GenerationPart(root, ref.xxh64);
  Status s = env->ReadFileToString(path, text);
  if (s.IsNotFound()) return Status::Corruption(path + ": missing, but " + named_by + " names it");
  SNAPSINK_RETURN_IF_ERROR(s);
  const uint64_t h = XXH64(text->data(), text->size(), 0);
  if (h != ref.xxh64) {
    return Status::Corruption(path + ": hashes to " + Hex64(h) + ", not the checksum " + named_by + " recorded");
  }
  return Status::OK();
}

std::string NamedBy(uint64_t generation) { return "generation " + std::to_string(generation); }

// Every window under ref (of level), appended to *out.
Status ReadPartWindows(Env* env, const std::string& root, uint64_t generation, const GenerationPartRef& ref,
                       uint32_t level, std::vector<GenerationEntry>* out, std::set<uint64_t>* names) {
  if (names != nullptr) names->insert(ref.xxh64);
  if (level == 0) {
    std::vector<GenerationEntry> one;
    SNAPSINK_RETURN_IF_ERROR(ReadLeafPart(env, root, generation, ref, &one));
    out->insert(out->end(), one.begin(), one.end());
    return Status::OK();
  }
  std::vector<GenerationPartRef> children;
  SNAPSINK_RETURN_IF_ERROR(ReadIndexPart(env, root, generation, ref, level, &children));
  for (const GenerationPartRef& c : children) {
    SNAPSINK_RETURN_IF_ERROR(ReadPartWindows(env, root, generation, c, level - 1, out, names));
  }
  return Status::OK();
}

}  // namespace

Status ReadLeafPart(Env* env, const std::string& root, uint64_t generation, const GenerationPartRef& ref,
                    std::vector<GenerationEntry>* out) {
  const std::string path = filenames::GenerationPart(root, ref.xxh64);
  const std::string named_by = NamedBy(generation);
  std::string text;
  SNAPSINK_RETURN_IF_ERROR(ReadPartBytes(env, root, named_by, ref, &text));
  GenerationPart part;
  SNAPSINK_RETURN_IF_ERROR(GenerationPart::Decode(text, path, &part));
  if (part.windows.size() != ref.windows || part.windows.front().window_ms != ref.first_ms ||
      part.windows.back().window_ms != ref.last_ms) {
    return Status::Corruption(path + ": its windows differ from what " + named_by + " says of the part");
  }
  *out = std::move(part.windows);
  return Status::OK();
}

Status ReadIndexPart(Env* env, const std::string& root, uint64_t generation, const GenerationPartRef& ref,
                     uint32_t level, std::vector<GenerationPartRef>* out) {
  const std::string path = filenames::GenerationPart(root, ref.xxh64);
  const std::string named_by = NamedBy(generation);
  std::string text;
  SNAPSINK_RETURN_IF_ERROR(ReadPartBytes(env, root, named_by, ref, &text));
  GenerationIndexPart part;
  SNAPSINK_RETURN_IF_ERROR(GenerationIndexPart::Decode(text, path, &part));
  if (part.level != level) {
    return Status::Corruption(path + ": a part of level " + std::to_string(part.level) + " where " + named_by +
                              " needs level " + std::to_string(level));
  }
  uint64_t windows = 0;
  for (const GenerationPartRef& c : part.parts) windows += c.windows;
  if (windows != ref.windows || part.parts.front().first_ms != ref.first_ms ||
      part.parts.back().last_ms != ref.last_ms) {
    return Status::Corruption(path + ": its windows differ from what " + named_by + " says of the part");
  }
  *out = std::move(part.parts);
  return Status::OK();
}

Status LoadGenerationWindows(Env* env, const std::string& root, GenerationManifest* gm,
                             std::set<uint64_t>* part_names) {
  if (gm->parts.empty()) return Status::OK();
  std::vector<GenerationEntry> all;
  for (const GenerationPartRef& ref : gm->parts) {
    SNAPSINK_RETURN_IF_ERROR(ReadPartWindows(env, root, gm->generation, ref, gm->depth - 1, &all, part_names));
  }
  gm->windows = std::move(all);
  return Status::OK();
}

int FindPart(const std::vector<GenerationPartRef>& refs, int64_t window_ms) {
  auto it = std::upper_bound(refs.begin(), refs.end(), window_ms,
                             [](int64_t w, const GenerationPartRef& p) { return w < p.first_ms; });
  if (it == refs.begin()) return -1;
  --it;
  return window_ms <= it->last_ms ? static_cast<int>(it - refs.begin()) : -1;
}

namespace {

// The walk of FindLeaf and CachedLeaf: env == nullptr reads nothing.
Status WalkToLeaf(Env* env, const std::string& root, const GenerationManifest& gm, int64_t window_ms,
                  PartCache* cache, const std::vector<GenerationEntry>** out) {
  *out = nullptr;
  const std::vector<GenerationPartRef>* refs = &gm.parts;
  for (uint32_t level = gm.depth; level-- > 0;) {
    const int i = FindPart(*refs, window_ms);
    if (i < 0) return Status::OK();
    const GenerationPartRef& ref = (*refs)[static_cast<size_t>(i)];
    if (level == 0) {
      auto it = cache->leaves.find(ref.xxh64);
      if (it == cache->leaves.end()) {
        if (env == nullptr) return Status::OK();
        std::vector<GenerationEntry> windows;
        SNAPSINK_RETURN_IF_ERROR(ReadLeafPart(env, root, gm.generation, ref, &windows));
        ++cache->parts_read;
        it = cache->leaves.emplace(ref.xxh64, std::move(windows)).first;
      }
      *out = &it->second;
      return Status::OK();
    }
    auto it = cache->index.find(ref.xxh64);
    if (it == cache->index.end()) {
      if (env == nullptr) return Status::OK();
      std::vector<GenerationPartRef> children;
      SNAPSINK_RETURN_IF_ERROR(ReadIndexPart(env, root, gm.generation, ref, level, &children));
      ++cache->parts_read;
      it = cache->index.emplace(ref.xxh64, std::move(children)).first;
    }
    refs = &it->second;
  }
  return Status::OK();
}

}  // namespace

Status FindLeaf(Env* env, const std::string& root, const GenerationManifest& gm, int64_t window_ms, PartCache* cache,
                const std::vector<GenerationEntry>** out) {
  return WalkToLeaf(env, root, gm, window_ms, cache, out);
}

const std::vector<GenerationEntry>* CachedLeaf(const GenerationManifest& gm, int64_t window_ms,
                                               const PartCache& cache) {
  const std::vector<GenerationEntry>* leaf = nullptr;
  // With no Env the walk only looks the cache up, never changes it.
  (void)WalkToLeaf(nullptr, "", gm, window_ms, const_cast<PartCache*>(&cache), &leaf);
  return leaf;
}

namespace {

Status CollectUnder(Env* env, const std::string& root, uint64_t generation, const std::vector<GenerationPartRef>& refs,
                    uint32_t level, int64_t lo, int64_t hi, PartCache* cache, std::vector<GenerationEntry>* out) {
  for (const GenerationPartRef& ref : refs) {
    if (ref.last_ms < lo || ref.first_ms > hi) continue;
    if (level == 0) {
      auto it = cache->leaves.find(ref.xxh64);
      if (it == cache->leaves.end()) {
        std::vector<GenerationEntry> windows;
        SNAPSINK_RETURN_IF_ERROR(ReadLeafPart(env, root, generation, ref, &windows));
        ++cache->parts_read;
        it = cache->leaves.emplace(ref.xxh64, std::move(windows)).first;
      }
      for (const GenerationEntry& e : it->second) {
        if (e.window_ms >= lo && e.window_ms <= hi) out->push_back(e);
      }
      continue;
    }
    auto it = cache->index.find(ref.xxh64);
    if (it == cache->index.end()) {
      std::vector<GenerationPartRef> children;
      SNAPSINK_RETURN_IF_ERROR(ReadIndexPart(env, root, generation, ref, level, &children));
      ++cache->parts_read;
      it = cache->index.emplace(ref.xxh64, std::move(children)).first;
    }
    SNAPSINK_RETURN_IF_ERROR(CollectUnder(env, root, generation, it->second, level - 1, lo, hi, cache, out));
  }
  return Status::OK();
}

}  // namespace

Status CollectRange(Env* env, const std::string& root, const GenerationManifest& gm, int64_t lo, int64_t hi,
                    PartCache* cache, std::vector<GenerationEntry>* out) {
  if (gm.parts.empty()) {  // format 2, or no window
    for (const GenerationEntry& e : gm.windows) {
      if (e.window_ms >= lo && e.window_ms <= hi) out->push_back(e);
    }
    return Status::OK();
  }
  return CollectUnder(env, root, gm.generation, gm.parts, gm.depth - 1, lo, hi, cache, out);
}

namespace {

// The windows at or past oldest_kept, in order; the starts of the others
// (retention's) are appended to left_out.
std::vector<GenerationEntry> LeaveOutOlder(const std::map<int64_t, GenerationEntry>& windows,
                                           std::optional<int64_t> oldest_kept, std::vector<int64_t>* left_out) {
  std::vector<GenerationEntry> kept;
  for (const auto& [w, e] : windows) {
    if (oldest_kept && w < *oldest_kept) {
      left_out->push_back(w);
    } else {
      kept.push_back(e);
    }
  }
  return kept;
}

struct PartUpdate {
  Env* env;
  const std::string& root;
  int64_t window_size_ms;
  uint64_t base_generation;
  std::optional<int64_t> oldest_kept;
  std::vector<std::string>* new_parts;
  std::vector<int64_t>* left_out;

  // The parts of `level` replacing base_refs (the base's parts of that
  // level in one span of the level above), with `changed` (windows in that
  // span) put in.
  Status Level(uint32_t level, const std::vector<GenerationPartRef>& base_refs,
               const std::map<int64_t, GenerationEntry>& changed, std::vector<GenerationPartRef>* out) {
    const int64_t span_ms = PartSpanMs(window_size_ms, level);
    struct Span {
      const GenerationPartRef* base = nullptr;
      std::map<int64_t, GenerationEntry> changed;
    };
    std::map<int64_t, Span> spans;
    for (const GenerationPartRef& ref : base_refs) {
      const int64_t span = PartSpanOf(ref.first_ms, span_ms);
      Span& sp = spans[span];
      if (sp.base != nullptr || PartSpanOf(ref.last_ms, span_ms) != span) {
        return Status::Corruption(filenames::GenerationPart(root, ref.xxh64) + ": named by generation " +
                                  std::to_string(base_generation) + " as a part of level " + std::to_string(level) +
                                  ", but it is not one span of that level");
      }
      sp.base = &ref;
    }
    for (const auto& [w, e] : changed) spans[PartSpanOf(w, span_ms)].changed.emplace(w, e);
    for (const auto& [span, sp] : spans) {
      const bool cut = sp.base != nullptr && oldest_kept && sp.base->first_ms < *oldest_kept;
      if (sp.base != nullptr && sp.changed.empty() && !cut) {
        out->push_back(*sp.base);  // named again, unread
        continue;
      }
      if (level == 0) {
        std::map<int64_t, GenerationEntry> windows;
        if (sp.base != nullptr) {
          std::vector<GenerationEntry> loaded;
          SNAPSINK_RETURN_IF_ERROR(ReadLeafPart(env, root, base_generation, *sp.base, &loaded));
          for (const GenerationEntry& e : loaded) windows[e.window_ms] = e;
        }
        for (const auto& [w, e] : sp.changed) windows[w] = e;
        const std::vector<GenerationEntry> kept = LeaveOutOlder(windows, oldest_kept, left_out);
        if (!kept.empty()) out->push_back(EncodeLeaf(kept, new_parts));
        continue;
      }
      std::vector<GenerationPartRef> children, updated;
      if (sp.base != nullptr) {
        SNAPSINK_RETURN_IF_ERROR(ReadIndexPart(env, root, base_generation, *sp.base, level, &children));
      }
      SNAPSINK_RETURN_IF_ERROR(Level(level - 1, children, sp.changed, &updated));
      if (!updated.empty()) out->push_back(EncodeIndex(level, updated, new_parts));
    }
    return Status::OK();
  }
};

}  // namespace

Status UpdateParts(Env* env, const std::string& root, int64_t window_size_ms, const GenerationManifest& base,
                   const std::vector<GenerationEntry>& changed, std::optional<int64_t> oldest_kept,
                   GenerationManifest* out, std::vector<std::string>* new_parts, std::vector<int64_t>* left_out) {
  out->parts.clear();
  out->windows.clear();
  out->depth = kPartDepth;
  PartUpdate update{env, root, window_size_ms, base.generation, oldest_kept, new_parts, left_out};
  std::map<int64_t, GenerationEntry> put;
  if (base.depth == kPartDepth && base.windows.empty()) {
    for (const GenerationEntry& e : changed) put[e.window_ms] = e;
    return update.Level(kPartDepth - 1, base.parts, put, &out->parts);
  }
  // Another depth (format 2 or 3): every window read, then cut anew.
  GenerationManifest full = base;
  SNAPSINK_RETURN_IF_ERROR(LoadGenerationWindows(env, root, &full));
  for (const GenerationEntry& e : full.windows) put[e.window_ms] = e;
  for (const GenerationEntry& e : changed) put[e.window_ms] = e;
  return update.Level(kPartDepth - 1, {}, put, &out->parts);
}

namespace {

// The parts into a bucket root, a few at once (UploadEach): each is a
// create-only PUT (the same bytes there already are success, so nothing is
// read first; in a bucket nothing is overwritten, a damaged one included).
Status WriteBucketParts(Env* env, const std::string& root, const std::vector<std::string>& parts,
                        const std::string& crash_prefix) {
  std::map<uint64_t, const std::string*> unique;
  for (const std::string& bytes : parts) unique.emplace(XXH64(bytes.data(), bytes.size(), 0), &bytes);
  const std::vector<std::pair<uint64_t, const std::string*>> todo(unique.begin(), unique.end());
  const std::string crash_point = crash_prefix + ".part_written";
  return UploadEach(todo.size(), [&](size_t i) {
    SNAPSINK_RETURN_IF_ERROR(WriteFileAtomic(env, filenames::GenerationPart(root, todo[i].first), *todo[i].second));
    MaybeCrash(crash_point.c_str());
    return Status::OK();
  });
}

}  // namespace

Status WriteParts(Env* env, const std::string& root, const std::vector<std::string>& parts,
                  const std::string& crash_prefix) {
  if (parts.empty()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, filenames::PartsDir(root)));  // each new directory synced in its parent
  if (IsBucketPath(root)) return WriteBucketParts(env, root, parts, crash_prefix);
  std::set<uint64_t> written;
  for (const std::string& bytes : parts) {
    const uint64_t h = XXH64(bytes.data(), bytes.size(), 0);
    const std::string path = filenames::GenerationPart(root, h);
    if (!written.insert(h).second) continue;
    // A file of this name holds these bytes unless damaged: a damaged one
    // (whose hash differs from its name) is written again.
    std::string existing;
    if (env->ReadFileToString(path, &existing).ok() && existing == bytes) continue;
    SNAPSINK_RETURN_IF_ERROR(WriteFileAtomic(env, path, bytes));
    MaybeCrash((crash_prefix + ".part_written").c_str());
  }
  return Status::OK();
}

}  // namespace snapsink
