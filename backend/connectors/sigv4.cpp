#include "backend/connectors/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <ctime>

namespace weft::connectors::sigv4 {

namespace {

using Mac = std::array<unsigned char, 32>;

Mac hmac(std::string_view key, std::string_view data) {
  Mac out{};
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out.data(), &n);
  return out;
}

std::string_view view(const Mac& m) { return {reinterpret_cast<const char*>(m.data()), m.size()}; }

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * n, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[p[i] >> 4];
    out[2 * i + 1] = kHex[p[i] & 15];
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Trimmed, with inner runs of blanks collapsed to one space (SigV4 "Trimall").
std::string trimall(std::string_view v) {
  std::string out;
  bool blank = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      blank = !out.empty();
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

// Lower-case names with their values, sorted by name; Host among them.
Params canonical_headers(const Request& r) {
  Params out;
  out.reserve(r.headers.size() + 1);
  out.emplace_back("host", trimall(r.host));
  for (const auto& [name, value] : r.headers) out.emplace_back(lower(name), trimall(value));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// The sorted names, each once, separated by ';'.
std::string signed_header_names(const Params& headers) {
  std::string out;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    if (i > 0 && headers[i - 1].first == headers[i].first) continue;
    if (i > 0) out += ';';
    out += headers[i].first;
  }
  return out;
}

}  // namespace

std::string canonical_query(const Params& query) {
  Params encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) encoded.emplace_back(uri_encode(name, true), uri_encode(value, true));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

std::string canonical_request(const Request& r) {
  const Params headers = canonical_headers(r);
  std::string out(r.method);
  out += '\n';
  out += r.path.empty() ? "/" : uri_encode(r.path, false);
  out += '\n';
  out += canonical_query(r.query);
  out += '\n';
  // Repeated names are one line, their values joined by commas.
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const bool continues = i > 0 && headers[i - 1].first == headers[i].first;
    if (continues) {
      out.back() = ',';
    } else {
      out += headers[i].first;
      out += ':';
    }
    out += headers[i].second;
    out += '\n';
  }
  out += '\n';
  out += signed_header_names(headers);
  out += '\n';
  out += r.payload_hash;
  return out;
}

std::string amz_date(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char out[17];
  std::strftime(out, sizeof out, "%Y%m%dT%H%M%SZ", &tm);
  return out;
}

std::string authorization(const Credentials& c, std::string_view date, const Request& r) {
  const std::string_view day = date.substr(0, 8);
  const std::string scope = std::string(day) + "/" + c.region + "/" + c.service + "/aws4_request";
  const std::string to_sign =
      "AWS4-HMAC-SHA256\n" + std::string(date) + "\n" + scope + "\n" + sha256_hex(canonical_request(r));
  Mac key = hmac("AWS4" + c.secret_key, day);
  key = hmac(view(key), c.region);
  key = hmac(view(key), c.service);
  key = hmac(view(key), "aws4_request");
  const Mac signature = hmac(view(key), to_sign);
  return "AWS4-HMAC-SHA256 Credential=" + c.access_key + "/" + scope +
         ", SignedHeaders=" + signed_header_names(canonical_headers(r)) +
         ", Signature=" + hex(signature.data(), signature.size());
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr);
  return hex(md, n);
}

}  // namespace weft::connectors::sigv4
