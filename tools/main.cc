// snapsink: the command line tool over the engine. The contract is
// docs/CONTRACT.md (commands, exit codes) and docs/EVENTS.md (the input); the
// map of the code is docs/DESIGN.md ("How it works"). This file only wires the
// commands (tools/command.h, one tools/cmd_<command>.cc each) into one app,
// parses, runs the chosen one and exits by the table of tools/exit_codes.h.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/exit_codes.h"
#include "tools/flag_groups.h"

namespace snapsink {

std::vector<Command> RegisterCommands(CLI::App& app) {
  return {RegisterInit(app),     RegisterIngest(app),   RegisterSeal(app),     RegisterPublish(app),
          RegisterRun(app),      RegisterBackfill(app), RegisterQuery(app),    RegisterInspect(app),
          RegisterVerify(app),   RegisterGc(app),       RegisterRollback(app), RegisterUpgrade(app),
          RegisterStatus(app),   RegisterMetrics(app),  RegisterGaps(app),     RegisterMetric(app),
          RegisterServe(app)};
}

namespace {

// Parses argv into app and runs the chosen command. A usage error CLI11 (or
// the checks around it) finds is printed here and is Exit::kFailure.
int Main(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv) {
  const int usage = ExitStatus(Exit::kFailure);
  if (auto msg = CheckCommand(app, argc, argv)) {
    std::fprintf(stderr, "snapsink: %s\n", msg->c_str());
    return usage;
  }
  for (CLI::App* sub : app.get_subcommands({})) sub->allow_extras();
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    app.exit(e);
    return ExitStatus(Exit::kOk);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return usage;
  }
  for (const CLI::App* command : app.get_subcommands()) {
    if (auto msg = CheckExtras(*command)) {
      std::fprintf(stderr, "snapsink: %s\nRun 'snapsink %s --help' for usage.\n", msg->c_str(),
                   command->get_name().c_str());
      return usage;
    }
  }

  Status s;
  for (const Command& c : commands) {
    if (*c.app) s = UseBucketAccess(c.app);
    if (*c.app && s.ok()) s = c.run();
  }
  // Commands print their own findings; this is the one line for the failure.
  s = CommandHints(s);
  if (!s.ok()) std::fprintf(stderr, "snapsink: %s\n", s.message().c_str());
  if (s.IsInvalidArgument() && s.message().rfind("--", 0) == 0) {
    // A usage error found by the command itself (it names the option): the
    // same second line as those CLI11 finds.
    for (const CLI::App* command : app.get_subcommands()) {
      std::fprintf(stderr, "Run 'snapsink %s --help' for usage.\n", command->get_name().c_str());
    }
  }
  return ExitCodeFor(s);
}

}  // namespace
}  // namespace snapsink

int main(int argc, char** argv) {
  using namespace snapsink;
  CLI::App app{"snapsink: exactly-once windowed aggregates, published as atomic snapshots"};
  app.require_subcommand(1);
  app.allow_extras();
  app.set_help_all_flag("--help-all", "Help for every command");
  // Built only when asked for: it loads libcurl to name its version.
  app.set_version_flag("--version", std::function<std::string()>(VersionText),
                       "Print the version, build type and library versions");
  app.failure_message(FailureMessage);
  app.footer(ExitStatusLine({Exit::kOk, {Exit::kFailure, "usage"}, Exit::kBadInput, Exit::kGap, Exit::kReconcile,
                             Exit::kLocked, Exit::kCorruption}) +
             "\nRun 'snapsink COMMAND --help' for a command's options.");
  const std::vector<Command> commands = RegisterCommands(app);
  return Main(app, commands, argc, argv);
}
