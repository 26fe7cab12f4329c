// The status page (GET / of serve, status --html): parsed as XML by a tiny
// strict tokenizer, every window, generation, gap and source of a prepared
// root checked against the public views; names escaped; 5,000 windows under
// 2 MB; and headless Chromium renders it without console error (skipped
// without Chromium).
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/partitions.h"
#include "tests/serve_util.h"
#include "tests/test_util.h"

#ifdef SNAPSINK_TEST_HAVE_ZLIB
#include <zlib.h>
#endif

namespace snapsink::testing {
namespace {

// ---- A strict, minimal XML parser (the page is XHTML-compatible) ---------

struct Node {
  std::string name;  // "" for text
  std::map<std::string, std::string> attrs;
  std::vector<std::unique_ptr<Node>> kids;
  std::string text;

  std::string Text() const {
    if (name.empty()) return text;
    std::string out;
    for (const auto& k : kids) out += k->Text();
    return out;
  }
  void FindAll(const std::string& n, std::vector<const Node*>* out) const {
    for (const auto& k : kids) {
      if (k->name == n) out->push_back(k.get());
      k->FindAll(n, out);
    }
  }
  std::vector<const Node*> All(const std::string& n) const {
    std::vector<const Node*> out;
    FindAll(n, &out);
    return out;
  }
  std::string Attr(const std::string& a) const {
    auto it = attrs.find(a);
    return it == attrs.end() ? "" : it->second;
  }
  bool HasClass(const std::string& c) const {
    const std::string cls = " " + Attr("class") + " ";
    return cls.find(" " + c + " ") != std::string::npos;
  }
};

class Xml {
 public:
  explicit Xml(std::string s) : s_(std::move(s)) {}
  // The document's root element, or null with error() set.
  std::unique_ptr<Node> Parse() {
    Skip();
    if (s_.compare(i_, 9, "<!DOCTYPE") == 0) {
      const size_t e = s_.find('>', i_);
      if (e == std::string::npos) return Fail("unterminated doctype");
      i_ = e + 1;
    }
    Skip();
    auto root = std::make_unique<Node>();
    if (!Element(root.get())) return nullptr;
    Skip();
    if (i_ != s_.size()) return Fail("content after the root element");
    return root;
  }
  const std::string& error() const { return error_; }

 private:
  std::unique_ptr<Node> Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at byte " + std::to_string(i_) + ": " + s_.substr(i_, 40);
    return nullptr;
  }
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  std::string Name() {
    const size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' || s_[i_] == ':' ||
                              s_[i_] == '_'))
      ++i_;
    return s_.substr(b, i_ - b);
  }
  // Text up to `end` with entities decoded; false on a bare '<' or '&'.
  bool Decode(size_t end, std::string* out) {
    static const std::map<std::string, std::string> kEntities = {
        {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"#39", "'"}, {"#8594", "\xe2\x86\x92"}};
    for (; i_ < end; ++i_) {
      if (s_[i_] == '<') return Fail("bare <") , false;
      if (s_[i_] != '&') {
        *out += s_[i_];
        continue;
      }
      const size_t semi = s_.find(';', i_);
      if (semi == std::string::npos || semi > end) return Fail("bare &"), false;
      auto it = kEntities.find(s_.substr(i_ + 1, semi - i_ - 1));
      if (it == kEntities.end()) return Fail("unknown entity"), false;
      *out += it->second;
      i_ = semi;
    }
    return true;
  }
  bool Element(Node* n) {
    if (i_ >= s_.size() || s_[i_] != '<') return Fail("expected <"), false;
    ++i_;
    n->name = Name();
    if (n->name.empty()) return Fail("expected a tag name"), false;
    for (;;) {
      Skip();
      if (i_ >= s_.size()) return Fail("unterminated tag"), false;
      if (s_.compare(i_, 2, "/>") == 0) {
        i_ += 2;
        return true;
      }
      if (s_[i_] == '>') {
        ++i_;
        break;
      }
      const std::string a = Name();
      if (a.empty() || i_ + 1 >= s_.size() || s_[i_] != '=' || s_[i_ + 1] != '"') {
        return Fail("attribute must be name=\"value\""), false;
      }
      i_ += 2;
      const size_t e = s_.find('"', i_);
      if (e == std::string::npos) return Fail("unterminated attribute"), false;
      std::string v;
      if (!Decode(e, &v)) return false;
      ++i_;
      if (!n->attrs.emplace(a, v).second) return Fail("duplicate attribute " + a), false;
    }
    for (;;) {
      const size_t lt = s_.find('<', i_);
      if (lt == std::string::npos) return Fail("unclosed <" + n->name + ">"), false;
      if (lt > i_) {
        auto t = std::make_unique<Node>();
        if (!Decode(lt, &t->text)) return false;
        n->kids.push_back(std::move(t));
      }
      if (s_.compare(i_, 2, "</") == 0) {
        i_ += 2;
        const std::string close = Name();
        if (close != n->name || i_ >= s_.size() || s_[i_] != '>') {
          return Fail("</" + close + "> closes <" + n->name + ">"), false;
        }
        ++i_;
        return true;
      }
      auto k = std::make_unique<Node>();
      if (!Element(k.get())) return false;
      n->kids.push_back(std::move(k));
    }
  }

  const std::string s_;
  size_t i_ = 0;
  std::string error_;
};

TEST(StatusPageXml, TheParserIsStrict) {
  for (const char* bad : {"<a><b></a></b>", "<a>x < y</a>", "<a>&nbsp;</a>", "<a x=1></a>", "<a>", "<a x=\"1\" x=\"2\"/>",
                          "<a/><b/>"}) {
    Xml x(bad);
    EXPECT_EQ(x.Parse(), nullptr) << bad;
  }
  Xml ok("<!DOCTYPE html>\n<a k=\"&lt;&amp;\"><b/>t&gt;</a>");
  auto n = ok.Parse();
  ASSERT_NE(n, nullptr) << ok.error();
  EXPECT_EQ(n->Attr("k"), "<&");
  EXPECT_EQ(n->Text(), "t>");
}

// ---- A prepared root -------------------------------------------------------

const std::string kNasty = "<script>&\"'x";  // a producer name
const std::string kNastyJson = "<script>&\\\"'x";

std::string Line(const std::string& producer_json, int seq, int hour, const std::string& metric, int value) {
  const int64_t base = 1792576800000LL;  // 2026-10-21T10:00:00Z
  // EventLine writes the producer's JSON text as given (escapes and all).
  return EventLine().Producer(producer_json).Seq(seq).Ts(base + hour * 3600000LL + seq).Metric(metric).Key("k").Value(value).Line();
}

class StatusPageTest : public ServeFixture {
 protected:
  // Generation 1: windows 10:00 and 11:00; generation 2 replaces 10:00
  // (v2) and adds 12:00; a gap of the nasty producer (1..4, accepted) and
  // of "p" (3..9, not); a source file whose name is full of <>&"'.
  void Prepare() {
    source_ = dir_ / "in<&>\"'.ndjson";
    WriteFile(source_, Line(kNastyJson, 0, 0, "m<&>", 1) + Line(kNastyJson, 5, 1, "m<&>", 2) + Line("p", 0, 0, "orders", 3) +
                           Line("p", 1, 1, "orders", 4) + Line("p", 2, 1, "orders", 5));
    RunResult r = Snapsink({"run", root_, source_, "--final", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    AppendFile(source_, Line("p", 10, 0, "orders", 6) + Line("p", 11, 2, "orders", 7));
    r = Snapsink({"run", root_, source_, "--final", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = Snapsink({"gaps", root_, "accept", "--producer", kNasty, "--range", "1..4"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string source_;
};

const Node* Section(const Node& doc, const std::string& cls, const std::string& tag = "table") {
  for (const Node* t : doc.All(tag)) {
    if (t->HasClass(cls)) return t;
  }
  return nullptr;
}

std::vector<std::string> Cells(const Node* tr) {
  std::vector<std::string> out;
  for (const Node* td : tr->All("td")) out.push_back(td->Text());
  return out;
}

void CheckPage(const std::string& html, const std::string& root, uint64_t shown) {
  Xml x(html);
  std::unique_ptr<Node> doc = x.Parse();
  ASSERT_NE(doc, nullptr) << x.error();
  ASSERT_EQ(doc->name, "html");
  auto sink = api::Sink::OpenReadOnly(root);
  ASSERT_STATUS_OK(sink);
  auto status = (*sink)->GetStatus();
  auto gens = (*sink)->Generations();
  auto sources = (*sink)->Sources();
  ASSERT_STATUS_OK(status);
  ASSERT_STATUS_OK(gens);
  ASSERT_STATUS_OK(sources);
  auto reader = api::Reader::Open(root, shown);
  ASSERT_STATUS_OK(reader);

  // Every window: a row with its state and versions, and a mark.
  std::map<std::string, std::vector<std::string>> rows;
  for (const Node* tr : Section(*doc, "windows")->All("tr")) {
    if (tr->HasClass("window")) rows[tr->Attr("data-window")] = Cells(tr);
  }
  std::map<std::string, const Node*> rects;
  for (const Node* r : doc->All("rect")) rects[r->Attr("data-window")] = r;
  ASSERT_EQ(rows.size(), status->windows.size());
  for (const api::WindowStatus& w : status->windows) {
    const std::string name = api::FormatTime(w.window_start_ms);
    ASSERT_TRUE(rows.count(name)) << name;
    const std::vector<std::string>& c = rows[name];
    ASSERT_EQ(c.size(), 7u);
    EXPECT_EQ(c[1].substr(0, w.state.size()), w.state) << name;
    const std::optional<uint64_t> v = (*reader)->Find(w.window_start_ms);
    EXPECT_EQ(c[2], v ? std::to_string(*v) : "-") << name;
    EXPECT_EQ(c[3], std::to_string(w.version)) << name;
    EXPECT_EQ(c[4], std::to_string(w.events)) << name;
    EXPECT_EQ(c[5], std::to_string(w.count)) << name;
    ASSERT_TRUE(rects.count(name)) << name;
    EXPECT_EQ(rects[name]->Attr("data-version"), std::to_string(v ? *v : w.version));
    EXPECT_EQ(rects[name]->Attr("data-state"), w.state);
  }

  // Every generation, newest first, with a link to itself.
  std::vector<const Node*> grows;
  for (const Node* tr : Section(*doc, "generations")->All("tr")) {
    if (tr->HasClass("generation")) grows.push_back(tr);
  }
  ASSERT_EQ(grows.size(), gens->size());
  std::vector<api::GenerationInfo> sorted = *gens;
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.generation > b.generation; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    const std::string g = std::to_string(sorted[i].generation);
    EXPECT_EQ(grows[i]->Attr("data-generation"), g);
    std::vector<const Node*> links = grows[i]->All("a");
    ASSERT_EQ(links.size(), 1u);
    EXPECT_EQ(links[0]->Attr("href"), "/?generation=" + g);
    const std::vector<std::string> c = Cells(grows[i]);
    EXPECT_EQ(c[2], std::to_string(sorted[i].windows));
    EXPECT_EQ(c[3], sorted[i].rollback_of ? std::to_string(sorted[i].rollback_of) : "-");
    EXPECT_EQ(grows[i]->HasClass("shown"), sorted[i].generation == (*reader)->generation());
  }

  // Every open gap range.
  std::set<std::string> gaps;
  if (const Node* t = Section(*doc, "gaps")) {
    for (const Node* tr : t->All("tr")) {
      if (!tr->HasClass("gap")) continue;
      const std::vector<std::string> c = Cells(tr);
      gaps.insert(c[0] + "|" + c[1] + "|" + c[2] + "|" + c[4]);
    }
  }
  std::set<std::string> want_gaps;
  for (const api::ProducerGaps& p : status->gaps) {
    for (const api::SeqRange& r : p.missing) {
      want_gaps.insert(p.producer + "|" + std::to_string(p.epoch) + "|" +
                       (r.first == r.last ? std::to_string(r.first) : std::to_string(r.first) + ".." + std::to_string(r.last)) +
                       "|");
    }
  }
  ASSERT_EQ(gaps.size(), want_gaps.size());
  for (const std::string& g : want_gaps) {
    const bool yes = gaps.count(g + "yes"), no = gaps.count(g + "no");
    EXPECT_TRUE(yes || no) << g;
  }

  // Every source with its figures.
  std::map<std::string, std::vector<std::string>> srcs;
  for (const Node* tr : Section(*doc, "sources")->All("tr")) {
    if (tr->HasClass("source")) srcs[tr->Attr("data-source")] = Cells(tr);
  }
  ASSERT_EQ(srcs.size(), sources->size());
  for (const api::SourceView& s : *sources) {
    ASSERT_TRUE(srcs.count(s.source)) << s.source;
    const std::vector<std::string>& c = srcs[s.source];
    EXPECT_EQ(c[0].substr(0, s.source.size()), s.source);
    EXPECT_EQ(c[5], std::to_string(s.lines));
    EXPECT_EQ(c[6], std::to_string(s.duplicates));
    EXPECT_EQ(c[7], std::to_string(s.rejected));
  }
}

TEST_F(StatusPageTest, EveryWindowGenerationGapAndSourceAppearsEscaped) {
  Prepare();
  const std::string file = dir_ / "page.html";
  RunResult r = Snapsink({"status", root_, "--html", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadFile(file);
  CheckPage(html, root_, 0);
  // The names are text, never markup.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;&amp;&quot;&#39;x"), std::string::npos);
  Xml x(html);
  auto doc = x.Parse();
  ASSERT_NE(doc, nullptr);
  bool nasty_gap = false, p_gap = false;
  for (const Node* tr : Section(*doc, "gaps")->All("tr")) {
    if (!tr->HasClass("gap")) continue;
    const std::vector<std::string> c = Cells(tr);
    if (c[0] == kNasty) nasty_gap = c[2] == "1..4" && c[4] == "yes";
    if (c[0] == "p") p_gap = c[2] == "3..9" && c[4] == "no";
  }
  EXPECT_TRUE(nasty_gap) << html;
  EXPECT_TRUE(p_gap);
  // Generation 2 says what it replaced and added.
  bool changed = false;
  for (const Node* tr : Section(*doc, "generations")->All("tr")) {
    if (tr->Attr("data-generation") != "2") continue;
    const std::string c = Cells(tr)[4];
    changed = c.find("added 1: 2026-10-21T12:00:00Z v1") != std::string::npos &&
              c.find("replaced 1: 2026-10-21T10:00:00Z v1 \xe2\x86\x92 v2") != std::string::npos;
    EXPECT_TRUE(changed) << c;
  }
  EXPECT_TRUE(changed);
}

TEST_F(StatusPageTest, ThePartitionsProcessesShareAppearEscapedWithTheirOwnerAndEpoch) {
  Prepare();
  const std::string file = dir_ / "page.html";
  RunResult r = Snapsink({"status", root_, "--html", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(file).find("class=\"partitions\""), std::string::npos);  // none shared: no section
  {
    auto ro = api::Sink::OpenReadOnly(root_);
    ASSERT_STATUS_OK(ro);
    ASSERT_STATUS_OK(api::ClaimOwner(**ro, "kafka:orders/0", "c1 <b>&\"'x 7 /state"));
    ASSERT_STATUS_OK(api::ClaimOwner(**ro, "kafka:orders/0", "c2 host2 8 /state"));
  }
  r = Snapsink({"status", root_, "--html", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadFile(file);
  CheckPage(html, root_, 0);
  EXPECT_EQ(html.find("<b>&"), std::string::npos);
  Xml x(html);
  auto doc = x.Parse();
  ASSERT_NE(doc, nullptr);
  const Node* table = Section(*doc, "partitions");
  ASSERT_NE(table, nullptr) << html;
  std::vector<std::vector<std::string>> rows;
  for (const Node* tr : table->All("tr")) {
    if (tr->HasClass("partition")) rows.push_back(Cells(tr));
  }
  // The newest claim; no progress or checkpoint written yet.
  ASSERT_EQ(rows.size(), 1u) << html;
  EXPECT_EQ(rows[0], (std::vector<std::string>{"kafka_orders_0", "c2 host2 8 /state", "2", "-", "-", "-", "none",
                                               "none"}));
  ASSERT_STATUS_OK(api::ClaimOwner(*api::Sink::OpenReadOnly(root_).value(), "kafka:x/1", "c <script>&\"'y"));
  r = Snapsink({"status", root_, "--html", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ReadFile(file).find("<td>c &lt;script&gt;&amp;&quot;&#39;y</td><td>1</td>"), std::string::npos)
      << ReadFile(file);
}

TEST_F(StatusPageTest, ARollbackShowsItsSourceGenerationAndTheRolledBackWindows) {
  Prepare();
  RunResult r = Snapsink({"rollback", root_, "--generation", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string file = dir_ / "page.html";
  r = Snapsink({"status", root_, "--html", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadFile(file);
  CheckPage(html, root_, 0);
  Xml x(html);
  auto doc = x.Parse();
  ASSERT_NE(doc, nullptr) << x.error();
  bool gen3 = false;
  for (const Node* tr : Section(*doc, "generations")->All("tr")) {
    if (tr->Attr("data-generation") != "3") continue;
    const std::vector<std::string> c = Cells(tr);
    gen3 = c[3] == "1" && c[4].find("removed 1: 2026-10-21T12:00:00Z v1") != std::string::npos &&
           c[4].find("replaced 1: 2026-10-21T10:00:00Z v2 \xe2\x86\x92 v1") != std::string::npos;
    EXPECT_TRUE(gen3) << c[3] << " " << c[4];
  }
  EXPECT_TRUE(gen3);
  std::map<std::string, const Node*> rects;
  for (const Node* n : doc->All("rect")) rects[n->Attr("data-window")] = n;
  ASSERT_TRUE(rects.count("2026-10-21T12:00:00Z"));
  EXPECT_EQ(rects["2026-10-21T12:00:00Z"]->Attr("data-state"), "unpublished");
  EXPECT_TRUE(rects["2026-10-21T12:00:00Z"]->HasClass("rolledback"));
  EXPECT_TRUE(rects["2026-10-21T10:00:00Z"]->HasClass("rolledback"));  // v2 live, v1 published
  EXPECT_FALSE(rects["2026-10-21T11:00:00Z"]->HasClass("rolledback"));
}

// After gc removed the generations before the current one, the current
// generation's row says its parent is gone (it said "manifest not readable:
// collected meanwhile?" of a healthy generation); the timeline's right axis
// label is the end of the last window (it was that window's start).
TEST_F(StatusPageTest, AParentGcRemovedAndTheAxisEnd) {
  Prepare();
  RunResult r = Snapsink({"gc", root_, "--keep-generations", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string file = dir_ / "page.html";
  r = Snapsink({"status", root_, "--html", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadFile(file);
  EXPECT_EQ(html.find("collected meanwhile"), std::string::npos);
  Xml x(html);
  auto doc = x.Parse();
  ASSERT_NE(doc, nullptr) << x.error();
  auto sink = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(sink);
  auto status = (*sink)->GetStatus();
  ASSERT_STATUS_OK(status);
  std::vector<const Node*> rows;
  for (const Node* tr : Section(*doc, "generations")->All("tr")) {
    if (tr->HasClass("generation")) rows.push_back(tr);
  }
  ASSERT_EQ(rows.size(), 1u);
  const uint64_t parent = status->current_generation - 1;
  EXPECT_EQ(Cells(rows[0])[4], "(against generation " + std::to_string(parent) + ", which gc removed: not known)");
  std::vector<std::string> axis;
  for (const Node* t : doc->All("text")) {
    if (t->HasClass("axis")) axis.push_back(t->Text());
  }
  ASSERT_EQ(axis.size(), 2u);
  EXPECT_EQ(axis[0], api::FormatTime(status->windows.front().window_start_ms));
  EXPECT_EQ(axis[1], api::FormatTime(status->windows.back().window_start_ms + status->settings.window_size_ms));
}

TEST_F(StatusPageTest, ServeAnswersTheSamePageAtAGeneration) {
  Prepare();
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  c.set_read_timeout(std::chrono::seconds(30));
  auto cur = c.Get("/");
  ASSERT_TRUE(cur);
  ASSERT_EQ(cur->status, 200) << cur->body;
  EXPECT_EQ(cur->get_header_value("Content-Type"), "text/html; charset=utf-8");
  CheckPage(cur->body, root_, 0);
  auto old = c.Get("/?generation=1");
  ASSERT_TRUE(old);
  ASSERT_EQ(old->status, 200) << old->body;
  EXPECT_EQ(old->get_header_value("Snapsink-Generation"), "1");
  CheckPage(old->body, root_, 1);
  // An older generation predates newer versions: nothing rolled back.
  EXPECT_EQ(old->body.find(" rolledback\""), std::string::npos);
  EXPECT_NE(old->body.find("not the current one"), std::string::npos);
  auto bad = c.Get("/?generation=x");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto post = c.Post("/", "", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  auto other = c.Get("/?window=x");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 400);
  auto gone = c.Get("/?generation=99");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  Stop(server);
}

TEST_F(StatusPageTest, ThePageNeedsTheTokenLikeEveryEndpoint) {
  Prepare();
  const std::string tokens = dir_ / "tokens";
  WriteFile(tokens, "ops:s3cret-token-page\n");
  ASSERT_EQ(::chmod(tokens.c_str(), 0600), 0);
  Server server = StartServe(root_, {"--token-file", tokens});
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  auto no = c.Get("/");
  ASSERT_TRUE(no);
  EXPECT_EQ(no->status, 401);
  auto yes = c.Get("/", {{"Authorization", "Bearer s3cret-token-page"}});
  ASSERT_TRUE(yes);
  EXPECT_EQ(yes->status, 200);
  Stop(server);
}

// ---- 5,000 windows ---------------------------------------------------------

TEST(StatusPageSize, FiveThousandWindowsUnderTwoMegabytes) {
  FastDir d;
  const std::string root = d / "root", input = d / "events.ndjson";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  std::string events;
  for (int i = 0; i < 5000; ++i) events += Line("p", i, i, "orders", i % 7);
  WriteFile(input, events);
  RunResult r = Snapsink({"run", root, input, "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Re-seal a few hundred windows (version 2) in a second generation.
  events.clear();
  for (int i = 0; i < 300; ++i) events += Line("p", 5000 + i, i * 16, "orders", 1);
  AppendFile(input, events);
  r = Snapsink({"run", root, input, "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string file = d / "page.html";
  r = Snapsink({"status", root, "--html", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadFile(file);
  std::printf("5000 windows: page %zu bytes\n", html.size());
  EXPECT_LT(html.size(), 2u * 1024 * 1024);
  Xml x(html);
  auto doc = x.Parse();
  ASSERT_NE(doc, nullptr) << x.error();
  EXPECT_EQ(doc->All("rect").size(), 0u);
  const std::vector<const Node*> paths = doc->All("path");
  EXPECT_GE(paths.size(), 2u);
  EXPECT_LE(paths.size(), 40u);
  size_t subpaths = 0;
  for (const Node* p : paths) {
    if (p->HasClass("wp")) {
      for (char ch : p->Attr("d")) subpaths += ch == 'M';
    }
  }
  EXPECT_EQ(subpaths, 5000u);  // every window drawn once
}

// ---- Headless Chromium -----------------------------------------------------

std::string FindChromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (::access(c, X_OK) == 0) return c;
  }
  return "";
}

// RGB(A) 8-bit PNG pixels decoded (filters undone); false if not such a PNG.
bool DecodePng(const std::string& png, uint32_t* w, uint32_t* h, int* channels, std::string* pixels) {
  if (png.size() < 33 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return false;
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  std::string idat;
  size_t at = 8;
  int depth = 0, type = 0;
  bool end = false;
  while (at + 8 <= png.size()) {
    const uint32_t len = be32(at);
    const std::string kind = png.substr(at + 4, 4);
    if (at + 12 + len > png.size()) return false;
    if (kind == "IHDR") {
      *w = be32(at + 8);
      *h = be32(at + 12);
      depth = uint8_t(png[at + 16]);
      type = uint8_t(png[at + 17]);
    } else if (kind == "IDAT") {
      idat += png.substr(at + 8, len);
    } else if (kind == "IEND") {
      end = true;
      break;
    }
    at += 12 + len;
  }
  if (!end || depth != 8 || (type != 2 && type != 6) || *w == 0 || *h == 0) return false;
  *channels = type == 6 ? 4 : 3;
#ifdef SNAPSINK_TEST_HAVE_ZLIB
  const size_t stride = size_t(*w) * *channels;
  std::string raw(size_t(*h) * (stride + 1), '\0');
  uLongf n = raw.size();
  if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &n, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      n != raw.size())
    return false;
  pixels->assign(size_t(*h) * stride, '\0');
  auto px = [&](size_t y, size_t x) -> int { return uint8_t((*pixels)[y * stride + x]); };
  const int bpp = *channels;
  for (size_t y = 0; y < *h; ++y) {
    const int f = uint8_t(raw[y * (stride + 1)]);
    for (size_t x = 0; x < stride; ++x) {
      const int v = uint8_t(raw[y * (stride + 1) + 1 + x]);
      const int a = x >= size_t(bpp) ? px(y, x - bpp) : 0, b = y > 0 ? px(y - 1, x) : 0,
                c = (x >= size_t(bpp) && y > 0) ? px(y - 1, x - bpp) : 0;
      int pred = 0;
      switch (f) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = (pa <= pb && pa <= pc) ? a : pb <= pc ? b : c;
          break;
        }
        default: return false;
      }
      (*pixels)[y * stride + x] = char((v + pred) & 0xff);
    }
  }
#else
  *pixels = idat;  // without zlib: the compressed bytes (a blank image compresses to almost nothing)
#endif
  return true;
}

TEST_F(StatusPageTest, HeadlessChromiumRendersThePageWithoutConsoleError) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium not installed (Debian package chromium; install-deps.sh installs it)";
  Prepare();
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port) + "/";
  const std::string png = dir_ / "shot.png", log = dir_ / "chromium.log", dom = dir_ / "dom.html";
  const std::string common = "timeout -k 10 120 " + chromium +
                             " --headless --disable-gpu --no-sandbox --no-first-run --disable-dev-shm-usage "
                             "--user-data-dir='" + std::string(dir_ / "profile") + "' ";
  int rc = std::system((common + "--enable-logging=stderr --v=0 --window-size=1200,900 --screenshot='" + png + "' '" +
                        url + "' >'" + log + "' 2>&1")
                           .c_str());
  ASSERT_EQ(rc, 0) << ReadFile(log);
  rc = std::system((common + "--dump-dom '" + url + "' >'" + dom + "' 2>>'" + log + "'").c_str());
  ASSERT_EQ(rc, 0) << ReadFile(log);
  Stop(server);
  const std::string text = ReadFile(log);
  for (const char* bad : {"Uncaught", "CONSOLE", "Failed to load resource", "ERR_"}) {
    EXPECT_EQ(text.find(bad), std::string::npos) << bad << " in:\n" << text;
  }
  EXPECT_NE(ReadFile(dom).find("Producers with open gaps"), std::string::npos);
  uint32_t w = 0, h = 0;
  int channels = 0;
  std::string pixels;
  ASSERT_TRUE(DecodePng(ReadFile(png), &w, &h, &channels, &pixels)) << "not an 8-bit RGB(A) PNG: " << png;
  EXPECT_EQ(w, 1200u);
  EXPECT_EQ(h, 900u);
#ifdef SNAPSINK_TEST_HAVE_ZLIB
  std::set<uint32_t> colours;
  for (size_t i = 0; i + 3 <= pixels.size() && colours.size() < 16; i += channels) {
    colours.insert((uint32_t(uint8_t(pixels[i])) << 16) | (uint32_t(uint8_t(pixels[i + 1])) << 8) | uint8_t(pixels[i + 2]));
  }
  EXPECT_GE(colours.size(), 8u) << "the screenshot is (almost) one colour";
#else
  EXPECT_GT(pixels.size(), 20000u) << "the screenshot compresses like a blank page";
#endif
}


// Headless Chromium at url (credentials in it are what a user types at the
// browser's prompt): the DOM it shows and a 1200x900 screenshot; true when
// Chromium ran.
bool ChromiumOpens(const std::string& chromium, const TempDir& dir, const std::string& url,
                   std::string* dom, std::string* png, std::string* log) {
  const std::string shot = dir / "shot.png", log_file = dir / "chromium.log", dom_file = dir / "dom.html";
  ::unlink(shot.c_str());
  const std::string common = "timeout -k 10 120 " + chromium +
                             " --headless --disable-gpu --no-sandbox --no-first-run --disable-dev-shm-usage "
                             "--user-data-dir='" + std::string(dir / "profile") + "' ";
  const int shot_rc = std::system((common + "--window-size=1200,900 --screenshot='" + shot + "' '" + url + "' >'" +
                                   log_file + "' 2>&1")
                                      .c_str());
  const int dom_rc = std::system((common + "--dump-dom '" + url + "' >'" + dom_file + "' 2>>'" + log_file + "'").c_str());
  *dom = ReadFile(dom_file);
  *png = ReadFile(shot);
  *log = ReadFile(log_file);
  return shot_rc == 0 && dom_rc == 0;
}

// With tokens on, a browser opens the page with basic auth (any user name,
// the token as password): the screenshot is the page, not a 401; without
// credentials, or with a wrong token, the same check sees no page.
TEST_F(StatusPageTest, HeadlessChromiumOpensThePageWithBasicAuth) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium not installed (Debian package chromium; install-deps.sh installs it)";
  Prepare();
  const std::string tokens = dir_ / "tokens";
  WriteFile(tokens, "ops:tok-page-7\n");
  ::chmod(tokens.c_str(), 0600);
  Server server = StartServe(root_, {"--token-file", tokens, "--quiet"});
  ASSERT_GT(server.port, 0);
  const std::string at = "127.0.0.1:" + std::to_string(server.port) + "/";
  // "" when Chromium showed the page (its DOM and a 1200x900 screenshot of
  // many colours), else what it showed instead.
  const auto not_the_page = [&](const std::string& url) -> std::string {
    std::string dom, png, log;
    if (!ChromiumOpens(chromium, dir_, url, &dom, &png, &log)) return "Chromium failed: " + log;
    if (dom.find("Producers with open gaps") == std::string::npos) return "DOM without the page: " + dom.substr(0, 300);
    uint32_t w = 0, h = 0;
    int channels = 0;
    std::string pixels;
    if (!DecodePng(png, &w, &h, &channels, &pixels) || w != 1200 || h != 900) return "no 1200x900 PNG screenshot";
#ifdef SNAPSINK_TEST_HAVE_ZLIB
    std::set<uint32_t> colours;
    for (size_t i = 0; i + 3 <= pixels.size() && colours.size() < 16; i += channels) {
      colours.insert((uint32_t(uint8_t(pixels[i])) << 16) | (uint32_t(uint8_t(pixels[i + 1])) << 8) |
                     uint8_t(pixels[i + 2]));
    }
    if (colours.size() < 8) return "the screenshot is (almost) one colour";
#else
    if (pixels.size() <= 20000) return "the screenshot compresses like a blank page";
#endif
    return "";
  };
  EXPECT_EQ(not_the_page("http://ops:tok-page-7@" + at), "");
  EXPECT_EQ(not_the_page("http://anyone:tok-page-7@" + at), "") << "the user name is not checked";
  // Headless Chromium cannot answer the prompt: without the token, or with
  // a wrong one, it shows no page.
  EXPECT_NE(not_the_page("http://" + at), "");
  EXPECT_NE(not_the_page("http://ops:wrong@" + at), "");
  Stop(server);
}

}  // namespace
}  // namespace snapsink::testing
