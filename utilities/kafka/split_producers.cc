#include "utilities/kafka/split_producers.h"

#include <algorithm>

#include "snapsink/utilities/parse.h"

namespace snapsink::kafka {

uint32_t SplitProducers::SourceIndex(std::string_view source) {
  for (uint32_t i = 0; i < sources_.size(); ++i) {
    if (sources_[i] == source) return i;
  }
  sources_.emplace_back(source);
  return static_cast<uint32_t>(sources_.size() - 1);
}

std::string SplitProducers::Names(const Seen& seen) const {
  std::string out = sources_[seen.first];
  for (uint32_t i : seen.others) out += ", " + sources_[i];
  return out;
}

Status SplitProducers::Check(std::string_view source, std::string_view producer, std::string* split) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t at = SourceIndex(source);
  auto [it, fresh] = producers_.try_emplace(std::string(producer));
  Seen& seen = it->second;
  if (fresh) {
    seen.first = at;
    return Status::OK();
  }
  if (seen.first == at || std::find(seen.others.begin(), seen.others.end(), at) != seen.others.end()) {
    return Status::OK();
  }
  const std::string quoted = api::JsonQuote(producer);
  if (on_split_ == OnSplitProducer::kStop) return Stop(quoted, sources_[seen.first], sources_[at]);
  if (seen.others.empty()) ++split_;
  seen.others.push_back(at);
  *split = Names(seen);
  found_.push_back({std::string(producer), *split,
                    "warning: producer " + quoted + " is split over " + *split +
                        ": its records are not keyed by producer, so its events are read out of order or counted "
                        "twice (going on, as asked)"});
  return Status::OK();
}

Status SplitProducers::Stop(const std::string& quoted, const std::string& first, const std::string& second) const {
  return Status::Gap("producer " + quoted + " is split over " + first + " and " + second +
                     ": its records must all go to one partition; key them by producer (kcat -K, librdkafka: the "
                     "message key set to the producer id), or OnSplitProducer::kWarn to go on");
}

Status SplitProducers::FoundMerged(const std::string& producer, const std::vector<std::string>& sources) {
  if (sources.size() < 2) return Status::OK();
  const std::string quoted = api::JsonQuote(producer);
  if (on_split_ == OnSplitProducer::kStop) return Stop(quoted, sources[0], sources[1]);
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = producers_.try_emplace(producer);
  Seen& seen = it->second;
  if (fresh) seen.first = SourceIndex(sources[0]);
  if (!seen.others.empty()) return Status::OK();  // counted and noted already
  for (const std::string& s : sources) {
    const uint32_t at = SourceIndex(s);
    if (at != seen.first) seen.others.push_back(at);
  }
  ++split_;
  std::string names;  // as the merged publish found them, ascending, whatever this process read first
  for (const std::string& s : sources) names += (names.empty() ? "" : ", ") + s;
  found_.push_back({producer, names,
                    "warning: producer " + quoted + " is split over " + names +
                        ": its records are not keyed by producer, so its events are counted twice (found by the "
                        "merged publish; going on, as asked)"});
  return Status::OK();
}

std::vector<SplitProducers::Found> SplitProducers::TakeFound() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Found> out;
  out.swap(found_);
  return out;
}

uint64_t SplitProducers::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return split_;
}

}  // namespace snapsink::kafka
