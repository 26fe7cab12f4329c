#include "publish/merged_bucket.h"

#include <algorithm>
#include <map>
#include <vector>

#include "engine/crash_point.h"
#include "engine/env_bucket_root.h"
#include "engine/filenames.h"
#include "engine/s3/s3_uri.h"
#include "engine/state_codec.h"
#include "engine/window_records.h"
#include "publish/current_file.h"
#include "publish/generation_manifest.h"

namespace snapsink {

namespace {

BucketRootEnv* BucketOf(Root* root) { return dynamic_cast<BucketRootEnv*>(root->env()); }

}  // namespace

std::string MergedInputsKey(const std::string& topic, int64_t w) {
  return "merged/" + topic + "/" + std::to_string(w);
}

bool InBucket(Root* root) { return BucketOf(root) != nullptr; }

Status AdoptBucketCurrent(Root* root, const std::string& topic) {
  BucketRootEnv* bucket = BucketOf(root);
  if (bucket == nullptr) return Status::OK();
  Env* env = root->env();
  const std::string& path = root->path();
  std::string line;
  Status s = env->ReadFileToString(filenames::Current(path), &line);
  if (s.IsNotFound()) line.clear();
  else SNAPSINK_RETURN_IF_ERROR(s);
  CurrentPointer current;
  if (!line.empty()) SNAPSINK_RETURN_IF_ERROR(DecodeCurrent(line, filenames::Current(path), &current));
  bucket->ExpectCurrent(line);

  CurrentPointer recorded;
  {
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&read));
    SNAPSINK_RETURN_IF_ERROR(RecordedCurrent(read.get(), &recorded));
  }
  if (recorded == current) return Status::OK();

  GenerationManifest gm;
  if (current.generation > 0) SNAPSINK_RETURN_IF_ERROR(ReadManifestNamedBy(env, path, current, &gm));
  std::map<int64_t, std::string> inputs;  // window -> identity of its published version
  for (const GenerationEntry& e : gm.windows) {
    std::string identity;
    Status r = env->ReadFileToString(filenames::MergedInputsFile(path, topic, e.window_ms, e.version), &identity);
    if (r.ok()) inputs[e.window_ms] = identity;
    else if (!r.IsNotFound()) return r;
  }
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginWrite(&txn));
  SNAPSINK_ASSIGN_OR_RETURN(auto last, Root::GetMetaU64(txn.get(), meta::kLastGeneration));
  SNAPSINK_RETURN_IF_ERROR(RecordCurrent(txn.get(), current));
  SNAPSINK_RETURN_IF_ERROR(
      Root::PutMetaU64(txn.get(), meta::kLastGeneration, std::max(last.value_or(0), current.generation)));
  for (const GenerationEntry& e : gm.windows) {
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), e.window_ms, &ws));
    ws.last_version = std::max(ws.last_version, e.version);
    ws.dirty = false;
    SNAPSINK_RETURN_IF_ERROR(WriteWindowState(txn.get(), e.window_ms, ws));
  }
  // The merged inputs: those of the bucket's generation, no others.
  const std::string prefix = "merged/" + topic + "/";
  std::vector<std::string> stale;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kMeta, prefix, [&](std::string_view k, std::string_view) {
    stale.emplace_back(k);
    return true;
  }));
  for (const std::string& k : stale) SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kMeta, k));
  for (const auto& [w, identity] : inputs) {
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kMeta, MergedInputsKey(topic, w), identity));
  }
  return txn->Commit();
}

Result<uint64_t> NextMergedVersion(Root* root, const std::string& topic, int64_t w, uint64_t last_version) {
  if (!InBucket(root)) return last_version + 1;
  std::vector<std::string> names;
  Status s = root->env()->GetChildren(filenames::SnapshotWindowDir(root->path(), w), &names);
  if (!s.ok() && !s.IsNotFound()) return s;
  uint64_t highest = last_version;
  for (const std::string& n : names) {
    uint64_t v = 0;
    if (filenames::ParseVersionDirName(n, &v)) highest = std::max(highest, v);
  }
  // A process that recorded what it merged a version from and then died or
  // lost its publish before that version's snapshot went up leaves
  // merged/<topic>/<w>-v<N> alone: N is taken as well.
  std::string inputs = filenames::MergedInputsFile(root->path(), topic, w, 0);
  inputs.pop_back();  // ".../<w>-v": every version of w
  std::string bucket, key;
  SNAPSINK_RETURN_IF_ERROR(ParseBucketPath(inputs, &bucket, &key));
  std::vector<S3ObjectInfo> objects;
  SNAPSINK_RETURN_IF_ERROR(BucketOf(root)->bucket()->client()->List(bucket, key, "", &objects, nullptr));
  for (const S3ObjectInfo& o : objects) {
    uint64_t v = 0;
    size_t i = key.size();
    for (; i < o.key.size() && o.key[i] >= '0' && o.key[i] <= '9'; ++i) v = v * 10 + static_cast<uint64_t>(o.key[i] - '0');
    if (i == o.key.size() && i > key.size()) highest = std::max(highest, v);
  }
  return highest + 1;
}

Status RecordMergedInputs(Root* root, const std::string& topic, int64_t w, uint64_t version,
                          const std::string& identity) {
  if (!InBucket(root)) return Status::OK();
  std::unique_ptr<WritableFile> f;
  const std::string path = filenames::MergedInputsFile(root->path(), topic, w, version);
  SNAPSINK_RETURN_IF_ERROR(root->env()->NewWritableFile(path, &f));
  SNAPSINK_RETURN_IF_ERROR(f->Append(identity));
  SNAPSINK_RETURN_IF_ERROR(f->Close());
  MaybeCrash("merge.inputs_recorded");
  return Status::OK();
}

}  // namespace snapsink
