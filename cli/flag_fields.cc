#include "cli/flag_fields.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "estimator/field_error.h"

namespace paratune {
namespace {

using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

// A field of a message and the message that holds it.
struct FieldIn {
  Message* holder;
  const FieldDescriptor* field;
};

// The field `path` names in `message`, its parent messages created as needed.
absl::StatusOr<FieldIn> FindField(Message& message, absl::string_view path) {
  Message* holder = &message;
  const std::vector<absl::string_view> names = absl::StrSplit(path, '.');
  for (size_t i = 0; i < names.size(); ++i) {
    const FieldDescriptor* field = holder->GetDescriptor()->FindFieldByName(std::string(names[i]));
    if (field == nullptr) {
      return absl::InternalError(
          absl::StrCat(message.GetDescriptor()->full_name(), " has no field ", path));
    }
    if (i + 1 == names.size()) return FieldIn{holder, field};
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) {
      return absl::InternalError(
          absl::StrCat(field->full_name(), " in ", path, " is not a message to set a field of"));
    }
    holder = holder->GetReflection()->MutableMessage(holder, field);
  }
  return absl::InternalError("an empty field path");
}

// Calls `set` with the value when it is a T; whether it was.
template <typename T, typename Set>
bool SetAs(const FlagValue& value, Set set) {
  const T* typed = std::get_if<T>(&value);
  if (typed != nullptr) set(*typed);
  return typed != nullptr;
}

// Sets a repeated field from a list flag's value; false when the value's type cannot set it.
bool SetRepeated(Message& holder, const FieldDescriptor& field, const Flag& flag,
                 const FlagValue& value) {
  const Reflection& reflection = *holder.GetReflection();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64:
      return SetAs<std::vector<int64_t>>(value, [&](const std::vector<int64_t>& numbers) {
        reflection.ClearField(&holder, &field);
        for (const int64_t number : numbers) reflection.AddInt64(&holder, &field, number);
      });
    case FieldDescriptor::CPPTYPE_ENUM:
      return !flag.choices.empty() &&
             SetAs<std::vector<std::string>>(value, [&](const std::vector<std::string>& words) {
               reflection.ClearField(&holder, &field);
               for (const std::string& word : words) {
                 reflection.AddEnumValue(&holder, &field, ChoiceValue(flag, word));
               }
             });
    case FieldDescriptor::CPPTYPE_STRING:
      return SetAs<std::vector<std::string>>(value, [&](const std::vector<std::string>& texts) {
        reflection.ClearField(&holder, &field);
        for (const std::string& text : texts) reflection.AddString(&holder, &field, text);
      });
    default:
      return false;
  }
}

// Sets a singular field from a flag's value; false when the value's type cannot set it.
bool SetSingular(Message& holder, const FieldDescriptor& field, const FlagField& binding,
                 const FlagValue& value) {
  const Reflection& reflection = *holder.GetReflection();
  const Flag& flag = *binding.flag;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64:
      return SetAs<int64_t>(value,
                            [&](int64_t number) { reflection.SetInt64(&holder, &field, number); });
    case FieldDescriptor::CPPTYPE_UINT64:
      return SetAs<uint64_t>(
          value, [&](uint64_t number) { reflection.SetUInt64(&holder, &field, number); });
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return SetAs<double>(value,
                           [&](double number) {
                             reflection.SetDouble(&holder, &field, number * binding.scale);
                           }) ||
             SetAs<absl::Duration>(value, [&](absl::Duration duration) {
               reflection.SetDouble(&holder, &field,
                                    absl::ToDoubleSeconds(duration) * binding.scale);
             });
    case FieldDescriptor::CPPTYPE_BOOL:
      return SetAs<bool>(value, [&](bool on) { reflection.SetBool(&holder, &field, on); });
    case FieldDescriptor::CPPTYPE_STRING:
      return SetAs<std::string>(
          value, [&](const std::string& text) { reflection.SetString(&holder, &field, text); });
    case FieldDescriptor::CPPTYPE_ENUM:
      // A bool is the choice "true" or "false"; an empty word leaves the field unset.
      return !flag.choices.empty() &&
             (SetAs<bool>(value,
                          [&](bool on) {
                            reflection.SetEnumValue(&holder, &field,
                                                    ChoiceValue(flag, on ? "true" : "false"));
                          }) ||
              SetAs<std::string>(value, [&](const std::string& word) {
                if (!word.empty()) {
                  reflection.SetEnumValue(&holder, &field, ChoiceValue(flag, word));
                }
              }));
    default:
      return false;
  }
}

}  // namespace

absl::Status SetFlagFields(absl::Span<const FlagGroup> groups, const FlagValues& values,
                           google::protobuf::Message& message) {
  for (const FlagGroup& group : groups) {
    if (group.message == nullptr || group.message() != message.GetDescriptor()) continue;
    for (const FlagField& binding : group.flags) {
      if (binding.field == nullptr) continue;
      PT_ASSIGN_OR_RETURN(const FieldIn target,
                          FindField(message, absl::StrCat(group.prefix, binding.field)));
      const FlagValue& value = values.Value(*binding.flag);
      const bool set = target.field->is_repeated()
                           ? SetRepeated(*target.holder, *target.field, *binding.flag, value)
                           : SetSingular(*target.holder, *target.field, binding, value);
      if (!set) {
        return absl::InternalError(
            absl::StrCat(Dashed(*binding.flag), " cannot set ", target.field->full_name()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status InFlagWords(const absl::Status& status, absl::Span<const FlagGroup> groups) {
  const std::optional<FieldFault> fault = FieldFaultOf(status);
  if (!fault.has_value()) return status;
  // An entry of a repeated field is the field's path and "[i]"; its flag keeps the index.
  absl::string_view path = fault->field;
  absl::string_view index;
  if (absl::EndsWith(path, "]") && path.rfind('[') != absl::string_view::npos) {
    index = path.substr(path.rfind('['));
    path.remove_suffix(index.size());
  }
  for (const FlagGroup& group : groups) {
    for (const FlagField& binding : group.flags) {
      if (binding.field == nullptr || absl::StrCat(group.prefix, binding.field) != path) continue;
      std::string words = absl::StrCat(Dashed(*binding.flag), index);
      if (binding.unit != nullptr) absl::StrAppend(&words, ", in ", binding.unit, ",");
      return absl::InvalidArgumentError(absl::StrCat(words, " ", fault->problem));
    }
  }
  return status;
}

}  // namespace paratune
