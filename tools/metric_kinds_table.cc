#include "tools/metric_kinds_table.h"

namespace snapsink {

std::string AccuracyText(uint32_t ppm) {
  std::string s = std::to_string(1000000 + ppm).substr(1);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return "0." + s;
}

// "0.01" -> 10000 ppm: a decimal fraction of at most 6 places, in (0, 1).
bool ParseAccuracy(const std::string& text, uint32_t* ppm) {
  const size_t dot = text.find('.');
  if (text.size() < 3 || text.rfind("0.", 0) != 0 || text.size() - dot - 1 > 6 ||
      text.find_first_not_of("0123456789", dot + 1) != std::string::npos) {
    return false;
  }
  std::string digits = text.substr(dot + 1);
  digits.resize(6, '0');
  *ppm = static_cast<uint32_t>(std::stoul(digits));
  return *ppm > 0;
}

bool ParseKind(const std::string& text, api::MetricKind* kind) {
  for (api::MetricKind k : {api::MetricKind::kSum, api::MetricKind::kMinMax, api::MetricKind::kQuantiles,
                            api::MetricKind::kDistinct}) {
    if (text == api::MetricKindName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

bool ParsePrecision(const std::string& text, int* precision) {
  if (text.empty() || text.size() > 2 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *precision = std::stoi(text);
  return *precision >= 4 && *precision <= 18;
}

api::Table MetricKindsTable(const std::vector<api::MetricKindInfo>& kinds) {
  api::Table t{{"metric", "kind"}, {}};
  for (const api::MetricKindInfo& k : kinds) {
    if (k.kind == api::MetricKind::kQuantiles && t.columns.size() == 2) t.columns.push_back("accuracy");
  }
  // A distinct metric's precision: a column only when one is declared.
  for (const api::MetricKindInfo& k : kinds) {
    if (k.kind == api::MetricKind::kDistinct) {
      t.columns.push_back("precision");
      break;
    }
  }
  for (const api::MetricKindInfo& k : kinds) {
    api::Record r;
    r.Str("metric", k.metric);
    r.Str("kind", api::MetricKindName(k.kind));
    if (k.kind == api::MetricKind::kQuantiles) r.Num("accuracy", AccuracyText(k.accuracy_ppm));
    if (k.kind == api::MetricKind::kDistinct) r.Num("precision", std::to_string(k.precision));
    t.records.push_back(std::move(r));
  }
  return t;
}

}  // namespace snapsink
