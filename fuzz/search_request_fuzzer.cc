// Fuzzes the CreateSearch request validator (convert/search_request.h) on requests decoded
// from the input: the wire format, as the server receives them, or protobuf text format (the
// seed corpus's readable form). A request it accepts has every default filled in and passes
// it again unchanged.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "convert/search_request.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_message.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/autotuner_service.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paratune::FuzzCheck;
  paratune::v1::CreateSearchRequest request;
  if (!paratune::ParseFuzzMessage(paratune::FuzzText(data, size), request)) return 0;
  const absl::StatusOr<paratune::ValidatedSearchRequest> validated =
      paratune::ValidateCreateSearchRequest(request);
  if (!validated.ok()) {
    FuzzCheck(validated.status().code() == absl::StatusCode::kInvalidArgument,
              "a bad CreateSearch request is INVALID_ARGUMENT");
    return 0;
  }
  paratune::v1::CreateSearchRequest again;
  *again.mutable_spec() = validated->spec;
  again.set_display_name(request.display_name());
  const absl::StatusOr<paratune::ValidatedSearchRequest> revalidated =
      paratune::ValidateCreateSearchRequest(again);
  FuzzCheck(revalidated.ok(), "a validated spec validates again");
  FuzzCheck(google::protobuf::util::MessageDifferencer::Equals(revalidated->spec, validated->spec),
            "validating a validated spec changes nothing");
  return 0;
}
