// Views of a root: what the public ReadOnlySink (sink/) hands an embedder,
// and through it the command line and the HTTP server. Each view is
// computed here once, into the public typed records
// (include/snapsink/views.h); api::ToTable (utilities/table/) names their
// fields, so every printed form gives the same bytes for the same question.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/id_dedup.h"
#include "engine/source_scan.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/status.h"
#include "publish/generation_reader.h"
#include "snapsink/views.h"

namespace snapsink {

class Root;
class Txn;

// --- Published state ---------------------------------------------------------

using QuerySpec = api::QuerySpec;

// The rows of reader's generation that q selects, sorted by window, metric,
// key (sink/query_rows.cc). Only the windows in q's range are opened; a
// point lookup (metric and key, no prefix) decompresses one block per
// window, a prefix is a range scan. Corruption names the damaged file.
// InvalidArgument if q.rollup_ms is set.
Status QueryRows(Reader* reader, const QuerySpec& q, std::vector<api::QueryRow>* out);
// The same rows, one at a time (fn sees each; its strings are valid during
// the call only), until fn returns false: none is held, so memory stays one
// decompressed block whatever the number of rows.
Status QueryEach(Reader* reader, const QuerySpec& q, const std::function<bool(const api::QueryRow&)>& fn);
// The same rows added into buckets of *q.rollup_ms (required), sorted by
// bucket, metric, key.
Status RollupRows(Reader* reader, const QuerySpec& q, std::vector<api::RollupRow>* out);
// The roll-up rows, one at a time (fn sees each, valid during the call
// only) until fn returns false. A bucket is merged in passes over its
// windows holding at most about budget_bytes of sums (and one decompressed
// block) at a time, whatever the number of rows or windows: the rows are
// the same for any budget. Each window is read on from where the last pass
// stopped (a chunk of rows at most read again), so a smaller budget costs
// more passes, not more rows read.
constexpr size_t kRollupPassBytes = 1 << 20;
Status RollupEach(Reader* reader, const QuerySpec& q, const std::function<bool(const api::RollupRow&)>& fn,
                  size_t budget_bytes = kRollupPassBytes);

// The kept generations and every published snapshot (with how many kept
// generations use it), either may be null. A manifest or snapshot that gc
// removes while it is listed is left out.
Status ListPublished(Env* env, const std::string& root, std::vector<api::GenerationInfo>* generations,
                     std::vector<api::SnapshotInfo>* snapshots);

// --- Live state, each read in txn (a read transaction of the root's store) ---

// Active producers and retired ones (tombstones), by id.
Status ProducerInfos(Txn* txn, std::vector<api::ProducerInfo>* out);
// The open gaps of every producer, by producer.
Status GapInfos(Txn* txn, std::vector<api::GapInfo>* out);
// Every accepted-gap record (engine/gap_acceptance.h).
Status AcceptedGapInfos(Txn* txn, std::vector<api::AcceptedGapInfo>* out);
Status AcceptedSourceGapInfos(Txn* txn, std::vector<api::AcceptedSourceGapInfo>* out);
// The same as public records.
Status SourceViews(Txn* txn, std::vector<api::SourceView>* out);
// The ids held for dedup by id, with root's horizon.
Status IdsView(const Root& root, Txn* txn, api::IdsInfo* out);
// Each window's version, dirty and closed flags and its ledger totals.
Status WindowInfos(const Root& root, Txn* txn, std::vector<api::WindowInfo>* out);

// The public records of the engine's.
// The public settings of a root's configuration: every field, set here only.
inline api::RootSettings ToRootSettings(const RootConfig& c) {
  return {c.window_ms,    c.lateness_ms,           c.on_gap == OnGap::kStop ? api::GapPolicy::kStop : api::GapPolicy::kAccept,
          c.id_horizon_ms, c.producer_retention_ms, c.retain_ms,
          c.max_ahead_ms};
}

api::SourceView ToSourceView(const std::string& name, const SourceState& s, const SourceIdCounts& ids);
// What `inspect ids` shows: the ids held (kIds, kIdExpiry), the oldest,
// and the cutoff of the root's id horizon.
Status ReadIdsInfo(Txn* txn, std::optional<int64_t> max_event_ts, const RootConfig& config, api::IdsInfo* out);

}  // namespace snapsink
