// Event lines as a source delivers them, for the tests that check a metric
// counts each event once whatever the road in (a file run, the write path,
// a backfill): joined into one file, redelivered and held back, written
// through api::Sink::Write in batches.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "snapsink/sink.h"
#include "snapsink/status.h"

namespace snapsink::testing {

// The lines (each ending in "\n") as one file's text.
std::string Join(const std::vector<std::string>& lines);

// The lines as one file, with every 7th redelivered right away and, from the
// 20th on, every 13th bringing the line 20 before it again.
std::string Redelivered(const std::vector<std::string>& lines);

// The lines as a source that redelivers and holds some back: every 7th line
// twice, every 11th (from 30 on) held back until the end (its producer's gap
// filled late), every 5th line of the first 100 again at the end.
std::vector<std::string> Delivered(const std::vector<std::string>& lines);

// Writes the lines (each ending in "\n", written without it) to sink as
// records of `source`, `batch` to a WriteBatch (the last may be shorter),
// each batch's position the count of lines written with it.
Status WriteInBatches(api::Sink& sink, const std::string& source, const std::vector<std::string>& lines, size_t batch);

}  // namespace snapsink::testing
