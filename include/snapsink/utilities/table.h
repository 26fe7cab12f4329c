// snapsink public utilities: the views (views.h) and query rows (reader.h)
// as tables, and tables as text: an aligned table for people, NDJSON or CSV
// for machines. The HTTP server prints exactly these bytes, so a program
// printing a view gets what every other snapsink output shows.
//
// Not part of the core: built on the public API only. Standard library and
// the core headers only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "snapsink/reader.h"
#include "snapsink/views.h"

namespace snapsink::api {

enum class OutputFormat { kTable, kJson, kCsv };

// One output field. A string field is quoted in JSON; any other is written
// as it is (number, boolean or null text).
struct Field {
  std::string name;
  std::string value;
  bool is_string = false;
};

// One output record: ordered fields.
struct Record {
  std::vector<Field> fields;
  void Str(const std::string& name, const std::string& value);
  void Num(const std::string& name, const std::string& value);  // value is JSON number text (or null)
  void Bool(const std::string& name, bool value);
};

// A view ready to print: columns name the table/csv columns (a record may
// have more fields: json writes every field of each record).
struct Table {
  std::vector<std::string> columns;
  std::vector<Record> records;
};

// The text of records: a header line and space-aligned columns (cells go
// through EscapeControl), one JSON object per line (json), or RFC 4180 CSV
// with a header (csv; a field with a control byte is quoted).
std::string FormatRecords(const std::vector<Record>& records, const std::vector<std::string>& columns,
                          OutputFormat format);
inline std::string FormatTable(const Table& t, OutputFormat format) {
  return FormatRecords(t.records, t.columns, format);
}

// s with each control byte (below 0x20, and 0x7f) written as \t, \n, \r or
// \xHH, so a name holding a tab or newline cannot break a table's alignment.
std::string EscapeControl(const std::string& s);

// Each view as named fields and its columns. Every printed form of a view
// (the HTTP server's too) goes through these, so the same question gives the
// same bytes.
Table ToTable(const std::vector<ProducerInfo>& producers);
Table ToTable(const std::vector<GapInfo>& gaps);
// Open gaps (state "open") and then every accepted record (state "accepted").
Table ToTable(const std::vector<GapInfo>& open, const std::vector<AcceptedGapInfo>& accepted);
// Accepted source ranges (printed after the producers' gaps).
Table ToTable(const std::vector<AcceptedSourceGapInfo>& accepted);
Table ToTable(const std::vector<SourceView>& sources);  // the id columns in json only
Table ToTable(const IdsInfo& ids);
Table ToTable(const std::vector<WindowInfo>& windows);
Table ToTable(const std::vector<SnapshotInfo>& snapshots);
Table ToTable(const std::vector<GenerationInfo>& generations);
// Query rows of `generation` (Reader::Query). `quantiles`: the spec's
// (QuerySpec::quantiles), one column each after sum (and min, max, and
// distinct), named by QuantileColumn; a row of no quantiles metric leaves
// them empty. A distinct column (after min and max) only when a row has one.
Table ToTable(const std::vector<QueryRow>& rows, uint64_t generation, const std::vector<double>& quantiles = {});
// Roll-up rows of `generation` (Reader::Rollup): bucket (its start, or
// "all"), metric, key, count, sum, windows, generation; quantiles the same.
Table ToTable(const std::vector<RollupRow>& rows, uint64_t generation, const std::vector<double>& quantiles = {});
// The column of quantile q: "p" and q in percent, shortest form (0.5: p50,
// 0.999: p99.9).
std::string QuantileColumn(double q);

}  // namespace snapsink::api
