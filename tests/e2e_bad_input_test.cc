// End to end: bad requests get the canonical error code with the field named, and
// cancellation works on a real paratune-server with a real paratune-worker.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "server/core/test_probe_result.h"
#include "server/core/test_requests.h"
#include "tests/test_cluster.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kRpcTimeout = absl::Seconds(30);

class E2eBadInputTest : public ::testing::Test {
 protected:
  // One server for the suite. Its worker's probes take a minute, so a search stays running
  // until the test cancels it.
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
        TestCluster::Start({{"--backend=sim", "--sim_gpus=8", "--sim_probe_seconds=60"}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }

  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  static v1::Autotuner::Stub& autotuner() { return cluster_->autotuner(); }

  // Llama-3.1-8B on 2 nodes x 8 H100-80GB, global batch 256, sequence 4096.
  static v1::CreateSearchRequest ValidSearch() {
    v1::CreateSearchRequest request;
    v1::SearchSpec& spec = *request.mutable_spec();
    spec.mutable_model()->set_preset("llama3.1-8b");
    spec.mutable_training()->set_global_batch_size(256);
    spec.mutable_training()->set_seq_len(4096);
    spec.mutable_cluster()->mutable_gpu()->set_type("h100-80gb");
    spec.mutable_cluster()->set_num_nodes(2);
    spec.mutable_cluster()->set_gpus_per_node(8);
    spec.set_policy(v1::TOP_K);
    spec.set_top_k(2);
    return request;
  }

  static v1::EstimateRequest ValidEstimate() {
    v1::CreateSearchRequest search = ValidSearch();
    v1::EstimateRequest request;
    *request.mutable_model() = search.spec().model();
    *request.mutable_training() = search.spec().training();
    *request.mutable_cluster() = search.spec().cluster();
    v1::ParallelConfig& config = *request.mutable_config();
    config.set_data_parallel(8);
    config.set_tensor_parallel(2);
    config.set_pipeline_parallel(1);
    config.set_context_parallel(1);
    config.set_micro_batch_size(1);
    return request;
  }

  static grpc::Status Create(const v1::CreateSearchRequest& request, v1::Search* search) {
    return autotuner().CreateSearch(ContextWithTimeout(kRpcTimeout).get(), request, search);
  }

  static grpc::Status Estimate(const v1::EstimateRequest& request) {
    v1::EstimateResponse response;
    return autotuner().Estimate(ContextWithTimeout(kRpcTimeout).get(), request, &response);
  }

  static void ExpectInvalidArgument(const grpc::Status& status, const std::string& field) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(field));
  }

  static TestCluster* cluster_;
};

TestCluster* E2eBadInputTest::cluster_ = nullptr;

TEST_F(E2eBadInputTest, ValidRequestsAreAccepted) {
  v1::EstimateResponse estimate;
  const grpc::Status status =
      autotuner().Estimate(ContextWithTimeout(kRpcTimeout).get(), ValidEstimate(), &estimate);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(estimate.memory().peak_bytes(), 0);
  EXPECT_GT(estimate.performance().model_tflops_per_gpu(), 0);

  v1::PlanRequest plan;
  *plan.mutable_spec() = ValidSearch().spec();
  plan.set_limit(3);
  v1::PlanResponse planned;
  ASSERT_TRUE(autotuner().Plan(ContextWithTimeout(kRpcTimeout).get(), plan, &planned).ok());
  EXPECT_EQ(planned.candidates_size(), 3);
  EXPECT_GT(planned.counts().memory_safe(), 0);
}

TEST_F(E2eBadInputTest, UnknownModelPresetNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_model()->set_preset("llama9-1t");
  v1::Search search;
  ExpectInvalidArgument(Create(request, &search), "model.preset");
}

TEST_F(E2eBadInputTest, KvHeadsNotDividingHeadsNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  v1::ModelSpec& model = *request.mutable_spec()->mutable_model();
  model.Clear();
  model.set_hidden_size(4096);
  model.set_ffn_hidden_size(14336);
  model.set_num_layers(32);
  model.set_num_attention_heads(32);
  model.set_num_kv_heads(5);
  model.set_vocab_size(128256);
  v1::Search search;
  ExpectInvalidArgument(Create(request, &search), "model.num_kv_heads");
}

TEST_F(E2eBadInputTest, ZeroNodesNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_cluster()->set_num_nodes(0);
  v1::Search search;
  ExpectInvalidArgument(Create(request, &search), "cluster.num_nodes");
}

TEST_F(E2eBadInputTest, ZeroGlobalBatchNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_training()->set_global_batch_size(0);
  v1::Search search;
  ExpectInvalidArgument(Create(request, &search), "training.global_batch_size");
}

TEST_F(E2eBadInputTest, ProbeSettingsOutOfRangeNameTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_probe()->set_timed_steps(20000);
  v1::Search search;
  const grpc::Status status = Create(request, &search);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "spec.probe.timed_steps (20000) must be in [0, 10000]");
}

TEST_F(E2eBadInputTest, AdaptiveToleranceOutOfRangeNamesTheField) {
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->set_policy(v1::ADAPTIVE);
  request.mutable_spec()->mutable_adaptive()->set_tolerance(3);
  v1::Search search;
  const grpc::Status status = Create(request, &search);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("spec.adaptive.tolerance (3)"));
}

TEST_F(E2eBadInputTest, EstimateWithTensorParallelThreeNamesTheField) {
  v1::EstimateRequest request = ValidEstimate();
  request.mutable_config()->set_tensor_parallel(3);
  ExpectInvalidArgument(Estimate(request), "tensor_parallel (3)");
}

TEST_F(E2eBadInputTest, EstimateWithWrongGpuCountNamesTheFields) {
  v1::EstimateRequest request = ValidEstimate();
  request.mutable_config()->set_data_parallel(4);
  const grpc::Status status = Estimate(request);
  ExpectInvalidArgument(status, "config.data_parallel (4)");
  EXPECT_THAT(status.error_message(), HasSubstr("16 GPUs"));
}

TEST_F(E2eBadInputTest, GetUnknownSearchIsNotFound) {
  v1::GetSearchRequest request;
  request.set_name("searches/987654");
  v1::Search search;
  const grpc::Status status =
      autotuner().GetSearch(ContextWithTimeout(kRpcTimeout).get(), request, &search);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("searches/987654"));
}

TEST_F(E2eBadInputTest, GarbagePageTokenIsInvalid) {
  v1::ListSearchesRequest request;
  request.set_page_token("not-a-token");
  v1::ListSearchesResponse response;
  ExpectInvalidArgument(
      autotuner().ListSearches(ContextWithTimeout(kRpcTimeout).get(), request, &response),
      "page_token");
}

TEST_F(E2eBadInputTest, CancellingAFinishedSearchIsAFailedPrecondition) {
  // Llama-3.1-405B cannot fit on one 40 GB GPU: the search fails at once, with counts.
  v1::CreateSearchRequest request = ValidSearch();
  request.mutable_spec()->mutable_model()->set_preset("llama3.1-405b");
  request.mutable_spec()->mutable_cluster()->mutable_gpu()->set_type("a100-40gb");
  request.mutable_spec()->mutable_cluster()->set_num_nodes(1);
  request.mutable_spec()->mutable_cluster()->set_gpus_per_node(1);
  v1::Search search;
  ASSERT_TRUE(Create(request, &search).ok());
  EXPECT_EQ(search.state(), v1::FAILED);
  EXPECT_THAT(search.stop_reason(), HasSubstr("no memory-safe configuration"));
  EXPECT_EQ(search.counts().selected(), 0);

  v1::CancelSearchRequest cancel;
  cancel.set_name(search.name());
  v1::Search cancelled;
  const grpc::Status status =
      autotuner().CancelSearch(ContextWithTimeout(kRpcTimeout).get(), cancel, &cancelled);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("FAILED"));
}

TEST_F(E2eBadInputTest, CancellingARunningSearchStopsIt) {
  v1::Search search;
  ASSERT_TRUE(Create(ValidSearch(), &search).ok());
  ASSERT_EQ(search.state(), v1::PROBING);

  // Follow the search until the worker holds a probe, then cancel it; the stream must end
  // with the cancelled search.
  std::unique_ptr<grpc::ClientContext> context = ContextWithTimeout(absl::Seconds(60));
  v1::WatchSearchRequest watch;
  watch.set_name(search.name());
  std::unique_ptr<grpc::ClientReader<v1::WatchSearchResponse>> reader =
      autotuner().WatchSearch(context.get(), watch);
  v1::WatchSearchResponse event;
  bool running = false;
  // The first response holds every candidate; later ones only those that changed (a lease
  // after the watch started shows there alone).
  while (!running && reader->Read(&event)) {
    for (const v1::Candidate& candidate : event.search().candidates()) {
      running |= candidate.state() == v1::CANDIDATE_RUNNING;
    }
    for (const v1::Candidate& candidate : event.changed_candidates()) {
      running |= candidate.state() == v1::CANDIDATE_RUNNING;
    }
  }
  ASSERT_TRUE(running) << "no probe was leased";

  v1::CancelSearchRequest cancel;
  cancel.set_name(search.name());
  v1::Search cancelled;
  const grpc::Status status =
      autotuner().CancelSearch(ContextWithTimeout(kRpcTimeout).get(), cancel, &cancelled);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(cancelled.state(), v1::CANCELLED);
  EXPECT_THAT(cancelled.stop_reason(), HasSubstr("cancelled"));
  for (const v1::Candidate& candidate : cancelled.candidates()) {
    EXPECT_EQ(candidate.state(), v1::CANDIDATE_SKIPPED) << candidate.name();
  }

  v1::SearchState last_state = v1::SEARCH_STATE_UNSPECIFIED;
  while (reader->Read(&event)) last_state = event.search().state();
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(last_state, v1::CANCELLED);

  // Cancelling twice is a failed precondition.
  EXPECT_EQ(autotuner()
                .CancelSearch(ContextWithTimeout(kRpcTimeout).get(), cancel, &cancelled)
                .error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

// The table-driven half: every scalar and map field of every request of both services,
// reached by walking the request's descriptor, gets each bad value that fits its type; the
// call must end with the expected code (an INVALID_ARGUMENT naming the field) and the server
// must still answer ListWorkers afterwards.

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

enum class BadValue {
  kZero,
  kNegative,
  kHuge,
  kNaN,
  kInf,
  kEmpty,
  kOverLong,
  kUnknownEnum,
  kForgedName,
  kMalformedName,
  // Map fields.
  kEmptyKey,
  kOverLongKey,
  kOverLongValue,
  // Map fields and repeated strings.
  kManyEntries,
};

const char* BadValueName(BadValue value) {
  switch (value) {
    case BadValue::kZero:
      return "zero";
    case BadValue::kNegative:
      return "negative";
    case BadValue::kHuge:
      return "huge";
    case BadValue::kNaN:
      return "nan";
    case BadValue::kInf:
      return "inf";
    case BadValue::kEmpty:
      return "empty";
    case BadValue::kOverLong:
      return "over-long";
    case BadValue::kUnknownEnum:
      return "unknown-enum";
    case BadValue::kForgedName:
      return "forged-name";
    case BadValue::kMalformedName:
      return "malformed-name";
    case BadValue::kEmptyKey:
      return "empty-key";
    case BadValue::kOverLongKey:
      return "over-long-key";
    case BadValue::kOverLongValue:
      return "over-long-value";
    case BadValue::kManyEntries:
      return "many-entries";
  }
  return "?";
}

// Longer than every documented string limit (the largest is ProbeResult.message, 64 KiB).
constexpr size_t kOverLongBytes = 70 * 1024;
// More than every documented limit on the entries of a map (the largest is 32 worker labels)
// or a list of strings (64 running probes or names of a result's parts).
constexpr int kManyEntries = 1000;

// One field, from the request down: repeated messages are entered at element 0.
using FieldPath = std::vector<const FieldDescriptor*>;

std::string PathText(const FieldPath& path) {
  std::vector<std::string> names;
  for (const FieldDescriptor* field : path) names.push_back(field->name());
  return absl::StrJoin(names, ".");
}

// The forged (well-formed, unknown) and malformed names of a resource-name field; empty when
// the field holds no resource name.
struct NameValues {
  std::string forged;
  std::string malformed;
};

NameValues NameValuesOf(const FieldDescriptor& field) {
  if (!absl::EndsWith(field.containing_type()->name(), "Request")) return {};
  const std::string& name = field.name();
  if (name == "name") return {"searches/987654", "searches/-3"};
  if (name == "worker") return {"workers/987654", "workers/abc"};
  if (name == "probe" || name == "running_probes" || name == "last_probe") {
    return {"searches/987654/candidates/0/probes/1", "searches/1/candidates/x/probes/1"};
  }
  if (name == "page_token") return {"", "not-a-token"};
  return {};
}

std::vector<BadValue> BadValuesOf(const FieldDescriptor& field) {
  if (field.is_map()) {
    // The requests' maps are labels: string keys and values.
    return {BadValue::kEmptyKey, BadValue::kOverLongKey, BadValue::kOverLongValue,
            BadValue::kManyEntries};
  }
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
      return {BadValue::kZero, BadValue::kNegative, BadValue::kHuge};
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return {BadValue::kZero, BadValue::kHuge};
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      return {BadValue::kZero, BadValue::kNegative, BadValue::kHuge, BadValue::kNaN,
              BadValue::kInf};
    case FieldDescriptor::CPPTYPE_ENUM:
      return {BadValue::kUnknownEnum};
    case FieldDescriptor::CPPTYPE_STRING: {
      std::vector<BadValue> values = {BadValue::kEmpty, BadValue::kOverLong};
      const NameValues names = NameValuesOf(field);
      if (!names.forged.empty()) values.push_back(BadValue::kForgedName);
      if (!names.malformed.empty()) values.push_back(BadValue::kMalformedName);
      if (field.is_repeated()) values.push_back(BadValue::kManyEntries);
      return values;
    }
    case FieldDescriptor::CPPTYPE_BOOL:
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return {};
  }
  return {};
}

// Every scalar and map field under `descriptor`, depth first.
void CollectFields(const Descriptor& descriptor, FieldPath& prefix, int depth,
                   std::vector<FieldPath>& fields) {
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const FieldDescriptor* field = descriptor.field(i);
    prefix.push_back(field);
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !field->is_map()) {
      if (depth < 4) CollectFields(*field->message_type(), prefix, depth + 1, fields);
    } else {
      fields.push_back(prefix);
    }
    prefix.pop_back();
  }
}

// Fills the map field `field` of `message` (string keys and values) with the entries `value`
// stands for, and returns them as text for messages.
std::string SetBadEntries(Message& message, const FieldDescriptor& field, BadValue value) {
  const Reflection& reflection = *message.GetReflection();
  reflection.ClearField(&message, &field);
  auto add = [&](const std::string& key, const std::string& entry_value) {
    Message& entry = *reflection.AddMessage(&message, &field);
    const Descriptor& descriptor = *entry.GetDescriptor();
    entry.GetReflection()->SetString(&entry, descriptor.map_key(), key);
    entry.GetReflection()->SetString(&entry, descriptor.map_value(), entry_value);
  };
  const std::string over_long(kOverLongBytes, 'x');
  switch (value) {
    case BadValue::kEmptyKey:
      add("", "v");
      return "{\"\": \"v\"}";
    case BadValue::kOverLongKey:
      add(over_long, "v");
      return absl::StrCat("a key of ", kOverLongBytes, " bytes");
    case BadValue::kOverLongValue:
      add("k", over_long);
      return absl::StrCat("a value of ", kOverLongBytes, " bytes");
    case BadValue::kManyEntries:
      for (int i = 0; i < kManyEntries; ++i) add(absl::StrCat("k", i), "v");
      return absl::StrCat(kManyEntries, " entries");
    default:
      return "?";
  }
}

// Sets the field at `path` of `request` to `value` (a repeated field gets it as its only
// element) and returns the value as text for messages.
std::string SetBadValue(Message& request, const FieldPath& path, BadValue value) {
  Message* message = &request;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const Reflection& reflection = *message->GetReflection();
    if (path[i]->is_repeated()) {
      if (reflection.FieldSize(*message, path[i]) == 0) reflection.AddMessage(message, path[i]);
      message = reflection.MutableRepeatedMessage(message, path[i], 0);
    } else {
      message = reflection.MutableMessage(message, path[i]);
    }
  }
  const FieldDescriptor& field = *path.back();
  if (field.is_map()) return SetBadEntries(*message, field, value);
  const Reflection& reflection = *message->GetReflection();
  if (field.is_repeated()) reflection.ClearField(message, &field);
  const bool repeated = field.is_repeated();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64: {
      const bool is64 = field.cpp_type() == FieldDescriptor::CPPTYPE_INT64;
      const int64_t v = value == BadValue::kZero       ? 0
                        : value == BadValue::kNegative ? -1
                        : is64                         ? std::numeric_limits<int64_t>::max()
                                                       : std::numeric_limits<int32_t>::max();
      if (is64) {
        repeated ? reflection.AddInt64(message, &field, v)
                 : reflection.SetInt64(message, &field, v);
      } else {
        repeated ? reflection.AddInt32(message, &field, static_cast<int32_t>(v))
                 : reflection.SetInt32(message, &field, static_cast<int32_t>(v));
      }
      return absl::StrCat(v);
    }
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t v = value == BadValue::kZero ? 0 : std::numeric_limits<uint32_t>::max();
      if (field.cpp_type() == FieldDescriptor::CPPTYPE_UINT64) {
        const uint64_t v64 = value == BadValue::kZero ? 0 : std::numeric_limits<uint64_t>::max();
        repeated ? reflection.AddUInt64(message, &field, v64)
                 : reflection.SetUInt64(message, &field, v64);
        return absl::StrCat(v64);
      }
      repeated ? reflection.AddUInt32(message, &field, static_cast<uint32_t>(v))
               : reflection.SetUInt32(message, &field, static_cast<uint32_t>(v));
      return absl::StrCat(v);
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double v = 0;
      switch (value) {
        case BadValue::kNegative:
          v = -1;
          break;
        case BadValue::kHuge:
          v = field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT ? std::numeric_limits<float>::max()
                                                                 : 1e300;
          break;
        case BadValue::kNaN:
          v = std::numeric_limits<double>::quiet_NaN();
          break;
        case BadValue::kInf:
          v = std::numeric_limits<double>::infinity();
          break;
        default:
          break;
      }
      if (field.cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
        repeated ? reflection.AddDouble(message, &field, v)
                 : reflection.SetDouble(message, &field, v);
      } else {
        repeated ? reflection.AddFloat(message, &field, static_cast<float>(v))
                 : reflection.SetFloat(message, &field, static_cast<float>(v));
      }
      return absl::StrCat(v);
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      constexpr int kUnknown = 999;
      repeated ? reflection.AddEnumValue(message, &field, kUnknown)
               : reflection.SetEnumValue(message, &field, kUnknown);
      return absl::StrCat(kUnknown);
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      const NameValues names = NameValuesOf(field);
      if (value == BadValue::kManyEntries) {
        // Well-formed entries where the field holds names, so that only their count is bad.
        const std::string entry = names.forged.empty() ? "x" : names.forged;
        for (int i = 0; i < kManyEntries; ++i) reflection.AddString(message, &field, entry);
        return absl::StrCat(kManyEntries, " entries");
      }
      std::string v;
      std::string text;
      switch (value) {
        case BadValue::kOverLong:
          v = std::string(kOverLongBytes, 'x');
          text = absl::StrCat(kOverLongBytes, " bytes");
          break;
        case BadValue::kForgedName:
          v = names.forged;
          break;
        case BadValue::kMalformedName:
          v = names.malformed;
          break;
        default:
          break;
      }
      repeated ? reflection.AddString(message, &field, v)
               : reflection.SetString(message, &field, v);
      return text.empty() ? absl::StrCat("\"", v, "\"") : text;
    }
    case FieldDescriptor::CPPTYPE_BOOL:
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return "?";
}

// The code a bad value gets where it is not INVALID_ARGUMENT. Keys are "Message.field kind"
// (e.g. "ModelSpec.hidden_size zero"), shared by every request that holds the message, or
// "Rpc Message.field kind" for one RPC. kLegal: the value is allowed and the call ends as
// the unmodified request does.
constexpr int kLegal = -1;

const std::map<std::string, int>& Expectations() {
  static const auto* expectations = new std::map<std::string, int>({
      // 0 or empty means the default (proto comments).
      {"ListSearchesRequest.page_size zero", kLegal},
      {"ListSearchesRequest.page_token empty", kLegal},
      {"ListSearchEventsRequest.page_size zero", kLegal},
      {"ListSearchEventsRequest.page_token empty", kLegal},
      {"EstimateRequest.safe_memory_fraction zero", kLegal},
      {"PlanRequest.limit zero", kLegal},
      {"PlanRequest.limit huge", kLegal},
      {"ParallelConfig.virtual_pipeline zero", kLegal},
      {"ParallelConfig.expert_parallel zero", kLegal},
      {"ParallelConfig.expert_tensor_parallel zero", kLegal},
      // 0: shard over all data-parallel ranks (proto comments).
      {"ParallelConfig.dp_shard_group zero", kLegal},
      {"SearchSpace.dp_shard_groups zero", kLegal},
      // 0: dropless routing (proto comment).
      {"TrainingSpec.moe_capacity_factor zero", kLegal},
      {"SearchSpace.safe_memory_fraction zero", kLegal},
      {"SearchSpec.top_k zero", kLegal},
      {"SearchSpec.seed zero", kLegal},
      {"SearchSpec.seed huge", kLegal},
      {"ProbeSettings.backend empty", kLegal},
      {"ProbeSettings.warmup_steps zero", kLegal},
      {"ProbeSettings.timed_steps zero", kLegal},
      {"ProbeSettings.deadline_seconds zero", kLegal},
      {"ProbeSettings.max_attempts zero", kLegal},
      {"ProbeSettings.command_template empty", kLegal},
      {"ProbeSettings.max_launch_failures zero", kLegal},
      {"ProbeSettings.startup_seconds zero", kLegal},
      {"AdaptiveSettings.tolerance zero", kLegal},
      {"AdaptiveSettings.confidence_sigmas zero", kLegal},
      {"AdaptiveSettings.max_in_flight zero", kLegal},
      {"AdaptiveSettings.max_confirmations zero", kLegal},
      {"AdaptiveSettings.confirmation_steps_factor zero", kLegal},
      {"SearchBudget.max_probes zero", kLegal},
      {"SearchBudget.max_gpu_seconds zero", kLegal},
      {"SearchBudget.deadline_seconds zero", kLegal},
      {"CreateSearchRequest.display_name empty", kLegal},
      // The base requests name a preset model and a catalog GPU: dimensions left 0.
      {"ModelSpec.hidden_size zero", kLegal},
      {"ModelSpec.ffn_hidden_size zero", kLegal},
      {"ModelSpec.num_layers zero", kLegal},
      {"ModelSpec.num_attention_heads zero", kLegal},
      {"ModelSpec.num_kv_heads zero", kLegal},
      {"ModelSpec.vocab_size zero", kLegal},
      // Zero is a dense model's MoE field, and head_dim h / a.
      {"ModelSpec.num_experts zero", kLegal},
      {"ModelSpec.moe_router_top_k zero", kLegal},
      {"ModelSpec.moe_ffn_hidden_size zero", kLegal},
      {"ModelSpec.num_shared_experts zero", kLegal},
      {"ModelSpec.shared_expert_ffn_hidden_size zero", kLegal},
      {"ModelSpec.moe_layer_step zero", kLegal},
      {"ModelSpec.moe_first_dense_layers zero", kLegal},
      {"ModelSpec.head_dim zero", kLegal},
      {"GpuSpec.memory_bytes zero", kLegal},
      {"GpuSpec.peak_bf16_tflops zero", kLegal},
      {"GpuSpec.hbm_bandwidth_gbps zero", kLegal},
      {"GpuSpec.nvlink_bandwidth_gbps zero", kLegal},
      {"GpuSpec.network_bandwidth_gbps zero", kLegal},
      {"Gpu.index zero", kLegal},
      // Probes the server does not know are told to stop, not refused.
      {"HeartbeatRequest.running_probes forged-name", kLegal},
      {"AcquireProbeRequest.wait_seconds zero", kLegal},
      // A worker's first call names none; a probe not leased to it is simply not handed over.
      {"AcquireProbeRequest.last_probe empty", kLegal},
      {"AcquireProbeRequest.last_probe forged-name", kLegal},
      // OK also when the worker is unknown (proto comment); the reason is free-form.
      {"DeregisterWorkerRequest.worker forged-name", kLegal},
      {"DeregisterWorkerRequest.reason empty", kLegal},
      // A probe's figures that are 0 or empty when not measured or not told (proto comments),
      // and the fixed costs of an extrapolation, the fit's intercept less the fill and drain,
      // which may be negative (estimator/short_probe.h).
      {"ProbeResult.message empty", kLegal},
      {"ProbeResult.tokens_per_second zero", kLegal},
      {"ProbeResult.peak_memory_bytes zero", kLegal},
      {"ProbeResult.wall_seconds zero", kLegal},
      {"ProbeResult.startup_seconds zero", kLegal},
      {"ProbeMeasurements.median_step_time_seconds zero", kLegal},
      {"ProbeMeasurements.min_step_time_seconds zero", kLegal},
      {"ProbeMeasurements.max_step_time_seconds zero", kLegal},
      {"ProbeMeasurements.step_time_cv zero", kLegal},
      {"ProbeMeasurements.estimated_peak_memory_bytes zero", kLegal},
      {"ProbeMeasurements.predicted_step_time_seconds zero", kLegal},
      {"ProbeMeasurements.modelled_dp_seconds_per_step zero", kLegal},
      {"ProbeMeasurements.gpu_name empty", kLegal},
      {"ProbeMeasurements.driver_version empty", kLegal},
      {"ProbeMeasurements.cuda_driver_version empty", kLegal},
      {"ProbeMeasurements.cuda_runtime_version empty", kLegal},
      {"ProbeMeasurements.nccl_version empty", kLegal},
      {"ProbeMeasurements.attention_kernel empty", kLegal},
      {"ProbeMeasurements.attention_fallback_reason empty", kLegal},
      {"ProbeMeasurements.attention_backward_kernel empty", kLegal},
      {"ProbeMeasurements.attention_backward_fallback_reason empty", kLegal},
      {"ProbeMeasurements.micro_batches_per_step zero", kLegal},
      {"PhaseTime.seconds zero", kLegal},
      {"CollectiveBandwidth.bytes zero", kLegal},
      {"CollectiveBandwidth.seconds zero", kLegal},
      {"CollectiveBandwidth.algorithm_bandwidth_gbps zero", kLegal},
      {"CollectiveBandwidth.bus_bandwidth_gbps zero", kLegal},
      {"MemoryTermBytes.estimated_bytes zero", kLegal},
      {"MemoryTermBytes.allocated_bytes zero", kLegal},
      {"StepExtrapolation.fill_drain_seconds zero", kLegal},
      {"StepExtrapolation.fixed_seconds zero", kLegal},
      {"StepExtrapolation.fixed_seconds negative", kLegal},
      // A well-formed probe that is not leased to the worker is FAILED_PRECONDITION (proto
      // comment); a malformed name is INVALID_ARGUMENT, the default.
      {"ReportProbeRequest.probe forged-name", kLegal},
      {"RendezvousRequest.probe forged-name", kLegal},
      // Only gang[0] sends a token; the others send none.
      {"RendezvousRequest.token empty", kLegal},
  });
  return *expectations;
}

// What an INVALID_ARGUMENT message names: the field, or for a value that makes another field
// wrong, that field.
std::string NamedField(const FieldPath& path, BadValue value) {
  const FieldDescriptor& field = *path.back();
  const std::string key =
      absl::StrCat(field.containing_type()->name(), ".", field.name(), " ", BadValueName(value));
  // Without a preset every dimension must be given; the first is named.
  if (key == "ModelSpec.preset empty") return "model.hidden_size";
  // The other GPUs are then of another type.
  if (key == "Gpu.name empty") return "differs from gpus[0]";
  return field.name();
}

// One RPC of the table: a valid request (built afresh per case), the call, and the code the
// valid request gets.
struct RpcTable {
  std::string rpc;
  std::function<std::unique_ptr<Message>()> base;
  std::function<grpc::Status(const Message&)> call;
  grpc::StatusCode base_code = grpc::StatusCode::OK;
  // Runs after a case that ended OK, e.g. to cancel a created search.
  std::function<void(const Message& request)> after_ok;
};

class E2eBadInputTableTest : public E2eBadInputTest {
 protected:
  static constexpr absl::Duration kCaseTimeout = absl::Seconds(20);

  static v1::WorkerService::Stub& workers() {
    static v1::WorkerService::Stub* stub =
        v1::WorkerService::NewStub(
            grpc::CreateChannel(cluster_->address(), grpc::InsecureChannelCredentials()))
            .release();
    return *stub;
  }

  // A worker that offers only the replay backend, so it is never leased a probe of the
  // suite's sim searches.
  static v1::RegisterWorkerRequest ValidRegistration() {
    v1::RegisterWorkerRequest request;
    request.set_hostname("e2e-bad-input");
    for (int i = 0; i < 8; ++i) {
      v1::Gpu& gpu = *request.add_gpus();
      gpu.set_index(i);
      gpu.set_name("NVIDIA H100 80GB HBM3");
      gpu.set_memory_bytes(int64_t{85520809984});
    }
    request.add_backends("replay");
    return request;
  }

  static std::string RegisterFakeWorker() {
    v1::RegisterWorkerResponse response;
    const grpc::Status status = workers().RegisterWorker(ContextWithTimeout(kRpcTimeout).get(),
                                                         ValidRegistration(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.name();
  }

  // A search that failed at creation (no memory-safe configuration): names it can be read,
  // watched and listed at once.
  static std::string EndedSearch() {
    v1::CreateSearchRequest request = ValidSearch();
    request.mutable_spec()->mutable_model()->set_preset("llama3.1-405b");
    request.mutable_spec()->mutable_cluster()->mutable_gpu()->set_type("a100-40gb");
    request.mutable_spec()->mutable_cluster()->set_num_nodes(1);
    request.mutable_spec()->mutable_cluster()->set_gpus_per_node(1);
    v1::Search search;
    EXPECT_TRUE(Create(request, &search).ok());
    return search.name();
  }

  // The request's worker field; empty when it has none.
  static std::string WorkerOf(const Message& request) {
    const FieldDescriptor* field = request.GetDescriptor()->FindFieldByName("worker");
    return field == nullptr ? "" : request.GetReflection()->GetString(request, field);
  }

  // Deregisters a worker a case registered; it may be gone already.
  static void Deregister(const std::string& worker) {
    v1::DeregisterWorkerRequest request;
    request.set_worker(worker);
    v1::DeregisterWorkerResponse response;
    workers().DeregisterWorker(ContextWithTimeout(kRpcTimeout).get(), request, &response);
  }

  template <typename Request>
  static std::unique_ptr<Message> Copy(const Request& request) {
    return std::make_unique<Request>(request);
  }

  static void CancelIfRunning(const Message& request, const std::string& name) {
    (void)request;
    v1::CancelSearchRequest cancel;
    cancel.set_name(name);
    v1::Search cancelled;
    autotuner().CancelSearch(ContextWithTimeout(kRpcTimeout).get(), cancel, &cancelled);
  }

  // A table's call: unary RPC `method` of `stub` with the case's request.
  template <typename Stub, typename Request, typename Response>
  static std::function<grpc::Status(const Message&)> UnaryCall(
      Stub& stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*)) {
    return [&stub, method](const Message& request) {
      Response response;
      return (stub.*method)(ContextWithTimeout(kCaseTimeout).get(),
                            static_cast<const Request&>(request), &response);
    };
  }

  // A probe leased to a fake worker: a probe of `search`, a replay search, which no worker of
  // the suite but the fake ones offers.
  struct Lease {
    std::string search;
    std::string worker;
    std::string probe;
  };

  // Leases the next queued probe of lease.search to lease.worker; false when none came.
  static bool AcquireNext(Lease& lease) {
    v1::AcquireProbeRequest acquire;
    acquire.set_worker(lease.worker);
    acquire.set_wait_seconds(5);
    v1::AcquireProbeResponse response;
    const grpc::Status status =
        workers().AcquireProbe(ContextWithTimeout(kRpcTimeout).get(), acquire, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    lease.probe = response.assignment().name();
    return !lease.probe.empty();
  }

  // Whether the server still counts lease.probe as running on lease.worker. The heartbeat
  // also keeps the fake worker alive: the suite's server declares a worker lost after 3 s.
  static bool StillLeased(const Lease& lease) {
    v1::HeartbeatRequest heartbeat;
    heartbeat.set_worker(lease.worker);
    heartbeat.add_running_probes(lease.probe);
    v1::HeartbeatResponse response;
    const grpc::Status status =
        workers().Heartbeat(ContextWithTimeout(kRpcTimeout).get(), heartbeat, &response);
    const auto& cancelled = response.cancel_probes();
    return status.ok() &&
           std::find(cancelled.begin(), cancelled.end(), lease.probe) == cancelled.end();
  }

  static grpc::Status Report(const std::string& worker, const std::string& probe,
                             const v1::ProbeResult& result) {
    v1::ReportProbeRequest report;
    report.set_worker(worker);
    report.set_probe(probe);
    *report.mutable_result() = result;
    v1::ReportProbeResponse response;
    return workers().ReportProbe(ContextWithTimeout(kRpcTimeout).get(), report, &response);
  }

  std::vector<RpcTable> Tables(const std::string& ended_search) {
    std::vector<RpcTable> tables;
    auto context = [] { return ContextWithTimeout(kCaseTimeout); };
    auto created = std::make_shared<std::string>();

    // ADAPTIVE, so that its settings are read rather than refused for the policy.
    v1::CreateSearchRequest create = ValidSearch();
    create.set_display_name("e2e bad input");
    create.mutable_spec()->set_policy(v1::ADAPTIVE);
    create.mutable_spec()->clear_top_k();
    tables.push_back({"CreateSearch", [create] { return Copy(create); },
                      [context, created](const Message& request) {
                        v1::Search search;
                        grpc::Status status = autotuner().CreateSearch(
                            context().get(), static_cast<const v1::CreateSearchRequest&>(request),
                            &search);
                        *created = search.name();
                        return status;
                      },
                      grpc::StatusCode::OK,
                      [created](const Message& request) { CancelIfRunning(request, *created); }});

    v1::GetSearchRequest get;
    get.set_name(ended_search);
    tables.push_back({"GetSearch", [get] { return Copy(get); },
                      UnaryCall(autotuner(), &v1::Autotuner::Stub::GetSearch)});

    tables.push_back({"ListSearches", [] { return Copy(v1::ListSearchesRequest()); },
                      UnaryCall(autotuner(), &v1::Autotuner::Stub::ListSearches)});

    v1::CancelSearchRequest cancel;
    cancel.set_name(ended_search);
    tables.push_back({"CancelSearch", [cancel] { return Copy(cancel); },
                      UnaryCall(autotuner(), &v1::Autotuner::Stub::CancelSearch),
                      grpc::StatusCode::FAILED_PRECONDITION});

    v1::WatchSearchRequest watch;
    watch.set_name(ended_search);
    tables.push_back({"WatchSearch", [watch] { return Copy(watch); },
                      [context](const Message& request) {
                        std::unique_ptr<grpc::ClientContext> stream = context();
                        std::unique_ptr<grpc::ClientReader<v1::WatchSearchResponse>> reader =
                            autotuner().WatchSearch(
                                stream.get(), static_cast<const v1::WatchSearchRequest&>(request));
                        v1::WatchSearchResponse event;
                        while (reader->Read(&event)) {
                        }
                        return reader->Finish();
                      }});

    tables.push_back({"Estimate", [] { return Copy(ValidEstimate()); },
                      UnaryCall(autotuner(), &v1::Autotuner::Stub::Estimate)});

    v1::PlanRequest plan;
    *plan.mutable_spec() = create.spec();
    plan.set_limit(3);
    tables.push_back({"Plan", [plan] { return Copy(plan); },
                      UnaryCall(autotuner(), &v1::Autotuner::Stub::Plan)});

    tables.push_back({"ListWorkers", [] { return Copy(v1::ListWorkersRequest()); },
                      UnaryCall(autotuner(), &v1::Autotuner::Stub::ListWorkers)});

    v1::ListSearchEventsRequest events;
    events.set_name(ended_search);
    tables.push_back({"ListSearchEvents", [events] { return Copy(events); },
                      UnaryCall(autotuner(), &v1::Autotuner::Stub::ListSearchEvents)});

    tables.push_back({"RegisterWorker", [] { return Copy(ValidRegistration()); },
                      UnaryCall(workers(), &v1::WorkerService::Stub::RegisterWorker)});

    // Each worker case registers a worker of its own (a fake worker never heartbeats, so the
    // server soon declares it lost) and deregisters it afterwards.
    tables.push_back({"Heartbeat",
                      [] {
                        v1::HeartbeatRequest heartbeat;
                        heartbeat.set_worker(RegisterFakeWorker());
                        return Copy(heartbeat);
                      },
                      UnaryCall(workers(), &v1::WorkerService::Stub::Heartbeat)});

    tables.push_back({"AcquireProbe",
                      [] {
                        v1::AcquireProbeRequest acquire;
                        acquire.set_worker(RegisterFakeWorker());
                        acquire.set_wait_seconds(0.01);
                        return Copy(acquire);
                      },
                      UnaryCall(workers(), &v1::WorkerService::Stub::AcquireProbe)});

    // No probe is leased to the fake worker: a well-formed report is refused as not leased.
    tables.push_back({"ReportProbe",
                      [] {
                        v1::ReportProbeRequest report;
                        report.set_worker(RegisterFakeWorker());
                        report.set_probe("searches/987654/candidates/0/probes/1");
                        report.mutable_result()->set_outcome(v1::PROBE_INFRA_ERROR);
                        report.mutable_result()->set_message("e2e bad input");
                        return Copy(report);
                      },
                      UnaryCall(workers(), &v1::WorkerService::Stub::ReportProbe),
                      grpc::StatusCode::FAILED_PRECONDITION});

    tables.push_back({"Rendezvous",
                      [] {
                        v1::RendezvousRequest rendezvous;
                        rendezvous.set_worker(RegisterFakeWorker());
                        rendezvous.set_probe("searches/987654/candidates/0/probes/1");
                        return Copy(rendezvous);
                      },
                      UnaryCall(workers(), &v1::WorkerService::Stub::Rendezvous),
                      grpc::StatusCode::FAILED_PRECONDITION});

    tables.push_back({"DeregisterWorker",
                      [] {
                        auto request = std::make_unique<v1::DeregisterWorkerRequest>();
                        request->set_worker(RegisterFakeWorker());
                        request->set_reason("e2e bad input");
                        return request;
                      },
                      UnaryCall(workers(), &v1::WorkerService::Stub::DeregisterWorker)});
    return tables;
  }
};

int ExpectedCode(const RpcTable& table, const FieldPath& path, BadValue value) {
  const FieldDescriptor& field = *path.back();
  const std::string key =
      absl::StrCat(field.containing_type()->name(), ".", field.name(), " ", BadValueName(value));
  const std::map<std::string, int>& expectations = Expectations();
  auto it = expectations.find(absl::StrCat(table.rpc, " ", key));
  if (it == expectations.end()) it = expectations.find(key);
  if (it != expectations.end()) {
    return it->second == kLegal ? static_cast<int>(table.base_code) : it->second;
  }
  // ran_on is the server's to set: whatever a worker sends there is ignored.
  if (path.front()->name() == "result" && path.size() > 1 && path[1]->name() == "ran_on") {
    return table.base_code;
  }
  // Without a leased probe, the lease check answers before the result is read: its fields
  // get the unmodified request's code.
  if (table.rpc == "ReportProbe" && path.front()->name() == "result") return table.base_code;
  return value == BadValue::kForgedName ? grpc::StatusCode::NOT_FOUND
                                        : grpc::StatusCode::INVALID_ARGUMENT;
}

TEST_F(E2eBadInputTableTest, EveryFieldOfEveryRpcRefusesBadValues) {
  const std::string ended_search = EndedSearch();
  std::map<std::string, int> cases_per_rpc;
  int total = 0;
  for (const RpcTable& table : Tables(ended_search)) {
    {
      std::unique_ptr<Message> base = table.base();
      const grpc::Status status = table.call(*base);
      EXPECT_EQ(status.error_code(), table.base_code)
          << table.rpc << " with its valid request: " << status.error_message();
      if (const std::string worker = WorkerOf(*base); !worker.empty()) Deregister(worker);
    }
    std::vector<FieldPath> fields;
    FieldPath prefix;
    CollectFields(*table.base()->GetDescriptor(), prefix, 0, fields);
    int& count = cases_per_rpc[table.rpc];
    for (const FieldPath& path : fields) {
      for (BadValue value : BadValuesOf(*path.back())) {
        std::unique_ptr<Message> request = table.base();
        const std::string worker = WorkerOf(*request);
        const std::string text = SetBadValue(*request, path, value);
        const int expected = ExpectedCode(table, path, value);
        const grpc::Status status = table.call(*request);
        ++count;
        ++total;
        EXPECT_EQ(static_cast<int>(status.error_code()), expected)
            << table.rpc << " " << PathText(path) << " = " << text << " (" << BadValueName(value)
            << "): got code " << status.error_code() << " \""
            << status.error_message().substr(0, 200) << "\", expected " << expected;
        if (expected == grpc::StatusCode::INVALID_ARGUMENT &&
            status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
          EXPECT_THAT(status.error_message(), HasSubstr(NamedField(path, value)))
              << table.rpc << " " << PathText(path) << " = " << text.substr(0, 80);
        }
        if (status.ok() && table.after_ok) table.after_ok(*request);
        if (!worker.empty()) Deregister(worker);
        v1::ListWorkersResponse listed;
        const grpc::Status alive = autotuner().ListWorkers(ContextWithTimeout(kRpcTimeout).get(),
                                                           v1::ListWorkersRequest(), &listed);
        ASSERT_TRUE(alive.ok()) << "server stopped answering after " << table.rpc << " "
                                << PathText(path) << " = " << text << ": " << alive.error_message();
      }
    }
  }
  std::vector<std::string> counts;
  for (const auto& [rpc, count] : cases_per_rpc) counts.push_back(absl::StrCat(rpc, " ", count));
  std::printf("bad-input cases: %d in all (%s)\n", total, absl::StrJoin(counts, ", ").c_str());
  RecordProperty("bad_input_cases", total);
}

// The field at `path` as the server's messages name it when it holds `value`, elements of
// repeated fields by index 0 ("result.measurements.phases[0].seconds"), but a list whose
// count is bad by its name ("result.measured").
std::string FieldText(const FieldPath& path, BadValue value) {
  std::vector<std::string> names;
  for (const FieldDescriptor* field : path) {
    const bool element =
        field->is_repeated() && !(field == path.back() && value == BadValue::kManyEntries);
    names.push_back(element ? absl::StrCat(field->name(), "[0]") : field->name());
  }
  return absl::StrJoin(names, ".");
}

// What the tests below report for the search's probes (backend replay): a complete result
// (test_probe_result.h) of that backend.
v1::ProbeResult ReplayedResult() {
  v1::ProbeResult result = CompleteProbeResult();
  result.set_backend("replay");
  return result;
}

// ReportProbe's result is read only for a probe leased to the reporting worker, so this half
// holds a real lease: every field of a complete ProbeResult gets each bad value, and the report
// must be INVALID_ARGUMENT naming the field and the value, or, where the value is allowed
// (Expectations), accepted. A refused report must leave the lease as it was; an accepted one
// ends it, and the next case leases the next probe. Then reports that break what an OK result
// must agree on, reports from a worker outside the lease and for forged probes, and finally
// the good result, which the lease must still take.
TEST_F(E2eBadInputTableTest, EveryResultFieldOfALeasedProbeIsChecked) {
  // 99 candidates, each a probe of all 8 GPUs of one fake worker.
  v1::CreateSearchRequest create = SmallSimSearch(/*top_k=*/99);
  create.mutable_spec()->mutable_probe()->set_backend("replay");
  create.mutable_spec()->mutable_probe()->set_deadline_seconds(3600);
  v1::Search search;
  ASSERT_TRUE(Create(create, &search).ok());
  Lease lease{search.name(), RegisterFakeWorker(), ""};
  const absl::Cleanup cleanup = [&] {
    CancelIfRunning(create, lease.search);
    Deregister(lease.worker);
  };
  ASSERT_TRUE(AcquireNext(lease)) << "no probe of " << lease.search << " was leased";

  const FieldDescriptor* result_field =
      v1::ReportProbeRequest::descriptor()->FindFieldByName("result");
  std::vector<FieldPath> fields;
  FieldPath prefix = {result_field};
  CollectFields(*result_field->message_type(), prefix, 1, fields);
  RpcTable leased;
  leased.rpc = "ReportProbe under a lease";
  int cases = 0;
  int accepted = 0;
  for (const FieldPath& path : fields) {
    for (BadValue value : BadValuesOf(*path.back())) {
      v1::ReportProbeRequest request;
      *request.mutable_result() = ReplayedResult();
      const std::string text = SetBadValue(request, path, value);
      const std::string described = absl::StrCat(FieldText(path, value), " = ", text.substr(0, 100),
                                                 " (", BadValueName(value), ")");
      const int expected = ExpectedCode(leased, path, value);
      const grpc::Status status = Report(lease.worker, lease.probe, request.result());
      ++cases;
      EXPECT_EQ(static_cast<int>(status.error_code()), expected)
          << described << ": " << status.error_message();
      if (expected == grpc::StatusCode::INVALID_ARGUMENT) {
        EXPECT_THAT(status.error_message(), HasSubstr(FieldText(path, value) + " (")) << described;
        EXPECT_THAT(status.error_message(), HasSubstr(text)) << described;
      }
      if (status.ok()) {
        ++accepted;
        ASSERT_TRUE(AcquireNext(lease)) << "no probe left after " << accepted << " accepted";
      } else {
        ASSERT_TRUE(StillLeased(lease)) << "the refused " << described << " ended the lease";
      }
    }
  }

  // Lists over their limits, OK results whose parts disagree, and results that no leased GPU
  // or backend could produce (an H100-80GB worker's 85,520,809,984 bytes, its 989 TFLOP/s dense
  // bf16 peak, backend replay).
  const struct {
    std::string what;
    std::function<void(v1::ProbeResult&)> spoil;
    std::string message;
  } inconsistent[] = {
      {"a series one step short",
       [](v1::ProbeResult& r) {
         r.mutable_short_steps(1)->mutable_step_times_seconds()->RemoveLast();
       },
       "result.short_steps[1].step_times_seconds (1 values) must have as many values as "
       "result.step_times_seconds (2)"},
      {"a full step more than each series",
       [](v1::ProbeResult& r) { r.add_step_times_seconds(1.0); },
       "result.short_steps[0].step_times_seconds (2 values)"},
      {"descending series",
       [](v1::ProbeResult& r) { r.mutable_short_steps(1)->set_micro_batches(4); },
       "result.short_steps[1].micro_batches (4) must be in [9, 31]"},
      {"a series of the full step",
       [](v1::ProbeResult& r) { r.mutable_short_steps(1)->set_micro_batches(32); },
       "result.short_steps[1].micro_batches (32)"},
      {"one series", [](v1::ProbeResult& r) { r.mutable_short_steps()->RemoveLast(); },
       "result.short_steps (1 series)"},
      {"no extrapolation", [](v1::ProbeResult& r) { r.clear_extrapolation(); },
       "result.extrapolation (unset)"},
      {"no step times", [](v1::ProbeResult& r) { r.clear_step_times_seconds(); },
       "result.step_times_seconds (none)"},
      {"10,001 step times",
       [](v1::ProbeResult& r) {
         for (int i = 0; i < 9'999; ++i) r.add_step_times_seconds(1.0);
       },
       "result.step_times_seconds (10001 entries) must have at most 10000"},
      {"65 phases",
       [](v1::ProbeResult& r) {
         for (int i = 0; i < 64; ++i)
           *r.mutable_measurements()->add_phases() = r.measurements().phases(0);
       },
       "result.measurements.phases (65 entries) must have at most 64"},
      {"50,000 TFLOP/s per GPU on an H100",
       [](v1::ProbeResult& r) { r.set_model_tflops_per_gpu(50'000); },
       "result.model_tflops_per_gpu (50000) must be at most 1008.78: the dense bf16 peak of "
       "h100-80gb (989 TFLOP/s) + 2%"},
      {"200 GB of peak memory on an 80 GB GPU",
       [](v1::ProbeResult& r) { r.set_peak_memory_bytes(200'000'000'000); },
       "result.peak_memory_bytes (200000000000) must be at most 86376018083: the 85520809984 "
       "bytes per GPU that workers/"},
      {"a cuda result for a replay lease", [](v1::ProbeResult& r) { r.set_backend("cuda"); },
       "result.backend (\"cuda\") must be the backend the probe was leased with, \"replay\""},
      {"a replayed result marked simulated", [](v1::ProbeResult& r) { r.set_simulated(true); },
       "result.simulated (true) contradicts result.backend (\"replay\"): only the sim "
       "backend's results are simulated"},
      {"a mean step time 1,000 times below its step times",
       [](v1::ProbeResult& r) { r.set_mean_step_time_seconds(0.00105); },
       "result.mean_step_time_seconds (0.00105) must be within 1% of the mean of "
       "result.step_times_seconds (1.05)"},
  };
  for (const auto& c : inconsistent) {
    v1::ProbeResult result = ReplayedResult();
    c.spoil(result);
    const grpc::Status status = Report(lease.worker, lease.probe, result);
    ++cases;
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.what;
    EXPECT_THAT(status.error_message(), HasSubstr(c.message)) << c.what;
    ASSERT_TRUE(StillLeased(lease)) << "the refused report of " << c.what << " ended the lease";
  }

  // Not the worker's probe: FAILED_PRECONDITION, and the lease stays.
  const std::string other_worker = RegisterFakeWorker();
  const std::string next_attempt =
      absl::StrCat(lease.probe.substr(0, lease.probe.rfind('/') + 1),
                   std::stoll(lease.probe.substr(lease.probe.rfind('/') + 1)) + 1);
  const struct {
    std::string what;
    std::string worker;
    std::string probe;
  } not_leased[] = {
      {"a worker outside the lease", other_worker, lease.probe},
      {"the next attempt of the leased probe", lease.worker, next_attempt},
      {"a probe of an ended search", lease.worker,
       absl::StrCat(EndedSearch(), "/candidates/0/probes/1")},
  };
  for (const auto& c : not_leased) {
    const grpc::Status status = Report(c.worker, c.probe, ReplayedResult());
    ++cases;
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
        << c.what << ": " << status.error_message();
    ASSERT_TRUE(StillLeased(lease)) << "the report for " << c.what << " ended the lease";
  }
  Deregister(other_worker);

  // Nothing a refused report sent was kept, and the lease still takes a correct report: the
  // good result is recorded as sent, where the server says it ran.
  const grpc::Status status = Report(lease.worker, lease.probe, ReplayedResult());
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::GetSearchRequest get;
  get.set_name(lease.search);
  v1::Search probed;
  ASSERT_TRUE(autotuner().GetSearch(ContextWithTimeout(kRpcTimeout).get(), get, &probed).ok());
  const std::string candidate = lease.probe.substr(0, lease.probe.find("/probes/"));
  const auto it = std::find_if(probed.candidates().begin(), probed.candidates().end(),
                               [&](const v1::Candidate& c) { return c.name() == candidate; });
  ASSERT_NE(it, probed.candidates().end()) << candidate;
  EXPECT_EQ(it->state(), v1::CANDIDATE_PROBED);
  v1::ProbeResult expected = ReplayedResult();
  expected.clear_ran_on();
  v1::ProbeResult recorded = it->probe_result();
  ASSERT_EQ(recorded.ran_on_size(), 1);
  EXPECT_EQ(recorded.ran_on(0).worker(), lease.worker);
  recorded.clear_ran_on();
  EXPECT_EQ(recorded.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(probed.counts().succeeded(), accepted + 1);

  std::printf("bad-result cases under a lease: %d (%d accepted, each on a new lease)\n", cases,
              accepted);
  RecordProperty("bad_result_cases", cases);
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!paratune::SetTestBinaries(argc, argv)) {
    std::fprintf(stderr, "usage: e2e_bad_input_test PARATUNE_SERVER PARATUNE_WORKER\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
