// TLS for the HTTP server (Options::tls): the server context built from PEM
// files, and a self-signed certificate for a gateway that was given none.
//
// Contract:
//  - server_context() accepts TLS 1.2 and 1.3 only, with forward-secret
//    AEAD ciphers for TLS 1.2 (TLS 1.3's suites are all sound) and no
//    renegotiation. A missing, unreadable or malformed file, or a key that
//    does not belong to the certificate, is an Error whose message names the
//    file.
//  - ensure_self_signed(dir) leaves an existing DIR/cert.pem and DIR/key.pem
//    untouched. Otherwise it writes an EC P-256 key (mode 0600) and a
//    certificate valid for ten years for localhost, 127.0.0.1 and ::1, each
//    through a temporary file and a rename; the key is renamed first, so a
//    cert.pem present means the pair is whole, and a key.pem left alone by a
//    crash is replaced.
#pragma once

#include <boost/system/result.hpp>

#include <filesystem>
#include <memory>
#include <string>

namespace boost::asio::ssl {
class context;
}

namespace weft::http::tls {

struct Error {
  std::string message;
};

template <class T>
using Result = boost::system::result<T, Error>;
// Found by argument-dependent lookup when Result<T>::value() fails.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

// A server context for Options::tls. `certificate_chain`: PEM, the server's
// certificate first, then any intermediates; `private_key`: its PEM key,
// unencrypted.
Result<std::shared_ptr<boost::asio::ssl::context>> server_context(
    const std::filesystem::path& certificate_chain, const std::filesystem::path& private_key);

struct CertificateFiles {
  std::filesystem::path certificate;  // DIR/cert.pem
  std::filesystem::path private_key;  // DIR/key.pem
};

// The self-signed pair in `dir` (created if missing), for server_context().
Result<CertificateFiles> ensure_self_signed(const std::filesystem::path& dir);

}  // namespace weft::http::tls
