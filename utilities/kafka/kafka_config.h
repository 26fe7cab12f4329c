// The librdkafka configuration of a snapsink Kafka consumer: the properties
// it sets itself, and the --kafka-config ones it refuses because they would
// break "positions come from the root, never from Kafka" (README.md, "Kafka").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "snapsink/status.h"

namespace snapsink::kafka {

using ConfigPairs = std::vector<std::pair<std::string, std::string>>;

// Splits each "KEY=VALUE" (as kcat -X). InvalidArgument for a malformed one,
// or one naming a property snapsink sets itself or that would let Kafka
// decide a position (enable.auto.commit, auto.offset.reset, group.id, ...).
Status ParseUserConfig(const std::vector<std::string>& items, ConfigPairs* out);

// The properties snapsink sets, in the order set (after the user's).
ConfigPairs FixedConfig(const std::string& brokers, const std::string& group, const std::string& client_id);

// "snapsink-<host>-<pid>": unique per process; never feeds an output.
std::string UniqueClientId();

}  // namespace snapsink::kafka
