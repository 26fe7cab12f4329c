// Reader: a read-only view of one published generation of a root.
//
// Open pins a generation, the current one (what CURRENT names, checked
// against the checksum CURRENT holds: publish/current_file.h) or a given one, with a shared lock on its manifest file: gc, in any process, keeps a
// pinned generation and every snapshot it names until the Reader is gone.
// Everything a Reader returns comes from that one generation: a reader never
// sees two generations at once, however many publishes happen meanwhile.
//
// Every read checks checksums on the way (generation manifest, snapshot
// manifest against the hash the generation recorded, data blocks): damaged
// data is Status::Corruption naming the file, never a wrong number.
//
// A Reader needs no lock of the root and never blocks its writer. It is not
// thread-safe; open one per thread.
//
// Snapshot files are opened through the process's TableCache
// (snapshot/table_cache.h): however many windows a generation has, at most
// its max_open_files stay open; a file it closed is reopened (and checked
// again) when a window needs it, which the pin makes safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/env.h"
#include "publish/generation_manifest.h"
#include "publish/generation_parts.h"
#include "snapshot/snapshot_file.h"

namespace snapsink {

class Reader {
 public:
  // generation 0 = the current one. NotFound when nothing is published yet
  // or the generation does not exist (any more). Open reads every part of
  // the generation (windows() lists them all); OpenTop reads the top
  // manifest only, and each window's part when the window is first read
  // (Get, Scan, ScanFrom): a point read costs the top manifest and the parts
  // on the path to its leaf, one per level (docs/FORMAT.md section 4).
  static Status Open(Env* env, const std::string& root, uint64_t generation, std::unique_ptr<Reader>* out);
  static Status OpenTop(Env* env, const std::string& root, uint64_t generation, std::unique_ptr<Reader>* out);
  ~Reader();
  Reader(const Reader&) = delete;  // owns the pin on its generation
  Reader& operator=(const Reader&) = delete;

  uint64_t generation() const { return manifest_.generation; }
  // The windows of the generation with their versions, by window start
  // (after OpenTop: only those of the parts read so far).
  const std::vector<GenerationEntry>& windows() const { return manifest_.windows; }
  // Part files read so far after OpenTop (tests and benchmarks count them).
  size_t parts_read() const { return parts_.parts_read; }
  // The entry of window_ms, or nullptr (after OpenTop: nullptr also for a
  // window whose part is not read yet; Entry reads it).
  const GenerationEntry* Find(int64_t window_ms) const;
  // The entry of window_ms (nullptr if the generation has none), reading
  // its part first if needed.
  Status Entry(int64_t window_ms, const GenerationEntry** out);

  // The entries of the windows from lo to hi (window starts, both
  // inclusive), in order; after OpenTop reading only the parts that overlap
  // the range (a query of one window reads one part per level).
  Status Entries(int64_t lo, int64_t hi, std::vector<GenerationEntry>* out);

  // Point lookup: decompresses at most one block. NotFound if absent. The
  // file of the window looked up last stays open with the Reader.
  Status Get(int64_t window_ms, std::string_view metric, std::string_view key, Row* row);
  // Every row of a window in (metric, key) order; only metric's rows if metric is non-null.
  Status Scan(int64_t window_ms, const std::string* metric, const std::function<void(const Row&)>& fn);
  // A range scan of a window (SnapshotReader::ScanFrom). NotFound if the
  // window is not in the generation.
  Status ScanFrom(int64_t window_ms, std::string_view metric, std::string_view key,
                  const std::function<SnapshotReader::ScanNext(const RowView&, SnapshotReader::SeekTo*)>& fn);
  // The same in several goes: from *pos when it is set, recording where it
  // stops there (SnapshotReader::ScanPosition); buffers may be null.
  Status ScanFrom(int64_t window_ms, std::string_view metric, std::string_view key,
                  const std::function<SnapshotReader::ScanNext(const RowView&, SnapshotReader::SeekTo*)>& fn,
                  SnapshotReader::ScanPosition* pos, SnapshotReader::ScanBuffers* buffers);

 private:
  Reader() = default;
  // The data file of a window, opened (or found in the TableCache); hold it
  // only while using it.
  Status Snapshot(int64_t window_ms, std::shared_ptr<const SnapshotReader>* out);

  // What the snapshot manifest of a window said, checked once per Reader.
  struct WindowFile {
    std::string path;       // of the data file
    std::string cache_key;  // path, file identity, the manifest's XXH64 of it
    uint64_t rows = 0;
  };

  Env* env_ = nullptr;
  std::string root_;
  std::unique_ptr<FileLock> pin_;
  GenerationManifest manifest_;
  bool all_loaded_ = false;                              // Open: manifest_.windows is complete
  PartCache parts_;                                      // OpenTop: the parts read, by name
  Status Missing(const std::string& path) const;

  std::map<int64_t, WindowFile> files_;
  // The data file Get read last and its window: consecutive lookups of one
  // window skip files_ and the TableCache (a mutex and a hash of a long
  // key). Holding it keeps the TableCache from closing that one file while
  // this Reader lives or until Get moves to another window.
  int64_t last_window_ = 0;
  std::shared_ptr<const SnapshotReader> last_;
};

}  // namespace snapsink
