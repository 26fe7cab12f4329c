#include "engine/kind_sketch.h"

#include "engine/ddsketch.h"
#include "engine/hyperloglog.h"

namespace snapsink {
namespace {

template <typename Sketch>
Status MergeAs(std::string* into, std::string_view from) {
  Sketch a, b;
  SNAPSINK_RETURN_IF_ERROR(Sketch::Decode(*into, &a));
  SNAPSINK_RETURN_IF_ERROR(Sketch::Decode(from, &b));
  SNAPSINK_RETURN_IF_ERROR(a.Merge(b));
  into->clear();
  a.Encode(into);
  return Status::OK();
}

}  // namespace

bool IsDistinctSketch(std::string_view bytes) {
  return !bytes.empty() && static_cast<uint8_t>(bytes[0]) == HyperLogLog::kEncodingVersion;
}

Status CheckSketch(std::string_view bytes) {
  if (IsDistinctSketch(bytes)) {
    HyperLogLog check;
    return HyperLogLog::Decode(bytes, &check);
  }
  DDSketch check;
  return DDSketch::Decode(bytes, &check);
}

Status MergeSketches(std::string* into, std::string_view from) {
  if (into->empty()) {
    SNAPSINK_RETURN_IF_ERROR(CheckSketch(from));
    into->assign(from);
    return Status::OK();
  }
  if (IsDistinctSketch(*into) != IsDistinctSketch(from)) {
    return Status::InvalidArgument("a quantile sketch and a distinct-count sketch do not merge");
  }
  return IsDistinctSketch(from) ? MergeAs<HyperLogLog>(into, from) : MergeAs<DDSketch>(into, from);
}

}  // namespace snapsink
