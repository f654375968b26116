// paratune: the command-line client of paratune-server, and an offline estimator. Its
// commands are declared in cli/command_table.cc; this file reads the process's surroundings.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "cli/build_stamp.h"
#include "cli/command.h"
#include "cli/command_table.h"
#include "cli/terminal.h"
#include "cli/version.h"

int main(int argc, char** argv) {
  paratune::Surroundings surroundings;
  surroundings.stdout_is_terminal = isatty(STDOUT_FILENO) != 0;
  winsize size{};
  const int ioctl_columns =
      surroundings.stdout_is_terminal && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 ? size.ws_col
                                                                                      : 0;
  surroundings.terminal_columns = paratune::TerminalColumns(ioctl_columns, std::getenv("COLUMNS"));
  surroundings.environment = [](const char* variable) { return std::getenv(variable); };
  const std::vector<const char*> args(argv + 1, argv + argc);
  return paratune::RunCommandLine(paratune::ParatuneCommands(), args,
                                  paratune::VersionLine(paratune::BuildCommit()), surroundings,
                                  std::cout, std::cerr);
}
