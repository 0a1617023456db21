#include "protocols/s3/sigv4.hpp"

#include "gateway/text/lists.hpp"
#include "protocols/s3/checksum.hpp"
#include "gateway/text/percent.hpp"

#include <openssl/crypto.h>

#include <algorithm>

namespace weft::s3::sigv4 {

namespace {

bool is_lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Trimmed, with runs of spaces inside collapsed to one (SigV4 "Trimall").
void append_trimmed(std::string& out, std::string_view v) {
  v = text::trim_ows(v);
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
}


}  // namespace

std::string Scope::str() const { return date + "/" + region + "/" + service + "/aws4_request"; }

std::optional<Credential> parse_credential(std::string_view text) {
  // The access key is everything before the last four components.
  std::array<std::string_view, 4> tail;
  std::string_view rest = text;
  for (int i = 3; i >= 0; --i) {
    std::size_t slash = rest.rfind('/');
    if (slash == std::string_view::npos) return std::nullopt;
    tail[static_cast<std::size_t>(i)] = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (rest.empty() || tail[3] != "aws4_request" || tail[0].size() != 8 ||
      !std::all_of(tail[0].begin(), tail[0].end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      tail[1].empty() || tail[2].empty())
    return std::nullopt;
  return Credential{std::string(rest),
                    Scope{std::string(tail[0]), std::string(tail[1]), std::string(tail[2])}};
}

std::optional<std::vector<std::string>> parse_signed_headers(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    std::size_t semi = text.find(';');
    std::string_view name = text.substr(0, semi);
    if (name.empty()) return std::nullopt;
    for (char c : name)
      if (c >= 'A' && c <= 'Z') return std::nullopt;
    if (!out.empty() && !(out.back() < name)) return std::nullopt;
    out.emplace_back(name);
    if (semi == std::string_view::npos) break;
    text.remove_prefix(semi + 1);
    if (text.empty()) return std::nullopt;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<AuthorizationHeader> parse_authorization(std::string_view text) {
  if (text.substr(0, kAlgorithm.size()) != kAlgorithm) return std::nullopt;
  text.remove_prefix(kAlgorithm.size());
  if (text.empty() || text.front() != ' ') return std::nullopt;
  std::optional<Credential> credential;
  std::optional<std::vector<std::string>> signed_headers;
  std::optional<std::string> signature;
  // Every comma is followed by a part: "..., Signature=..," is malformed.
  for (bool more = true; more;) {
    std::size_t comma = text.find(',');
    std::string_view part = text::trim_ows(text.substr(0, comma));
    more = comma != std::string_view::npos;
    if (more) text.remove_prefix(comma + 1);
    std::size_t eq = part.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    std::string_view name = part.substr(0, eq), value = part.substr(eq + 1);
    if (name == "Credential" && !credential) {
      credential = parse_credential(value);
      if (!credential) return std::nullopt;
    } else if (name == "SignedHeaders" && !signed_headers) {
      signed_headers = parse_signed_headers(value);
      if (!signed_headers) return std::nullopt;
    } else if (name == "Signature" && !signature) {
      if (value.size() != 64 || !is_lower_hex(value)) return std::nullopt;
      signature = std::string(value);
    } else {
      return std::nullopt;
    }
  }
  if (!credential || !signed_headers || !signature) return std::nullopt;
  return AuthorizationHeader{std::move(*credential), std::move(*signed_headers),
                             std::move(*signature)};
}

std::optional<std::vector<QueryParam>> parse_query(std::string_view raw) {
  std::vector<QueryParam> out;
  if (!raw.empty()) out.reserve(static_cast<std::size_t>(std::count(raw.begin(), raw.end(), '&')) + 1);
  while (!raw.empty()) {
    std::size_t amp = raw.find('&');
    std::string_view part = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view() : raw.substr(amp + 1);
    if (part.empty()) continue;
    std::size_t eq = part.find('=');
    auto name = percent_decode(part.substr(0, eq), true);
    auto value = percent_decode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1), true);
    if (!name || !value) return std::nullopt;
    out.push_back({std::move(*name), std::move(*value)});
  }
  return out;
}

std::string canonical_request(const CanonicalInput& in) {
  std::string out;
  out.reserve(512);
  append_canonical_request(out, in);
  return out;
}

void append_canonical_request(std::string& out, const CanonicalInput& in) {
  out += in.method;
  out += '\n';
  if (in.path.empty())
    out += '/';
  else
    text::append_uri_encoded(out, in.path, false);
  out += '\n';

  // The encoded parameters, sorted by name then value: encoded into one
  // buffer and sorted as views of it (a request has a dozen of them). The
  // buffers are this thread's, kept from call to call.
  struct Param {
    std::size_t name, name_size, value, value_size;
  };
  thread_local std::string encoded;
  thread_local std::vector<Param> q;
  encoded.clear();
  q.clear();
  for (const auto& p : in.query) {
    if (in.presigned && p.name == "X-Amz-Signature") continue;
    Param e{encoded.size(), 0, 0, 0};
    text::append_uri_encoded(encoded, p.name, true);
    e.name_size = encoded.size() - e.name;
    e.value = encoded.size();
    text::append_uri_encoded(encoded, p.value, true);
    e.value_size = encoded.size() - e.value;
    q.push_back(e);
  }
  const std::string_view all = encoded;
  auto name = [&](const Param& p) { return all.substr(p.name, p.name_size); };
  auto value = [&](const Param& p) { return all.substr(p.value, p.value_size); };
  std::sort(q.begin(), q.end(), [&](const Param& a, const Param& b) {
    return name(a) != name(b) ? name(a) < name(b) : value(a) < value(b);
  });
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (i) out += '&';
    out += name(q[i]);
    out += '=';
    out += value(q[i]);
  }
  out += '\n';

  for (const auto& name : in.signed_headers) {
    out += name;
    out += ':';
    bool first = true;
    for (const auto& h : in.headers) {
      if (h.name != name) continue;
      if (!first) out += ',';
      first = false;
      append_trimmed(out, h.value);
    }
    out += '\n';
  }
  out += '\n';
  for (std::size_t i = 0; i < in.signed_headers.size(); ++i) {
    if (i) out += ';';
    out += in.signed_headers[i];
  }
  out += '\n';
  out += in.payload_hash;
}

std::string string_to_sign(std::string_view amz_date, const Scope& scope,
                           std::string_view canonical_request) {
  std::string out;
  append_string_to_sign(out, amz_date, scope, canonical_request);
  return out;
}

void append_string_to_sign(std::string& out, std::string_view amz_date, const Scope& scope,
                           std::string_view canonical_request) {
  out += kAlgorithm;
  out += '\n';
  out += amz_date;
  out += '\n';
  out += scope.date;
  out += '/';
  out += scope.region;
  out += '/';
  out += scope.service;
  out += "/aws4_request\n";
  append_hex(out, sha256(canonical_request));
}

Key signing_key(std::string_view secret, const Scope& scope) {
  std::string k0 = "AWS4" + std::string(secret);
  Key k = hmac_sha256(as_bytes(k0), scope.date);
  k = hmac_sha256(k, scope.region);
  k = hmac_sha256(k, scope.service);
  return hmac_sha256(k, "aws4_request");
}

std::string sign(const Key& key, std::string_view string_to_sign) {
  return to_hex(hmac_sha256(key, string_to_sign));
}

namespace {
std::string chained(std::string_view algorithm, std::string_view amz_date, const Scope& scope,
                    std::string_view previous, std::string_view middle, std::string_view hash) {
  std::string out(algorithm);
  const std::string scope_text = scope.str();
  for (std::string_view part : {amz_date, std::string_view(scope_text), previous}) {
    out += '\n';
    out += part;
  }
  if (!middle.empty()) {
    out += '\n';
    out += middle;
  }
  out += '\n';
  out += hash;
  return out;
}
}  // namespace

std::string chunk_string_to_sign(std::string_view amz_date, const Scope& scope,
                                 std::string_view previous_signature,
                                 std::string_view chunk_sha256_hex) {
  return chained("AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, previous_signature, kEmptySha256,
                 chunk_sha256_hex);
}

std::string trailer_string_to_sign(std::string_view amz_date, const Scope& scope,
                                   std::string_view previous_signature,
                                   std::string_view trailer_sha256_hex) {
  return chained("AWS4-HMAC-SHA256-TRAILER", amz_date, scope, previous_signature, {},
                 trailer_sha256_hex);
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace weft::s3::sigv4
