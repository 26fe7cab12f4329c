// The merged publish of a topic's partitions into a root in a bucket
// (docs/BUCKET.md, "run --kafka"): every process publishes from a local
// state of its own, so before each publish that state takes what the
// bucket's CURRENT says, and CURRENT moves only from the generation the
// publish was built on (BucketRootEnv::ExpectCurrent). On a local root each
// call here does nothing: the processes share ROOT's one state.
#pragma once

#include <cstdint>
#include <string>

#include "engine/root.h"
#include "engine/status.h"

namespace snapsink {

// Meta key of ROOT: the partitions' seals its last merged version of a
// window was made from ("<partition>:<epoch>:<version>,..."), so that an
// unchanged set is not published again.
std::string MergedInputsKey(const std::string& topic, int64_t w);

// True when root is in a bucket.
bool InBucket(Root* root);

// Reads the bucket's CURRENT and, when root's local state records another
// generation, takes it: the recorded current generation, each window's last
// version (at least the published one) and the merged inputs of each
// window (from merged/<topic>/<window>-v<version>; a window without one, or
// not in the generation, is merged again). Then tells the Env the CURRENT
// line the next publish is built on.
Status AdoptBucketCurrent(Root* root, const std::string& topic);

// The version to merge window w at: above last_version and above every
// version of w in the bucket, a snapshot's or a recorded merge's of topic
// (one a process that lost a race or died left behind is never reused).
Result<uint64_t> NextMergedVersion(Root* root, const std::string& topic, int64_t w, uint64_t last_version);

// Writes merged/<topic>/<window>-v<version> (the inputs identity),
// create-only: the same bytes again are success; other bytes are Locked (a
// process that merged other inputs at that version first).
// Crash point merge.inputs_recorded (after the write).
Status RecordMergedInputs(Root* root, const std::string& topic, int64_t w, uint64_t version,
                          const std::string& identity);

}  // namespace snapsink
