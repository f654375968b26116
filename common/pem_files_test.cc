#include "common/pem_files.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <string>

#include "common/small_file.h"
#include "common/test_certificates.h"
#include "common/test_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Read(const std::string& path) { return ReadSmallFile(path, 1 << 20).value(); }

using PemFilesTest = CertificatesTest;

TEST_F(PemFilesTest, ReadsACaFile) {
  absl::StatusOr<std::string> ca = ReadCaCertificates("tls_ca", certs().ca_cert);
  ASSERT_TRUE(ca.ok()) << ca.status();
  EXPECT_EQ(*ca, Read(certs().ca_cert));
}

TEST_F(PemFilesTest, ReadsACaBundle) {
  const std::string bundle =
      WriteTestFile("bundle.crt", Read(certs().ca_cert) + Read(certs().client_cert));
  EXPECT_TRUE(ReadCaCertificates("tls_ca", bundle).ok());
}

TEST_F(PemFilesTest, MissingCaFileNamesTheOptionAndPath) {
  const absl::Status status = ReadCaCertificates("tls_ca", TestFilePath("missing.crt")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("tls_ca: "));
  EXPECT_THAT(status.message(), HasSubstr(TestFilePath("missing.crt")));
}

TEST_F(PemFilesTest, CaFileWithoutACertificateIsRefused) {
  const absl::Status status = ReadCaCertificates("tls_client_ca", certs().client_key).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tls_client_ca (\"" + certs().client_key + "\")"));
  EXPECT_THAT(status.message(), HasSubstr("holds no PEM certificate"));
}

TEST_F(PemFilesTest, MalformedCertificateIsRefused) {
  const std::string path =
      WriteTestFile("malformed.crt", Read(certs().ca_cert) +
                                         "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n"
                                         "-----END CERTIFICATE-----\n");
  const absl::Status status = ReadCaCertificates("tls_ca", path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("certificate 2 is malformed"));
}

TEST_F(PemFilesTest, ReadsACertificateAndItsKey) {
  absl::StatusOr<std::optional<CertificateKeyPair>> pair =
      ReadCertificateKeyPair("tls_cert", certs().server_cert, "tls_key", certs().server_key);
  ASSERT_TRUE(pair.ok()) << pair.status();
  ASSERT_TRUE(pair->has_value());
  EXPECT_EQ((*pair)->certificate_chain, Read(certs().server_cert));
  EXPECT_EQ((*pair)->private_key, Read(certs().server_key));
}

TEST_F(PemFilesTest, NeitherPathIsNoPair) {
  absl::StatusOr<std::optional<CertificateKeyPair>> pair =
      ReadCertificateKeyPair("tls_cert", "", "tls_key", "");
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_FALSE(pair->has_value());
}

TEST_F(PemFilesTest, OnePathWithoutTheOtherIsRefused) {
  for (const auto& [cert, key] :
       {std::pair<std::string, std::string>{certs().server_cert, ""}, {"", certs().server_key}}) {
    const absl::Status status = ReadCertificateKeyPair("tls_cert", cert, "tls_key", key).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("go together"));
  }
}

TEST_F(PemFilesTest, ExpiredCertificateIsRefused) {
  const absl::Status status =
      ReadCertificateKeyPair("tls_cert", certs().expired_server_cert, "tls_key", certs().server_key)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tls_cert (\"" + certs().expired_server_cert + "\")"));
  EXPECT_THAT(status.message(), HasSubstr("CN=localhost expired on"));
}

TEST_F(PemFilesTest, KeyOfAnotherCertificateIsRefused) {
  const absl::Status status =
      ReadCertificateKeyPair("tls_cert", certs().server_cert, "tls_key", certs().client_key)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tls_key (\"" + certs().client_key +
                                          "\") is not the private key of the certificate in "
                                          "tls_cert"));
  EXPECT_THAT(status.message(), Not(HasSubstr("PRIVATE KEY")));
}

TEST_F(PemFilesTest, KeyFileWithoutAKeyIsRefused) {
  const absl::Status status =
      ReadCertificateKeyPair("tls_cert", certs().server_cert, "tls_key", certs().server_cert)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("holds no PEM private key"));
}

TEST_F(PemFilesTest, EncryptedKeyIsRefused) {
  // The server's key, encrypted with a passphrase.
  const std::string plain = Read(certs().server_key);
  std::unique_ptr<BIO, decltype(&BIO_free)> in(
      BIO_new_mem_buf(plain.data(), static_cast<int>(plain.size())), &BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  ASSERT_NE(key, nullptr);
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), &BIO_free);
  char passphrase[] = "secret";
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(out.get(), key.get(), EVP_aes_256_cbc(), passphrase,
                                          sizeof(passphrase) - 1, nullptr, nullptr),
            1);
  char* data = nullptr;
  const long size = BIO_get_mem_data(out.get(), &data);
  const std::string encrypted = WriteTestFile("encrypted.key", std::string(data, size));

  const absl::Status status =
      ReadCertificateKeyPair("tls_cert", certs().server_cert, "tls_key", encrypted).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("or an encrypted one"));
}

TEST_F(PemFilesTest, MissingKeyFileNamesTheOption) {
  const absl::Status status = ReadCertificateKeyPair("tls_cert", certs().server_cert, "tls_key",
                                                     TestFilePath("missing.key"))
                                  .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("tls_key: " + TestFilePath("missing.key")));
}

}  // namespace
}  // namespace paratune
