#include "engine/source_scan.h"

#include "engine/long_key.h"
#include "engine/store.h"

namespace snapsink {

Status ScanSources(Txn* txn,
                   const std::function<void(const std::string&, const SourceState&, const SourceIdCounts&)>& fn) {
  Status decode;
  std::string name;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSources, "", [&](std::string_view stored, std::string_view value) {
    std::string_view v;
    decode = DecodeRecord(stored, value, &name, &v);  // a long name is kept in the record: engine/long_key.h
    if (!decode.ok()) return false;
    SourceState s;
    decode = codec::Decode(v, &s);
    if (!decode.ok()) return false;
    SourceIdCounts ids;
    decode = ReadSourceIdCounts(txn, name, &ids);
    if (!decode.ok()) return false;
    fn(name, s, ids);
    return true;
  }));
  return decode;
}

}  // namespace snapsink
