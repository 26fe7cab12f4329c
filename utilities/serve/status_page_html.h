// The status page: one self-contained HTML page (XHTML-compatible markup,
// inline CSS and SVG, no script, no external request) of a root at one
// pinned generation: a timeline of windows, the generations and what each
// changed, producers with open gaps, sources and their lag, the partitions
// processes share (owner, epoch, position, lag, last seal and checkpoint),
// health and disk use. `GET /` of `snapsink serve` and `snapsink status ROOT --html FILE`
// write it (status_page.h gathers the data from the public views).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "snapsink/reader.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/partitions.h"
#include "snapsink/views.h"

namespace snapsink {

// What a generation changed against its parent.
struct GenerationChange {
  bool known = false;  // false: a manifest could not be read (collected meanwhile)
  uint64_t parent_collected = 0;  // when not known: the parent gc removed (0: not that)
  std::vector<api::WindowVersion> added;     // windows the parent did not hold
  struct Replaced {
    int64_t window_start_ms = 0;
    uint64_t from = 0, to = 0;
  };
  std::vector<Replaced> replaced;            // versions replaced
  std::vector<api::WindowVersion> removed;   // windows the parent held, this one does not
};

// A producer's open gap range and whether `gaps accept` covers it.
struct PageGap {
  std::string producer;
  uint32_t epoch = 0;
  api::SeqRange missing;
  bool accepted = false;
};

struct StatusPageData {
  std::string root;                              // as given
  api::RootStatus status;                        // ReadOnlySink::GetStatus
  std::vector<api::GenerationInfo> generations;  // ReadOnlySink::Generations, newest first
  std::vector<GenerationChange> changes;         // parallel to generations
  std::vector<PageGap> gaps;
  uint64_t generation = 0;                       // the pinned one shown (0: nothing published)
  bool historical = false;                       // not the current one (?generation=G)
  std::vector<api::WindowVersion> windows;       // Reader::windows() of the pinned generation
  bool healthy = false;
  std::string health;                            // the verdict of /healthz, or why not
  // Partitions shared through owners/ (api::PartitionOwners, snapsink/utilities/partitions.h): what
  // `status` shows of each, as of its owner's last progress write.
  std::vector<api::PartitionOwnerInfo> partitions;
};

// Text for HTML text and attribute values: & < > " ' as entities, control
// bytes as EscapeControl writes them.
std::string HtmlEscape(std::string_view s);

// The page. Up to kPageWindowMarks windows each get an SVG element and a
// table row; beyond, the timeline is one SVG path per version colour and
// state, so 5,000 windows stay well under 2 MB.
inline constexpr size_t kPageWindowMarks = 400;
std::string StatusPageHtml(const StatusPageData& data);

}  // namespace snapsink
