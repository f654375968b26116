// The PEM files behind gRPC's TLS credentials, read and checked when a process starts. gRPC
// itself only parses them during a handshake, where a wrong path, a key that is not the
// certificate's or an expired certificate becomes a failed connection with an obscure
// message; checked here, each is an error naming its flag and file before anything listens
// or dials.
#ifndef PARATUNE_COMMON_PEM_FILES_H_
#define PARATUNE_COMMON_PEM_FILES_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace paratune {

// The certificates of a CA file (one or more, e.g. a bundle), as PEM text. ReadSmallFile's
// errors prefixed with `option`; INVALID_ARGUMENT naming `option` and the path when the file
// holds no PEM certificate or a malformed one.
absl::StatusOr<std::string> ReadCaCertificates(absl::string_view option, const std::string& path);

// A process's own certificate (its chain, leaf first) and private key, as PEM text.
struct CertificateKeyPair {
  std::string certificate_chain;
  std::string private_key;
};

// Reads `certificate_path` and `key_path`, which name the options `certificate_option` and
// `key_option` in messages; nullopt when both paths are empty. INVALID_ARGUMENT when only one
// is given, when a file holds no PEM certificate or no unencrypted PEM private key, when the
// leaf certificate has expired or is not valid yet, or when the key is not the leaf's;
// ReadSmallFile's errors prefixed with the option. Messages never quote the key.
absl::StatusOr<std::optional<CertificateKeyPair>> ReadCertificateKeyPair(
    absl::string_view certificate_option, const std::string& certificate_path,
    absl::string_view key_option, const std::string& key_path);

}  // namespace paratune

#endif  // PARATUNE_COMMON_PEM_FILES_H_
