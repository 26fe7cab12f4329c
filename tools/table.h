// Output of the command line tool: aligned tables for people, NDJSON for machines.
#pragma once

#include <string>
#include <vector>

namespace snapsink {

// One output record: ordered fields. A string field is quoted in JSON; any
// other is written as it is (number or boolean text).
struct Field {
  std::string name;
  std::string value;
  bool is_string = false;
};
struct Record {
  std::vector<Field> fields;
  void Str(const std::string& name, const std::string& value);
  void Num(const std::string& name, const std::string& value);  // value is JSON number text
  void Bool(const std::string& name, bool value);
};

enum class OutputFormat { kTable, kJson, kCsv };

// s with each control byte (below 0x20, and 0x7f) written as \t, \n, \r or
// \xHH, so a key holding a tab or newline cannot break a table's alignment.
std::string EscapeControl(const std::string& s);

// Prints records to stdout: a header line and space-aligned columns (table),
// one JSON object per line (json)
// (table cells go through EscapeControl) or RFC 4180 CSV with a header (csv).
void PrintRecords(const std::vector<Record>& records, const std::vector<std::string>& columns, OutputFormat format);

}  // namespace snapsink
