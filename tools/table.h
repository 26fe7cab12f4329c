// Output of the command line tool: aligned tables for people, NDJSON for machines.
#pragma once

#include <string>
#include <vector>

#include "publish/records.h"

namespace snapsink {

// Prints FormatRecords(records, columns, format) to stdout.
void PrintRecords(const std::vector<Record>& records, const std::vector<std::string>& columns, OutputFormat format);

}  // namespace snapsink
