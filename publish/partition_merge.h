// The merged publish of a topic's partitions: a window published once every
// partition has sealed it (partitions/partition_seals.h holds the seal
// records it reads; docs/SCALE-OUT.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/root.h"
#include "engine/status.h"
#include "snapsink/options.h"

namespace snapsink {

using api::MergedPublishResult;  // the public record (include/snapsink/options.h)

// Publishes, under root's LOCK (waiting for it), every window of topic that
// all `partitions` partitions are past and whose seals changed (partitions/partition_seals.h).
// It looks first without LOCK and takes it only when there is something to
// publish (crash and pause point merge.before_lock), then looks again
// under it: what another process published meanwhile is not published twice.
// Before it publishes new merged windows, under LOCK, it reads every
// partition's producers list (partitions/<source>/producers, replaced just
// before progress) and calls on_split(producer, partitions) for each
// producer in the lists of two or more partitions, in producer order,
// partitions ascending; a non-OK return is returned with nothing published.
// REQUIRES: root opened writable (LMDB), LOCK not held by the caller.
using SplitProducerCheck = std::function<Status(const std::string& producer, const std::vector<int32_t>& partitions)>;
Status PublishMerged(Root* root, const std::string& topic, int32_t partitions, const SplitProducerCheck& on_split,
                     MergedPublishResult* result);

}  // namespace snapsink
