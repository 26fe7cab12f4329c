// Reading and writing the parts of generation manifests
// (publish/generation_manifest.h): every read checks the part against what
// the top manifest says of it (XXH64, window count, first and last window);
// every write is create-only through the Env (temp file, fsync, rename).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/env.h"
#include "publish/generation_manifest.h"

namespace snapsink {

// The windows of one part named by generation `generation`, checked.
// A missing part is Corruption: a generation's parts are kept with it.
Status ReadGenerationPart(Env* env, const std::string& root, uint64_t generation, const GenerationPartRef& ref,
                          std::vector<GenerationEntry>* out);

// Fills gm->windows from its parts (a format 2 manifest has them already).
Status LoadGenerationWindows(Env* env, const std::string& root, GenerationManifest* gm);

// The index of the part of gm that would hold window_ms, or -1.
int FindPart(const GenerationManifest& gm, int64_t window_ms);

// The parts of the generation after base: base's windows with `changed`
// put in (replacing a window's entry) and every window before oldest_kept
// left out (its start appended to *left_out). Parts whose windows do not
// change are named again as they are, unread; only the parts of changed
// spans, and those retention cuts, are read and written anew (*new_parts,
// their bytes). out->parts is set; out->windows stays empty.
Status UpdateParts(Env* env, const std::string& root, int64_t span_ms, const GenerationManifest& base,
                   const std::vector<GenerationEntry>& changed, std::optional<int64_t> oldest_kept,
                   GenerationManifest* out, std::vector<std::string>* new_parts, std::vector<int64_t>* left_out);

// Writes each part not already on disk as manifests/parts/<xxh64> (a file of
// that name holds those bytes: it is named by them). `crash_prefix` +
// ".part_written" is hit after each part written.
Status WriteParts(Env* env, const std::string& root, const std::vector<std::string>& parts,
                  const std::string& crash_prefix);

}  // namespace snapsink
