// Power-cut states that cover LMDB's own writes: a root a power cut left
// during any LMDB write reopens and a rerun equals a clean run.
//
// tests/fault_env drops what snapsink's Env did not sync, but LMDB writes
// data.mdb itself (pwrite, lseek+writev, meta pages through an O_DSYNC
// descriptor), out of its reach. Here a command runs under an LD_PRELOAD
// recorder (tests/fs_record_shim.c) of every write, truncate, fsync,
// fdatasync, mkdir, rename and unlink under the work directory. A model of
// the file system then builds, for a bounded set of prefixes of that log,
// the state a power cut could leave:
//   - lost: only what was synced (file data by fsync/fdatasync or an O_DSYNC
//     write; a directory's entries by an fsync of it, a rename being durable
//     with its new directory, as tests/fault_env has it);
//   - zeros: the same names, with every unsynced write of a file there as
//     zeros (pages allocated, never written);
//   - kill: everything done so far (a kill -9 there).
// On each state: readers see the old or the new generation (`query`),
// `verify` passes, and running the command again converges to a clean run,
// byte for byte (every file outside state/, and the engine state dump).
// Covers init, run, seal + publish, backfill, rollback and gc.
//
// The suite checks up to 3 prefixes per command (about a minute); the whole
// sweep (every prefix after a sync or a rename) is
//   SNAPSINK_POWER_CUT_SWEEP=all build/snapsink_tests --gtest_filter='PowerCutLmdb.*'
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;


struct Op {
  char kind = 0;
  std::string a, b;
  uint64_t off = 0, len = 0, blob = 0;
  bool sync = false;
};

std::vector<Op> ParseLog(const std::string& text) {
  std::vector<Op> ops;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t b = 0;
    for (size_t e; (e = line.find('\t', b)) != std::string::npos; b = e + 1) f.push_back(line.substr(b, e - b));
    f.push_back(line.substr(b));
    Op op;
    op.kind = f[0][0];
    op.a = f[1];
    if (op.kind == 'W') {
      op.off = std::stoull(f[2]);
      op.len = std::stoull(f[3]);
      op.blob = std::stoull(f[4]);
      op.sync = f[5] == "1";
    } else if (op.kind == 'T') {
      op.len = std::stoull(f[2]);
    } else if (op.kind == 'R') {
      op.b = f[2];
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

enum class Cut { kLost, kZeros, kKill };
const char* CutName(Cut c) { return c == Cut::kLost ? "lost" : c == Cut::kZeros ? "zeros" : "kill"; }

// Inodes with live and durable views of data and directory entries.
class FsModel {
 public:
  // top: the watched directory, as it is on disk now (all of it durable).
  explicit FsModel(const std::string& top) : top_(top) { top_node_ = Load(top); }

  void Apply(const Op& op, const std::string& blob) {
    switch (op.kind) {
      case 'C': {
        auto [dir, name] = Parent(op.a);
        if (dir >= 0 && !nodes_[dir].live.count(name)) nodes_[dir].live[name] = New(false);
        break;
      }
      case 'M': {
        auto [dir, name] = Parent(op.a);
        if (dir >= 0) nodes_[dir].live[name] = New(true);
        break;
      }
      case 'W': {
        const int n = Find(op.a);
        if (n < 0) break;
        Node& node = nodes_[n];
        Patch(&node.data, op.off, blob.substr(op.blob, op.len));
        if (op.sync) {
          if (!node.durable_data) node.durable_data = std::string();
          Patch(&*node.durable_data, op.off, blob.substr(op.blob, op.len));
        } else {
          node.pending.emplace_back(op.off, op.len);
        }
        break;
      }
      case 'T': {
        const int n = Find(op.a);
        if (n >= 0) nodes_[n].data.resize(op.len, '\0');
        break;
      }
      case 'S': {
        const int n = Find(op.a);
        if (n < 0) break;
        Node& node = nodes_[n];
        if (!node.dir) {
          node.durable_data = node.data;
          node.pending.clear();
          break;
        }
        // A name new here (a rename's target) is durable together with the
        // removal of its old name.
        for (const auto& [name, ino] : node.live) {
          auto it = node.durable.find(name);
          if (it != node.durable.end() && it->second == ino) continue;
          for (Node& other : nodes_) {
            if (&other == &node) continue;
            for (auto e = other.durable.begin(); e != other.durable.end();) {
              e = e->second == ino ? other.durable.erase(e) : std::next(e);
            }
          }
        }
        node.durable = node.live;
        break;
      }
      case 'R': {
        auto [from_dir, from_name] = Parent(op.a);
        auto [to_dir, to_name] = Parent(op.b);
        if (from_dir < 0 || to_dir < 0 || !nodes_[from_dir].live.count(from_name)) break;
        const int ino = nodes_[from_dir].live[from_name];
        nodes_[from_dir].live.erase(from_name);
        nodes_[to_dir].live[to_name] = ino;
        break;
      }
      case 'U': {
        auto [dir, name] = Parent(op.a);
        if (dir >= 0) nodes_[dir].live.erase(name);
        break;
      }
    }
  }

  // Writes the state a cut leaves into dest (the watched directory's place).
  void Materialize(Cut cut, const std::string& dest) const { Write(top_node_, cut, dest); }

 private:
  struct Node {
    bool dir = false;
    std::string data;
    std::optional<std::string> durable_data;  // none: never synced (empty after a cut)
    std::vector<std::pair<uint64_t, uint64_t>> pending;  // unsynced writes since the last sync
    std::map<std::string, int> live, durable;
  };

  int New(bool dir) {
    nodes_.push_back(Node());
    nodes_.back().dir = dir;
    return static_cast<int>(nodes_.size()) - 1;
  }

  int Load(const std::string& path) {
    const int n = New(fs::is_directory(path));
    if (nodes_[n].dir) {
      for (fs::directory_iterator it(path), end; it != end; ++it) {
        const int child = Load(it->path().string());
        nodes_[n].live[it->path().filename().string()] = child;
      }
      nodes_[n].durable = nodes_[n].live;
    } else {
      nodes_[n].data = ReadFile(path);
      nodes_[n].durable_data = nodes_[n].data;
    }
    return n;
  }

  static void Patch(std::string* s, uint64_t off, const std::string& bytes) {
    if (s->size() < off + bytes.size()) s->resize(off + bytes.size(), '\0');
    s->replace(off, bytes.size(), bytes);
  }

  // The live node at path, or -1.
  int Find(const std::string& path) const {
    if (path == top_) return top_node_;
    if (path.compare(0, top_.size() + 1, top_ + "/") != 0) return -1;
    int n = top_node_;
    std::string rest = path.substr(top_.size() + 1);
    for (size_t b = 0; n >= 0;) {
      const size_t e = rest.find('/', b);
      const std::string part = rest.substr(b, e == std::string::npos ? std::string::npos : e - b);
      auto it = nodes_[n].live.find(part);
      n = it == nodes_[n].live.end() ? -1 : it->second;
      if (e == std::string::npos) break;
      b = e + 1;
    }
    return n;
  }

  std::pair<int, std::string> Parent(const std::string& path) const {
    const size_t slash = path.find_last_of('/');
    return {Find(path.substr(0, slash)), path.substr(slash + 1)};
  }

  void Write(int n, Cut cut, const std::string& dest) const {
    const Node& node = nodes_[n];
    if (node.dir) {
      fs::create_directories(dest);
      for (const auto& [name, child] : cut == Cut::kKill ? node.live : node.durable) {
        Write(child, cut, dest + "/" + name);
      }
      return;
    }
    std::string data;
    if (cut == Cut::kKill) {
      data = node.data;
    } else if (cut == Cut::kLost) {
      data = node.durable_data.value_or(std::string());
    } else {
      data = node.data;
      for (const auto& [off, len] : node.pending) {
        if (off < data.size()) data.replace(off, std::min<uint64_t>(len, data.size() - off), std::min<uint64_t>(len, data.size() - off), '\0');
      }
    }
    std::ofstream(dest, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
  }

  std::string top_;
  int top_node_ = -1;
  std::vector<Node> nodes_;
};

std::string Shim() { return fs::path(SNAPSINK_BINARY).parent_path().string() + "/libsnapsink_fsrec.so"; }

std::string Events(int hours, int per_hour, const std::string& value, uint64_t first_seq = 0) {
  std::string out;
  uint64_t seq = first_seq;
  for (int h = 0; h < hours; ++h) {
    for (int i = 0; i < per_hour; ++i) {
      out += EventLine().Seq(seq++).Ts(kBase + h * kHour + i * 1000).Metric("orders").Key(i % 2 ? "eu" : "us")
                 .Value(value).Line();
    }
  }
  return out;
}

struct Case {
  std::string name;
  // Brings the root (work/r) to the state the commands start from.
  std::vector<std::vector<std::string>> setup;
  std::vector<std::vector<std::string>> commands;  // ROOT in an argument is the root's path
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<std::string> WithRoot(std::vector<std::string> args, const std::string& root, const std::string& inputs) {
  for (std::string& a : args) {
    if (a == "ROOT") a = root;
    if (a.rfind("IN/", 0) == 0) a = inputs + "/" + a.substr(3);
  }
  return args;
}

std::string Query(const std::string& root) { return Snapsink({"query", root, "--format", "json"}).out; }

class PowerCutLmdb : public ::testing::TestWithParam<Case> {};

TEST_P(PowerCutLmdb, EveryCutConvergesToTheCleanRun) {
#if defined(SNAPSINK_SANITIZED)
  GTEST_SKIP() << "the LD_PRELOAD recorder does not load into an AddressSanitizer binary";
#endif
  ASSERT_TRUE(fs::exists(Shim())) << Shim();
  const Case& c = GetParam();
  TempDir t;
  const std::string inputs = t / "inputs";
  fs::create_directories(inputs);
  WriteFile(inputs + "/a", Events(3, 6, "1"));
  WriteFile(inputs + "/b", Events(2, 6, "3", 18));
  WriteFile(inputs + "/archive", Events(3, 6, "2"));
  const std::string base = t / "base/work";
  fs::create_directories(base);
  for (const auto& args : c.setup) {
    RunResult r = Snapsink(WithRoot(args, base + "/r", inputs));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto copy = [&](const std::string& to) {
    fs::create_directories(fs::path(to).parent_path());
    ASSERT_EQ(std::system(("cp -a '" + base + "' '" + to + "'").c_str()), 0);
  };
  // The clean run, and the recorded one (which must end the same).
  const std::string clean = t / "clean/work", rec = t / "rec/work";
  copy(clean);
  copy(rec);
  const std::string before = fs::exists(base + "/r") ? Query(base + "/r") : "";
  std::vector<int> want_exit;
  for (const auto& args : c.commands) want_exit.push_back(Snapsink(WithRoot(args, clean + "/r", inputs)).exit_code);
  const std::string after = Query(clean + "/r");
  FsModel model(rec);
  const std::string log = t / "log";
  for (const auto& args : c.commands) {
    RunResult r = Snapsink(WithRoot(args, rec + "/r", inputs),
                           {{"LD_PRELOAD", Shim()}, {"SNAPSINK_FSREC_ROOT", rec}, {"SNAPSINK_FSREC_LOG", log}});
    ASSERT_EQ(r.exit_code, want_exit[&args - &c.commands[0]]) << r.err;
  }
  ASSERT_EQ(TreeDiff(TreeContents(rec + "/r"), TreeContents(clean + "/r")), "");
  const std::vector<Op> ops = ParseLog(ReadFile(log));
  const std::string blob = ReadFile(log + ".blob");
  ASSERT_GT(ops.size(), 3u);

  // The prefixes: after each sync or rename (where what is durable changes).
  std::vector<size_t> cuts;
  for (size_t k = 1; k <= ops.size(); ++k) {
    if (ops[k - 1].kind == 'S' || ops[k - 1].kind == 'R' || (ops[k - 1].kind == 'W' && ops[k - 1].sync)) cuts.push_back(k);
  }
  const char* sweep = std::getenv("SNAPSINK_POWER_CUT_SWEEP");
  if (sweep == nullptr || std::string(sweep) != "all") {
    std::vector<size_t> some;
    const size_t want = 3;
    for (size_t i = 0; i < want && !cuts.empty(); ++i) some.push_back(cuts[(i * 2 + 1) * cuts.size() / (2 * want)]);
    some.erase(std::unique(some.begin(), some.end()), some.end());
    cuts = some;
  }
  const std::string clean_state = StateDump(clean + "/r");
  const auto clean_tree = TreeContents(clean + "/r");
  int state_no = 0;
  for (size_t k : cuts) {
    FsModel at = model;  // replayed from the start for each prefix
    for (size_t i = 0; i < k; ++i) at.Apply(ops[i], blob);
    for (Cut cut : {Cut::kLost, Cut::kZeros, Cut::kKill}) {
      const std::string where = "after op " + std::to_string(k) + "/" + std::to_string(ops.size()) + " (" +
                                std::string(1, ops[k - 1].kind) + " " + ops[k - 1].a + "), " + CutName(cut);
      SCOPED_TRACE(where);
      const std::string dir = t / ("cut" + std::to_string(state_no++)) + "/work";
      at.Materialize(cut, dir);
      const std::string root = dir + "/r";
      if (!before.empty()) {
        // Readers: the old generation or the new one, and verify passes.
        const std::string seen = Query(root);
        EXPECT_TRUE(seen == before || seen == after) << seen;
        RunResult v = Snapsink({"verify", root});
        EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
      }
      for (size_t i = 0; i < c.commands.size(); ++i) {
        RunResult r = Snapsink(WithRoot(c.commands[i], root, inputs));
        const bool init_done = c.commands[i][0] == "init" && r.err.find("already a snapsink root") != std::string::npos;
        EXPECT_TRUE(r.exit_code == want_exit[i] || init_done) << r.out << r.err;
      }
      EXPECT_EQ(TreeDiff(TreeContents(root), clean_tree), "");
      EXPECT_EQ(StateDump(root), clean_state);
      if (::testing::Test::HasFailure()) return;  // the first failing state is enough
      fs::remove_all(fs::path(dir).parent_path());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Commands, PowerCutLmdb,
    ::testing::Values(
        Case{"init", {}, {{"init", "ROOT"}}},
        Case{"run", {{"init", "ROOT"}}, {{"run", "ROOT", "IN/a", "--final", "--commit-every", "5"}}},
        Case{"seal_publish",
             {{"init", "ROOT"}, {"ingest", "ROOT", "IN/a"}},
             {{"seal", "ROOT", "--all"}, {"publish", "ROOT"}}},
        Case{"backfill", {{"init", "ROOT"}, {"run", "ROOT", "IN/a", "--final"}}, {{"backfill", "ROOT", "--version", "2", "IN/archive"}}},
        Case{"rollback",
             {{"init", "ROOT"}, {"run", "ROOT", "IN/a", "--final"}, {"run", "ROOT", "IN/b", "--final"}},
             {{"rollback", "ROOT", "--generation", "1"}}},
        Case{"gc",
             {{"init", "ROOT"}, {"run", "ROOT", "IN/a", "--final"}, {"run", "ROOT", "IN/b", "--final"},
              {"backfill", "ROOT", "--version", "3", "IN/archive"}},
             {{"gc", "ROOT", "--keep-generations", "1"}}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace snapsink::testing
