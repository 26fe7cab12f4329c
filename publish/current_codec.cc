// CURRENT's one line (docs/FORMAT.md section 5), apart from the file
// operations of current_file.cc so that it builds without LMDB (fuzz/).
#include "engine/filenames.h"
#include "snapshot/checked_json.h"
#include "publish/current_file.h"

namespace snapsink {

namespace {

// "<generation>\n", as builds before format 3 wrote it (publish/old_formats.h).
bool IsOldCurrent(std::string_view text) {
  if (text.size() < 2 || text.size() > 21 || text.back() != '\n' || text[0] == '0') return false;
  return text.substr(0, text.size() - 1).find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

std::string EncodeCurrent(const CurrentPointer& c) {
  return std::to_string(c.generation) + " " + Hex64(c.manifest_xxh64) + "\n";
}

Status DecodeCurrent(std::string_view text, const std::string& path, CurrentPointer* out) {
  *out = CurrentPointer();
  std::string_view line(text);
  const size_t space = line.find(' ');
  // The generation: decimal, no sign, no leading zero, > 0; the checksum: 16 lowercase hex digits.
  if (line.empty() || line.back() != '\n' || space == std::string_view::npos ||
      !filenames::ParseGenerationName(line.substr(0, space), &out->generation) ||
      !ParseHex64(line.substr(space + 1, line.size() - space - 2), &out->manifest_xxh64)) {
    *out = CurrentPointer();
    std::string hint;
    if (IsOldCurrent(text)) {  // damage, or a root of an older snapsink: name the way out of the second
      const std::string root = path.size() > 8 ? path.substr(0, path.size() - 8) : std::string(".");
      hint = "; \"<generation>\" alone is what an older snapsink wrote: if one made this root, convert it with "
             "`snapsink upgrade " + root + "`";
    }
    return Status::Corruption(path + ": not \"<generation> <xxh64 of its manifest>\"" + hint);
  }
  return Status::OK();
}

}  // namespace snapsink
