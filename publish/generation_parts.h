// Reading and writing the parts of generation manifests
// (publish/generation_manifest.h): every read checks the part against what
// the manifest naming it says of it (XXH64, level, window count, first and
// last window); every write is create-only through the Env (temp file,
// fsync, rename).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/env.h"
#include "publish/generation_manifest.h"

namespace snapsink {

// The windows of leaf `ref` named by generation `generation`, checked.
// A missing part is Corruption: a generation's parts are kept with it.
Status ReadLeafPart(Env* env, const std::string& root, uint64_t generation, const GenerationPartRef& ref,
                    std::vector<GenerationEntry>* out);
// The parts named by index part `ref` of `level` (>= 1), checked.
Status ReadIndexPart(Env* env, const std::string& root, uint64_t generation, const GenerationPartRef& ref,
                     uint32_t level, std::vector<GenerationPartRef>* out);

// Fills gm->windows from its parts (a format 2 manifest has them already),
// reading every part; inserts the name of each into *part_names if given.
Status LoadGenerationWindows(Env* env, const std::string& root, GenerationManifest* gm,
                             std::set<uint64_t>* part_names = nullptr);

// The index in refs (sorted, disjoint) of the part whose first and last
// window enclose window_ms, or -1.
int FindPart(const std::vector<GenerationPartRef>& refs, int64_t window_ms);

// The parts a point reader has read, by name.
struct PartCache {
  std::map<uint64_t, std::vector<GenerationPartRef>> index;
  std::map<uint64_t, std::vector<GenerationEntry>> leaves;
  size_t parts_read = 0;  // files read into it
};

// The leaf of gm whose span holds window_ms, or nullptr when gm has none:
// walks from the top manifest down one part per level, reading only the
// parts on that path that the cache lacks (for a format 2 manifest, nothing:
// use gm.windows). CachedLeaf does the same walk without reading, nullptr
// also when a part on the path is not in the cache.
Status FindLeaf(Env* env, const std::string& root, const GenerationManifest& gm, int64_t window_ms, PartCache* cache,
                const std::vector<GenerationEntry>** out);
const std::vector<GenerationEntry>* CachedLeaf(const GenerationManifest& gm, int64_t window_ms,
                                               const PartCache& cache);

// Appends to *out every window of gm from lo to hi (window starts, both
// inclusive), in order, reading only the parts whose windows overlap that
// range and the cache lacks (for a format 2 manifest: from gm.windows).
Status CollectRange(Env* env, const std::string& root, const GenerationManifest& gm, int64_t lo, int64_t hi,
                    PartCache* cache, std::vector<GenerationEntry>* out);

// The parts of the generation after base, for a root of window_size_ms:
// base's windows with `changed` put in (replacing a window's entry) and
// every window before oldest_kept left out (its start appended to
// *left_out). Parts whose windows do not change are named again as they
// are, unread; only the parts on the paths to changed windows, and those
// retention cuts, are read and written anew (*new_parts, their bytes,
// children before the index parts naming them). A base of another depth (a
// format 2 or 3 manifest) is read whole and cut anew. out->parts and
// out->depth are set; out->windows stays empty.
Status UpdateParts(Env* env, const std::string& root, int64_t window_size_ms, const GenerationManifest& base,
                   const std::vector<GenerationEntry>& changed, std::optional<int64_t> oldest_kept,
                   GenerationManifest* out, std::vector<std::string>* new_parts, std::vector<int64_t>* left_out);

// Writes each part not already on disk as manifests/parts/<xxh64> (a file of
// that name holds those bytes: it is named by them). `crash_prefix` +
// ".part_written" is hit after each part written. Into a root in a bucket:
// a few create-only PUTs at once, none read first.
Status WriteParts(Env* env, const std::string& root, const std::vector<std::string>& parts,
                  const std::string& crash_prefix);

}  // namespace snapsink
