#include "engine/state_checkpoint.h"

#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <vector>

#include "engine/crash_point.h"
#include "engine/env_bucket_root.h"
#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/s3/s3_uri.h"

namespace snapsink {

namespace {

constexpr std::string_view kMagic = "snapsink state checkpoint 1\n";
constexpr size_t kTrailer = 23;  // "xxh64 " + 16 hex digits + "\n"
// Checkpoints kept: CURRENT's and the one before (a restorer that read
// CURRENT just before the swap still finds its own).
constexpr uint64_t kKeep = 2;

std::string Trailer(uint64_t hash) {
  char buf[kTrailer + 1];
  std::snprintf(buf, sizeof buf, "xxh64 %016llx\n", static_cast<unsigned long long>(hash));
  return std::string(buf, kTrailer);
}

bool ParseU64(std::string_view text, uint64_t* v) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *v);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}

std::string Header(uint64_t generation, uint64_t data_bytes) {
  return std::string(kMagic) + "generation " + std::to_string(generation) + "\ndata " + std::to_string(data_bytes) +
         "\n\n";
}

// The LMDB data of a checkpoint object, checked whole.
Status Decode(const std::string& path, const std::string& bytes, uint64_t generation, std::string_view* data) {
  auto bad = [&](const std::string& why) { return Status::Corruption(path + ": not a state checkpoint: " + why); };
  if (bytes.compare(0, kMagic.size(), kMagic) != 0) return bad("no 'snapsink state checkpoint 1' line");
  const size_t end = bytes.find("\n\n", kMagic.size() - 1);
  if (end == std::string::npos) return bad("its header does not end");
  const std::string_view head = std::string_view(bytes).substr(kMagic.size(), end + 1 - kMagic.size());
  const size_t nl = head.find('\n');
  uint64_t g = 0, n = 0;
  if (head.substr(0, 11) != "generation " || nl == std::string_view::npos || !ParseU64(head.substr(11, nl - 11), &g) ||
      head.substr(nl + 1, 5) != "data " || !ParseU64(head.substr(nl + 6, head.size() - nl - 7), &n)) {
    return bad("its header fields are not generation, data");
  }
  if (g != generation) return bad("it names generation " + std::to_string(g));
  const size_t start = end + 2;
  if (bytes.size() != start + n + kTrailer) {
    return Status::Corruption(path + ": " + std::to_string(bytes.size()) + " bytes, its header says " +
                              std::to_string(start + n + kTrailer));
  }
  if (bytes.compare(start + n, kTrailer, Trailer(XXH64(bytes.data(), start + n, 0))) != 0) {
    return Status::Corruption(path + ": checksum mismatch");
  }
  *data = std::string_view(bytes).substr(start, n);
  return Status::OK();
}

// Removes the checkpoints of generations below generation + 1 - kKeep.
Status Prune(Env* env, const std::string& root, uint64_t generation) {
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::StateCheckpointsDir(root), &names);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  for (const std::string& n : names) {
    uint64_t g = 0;
    if (n.size() != 20 || !ParseU64(n, &g) || g + kKeep > generation) continue;
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(StateCheckpointFile(root, g)));
  }
  return Status::OK();
}

}  // namespace

std::string StateCheckpointFile(const std::string& root, uint64_t generation) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(generation));
  return filenames::Join(filenames::StateCheckpointsDir(root), buf);
}

Status WriteStateCheckpoint(Env* env, const std::string& root, Store* live, uint64_t generation) {
  auto* bucket = IsBucketPath(root) ? dynamic_cast<BucketRootEnv*>(env) : nullptr;
  if (bucket == nullptr || generation == 0 || !bucket->has_state_dir() || bucket->shared_publishing()) {
    return Status::OK();
  }
  const std::string path = StateCheckpointFile(root, generation);
  bool there = false;
  SNAPSINK_RETURN_IF_ERROR(env->Exists(path, &there));
  if (there) return Status::OK();
  const std::string copy = filenames::CheckpointCopyDir(root);  // on this disk (a .tmp)
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(copy));             // a crashed checkpoint's
  SNAPSINK_RETURN_IF_ERROR(env->CreateDirs(copy));
  std::string data;
  Status s = live->CopyCompact(env->LocalPath(copy));
  if (s.ok()) s = env->ReadFileToString(filenames::LmdbDataFile(copy), &data);
  (void)env->RemoveTree(copy);
  SNAPSINK_RETURN_IF_ERROR(s.Prefixed(path + ": "));
  std::string bytes = Header(generation, data.size());
  bytes += data;
  data.clear();
  data.shrink_to_fit();
  bytes += Trailer(XXH64(bytes.data(), bytes.size(), 0));
  MaybeCrash("publish.state_checkpoint");
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(path, &f));
  SNAPSINK_RETURN_IF_ERROR(f->Append(bytes));
  s = f->Close();
  // Another writer's checkpoint of this generation (its bytes are another
  // copy of the same state): one is enough.
  if (!s.ok() && !s.IsLocked()) return s;
  return Prune(env, root, generation);
}

Status RestoreStateCheckpoint(Env* env, const std::string& root, uint64_t generation, bool* restored) {
  *restored = false;
  const std::string path = StateCheckpointFile(root, generation);
  std::string bytes;
  Status s = env->ReadFileToString(path, &bytes);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  std::string_view data;
  SNAPSINK_RETURN_IF_ERROR(Decode(path, bytes, generation, &data));
  SNAPSINK_RETURN_IF_ERROR(Root::InitWithState(env, root, [&](const std::string& dir) {
    SNAPSINK_RETURN_IF_ERROR(env->CreateDir(dir));
    std::unique_ptr<WritableFile> out;
    SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(filenames::LmdbDataFile(dir), &out));
    SNAPSINK_RETURN_IF_ERROR(out->Append(data));
    SNAPSINK_RETURN_IF_ERROR(out->Sync());
    SNAPSINK_RETURN_IF_ERROR(out->Close());
    SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));
    MaybeCrash("state.restore");
    return Status::OK();
  }));
  *restored = true;
  return Status::OK();
}

}  // namespace snapsink
