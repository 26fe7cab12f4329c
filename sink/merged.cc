// The merged publish of a topic's partitions (SPEC 12) on the public API:
// partitions/partition_seals.h does the work.
#include "snapsink/utilities/partitions.h"

#include <algorithm>
#include <map>

#include "engine/env_bucket_root.h"
#include "engine/filenames.h"
#include "engine/json_escape.h"
#include "engine/s3/s3_uri.h"
#include "engine/root.h"
#include "engine/writer_lock.h"
#include "partitions/partition_seals.h"
#include "publish/partition_merge.h"
#include "sink/sink_impl.h"

namespace snapsink::api {
namespace {

// The names in owners/ (one per claimed source), sorted; none when absent.
Status ClaimedSources(const ReadOnlySink& root, std::vector<std::string>* out) {
  out->clear();
  const SinkImpl* impl = SinkAccess::Get(root);
  Env* env = impl->root->env();
  const std::string dir = filenames::OwnersDir(impl->root->path());
  bool exists = false;
  SNAPSINK_RETURN_IF_ERROR(env->Exists(dir, &exists));
  if (!exists) return Status::OK();
  std::vector<std::string> children;
  SNAPSINK_RETURN_IF_ERROR(env->GetChildren(dir, &children));
  for (std::string& c : children) {
    if (c != "." && c != ".." && !c.ends_with(".tmp")) out->push_back(std::move(c));
  }
  std::sort(out->begin(), out->end());
  return Status::OK();
}

// The topic of an owners/ name "kafka_T_P" ("" when it is no partition's):
// Kafka topic names are made of [A-Za-z0-9._-], which sanitizing keeps.
std::string ClaimedTopic(const std::string& name) {
  const size_t us = name.rfind('_');
  if (!name.starts_with("kafka_") || us == std::string::npos || us < 6 || us + 1 == name.size()) return "";
  for (size_t i = us + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return "";
  }
  return name.substr(6, us - 6);
}

// "a, b, c and 4 more".
std::string NameSome(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 3);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

}  // namespace

Status CheckOneKindOfSource(const ReadOnlySink& root, const std::string& topic) {
  std::vector<std::string> claimed;
  SNAPSINK_RETURN_IF_ERROR(ClaimedSources(root, &claimed));
  std::map<std::string, size_t> topics;  // topic (or owners/ name) -> partitions claimed
  for (const std::string& name : claimed) {
    const std::string t = ClaimedTopic(name);
    if (topic.empty() || t != topic) ++topics[t.empty() ? name : t];
  }
  std::vector<std::string> others;
  for (const auto& [t, n] : topics) {
    others.push_back("topic " + t + " (" + std::to_string(n) + " partition" + (n == 1 ? "" : "s") +
                     " through run --kafka --state)");
  }
  if (topic.empty()) {
    if (others.empty()) return Status::OK();
    return Status::InvalidArgument(root.path() + ": publishes the merged partitions of " + NameSome(others) +
                                   "; rows written into it another way would be replaced by the next merged "
                                   "publish of their windows: give them a root of their own (snapsink init)");
  }
  SNAPSINK_ASSIGN_OR_RETURN(auto sources, root.Sources());
  std::vector<std::string> own;
  for (const SourceView& s : sources) own.push_back(s.source);
  if (!own.empty()) others.insert(others.begin(), "its own sources " + NameSome(own));
  if (others.empty()) return Status::OK();
  return Status::InvalidArgument(root.path() + ": already takes rows from " + NameSome(others) +
                                 "; a merged publish of topic " + topic +
                                 " (run --kafka --state) would replace their windows with its rows alone: give "
                                 "topic " + topic + " a root of its own (snapsink init), or read it without --state");
}

Result<TopicFinish> FinishOfTopic(const ReadOnlySink& root, const std::string& topic, const std::vector<int64_t>& ends) {
  const SinkImpl* impl = SinkAccess::Get(root);
  TopicFinish out;
  for (size_t i = 0; i < ends.size(); ++i) {
    const auto p = static_cast<int32_t>(i);
    const std::string source = snapsink::PartitionSource(topic, p);
    snapsink::PartitionProgress pp;
    Status s = snapsink::ReadPartitionProgress(impl->root->env(), impl->root->path(), source, &pp);
    if (!s.ok() && !s.IsNotFound()) return s;
    if (!s.ok() || pp.position < ends[i] || !pp.unsealed.empty()) out.undone.push_back(p);
    SNAPSINK_ASSIGN_OR_RETURN(auto claim, NewestOwner(root, source));
    SNAPSINK_ASSIGN_OR_RETURN(auto checkpoints, Checkpoints(root, source));
    out.fingerprint += std::to_string(p) + ":" + std::to_string(claim.epoch) + ":" +
                       (checkpoints.empty() ? std::string() : checkpoints.front().path) + ":" +
                       (s.ok() ? pp.Encode() : std::string()) + "\n";
  }
  return out;
}

Result<std::vector<std::pair<int64_t, uint64_t>>> RecordPartitionSeals(ReadOnlySink& root, Sink& state,
                                                                     const PartitionRound& round) {
  SinkImpl* r = SinkAccess::Get(&root);
  std::vector<std::pair<int64_t, uint64_t>> recorded;
  SNAPSINK_RETURN_IF_ERROR(snapsink::RecordPartitionSeals(r->root->env(), r->root->path(),
                                                          SinkAccess::Get(&state)->root.get(), round, &recorded));
  return recorded;
}

Status RecordSplitProducer(ReadOnlySink& root, const std::string& producer, const std::string& sources) {
  if (producer.empty()) return Status::InvalidArgument("RecordSplitProducer: no producer");
  SinkImpl* impl = SinkAccess::Get(&root);
  SNAPSINK_RETURN_IF_ERROR(ReopenWritableHandle(impl));
  Root* r = impl->root.get();
  // In a bucket each process's ROOT state is its own: LOCK claims no writer epoch.
  if (auto* bucket = dynamic_cast<BucketRootEnv*>(r->env())) bucket->SharePublishing();
  std::unique_ptr<FileLock> lock;
  SNAPSINK_RETURN_IF_ERROR(LockRootWaiting(r->env(), r->path(), kFollowerStepWaitMs, &lock));
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(r->store()->BeginWrite(&txn));
  SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kMeta, meta::SplitProducerKey(producer), sources));
  return txn->Commit();
}

Status SharePublishing(const std::string& path) {
  return IsBucketPath(path) ? SetBucketSharedPublishing(path) : Status::OK();
}

Result<MergedPublishResult> PublishMerged(ReadOnlySink& root, const std::string& topic, int32_t partitions,
                                          const MergedPublishOptions& options) {
  if (partitions <= 0) return Status::InvalidArgument("PublishMerged: the topic has no partitions");
  // Checked at each publish: a source that came after this process started.
  SNAPSINK_RETURN_IF_ERROR(CheckOneKindOfSource(root, topic));
  SinkImpl* impl = SinkAccess::Get(&root);
  // In a bucket every process publishes from a state of its own (publish/merged_bucket.h).
  if (auto* bucket = dynamic_cast<BucketRootEnv*>(impl->root->env())) bucket->SharePublishing();
  SNAPSINK_RETURN_IF_ERROR(ReopenWritableHandle(impl));
  auto on_split = [&](const std::string& producer, const std::vector<int32_t>& on) -> Status {
    std::vector<std::string> sources;
    for (int32_t p : on) sources.push_back(snapsink::PartitionSource(topic, p));
    if (options.on_split_producer) return options.on_split_producer(producer, sources);
    return Status::Gap("producer " + snapsink::JsonQuote(producer) + " is split over " + sources[0] + " and " +
                       sources[1] + " (both partitions' states hold it): its records must all go to one partition; "
                       "nothing was published");
  };
  MergedPublishResult r;
  SNAPSINK_RETURN_IF_ERROR(snapsink::PublishMerged(impl->root.get(), topic, partitions, on_split, &r));
  return r;
}

}  // namespace snapsink::api
