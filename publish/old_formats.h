// Decoders of the published formats that earlier builds wrote and this one
// no longer writes, for `snapsink upgrade` (publish/upgrade.h) only. No
// reader of a current root uses them. docs/FORMAT.md ("Old roots") lists
// which build wrote what.
//
//   snapshot data file, footer version 1   (no restart points, filter or stats)
//   snapshot manifest, format_version 1    (32-bit version, per-metric totals)
//   generation manifest, format_version 1  (32-bit versions, no rollback_of)
//   CURRENT as "<generation>\n"            (no manifest checksum)
//
// Each decoder checks every checksum the old format had, as the old build's
// reader did: an upgrade never carries damage into the new format.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "engine/env.h"
#include "engine/status.h"
#include "publish/generation_manifest.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_manifest.h"

namespace snapsink::old_format {

// Footer version of the data file at path (1, 2 or 3), read from its footer
// without checking more than the magic. Corruption when it is not one.
Status DataFileVersion(Env* env, const std::string& path, uint32_t* version);

// Calls fn for every row of the version 1 data file at path, in order, after
// checking its whole-file XXH64 against expected_xxh64, its footer, index
// and every block (checksum, size, row order, row counts).
Status ScanDataFileV1(Env* env, const std::string& path, uint64_t expected_xxh64,
                      const std::function<Status(const Row&)>& fn);

// The format_version of a snapshot or generation manifest (checked JSON),
// after checking its checksum. Corruption naming `name` otherwise.
Status ManifestVersion(std::string_view text, const std::string& name, uint64_t* version);

// A version 1 snapshot manifest, as the current struct (its per-metric
// totals, which version 2 keeps in the data file, are dropped).
Status DecodeSnapshotManifestV1(std::string_view text, const std::string& name, SnapshotManifest* out);

// A version 1 generation manifest (rollback_of is 0: version 1 had no
// rollback generations).
Status DecodeGenerationManifestV1(std::string_view text, const std::string& name, GenerationManifest* out);

// True when text is an old CURRENT, "<generation>\n" (decimal, no leading
// zero, at least 1), and sets *generation.
bool ParseCurrentV1(std::string_view text, uint64_t* generation);

}  // namespace snapsink::old_format
