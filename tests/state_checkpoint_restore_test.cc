// Restoring a file writer's state from its checkpoint objects
// (engine/state_checkpoint.h) on a root on this disk, as in a bucket: a
// format 2 object (records uncompressed, as an older snapsink wrote it)
// and a format 3 one (zstd frames) each make the state they were taken
// from, and the object is read in pieces of at most 1 MiB, never whole.
#include "engine/state_checkpoint.h"

#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/coding.h"
#include "engine/filenames.h"
#include "engine/state_records.h"
#include "tests/store_records.h"
#include "tests/test_util.h"

namespace snapsink {
namespace {

// Counts how the checkpoints are read: whole (ReadFileToString) or in
// pieces (RandomAccessFile::Read), and the largest piece.
class ReadsOfCheckpoints : public EnvWrapper {
 public:
  ReadsOfCheckpoints() : EnvWrapper(Env::Default()) {}
  Status ReadFileToString(const std::string& p, std::string* o) override {
    if (p.find("/checkpoints/") != std::string::npos) ++whole;
    return EnvWrapper::ReadFileToString(p, o);
  }
  Status NewRandomAccessFile(const std::string& p, std::unique_ptr<RandomAccessFile>* o) override {
    SNAPSINK_RETURN_IF_ERROR(EnvWrapper::NewRandomAccessFile(p, o));
    if (p.find("/checkpoints/") != std::string::npos) *o = std::make_unique<Counted>(std::move(*o), this);
    return Status::OK();
  }
  int whole = 0;
  size_t pieces = 0, largest = 0;

 private:
  class Counted : public RandomAccessFile {
   public:
    Counted(std::unique_ptr<RandomAccessFile> f, ReadsOfCheckpoints* env) : f_(std::move(f)), env_(env) {}
    Status Read(uint64_t offset, size_t n, std::string* out) const override {
      ++env_->pieces;
      env_->largest = std::max(env_->largest, n);
      return f_->Read(offset, n, out);
    }
    uint64_t Size() const override { return f_->Size(); }

   private:
    std::unique_ptr<RandomAccessFile> f_;
    ReadsOfCheckpoints* env_;
  };
};

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string WithTrailer(std::string object) {
  char trailer[32];
  std::snprintf(trailer, sizeof trailer, "xxh64 %016llx\n",
                static_cast<unsigned long long>(XXH64(object.data(), object.size(), 0)));
  return object + trailer;
}

class StateCheckpointRestoreTest : public ::testing::Test {
 protected:
  // A state of many records in several tables, one value longer than a
  // frame and than a piece read (it spans three), more than 3 MiB of records.
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() + "/from");
    ASSERT_TRUE(Store::Open(dir_.path() + "/from", /*create=*/true, &from_).ok());
    std::unique_ptr<Txn> txn;
    ASSERT_TRUE(from_->BeginWrite(&txn).ok());
    uint64_t x = 88172645463325252ull;  // xorshift: values zstd cannot shrink much
    auto noise = [&](size_t n) {
      std::string v(n, '\0');
      for (char& c : v) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        c = static_cast<char>(x);
      }
      return v;
    };
    for (int i = 0; i < 60000; ++i) {
      char key[40];
      std::snprintf(key, sizeof key, "w1|orders|customer-%08d", i * 7919 % 60000);
      ASSERT_TRUE(txn->Put(Table::kAggs, key, noise(40)).ok());
    }
    ASSERT_TRUE(txn->Put(Table::kSources, "events.ndjson", noise(2500000)).ok());
    ASSERT_TRUE(txn->Put(Table::kProducers, "bulk-loader", "seq 60000").ok());
    ASSERT_TRUE(txn->Put(Table::kMeta, "format", "9").ok());
    ASSERT_TRUE(txn->Commit().ok());
    ASSERT_TRUE(from_->BeginRead(&txn).ok());
    ASSERT_TRUE(EncodeStateBase(txn.get(), &records_).ok());
    ASSERT_GT(records_.data.size(), 3u << 20);
  }
  // Puts object as root's checkpoint of generation 1, restores it, and
  // expects the restored state to hold from_'s records.
  void RestoreAndCompare(const std::string& object) {
    const std::string root = dir_.path() + "/root";
    PutCheckpoint(root, object);
    bool restored = false;
    Status s = RestoreStateCheckpoint(&env_, root, 1, &restored);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(restored);
    std::unique_ptr<Store> state;
    ASSERT_TRUE(Store::Open(filenames::StateDir(root), /*create=*/false, &state).ok());
    EXPECT_EQ(testing::AllRecords(state.get()), testing::AllRecords(from_.get()));
  }
  // Writes object as root's checkpoint of generation 1.
  static void PutCheckpoint(const std::string& root, const std::string& object) {
    std::filesystem::create_directories(root + "/checkpoints");
    std::unique_ptr<WritableFile> f;
    ASSERT_TRUE(Env::Default()->NewWritableFile(StateCheckpointFile(root, 1), &f).ok());
    ASSERT_TRUE(f->Append(object).ok());
    ASSERT_TRUE(f->Close().ok());
  }
  testing::TempDir dir_;
  std::unique_ptr<Store> from_;
  StateRecords records_;
  ReadsOfCheckpoints env_;
};

// A format 2 checkpoint, as the format 2 writer put it: its header (magic,
// generation, base, parent, records, state, data), the records
// uncompressed, the xxh64 trailer.
TEST_F(StateCheckpointRestoreTest, AFormatTwoCheckpointRestoresTheStateItWasTakenFrom) {
  const std::string object =
      WithTrailer("snapsink state checkpoint 2\ngeneration 1\nbase 1\nparent 0\nrecords " +
                  std::to_string(records_.records) + "\nstate " + Hex(records_.digest) + "\ndata " +
                  std::to_string(records_.data.size()) + "\n\n" + records_.data);
  RestoreAndCompare(object);
  EXPECT_EQ(env_.whole, 0);
  EXPECT_LE(env_.largest, size_t{1} << 20);
}

// A format 3 checkpoint of more than 1 MiB of frames is read in pieces of
// at most 1 MiB (ranged GETs in a bucket), never whole into memory.
TEST_F(StateCheckpointRestoreTest, ACompressedCheckpointIsReadInPiecesNeverWhole) {
  std::string frames;
  for (size_t at = 0; at < records_.data.size();) {
    const size_t cut = StateRecordsCut(std::string_view(records_.data).substr(at), size_t{1} << 20);
    ASSERT_GT(cut, 0u);
    std::string frame(ZSTD_compressBound(cut), '\0');
    const size_t n = ZSTD_compress(frame.data(), frame.size(), records_.data.data() + at, cut, 1);
    ASSERT_FALSE(ZSTD_isError(n));
    frames.append(frame.data(), n);
    at += cut;
  }
  const std::string object =
      WithTrailer("snapsink state checkpoint 3\ngeneration 1\nbase 1\nparent 0\nrecords " +
                  std::to_string(records_.records) + "\nstate " + Hex(records_.digest) + "\nraw " +
                  std::to_string(records_.data.size()) + "\ndata " + std::to_string(frames.size()) + "\n\n" + frames);
  ASSERT_GT(object.size(), size_t{1} << 20);
  RestoreAndCompare(object);
  EXPECT_EQ(env_.whole, 0) << "the checkpoint was read whole";
  EXPECT_GE(env_.pieces, object.size() >> 20);
  EXPECT_LE(env_.largest, size_t{1} << 20);
}

// A damaged byte in the middle of the records (the trailer no longer holds)
// is named as a checksum mismatch, even though the frames read before it
// were applied already, and nothing is restored.
TEST_F(StateCheckpointRestoreTest, ADamagedObjectIsAChecksumMismatchAndRestoresNothing) {
  std::string body = "snapsink state checkpoint 2\ngeneration 1\nbase 1\nparent 0\nrecords " +
                     std::to_string(records_.records) + "\nstate " + Hex(records_.digest) + "\ndata " +
                     std::to_string(records_.data.size()) + "\n\n" + records_.data;
  std::string object = WithTrailer(body);
  object[object.size() / 2] ^= 0x01;
  const std::string root = dir_.path() + "/root";
  PutCheckpoint(root, object);
  bool restored = false;
  Status s = RestoreStateCheckpoint(&env_, root, 1, &restored);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(s.message(), StateCheckpointFile(root, 1) + ": checksum mismatch");
  EXPECT_FALSE(restored);
  EXPECT_FALSE(std::filesystem::exists(filenames::StateDir(root)));
}

}  // namespace
}  // namespace snapsink
