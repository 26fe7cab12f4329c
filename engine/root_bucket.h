// A root in an S3 bucket, `s3://BUCKET/PREFIX` (engine/env_bucket_root.h
// routes its paths): what stands in for state/ in the bucket, and the local
// LMDB state beside it.
//
// init writes one object, ROOT/settings, create-only: the root's settings
// (docs/FORMAT.md), so that any machine can read the root without a state of
// its own. A writer keeps the LMDB state in its local state directory
// (`--state DIR`); opened on a DIR that holds none, the state is made there
// from ROOT/settings, unless the root has published already (a writer's
// state is not restored from the bucket yet: the DIR that published it is
// needed). A reader with no state directory gets such a state in a scratch
// directory: the settings, nothing ingested.
#pragma once

#include <string>

#include "engine/env.h"
#include "engine/metric_kinds.h"
#include "engine/root.h"

namespace snapsink {

// Creates the root at path: PUTs ROOT/settings create-only, the metric
// kinds declared at init among them (each writer's state, and a reader's
// scratch state, is made from it with those kinds). InvalidArgument naming
// path when the prefix is a root already or holds anything else, or naming
// a metric whose name holds a line break.
Status InitBucketRoot(Env* env, const std::string& path, RootConfig config, const MetricKinds& kinds = {});

// OK when ROOT/settings exists; else NotFound: the root does not exist
// (nothing under the prefix) or the prefix holds something else.
Status CheckBucketRoot(Env* env, const std::string& path);

// Makes the local state of the root at path from ROOT/settings when the
// state directory holds none. writer: refused (InvalidArgument) when the
// root has published generations this new state would not know of.
Status PrepareBucketState(Env* env, const std::string& path, bool writer);

// ROOT/settings as bytes, and back (Corruption naming path when malformed);
// kinds: the metric kinds declared at init (may be null when reading).
std::string EncodeBucketSettings(const RootConfig& config, const MetricKinds& kinds = {});
Status DecodeBucketSettings(std::string_view text, const std::string& path, RootConfig* out,
                            MetricKinds* kinds = nullptr);

}  // namespace snapsink
