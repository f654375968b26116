#include "server/security/server_certificates.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/pem_files.h"
#include "common/status_macros.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace paratune {
namespace {

// The PEM text the watcher reads: the identity file holds the chain and the key, which gRPC
// reads as two files from one path.
struct CheckedFiles {
  std::string identity;
  std::string client_ca;
};

absl::StatusOr<CheckedFiles> ReadAndCheck(const ServerCertificates::Files& files) {
  PT_ASSIGN_OR_RETURN(std::optional<CertificateKeyPair> pair,
                      ReadCertificateKeyPair("tls_cert", files.tls_cert, "tls_key", files.tls_key));
  if (!pair.has_value()) {
    return absl::InvalidArgumentError("tls_cert and tls_key are empty: TLS needs both");
  }
  CheckedFiles checked;
  checked.identity = absl::StrCat(pair->certificate_chain, "\n", pair->private_key);
  if (!files.tls_client_ca.empty()) {
    PT_ASSIGN_OR_RETURN(checked.client_ca,
                        ReadCaCertificates("tls_client_ca", files.tls_client_ca));
  }
  return checked;
}

// INTERNAL "cannot WHAT an in-memory TLS file: <errno's text>".
absl::Status SystemError(absl::string_view what, int error) {
  return absl::InternalError(
      absl::StrCat("cannot ", what, " an in-memory TLS file: ", std::strerror(error)));
}

// A new anonymous in-memory file holding `text`, modified `version` seconds after the epoch;
// closed on exec, so that no child process inherits the key. SystemError's errors.
absl::StatusOr<int> NewMemoryFile(absl::string_view text, int64_t version) {
  const int file = memfd_create("paratune-tls", MFD_CLOEXEC);
  if (file < 0) return SystemError("create", errno);
  auto fail = [file](absl::string_view what) {
    const int error = errno;
    close(file);
    return SystemError(what, error);
  };
  for (size_t written = 0; written < text.size();) {
    const ssize_t n = write(file, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("write");
    written += static_cast<size_t>(n);
  }
  const timespec modified = {static_cast<time_t>(version), 0};
  const timespec times[2] = {modified, modified};
  if (futimens(file, times) != 0) return fail("date");
  return file;
}

// The descriptors of new in-memory files of CheckedFiles; client_ca is -1 without one.
struct MemoryFiles {
  int identity = -1;
  int client_ca = -1;
};

// New in-memory files of `checked`, the client CA's only `with_client_ca`. NewMemoryFile's
// errors, leaving no file open.
absl::StatusOr<MemoryFiles> NewMemoryFiles(const CheckedFiles& checked, bool with_client_ca,
                                           int64_t version) {
  MemoryFiles files;
  PT_ASSIGN_OR_RETURN(files.identity, NewMemoryFile(checked.identity, version));
  if (with_client_ca) {
    absl::StatusOr<int> client_ca = NewMemoryFile(checked.client_ca, version);
    if (!client_ca.ok()) {
      close(files.identity);
      return client_ca.status();
    }
    files.client_ca = *client_ca;
  }
  return files;
}

// Makes descriptor `fixed` name the file `file` names, and closes `file`: /proc/self/fd/`fixed`
// opens the new file from now on.
absl::Status Replace(int fixed, int file) {
  const bool replaced = dup3(file, fixed, O_CLOEXEC) == fixed;
  const int error = errno;
  close(file);
  return replaced ? absl::OkStatus() : SystemError("replace", error);
}

std::string PathOf(int file) { return absl::StrCat("/proc/self/fd/", file); }

}  // namespace

absl::StatusOr<std::unique_ptr<ServerCertificates>> ServerCertificates::Load(Files files) {
  PT_ASSIGN_OR_RETURN(const CheckedFiles checked, ReadAndCheck(files));
  PT_ASSIGN_OR_RETURN(const MemoryFiles made,
                      NewMemoryFiles(checked, !files.tls_client_ca.empty(), kFirstVersion));
  return std::unique_ptr<ServerCertificates>(
      new ServerCertificates(std::move(files), made.identity, made.client_ca));
}

ServerCertificates::ServerCertificates(Files files, int identity_file, int client_ca_file)
    : files_(std::move(files)), identity_file_(identity_file), client_ca_file_(client_ca_file) {
  // The watcher reads the files once here, so credentials made at once present them.
  provider_ = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      PathOf(identity_file_), PathOf(identity_file_),
      client_ca_file_ < 0 ? std::string() : PathOf(client_ca_file_), kRefreshSeconds);
}

ServerCertificates::~ServerCertificates() {
  provider_.reset();
  close(identity_file_);
  if (client_ca_file_ >= 0) close(client_ca_file_);
}

std::shared_ptr<grpc::ServerCredentials> ServerCertificates::Credentials() const {
  grpc::experimental::TlsServerCredentialsOptions options(provider_);
  options.watch_identity_key_cert_pairs();
  if (verifies_clients()) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

absl::Status ServerCertificates::Reload() {
  PT_ASSIGN_OR_RETURN(const CheckedFiles checked, ReadAndCheck(files_));
  absl::MutexLock lock(&mu_);
  // Both new files are made before either is swapped in, so that a failure changes nothing.
  PT_ASSIGN_OR_RETURN(const MemoryFiles made,
                      NewMemoryFiles(checked, client_ca_file_ >= 0, version_ + 1));
  ++version_;
  const absl::Status identity = Replace(identity_file_, made.identity);
  if (made.client_ca < 0) return identity;
  if (!identity.ok()) {
    close(made.client_ca);
    return identity;
  }
  return Replace(client_ca_file_, made.client_ca);
}

}  // namespace paratune
