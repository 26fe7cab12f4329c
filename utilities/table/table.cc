// Tables as text (include/snapsink/utilities/table.h), on the public API
// only: JSON strings are quoted by api::JsonQuote, as all of snapsink's JSON.
#include "snapsink/utilities/table.h"

#include <algorithm>

#include "snapsink/utilities/parse.h"

namespace snapsink::api {
namespace {

bool HasControl(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// RFC 4180; bytes stay as they are (a NUL too), and a field with any control
// character is quoted so no reader takes it for a terminator.
std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos && !HasControl(s)) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

std::string EscapeControl(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out.push_back(ch);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

void Record::Str(const std::string& name, const std::string& value) { fields.push_back({name, value, true}); }
void Record::Num(const std::string& name, const std::string& value) { fields.push_back({name, value, false}); }
void Record::Bool(const std::string& name, bool value) { fields.push_back({name, value ? "true" : "false", false}); }

std::string FormatRecords(const std::vector<Record>& records, const std::vector<std::string>& columns,
                          OutputFormat format) {
  std::string out;
  if (format == OutputFormat::kJson) {
    for (const Record& r : records) {
      out.push_back('{');
      bool first = true;
      for (const Field& f : r.fields) {
        if (!first) out.push_back(',');
        first = false;
        out.append(JsonQuote(f.name));
        out.push_back(':');
        out.append(f.is_string ? JsonQuote(f.value) : f.value);
      }
      out.append("}\n");
    }
  } else {
    std::vector<std::vector<std::string>> cells;
    cells.push_back(columns);
    for (const Record& r : records) {
      std::vector<std::string> row;
      for (const std::string& c : columns) {
        auto it = std::find_if(r.fields.begin(), r.fields.end(), [&](const Field& f) { return f.name == c; });
        std::string v = it == r.fields.end() ? "" : it->value;
        // A table says "none" where JSON says null, as status does.
        if (format == OutputFormat::kTable && it != r.fields.end() && !it->is_string && v == "null") v = "none";
        row.push_back(format == OutputFormat::kTable ? EscapeControl(v) : std::move(v));
      }
      cells.push_back(std::move(row));
    }
    if (format == OutputFormat::kCsv) {
      for (const auto& row : cells) {
        for (size_t i = 0; i < row.size(); ++i) {
          if (i > 0) out.push_back(',');
          out.append(CsvQuote(row[i]));
        }
        out.push_back('\n');
      }
    } else {
      std::vector<size_t> width(columns.size(), 0);
      for (const auto& row : cells)
        for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
      for (const auto& row : cells) {
        std::string line;
        for (size_t i = 0; i < row.size(); ++i) {
          if (i > 0) line.append("  ");
          line.append(row[i]);
          if (i + 1 < row.size()) line.append(width[i] - row[i].size(), ' ');
        }
        out.append(line);
        out.push_back('\n');
      }
    }
  }
  return out;
}

}  // namespace snapsink::api
