// A paratune-server and paratune-worker processes on loopback for one end-to-end test, and
// a client of the Autotuner API. The binaries come from the test's command line.
#ifndef PARATUNE_TESTS_TEST_CLUSTER_H_
#define PARATUNE_TESTS_TEST_CLUSTER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "proto/autotuner_service.grpc.pb.h"
#include "proto/worker.pb.h"
#include "server/core/test_requests.h"
#include "tests/process_harness.h"

namespace paratune {

// Reads the binaries' paths from a test main's arguments: argv[1] is paratune-server and
// argv[2] paratune-worker (BUILD passes $(rootpath ...)). Returns false when missing.
bool SetTestBinaries(int argc, char** argv);

// A client context whose deadline is `timeout` from now.
std::unique_ptr<grpc::ClientContext> ContextWithTimeout(absl::Duration timeout);

// Thread-compatible. Destruction ends the workers, then the server.
class TestCluster {
 public:
  struct Options {
    // Every process serves /metrics on 127.0.0.1:0; see metrics_ports().
    bool serve_metrics = false;
    // The server's --db; a file survives KillServer and RestartServer.
    std::string db_path = ":memory:";
    // More paratune-server flags, e.g. --launcher=slurm or --tls_cert.
    std::vector<std::string> server_flags;
    // The credentials of autotuner(), this cluster's own client (LoadClientCredentials);
    // plaintext when null.
    std::shared_ptr<grpc::ChannelCredentials> client_credentials;
  };

  // Starts the server on 127.0.0.1:0 (port file in TEST_TMPDIR) and one worker per entry of
  // `worker_flags` (extra flags; --server is added), then waits until every worker has
  // registered. Each step is bounded; errors say which process failed.
  static absl::StatusOr<std::unique_ptr<TestCluster>> Start(
      const std::vector<std::vector<std::string>>& worker_flags, const Options& options);
  static absl::StatusOr<std::unique_ptr<TestCluster>> Start(
      const std::vector<std::vector<std::string>>& worker_flags) {
    return Start(worker_flags, Options());
  }

  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;
  ~TestCluster();

  v1::Autotuner::Stub& autotuner() { return *autotuner_; }
  const std::string& address() const { return address_; }
  // With serve_metrics: the server's metrics port, then each worker's, in start order.
  const std::vector<int>& metrics_ports() const { return metrics_ports_; }

  // Follows the search with WatchSearch until the stream ends (at most `timeout`); returns
  // every message received. The stream's error when it does not finish OK.
  absl::StatusOr<std::vector<v1::WatchSearchResponse>> Watch(const std::string& name,
                                                             absl::Duration timeout);

  // kill -9 of the server, then of worker `index` (in start order).
  void KillServer();
  void KillWorker(size_t index);
  // Starts the server again on the same address and database, as an operator restarting it
  // after a crash would. Errors say why it did not come up.
  absl::Status RestartServer();

  // The Autotuner calls; each returns the call's error.
  absl::StatusOr<v1::Search> CreateSearch(const v1::CreateSearchRequest& request);
  absl::StatusOr<v1::Search> GetSearch(const std::string& name);
  absl::StatusOr<std::vector<v1::Worker>> ListWorkers();
  // Every event of the search, all pages, oldest first.
  absl::StatusOr<std::vector<v1::SearchEvent>> Events(const std::string& name);
  // Polls GetSearch until `done(search)` or `timeout` passes (DEADLINE_EXCEEDED naming the
  // last search seen); survives the server being down meanwhile.
  absl::StatusOr<v1::Search> WaitForSearch(const std::string& name,
                                           const std::function<bool(const v1::Search&)>& done,
                                           absl::Duration timeout);
  // WaitForSearch until the search has ended.
  absl::StatusOr<v1::Search> WaitUntilEnded(const std::string& name, absl::Duration timeout);

  // Creates the search, follows it to its end (Watch, at most `timeout`) and returns its
  // final state; `events`, when given, receives what Watch received. FAILED_PRECONDITION
  // when the created search is not PROBING; the failing call's error otherwise.
  absl::StatusOr<v1::Search> RunSearch(const v1::CreateSearchRequest& request,
                                       absl::Duration timeout,
                                       std::vector<v1::WatchSearchResponse>* events = nullptr);

 private:
  TestCluster() = default;

  std::unique_ptr<ChildProcess> server_;
  // The server's command line and port file, for RestartServer.
  std::vector<std::string> server_argv_;
  std::string server_port_file_;
  std::vector<std::unique_ptr<ChildProcess>> workers_;
  std::string address_;
  std::vector<int> metrics_ports_;
  std::unique_ptr<v1::Autotuner::Stub> autotuner_;
};

}  // namespace paratune

#endif  // PARATUNE_TESTS_TEST_CLUSTER_H_
