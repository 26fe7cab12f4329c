#include "tests/generation_view.h"

#include <gtest/gtest.h>

#include <memory>

#include "engine/decimal.h"
#include "engine/env.h"
#include "engine/timeutil.h"
#include "publish/generation_reader.h"
#include "tests/test_util.h"

namespace snapsink::testing {

std::ostream& operator<<(std::ostream& os, const GenerationView& v) {
  if (v.none) return os << "<nothing published>";
  os << "generation " << v.generation << ":";
  for (const std::string& w : v.windows) os << " " << w;
  for (const std::string& r : v.rows) os << "\n  " << r;
  return os;
}

void ReadGenerationView(const std::string& root, uint64_t generation, GenerationView* out) {
  *out = GenerationView();
  std::unique_ptr<Reader> reader;
  Status s = Reader::Open(Env::Default(), root, generation, &reader);
  if (s.IsNotFound() && generation == 0) {
    out->none = true;
    return;
  }
  ASSERT_STATUS_OK(s);
  out->generation = reader->generation();
  for (const GenerationEntry& e : reader->windows()) {
    const std::string window = FormatIso(e.window_ms);
    out->windows.push_back(window + " v" + std::to_string(e.version));
    std::vector<Row> rows;
    ASSERT_STATUS_OK(reader->Scan(e.window_ms, nullptr, [&](const Row& r) { rows.push_back(r); }));
    ASSERT_FALSE(rows.empty()) << window;
    for (const Row& r : rows) {
      Row got;
      ASSERT_STATUS_OK(reader->Get(e.window_ms, r.metric, r.key, &got));
      ASSERT_EQ(got, r);
      out->rows.push_back(window + " " + r.metric + " " + r.key + " " + std::to_string(r.count) + " " +
                          FormatMicros(r.sum_micros) + " " + std::to_string(r.events));
    }
  }
}

}  // namespace snapsink::testing
