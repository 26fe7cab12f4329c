#include "engine/root_bucket.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>

#include "engine/filenames.h"
#include "engine/metric_kinds.h"
#include "engine/state_checkpoint.h"

namespace snapsink {

namespace {

constexpr char kSettingsHeader[] = "snapsink root settings 1";

}  // namespace

std::string EncodeBucketSettings(const RootConfig& c, const MetricKinds& kinds) {
  std::string s = std::string(kSettingsHeader) + "\n";
  s += "format " + std::to_string(kProducerTimesFormat) + "\n";
  s += "window_ms " + std::to_string(c.window_ms) + "\n";
  s += "lateness_ms " + std::to_string(c.lateness_ms) + "\n";
  s += "on_gap " + std::string(c.on_gap == OnGap::kStop ? "stop" : "accept") + "\n";
  s += "id_horizon_ms " + std::to_string(c.id_horizon_ms) + "\n";
  s += "producer_retention_ms " + std::to_string(c.producer_retention_ms) + "\n";
  s += "retain_ms " + std::to_string(c.retain_ms) + "\n";
  s += "max_ahead_ms " + std::to_string(c.max_ahead_ms) + "\n";
  for (const auto& [metric, spec] : kinds) {
    s += "metric " + std::string(MetricKindName(spec.kind)) + " " + std::to_string(spec.parameter) + " " + metric + "\n";
  }
  return s;
}

namespace {

// "metric KIND PARAMETER NAME" (the name is the rest of the line).
Status DecodeSettingsKind(const std::string& rest, const std::string& path, MetricKinds* kinds) {
  const auto bad = [&] { return Status::Corruption(path + ": malformed line \"metric " + rest + "\""); };
  const size_t a = rest.find(' ');
  if (a == std::string::npos) return bad();
  const size_t b = rest.find(' ', a + 1);
  if (b == std::string::npos || b + 1 >= rest.size()) return bad();
  const std::optional<MetricKind> kind = ParseMetricKind(rest.substr(0, a));
  const std::string number = rest.substr(a + 1, b - a - 1);
  char* end = nullptr;
  const unsigned long long parameter = std::strtoull(number.c_str(), &end, 10);
  if (!kind || number.empty() || *end != '\0' || number[0] == '-' || parameter > UINT32_MAX) return bad();
  if (!kinds->emplace(rest.substr(b + 1), MetricSpec{*kind, static_cast<uint32_t>(parameter)}).second) {
    return Status::Corruption(path + ": metric " + rest.substr(b + 1) + " is declared twice");
  }
  return Status::OK();
}

}  // namespace

Status DecodeBucketSettings(std::string_view text, const std::string& path, RootConfig* out, MetricKinds* kinds) {
  auto bad = [&](const std::string& why) { return Status::Corruption(path + ": " + why); };
  std::map<std::string, std::string> fields;
  MetricKinds declared;
  size_t at = 0;
  bool first = true;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) return bad("its last line has no newline");
    const std::string line(text.substr(at, nl - at));
    at = nl + 1;
    if (first) {
      if (line != kSettingsHeader) return bad("not a snapsink root's settings (first line \"" + line + "\")");
      first = false;
      continue;
    }
    const size_t sp = line.find(' ');
    if (sp != std::string::npos && line.compare(0, sp, "metric") == 0) {
      SNAPSINK_RETURN_IF_ERROR(DecodeSettingsKind(line.substr(sp + 1), path, &declared));
      continue;
    }
    if (sp == std::string::npos || !fields.emplace(line.substr(0, sp), line.substr(sp + 1)).second) {
      return bad("malformed line \"" + line + "\"");
    }
  }
  if (first) return bad("empty");
  auto number = [&](const char* name, int64_t* v) -> Status {
    auto it = fields.find(name);
    if (it == fields.end()) return bad(std::string("no ") + name);
    char* end = nullptr;
    const long long n = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || n < 0) return bad(std::string(name) + " " + it->second);
    *v = n;
    return Status::OK();
  };
  int64_t format = 0;
  SNAPSINK_RETURN_IF_ERROR(number("format", &format));
  if (format > static_cast<int64_t>(kNewestFormat)) {
    return Status::InvalidArgument(path + " was written by a newer snapsink (format " + std::to_string(format) +
                                   ", this build reads up to " + std::to_string(kNewestFormat) + ")");
  }
  RootConfig c;
  SNAPSINK_RETURN_IF_ERROR(number("window_ms", &c.window_ms));
  SNAPSINK_RETURN_IF_ERROR(number("lateness_ms", &c.lateness_ms));
  SNAPSINK_RETURN_IF_ERROR(number("id_horizon_ms", &c.id_horizon_ms));
  SNAPSINK_RETURN_IF_ERROR(number("producer_retention_ms", &c.producer_retention_ms));
  SNAPSINK_RETURN_IF_ERROR(number("retain_ms", &c.retain_ms));
  SNAPSINK_RETURN_IF_ERROR(number("max_ahead_ms", &c.max_ahead_ms));
  auto gap = fields.find("on_gap");
  if (gap == fields.end() || (gap->second != "stop" && gap->second != "accept")) return bad("no on_gap stop|accept");
  c.on_gap = gap->second == "stop" ? OnGap::kStop : OnGap::kAccept;
  if (c.window_ms <= 0) return bad("window_ms must be positive");
  *out = c;
  if (kinds != nullptr) *kinds = std::move(declared);
  return Status::OK();
}

Status CheckBucketRoot(Env* env, const std::string& path) {
  std::string text;
  Status s = env->ReadFileToString(filenames::BucketSettings(path), &text);
  if (s.ok()) return Status::OK();
  if (!s.IsNotFound()) return s;
  std::vector<std::string> names;
  SNAPSINK_RETURN_IF_ERROR(env->GetChildren(path, &names));  // names a missing bucket or refused keys
  std::vector<std::string> there;
  for (const std::string& n : names) {
    if (n != "state" && n != "staging" && n != "rejects" && n.rfind("LOCK", 0) != 0) there.push_back(n);
  }
  if (there.empty()) {
    return Status::NotFound("root " + path + " does not exist (snapsink init " + path + " creates one)");
  }
  return Status::NotFound(path + " is not a snapsink root (it holds " + there.front() +
                          " but no settings object; create one with snapsink init on an empty prefix)");
}

Status InitBucketRoot(Env* env, const std::string& path, RootConfig config, const MetricKinds& kinds) {
  if (config.lateness_ms < 0) config.lateness_ms = config.window_ms;
  for (const auto& [metric, spec] : kinds) {
    if (metric.find_first_of("\r\n") != std::string::npos) {
      return Status::InvalidArgument("metric \"" + metric + "\": a name with a line break cannot be declared at init of "
                                     "a root in a bucket (its settings object holds one metric a line)");
    }
  }
  std::vector<std::string> names;
  SNAPSINK_RETURN_IF_ERROR(env->GetChildren(path, &names));  // names a missing bucket or refused keys
  for (const std::string& n : names) {
    if (n == "settings") return Status::InvalidArgument(path + " is already a snapsink root");
  }
  for (const std::string& n : names) {
    if (n == "state" || n == "staging" || n == "rejects" || n.rfind("LOCK", 0) == 0) continue;  // this disk's
    return Status::InvalidArgument(path + " is not empty (it holds " + n +
                                   ") and is not a snapsink root; init needs a new or empty prefix");
  }
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(filenames::BucketSettings(path), &f));
  SNAPSINK_RETURN_IF_ERROR(f->Append(EncodeBucketSettings(config, kinds)));
  Status s = f->Close();
  if (s.IsLocked()) return Status::InvalidArgument(path + " is already a snapsink root (another init made it)");
  return s;
}

Status PrepareBucketState(Env* env, const std::string& path, bool writer) {
  std::string text;
  Status s = env->ReadFileToString(filenames::BucketSettings(path), &text);
  if (s.IsNotFound()) return CheckBucketRoot(env, path);
  SNAPSINK_RETURN_IF_ERROR(s);
  RootConfig config;
  MetricKinds kinds;
  SNAPSINK_RETURN_IF_ERROR(DecodeBucketSettings(text, filenames::BucketSettings(path), &config, &kinds));
  if (env->FileExists(filenames::LmdbDataFile(filenames::StateDir(path)))) return Status::OK();
  bool published = false;
  if (writer) SNAPSINK_RETURN_IF_ERROR(env->Exists(filenames::Current(path), &published));
  if (published) {
    // The checkpoint of the generation CURRENT names, else nothing.
    std::string current;
    SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(filenames::Current(path), &current));
    uint64_t generation = 0;
    for (char c : current) {
      if (c < '0' || c > '9') break;
      generation = generation * 10 + static_cast<uint64_t>(c - '0');
    }
    bool restored = false;
    if (generation > 0) SNAPSINK_RETURN_IF_ERROR(RestoreStateCheckpoint(env, path, generation, &restored));
    if (restored) return Status::OK();
    return Status::InvalidArgument(path + " has published generations, and the state directory " +
                                   env->LocalPath(filenames::StateDir(path)) + " holds no state of it, nor does " +
                                   StateCheckpointFile(path, generation) +
                                   " exist to restore it from: give the --state DIR that published them");
  }
  return Root::Init(env, path, config, kinds);
}

}  // namespace snapsink
