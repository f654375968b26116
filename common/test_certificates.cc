#include "common/test_certificates.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "common/test_file.h"

namespace paratune {
namespace {

absl::Status RunOpenssl(std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  SubprocessOptions options;
  options.argv = args;
  options.timeout = absl::Seconds(60);
  const absl::Notification never_cancelled;
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options, never_cancelled);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat(result.status().message(),
                                     " (the openssl command, from Debian's openssl package)"));
  }
  if (result->ending != SubprocessResult::Ending::kExited || result->exit_code != 0) {
    return absl::InternalError(absl::StrCat(absl::StrJoin(args, " "), " ",
                                            DescribeEnding(*result, options.timeout), ": ",
                                            result->stderr_tail));
  }
  return absl::OkStatus();
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return absl::InternalError(absl::StrCat("cannot write ", path));
  const bool written = std::fputs(text.c_str(), file) >= 0;
  if (std::fclose(file) != 0 || !written) {
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

// A new P-256 key in `key` and a self-signed CA certificate for it in `cert`.
absl::Status MakeCa(const std::string& cert, const std::string& key, const std::string& name) {
  return RunOpenssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                     "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj",
                     absl::StrCat("/CN=", name), "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign"});
}

// A certificate for `csr` signed by the CA, valid for `days` (negative: expired), with the
// extensions of file `extensions`.
absl::Status Sign(const std::string& csr, const std::string& ca_cert, const std::string& ca_key,
                  const std::string& extensions, int days, const std::string& cert) {
  return RunOpenssl({"x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-days",
                     absl::StrCat(days), "-extfile", extensions, "-out", cert});
}

// A new key in `key` and a request for a certificate of `name` in `csr`.
absl::Status MakeRequest(const std::string& csr, const std::string& key, const std::string& name) {
  return RunOpenssl({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                     "-nodes", "-keyout", key, "-out", csr, "-subj", absl::StrCat("/CN=", name)});
}

}  // namespace

absl::StatusOr<TestCertificates> MakeTestCertificates(const std::string& directory) {
  if (mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot make ", directory));
  }
  auto file = [&directory](const std::string& name) { return absl::StrCat(directory, "/", name); };
  TestCertificates certificates;
  certificates.ca_cert = file("ca.crt");
  certificates.server_cert = file("server.crt");
  certificates.server_key = file("server.key");
  certificates.client_cert = file("client.crt");
  certificates.client_key = file("client.key");
  certificates.node_cert = file("node.crt");
  certificates.node_key = file("node.key");
  certificates.untrusted_client_cert = file("untrusted-client.crt");
  certificates.untrusted_client_key = file("untrusted-client.key");
  certificates.expired_server_cert = file("expired-server.crt");
  certificates.renewed_server_cert = file("renewed-server.crt");
  certificates.renewed_server_key = file("renewed-server.key");
  const std::string ca_key = file("ca.key");
  const std::string other_ca_cert = file("other-ca.crt");
  const std::string other_ca_key = file("other-ca.key");
  const std::string server_extensions = file("server.ext");
  const std::string client_extensions = file("client.ext");

  PT_RETURN_IF_ERROR(WriteText(server_extensions,
                               "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                               "extendedKeyUsage=serverAuth\n"));
  PT_RETURN_IF_ERROR(WriteText(client_extensions, "extendedKeyUsage=clientAuth\n"));
  PT_RETURN_IF_ERROR(MakeCa(certificates.ca_cert, ca_key, "paratune test CA"));
  PT_RETURN_IF_ERROR(MakeCa(other_ca_cert, other_ca_key, "another test CA"));
  PT_RETURN_IF_ERROR(MakeRequest(file("server.csr"), certificates.server_key, "localhost"));
  PT_RETURN_IF_ERROR(Sign(file("server.csr"), certificates.ca_cert, ca_key, server_extensions, 1,
                          certificates.server_cert));
  PT_RETURN_IF_ERROR(Sign(file("server.csr"), certificates.ca_cert, ca_key, server_extensions, -1,
                          certificates.expired_server_cert));
  PT_RETURN_IF_ERROR(
      MakeRequest(file("renewed-server.csr"), certificates.renewed_server_key, "localhost"));
  PT_RETURN_IF_ERROR(Sign(file("renewed-server.csr"), certificates.ca_cert, ca_key,
                          server_extensions, 1, certificates.renewed_server_cert));
  PT_RETURN_IF_ERROR(MakeRequest(file("client.csr"), certificates.client_key, "paratune-worker"));
  PT_RETURN_IF_ERROR(Sign(file("client.csr"), certificates.ca_cert, ca_key, client_extensions, 1,
                          certificates.client_cert));
  PT_RETURN_IF_ERROR(MakeRequest(file("node.csr"), certificates.node_key, "paratune-node"));
  PT_RETURN_IF_ERROR(Sign(file("node.csr"), certificates.ca_cert, ca_key, client_extensions, 1,
                          certificates.node_cert));
  PT_RETURN_IF_ERROR(
      MakeRequest(file("untrusted.csr"), certificates.untrusted_client_key, "intruder"));
  PT_RETURN_IF_ERROR(Sign(file("untrusted.csr"), other_ca_cert, other_ca_key, client_extensions, 1,
                          certificates.untrusted_client_cert));
  return certificates;
}

const absl::StatusOr<TestCertificates>& SharedTestCertificates() {
  static const auto* const certificates =
      new absl::StatusOr<TestCertificates>(MakeTestCertificates(TestFilePath("certificates")));
  return *certificates;
}

void CertificatesTest::SetUp() {
  ASSERT_TRUE(SharedTestCertificates().ok()) << SharedTestCertificates().status();
}

}  // namespace paratune
