// CURRENT: the pointer to the current generation (SPEC 5, 10), and the one
// module that reads and writes it.
//
// CURRENT holds one line, "<generation> <xxh64>\n": the generation number in
// decimal and the XXH64 (seed 0) of the bytes of manifests/<generation> as
// 16 lowercase hex digits, e.g. "7 9f0c2a61d4e3b8a7\n". A reader checks both:
// the manifest it opens must hash to what CURRENT says, so a manifest swapped
// or damaged after CURRENT named it is Corruption, never another generation.
//
// The switch is split in two so that the commit point of a publish or a
// rollback can be its LMDB commit (publish/publisher.h):
//   StageCurrent   writes and syncs CURRENT.tmp   (before the commit point;
//                  a full disk fails here and changes nothing)
//   InstallCurrent renames CURRENT.tmp over CURRENT and syncs the root
//                  (after it)
// LMDB records what CURRENT must name (meta current_generation and
// kCurrentManifestXxh64). FinishCurrent, run by every writer that publishes,
// gc and rollback before anything else, rewrites CURRENT from LMDB when a
// crash came between the commit and the rename.
#pragma once

#include <cstdint>
#include <string>

#include "engine/env.h"
#include "engine/store.h"
#include "publish/generation_manifest.h"

namespace snapsink {

namespace meta {
// XXH64 of manifests/<current_generation>, as CURRENT must hold it.
inline constexpr char kCurrentManifestXxh64[] = "current_manifest_xxh64";
}  // namespace meta

struct CurrentPointer {
  uint64_t generation = 0;  // 0: nothing published
  uint64_t manifest_xxh64 = 0;
  bool operator==(const CurrentPointer&) const = default;
};

// "<generation> <16 hex>\n".
std::string EncodeCurrent(const CurrentPointer& c);
// Parses the bytes of a CURRENT file (Corruption naming path unless they
// are exactly EncodeCurrent's shape). publish/current_codec.cc.
Status DecodeCurrent(std::string_view text, const std::string& path, CurrentPointer* out);

// Parses CURRENT (a missing file is generation 0). Corruption naming the file
// when it is not exactly one such line.
Status ReadCurrentPointer(Env* env, const std::string& root, CurrentPointer* out);

// Reads manifests/<c.generation> and checks it against c: Corruption when its
// bytes do not hash to c.manifest_xxh64 or it names another generation;
// NotFound when the file is missing. *text (if not null) receives its bytes.
// Then reads every part it names (out->windows: publish/generation_parts.h).
Status ReadManifestNamedBy(Env* env, const std::string& root, const CurrentPointer& c, GenerationManifest* out,
                           std::string* text = nullptr);
// The same, reading the top manifest only (out->windows stays empty unless
// it is a format 2 manifest).
Status ReadTopManifestNamedBy(Env* env, const std::string& root, const CurrentPointer& c, GenerationManifest* out,
                              std::string* text = nullptr);

// Writes and syncs CURRENT.tmp naming c.
Status StageCurrent(Env* env, const std::string& root, const CurrentPointer& c);
// Renames CURRENT.tmp over CURRENT and syncs the root directory.
Status InstallCurrent(Env* env, const std::string& root);

// True when CURRENT.tmp names c: a switch committed in LMDB whose rename has
// not happened yet (CURRENT then still names the previous generation).
bool SwitchPending(Env* env, const std::string& root, const CurrentPointer& c);

// What LMDB records as current (generation 0 before the first publish).
Status RecordedCurrent(Txn* txn, CurrentPointer* out);
// Records c as current and as the last generation number used.
Status RecordCurrent(Txn* txn, const CurrentPointer& c);

// OK unless CURRENT is missing while txn's state records a published
// generation G and no CURRENT.tmp names it (the one state a publish leaves
// between its commit and its rename): then Corruption, one line naming G and
// the fix (the line to write to CURRENT, or a backup when manifests/G does not
// hash to what the state records). Readers and status call it when CURRENT
// is missing, so that such a root does not look like one with nothing
// published; writers refuse with it (FinishCurrent).
Status CheckCurrentPresent(Env* env, const std::string& root, Txn* txn);

// After a crash between a publish's LMDB commit and its rename, CURRENT still
// names the previous generation: stages and installs the recorded one. A
// CURRENT missing with no such switch pending is damage, not a crash: the
// error of CheckCurrentPresent, nothing written.
// REQUIRES: the caller holds the root's LOCK.
Status FinishCurrent(Env* env, const std::string& root, Store* live);

}  // namespace snapsink
