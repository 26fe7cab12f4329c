// No function of the library, the tools or the benchmarks is longer than
// 150 lines: a longer one is split into steps that each have a name. The
// scan blanks comments and string literals, then finds each outermost
// function body: a `{` whose text since the last `;`, `{` or `}` holds a
// `)` and is neither a control statement, a type, a namespace nor an
// initializer. A lambda inside a function counts toward that function.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;

constexpr int kMaxLines = 150;

// src with comments, string and character literals (raw strings too)
// replaced by spaces, newlines kept so line numbers hold.
std::string Blank(const std::string& src) {
  std::string out = src;
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < out.size(); ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  };
  size_t i = 0;
  const size_t n = src.size();
  while (i < n) {
    if (src.compare(i, 2, "//") == 0) {
      size_t j = src.find('\n', i);
      j = j == std::string::npos ? n : j;
      blank(i, j);
      i = j;
    } else if (src.compare(i, 2, "/*") == 0) {
      size_t j = src.find("*/", i + 2);
      j = j == std::string::npos ? n : j + 2;
      blank(i, j);
      i = j;
    } else if (src.compare(i, 2, "R\"") == 0 && (i == 0 || !std::isalnum(static_cast<unsigned char>(src[i - 1])))) {
      const size_t open = src.find('(', i);
      const std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
      size_t j = src.find(close, open);
      j = j == std::string::npos ? n : j + close.size();
      blank(i, j);
      i = j;
    } else if (src[i] == '"' || (src[i] == '\'' && (i == 0 || !std::isxdigit(static_cast<unsigned char>(src[i - 1]))))) {
      // A ' after a hex digit is a digit separator (1'000'000), not a literal.
      const char q = src[i];
      size_t j = i + 1;
      while (j < n && src[j] != q) j += src[j] == '\\' ? 2 : 1;
      blank(i, j + 1);
      i = j + 1;
    } else {
      ++i;
    }
  }
  return out;
}

struct LongFunction {
  std::string where;  // file:line of the opening brace
  int lines;
};

std::vector<LongFunction> LongFunctions(const std::string& name, const std::string& src) {
  static const std::regex kNotAFunction(R"(\b(if|for|while|switch|catch|do|else|class|struct|namespace|enum|union)\b)");
  static const std::regex kInitializer(R"(=\s*$)");
  const std::string s = Blank(src);
  std::vector<LongFunction> out;
  int depth = 0, fn_depth = -1, line = 1, start = 0;
  size_t last = 0;  // where the text before the next brace begins
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
    } else if (c == '{') {
      const std::string head = s.substr(last, i - last);
      const size_t paren = head.rfind(')');
      const bool function = fn_depth < 0 && paren != std::string::npos &&
                            !std::regex_search(head.substr(0, paren), kNotAFunction) &&
                            !std::regex_search(head, kInitializer);
      if (function) {
        fn_depth = depth;
        start = line;
      }
      ++depth;
      last = i + 1;
    } else if (c == '}') {
      --depth;
      last = i + 1;
      if (depth == fn_depth) {
        if (line - start + 1 > kMaxLines) out.push_back({name + ":" + std::to_string(start), line - start + 1});
        fn_depth = -1;
      }
    } else if (c == ';') {
      last = i + 1;
    }
  }
  return out;
}

std::vector<LongFunction> ScanTree(const fs::path& root, size_t* files) {
  std::vector<LongFunction> out;
  for (const char* folder : {"engine", "snapshot", "partitions", "publish", "sink", "utilities", "tools", "include",
                             "bench", "examples"}) {
    if (!fs::exists(root / folder)) continue;
    for (fs::recursive_directory_iterator it(root / folder), end; it != end; ++it) {
      const std::string ext = it->path().extension().string();
      if (ext != ".cc" && ext != ".h") continue;
      std::ifstream in(it->path().string());
      const std::string src((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ++*files;
      for (LongFunction& f : LongFunctions(fs::relative(it->path(), root).string(), src)) out.push_back(f);
    }
  }
  return out;
}

TEST(FunctionLength, NoFunctionIsOver150Lines) {
  size_t files = 0;
  for (const LongFunction& f : ScanTree(SNAPSINK_SOURCE_DIR, &files)) {
    ADD_FAILURE() << f.where << ": a function of " << f.lines << " lines (at most " << kMaxLines
                  << "): split it into named steps";
  }
  EXPECT_GT(files, 200u);  // the scan saw the tree
}

std::string Function(int body_lines) {
  std::string f = "Status Ingester::Impl::Apply(const char* data,\n    size_t size) {\n";
  for (int k = 0; k < body_lines; ++k) f += "  if (x) { y = \"}\"; }  // }\n";
  return f + "}\n";
}

TEST(FunctionLength, ALongFunctionIsReportedAndBracesInTextAreNot) {
  const std::string src = "namespace a {\nstruct S {\n  int v = 1'000;\n};\n" + Function(148) + Function(149) +
                          "const char* k = R\"x({{{)x\";\nclass C {\n void F() {\n" + std::string(200, '\n') +
                          " }\n};\n}  // namespace a\n";
  const std::vector<LongFunction> found = LongFunctions("f.cc", src);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].lines, 151);  // signature line through the closing brace
  EXPECT_EQ(found[0].where, "f.cc:157");  // the line of its opening brace
  EXPECT_EQ(found[1].lines, 202);  // a member function inside a class body
}

}  // namespace
}  // namespace snapsink::testing
