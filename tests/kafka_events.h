// A deterministic event stream for the Kafka tests: per partition P one
// producer "pP" (so a producer never spans partitions), sequence numbers with
// ~10% redeliveries, a few swapped neighbours (a gap that fills), a retract
// or two, records of one to three NDJSON lines, and a bad line or two.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace snapsink::kafkatest {

struct EventStream {
  // records[p]: partition p's Kafka record values, in the order produced.
  std::vector<std::vector<std::string>> records;
  std::vector<uint64_t> lines;  // lines[p]: NDJSON lines in partition p's records
};

// `events` sequence numbers per producer (redeliveries and bad lines come on top).
EventStream GenerateEvents(int partitions, int events, uint64_t seed, int first_seq = 0);

// Appends partition after partition, each record's lines '\n'-terminated, in
// offset order: what `run --final` over a file must publish the same as.
std::string AsFile(const EventStream& stream);

}  // namespace snapsink::kafkatest
