#include "tools/cli_errors.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace snapsink {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> NearestName(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_d = SIZE_MAX;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (!best || best_d > 2 || best_d >= word.size()) return std::nullopt;
  return best;
}

CLI::Validator AtLeast(uint64_t min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc::result_out_of_range && p == text.data() + text.size()) {
          return "must be at most " + std::to_string(UINT64_MAX) + ", got " + text;
        }
        if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
          return "expected a whole number of at least " + std::to_string(min) + ", got '" + text + "'";
        }
        if (v < min) return "must be at least " + std::to_string(min) + ", got " + text;
        return "";
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator OneOf(std::vector<std::string> names) {
  std::string list, bar_list;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) list += i + 1 == names.size() ? " or " : ", ";
    list += names[i];
    bar_list += (i > 0 ? "|" : "") + names[i];
  }
  return CLI::Validator(
      [names, list](std::string& text) -> std::string {
        if (std::find(names.begin(), names.end(), text) != names.end()) return "";
        std::string msg = "expected " + list + ", got '" + text + "'";
        if (auto n = NearestName(text, names)) msg += " (did you mean '" + *n + "'?)";
        return msg;
      },
      "{" + bar_list + "}");
}

std::string FailureMessage(const CLI::App* app, const CLI::Error& e) {
  std::string command = "snapsink";
  for (const CLI::App* sub : app->get_subcommands()) command += " " + sub->get_name();
  return "snapsink: " + std::string(e.what()) + "\n" + "Run '" + command + " --help' for usage.\n";
}

namespace {

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::optional<std::string> CheckCommand(const CLI::App& app, int argc, char** argv) {
  const std::vector<std::string> names = CommandNames(app);
  if (argc < 2) return "a command is required: " + Joined(names) + " (snapsink --help)";
  const std::string first = argv[1];
  if (first.size() > 1 && first[0] == '-') {
    std::vector<std::string> flags;
    for (const CLI::Option* o : app.get_options()) {
      for (const std::string& l : o->get_lnames()) flags.push_back("--" + l);
      for (const std::string& sn : o->get_snames()) flags.push_back("-" + sn);
    }
    const std::string name = first.substr(0, first.find('='));
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) return std::nullopt;  // --help, --version
    std::string msg = "unknown option '" + name + "'";
    if (auto n = NearestName(name, flags)) msg += " (did you mean '" + *n + "'?)";
    return msg + "; options of a command go after it: snapsink COMMAND ROOT [OPTIONS]";
  }
  if (std::find(names.begin(), names.end(), first) != names.end()) return std::nullopt;
  if (auto n = NearestName(first, names)) return "unknown command '" + first + "' (did you mean '" + *n + "'?)";
  return "unknown command '" + first + "'; the commands are " + Joined(names);
}

std::optional<std::string> CheckExtras(const CLI::App& command) {
  const std::vector<std::string> extras = command.remaining();
  if (extras.empty()) return std::nullopt;
  const std::string& arg = extras.front();
  const std::string where = command.get_parent() != nullptr ? command.get_name() + ": " : "";
  if (arg.size() > 1 && arg[0] == '-') {
    const std::string name = arg.substr(0, arg.find('='));
    std::vector<std::string> options;
    for (const CLI::Option* o : command.get_options()) {
      for (const std::string& l : o->get_lnames()) options.push_back("--" + l);
      for (const std::string& s : o->get_snames()) options.push_back("-" + s);
    }
    std::string msg = where + "unknown option '" + name + "'";
    if (auto n = NearestName(name, options)) msg += " (did you mean '" + *n + "'?)";
    return msg;
  }
  return where + "unexpected argument '" + arg + "'";
}

namespace {

bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

Status NameFlags(const Status& s, std::initializer_list<FlagName> names) {
  if (s.ok()) return s;
  std::string m = s.message();
  for (const auto& [field, flag] : names) {
    for (size_t at = m.find(field); at != std::string::npos; at = m.find(field, at)) {
      const size_t end = at + field.size();
      if ((at > 0 && NameChar(m[at - 1])) || (end < m.size() && NameChar(m[end]))) {
        at = end;  // part of a longer name
        continue;
      }
      m.replace(at, field.size(), flag);
      at += flag.size();
    }
  }
  return s.WithMessage(std::move(m));
}

Status CommandHints(const Status& s) {
  if (s.ok()) return s;
  Status out = NameFlags(s, {{"GapPolicy::kStop", "--on-gap stop"},
                             {"RootSettings::retain_ms", "gc --retain"},
                             {"another process (Sink::Follow)", "another run --follow"},
                             {"InitOptions::metrics", "--metric"}});
  std::string m = out.message();
  // "... accept the gap with Sink::AcceptGaps for producer P and run again)"
  const std::string accept = "accept the gap with Sink::AcceptGaps for producer ", again = " and run again)";
  const size_t a = m.find(accept), b = m.rfind(again);
  if (a != std::string::npos && b != std::string::npos && b >= a + accept.size()) {
    const std::string producer = m.substr(a + accept.size(), b - a - accept.size());
    m.replace(a, b - a, "accept the gap with `snapsink gaps ROOT accept --producer " + producer + "`");
  }
  // "PATH was written by an older snapsink ...: convert it in place with Sink::Upgrade (a dry run ...)"
  const std::string upgrade = "convert it in place with Sink::Upgrade (a dry run first shows what it changes)";
  const size_t u = m.find(upgrade), older = m.find(" was written by an older snapsink");
  if (u != std::string::npos && older != std::string::npos && older < u) {
    m.replace(u, upgrade.size(), "convert it in place with `snapsink upgrade " + m.substr(0, older) +
                                     "` (`--dry-run` first shows what it changes)");
  }
  return out.WithMessage(std::move(m));
}

}  // namespace snapsink
