// Output of the command line tool: aligned tables for people, NDJSON for
// machines (api::FormatRecords, include/snapsink/utilities/table.h).
#pragma once

#include <string>
#include <vector>

#include "snapsink/utilities/table.h"
#include "snapsink/views.h"

namespace snapsink {

using api::OutputFormat;
using api::Record;

// Prints FormatRecords(records, columns, format) to stdout.
void PrintRecords(const std::vector<Record>& records, const std::vector<std::string>& columns, OutputFormat format);
// Prints a view (api::ToTable) to stdout.
inline void PrintTable(const api::Table& t, OutputFormat format) { PrintRecords(t.records, t.columns, format); }

}  // namespace snapsink
