#include "utilities/serve/status_page.h"

#include <algorithm>
#include <map>
#include <memory>

#include "snapsink/utilities/partitions.h"
#include "snapsink/utilities/serve.h"
#include "utilities/serve/status_page_html.h"
#include "utilities/status_macros.h"

namespace snapsink {
namespace {

// Generations whose changes the page works out (each opens two manifests).
constexpr size_t kChangedGenerations = 50;

GenerationChange Diff(const std::vector<api::WindowVersion>& now, const std::vector<api::WindowVersion>* before) {
  GenerationChange c;
  c.known = true;
  std::map<int64_t, uint64_t> old;
  if (before != nullptr) {
    for (const api::WindowVersion& w : *before) old[w.window_start_ms] = w.version;
  }
  for (const api::WindowVersion& w : now) {
    auto it = old.find(w.window_start_ms);
    if (it == old.end()) {
      c.added.push_back(w);
    } else {
      if (it->second != w.version) c.replaced.push_back({w.window_start_ms, it->second, w.version});
      old.erase(it);
    }
  }
  for (const auto& [ms, v] : old) c.removed.push_back({ms, v});
  return c;
}

bool Covered(const std::vector<api::AcceptedGapInfo>& accepted, const std::string& producer, uint32_t epoch,
             const api::SeqRange& r) {
  for (const api::AcceptedGapInfo& a : accepted) {
    if (a.gap.producer != producer || (a.gap.epoch && *a.gap.epoch != epoch)) continue;
    if (a.gap.range.first <= r.first && r.last <= a.gap.range.last) return true;
  }
  return false;
}

}  // namespace

Status RenderStatusPage(const api::ReadOnlySink& sink, api::Reader* reader, bool historical,
                        const std::optional<PageHealth>& health, std::string* html) {
  const std::string& path = sink.path();
  StatusPageData d;
  d.root = path;
  SNAPSINK_ASSIGN_OR_RETURN(const std::vector<api::AcceptedGapInfo> accepted, sink.AcceptedGaps());
  SNAPSINK_ASSIGN_OR_RETURN(d.status, sink.GetStatus());
  for (const api::ProducerGaps& p : d.status.gaps) {
    for (const api::SeqRange& r : p.missing) {
      d.gaps.push_back({p.producer, p.epoch, r, Covered(accepted, p.producer, p.epoch, r)});
    }
  }
  SNAPSINK_ASSIGN_OR_RETURN(d.partitions, api::PartitionOwners(sink));
  SNAPSINK_ASSIGN_OR_RETURN(d.generations, sink.Generations());
  std::sort(d.generations.begin(), d.generations.end(),
            [](const api::GenerationInfo& a, const api::GenerationInfo& b) { return a.generation > b.generation; });
  if (reader != nullptr) {
    d.generation = reader->generation();
    d.historical = historical;
    d.windows = reader->windows();
  }
  // What each generation changed: its windows against its parent's.
  std::map<uint64_t, std::optional<std::vector<api::WindowVersion>>> windows;
  auto windows_of = [&](uint64_t g) -> const std::vector<api::WindowVersion>* {
    auto it = windows.find(g);
    if (it == windows.end()) {
      std::optional<std::vector<api::WindowVersion>> w;
      if (reader != nullptr && g == reader->generation()) {
        w = reader->windows();
      } else if (auto r = api::Reader::Open(path, g); r.ok()) {
        w = (*r)->windows();
      }
      it = windows.emplace(g, std::move(w)).first;
    }
    return it->second ? &*it->second : nullptr;
  };
  for (size_t i = 0; i < d.generations.size(); ++i) {
    const api::GenerationInfo& g = d.generations[i];
    if (i >= kChangedGenerations) break;
    const std::vector<api::WindowVersion>* now = windows_of(g.generation);
    const std::vector<api::WindowVersion>* before = g.parent ? windows_of(g.parent) : nullptr;
    GenerationChange c;
    if (now != nullptr && (g.parent == 0 || before != nullptr)) {
      c = Diff(*now, before);
    } else if (now != nullptr && std::none_of(d.generations.begin(), d.generations.end(),
                                              [&](const api::GenerationInfo& o) { return o.generation == g.parent; })) {
      c.parent_collected = g.parent;  // a healthy generation whose parent is gone: nothing to compare with
    }
    d.changes.push_back(std::move(c));
  }
  if (health) {
    d.healthy = health->ok;
    d.health = health->text;
  } else if (reader == nullptr) {
    d.health = "nothing is published in " + path + " yet";
  } else {
    // What /healthz checks: every block of the generation reads back.
    Status s;
    for (const api::WindowVersion& w : reader->windows()) {
      s = reader->Scan(w.window_start_ms, std::nullopt, [](const api::Row&) {});
      if (!s.ok()) break;
    }
    d.healthy = s.ok();
    d.health = s.ok() ? "generation " + std::to_string(reader->generation()) + " verified" : s.message();
  }
  *html = StatusPageHtml(d);
  return Status::OK();
}

}  // namespace snapsink

namespace snapsink::api {

Result<std::string> StatusPage(const ReadOnlySink& sink, uint64_t generation) {
  std::unique_ptr<Reader> reader;
  if (auto r = Reader::Open(sink.path(), generation); r.ok()) {
    reader = std::move(*r);
  } else if (generation != 0 || !r.status().IsNotFound()) {
    return r.status();
  }
  SNAPSINK_ASSIGN_OR_RETURN(const uint64_t current, Reader::CurrentGeneration(sink.path()));
  const bool historical = reader != nullptr && reader->generation() != current;
  std::string html;
  SNAPSINK_RETURN_IF_ERROR(RenderStatusPage(sink, reader.get(), historical, std::nullopt, &html));
  return html;
}

}  // namespace snapsink::api
