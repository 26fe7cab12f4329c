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

Status SplitProducers::Check(std::string_view source, std::string_view producer, const api::ProducerSeqs& seqs,
                             std::string* split) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t at = SourceIndex(source);
  auto [it, fresh] = producers_.try_emplace(std::string(producer));
  Seen& seen = it->second;
  if (fresh) seen.first = at;
  if (seqs.epoch < seen.epoch) return Status::OK();  // only the newest epoch seen is compared
  if (seqs.epoch > seen.epoch || fresh) {
    seen.epoch = seqs.epoch;
    seen.ranges.clear();
  }
  // This partition's range of the epoch with the batch's, and the first
  // other partition whose range it overlaps.
  Range mine{at, seqs.first, seqs.last};
  for (const Range& r : seen.ranges) {
    if (r.source == at) mine = Range{at, std::min(r.first, mine.first), std::max(r.last, mine.last)};
  }
  const Range* other = nullptr;
  for (const Range& r : seen.ranges) {
    if (r.source != at && !(r.last < mine.first || mine.last < r.first)) {
      other = &r;
      break;
    }
  }
  if (other != nullptr && on_split_ == OnSplitProducer::kStop) {
    return Stop(api::JsonQuote(producer), sources_[other->source], sources_[at]);
  }
  const bool split_now = other != nullptr;
  const uint32_t over = split_now ? other->source : at;  // copied: the push_back below may move ranges
  auto in_place = std::find_if(seen.ranges.begin(), seen.ranges.end(), [&](const Range& r) { return r.source == at; });
  if (in_place != seen.ranges.end()) {
    *in_place = mine;
  } else {
    seen.ranges.push_back(mine);
  }
  if (!split_now) return Status::OK();
  // kWarn: named from the first split found on (not a partition a key
  // merely moved out of), then each partition found split with it.
  const bool noted = !seen.others.empty();
  if (!noted) seen.first = over;
  bool added = false;
  for (uint32_t s : {over, at}) {
    if (seen.first != s && std::find(seen.others.begin(), seen.others.end(), s) == seen.others.end()) {
      seen.others.push_back(s);
      added = true;
    }
  }
  if (!added) return Status::OK();
  if (!noted) ++split_;
  const std::string quoted = api::JsonQuote(producer);
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
