// The public Reader: a pimpl over publish/generation_reader.h.
#include "snapsink/reader.h"

#include "engine/root.h"

#include "engine/decimal.h"
#include "engine/env_bucket_root.h"
#include "engine/filenames.h"
#include "engine/timeutil.h"
#include "publish/current_file.h"
#include "publish/generation_reader.h"
#include "snapshot/table_cache.h"
#include "sink/root_views.h"
#include "snapsink/options.h"

namespace snapsink::api {

struct Reader::Impl {
  std::unique_ptr<snapsink::Reader> reader;
  std::vector<WindowVersion> windows;
  snapsink::Row row;  // Get's scratch: its strings keep their buffers between calls
};

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;

Result<std::unique_ptr<Reader>> Reader::Open(const std::string& root, uint64_t generation) {
  Env* env = nullptr;
  SNAPSINK_RETURN_IF_ERROR(EnvForRoot(root, &env));
  if (!env->FileExists(filenames::StateDir(root))) SNAPSINK_RETURN_IF_ERROR(Root::CheckIsRoot(env, root));
  auto impl = std::make_unique<Impl>();
  SNAPSINK_RETURN_IF_ERROR(snapsink::Reader::Open(env, root, generation, &impl->reader));
  for (const GenerationEntry& e : impl->reader->windows()) {
    impl->windows.push_back({e.window_ms, static_cast<uint64_t>(e.version)});
  }
  return std::unique_ptr<Reader>(new Reader(std::move(impl)));
}

Result<std::unique_ptr<Reader>> Reader::OpenTop(const std::string& root, uint64_t generation) {
  Env* env = nullptr;
  SNAPSINK_RETURN_IF_ERROR(EnvForRoot(root, &env));
  if (!env->FileExists(filenames::StateDir(root))) SNAPSINK_RETURN_IF_ERROR(Root::CheckIsRoot(env, root));
  auto impl = std::make_unique<Impl>();
  SNAPSINK_RETURN_IF_ERROR(snapsink::Reader::OpenTop(env, root, generation, &impl->reader));
  return std::unique_ptr<Reader>(new Reader(std::move(impl)));
}

Result<uint64_t> Reader::CurrentGeneration(const std::string& root) {
  CurrentPointer pointer;
  Env* env = nullptr;
  SNAPSINK_RETURN_IF_ERROR(EnvForRoot(root, &env));
  SNAPSINK_RETURN_IF_ERROR(ReadCurrentPointer(env, root, &pointer));
  // A reader that polls this (the server's watcher) has moved past the
  // generations gc removes, possibly in another process: their files,
  // still open in this process's cache, would keep their disk space taken.
  TableCache::Default()->DropRemoved(/*at_most_every_second=*/true);
  return pointer.generation;
}

uint64_t Reader::generation() const { return impl_->reader->generation(); }
const std::vector<WindowVersion>& Reader::windows() const { return impl_->windows; }

std::optional<uint64_t> Reader::Find(int64_t window_start_ms) const {
  const GenerationEntry* e = impl_->reader->Find(window_start_ms);
  if (e == nullptr) return std::nullopt;
  return static_cast<uint64_t>(e->version);
}

Result<Row> Reader::Get(int64_t window_start_ms, std::string_view metric, std::string_view key) {
  SNAPSINK_RETURN_IF_ERROR(impl_->reader->Get(window_start_ms, metric, key, &impl_->row));
  return Row(impl_->row);  // the public part of the file's row
}

Status Reader::Scan(int64_t window_start_ms, const std::optional<std::string>& metric,
                    const std::function<void(const Row&)>& fn) {
  // A file's row is the public row (plus its sketch, not handed out).
  return impl_->reader->Scan(window_start_ms, metric ? &*metric : nullptr, [&](const snapsink::Row& in) { fn(in); });
}

Status Reader::Query(const QuerySpec& q, std::vector<QueryRow>* out) {
  return QueryRows(impl_->reader.get(), q, out);
}

Status Reader::QueryEach(const QuerySpec& q, const std::function<bool(const QueryRow&)>& fn) {
  return snapsink::QueryEach(impl_->reader.get(), q, fn);
}

Status Reader::Rollup(const QuerySpec& q, std::vector<RollupRow>* out) {
  return RollupRows(impl_->reader.get(), q, out);
}

Status Reader::RollupEach(const QuerySpec& q, const std::function<bool(const RollupRow&)>& fn) {
  return snapsink::RollupEach(impl_->reader.get(), q, fn);
}

}  // namespace snapsink::api
