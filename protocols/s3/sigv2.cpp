#include "protocols/s3/sigv2.hpp"

#include "gateway/text/lists.hpp"
#include "protocols/s3/checksum.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <map>

namespace weft::s3::sigv2 {

namespace {

// The query parameters that are part of the signed resource.
constexpr std::array<std::string_view, 37> kSubresources{
    "accelerate", "acl", "analytics", "cors", "defaultObjectAcl", "delete", "inventory",
    "lifecycle", "location", "logging", "metrics", "notification", "object-lock", "partNumber",
    "policy", "replication", "requestPayment", "response-cache-control",
    "response-content-disposition", "response-content-encoding", "response-content-language",
    "response-content-type", "response-expires", "restore", "select", "select-type",
    "storageClass", "tagging", "torrent", "uploadId", "uploads", "versionId", "versioning",
    "versions", "website", "retention", "legal-hold"};

}  // namespace

std::optional<AuthorizationHeader> parse_authorization(std::string_view text) {
  if (!text.starts_with("AWS ")) return std::nullopt;
  text.remove_prefix(4);
  std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  return AuthorizationHeader{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
}

std::string string_to_sign(std::string_view method, std::string_view raw_path,
                           std::span<const sigv4::QueryParam> query,
                           std::span<const http::Header> headers, std::string_view date_line) {
  auto first = [&](std::string_view name) -> std::string_view {
    for (const auto& h : headers)
      if (h.name == name) return text::trim_ows(h.value);
    return {};
  };
  std::string out(method);
  out += '\n';
  out += first("content-md5");
  out += '\n';
  out += first("content-type");
  out += '\n';
  out += date_line;
  out += '\n';
  std::map<std::string, std::string> amz;
  for (const auto& h : headers) {
    if (!h.name.starts_with("x-amz-")) continue;
    std::string& v = amz[h.name];
    if (!v.empty()) v += ',';
    v += text::trim_ows(h.value);
  }
  for (const auto& [name, value] : amz) out += name + ":" + value + "\n";
  out += raw_path;
  std::vector<std::pair<std::string, std::string>> sub;
  for (const auto& p : query)
    if (std::find(kSubresources.begin(), kSubresources.end(), p.name) != kSubresources.end())
      sub.emplace_back(p.name, p.value);
  std::stable_sort(sub.begin(), sub.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < sub.size(); ++i) {
    out += i == 0 ? '?' : '&';
    out += sub[i].first;
    if (!sub[i].second.empty()) out += "=" + sub[i].second;
  }
  return out;
}

std::string sign(std::string_view secret, std::string_view string_to_sign) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha1(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(string_to_sign.data()), string_to_sign.size(), mac, &n);
  return base64_encode(std::span<const std::uint8_t>(mac, n));
}

}  // namespace weft::s3::sigv2
