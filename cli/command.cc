#include "cli/command.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/text_width.h"
#include "common/status_macros.h"

namespace paratune {
namespace {

// Help pages fit a terminal of the default width; a flag's help is indented below it.
constexpr size_t kHelpColumns = kDefaultTerminalColumns;
constexpr size_t kHelpIndent = 6;
// The usage's column of command summaries.
constexpr size_t kSummaryColumn = 13;

// What a command line asks for, before it is checked against its command.
struct Arguments {
  bool help = false;
  bool help_all = false;
  bool version = false;
  // The command first, then its operands.
  std::vector<std::string> positional;
  // Each flag given, in order.
  std::vector<std::pair<const Flag*, std::string>> flags;
};

std::vector<const Command*> AllCommands(const CommandSet& set) {
  std::vector<const Command*> commands;
  for (const CommandSection& section : set.sections) {
    for (const Command& command : section.commands) commands.push_back(&command);
  }
  return commands;
}

const Command* FindCommand(const CommandSet& set, absl::string_view name) {
  for (const Command* command : AllCommands(set)) {
    if (command->name == name) return command;
  }
  return nullptr;
}

// The flags `command` takes, each once, in the order of its groups.
std::vector<const Flag*> TakenFlags(const Command& command) {
  std::vector<const Flag*> flags;
  for (const FlagGroup& group : command.groups) {
    for (const FlagField& binding : group.flags) {
      if (std::find(flags.begin(), flags.end(), binding.flag) == flags.end()) {
        flags.push_back(binding.flag);
      }
    }
  }
  return flags;
}

bool Takes(const Command& command, const Flag* flag) {
  const std::vector<const Flag*> flags = TakenFlags(command);
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

// The flag called `name` in any command of the set; null when none is.
const Flag* FindFlag(const CommandSet& set, absl::string_view name) {
  for (const Command* command : AllCommands(set)) {
    for (const Flag* flag : TakenFlags(*command)) {
      if (flag->name == name) return flag;
    }
  }
  return nullptr;
}

// The command line read as Abseil's flags read one, each flag looked up among those of every
// command (whether its command takes it is checked once the command is known).
absl::StatusOr<Arguments> SplitArguments(const CommandSet& set,
                                         absl::Span<const char* const> args) {
  Arguments arguments;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "--") {
      for (++i; i < args.size(); ++i) arguments.positional.emplace_back(args[i]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      arguments.positional.emplace_back(arg);
      continue;
    }
    absl::ConsumePrefix(&arg, "-");
    absl::ConsumePrefix(&arg, "-");
    const std::vector<absl::string_view> name_value = absl::StrSplit(arg, absl::MaxSplits('=', 1));
    const absl::string_view name = name_value[0];
    const std::optional<absl::string_view> value =
        name_value.size() == 2 ? std::optional<absl::string_view>(name_value[1]) : std::nullopt;
    if (name == "help" || name == "helpfull") {
      arguments.help = true;
      arguments.help_all = name == "helpfull";
      continue;
    }
    if (name == "version") {
      arguments.version = true;
      continue;
    }
    const Flag* flag = FindFlag(set, name);
    if (flag == nullptr && absl::StartsWith(name, "no") && !value.has_value()) {
      const Flag* negated = FindFlag(set, name.substr(2));
      if (negated != nullptr && negated->type == FlagType::kBool) {
        arguments.flags.emplace_back(negated, "false");
        continue;
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, "; '", set.program,
                       " help COMMAND' lists the flags of a command"));
    }
    if (value.has_value()) {
      arguments.flags.emplace_back(flag, std::string(*value));
    } else if (flag->type == FlagType::kBool) {
      arguments.flags.emplace_back(flag, "true");
    } else if (i + 1 < args.size()) {
      arguments.flags.emplace_back(flag, args[++i]);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(Dashed(*flag), " needs a value"));
    }
  }
  if (!arguments.positional.empty() && arguments.positional.front() == "help") {
    arguments.help = true;
    arguments.positional.erase(arguments.positional.begin());
  }
  return arguments;
}

// INVALID_ARGUMENT naming `command` and `flag`, which it does not take, and the commands that
// do.
absl::Status NotTaken(const CommandSet& set, const Command& command, const Flag& flag) {
  std::vector<std::string> takers;
  for (const Command* other : AllCommands(set)) {
    if (Takes(*other, &flag)) takers.emplace_back(other->name);
  }
  // "a, b and c".
  std::string listed = takers.back();
  if (takers.size() > 1) {
    listed = absl::StrCat(absl::StrJoin(takers.begin(), takers.end() - 1, ", "), " and ", listed);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(command.name, " does not take ", Dashed(flag), " (", listed, " take",
                   takers.size() == 1 ? "s" : "", " it); '", set.program, " help ", command.name,
                   "' lists its flags"));
}

// The invocation `arguments` make of `command`.
absl::StatusOr<Invocation> Invoke(const CommandSet& set, const Command& command,
                                  const Arguments& arguments, const Surroundings& surroundings) {
  for (const auto& [flag, text] : arguments.flags) {
    if (!Takes(command, flag)) return NotTaken(set, command, *flag);
  }
  const size_t operands = arguments.positional.size() - 1;
  if (command.operand != nullptr && operands != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(command.name, " takes one ", command.operand_help));
  }
  if (command.operand == nullptr && operands != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(command.name, " takes flags only, not \"", arguments.positional[1], "\""));
  }
  PT_ASSIGN_OR_RETURN(FlagValues values, FlagValues::Create(TakenFlags(command), arguments.flags,
                                                            surroundings.environment));
  return Invocation{command, operands == 1 ? arguments.positional[1] : "", std::move(values),
                    surroundings};
}

int Fail(const CommandSet& set, const absl::Status& status, std::ostream& err) {
  err << set.program << ": " << absl::StatusCodeToString(status.code()) << ": " << status.message()
      << "\n";
  return 1;
}

// How help shows what a flag takes: "--tp=N", "--[no]fp8", "--policy=adaptive|top_k|exhaustive".
std::string FlagSyntax(const Flag& flag) {
  if (flag.type == FlagType::kBool) return absl::StrCat("--[no]", flag.name);
  std::vector<std::string> words;
  for (const FlagChoice& choice : flag.choices) words.emplace_back(choice.word);
  const std::string choices = absl::StrJoin(words, "|");
  switch (flag.type) {
    case FlagType::kInt:
    case FlagType::kUint:
      return absl::StrCat(Dashed(flag), "=N");
    case FlagType::kDouble:
      return absl::StrCat(Dashed(flag), "=X");
    case FlagType::kDuration:
      return absl::StrCat(Dashed(flag), "=DURATION");
    case FlagType::kString:
      return absl::StrCat(Dashed(flag), "=", choices.empty() ? "TEXT" : choices);
    case FlagType::kIntList:
      return absl::StrCat(Dashed(flag), "=N,...");
    case FlagType::kStringList:
      return absl::StrCat(Dashed(flag), "=", choices.empty() ? "TEXT" : choices, ",...");
    case FlagType::kBool:
      break;
  }
  return Dashed(flag);
}

// Lines of `text`, each after `indent` spaces.
std::string Indented(absl::string_view text, size_t indent) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(absl::StripSuffix(text, "\n"), '\n')) {
    absl::StrAppend(&out, std::string(line.empty() ? 0 : indent, ' '), line, "\n");
  }
  return out;
}

// "paratune watch NAME [flags]".
std::string Synopsis(const CommandSet& set, const Command& command) {
  return absl::StrCat(set.program, " ", command.name,
                      command.operand != nullptr ? absl::StrCat(" ", command.operand) : "",
                      " [flags]");
}

}  // namespace

std::string FormatUsage(const CommandSet& set) {
  std::string out = absl::StrCat(set.program, ": ", set.about, "\n\nUsage: ", set.program,
                                 " COMMAND [flags]\n       ", set.program, " help [COMMAND]\n");
  for (const CommandSection& section : set.sections) {
    absl::StrAppend(&out, "\n", section.title, "\n");
    for (const Command& command : section.commands) {
      std::string name = command.name;
      if (command.operand != nullptr) absl::StrAppend(&name, " ", command.operand);
      const std::vector<absl::string_view> lines =
          absl::StrSplit(absl::StripSuffix(command.summary, "\n"), '\n');
      // A name too long for its column stands alone, and the summary starts below it.
      size_t first = 0;
      if (name.size() + 3 > kSummaryColumn) {
        absl::StrAppend(&out, "  ", name, "\n");
      } else {
        absl::StrAppend(&out, "  ", name, std::string(kSummaryColumn - 2 - name.size(), ' '),
                        lines[0], "\n");
        first = 1;
      }
      for (size_t i = first; i < lines.size(); ++i) {
        absl::StrAppend(&out, std::string(kSummaryColumn, ' '), lines[i], "\n");
      }
    }
  }
  absl::StrAppend(&out, "\n", set.notes);
  return out;
}

std::string FormatCommandHelp(const CommandSet& set, const Command& command) {
  std::string out =
      absl::StrCat("Usage: ", Synopsis(set, command), "\n\n", Indented(command.summary, 2));
  const char* title = nullptr;
  for (const FlagGroup& group : command.groups) {
    if (title == nullptr || absl::string_view(title) != group.title) {
      absl::StrAppend(&out, "\n", group.title, ":\n");
    }
    title = group.title;
    for (const FlagField& binding : group.flags) {
      const Flag& flag = *binding.flag;
      absl::StrAppend(&out, "  ", FlagSyntax(flag));
      if (flag.environment != nullptr) {
        absl::StrAppend(&out, " (default $", flag.environment, ")");
      } else if (*flag.default_value != '\0') {
        absl::StrAppend(&out, " (default ", flag.default_value, ")");
      }
      absl::StrAppend(&out, "\n",
                      Indented(WrapToWidth(flag.help, kHelpColumns - kHelpIndent, 0), kHelpIndent));
    }
  }
  return out;
}

int RunCommandLine(const CommandSet& set, absl::Span<const char* const> args,
                   absl::string_view version, const Surroundings& surroundings, std::ostream& out,
                   std::ostream& err) {
  const absl::StatusOr<Arguments> arguments = SplitArguments(set, args);
  if (!arguments.ok()) return Fail(set, arguments.status(), err);
  if (arguments->version) {
    out << version << "\n";
    return 0;
  }
  const Command* command =
      arguments->positional.empty() ? nullptr : FindCommand(set, arguments->positional.front());
  if (command == nullptr && !arguments->positional.empty()) {
    return Fail(
        set,
        absl::InvalidArgumentError(absl::StrCat("unknown command \"", arguments->positional.front(),
                                                "\"; run '", set.program, " help'")),
        err);
  }
  if (arguments->help) {
    if (command != nullptr) {
      out << FormatCommandHelp(set, *command);
      return 0;
    }
    out << FormatUsage(set);
    if (arguments->help_all) {
      for (const Command* each : AllCommands(set)) out << "\n" << FormatCommandHelp(set, *each);
    }
    return 0;
  }
  if (command == nullptr) {
    err << FormatUsage(set);
    return 2;
  }
  const absl::StatusOr<Invocation> invocation = Invoke(set, *command, *arguments, surroundings);
  if (!invocation.ok()) return Fail(set, invocation.status(), err);
  const absl::Status status = InFlagWords(command->run(*invocation, out), command->groups);
  if (!status.ok()) return Fail(set, status, err);
  return 0;
}

}  // namespace paratune
