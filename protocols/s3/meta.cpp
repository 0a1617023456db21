#include "protocols/s3/meta.hpp"

#include "gateway/text/lists.hpp"
#include "protocols/s3/dates.hpp"
#include "protocols/s3/sigv4.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace weft::s3 {

namespace {

using json = nlohmann::json;

struct StoredHeader {
  std::string_view header;  // lower case
  std::string ObjectMeta::*field;
  std::string_view key;  // in the stored JSON
  std::string_view response_name;
};

constexpr StoredHeader kStored[] = {
    {"content-type", &ObjectMeta::content_type, "ct", "Content-Type"},
    {"content-encoding", &ObjectMeta::content_encoding, "ce", "Content-Encoding"},
    {"content-disposition", &ObjectMeta::content_disposition, "cd", "Content-Disposition"},
    {"content-language", &ObjectMeta::content_language, "cl", "Content-Language"},
    {"cache-control", &ObjectMeta::cache_control, "cc", "Cache-Control"},
    {"expires", &ObjectMeta::expires, "ex", "Expires"},
};

// Content-Encoding minus the aws-chunked coding, which describes the
// request, not the object.
std::string strip_aws_chunked(std::string_view v) {
  std::string out;
  for (std::string_view item : text::split_list(v)) {
    if (item.empty() || item == "aws-chunked") continue;
    if (!out.empty()) out += ",";
    out += item;
  }
  return out;
}

}  // namespace

std::string ObjectMeta::encode() const {
  json j;
  j["v"] = version;
  j["etag"] = etag;
  if (checksum) j["sum"] = {checksum_name(checksum->first), checksum->second};
  if (!parts.empty()) j["parts"] = parts;
  for (const auto& s : kStored)
    if (!(this->*s.field).empty()) j[std::string(s.key)] = this->*s.field;
  if (!user.empty()) j["meta"] = user;
  if (!tags.empty()) j["tags"] = tags;
  return j.dump();
}

std::optional<ObjectMeta> ObjectMeta::decode(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  ObjectMeta m;
  try {
    m.version = j.value("v", std::uint64_t{0});
    m.etag = j.value("etag", std::string());
    if (auto it = j.find("sum"); it != j.end() && it->is_array() && it->size() == 2) {
      if (auto a = checksum_algo((*it)[0].get<std::string>())) m.checksum.emplace(*a, (*it)[1].get<std::string>());
    }
    if (auto it = j.find("parts"); it != j.end())
      m.parts = it->get<std::vector<std::pair<std::uint64_t, std::uint32_t>>>();
    for (const auto& s : kStored) m.*s.field = j.value(std::string(s.key), std::string());
    if (auto it = j.find("meta"); it != j.end())
      m.user = it->get<std::vector<std::pair<std::string, std::string>>>();
    if (auto it = j.find("tags"); it != j.end()) m.tags = it->get<Tags>();
  } catch (const json::exception&) {
    // Written by an older or foreign writer: treat it as absent.
    return std::nullopt;
  }
  return m;
}

MetaRef MetaMemo::decode(ns::Ino ino, std::string_view text) {
  auto decoded = [](std::string_view t) -> MetaRef {
    auto m = ObjectMeta::decode(t);
    return m ? std::make_shared<const ObjectMeta>(std::move(*m)) : nullptr;
  };
  if (text.size() > kMaxText) return decoded(text);
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(ino); it != entries_.end() && it->second->text == text) return it->second->meta;
  }
  auto entry = std::make_shared<Entry>(Entry{std::string(text), decoded(text)});
  MetaRef out = entry->meta;
  std::lock_guard lock(mu_);
  if (entries_.size() >= kCapacity) entries_.clear();
  entries_[ino] = std::move(entry);
  return out;
}

std::uint32_t ObjectMeta::part_count() const {
  std::uint32_t n = 0;
  for (const auto& [size, count] : parts) n += count;
  return n;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> ObjectMeta::part_range(std::uint32_t n) const {
  if (n == 0) return std::nullopt;
  std::uint64_t offset = 0;
  std::uint32_t index = 1;
  for (const auto& [size, count] : parts) {
    if (n < index + count) return std::make_pair(offset + (n - index) * size, size);
    offset += size * count;
    index += count;
  }
  return std::nullopt;
}

boost::system::result<ObjectMeta, Error> meta_from_headers(std::span<const http::Header> headers) {
  ObjectMeta m;
  std::size_t user_bytes = 0;
  for (const auto& h : headers) {
    if (h.name.starts_with("x-amz-meta-")) {
      std::string name = h.name.substr(11);
      user_bytes += name.size() + h.value.size();
      m.user.emplace_back(std::move(name), h.value);
      continue;
    }
    if (h.name == "x-amz-tagging") {
      auto tags = parse_tagging_header(h.value);
      if (!tags) return tags.error();
      m.tags = std::move(*tags);
      continue;
    }
    for (const auto& s : kStored)
      if (h.name == s.header) m.*s.field = h.value;
  }
  if (user_bytes > kMaxUserMetadata) return Error(Code::MetadataTooLarge);
  m.content_encoding = strip_aws_chunked(m.content_encoding);
  if (m.content_type.empty()) m.content_type = "binary/octet-stream";
  return m;
}

std::string etag_of(const ObjectMeta& m, const ns::Attr& a) {
  if (m.current(a)) {
    std::string quoted;
    quoted.reserve(m.etag.size() + 2);
    quoted += '"';
    quoted += m.etag;
    quoted += '"';
    return quoted;
  }
  std::string id = std::to_string(a.ino) + "/" + std::to_string(a.generation) + "/" +
                   std::to_string(a.version) + "/" + std::to_string(a.size) + "/" +
                   std::to_string(a.mtime_ns);
  return "\"" + sha256_hex(id).substr(0, 32) + "-1\"";
}

void add_object_headers(std::vector<http::Header>& out, const ObjectMeta& m, const ns::Attr& a,
                        bool with_checksum) {
  out.push_back({"ETag", etag_of(m, a)});
  out.push_back({"Last-Modified", http_date(a.mtime_ns)});
  out.push_back({"Accept-Ranges", "bytes"});
  for (const auto& s : kStored) {
    const std::string& v = m.*s.field;
    if (!v.empty()) out.push_back({std::string(s.response_name), v});
  }
  if (m.content_type.empty()) out.push_back({"Content-Type", "binary/octet-stream"});
  for (const auto& [name, value] : m.user) out.push_back({"x-amz-meta-" + name, value});
  if (with_checksum && m.checksum && m.current(a))
    out.push_back({std::string(checksum_header(m.checksum->first)), m.checksum->second});
}

Outcome check_tags(const Tags& tags) {
  if (tags.size() > 10) return Error(Code::InvalidTag, "Object tags cannot be greater than 10");
  std::set<std::string_view> keys;
  for (const auto& [k, v] : tags) {
    if (k.empty() || k.size() > 128) return Error(Code::InvalidTag, "The TagKey you have provided is invalid");
    if (v.size() > 256) return Error(Code::InvalidTag, "The TagValue you have provided is invalid");
    if (!keys.insert(k).second) return Error(Code::InvalidTag, "Cannot provide multiple Tags with the same key");
  }
  return std::nullopt;
}

boost::system::result<Tags, Error> parse_tagging_header(std::string_view text) {
  auto params = sigv4::parse_query(text);
  if (!params) return Error(Code::InvalidArgument, "The x-amz-tagging header is malformed");
  Tags tags;
  for (auto& p : *params) tags.emplace_back(std::move(p.name), std::move(p.value));
  if (auto e = check_tags(tags)) return *e;
  return tags;
}

}  // namespace weft::s3
