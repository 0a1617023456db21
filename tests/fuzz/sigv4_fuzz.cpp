// SigV4 canonicalisation over arbitrary requests. The input is read as a
// request line ("METHOD TARGET"), then "name: value" header lines; the
// authorization header (or the X-Amz-* query of a presigned URL) is parsed
// and the canonical request, string to sign and signature are computed as
// auth.cpp does. Invariants: URI encoding round-trips through the decoder,
// and its output holds only unreserved bytes and %XX escapes.
#include "protocols/s3/sigv4.hpp"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace sigv4 = weft::s3::sigv4;

namespace {

void check_encoding(std::string_view raw) {
  for (bool slash : {false, true}) {
    std::string encoded = sigv4::uri_encode(raw, slash);
    for (std::size_t i = 0; i < encoded.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(encoded[i]);
      bool ok = std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (c == '/' && !slash);
      if (c == '%') {
        if (i + 2 >= encoded.size()) std::abort();
        ok = std::isxdigit(static_cast<unsigned char>(encoded[i + 1])) &&
             std::isxdigit(static_cast<unsigned char>(encoded[i + 2]));
        i += 2;
      }
      if (!ok) std::abort();
    }
    auto decoded = sigv4::percent_decode(encoded, false);
    if (!decoded || *decoded != raw) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::size_t eol = in.find('\n');
  std::string_view line = in.substr(0, eol);
  in = eol == std::string_view::npos ? std::string_view() : in.substr(eol + 1);

  std::size_t sp = line.find(' ');
  std::string_view method = line.substr(0, sp);
  std::string_view target = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
  std::size_t qm = target.find('?');
  std::string_view raw_path = target.substr(0, qm);
  std::string_view raw_query = qm == std::string_view::npos ? std::string_view() : target.substr(qm + 1);

  std::vector<weft::http::Header> headers;
  while (!in.empty()) {
    eol = in.find('\n');
    std::string_view h = in.substr(0, eol);
    in = eol == std::string_view::npos ? std::string_view() : in.substr(eol + 1);
    std::size_t colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name(h.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    headers.emplace_back(std::move(name), std::string(h.substr(colon + 1)));
  }

  check_encoding(raw_path);
  auto path = sigv4::percent_decode(raw_path, false);
  auto query = sigv4::parse_query(raw_query);
  if (!path || !query) return 0;

  // The credential, signed headers and signature: from the header, or from
  // a presigned URL's query.
  std::optional<sigv4::AuthorizationHeader> auth;
  bool presigned = false;
  for (const auto& h : headers)
    if (h.name == "authorization") auth = sigv4::parse_authorization(h.value);
  if (!auth) {
    const std::string *credential = nullptr, *signed_headers = nullptr;
    for (const auto& p : *query) {
      if (p.name == "X-Amz-Credential") credential = &p.value;
      if (p.name == "X-Amz-SignedHeaders") signed_headers = &p.value;
    }
    if (!credential || !signed_headers) return 0;
    auto c = sigv4::parse_credential(*credential);
    auto s = sigv4::parse_signed_headers(*signed_headers);
    if (!c || !s) return 0;
    auth = sigv4::AuthorizationHeader{std::move(*c), std::move(*s), std::string(64, '0')};
    presigned = true;
  }
  std::string payload_hash(sigv4::kUnsignedPayload);
  for (const auto& h : headers)
    if (h.name == "x-amz-content-sha256") payload_hash = h.value;

  sigv4::CanonicalInput ci{method, *path, *query, presigned, headers, auth->signed_headers, payload_hash};
  std::string canonical = sigv4::canonical_request(ci);
  std::string to_sign = sigv4::string_to_sign("20240101T000000Z", auth->credential.scope, canonical);
  sigv4::Key key = sigv4::signing_key("secret", auth->credential.scope);
  std::string signature = sigv4::sign(key, to_sign);
  if (signature.size() != 64) std::abort();
  std::string chunk = sigv4::chunk_string_to_sign("20240101T000000Z", auth->credential.scope,
                                                  signature, sigv4::kEmptySha256);
  if (sigv4::sign(key, chunk).size() != 64) std::abort();
  return 0;
}
