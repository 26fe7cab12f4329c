// Gathers the status page (status_page_html.h) of a root from the public
// views (the numbers of `status --json`, `inspect generations` and a
// Reader), for one pinned generation.
#pragma once

#include <optional>
#include <string>

#include "snapsink/status.h"
#include "snapsink/reader.h"
#include "snapsink/sink.h"

namespace snapsink {

// The page's health verdict when the caller knows it (the server's verified
// pin); otherwise the page verifies the pinned generation itself.
struct PageHealth {
  bool ok = false;
  std::string text;
};

// The page of the root `sink` has open, with `reader` as the pinned
// generation (null: nothing published). historical: not the current one.
Status RenderStatusPage(const api::ReadOnlySink& sink, api::Reader* reader, bool historical,
                        const std::optional<PageHealth>& health, std::string* html);
// api::StatusPage (snapsink/utilities/serve.h) pins the generation and
// verifies it for the verdict; the server passes its pinned Reader and its
// own verdict.

}  // namespace snapsink
