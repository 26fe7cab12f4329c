#include "tools/write_results.h"

#include <cstdio>

#include "snapsink/utilities/parse.h"
#include "tools/table.h"

namespace snapsink {

void PrintSealed(const std::vector<api::SealedWindow>& sealed) {
  for (const api::SealedWindow& s : sealed) {
    std::printf("sealed %s v%llu: %llu rows, %lld events\n", api::FormatTime(s.window_start_ms).c_str(),
                static_cast<unsigned long long>(s.version), static_cast<unsigned long long>(s.rows),
                static_cast<long long>(s.events));
  }
}

void PrintNothingToSeal(const api::UnsealedWindows& why, const char* flag) {
  std::string open;
  const size_t n = why.open.size();
  for (size_t i = 0; i < n && i < 5; ++i) {
    open += (open.empty() ? "" : ", ") + api::FormatTime(why.open[i].window_start_ms) + " (closes at event time " +
            api::FormatTime(why.open[i].closes_at_ms) + ")";
  }
  if (n > 5) open += " and " + std::to_string(n - 5) + " more";
  const std::string wm = why.watermark ? api::FormatTime(*why.watermark) : "none (no event applied yet)";
  if (n == 0) {
    std::printf("nothing to seal: no window has unsealed changes (watermark %s)\n", wm.c_str());
  } else if (flag == nullptr) {  // --final given, and the input stopped before its end
    std::printf("nothing to seal: no closed window has unsealed changes; open: %s; watermark %s; --final seals "
                "them once the input is read to its end\n", open.c_str(), wm.c_str());
  } else {
    std::printf("nothing to seal: no closed window has unsealed changes; open: %s; watermark %s; %s seals open "
                "windows too\n", open.c_str(), wm.c_str(), flag);
  }
}

void PrintPublished(const api::PublishResult& r) {
  std::printf("published generation %llu: %zu window(s)\n", static_cast<unsigned long long>(r.generation), r.windows);
  if (!r.dropped.empty()) {
    std::printf("dropped %zu window(s) beyond retention: %s .. %s\n", r.dropped.size(),
                api::FormatTime(r.dropped.front()).c_str(), api::FormatTime(r.dropped.back()).c_str());
  }
}

void PrintImpact(const std::vector<api::WindowImpact>& impact) {
  std::vector<Record> records;
  for (const api::WindowImpact& i : impact) {
    Record r;
    r.Str("window", api::FormatTime(i.window_start_ms));
    r.Num("current_events", std::to_string(i.before.events));
    r.Num("current_count", std::to_string(i.before.count));
    r.Num("current_sum", api::FormatMicros(i.before.sum_micros));
    r.Num("new_events", std::to_string(i.after.events));
    r.Num("new_count", std::to_string(i.after.count));
    r.Num("new_sum", api::FormatMicros(i.after.sum_micros));
    records.push_back(std::move(r));
  }
  PrintRecords(records,
               {"window", "current_events", "current_count", "current_sum", "new_events", "new_count", "new_sum"},
               OutputFormat::kTable);
}

void PrintPublishResult(const api::PublishResult& r) {
  if (r.generation == 0) {
    std::printf("nothing to publish\n");
  } else {
    PrintPublished(r);
  }
}

void PrintNote(const std::string& note) { std::fprintf(stderr, "%s\n", note.c_str()); }

}  // namespace snapsink
