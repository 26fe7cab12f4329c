// libFuzzer: the input as a snapshot data file (docs/FORMAT.md section 1),
// read from memory: Open, point lookups, Scan, ReadStats and VerifyAll must
// return a Status, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/env.h"
#include "snapshot/snapshot_file.h"

namespace {

class MemFile final : public snapsink::RandomAccessFile {
 public:
  explicit MemFile(std::string data) : data_(std::move(data)) {}
  snapsink::Status Read(uint64_t offset, size_t n, std::string* out) const override {
    if (offset > data_.size() || n > data_.size() - offset) return snapsink::Status::Corruption("read past end");
    out->assign(data_, offset, n);
    return snapsink::Status::OK();
  }
  uint64_t Size() const override { return data_.size(); }

 private:
  std::string data_;
};

class MemEnv final : public snapsink::EnvWrapper {
 public:
  MemEnv() : EnvWrapper(snapsink::Env::Default()) {}
  std::string data;
  snapsink::Status NewRandomAccessFile(const std::string&, std::unique_ptr<snapsink::RandomAccessFile>* out) override {
    out->reset(new MemFile(data));
    return snapsink::Status::OK();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static MemEnv env;
  env.data.assign(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<snapsink::SnapshotReader> r;
  if (!snapsink::SnapshotReader::Open(&env, "fuzz", &r).ok()) return 0;
  snapsink::Row row;
  for (size_t i = 0; i < r->blocks() && i < 4; i++) {
    const auto b = r->block(i);
    (void)r->Get(b.first_metric, b.first_key, &row);
    (void)r->Get(b.first_metric, std::string(b.first_key) + "x", &row);
  }
  (void)r->Get("m", "k", &row);
  (void)r->Scan(nullptr, [](const snapsink::Row&) {});
  const std::string metric = "m";
  (void)r->Scan(&metric, [](const snapsink::Row&) {});
  std::vector<snapsink::MetricStats> stats;
  (void)r->ReadStats(&stats);
  (void)r->VerifyAll(0);
  return 0;
}
