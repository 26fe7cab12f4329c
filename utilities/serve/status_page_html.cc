#include "utilities/serve/status_page_html.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/table.h"

namespace snapsink {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }
std::string I(int64_t v) { return std::to_string(v); }
std::string E(std::string_view s) { return HtmlEscape(s); }
std::string T(int64_t ms) { return api::FormatTime(ms); }

std::string Fixed(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f", v);
  return b;
}

// Colour of a version: 0 (never sealed) grey, then one colour per version,
// the last for 6 and beyond.
const char* VersionColour(uint64_t v) {
  static const char* const kColours[] = {"#bbbbbb", "#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#b279a2"};
  return kColours[std::min<uint64_t>(v, 6)];
}

std::string Ranges(const std::vector<api::SeqRange>& rs) {
  std::string out;
  for (const api::SeqRange& g : rs) {
    out += (out.empty() ? "" : ", ") + (g.first == g.last ? U(g.first) : U(g.first) + ".." + U(g.last));
  }
  return out;
}

struct Mark {
  int64_t window_start_ms = 0;
  uint64_t version = 0;       // in the pinned generation, else the last sealed one
  uint64_t live_version = 0;  // last sealed (live state)
  std::string state;          // live state; "published" for a window only the generation knows
  bool in_generation = false;
  bool rolled_back = false;   // live state holds a newer version than the generation, or unpublished
  const api::WindowStatus* live = nullptr;
};

std::vector<Mark> Marks(const StatusPageData& d) {
  std::map<int64_t, Mark> by;
  for (const api::WindowStatus& w : d.status.windows) {
    Mark& m = by[w.window_start_ms];
    m.window_start_ms = w.window_start_ms;
    m.version = m.live_version = w.version;
    m.state = w.state;
    m.live = &w;
  }
  for (const api::WindowVersion& w : d.windows) {
    Mark& m = by[w.window_start_ms];
    m.window_start_ms = w.window_start_ms;
    m.in_generation = true;
    if (m.state.empty()) m.state = "published";
    // At the current generation, a live version newer than the published
    // one that is not waiting to publish was rolled back; an older
    // generation just predates the newer versions.
    m.rolled_back = !d.historical && m.live != nullptr && m.live_version > w.version && m.state != "staged" &&
                    m.state != "open" && m.state != "closed_unsealed";
    m.version = w.version;
  }
  std::vector<Mark> out;
  for (auto& [k, m] : by) {
    if (m.state == "unpublished") m.rolled_back = true;
    out.push_back(m);
  }
  return out;
}

int Lane(const std::string& state) {
  for (int i = 0; i < 5; ++i) {
    if (state == api::kWindowStates[i]) return i;
  }
  return 3;
}

constexpr double kLeft = 110, kWidth = 1040, kLaneH = 22, kTop = 8;

void Timeline(const StatusPageData& d, const std::vector<Mark>& marks, std::string* o) {
  const double height = kTop + 5 * kLaneH + 28;
  *o += "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"" + Fixed(kLeft + kWidth + 10) +
        "\" height=\"" + Fixed(height) + "\" viewBox=\"0 0 " + Fixed(kLeft + kWidth + 10) + " " + Fixed(height) +
        "\" role=\"img\" aria-label=\"windows by start, state and version\">";
  for (int i = 0; i < 5; ++i) {
    const double y = kTop + i * kLaneH;
    *o += "<text x=\"4\" y=\"" + Fixed(y + 15) + "\" class=\"lane\">" + std::string(api::kWindowStates[i]) + "</text>";
    *o += "<line x1=\"" + Fixed(kLeft) + "\" x2=\"" + Fixed(kLeft + kWidth) + "\" y1=\"" + Fixed(y + kLaneH - 1) +
          "\" y2=\"" + Fixed(y + kLaneH - 1) + "\" stroke=\"#eeeeee\"/>";
  }
  if (marks.empty()) {
    *o += "<text x=\"" + Fixed(kLeft) + "\" y=\"" + Fixed(kTop + 2.5 * kLaneH) + "\">no windows yet</text></svg>";
    return;
  }
  const int64_t window = std::max<int64_t>(1, d.status.settings.window_size_ms);
  const int64_t lo = marks.front().window_start_ms, hi = marks.back().window_start_ms + window;
  const double span = static_cast<double>(hi - lo);
  const double slot = kWidth * static_cast<double>(window) / span;
  const double w = std::max(1.0, slot - std::min(3.0, slot * 0.15));  // a gap between neighbours
  auto x_of = [&](int64_t ms) { return kLeft + kWidth * static_cast<double>(ms - lo) / span; };
  auto y_of = [&](const Mark& m) { return kTop + Lane(m.state) * kLaneH + 2; };
  const double h = kLaneH - 5;
  if (marks.size() <= kPageWindowMarks) {
    for (const Mark& m : marks) {
      std::string cls = "w";
      if (m.version > 1) cls += " resealed";
      if (m.rolled_back) cls += " rolledback";
      *o += "<rect class=\"" + cls + "\" x=\"" + Fixed(x_of(m.window_start_ms)) + "\" y=\"" + Fixed(y_of(m)) +
            "\" width=\"" + Fixed(w) + "\" height=\"" + Fixed(h) + "\" fill=\"" + VersionColour(m.version) +
            "\" data-window=\"" + E(T(m.window_start_ms)) + "\" data-version=\"" + U(m.version) + "\" data-state=\"" +
            E(m.state) + "\"><title>" + E(T(m.window_start_ms)) + " v" + U(m.version) + " " + E(m.state) +
            (m.rolled_back ? " (rolled back)" : "") + "</title></rect>";
    }
  } else {
    // One path per (colour, lane), and one outline path each for re-sealed
    // and rolled-back windows.
    std::map<std::pair<uint64_t, int>, std::string> paths;
    std::string resealed, rolledback;
    for (const Mark& m : marks) {
      const std::string sub = "M" + Fixed(x_of(m.window_start_ms)) + " " + Fixed(y_of(m)) + "h" + Fixed(w) + "v" + Fixed(h) +
                              "h-" + Fixed(w) + "z";
      paths[{std::min<uint64_t>(m.version, 6), Lane(m.state)}] += sub;
      if (m.version > 1) resealed += sub;
      if (m.rolled_back) rolledback += sub;
    }
    for (const auto& [k, path] : paths) {
      *o += "<path class=\"wp\" data-version=\"" + U(k.first) + (k.first == 6 ? "+" : "") + "\" data-state=\"" +
            api::kWindowStates[k.second] + "\" fill=\"" + VersionColour(k.first) + "\" d=\"" + path + "\"/>";
    }
    if (!resealed.empty()) *o += "<path class=\"resealed\" fill=\"none\" d=\"" + resealed + "\"/>";
    if (!rolledback.empty()) *o += "<path class=\"rolledback\" fill=\"none\" d=\"" + rolledback + "\"/>";
  }
  const double ya = kTop + 5 * kLaneH + 16;
  *o += "<text x=\"" + Fixed(kLeft) + "\" y=\"" + Fixed(ya) + "\" class=\"axis\">" + E(T(lo)) + "</text>";
  *o += "<text x=\"" + Fixed(kLeft + kWidth) + "\" y=\"" + Fixed(ya) + "\" class=\"axis\" text-anchor=\"end\">" +
        E(T(hi)) + "</text>";  // the end of the last window
  *o += "</svg>\n";
}

void Legend(std::string* o) {
  *o += "<p class=\"legend\">";
  for (uint64_t v = 0; v <= 6; ++v) {
    *o += "<span class=\"key\"><span class=\"sw\" style=\"background:" + std::string(VersionColour(v)) + "\"></span>" +
          (v == 0 ? std::string("never sealed") : "v" + U(v) + (v == 6 ? "+" : "")) + "</span> ";
  }
  *o += "<span class=\"key\"><span class=\"sw resealed-key\"></span>re-sealed (version above 1: backfill or late "
        "events)</span> <span class=\"key\"><span class=\"sw rolledback-key\"></span>rolled back</span></p>\n";
}

void Windows(const std::vector<Mark>& marks, std::string* o) {
  if (marks.size() > kPageWindowMarks) {
    *o += "<p>" + U(marks.size()) + " windows: too many to list; see <a href=\"/v1/windows\">/v1/windows</a> or "
          "<code>snapsink inspect ROOT windows</code>.</p>\n";
    return;
  }
  *o += "<table class=\"windows\"><thead><tr><th>window</th><th>state</th><th>version</th><th>last sealed</th>"
        "<th>events</th><th>count</th><th>closes at</th></tr></thead><tbody>\n";
  for (const Mark& m : marks) {
    *o += "<tr class=\"window\" data-window=\"" + E(T(m.window_start_ms)) + "\"><td>" + E(T(m.window_start_ms)) + "</td><td>" +
          E(m.state) + (m.rolled_back ? " (rolled back)" : "") + "</td><td>" +
          (m.in_generation ? U(m.version) : std::string("-")) + "</td><td>" +
          (m.live ? U(m.live_version) : std::string("-")) + "</td><td>" + (m.live ? I(m.live->events) : "-") +
          "</td><td>" + (m.live ? I(m.live->count) : "-") + "</td><td>" + (m.live ? E(T(m.live->closes_at_ms)) : "-") +
          "</td></tr>\n";
  }
  *o += "</tbody></table>\n";
}

std::string Changes(const GenerationChange& c) {
  if (!c.known && c.parent_collected != 0) {
    return "(against generation " + U(c.parent_collected) + ", which gc removed: not known)";
  }
  if (!c.known) return "(manifest not readable: collected meanwhile?)";
  constexpr size_t kList = 12;
  std::string out;
  auto list = [&](const char* what, size_t n, auto&& item) {
    if (n == 0) return;
    out += std::string(out.empty() ? "" : "; ") + what + " " + U(n) + ": ";
    for (size_t i = 0; i < std::min(n, kList); ++i) out += (i ? ", " : "") + item(i);
    if (n > kList) out += ", ...";
  };
  list("added", c.added.size(), [&](size_t i) { return E(T(c.added[i].window_start_ms)) + " v" + U(c.added[i].version); });
  list("replaced", c.replaced.size(), [&](size_t i) {
    return E(T(c.replaced[i].window_start_ms)) + " v" + U(c.replaced[i].from) + " &#8594; v" + U(c.replaced[i].to);
  });
  list("removed", c.removed.size(), [&](size_t i) { return E(T(c.removed[i].window_start_ms)) + " v" + U(c.removed[i].version); });
  return out.empty() ? "no window changed" : out;
}

void Generations(const StatusPageData& d, std::string* o) {
  if (d.generations.empty()) {
    *o += "<p>Nothing published yet.</p>\n";
    return;
  }
  *o += "<table class=\"generations\"><thead><tr><th>generation</th><th>parent</th><th>windows</th>"
        "<th>rollback of</th><th>changed</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < d.generations.size(); ++i) {
    const api::GenerationInfo& g = d.generations[i];
    std::string cls = "generation";
    if (g.current) cls += " current";
    if (g.generation == d.generation) cls += " shown";
    *o += "<tr class=\"" + cls + "\" data-generation=\"" + U(g.generation) + "\"><td><a href=\"/?generation=" +
          U(g.generation) + "\">" + U(g.generation) + "</a>" + (g.current ? " (current)" : "") + "</td><td>" +
          (g.parent ? U(g.parent) : std::string("-")) + "</td><td>" + U(g.windows) + "</td><td>" +
          (g.rollback_of ? U(g.rollback_of) : std::string("-")) + "</td><td>" +
          (i < d.changes.size() ? Changes(d.changes[i]) : std::string()) + "</td></tr>\n";
  }
  *o += "</tbody></table>\n";
}

void Gaps(const StatusPageData& d, std::string* o) {
  *o += "<p>" + U(d.status.producers) + " producer(s), " + U(d.status.gaps.size()) + " with open gaps, " +
        U(d.status.retired_producers) + " retired.</p>\n";
  if (d.gaps.empty()) return;
  *o += "<table class=\"gaps\"><thead><tr><th>producer</th><th>epoch</th><th>missing seq</th><th>missing</th>"
        "<th>accepted</th></tr></thead><tbody>\n";
  for (const PageGap& g : d.gaps) {
    *o += "<tr class=\"gap\"><td class=\"name\">" + E(g.producer) + "</td><td>" + U(g.epoch) + "</td><td>" +
          Ranges({g.missing}) + "</td><td>" + U(g.missing.last - g.missing.first + 1) + "</td><td>" +
          (g.accepted ? "yes" : "no") + "</td></tr>\n";
  }
  *o += "</tbody></table>\n";
}

// 10000 ppm -> "1%", 5 ppm -> "0.0005%".
std::string Percent(uint32_t ppm) {
  std::string frac = std::to_string(10000 + ppm % 10000).substr(1);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return U(ppm / 10000) + (frac.empty() ? "" : "." + frac) + "%";
}

// Each declared metric's kind (a metric not listed is sum).
void Metrics(const StatusPageData& d, std::string* o) {
  if (d.status.metrics.empty()) {
    *o += "<p>No kind declared: every metric is <b>sum</b> (count and exact sum).</p>\n";
    return;
  }
  *o += "<p>A metric not listed is <b>sum</b> (count and exact sum).</p>\n";
  *o += "<table class=\"metrics\"><thead><tr><th>metric</th><th>kind</th><th>relative accuracy / precision</th></tr></thead>"
        "<tbody>\n";
  for (const api::MetricKindInfo& m : d.status.metrics) {
    *o += "<tr class=\"metric\"><td class=\"name\">" + E(m.metric) + "</td><td class=\"kind\">" +
          api::MetricKindName(m.kind) + "</td><td>" +
          (m.kind == api::MetricKind::kQuantiles  ? Percent(m.accuracy_ppm)
           : m.kind == api::MetricKind::kDistinct ? "precision " + std::to_string(m.precision)
                                                  : std::string()) +
          "</td></tr>\n";
  }
  *o += "</tbody></table>\n";
}

void Sources(const StatusPageData& d, std::string* o) {
  if (d.status.sources.empty()) {
    *o += "<p>No source yet.</p>\n";
    return;
  }
  *o += "<table class=\"sources\"><thead><tr><th>source</th><th>position</th><th>size or high watermark</th>"
        "<th>lag</th><th>newest event</th><th>lines</th><th>duplicates</th><th>rejected</th></tr></thead><tbody>\n";
  for (const api::SourceStatus& s : d.status.sources) {
    const api::SourceView& v = s.source;
    std::string position = U(v.offset), size = "-", lag = "-";
    if (v.end && v.read) {  // the write path's progress (a Kafka partition)
      position = v.position.value_or("none") + " (read " + U(*v.read) + ")";
      size = U(*v.end);
      lag = U(*v.end > *v.read ? *v.end - *v.read : 0);
    } else if (s.file_size >= 0) {
      const uint64_t sz = static_cast<uint64_t>(s.file_size);
      size = U(sz) + " bytes";
      lag = U(sz > v.offset ? sz - v.offset : 0) + " bytes";
    } else if (s.backfill) {
      lag = "an archive, read once";
    } else {
      lag = "file not found";
    }
    std::string name = E(v.source);
    if (!s.path.empty() && s.path != v.source) name += "<br/><small>" + E(s.path) + "</small>";
    *o += "<tr class=\"source\" data-source=\"" + E(v.source) + "\"><td class=\"name\">" + name + "</td><td>" +
          E(position) + "</td><td>" + size + "</td><td>" + E(lag) + "</td><td>" +
          (v.newest_event_ms ? E(T(*v.newest_event_ms)) : std::string("-")) + "</td><td>" + U(v.lines) + "</td><td>" +
          U(v.duplicates) + "</td><td>" + U(v.rejected) + "</td></tr>\n";
  }
  *o += "</tbody></table>\n";
}

// The partitions' rows, the fields `status` prints (tools/cmd_status.cc).
void Partitions(const StatusPageData& d, std::string* o) {
  *o += "<table class=\"partitions\"><thead><tr><th>partition</th><th>owner</th><th>epoch</th><th>position</th>"
        "<th>high watermark</th><th>lag</th><th>last seal</th><th>last checkpoint</th></tr></thead><tbody>\n";
  for (const api::PartitionOwnerInfo& p : d.partitions) {
    std::string position = "-", hwm = "-", lag = "-", seal = "none";
    if (const auto& g = p.progress) {
      position = std::to_string(g->position) + " (epoch " + U(g->epoch) + ")";
      hwm = std::to_string(g->high_watermark);
      lag = std::to_string(g->lag);
      if (g->last_seal_window_start_ms) {
        seal = T(*g->last_seal_window_start_ms) + " v" + U(g->last_seal_version) + " to offset " +
               std::to_string(g->last_seal_to);
      }
    }
    std::string ckpt = "none";
    if (p.checkpoint) {
      ckpt = "epoch " + U(p.checkpoint->epoch) + " at offset " + U(p.checkpoint->offset) + ", " +
             U(p.checkpoint->bytes) + " bytes";
    }
    *o += "<tr class=\"partition\" data-partition=\"" + E(p.name) + "\"><td class=\"name\">" + E(p.name) +
          "</td><td>" + E(p.who) + "</td><td>" + U(p.epoch) + "</td><td>" + E(position) + "</td><td>" + E(hwm) +
          "</td><td>" + E(lag) + "</td><td>" + E(seal) + "</td><td>" + E(ckpt) + "</td></tr>\n";
  }
  *o += "</tbody></table>\n";
}

void Health(const StatusPageData& d, std::string* o) {
  const api::RootStatus& s = d.status;
  *o += "<p class=\"health " + std::string(d.healthy ? "ok" : "bad") + "\">" + (d.healthy ? "healthy: " : "unhealthy: ") +
        E(d.health) + "</p>\n<table class=\"settings\"><tbody>\n";
  *o += "<tr><th>window</th><td>" + E(api::FormatDuration(s.settings.window_size_ms)) + ", lateness " +
        E(api::FormatDuration(s.settings.lateness_ms)) + "</td></tr>\n";
  *o += "<tr><th>watermark</th><td>" +
        (s.watermark ? E(T(*s.watermark)) + " (newest event " + E(T(*s.max_event_ts)) + ")"
                     : std::string("none (no event applied yet)")) +
        "</td></tr>\n";
  *o += "<tr><th>current generation</th><td>" +
        (s.current_generation ? U(s.current_generation) + ", " + U(s.published_windows) + " window(s)" +
                                    (s.published_at_ms ? ", published " + E(T(*s.published_at_ms)) : std::string())
                              : std::string("none")) +
        "</td></tr>\n";
  *o += "<tr><th>ids held</th><td>" + U(s.ids.held) + "</td></tr>\n</tbody></table>\n";
  *o += "<table class=\"disk\"><thead><tr><th>directory</th><th>bytes</th></tr></thead><tbody>\n";
  uint64_t total = 0;
  for (const api::DirUsage& u : s.disk) {
    total += u.bytes;
    *o += "<tr class=\"dir\"><td>" + E(u.dir) + "</td><td>" + U(u.bytes) + "</td></tr>\n";
  }
  *o += "<tr class=\"total\"><td>total</td><td>" + U(total) + "</td></tr>\n</tbody></table>\n";
}

constexpr char kStyle[] =
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;font-size:0.9em}th,td{padding:2px 8px;border-bottom:1px solid #eee;"
    "text-align:left;vertical-align:top}td.name{font-family:monospace}"
    ".health.ok{color:#1a7f37;font-weight:bold}.health.bad{color:#c00;font-weight:bold}"
    ".lane,.axis{font-size:11px;fill:#555}rect.resealed,path.resealed{stroke:#000;stroke-width:1.5}"
    "rect.rolledback,path.rolledback{stroke:#c00;stroke-width:2;stroke-dasharray:3 2}"
    ".legend .key{margin-right:1em;font-size:0.85em}.sw{display:inline-block;width:12px;height:12px;"
    "margin-right:4px;vertical-align:middle}.resealed-key{border:2px solid #000}"
    ".rolledback-key{border:2px dashed #c00}.note{color:#666;font-size:0.85em}tr.shown{background:#fff6d5}";

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
          out += api::EscapeControl(std::string(1, c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string StatusPageHtml(const StatusPageData& d) {
  const std::vector<Mark> marks = Marks(d);
  std::string o;
  o.reserve(4096 + marks.size() * 64);
  o += "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/>"
       "<meta name=\"viewport\" content=\"width=device-width\"/><title>snapsink: " +
       E(d.root) + "</title><style>" + kStyle + "</style></head><body>\n";
  o += "<h1>snapsink <span class=\"root\">" + E(d.root) + "</span></h1>\n<p class=\"note\">";
  if (d.generation == 0) {
    o += "Nothing published yet.";
  } else {
    o += std::string("Published view: generation <b class=\"pinned\">") + U(d.generation) + "</b>" +
         (d.historical ? " (not the current one; <a href=\"/\">current</a>)" : " (current)") +
         ", pinned while this page was made.";
  }
  o += " Live state (window states, sources, gaps) read in one transaction at the same time.</p>\n";
  o += "<h2>Health</h2>\n";
  Health(d, &o);
  o += "<h2>Windows</h2>\n";
  Timeline(d, marks, &o);
  Legend(&o);
  Windows(marks, &o);
  o += "<h2>Generations (newest first)</h2>\n";
  Generations(d, &o);
  o += "<h2>Producers with open gaps</h2>\n";
  Gaps(d, &o);
  o += "<h2>Metric kinds</h2>\n";
  Metrics(d, &o);
  o += "<h2>Sources</h2>\n";
  Sources(d, &o);
  if (!d.partitions.empty()) {
    o += "<h2>Partitions (as of each owner's last progress write)</h2>\n";
    Partitions(d, &o);
  }
  o += "</body></html>\n";
  return o;
}

}  // namespace snapsink
