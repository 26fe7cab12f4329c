// The Ingester's memory path: batches of records (api::WriteBatch) applied
// through the same Begin/Apply/Reject/CommitBatch as a file's lines.
#include "engine/ingest_impl.h"

#include <chrono>

namespace snapsink {

// A batch that stops (Gap, or BadInput under stop_on_error) must leave no
// trace, while the others of its group commit. Two ways were open: a nested
// LMDB transaction per batch, or redoing the group without the batch. The
// apply path keeps much of a transaction's work in memory (producers,
// aggregates and ledger totals written at commit, the watermark, the
// sources' counters, rejects buffered until commit), so a nested
// transaction alone would not undo it: each batch would also need a
// checkpoint of those caches. Redoing costs nothing when no batch stops
// (the common case) and needs no second undo mechanism: the transaction is
// aborted, every cache dropped (Reset) and the group applied again without
// the batch. Batches before it give the same results again; each round
// leaves one batch out, so a group of N ends within N rounds, and every
// batch gets the outcome it would have had alone, in queue order.
Status Ingester::Write(const std::vector<WriteRequest*>& group) {
  Impl& m = *impl_;
  for (WriteRequest* r : group) r->status = m.sticky;
  SNAPSINK_RETURN_IF_ERROR(m.sticky);
  std::vector<WriteRequest*> live(group);
  int growths = 0;
  while (!live.empty()) {
    size_t failed = live.size();
    Status s = m.ApplyGroup(live, &failed);
    m.preparsed = nullptr;
    if (s.ok()) return s;
    const bool check_failed = m.commit_check_failed;  // a batch's own check: only it fails
    m.commit_check_failed = false;
    m.Reset();  // the caches hold the aborted transaction's work
    // The LMDB map filled (engine/store.h): nothing of the group is
    // committed and every batch is still in memory, so grow and redo it.
    if (m.store->map_full() && growths++ < 32) {
      if (Status g = m.store->GrowAfterMapFull(); !g.ok()) s = s.Prefixed(g.message() + ": ");
      else continue;
    }
    if (failed < live.size() && (check_failed || s.IsGap() || s.IsBadInput() ||
                                 s.IsLocked())) {
      live[failed]->status = s;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(failed));
      continue;
    }
    m.sticky = s;
    for (WriteRequest* r : live) r->status = s;
    return s;
  }
  return Status::OK();
}

Status Ingester::Impl::ApplyGroup(const std::vector<WriteRequest*>& group, size_t* failed) {
  in_memory = true;
  preparsed = nullptr;
  SNAPSINK_RETURN_IF_ERROR(Begin(std::string(), std::string()));
  if (txn->id() != last_txn_id + 1) {
    // Another transaction committed since this Ingester's last one (a file
    // ingest, a seal, a rollback, gaps accept): every cache may be stale.
    Reset();
    SNAPSINK_RETURN_IF_ERROR(Begin(std::string(), std::string()));
  }
  // Rejects left past the committed length by a batch that never committed
  // are cut off before any batch of this group buffers its own (this may
  // commit the length alone: nothing of the group is in the transaction yet).
  for (WriteRequest* r : group) {
    const std::string name(r->source);
    if (cursors.count(name) != 0) continue;
    SNAPSINK_RETURN_IF_ERROR(LoadCursor(name, r->rejects_file));
    SNAPSINK_RETURN_IF_ERROR(TrimRejects(cur));
  }
  for (size_t i = 0; i < group.size(); ++i) {
    Status s = ApplyRequest(group[i]);
    if (!s.ok()) {
      *failed = i;
      txn.reset();
      return s;
    }
  }
  // Each batch's commit check runs with the whole group applied, right
  // before the commit: the first that fails leaves its batch out.
  bool checked = false;
  for (WriteRequest* r : group) checked = checked || (r->commit_check != nullptr && *r->commit_check);
  if (!checked) return Commit();
  commit_checks = [&group, failed]() -> Status {
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i]->commit_check == nullptr || !*group[i]->commit_check) continue;
      Status s = (*group[i]->commit_check)();
      if (!s.ok()) {
        *failed = i;
        return s;
      }
    }
    return Status::OK();
  };
  Status s = Commit();
  commit_checks = nullptr;
  return s;
}

Status Ingester::Impl::ApplyRequest(WriteRequest* r) {
  SNAPSINK_RETURN_IF_ERROR(LoadCursor(std::string(r->source), r->rejects_file));
  parser.SetContentIds(r->id_from_content);
  if (r->owner_epoch) {  // the fence of a shared source (SPEC 12), checked in the commit's transaction
    const uint64_t stored = cur->src.owner_epoch.value_or(0);
    const uint64_t mine = *r->owner_epoch;
    if (r->take_owner ? stored >= mine : stored != mine) {
      return Status::Locked(std::string(r->source) + ": owner epoch " + std::to_string(mine) +
                            (r->take_owner ? " cannot take it: it is at owner epoch " : " was fenced: it is at owner epoch ") +
                            std::to_string(stored));
    }
  }
  r->before = cur->src;
  producer_check = r->producer_check ? &r->producer_check : nullptr;
  batch_source = r->source;
  ++batch_serial;
  batch_producers.clear();
  for (const WriteRequest::Record& rec : r->records) {
    at_label = rec.at;
    at_line = 0;
    size_t pos = 0;
    do {  // an empty record is one empty line; a last '\n' ends the last line
      size_t nl = std::string_view(rec.data + pos, rec.size - pos).find('\n');
      const size_t end = nl == std::string_view::npos ? rec.size : pos + nl;
      size_t len = end - pos;
      size_t content = len;
      if (content > 0 && rec.data[end - 1] == '\r') --content;
      const bool overlong = content > kMaxLineBytes;
      if (overlong) len = kMaxLineBytes;
      ++at_line;
      Status s = Apply(rec.data + pos, len, rec.capacity - pos, cur->end_offset, overlong, r->stop_on_error);
      if (!s.ok()) {
        producer_check = nullptr;
        return s;
      }
      pos = end + 1;
    } while (pos < rec.size);
  }
  Status checked = CheckProducers();
  producer_check = nullptr;
  SNAPSINK_RETURN_IF_ERROR(checked);
  if (r->position != nullptr) cur->src.position = *r->position;
  if (r->progress) {
    cur->src.progress = r->progress;
    const auto now = std::chrono::system_clock::now().time_since_epoch();  // for `status` only
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::ProgressAtKey(r->source),
                                              std::chrono::duration_cast<std::chrono::milliseconds>(now).count()));
  }
  if (r->owner_epoch) cur->src.owner_epoch = r->owner_epoch;
  r->after = cur->src;
  return Status::OK();
}

void Ingester::Impl::NoteForCheck(CachedProducer* p, std::string_view producer) {
  if (p->checked_in != batch_serial || event.epoch > p->batch_epoch) {
    if (p->checked_in != batch_serial) batch_producers.emplace_back(producer, p);
    p->checked_in = batch_serial;
    p->batch_epoch = event.epoch;
    p->batch_first = event.seq;
    p->batch_last = event.seq;
  } else if (event.epoch == p->batch_epoch) {
    p->batch_first = std::min(p->batch_first, event.seq);
    p->batch_last = std::max(p->batch_last, event.seq);
  }
}

Status Ingester::Impl::CheckProducers() {
  if (producer_check == nullptr) return Status::OK();
  for (const auto& [producer, p] : batch_producers) {
    std::string split;
    SNAPSINK_RETURN_IF_ERROR((*producer_check)(batch_source, producer, p->batch_epoch, p->batch_first, p->batch_last, &split));
    if (!split.empty()) SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kMeta, meta::SplitProducerKey(producer), split));
  }
  return Status::OK();
}

}  // namespace snapsink
