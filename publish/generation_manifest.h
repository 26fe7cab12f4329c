// The manifest of one published generation, in two levels (docs/FORMAT.md
// section 4), after Iceberg's manifest list and its manifests:
//
//   manifests/<generation>        the top manifest: the generation, its
//                                 parent, and the parts it names
//   manifests/parts/<xxh64>       a part: the windows of one span of time,
//                                 each with its snapshot version and the
//                                 XXH64 of that snapshot's manifest.json
//
// A part holds the windows whose start falls in one span of kPartWindows
// window sizes (PartSpanMs), so a publish rewrites only the parts of the
// windows it changes and names every other part of its parent again; a
// reader of one window reads the top manifest and one part. A part is named
// by the XXH64 of its bytes, so equal parts are one file, shared by every
// generation (and rollback) that names them. Both are written once
// (WriteFileAtomic, create-only), never changed, and are checked JSON
// (snapshot/checked_json.h). CURRENT carries the top manifest's XXH64; the
// top manifest carries each part's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"

namespace snapsink {

struct GenerationEntry {
  int64_t window_ms = 0;
  uint64_t version = 0;
  uint64_t manifest_xxh64 = 0;  // XXH64 (seed 0) of that snapshot's manifest.json bytes

  bool operator==(const GenerationEntry&) const = default;
};

// What the top manifest says of one part.
struct GenerationPartRef {
  int64_t first_ms = 0;  // its first and last window
  int64_t last_ms = 0;
  uint64_t windows = 0;  // how many it holds, at least 1
  uint64_t xxh64 = 0;    // XXH64 (seed 0) of its bytes; also its file name

  bool operator==(const GenerationPartRef&) const = default;
};

// The tree of parts (docs/FORMAT.md section 4, "How parts are cut"): a
// leaf part (level 0) holds the windows of one span of kPartFanout window
// sizes; an index part of level L names the parts of level L - 1 in one span
// of kPartFanout^(L+1) window sizes; the top manifest names the parts of
// level kPartDepth - 1. With 32 and 3, a publish of one window writes one
// leaf of at most 32 windows, two index parts of at most 32 parts and a top
// manifest of one entry per 32,768 window sizes (README "Running for years":
// why these sizes).
inline constexpr int64_t kPartFanout = 32;
inline constexpr uint32_t kPartDepth = 3;    // levels of parts under a top manifest that this build writes
inline constexpr uint32_t kMaxPartDepth = 8;  // the most a reader accepts
// The span of time of one part of `level` (0 = leaf).
int64_t PartSpanMs(int64_t window_size_ms, uint32_t level);
// The span a window falls in: floor(window_ms / span_ms).
int64_t PartSpanOf(int64_t window_ms, int64_t span_ms);

struct GenerationManifest {
  uint64_t generation = 0;
  uint64_t parent = 0;                    // the generation this one replaced; 0 = none
  uint64_t rollback_of = 0;               // the generation a rollback copied; 0 = not a rollback
  // Levels of parts under the top manifest: `parts` are of level depth - 1.
  // 1 for a format 3 manifest (its parts are leaves), 0 for format 2.
  uint32_t depth = kPartDepth;
  std::vector<GenerationPartRef> parts;   // sorted by first_ms, disjoint
  // Every window, sorted by window_ms, unique. Filled by the readers that
  // load every part (publish/generation_parts.h) and from a format 2
  // manifest, which held them inline; Decode of a format 3 top manifest
  // leaves it empty.
  std::vector<GenerationEntry> windows;

  bool operator==(const GenerationManifest&) const = default;

  // The top manifest (format 4): deterministic checked JSON, one line
  // ending in '\n', naming `parts` and `depth` (windows are not written).
  std::string Encode() const;

  // Parses and checks a top manifest: checksum, format name and version,
  // member types and ranges, parts sorted and disjoint, parent == 0 ||
  // parent < generation, rollback_of == 0 || rollback_of < generation.
  // Reads format 4 (parts, depth), format 3 (parts that are leaves, depth
  // 1) and format 2 (windows inline, parts empty, depth 0).
  // Failures are Corruption naming `name`.
  static Status Decode(std::string_view text, const std::string& name, GenerationManifest* out);
};

// A leaf part (level 0): its windows, sorted by window_ms, unique, at
// least one.
struct GenerationPart {
  std::vector<GenerationEntry> windows;

  std::string Encode() const;
  static Status Decode(std::string_view text, const std::string& name, GenerationPart* out);
};

// An index part (level >= 1): the parts of the level below it names, sorted
// by first_ms, disjoint, at least one.
struct GenerationIndexPart {
  uint32_t level = 1;
  std::vector<GenerationPartRef> parts;

  std::string Encode() const;
  static Status Decode(std::string_view text, const std::string& name, GenerationIndexPart* out);
};

// Builds the tree of parts (kPartDepth levels) of windows (sorted, unique)
// for a root of window_size_ms: appends the top level's references to *refs
// and the bytes of every part, children before the parts naming them, to
// *bytes.
void BuildPartTree(int64_t window_size_ms, const std::vector<GenerationEntry>& windows,
                   std::vector<GenerationPartRef>* refs, std::vector<std::string>* bytes);

// The part of `level` holding `windows` (sorted, unique, non-empty): its
// reference, and its bytes appended to *bytes.
GenerationPartRef EncodeLeaf(const std::vector<GenerationEntry>& windows, std::vector<std::string>* bytes);
GenerationPartRef EncodeIndex(uint32_t level, const std::vector<GenerationPartRef>& parts,
                              std::vector<std::string>* bytes);

}  // namespace snapsink
