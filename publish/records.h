// Output records: what query, inspect and the HTTP server print. One
// formatting path, so `snapsink query --format json` and `GET /v1/query`
// give the same bytes.
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

// The text of records: a header line and space-aligned columns (table cells
// go through EscapeControl), one JSON object per line (json) or RFC 4180 CSV
// with a header (csv; a field with a control byte is quoted). columns
// name the table/csv columns; json writes every field of each record.
std::string FormatRecords(const std::vector<Record>& records, const std::vector<std::string>& columns,
                          OutputFormat format);

}  // namespace snapsink
