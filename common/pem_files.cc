#include "common/pem_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/small_file.h"

namespace paratune {
namespace {

// A CA bundle of every public root is about 200 KiB.
constexpr int64_t kMaxPemFileBytes = 1 << 20;

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Certificate = std::unique_ptr<X509, decltype(&X509_free)>;
using PrivateKey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

// `option ("path")`, how messages name a file.
std::string Where(absl::string_view option, const std::string& path) {
  return absl::StrCat(option, " (\"", path, "\")");
}

// The oldest error OpenSSL queued, in words; clears the queue.
std::string TakeOpensslError() {
  char text[256] = {};
  ERR_error_string_n(ERR_get_error(), text, sizeof(text));
  ERR_clear_error();
  return text;
}

absl::StatusOr<std::string> ReadPemFile(absl::string_view option, const std::string& path) {
  absl::StatusOr<std::string> contents = ReadSmallFile(path, kMaxPemFileBytes);
  if (!contents.ok()) {
    return absl::Status(contents.status().code(),
                        absl::StrCat(option, ": ", contents.status().message()));
  }
  return contents;
}

Bio MemoryBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), &BIO_free);
}

// Every certificate in `pem`, in order; other PEM blocks are skipped. INVALID_ARGUMENT when
// there is none or one is malformed.
absl::StatusOr<std::vector<Certificate>> ParseCertificates(const std::string& where,
                                                           const std::string& pem) {
  Bio bio = MemoryBio(pem);
  std::vector<Certificate> certificates;
  ERR_clear_error();
  while (true) {
    Certificate certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
    if (certificate == nullptr) break;
    certificates.push_back(std::move(certificate));
  }
  // Reading stops with "no start line" at the end of the text; any other error is a block
  // that is not a well-formed certificate.
  const unsigned long error = ERR_peek_last_error();
  if (error != 0 &&
      !(ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": certificate ", certificates.size() + 1,
                                                   " is malformed: ", TakeOpensslError()));
  }
  ERR_clear_error();
  if (certificates.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " holds no PEM certificate (-----BEGIN CERTIFICATE-----)"));
  }
  return certificates;
}

std::string TimeText(const ASN1_TIME* time) {
  Bio bio(BIO_new(BIO_s_mem()), &BIO_free);
  ASN1_TIME_print(bio.get(), time);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

absl::Status CheckValidNow(const std::string& where, X509* certificate) {
  char subject[256] = {};
  X509_NAME_oneline(X509_get_subject_name(certificate), subject, sizeof(subject));
  if (X509_cmp_current_time(X509_get0_notAfter(certificate)) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": the certificate of ", subject,
                                                   " expired on ",
                                                   TimeText(X509_get0_notAfter(certificate))));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(certificate)) > 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": the certificate of ", subject,
                                                   " is not valid before ",
                                                   TimeText(X509_get0_notBefore(certificate))));
  }
  return absl::OkStatus();
}

// OpenSSL's passphrase callback: there is none, so an encrypted key fails to load.
int NoPassphrase(char*, int, int, void*) { return 0; }

}  // namespace

absl::StatusOr<std::string> ReadCaCertificates(absl::string_view option, const std::string& path) {
  absl::StatusOr<std::string> pem = ReadPemFile(option, path);
  if (!pem.ok()) return pem.status();
  if (absl::Status parsed = ParseCertificates(Where(option, path), *pem).status(); !parsed.ok()) {
    return parsed;
  }
  return pem;
}

absl::StatusOr<std::optional<CertificateKeyPair>> ReadCertificateKeyPair(
    absl::string_view certificate_option, const std::string& certificate_path,
    absl::string_view key_option, const std::string& key_path) {
  if (certificate_path.empty() && key_path.empty()) return std::nullopt;
  if (certificate_path.empty() || key_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        certificate_option, " (\"", certificate_path, "\") and ", key_option, " (\"", key_path,
        "\") go together: give both, the certificate and its private key, or neither"));
  }
  const std::string certificate_where = Where(certificate_option, certificate_path);
  const std::string key_where = Where(key_option, key_path);
  CertificateKeyPair pair;
  absl::StatusOr<std::string> chain = ReadPemFile(certificate_option, certificate_path);
  if (!chain.ok()) return chain.status();
  pair.certificate_chain = *std::move(chain);
  absl::StatusOr<std::vector<Certificate>> certificates =
      ParseCertificates(certificate_where, pair.certificate_chain);
  if (!certificates.ok()) return certificates.status();
  X509* leaf = certificates->front().get();
  if (absl::Status valid = CheckValidNow(certificate_where, leaf); !valid.ok()) return valid;

  absl::StatusOr<std::string> key_pem = ReadPemFile(key_option, key_path);
  if (!key_pem.ok()) return key_pem.status();
  pair.private_key = *std::move(key_pem);
  Bio bio = MemoryBio(pair.private_key);
  const PrivateKey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, &NoPassphrase, nullptr),
                       &EVP_PKEY_free);
  ERR_clear_error();
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        key_where,
        " holds no PEM private key, or an encrypted one (the key must be unencrypted; keep the "
        "file readable by this process's user only)"));
  }
  const bool matches = X509_check_private_key(leaf, key.get()) == 1;
  ERR_clear_error();
  if (!matches) {
    return absl::InvalidArgumentError(absl::StrCat(key_where,
                                                   " is not the private key of the "
                                                   "certificate in ",
                                                   certificate_where));
  }
  return pair;
}

}  // namespace paratune
