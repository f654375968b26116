// The TLS side of paratune-server's credentials (DESIGN.md §11): its certificate chain and key,
// and the CA its clients' certificates must be signed by (mutual TLS), as gRPC TLS credentials
// whose certificates a reload replaces for new handshakes while open connections go on.
//
// gRPC 1.51 offers two certificate providers: static data, never replaced, and
// FileWatcherCertificateProvider, which reads files again every interval. Pointed at the
// operator's files, the watcher would serve whatever it reads: a key and certificate caught
// between two writes, or a malformed file, make every new handshake fail until the files are
// fixed, and the application hears nothing of it. So the files are read and checked here
// first (common/pem_files.h), and only a pair that passes is handed to gRPC: the watcher
// watches an anonymous in-memory file (memfd, /proc/self/fd/N) holding the chain and the key
// together, which Reload replaces in one step (dup3), and likewise the client CA. A failed
// Reload changes nothing, and no copy of the key is written to disk.
#ifndef PARATUNE_SERVER_SECURITY_SERVER_CERTIFICATES_H_
#define PARATUNE_SERVER_SECURITY_SERVER_CERTIFICATES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"

namespace paratune {

// Thread-safe.
class ServerCertificates {
 public:
  // Paths of PEM files, each named like the flag that sets it.
  struct Files {
    // The server's certificate chain (leaf first) and its private key; both required.
    std::string tls_cert;
    std::string tls_key;
    // The CA of the client certificates to require and verify; empty requires none.
    std::string tls_client_ca;
  };

  // How often gRPC looks at the in-memory files: a reloaded certificate is presented to new
  // handshakes within this time (gRPC's watcher counts whole seconds).
  static constexpr int kRefreshSeconds = 1;

  // Reads and checks the files. The errors of ReadCertificateKeyPair and ReadCaCertificates,
  // which name the flag and the file; INTERNAL when the in-memory copy cannot be made.
  static absl::StatusOr<std::unique_ptr<ServerCertificates>> Load(Files files);

  ServerCertificates(const ServerCertificates&) = delete;
  ServerCertificates& operator=(const ServerCertificates&) = delete;
  ~ServerCertificates();

  // Server credentials presenting the current certificate; with a client CA they require a
  // client certificate it signed. This object must outlive every server using them: gRPC
  // reads its in-memory files for as long as the server lives.
  std::shared_ptr<grpc::ServerCredentials> Credentials() const;

  // Whether clients must present a certificate (Files::tls_client_ca is set).
  bool verifies_clients() const { return !files_.tls_client_ca.empty(); }

  // Reads and checks the files again; once it returns OK, new handshakes present the new
  // certificate and verify clients against the new CA within kRefreshSeconds. Open connections
  // keep what they were established with. Load's errors, leaving the current certificates in
  // force.
  absl::Status Reload() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The version of the files Load makes.
  static constexpr int64_t kFirstVersion = 1;

  ServerCertificates(Files files, int identity_file, int client_ca_file);

  const Files files_;
  // Descriptors of the in-memory files; fixed, since the watcher knows them by number.
  const int identity_file_;
  // -1 without a client CA.
  const int client_ca_file_;
  std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> provider_;
  absl::Mutex mu_;
  // Each version of the in-memory files has its own modification time (this many seconds
  // after the epoch): gRPC retries a read during which the time changed, so it never pairs
  // one version's key with another's certificate.
  int64_t version_ ABSL_GUARDED_BY(mu_) = kFirstVersion;
};

}  // namespace paratune

#endif  // PARATUNE_SERVER_SECURITY_SERVER_CERTIFICATES_H_
