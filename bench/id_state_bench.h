// The id-state benchmark (snapsink_bench --benchmarks=ids; not in the
// default set): ingests a stream of id-only events at a steady rate of event
// time into a root with a 1 h id horizon and prints, at every million events,
// how many ids are held and the bytes of the id tables. The point: id state
// is bounded by rate x (horizon + lateness), not by the events ingested.
#pragma once

#include <cstdint>
#include <string>

namespace snapsink::bench {

// events: total id events (default 10 M); per_hour: event-time rate.
void RunIdState(const std::string& scratch_dir, uint64_t events, uint64_t per_hour, uint64_t commit_every);

}  // namespace snapsink::bench
