// The manifest of one window snapshot: `manifest.json` in the snapshot
// directory (staging/<window>/v<version>/ and later snapshots/...).
//
// It records the window, the snapshot version, the totals of the window
// (reconciliation compares them with the rows), and every data file with its
// size and XXH64. The totals of each metric are not here: they are in the
// data file's stats section (SnapshotReader::ReadStats), so a reader that
// opens a snapshot with many metrics parses only a few hundred bytes here. It is checked JSON
// (snapshot/checked_json.h) with a fixed member order, integers only (sums
// are integer micros, exact), so the bytes depend only on the contents.
// Layout: docs/FORMAT.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"

namespace simdjson::dom {
class object;
}  // namespace simdjson::dom

namespace snapsink {

class MemberReader;

inline constexpr char kSnapshotManifestName[] = "manifest.json";

struct FileEntry {
  std::string name;    // a plain file name inside the snapshot directory
  uint64_t bytes = 0;
  uint64_t xxh64 = 0;  // XXH64 (seed 0) of the whole file (SnapshotFileInfo::xxh64)

  bool operator==(const FileEntry&) const = default;
};

struct SnapshotManifest {
  int64_t window_ms = 0;       // window start, ms since the Unix epoch (UTC)
  int64_t window_size_ms = 0;
  uint64_t version = 0;
  uint32_t aggregation_version = 1;
  uint64_t rows = 0;
  int64_t events = 0;
  int64_t count = 0;
  int64_t sum_micros = 0;
  std::vector<FileEntry> files;      // sorted by name, unique

  bool operator==(const SnapshotManifest&) const = default;

  // Deterministic checked JSON, one line ending in '\n'. files are written
  // sorted even if the vector is not. File names must be valid UTF-8 to
  // survive a round trip (others are escaped as U+FFFD; see JsonEscape).
  std::string Encode() const;

  // Parses and checks text as written by Encode: checksum, format name and
  // version, every member's type and range, sorted unique files,
  // file names without '/'. Any failure is Corruption naming name_for_errors.
  // Unknown members are ignored.
  static Status Decode(std::string_view text, const std::string& name_for_errors, SnapshotManifest* out);
};

// The "files" member of a snapshot manifest's object o: plain file names,
// sorted and unique. Shared by Decode and the decoder of format 1
// (publish/old_formats.cc), whose files member is the same.
Status DecodeSnapshotFiles(MemberReader& r, const simdjson::dom::object& o, std::vector<FileEntry>* files);

}  // namespace snapsink
