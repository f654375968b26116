// Throwaway certificates for tests of TLS and mutual TLS, made at test time with the openssl
// command (Debian's openssl package; scripts/setup.sh installs it) so that no key is ever
// committed: a CA, a server certificate for localhost and 127.0.0.1 and two client
// certificates signed by it, a renewal of the server certificate, and a client certificate
// signed by a second CA that the first does not know.
// P-256 keys, valid for a day.
#ifndef PARATUNE_COMMON_TEST_CERTIFICATES_H_
#define PARATUNE_COMMON_TEST_CERTIFICATES_H_

#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace paratune {

// Paths of PEM files.
struct TestCertificates {
  std::string ca_cert;
  std::string server_cert;
  std::string server_key;
  std::string client_cert;
  std::string client_key;
  // Another client, signed by ca_cert (CN paratune-node): a certificate to bind to a principal
  // while client_cert stays unbound.
  std::string node_cert;
  std::string node_key;
  // Signed by another CA: a server that trusts ca_cert refuses it.
  std::string untrusted_client_cert;
  std::string untrusted_client_key;
  // The server's key and name, signed by ca_cert, but expired a day before it was made.
  std::string expired_server_cert;
  // A new key and certificate for the server's names, signed by ca_cert: a renewal.
  std::string renewed_server_cert;
  std::string renewed_server_key;
};

// Writes the files into `directory`, made if missing. NOT_FOUND when openssl is missing;
// INTERNAL with openssl's output when a step fails.
absl::StatusOr<TestCertificates> MakeTestCertificates(const std::string& directory);

// MakeTestCertificates(TestFilePath("certificates")) on the first call; the same result on
// every later call in the test process, so that its tests share one set.
const absl::StatusOr<TestCertificates>& SharedTestCertificates();

// A fixture whose tests use the shared certificates, and fail at once when they could not be
// made.
class CertificatesTest : public ::testing::Test {
 protected:
  void SetUp() override;
  static const TestCertificates& certs() { return *SharedTestCertificates(); }
};

}  // namespace paratune

#endif  // PARATUNE_COMMON_TEST_CERTIFICATES_H_
