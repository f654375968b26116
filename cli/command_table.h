// The commands of `paratune` as data (cli/command.h): for each its flags in groups, the
// request fields they set and in which units, its help, and the code that builds its requests
// from those fields and runs it (cli/commands.h).
#ifndef PARATUNE_CLI_COMMAND_TABLE_H_
#define PARATUNE_CLI_COMMAND_TABLE_H_

#include "cli/command.h"

namespace paratune {

const CommandSet& ParatuneCommands();

}  // namespace paratune

#endif  // PARATUNE_CLI_COMMAND_TABLE_H_
