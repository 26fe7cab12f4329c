#include "tools/table.h"

#include <cstdio>

namespace snapsink {

void PrintRecords(const std::vector<Record>& records, const std::vector<std::string>& columns, OutputFormat format) {
  const std::string out = api::FormatRecords(records, columns, format);
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace snapsink
