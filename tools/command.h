// The commands of the tool as main() wires them: each Register adds one
// command (a CLI11 subcommand with its flags and --help) to the app and
// returns what runs it once the command line is parsed. Each lives in the
// file named after its command (tools/cmd_<command>.cc).
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

#include "snapsink/status.h"

namespace snapsink {

struct Command {
  CLI::App* app = nullptr;        // the subcommand; *app is true once parsed
  std::function<Status()> run;    // the command, on the parsed flags
};

Command RegisterInit(CLI::App& app);
Command RegisterIngest(CLI::App& app);
Command RegisterSeal(CLI::App& app);
Command RegisterPublish(CLI::App& app);
Command RegisterRun(CLI::App& app);
Command RegisterBackfill(CLI::App& app);
Command RegisterQuery(CLI::App& app);
Command RegisterInspect(CLI::App& app);
Command RegisterVerify(CLI::App& app);
Command RegisterGc(CLI::App& app);
Command RegisterRollback(CLI::App& app);
Command RegisterUpgrade(CLI::App& app);
Command RegisterStatus(CLI::App& app);
Command RegisterMetrics(CLI::App& app);
Command RegisterGaps(CLI::App& app);
Command RegisterMetric(CLI::App& app);
Command RegisterServe(CLI::App& app);

// Every command, in the order of `snapsink --help`.
std::vector<Command> RegisterCommands(CLI::App& app);

}  // namespace snapsink
