#include "engine/filenames.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>
#include <xxhash.h>

#include "engine/timeutil.h"

namespace snapsink::filenames {

std::string Join(const std::string& dir, std::string_view name) {
  std::string p = dir;
  if (!p.empty() && p.back() != '/') p.push_back('/');
  p.append(name);
  return p;
}

std::string LockFile(const std::string& root) { return Join(root, "LOCK"); }
std::string FollowerLockFile(const std::string& root) { return Join(root, "LOCK.follower"); }
std::string LockQueueFile(const std::string& root) { return Join(root, "LOCK.queue"); }
std::string StateDir(const std::string& root) { return Join(root, "state"); }
std::string InitStateDir(const std::string& root) { return Join(root, "state.init-tmp"); }
std::string LmdbDataFile(const std::string& dir) { return Join(dir, "data.mdb"); }
std::string BackfillStateDir(const std::string& root, uint64_t version) {
  return Join(StateDir(root), "backfill-" + VersionDirName(version));
}
std::string BackfillLockFile(const std::string& root, uint64_t version) {
  return Join(BackfillStateDir(root, version), "LOCK");
}
std::string BackfillEnvBuildDir(const std::string& root, uint64_t version) {
  return Join(BackfillStateDir(root, version), "state.init-tmp");
}
std::string LmdbLockFile(const std::string& dir) { return Join(dir, "lock.mdb"); }
std::string StagingDir(const std::string& root) { return Join(root, "staging"); }
std::string StagingWindowDir(const std::string& root, int64_t window_ms) {
  return Join(StagingDir(root), FormatCompact(window_ms));
}
std::string StagingSnapshotDir(const std::string& root, int64_t window_ms, uint64_t version) {
  return Join(StagingWindowDir(root, window_ms), VersionDirName(version));
}
std::string SnapshotsDir(const std::string& root) { return Join(root, "snapshots"); }
std::string SnapshotWindowDir(const std::string& root, int64_t window_ms) {
  return Join(SnapshotsDir(root), FormatCompact(window_ms));
}
std::string SnapshotDir(const std::string& root, int64_t window_ms, uint64_t version) {
  return Join(SnapshotWindowDir(root, window_ms), VersionDirName(version));
}
std::string ManifestsDir(const std::string& root) { return Join(root, "manifests"); }
std::string GenerationManifest(const std::string& root, uint64_t generation) {
  return Join(ManifestsDir(root), std::to_string(generation));
}
std::string PartsDir(const std::string& root) { return Join(ManifestsDir(root), "parts"); }
std::string GenerationPart(const std::string& root, uint64_t xxh64) {
  return Join(PartsDir(root), fmt::format("{:016x}", xxh64));
}
bool ParsePartName(std::string_view name, uint64_t* xxh64) {
  if (name.size() != 16) return false;
  uint64_t v = 0;
  for (char c : name) {
    if (c >= '0' && c <= '9') v = v * 16 + static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + static_cast<uint64_t>(c - 'a' + 10);
    else return false;
  }
  *xxh64 = v;
  return true;
}
std::string Current(const std::string& root) { return Join(root, "CURRENT"); }
std::string RejectsDir(const std::string& root) { return Join(root, "rejects"); }
std::string RejectsFileName(std::string_view source) {
  std::string name = SanitizeSourceName(source);
  if (name.size() > kMaxRejectsStem) {
    name.resize(kRejectsStemCut);
    name += fmt::format("-{:016x}", XXH64(source.data(), source.size(), 0));
  }
  return name + ".ndjson";
}

std::string RejectsFile(const std::string& root, std::string_view source) {
  return Join(RejectsDir(root), RejectsFileName(source));
}

std::string OwnersDir(const std::string& root) { return Join(root, "owners"); }

std::string OwnerDir(const std::string& root, std::string_view source) {
  std::string stem = RejectsFileName(source);  // the same sanitized, bounded stem
  stem.resize(stem.size() - std::string_view(".ndjson").size());
  return Join(OwnersDir(root), stem);
}

std::string OwnerClaimFile(const std::string& root, std::string_view source, uint64_t epoch) {
  return Join(OwnerDir(root, source), fmt::format("{:020d}", epoch));
}

std::string OwnerLockFile(const std::string& root, std::string_view source) {
  return Join(OwnerDir(root, source), "LOCK");
}

bool ParseOwnerClaimName(std::string_view name, uint64_t* epoch) {
  if (name.size() != 20) return false;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), *epoch);
  return ec == std::errc() && p == name.data() + name.size() && *epoch > 0;
}

std::string PartitionsDir(const std::string& root) { return Join(root, "partitions"); }

std::string PartitionDir(const std::string& root, std::string_view source) {
  std::string stem = RejectsFileName(source);  // the same sanitized, bounded stem as owners/
  stem.resize(stem.size() - std::string_view(".ndjson").size());
  return Join(PartitionsDir(root), stem);
}

std::string PartitionSealsDir(const std::string& root, std::string_view source) {
  return Join(PartitionDir(root, source), "seals");
}

std::string PartitionSealDir(const std::string& root, std::string_view source, int64_t window_ms, uint64_t version,
                             uint64_t epoch) {
  return Join(PartitionSealsDir(root, source),
              FormatCompact(window_ms) + "-" + VersionDirName(version) + "-e" + std::to_string(epoch));
}

std::string PartitionProgressFile(const std::string& root, std::string_view source) {
  return Join(PartitionDir(root, source), "progress");
}

std::string CheckpointDir(const std::string& root, std::string_view source) {
  return Join(PartitionDir(root, source), "checkpoints");
}

std::string CheckpointFile(const std::string& root, std::string_view source, uint64_t epoch, uint64_t offset) {
  return Join(CheckpointDir(root, source), fmt::format("e{:020d}-o{:020d}", epoch, offset));
}

bool ParseCheckpointName(std::string_view name, uint64_t* epoch, uint64_t* offset) {
  if (name.size() != 43 || name[0] != 'e' || name.substr(21, 2) != "-o") return false;
  auto digits = [](std::string_view d, uint64_t* v) {
    auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), *v);
    return ec == std::errc() && p == d.data() + d.size();
  };
  return digits(name.substr(1, 20), epoch) && digits(name.substr(23, 20), offset) && *epoch > 0;
}

std::string CheckpointCopyDir(const std::string& state_root) { return Join(state_root, "checkpoint.tmp"); }

std::string BackfillRejectsFile(const std::string& root, uint64_t version, std::string_view source) {
  return Join(RejectsDir(root), "backfill-" + VersionDirName(version) + "-" + RejectsFileName(source));
}

std::string BackfillSpoolFile(const std::string& root, uint64_t version) {
  return Join(BackfillStateDir(root, version), "stdin.spool");
}
std::string BackfillSpoolDoneFile(const std::string& root, uint64_t version) {
  return Join(BackfillStateDir(root, version), "stdin.spool.done");
}

std::string BucketSettings(const std::string& root) { return root + "/settings"; }
std::string WritersDir(const std::string& root) { return root + "/writers"; }
std::string MergedInputsDir(const std::string& root) { return root + "/merged"; }
std::string StateCheckpointsDir(const std::string& root) { return root + "/checkpoints"; }
std::string StateCheckpointCopyDir(const std::string& root) { return Join(root, "state.checkpoint"); }
std::string MergedInputsFile(const std::string& root, const std::string& topic, int64_t window_ms, uint64_t version) {
  return MergedInputsDir(root) + "/" + topic + "/" + std::to_string(window_ms) + "-v" + std::to_string(version);
}

bool IsRootEntry(std::string_view name) {
  // The last component of each path the functions above build under a root.
  for (const std::string& p : {LockFile("r"), StateDir("r"), InitStateDir("r"), StagingDir("r"), SnapshotsDir("r"),
                               ManifestsDir("r"), Current("r"), RejectsDir("r"), OwnersDir("r"),
                               PartitionsDir("r"), BucketSettings("r"), WritersDir("r"), MergedInputsDir("r"),
                               StateCheckpointsDir("r"), StateCheckpointCopyDir("r")}) {
    if (std::string_view(p).substr(2) == name) return true;
  }
  return false;
}

std::string VersionDirName(uint64_t version) { return "v" + std::to_string(version); }

namespace {
template <typename T>
bool ParseDecimal(std::string_view s, T* out) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}
}  // namespace

bool ParseVersionDirName(std::string_view name, uint64_t* version) {
  if (name.size() < 2 || name[0] != 'v') return false;
  return ParseDecimal(name.substr(1), version) && *version > 0;
}

bool ParseWindowDirName(std::string_view name, int64_t* window_ms) {
  return ParseWindowName(name, window_ms) && FormatCompact(*window_ms) == name;
}

bool ParseGenerationName(std::string_view name, uint64_t* generation) {
  return ParseDecimal(name, generation) && *generation > 0;
}

bool ParsePartitionSealName(std::string_view name, int64_t* window_ms, uint64_t* version, uint64_t* epoch) {
  const size_t v = name.find("-v");
  const size_t e = name.rfind("-e");
  if (v == std::string_view::npos || e == std::string_view::npos || e < v) return false;
  return ParseWindowDirName(name.substr(0, v), window_ms) && ParseVersionDirName(name.substr(v + 1, e - v - 1), version) &&
         ParseDecimal(name.substr(e + 2), epoch) && *epoch > 0 &&
         FormatCompact(*window_ms) + "-" + VersionDirName(*version) + "-e" + std::to_string(*epoch) == name;
}

std::string SanitizeSourceName(std::string_view source) {
  std::string out(source);
  for (char& c : out) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
    if (!keep) c = '_';
  }
  return out;
}

namespace {

std::vector<std::string_view> SplitPath(std::string_view p) {
  std::vector<std::string_view> parts;
  while (!p.empty()) {
    const size_t slash = p.find('/');
    parts.push_back(p.substr(0, slash));
    if (slash == std::string_view::npos) break;
    p.remove_prefix(slash + 1);
  }
  return parts;
}

bool IsVersionDir(std::string_view name) {
  uint64_t v;
  return ParseVersionDirName(name, &v);
}

bool IsWindowDir(std::string_view name) {
  int64_t w;
  return ParseWindowDirName(name, &w);
}

// state/ holds LMDB's two files and one environment per running backfill.
bool IsStatePath(const std::vector<std::string_view>& p) {
  auto lmdb_file = [](std::string_view n) { return n == "data.mdb" || n == "lock.mdb"; };
  if (p.size() == 1) return true;
  const bool backfill = p[1].substr(0, 9) == "backfill-" && IsVersionDir(p[1].substr(9));
  if (p.size() == 2) return lmdb_file(p[1]) || backfill;
  // state.init-tmp/: where the backfill's environment is built (publish/backfill.cc).
  if (p.size() >= 3 && backfill && p[2] == "state.init-tmp") return p.size() == 3 || (p.size() == 4 && lmdb_file(p[3]));
  return p.size() == 3 && backfill &&
         (lmdb_file(p[2]) || p[2] == "LOCK" || p[2] == "stdin.spool" || p[2] == "stdin.spool.done");
}

// staging/ and snapshots/: <window>/v<version>/{data,manifest.json}.
bool IsSnapshotPath(const std::vector<std::string_view>& p) {
  if (p.size() >= 2 && !IsWindowDir(p[1])) return false;
  if (p.size() >= 3 && !IsVersionDir(p[2])) return false;
  if (p.size() == 4) return p[3] == kDataFile || p[3] == kSnapshotManifestFile;
  return p.size() <= 3;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

FileKind ClassifyRootPath(std::string_view relative) {
  const std::vector<std::string_view> p = SplitPath(relative);
  if (p.empty()) return FileKind::kUnknown;
  if (p[0] == "state") return IsStatePath(p) ? FileKind::kState : FileKind::kUnknown;
  if (EndsWith(p.back(), ".tmp")) return FileKind::kTemp;
  if (p.size() == 1 && (p[0] == "LOCK" || p[0] == "LOCK.follower" || p[0] == "LOCK.queue")) return FileKind::kLock;
  if (p.size() == 1 && p[0] == "CURRENT") return FileKind::kCurrent;
  // A root in a bucket: its settings stand in for state/, its writer epochs for LOCK.
  if (p.size() == 1 && p[0] == "settings") return FileKind::kState;
  // A file writer's state checkpoints (engine/state_checkpoint.h): copies of state/.
  if (p[0] == "checkpoints" && (p.size() == 1 || (p.size() == 2 && p[1].size() == 20 &&
                                                    p[1].find_first_not_of("0123456789") == std::string_view::npos))) {
    return FileKind::kState;
  }
  // The local copy of the state the last of them makes (in --state DIR).
  if (p[0] == "state.checkpoint" && (p.size() == 1 || (p.size() == 2 && (p[1] == "data.mdb" || p[1] == "lock.mdb")))) {
    return FileKind::kState;
  }
  uint64_t epoch;
  if (p[0] == "writers" && (p.size() == 1 || (p.size() == 2 && ParseOwnerClaimName(p[1], &epoch)))) {
    return FileKind::kLock;
  }
  if (p[0] == "staging") return IsSnapshotPath(p) ? FileKind::kStaging : FileKind::kUnknown;
  if (p[0] == "snapshots") return IsSnapshotPath(p) ? FileKind::kSnapshots : FileKind::kUnknown;
  uint64_t g;
  if (p[0] == "manifests" && (p.size() == 1 || (p.size() == 2 && (ParseGenerationName(p[1], &g) || p[1] == "parts")) ||
                              (p.size() == 3 && p[1] == "parts" && ParsePartName(p[2], &g)))) {
    return FileKind::kManifests;
  }
  if (p[0] == "rejects" && (p.size() == 1 || (p.size() == 2 && EndsWith(p[1], ".ndjson")))) return FileKind::kRejects;
  uint64_t e;
  if (p[0] == "owners" && (p.size() <= 2 || (p.size() == 3 && (p[2] == "LOCK" || ParseOwnerClaimName(p[2], &e))))) {
    return FileKind::kOwners;
  }
  if (p[0] == "partitions") {
    int64_t w;
    uint64_t v, o;
    if (p.size() <= 2 || (p.size() == 3 && (p[2] == "progress" || p[2] == "producers" || p[2] == "seals" ||
                                             p[2] == "checkpoints"))) {
      return FileKind::kPartitions;
    }
    if (p[2] == "checkpoints" && p.size() == 4 && ParseCheckpointName(p[3], &e, &o)) return FileKind::kPartitions;
    if (p[2] == "seals" && ParsePartitionSealName(p[3], &w, &v, &e) &&
        (p.size() == 4 || (p.size() == 5 && (p[4] == kDataFile || p[4] == kSealRecordFile)))) {
      return FileKind::kPartitions;
    }
  }
  return FileKind::kUnknown;
}

const char* FileKindName(FileKind kind) {
  switch (kind) {
    case FileKind::kLock: return "lock";
    case FileKind::kState: return "state";
    case FileKind::kStaging: return "staging";
    case FileKind::kSnapshots: return "snapshots";
    case FileKind::kManifests: return "manifests";
    case FileKind::kCurrent: return "current";
    case FileKind::kRejects: return "rejects";
    case FileKind::kOwners: return "owners";
    case FileKind::kPartitions: return "partitions";
    case FileKind::kTemp: return "temp";
    case FileKind::kUnknown: break;
  }
  return "unknown";
}

}  // namespace snapsink::filenames
