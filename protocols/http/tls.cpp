#include "protocols/http/tls.hpp"

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/throw_exception.hpp>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace weft::http::tls {

namespace fs = std::filesystem;
namespace ssl = boost::asio::ssl;

void throw_exception_from_error(const Error& e, const boost::source_location& loc) {
  boost::throw_exception(std::runtime_error(e.message), loc);
}

namespace {

// Mozilla's "intermediate" TLS 1.2 list without its DHE suites (every
// client that speaks TLS 1.2 has ECDHE): forward secrecy, AEAD only, for
// ECDSA and RSA certificates.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

Error file_error(std::string_view what, const fs::path& file, std::string_view why) {
  std::string m(what);
  m += ' ';
  m += file.string();
  m += ": ";
  m += why;
  return Error{std::move(m)};
}

// Whether `file` can be opened for reading; else why not, in the system's words
// (OpenSSL's own message for a missing file says only "system library").
std::optional<std::string> unreadable(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (in) return std::nullopt;
  return std::string(std::strerror(errno));
}

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;

// The last OpenSSL error of this thread, in words, and the queue cleared.
std::string openssl_error() {
  unsigned long code = ERR_get_error();
  unsigned long next;
  while ((next = ERR_get_error()) != 0) code = next;
  if (code == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

bool add_extension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

Result<X509Ptr> self_signed_certificate(EVP_PKEY* key) {
  X509Ptr cert(X509_new());
  BnPtr serial(BN_new());
  if (!cert || !serial) return Error{"self-signed certificate: " + openssl_error()};
  // A random positive 127-bit serial, as RFC 5280 asks of a CA.
  bool ok = X509_set_version(cert.get(), X509_VERSION_3) == 1 &&
            BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
            BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr &&
            // An hour back, for clients whose clocks lag a little.
            X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) != nullptr &&
            X509_time_adj_ex(X509_getm_notAfter(cert.get()), 3650, 0, nullptr) != nullptr &&
            X509_set_pubkey(cert.get(), key) == 1;
  X509_NAME* name = X509_get_subject_name(cert.get());
  ok = ok &&
       X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                  reinterpret_cast<const unsigned char*>("Weft"), -1, -1, 0) == 1 &&
       X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                  reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0) == 1 &&
       X509_set_issuer_name(cert.get(), name) == 1;
  ok = ok && add_extension(cert.get(), NID_basic_constraints, "critical,CA:FALSE") &&
       add_extension(cert.get(), NID_key_usage, "critical,digitalSignature") &&
       add_extension(cert.get(), NID_ext_key_usage, "serverAuth") &&
       add_extension(cert.get(), NID_subject_key_identifier, "hash") &&
       add_extension(cert.get(), NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1") &&
       X509_sign(cert.get(), key, EVP_sha256()) > 0;
  if (!ok) return Error{"self-signed certificate: " + openssl_error()};
  return cert;
}

// PEM text from a writer such as PEM_write_bio_X509.
template <class Write>
Result<std::string> pem(Write write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || !write(bio.get())) return Error{"PEM encoding: " + openssl_error()};
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  // In place: Error could be built from a string, which makes the plain
  // conversion ambiguous.
  return Result<std::string>(boost::system::in_place_value, data, static_cast<std::size_t>(n));
}

// Writes `text` to a new temporary file beside `target` with `mode`,
// flushed to disk; returns its path.
Result<fs::path> write_temporary(const fs::path& target, const std::string& text, mode_t mode) {
  std::string name = (target.parent_path() / ("." + target.filename().string() + ".XXXXXX")).string();
  int fd = ::mkstemp(name.data());  // created with mode 0600
  if (fd < 0) return file_error("cannot create a file beside", target, std::strerror(errno));
  bool ok = ::fchmod(fd, mode) == 0;
  for (std::size_t done = 0; ok && done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(name.c_str());
    return file_error("cannot write", name, std::strerror(err));
  }
  return Result<fs::path>(boost::system::in_place_value, name);
}

}  // namespace

Result<std::shared_ptr<ssl::context>> server_context(const fs::path& certificate_chain,
                                                     const fs::path& private_key) {
  if (auto why = unreadable(certificate_chain)) return file_error("TLS certificate", certificate_chain, *why);
  if (auto why = unreadable(private_key)) return file_error("TLS private key", private_key, *why);
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1)
    return Error{"TLS context: " + openssl_error()};
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(certificate_chain.string(), ec);
  if (ec) return file_error("TLS certificate", certificate_chain, "no usable PEM certificate chain (" + ec.message() + ")");
  auto mismatch = [&] {
    return file_error("TLS private key", private_key,
                      "does not match the certificate in " + certificate_chain.string());
  };
  ctx->use_private_key_file(private_key.string(), ssl::context::pem, ec);
  // OpenSSL checks a key against a certificate of its own type here, and
  // against one of another type (an EC key, an RSA certificate) only below.
  if (ec && ec.category() == boost::asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH)
    return mismatch();
  if (ec) return file_error("TLS private key", private_key, "no usable PEM private key (" + ec.message() + ")");
  if (SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return mismatch();
  }
  return ctx;
}

Result<CertificateFiles> ensure_self_signed(const fs::path& dir) {
  CertificateFiles files{dir / "cert.pem", dir / "key.pem"};
  std::error_code ec;
  if (fs::exists(files.certificate, ec)) {
    if (!fs::exists(files.private_key, ec))
      return file_error("TLS private key", files.private_key,
                        "missing beside " + files.certificate.string() + " (remove both to have them generated)");
    return files;
  }
  fs::create_directories(dir, ec);
  if (ec) return file_error("cannot create the directory", dir, ec.message());

  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return Error{"generating a TLS key: " + openssl_error()};
  auto cert = self_signed_certificate(key.get());
  if (!cert) return cert.error();
  auto key_pem = pem([&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1;
  });
  auto cert_pem = pem([&](BIO* b) { return PEM_write_bio_X509(b, cert->get()) == 1; });
  if (!key_pem) return key_pem.error();
  if (!cert_pem) return cert_pem.error();

  auto key_tmp = write_temporary(files.private_key, *key_pem, 0600);
  if (!key_tmp) return key_tmp.error();
  auto cert_tmp = write_temporary(files.certificate, *cert_pem, 0644);
  if (!cert_tmp) {
    fs::remove(*key_tmp, ec);
    return cert_tmp.error();
  }
  // The key first: cert.pem appears last, when the pair is whole.
  fs::rename(*key_tmp, files.private_key, ec);
  if (ec) {
    auto why = ec.message();
    fs::remove(*key_tmp, ec);
    fs::remove(*cert_tmp, ec);
    return file_error("cannot write", files.private_key, why);
  }
  fs::rename(*cert_tmp, files.certificate, ec);
  if (ec) {
    auto why = ec.message();
    fs::remove(*cert_tmp, ec);
    return file_error("cannot write", files.certificate, why);
  }
  // The renames themselves reach the disk.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return files;
}

}  // namespace weft::http::tls
