// The manifest of one published generation: the file `manifests/<generation>`.
//
// It names, for every published window, the snapshot version current in
// this generation and the XXH64 of that snapshot's manifest.json bytes, so a
// reader that opened this generation can tell a swapped or damaged snapshot
// from the one published. Written once (WriteFileAtomic), never changed. It
// is checked JSON (publish/checked_json.h); layout in docs/FORMAT.md.
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

struct GenerationManifest {
  uint64_t generation = 0;
  uint64_t parent = 0;                    // the generation this one replaced; 0 = none
  uint64_t rollback_of = 0;               // the generation a rollback copied; 0 = not a rollback
  std::vector<GenerationEntry> windows;   // sorted by window_ms, unique

  bool operator==(const GenerationManifest&) const = default;

  // Deterministic checked JSON, one line ending in '\n'; windows are written
  // sorted by window_ms even if the vector is not.
  std::string Encode() const;

  // Parses and checks text as written by Encode: checksum, format name and
  // version, member types and ranges, windows strictly ascending, and
  // parent == 0 || parent < generation, rollback_of == 0 || rollback_of < generation. Failures are Corruption naming `name`.
  static Status Decode(std::string_view text, const std::string& name, GenerationManifest* out);
};

}  // namespace snapsink
