#include "publish/current_file.h"

#include <xxhash.h>

#include "engine/filenames.h"
#include "engine/root.h"
#include "snapshot/checked_json.h"
#include "publish/generation_parts.h"

namespace snapsink {
namespace {

std::string TmpPath(const std::string& root) { return filenames::Current(root) + ".tmp"; }

}  // namespace

Status ReadCurrentPointer(Env* env, const std::string& root, CurrentPointer* out) {
  *out = CurrentPointer();
  const std::string path = filenames::Current(root);
  std::string text;
  Status s = env->ReadFileToString(path, &text);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  return DecodeCurrent(text, path, out);
}

Status ReadManifestNamedBy(Env* env, const std::string& root, const CurrentPointer& c, GenerationManifest* out,
                           std::string* text) {
  SNAPSINK_RETURN_IF_ERROR(ReadTopManifestNamedBy(env, root, c, out, text));
  return LoadGenerationWindows(env, root, out);
}

Status ReadTopManifestNamedBy(Env* env, const std::string& root, const CurrentPointer& c, GenerationManifest* out,
                              std::string* text) {
  const std::string path = filenames::GenerationManifest(root, c.generation);
  std::string bytes;
  Status s = env->ReadFileToString(path, &bytes);
  if (s.IsNotFound()) {
    return Status::NotFound(filenames::Current(root) + ": names generation " + std::to_string(c.generation) + ", but " +
                            path + " is missing");
  }
  SNAPSINK_RETURN_IF_ERROR(s);
  if (XXH64(bytes.data(), bytes.size(), 0) != c.manifest_xxh64) {
    return Status::Corruption(filenames::Current(root) + ": names generation " + std::to_string(c.generation) +
                              " with checksum " + Hex64(c.manifest_xxh64) + ", but " + path + " hashes to " +
                              Hex64(XXH64(bytes.data(), bytes.size(), 0)));
  }
  SNAPSINK_RETURN_IF_ERROR(GenerationManifest::Decode(bytes, path, out));
  if (out->generation != c.generation) {
    return Status::Corruption(path + ": names generation " + std::to_string(out->generation));
  }
  if (text != nullptr) *text = std::move(bytes);
  return Status::OK();
}

Status StageCurrent(Env* env, const std::string& root, const CurrentPointer& c) {
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(TmpPath(root), &f));
  SNAPSINK_RETURN_IF_ERROR(f->Append(EncodeCurrent(c)));
  SNAPSINK_RETURN_IF_ERROR(f->Sync());
  SNAPSINK_RETURN_IF_ERROR(f->Close());
  // The name must be durable before LMDB records the switch: after a power
  // cut, CURRENT.tmp is what tells verify the switch is pending.
  return env->SyncDir(root);
}

Status InstallCurrent(Env* env, const std::string& root) {
  SNAPSINK_RETURN_IF_ERROR(env->RenameFile(TmpPath(root), filenames::Current(root)));
  return env->SyncDir(root);
}

bool SwitchPending(Env* env, const std::string& root, const CurrentPointer& c) {
  std::string text;
  return env->ReadFileToString(TmpPath(root), &text).ok() && text == EncodeCurrent(c);
}

Status RecordedCurrent(Txn* txn, CurrentPointer* out) {
  SNAPSINK_ASSIGN_OR_RETURN(auto g, Root::GetMetaU64(txn, meta::kCurrentGeneration));
  SNAPSINK_ASSIGN_OR_RETURN(auto h, Root::GetMetaU64(txn, meta::kCurrentManifestXxh64));
  out->generation = g.value_or(0);
  out->manifest_xxh64 = h.value_or(0);
  return Status::OK();
}

Status RecordCurrent(Txn* txn, const CurrentPointer& c) {
  SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn, meta::kCurrentGeneration, c.generation));
  SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn, meta::kLastGeneration, c.generation));
  return Root::PutMetaU64(txn, meta::kCurrentManifestXxh64, c.manifest_xxh64);
}

Status CheckCurrentPresent(Env* env, const std::string& root, Txn* txn) {
  const std::string path = filenames::Current(root);
  bool exists = false;
  SNAPSINK_RETURN_IF_ERROR(env->Exists(path, &exists));
  if (exists) return Status::OK();
  CurrentPointer recorded;
  SNAPSINK_RETURN_IF_ERROR(RecordedCurrent(txn, &recorded));
  if (recorded.generation == 0 || SwitchPending(env, root, recorded)) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(env->Exists(path, &exists));
  if (exists) return Status::OK();  // a publish renamed it meanwhile
  const std::string g = std::to_string(recorded.generation);
  const std::string manifest = filenames::GenerationManifest(root, recorded.generation);
  std::string bytes;
  const bool manifest_holds = env->ReadFileToString(manifest, &bytes).ok() &&
                              XXH64(bytes.data(), bytes.size(), 0) == recorded.manifest_xxh64;
  if (!manifest_holds) {
    return Status::Corruption(path + " is missing, but the state records generation " + g + " as published, and " +
                              manifest + " is missing or does not hash to what the state records (" +
                              Hex64(recorded.manifest_xxh64) + "): restore " + root + " from a backup");
  }
  return Status::Corruption(path + " is missing, but the state records generation " + g +
                            " as published; restore it: printf '" + g + " " + Hex64(recorded.manifest_xxh64) +
                            "\\n' > " + path + " && snapsink verify " + root);
}

Status FinishCurrent(Env* env, const std::string& root, Store* live) {
  CurrentPointer recorded;
  {
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
    SNAPSINK_RETURN_IF_ERROR(RecordedCurrent(read.get(), &recorded));
  }
  CurrentPointer on_disk;
  Status s = ReadCurrentPointer(env, root, &on_disk);
  if (s.ok() && on_disk == recorded) {
    return env->RemoveFile(TmpPath(root));  // a staged switch whose commit never happened
  }
  if (recorded.generation == 0) return s;  // CURRENT without any publish in state: leave it to verify
  if (s.ok() && on_disk.generation == 0 && !SwitchPending(env, root, recorded)) {
    // CURRENT missing and no switch pending: damage, not a stopped publish.
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
    SNAPSINK_RETURN_IF_ERROR(CheckCurrentPresent(env, root, read.get()));
  }
  SNAPSINK_RETURN_IF_ERROR(StageCurrent(env, root, recorded));
  return InstallCurrent(env, root);
}

}  // namespace snapsink
