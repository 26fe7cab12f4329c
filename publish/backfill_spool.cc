// Step 1b of a backfill (publish/backfill.h): standard input is spooled to
// state/backfill-v<V>/stdin.spool, then read like a file.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <xxhash.h>

#include "engine/crash_point.h"
#include "engine/filenames.h"
#include "publish/backfill_steps.h"

namespace snapsink::backfill_steps {
namespace {

// Reads standard input to its end, handing each chunk to sink (if any);
// returns its length and XXH64 (seed 0).
Status DrainStdin(const std::function<Status(std::string_view)>& sink, uint64_t* length, uint64_t* hash) {
  std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> state(XXH64_createState(), &XXH64_freeState);
  XXH64_reset(state.get(), 0);
  std::string buf(size_t{1} << 20, '\0');
  *length = 0;
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(std::string("read standard input: ") + std::strerror(errno));
    if (n == 0) break;
    const std::string_view chunk(buf.data(), static_cast<size_t>(n));
    XXH64_update(state.get(), chunk.data(), chunk.size());
    *length += chunk.size();
    if (sink) SNAPSINK_RETURN_IF_ERROR(sink(chunk));
  }
  *hash = XXH64_digest(state.get());
  return Status::OK();
}

std::string SpoolMarker(uint64_t length, uint64_t hash) { return fmt::format("{} {:016x}\n", length, hash); }

}  // namespace

Status SpoolStdin(Env* env, const std::string& root, uint64_t version) {
  const std::string spool = filenames::BackfillSpoolFile(root, version);
  const std::string done = filenames::BackfillSpoolDoneFile(root, version);
  uint64_t length = 0, hash = 0;
  if (env->FileExists(done)) {
    std::string marker;
    SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(done, &marker));
    SNAPSINK_RETURN_IF_ERROR(DrainStdin(nullptr, &length, &hash));
    if (marker == SpoolMarker(length, hash)) return Status::OK();
    return Status::InvalidArgument(
        "backfill v" + std::to_string(version) + ": standard input (" + std::to_string(length) +
        " bytes) is not the input an earlier, unfinished run spooled to " + spool +
        "; pipe that same input again, or remove " + filenames::BackfillStateDir(root, version) +
        " to start this backfill over");
  }
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(spool, &f));
  SNAPSINK_RETURN_IF_ERROR(DrainStdin([&](std::string_view chunk) { return f->Append(chunk); }, &length, &hash));
  SNAPSINK_RETURN_IF_ERROR(f->Sync());
  SNAPSINK_RETURN_IF_ERROR(f->Close());
  MaybeCrash("backfill.before_spool_done");
  // Atomic and durable; the directory sync also makes the spool's entry durable.
  SNAPSINK_RETURN_IF_ERROR(WriteFileAtomic(env, done, SpoolMarker(length, hash)));
  MaybeCrash("backfill.after_spool");
  return Status::OK();
}

}  // namespace snapsink::backfill_steps
