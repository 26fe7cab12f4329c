#include "publish/generation_parts.h"

#include <xxhash.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/crash_point.h"
#include "engine/filenames.h"
#include "publish/checked_json.h"

namespace snapsink {

Status ReadGenerationPart(Env* env, const std::string& root, uint64_t generation, const GenerationPartRef& ref,
                          std::vector<GenerationEntry>* out) {
  const std::string path = filenames::GenerationPart(root, ref.xxh64);
  const std::string named_by = "generation " + std::to_string(generation);
  std::string text;
  Status s = env->ReadFileToString(path, &text);
  if (s.IsNotFound()) return Status::Corruption(path + ": missing, but " + named_by + " names it");
  SNAPSINK_RETURN_IF_ERROR(s);
  const uint64_t h = XXH64(text.data(), text.size(), 0);
  if (h != ref.xxh64) {
    return Status::Corruption(path + ": hashes to " + Hex64(h) + ", not the checksum " + named_by + " recorded");
  }
  GenerationPart part;
  SNAPSINK_RETURN_IF_ERROR(GenerationPart::Decode(text, path, &part));
  if (part.windows.size() != ref.windows || part.windows.front().window_ms != ref.first_ms ||
      part.windows.back().window_ms != ref.last_ms) {
    return Status::Corruption(path + ": its windows differ from what " + named_by + " says of the part");
  }
  *out = std::move(part.windows);
  return Status::OK();
}

Status LoadGenerationWindows(Env* env, const std::string& root, GenerationManifest* gm) {
  if (gm->parts.empty()) return Status::OK();
  std::vector<GenerationEntry> all, one;
  for (const GenerationPartRef& ref : gm->parts) {
    SNAPSINK_RETURN_IF_ERROR(ReadGenerationPart(env, root, gm->generation, ref, &one));
    all.insert(all.end(), one.begin(), one.end());
  }
  gm->windows = std::move(all);
  return Status::OK();
}

int FindPart(const GenerationManifest& gm, int64_t window_ms) {
  auto it = std::upper_bound(gm.parts.begin(), gm.parts.end(), window_ms,
                             [](int64_t w, const GenerationPartRef& p) { return w < p.first_ms; });
  if (it == gm.parts.begin()) return -1;
  --it;
  return window_ms <= it->last_ms ? static_cast<int>(it - gm.parts.begin()) : -1;
}

namespace {

// Every window of base with changed put in, then cut and split anew: for a
// format 2 base, or one whose parts are not of this span.
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

Status RebuildAll(Env* env, const std::string& root, int64_t span_ms, const GenerationManifest& base,
                  const std::vector<GenerationEntry>& changed, std::optional<int64_t> oldest_kept,
                  GenerationManifest* out, std::vector<std::string>* new_parts, std::vector<int64_t>* left_out) {
  GenerationManifest full = base;
  SNAPSINK_RETURN_IF_ERROR(LoadGenerationWindows(env, root, &full));
  std::map<int64_t, GenerationEntry> windows;
  for (const GenerationEntry& e : full.windows) windows[e.window_ms] = e;
  for (const GenerationEntry& e : changed) windows[e.window_ms] = e;
  SplitIntoParts(span_ms, LeaveOutOlder(windows, oldest_kept, left_out), &out->parts, new_parts);
  return Status::OK();
}

}  // namespace

Status UpdateParts(Env* env, const std::string& root, int64_t span_ms, const GenerationManifest& base,
                   const std::vector<GenerationEntry>& changed, std::optional<int64_t> oldest_kept,
                   GenerationManifest* out, std::vector<std::string>* new_parts, std::vector<int64_t>* left_out) {
  out->parts.clear();
  out->windows.clear();
  bool one_span_each = base.windows.empty();  // a format 2 base holds its windows inline
  for (const GenerationPartRef& p : base.parts) {
    one_span_each = one_span_each && PartSpanOf(p.first_ms, span_ms) == PartSpanOf(p.last_ms, span_ms);
  }
  if (!one_span_each) return RebuildAll(env, root, span_ms, base, changed, oldest_kept, out, new_parts, left_out);

  // The spans to write anew: those of changed windows and those retention cuts.
  std::map<int64_t, std::map<int64_t, GenerationEntry>> touched;
  for (const GenerationEntry& e : changed) touched[PartSpanOf(e.window_ms, span_ms)];
  std::vector<GenerationEntry> loaded;
  for (const GenerationPartRef& p : base.parts) {
    const int64_t span = PartSpanOf(p.first_ms, span_ms);
    const bool cut = oldest_kept && p.first_ms < *oldest_kept;
    if (!cut && !touched.count(span)) {
      out->parts.push_back(p);  // named again, unread
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(ReadGenerationPart(env, root, base.generation, p, &loaded));
    auto& windows = touched[span];
    for (const GenerationEntry& e : loaded) windows[e.window_ms] = e;
  }
  for (const GenerationEntry& e : changed) touched[PartSpanOf(e.window_ms, span_ms)][e.window_ms] = e;
  for (const auto& [span, windows] : touched) {
    SplitIntoParts(span_ms, LeaveOutOlder(windows, oldest_kept, left_out), &out->parts, new_parts);
  }
  std::sort(out->parts.begin(), out->parts.end(),
            [](const GenerationPartRef& a, const GenerationPartRef& b) { return a.first_ms < b.first_ms; });
  return Status::OK();
}

Status WriteParts(Env* env, const std::string& root, const std::vector<std::string>& parts,
                  const std::string& crash_prefix) {
  if (parts.empty()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, filenames::PartsDir(root)));  // each new directory synced in its parent
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
