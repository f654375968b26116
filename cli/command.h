// A command-line program of commands, each declared as data: its name, its operand, what it
// does, its flags in groups with the request fields they set (cli/flag_fields.h), and the
// function that runs it. From that one declaration RunCommandLine parses a command line
// (refusing any flag the command does not take, naming both), prints the usage and each
// command's help page, builds nothing itself, and puts a command's errors about the fields
// its flags set in the flags' words.
#ifndef PARATUNE_CLI_COMMAND_H_
#define PARATUNE_CLI_COMMAND_H_

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cli/flag_fields.h"
#include "cli/flags.h"
#include "cli/terminal.h"

namespace paratune {

struct Command;

// What main.cc reads of the process, for the commands.
struct Surroundings {
  bool stdout_is_terminal = false;
  // The width to fit output to (TerminalColumns).
  int terminal_columns = kDefaultTerminalColumns;
  // An environment variable's value; null when it is unset.
  std::function<const char*(const char*)> environment;
};

// One run of a command.
struct Invocation {
  const Command& command;
  // The command's operand ("searches/1"); empty for a command that takes none.
  std::string operand;
  FlagValues flags;
  const Surroundings& surroundings;
};

struct Command {
  const char* name;
  // What the command takes after its name, exactly once, for the usage ("NAME") and for the
  // error without it ("search name, e.g. searches/1"); null for a command of flags only.
  const char* operand;
  const char* operand_help;
  // What it does: lines ending in '\n', the first at most 64 columns and the others at most
  // 76, which the usage indents (examples start with two spaces).
  const char* summary;
  absl::Span<const FlagGroup> groups;
  // Runs the command, printing to `out`; returns the error to report.
  absl::Status (*run)(const Invocation& invocation, std::ostream& out);
};

// Commands under one heading of the usage ("Offline (the estimator alone, no server):").
struct CommandSection {
  const char* title;
  absl::Span<const Command> commands;
};

// A program's commands and what its usage says besides them.
struct CommandSet {
  const char* program;
  // What the program is for: the usage's first line, after the program's name.
  const char* about;
  absl::Span<const CommandSection> sections;
  // What holds for every command: paragraphs ending in '\n', after the commands.
  const char* notes;
};

// The usage: what the program is, how it is run, its commands by section with their
// summaries, and the notes.
std::string FormatUsage(const CommandSet& set);

// The help page of `command`: how it is run, its summary, and its flags by group, each with
// the value it takes, its default and its help.
std::string FormatCommandHelp(const CommandSet& set, const Command& command);

// Runs the command line `args` (argv after the program's name) and returns the exit status:
// - "--version" anywhere: prints `version` to `out`; 0.
// - "help [COMMAND]", or "--help" (every command's help too with "--helpfull") with or
//   without a command: prints the usage or the command's help page to `out`; 0.
// - no command: the usage to `err`; 2.
// - a command: parses its flags ("--name=value", "--name value", a bool as "--name" or
//   "--noname"; one dash does as well as two; "--" ends them) and runs it. A flag anywhere
//   before or after the command counts. An unknown command or flag, a flag the command does
//   not take, a value that is not one of the flag, a missing or stray operand, or the
//   command's own error (in the flags' words, InFlagWords) is printed to `err` as
//   "<program>: <CODE>: <message>"; 1.
int RunCommandLine(const CommandSet& set, absl::Span<const char* const> args,
                   absl::string_view version, const Surroundings& surroundings, std::ostream& out,
                   std::ostream& err);

}  // namespace paratune

#endif  // PARATUNE_CLI_COMMAND_H_
