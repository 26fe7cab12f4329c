// Usage errors in one voice: every message starts "snapsink: ", names the
// command, option or argument, says what is expected, and suggests the
// nearest name when a command or an option is misspelt.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "snapsink/status.h"

namespace snapsink {

// Levenshtein distance between a and b.
size_t EditDistance(const std::string& a, const std::string& b);

// The candidate nearest to word if it is near enough to be a likely typo
// (distance at most 2, and less than word's length), else nullopt.
std::optional<std::string> NearestName(const std::string& word, const std::vector<std::string>& candidates);

// A whole number of at least min: "must be at least 1, got 0".
CLI::Validator AtLeast(uint64_t min);
// One of names: "expected table, json or csv, got 'x'".
CLI::Validator OneOf(std::vector<std::string> names);

// The library names the public field a value came from ("ServeOptions::listen
// x: ...", "BackfillOptions::version 0: ..."); the CLI names the flag that
// set it. Each {field, flag} pair rewrites every whole mention of field in
// s's message to flag; the code stays. Fields a command does not pass from a
// flag are left as they are.
using FlagName = std::pair<std::string_view, std::string_view>;
Status NameFlags(const Status& s, std::initializer_list<FlagName> names);

// The library's hints name its own calls and fields ("GapPolicy::kStop",
// "Sink::AcceptGaps for producer P", "Sink::Upgrade"); the CLI's name the
// command and flag that do the same. s's message with each rewritten.
Status CommandHints(const Status& s);

// CLI11 failure message: "snapsink: <what>" and where to find usage.
std::string FailureMessage(const CLI::App* app, const CLI::Error& e);

// When argv names no command, or an unknown one: the message to print
// (without "snapsink: "), else nullopt.
std::optional<std::string> CheckCommand(const CLI::App& app, int argc, char** argv);

// After parsing (with extras allowed): the first argument that command did
// not take, explained ("unknown option '--formt' (did you mean '--format'?)").
std::optional<std::string> CheckExtras(const CLI::App& command);

// The version text of `snapsink --version`.
std::string VersionText();

}  // namespace snapsink
