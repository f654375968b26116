// Decoding a fuzz input as a protobuf request, for the targets that fuzz RPC request
// validators (docs/fuzzing.md).
#ifndef PARATUNE_FUZZ_FUZZ_MESSAGE_H_
#define PARATUNE_FUZZ_FUZZ_MESSAGE_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/message.h"

namespace paratune {

// Fills `message` from `input`: the wire format, as a server receives it, or else protobuf
// text format (the seed corpora's readable form). False when it is neither; `message` is
// then cleared.
bool ParseFuzzMessage(absl::string_view input, google::protobuf::Message& message);

// One RPC of a target that fuzzes several: its name and what fuzzes a request of it.
struct FuzzedRpc {
  absl::string_view name;
  void (*fuzz)(absl::string_view request);
};

// Fuzzes the RPC of `rpcs` (not empty) that the input's first line names with the rest of
// the input. An unknown name picks one by the input's first byte, so that an input whose
// first line a mutation broke still reaches a validator.
void FuzzNamedRpc(absl::Span<const FuzzedRpc> rpcs, absl::string_view input);

}  // namespace paratune

#endif  // PARATUNE_FUZZ_FUZZ_MESSAGE_H_
