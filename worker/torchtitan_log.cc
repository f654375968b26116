#include "worker/torchtitan_log.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/ansi_escape.h"

namespace paratune {
namespace {

constexpr size_t kQuotedBytes = 160;

size_t SkipSpaces(absl::string_view text, size_t i) {
  while (i < text.size() && text[i] == ' ') ++i;
  return i;
}

size_t SkipDigits(absl::string_view text, size_t i) {
  while (i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) ++i;
  return i;
}

// Where the metrics fields start ("step:"), or npos when `line` is no metrics line: "step:"
// at the start or after a space, not "validate step:" (MetricsProcessor.log_validation),
// then the step number and "loss:".
size_t MetricsStart(absl::string_view line) {
  constexpr absl::string_view kStep = "step:";
  constexpr absl::string_view kValidate = "validate ";
  for (size_t at = line.find(kStep); at != absl::string_view::npos; at = line.find(kStep, at + 1)) {
    if (at > 0 && line[at - 1] != ' ') continue;
    if (at >= kValidate.size() &&
        line.substr(at - kValidate.size(), kValidate.size()) == kValidate) {
      continue;
    }
    const size_t digits = SkipSpaces(line, at + kStep.size());
    const size_t after = SkipDigits(line, digits);
    if (after == digits) continue;
    const size_t next = SkipSpaces(line, after);
    if (next > after && absl::StartsWith(line.substr(next), "loss:")) return at;
  }
  return absl::string_view::npos;
}

std::string Quoted(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kQuotedBytes)),
                      text.size() > kQuotedBytes ? "..." : "", "\"");
}

absl::Status BadField(absl::string_view label, absl::string_view value, absl::string_view form) {
  return absl::InvalidArgumentError(
      absl::StrCat("TorchTitan metrics line: ", label, " (", Quoted(value), ") is not ", form));
}

// Whether `digits` is an integer with "," between its groups of three (Python's "{:,}"):
// 1 to 3 digits, then ",ddd" groups.
bool ThousandsGrouped(absl::string_view digits) {
  const size_t first = digits.find(',');
  if (first == 0 || first > 3) return false;
  for (size_t i = 0; i < digits.size(); ++i) {
    const bool comma_here = i >= first && (i - first) % 4 == 0;
    if (comma_here != (digits[i] == ',')) return false;
  }
  return (digits.size() - first) % 4 == 0;
}

// A decimal number as Python's format writes it: digits with an optional fraction and sign,
// thousands separated by "," (tps, tflops), or nan and inf (a diverged loss).
bool ParseNumber(absl::string_view text, double& value) {
  if (absl::StrContains(text, ',')) {
    absl::string_view integer = text.substr(0, text.find('.'));
    absl::ConsumePrefix(&integer, "-");
    if (!ThousandsGrouped(integer)) return false;
  }
  return absl::SimpleAtod(absl::StrReplaceAll(text, {{",", ""}}), &value);
}

absl::Status ReadNumber(absl::string_view label, absl::string_view value, double& out) {
  if (ParseNumber(value, out)) return absl::OkStatus();
  return BadField(label, value, "a number");
}

// "9.46GiB(64.99%)".
absl::Status ReadMemory(absl::string_view value, TorchTitanStep& step) {
  absl::string_view rest = value;
  const size_t gib = rest.find("GiB(");
  if (gib == absl::string_view::npos || !absl::EndsWith(rest, "%)") ||
      !ParseNumber(rest.substr(0, gib), step.max_reserved_gib) ||
      !ParseNumber(rest.substr(gib + 4, rest.size() - gib - 6), step.max_reserved_percent)) {
    return BadField("memory", value, "<GiB>GiB(<percent>%)");
  }
  return absl::OkStatus();
}

// "0.17%".
absl::Status ReadPercent(absl::string_view label, absl::string_view value, double& out) {
  absl::string_view number = value;
  if (!absl::ConsumeSuffix(&number, "%") || !ParseNumber(number, out)) {
    return BadField(label, value, "<percent>%");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<TorchTitanStep>> ReadTorchTitanLine(absl::string_view raw_line) {
  // TorchTitan colours each field unless --metrics.disable_color_printing
  // (torchtitan/tools/utils.py, Color).
  const std::string plain = WithoutAnsiEscapes(raw_line);
  const absl::string_view line = absl::StripTrailingAsciiWhitespace(plain);
  const size_t start = MetricsStart(line);
  if (start == absl::string_view::npos) return std::nullopt;

  TorchTitanStep step;
  std::vector<absl::string_view> seen;
  size_t i = start;
  while (i < line.size()) {
    const size_t colon = line.find(':', i);
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TorchTitan metrics line: ", Quoted(line.substr(i)), " is no \"name: value\" field"));
    }
    const absl::string_view label = line.substr(i, colon - i);
    const size_t value_start = SkipSpaces(line, colon + 1);
    const size_t value_end = std::min(line.find(' ', value_start), line.size());
    const absl::string_view value = line.substr(value_start, value_end - value_start);
    i = SkipSpaces(line, value_end);
    if (value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("TorchTitan metrics line: ", label, " has no value (the line ends there)"));
    }
    if (std::find(seen.begin(), seen.end(), label) != seen.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("TorchTitan metrics line: ", label, " appears twice"));
    }
    seen.push_back(label);
    absl::Status read;
    if (label == "step") {
      if (!absl::SimpleAtoi(value, &step.step)) read = BadField(label, value, "a step number");
    } else if (label == "loss") {
      read = ReadNumber(label, value, step.loss);
    } else if (label == "grad_norm") {
      read = ReadNumber(label, value, step.grad_norm.emplace());
    } else if (label == "memory") {
      read = ReadMemory(value, step);
    } else if (label == "tps") {
      read = ReadNumber(label, value, step.tokens_per_second);
    } else if (label == "tflops") {
      read = ReadNumber(label, value, step.tflops.emplace());
    } else if (label == "mfu") {
      read = ReadPercent(label, value, step.mfu_percent.emplace());
    } else {
      read = absl::InvalidArgumentError(absl::StrCat(
          "TorchTitan metrics line: unknown field ", Quoted(label),
          " (TorchTitan v0.2.2 logs step, loss, grad_norm, memory, tps, tflops and mfu)"));
    }
    if (!read.ok()) return read;
  }
  // step and loss start every metrics line (MetricsStart).
  for (const char* required : {"memory", "tps"}) {
    if (std::find(seen.begin(), seen.end(), required) == seen.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("TorchTitan metrics line of step ", step.step, " has no ", required,
                       " (cut short?): ", Quoted(line.substr(start))));
    }
  }
  return step;
}

absl::StatusOr<double> StepSecondsFromTps(double tokens_per_gpu_per_step,
                                          double tokens_per_second) {
  if (!(tokens_per_second > 0) || !std::isfinite(tokens_per_second)) {
    return absl::InvalidArgumentError(absl::StrCat("TorchTitan logged tps ", tokens_per_second,
                                                   ", from which no step time follows"));
  }
  return tokens_per_gpu_per_step / tokens_per_second;
}

}  // namespace paratune
