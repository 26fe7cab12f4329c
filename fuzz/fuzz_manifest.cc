// libFuzzer: the generation and snapshot manifest decoders (checked JSON,
// docs/FORMAT.md sections 2-4, generation parts too). What decodes must encode back to the same
// bytes (the encoding is canonical, and the checksum covers them).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "publish/generation_manifest.h"
#include "snapshot/snapshot_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  snapsink::GenerationManifest g;
  // A format 2 manifest (windows inline) is read but written as format 4 (a
  // format 3 one too, keeping its depth of 1).
  if (snapsink::GenerationManifest::Decode(text, "fuzz", &g).ok() && g.windows.empty()) {
    snapsink::GenerationManifest again;
    if (!snapsink::GenerationManifest::Decode(g.Encode(), "fuzz", &again).ok() || !(again == g)) std::abort();
  }
  snapsink::GenerationPart part;
  if (snapsink::GenerationPart::Decode(text, "fuzz", &part).ok()) {
    snapsink::GenerationPart again;
    if (!snapsink::GenerationPart::Decode(part.Encode(), "fuzz", &again).ok() ||
        !(again.windows == part.windows)) {
      std::abort();
    }
  }
  snapsink::GenerationIndexPart index;
  if (snapsink::GenerationIndexPart::Decode(text, "fuzz", &index).ok()) {
    snapsink::GenerationIndexPart again;
    if (!snapsink::GenerationIndexPart::Decode(index.Encode(), "fuzz", &again).ok() || again.level != index.level ||
        !(again.parts == index.parts)) {
      std::abort();
    }
  }
  snapsink::SnapshotManifest m;
  if (snapsink::SnapshotManifest::Decode(text, "fuzz", &m).ok()) {
    snapsink::SnapshotManifest again;
    if (!snapsink::SnapshotManifest::Decode(m.Encode(), "fuzz", &again).ok() || !(again == m)) std::abort();
  }
  return 0;
}
