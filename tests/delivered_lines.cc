#include "tests/delivered_lines.h"

#include <string_view>

#include "snapsink/write_batch.h"

namespace snapsink::testing {

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l;
  return s;
}

std::string Redelivered(const std::vector<std::string>& lines) {
  std::string s;
  for (size_t i = 0; i < lines.size(); ++i) {
    s += lines[i];
    if (i % 7 == 0) s += lines[i];
    if (i % 13 == 0 && i >= 20) s += lines[i - 20];
  }
  return s;
}

std::vector<std::string> Delivered(const std::vector<std::string>& lines) {
  std::vector<std::string> out, late;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i >= 30 && i % 11 == 0) {
      late.push_back(lines[i]);
      continue;
    }
    out.push_back(lines[i]);
    if (i % 7 == 0) out.push_back(lines[i]);
  }
  out.insert(out.end(), late.begin(), late.end());
  for (size_t i = 0; i < 100 && i < lines.size(); i += 5) out.push_back(lines[i]);
  return out;
}

Status WriteInBatches(api::Sink& sink, const std::string& source, const std::vector<std::string>& lines, size_t batch) {
  api::WriteBatch b(source);
  for (size_t i = 0; i < lines.size(); ++i) {
    b.Add(std::string_view(lines[i]).substr(0, lines[i].size() - 1));
    if (b.records() == batch || i + 1 == lines.size()) {
      b.SetPosition(std::to_string(i + 1));
      Status s = sink.Write(b);
      if (!s.ok()) return s;
      b.Clear();
    }
  }
  return Status::OK();
}

}  // namespace snapsink::testing
