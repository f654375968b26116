// A TorchTitan job's options as typed entries (pytorch/torchtitan v0.2.2): read from the
// framework arguments a launch template renders after torchtitan.train, and written back
// either as those command-line options or as the TOML job file that TorchTitan's
// ConfigManager loads (--job.config_file; torchtitan/config/manager.py, _maybe_load_toml and
// _dict_to_dataclass, which take a TOML value as the field's value without converting it).
// Each option's type is the one its JobConfig field declares, from the pinned list
// frameworks/torchtitan_v0.2.2_options.txt compiled in, so both forms come from one list.
#ifndef PARATUNE_LAUNCH_TORCHTITAN_OPTIONS_H_
#define PARATUNE_LAUNCH_TORCHTITAN_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace paratune {

// The declared types that paratune writes: bool; int (and int | None); float (and
// float | None, float | int); str, str | None and Literal[...] of strings; list[str].
enum class TorchTitanType { kBool, kInt, kFloat, kString, kStringList };

struct TorchTitanOption {
  // The dotted path of the field's dataclass under JobConfig, which is its TOML table:
  // "parallelism", "quantize.linear.float8".
  std::string section;
  // "tensor_parallel_degree".
  std::string field;
  TorchTitanType type;
  // As the command line takes it: "4", "3e-4", "op", "true" or "false" for a bool, and the
  // elements of a list joined by commas (manager.py's list_str_rule splits them).
  std::string value;
};

// The options `arguments` set, in order: each "--section.field=value", or for a bool
// "--section.field" (true) or "--section.no_field" (false), tyro's flags. INVALID_ARGUMENT
// naming the argument when it is none of the release's options, or a type paratune does not
// write; when its value is not one of its type (an int or float as TOML writes one, a
// Literal's values, a bool given a value); or when an option comes twice (TOML keeps one).
absl::StatusOr<std::vector<TorchTitanOption>> ReadTorchTitanArguments(
    const std::vector<std::string>& arguments);

// `option` as the command line takes it, the inverse of ReadTorchTitanArguments.
std::string TorchTitanArgument(const TorchTitanOption& option);

// A TOML (v1.0.0) job file setting `options`: one table per section, in the order sections
// first come, each holding its fields in order; an int bare, a float with a fraction or an
// exponent (so that TOML reads a float: "1" is written 1.0), a bool true or false, a string
// as a basic string, a list as an array of strings. `options` as ReadTorchTitanArguments
// returns them.
std::string TorchTitanToml(const std::vector<TorchTitanOption>& options);

}  // namespace paratune

#endif  // PARATUNE_LAUNCH_TORCHTITAN_OPTIONS_H_
