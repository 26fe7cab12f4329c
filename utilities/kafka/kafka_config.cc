#include "utilities/kafka/kafka_config.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace snapsink::kafka {
namespace {

struct Refused {
  std::string_view key;
  std::string_view why;
};

// Each would let Kafka, not the root, decide where a partition is read from,
// or would replace what the command line already says.
constexpr std::array<Refused, 13> kRefused{{
    {"enable.auto.commit", "offsets come from the root; snapsink commits to Kafka itself, for lag tools only"},
    {"auto.commit.enable", "offsets come from the root; snapsink commits to Kafka itself, for lag tools only"},
    {"enable.auto.offset.store", "offsets come from the root, never from Kafka"},
    {"auto.offset.reset", "a lost position stops the partition (exit 3); use --kafka-start for new partitions"},
    {"topic.auto.offset.reset", "a lost position stops the partition (exit 3); use --kafka-start for new partitions"},
    {"offset.store.method", "offsets come from the root, never from Kafka"},
    {"offset.store.path", "offsets come from the root, never from Kafka"},
    {"isolation.level", "aborted transactions must never be applied (read_committed)"},
    {"enable.partition.eof", "snapsink needs the end-of-partition events to know when it has caught up"},
    {"group.id", "use --group"},
    {"bootstrap.servers", "use --kafka"},
    {"metadata.broker.list", "use --kafka"},
    {"client.id", "snapsink sets a unique client.id per process"},
}};

}  // namespace

Status ParseUserConfig(const std::vector<std::string>& items, ConfigPairs* out) {
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--kafka-config " + item + ": expected KEY=VALUE");
    }
    const std::string key = item.substr(0, eq);
    auto it = std::find_if(kRefused.begin(), kRefused.end(), [&](const Refused& r) { return r.key == key; });
    if (it != kRefused.end()) {
      return Status::InvalidArgument("--kafka-config " + key + " is refused: " + std::string(it->why));
    }
    out->emplace_back(key, item.substr(eq + 1));
  }
  return Status::OK();
}

ConfigPairs FixedConfig(const std::string& brokers, const std::string& group, const std::string& client_id) {
  return {
      {"bootstrap.servers", brokers},
      {"group.id", group},
      {"client.id", client_id},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"auto.offset.reset", "error"},
      {"isolation.level", "read_committed"},
      {"enable.partition.eof", "true"},
  };
}

std::string UniqueClientId() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::string h = host[0] ? host : "host";
  return "snapsink-" + h + "-" + std::to_string(getpid());
}

}  // namespace snapsink::kafka
