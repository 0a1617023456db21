#include "backend/connectors/s3_source.hpp"

#include "backend/connectors/s3_client.hpp"

#include <pugixml.hpp>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <optional>

namespace weft::connectors {

namespace asio = boost::asio;

namespace {

constexpr std::uint32_t kFileMode = 0644, kDirMode = 0755;
// Enough for a ListObjectsV2 page of 1000 long keys.
constexpr std::uint64_t kListBodyLimit = 16ull << 20;

// Seconds since the epoch of a UTC calendar time, or nullopt.
std::optional<std::int64_t> utc_seconds(std::tm tm) {
  const std::time_t t = timegm(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<std::int64_t>(t);
}

// "2009-10-12T17:50:30.000Z" (ListObjectsV2), to whole seconds in ns.
std::optional<std::int64_t> parse_iso8601(const char* s) {
  std::tm tm{};
  const char* end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) return std::nullopt;
  auto secs = utc_seconds(tm);
  if (!secs) return std::nullopt;
  return *secs * 1'000'000'000;
}

// "Wed, 12 Oct 2009 17:50:30 GMT" (Last-Modified), in ns.
std::optional<std::int64_t> parse_http_date(std::string_view v) {
  const std::string s(v);
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  auto secs = utc_seconds(tm);
  if (!secs) return std::nullopt;
  return *secs * 1'000'000'000;
}

std::string unquote(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

// %XX and '+' decoded (keys of a listing with encoding-type=url); nullopt
// for a malformed escape.
std::optional<std::string> url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      unsigned v = 0;
      if (i + 2 >= s.size()) return std::nullopt;
      const auto r = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      if (r.ec != std::errc() || r.ptr != s.data() + i + 3) return std::nullopt;
      out += static_cast<char>(v);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

Attr dir_attr() { return Attr{FileType::directory, 0, 0, kDirMode, ""}; }

// One page of a ListObjectsV2.
struct Page {
  std::vector<Entry> entries;  // files and prefixes, names relative to the listed prefix
  bool marker = false;         // the listed prefix's own "dir/" object was among the keys
  bool truncated = false;
  std::string next_token;
};

class S3Source final : public Source {
 public:
  S3Source(std::unique_ptr<S3Client> s3, S3Options options) : s3_(std::move(s3)), o_(std::move(options)) {}

  asio::awaitable<Result<Attr>> stat(std::string path) override {
    if (auto s = check_path(path); !s) co_return s.error();
    if (path.empty()) {
      S3Call call{"HEAD", "", {}, {}, {}};
      auto op_send = send(std::move(call));
      auto r = co_await std::move(op_send);
      if (!r) co_return r.error();
      if (r->status != 200) co_return s3_error(*r, "HeadBucket " + o_.bucket);
      co_return dir_attr();
    }
    const std::string key = key_of(path);
    auto op_head_object = head_object(key);
    auto head = co_await std::move(op_head_object);
    if (head || head.error().code != Errc::not_found) co_return head;
    auto op_is_prefix = is_prefix(path);
    auto dir = co_await std::move(op_is_prefix);
    if (!dir) co_return dir.error();
    if (!*dir) co_return head.error();
    co_return dir_attr();
  }

  asio::awaitable<Result<std::vector<Entry>>> list(std::string path) override {
    if (auto s = check_path(path); !s) co_return s.error();
    const std::string prefix = dir_prefix(path);
    std::vector<Entry> entries;
    bool found = path.empty();
    std::string token;
    do {
      auto op_list_page = list_page(prefix, token, 1000);
      auto page = co_await std::move(op_list_page);
      if (!page) co_return page.error();
      found = found || page->marker || !page->entries.empty();
      std::move(page->entries.begin(), page->entries.end(), std::back_inserter(entries));
      token = page->truncated ? page->next_token : std::string();
      if (page->truncated && token.empty())
        co_return failure(Errc::protocol, "ListObjectsV2 " + prefix + ": truncated without a continuation token");
    } while (!token.empty());
    if (!found) {
      // Nothing below: a file, or nothing at all.
      const std::string key = key_of(path);
      auto op_head_object = head_object(key);
      auto head = co_await std::move(op_head_object);
      if (head) co_return failure(Errc::not_dir, "list " + path + ": a file");
      co_return head.error();
    }
    // Files first for each name, so that an object shadows a prefix.
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.name != b.name ? a.name < b.name : a.attr.type == FileType::file && b.attr.type != FileType::file;
    });
    entries.erase(std::unique(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.name == b.name; }),
                  entries.end());
    co_return entries;
  }

  asio::awaitable<Result<std::string>> read(std::string path, std::uint64_t offset, std::uint64_t length,
                                            std::string version) override {
    if (auto s = check_path(path); !s) co_return s.error();
    if (path.empty()) co_return failure(Errc::is_dir, "read of the root");
    if (length > kMaxRead) co_return failure(Errc::invalid, "read of more than " + std::to_string(kMaxRead) + " bytes");
    const std::string key = key_of(path);
    S3Call call{length == 0 ? "HEAD" : "GET", key, {}, {}, {}};
    if (length > 0) call.headers.emplace_back("Range", "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1));
    if (!version.empty()) call.headers.emplace_back("If-Match", "\"" + version + "\"");
    auto op_send = send(std::move(call));
    auto r = co_await std::move(op_send);
    if (!r) co_return r.error();
    if (r->status == 206) {
      if (r->body.size() > length) co_return failure(Errc::protocol, "GetObject " + key + ": more bytes than asked");
      co_return std::move(r->body);
    }
    if (r->status == 200) {  // no range applied (an empty object, a HEAD): the part asked for
      if (length == 0 || offset >= r->body.size()) co_return std::string();
      co_return r->body.substr(offset, length);
    }
    if (r->status == 416) co_return std::string();  // from past the end
    Error e = s3_error(*r, "GetObject " + key);
    if (e.code == Errc::not_found) {
      auto op_is_prefix = is_prefix(path);
      auto dir = co_await std::move(op_is_prefix);
      if (dir && *dir) co_return failure(Errc::is_dir, "read of " + path + ": a directory");
    }
    co_return e;
  }

  asio::awaitable<Result<Attr>> write(std::string path, std::string bytes) override {
    if (auto s = writable(path); !s) co_return s.error();
    // An object named like a prefix would hide the directory.
    auto op_is_prefix = is_prefix(path);
    auto dir = co_await std::move(op_is_prefix);
    if (!dir) co_return dir.error();
    if (*dir) co_return failure(Errc::is_dir, "write of " + path + ": a directory");
    const std::string key = key_of(path);
    S3Call call{"PUT", key, {}, {}, std::move(bytes)};
    call.headers.emplace_back("Content-Type", "application/octet-stream");
    auto op_send = send(std::move(call));
    auto r = co_await std::move(op_send);
    if (!r) co_return r.error();
    if (r->status != 200) co_return s3_error(*r, "PutObject " + key);
    auto op_head_object = head_object(key);
    co_return co_await std::move(op_head_object);
  }

  asio::awaitable<Status> remove(std::string path) override {
    if (auto s = writable(path); !s) co_return s.error();
    auto op_stat = stat(path);
    auto a = co_await std::move(op_stat);
    if (!a) co_return a.error();
    if (a->type == FileType::file) {
      const std::string key = key_of(path);
      auto op_delete_key = delete_key(key);
      co_return co_await std::move(op_delete_key);
    }
    // A directory: empty if nothing but its marker is below it.
    const std::string prefix = dir_prefix(path), no_token;
    auto op_list_page = list_page(prefix, no_token, 2);
    auto page = co_await std::move(op_list_page);
    if (!page) co_return page.error();
    if (!page->entries.empty()) co_return failure(Errc::not_empty, "remove " + path + ": not empty");
    auto op_delete_key = delete_key(prefix);
    co_return co_await std::move(op_delete_key);
  }

  asio::awaitable<Status> mkdir(std::string path) override {
    if (auto s = writable(path); !s) co_return s.error();
    auto op_stat = stat(path);
    auto a = co_await std::move(op_stat);
    if (a) co_return failure(Errc::exists, "mkdir " + path + ": exists");
    if (a.error().code != Errc::not_found) co_return a.error();
    const std::string key = dir_prefix(path);
    S3Call call{"PUT", key, {}, {}, {}};
    auto op_send = send(std::move(call));
    auto r = co_await std::move(op_send);
    if (!r) co_return r.error();
    if (r->status != 200) co_return s3_error(*r, "PutObject " + key);
    co_return Status();
  }

  asio::awaitable<Status> rename(std::string from, std::string to) override {
    if (auto s = writable(from); !s) co_return s.error();
    if (auto s = writable(to); !s) co_return s.error();
    auto op_stat = stat(from);
    auto a = co_await std::move(op_stat);
    if (!a) co_return a.error();
    if (a->type != FileType::file) co_return failure(Errc::not_supported, "rename " + from + ": S3 cannot rename a prefix");
    if (from == to) co_return Status();
    auto op_stat_to = stat(to);
    auto target = co_await std::move(op_stat_to);
    if (target && target->type == FileType::directory) co_return failure(Errc::is_dir, "rename onto " + to + ": a directory");
    const std::string key = key_of(to);
    S3Call call{"PUT", key, {}, {}, {}};
    // The source's version, so a file replaced meanwhile is not the one copied.
    call.headers.emplace_back("x-amz-copy-source", sigv4::uri_encode("/" + o_.bucket + "/" + key_of(from), false));
    call.headers.emplace_back("x-amz-copy-source-if-match", "\"" + a->version + "\"");
    auto op_send = send(std::move(call));
    auto r = co_await std::move(op_send);
    if (!r) co_return r.error();
    if (r->status != 200) co_return s3_error(*r, "CopyObject to " + key);
    // A copy can fail after its 200 has been sent: the body says so.
    pugi::xml_document doc;
    if (doc.load_buffer(r->body.data(), r->body.size()) && doc.child("Error")) {
      HttpResponse failed = *r;
      failed.status = 500;
      co_return s3_error(failed, "CopyObject to " + key);
    }
    const std::string from_key = key_of(from);
    auto op_delete_key = delete_key(from_key);
    co_return co_await std::move(op_delete_key);
  }

  void close() override { s3_->close(); }

 private:
  std::string key_of(std::string_view path) const {
    if (o_.prefix.empty()) return std::string(path);
    return path.empty() ? o_.prefix : o_.prefix + "/" + std::string(path);
  }
  // The key prefix of a directory's entries ("" for the bucket's root).
  std::string dir_prefix(std::string_view path) const {
    const std::string key = key_of(path);
    return key.empty() ? key : key + "/";
  }

  Status writable(std::string_view path) const {
    if (auto s = check_path(path); !s) return s;
    if (o_.read_only) return failure(Errc::read_only, "s3://" + o_.bucket + " is read-only here");
    if (path.empty()) return failure(Errc::invalid, "the root cannot be written, removed or renamed");
    return {};
  }

  asio::awaitable<Result<HttpResponse>> send(S3Call call) {
    auto op = s3_->send(std::move(call));
    co_return co_await std::move(op);
  }

  asio::awaitable<Result<Attr>> head_object(std::string key) {
    S3Call call{"HEAD", key, {}, {}, {}};
    auto op_send = send(std::move(call));
    auto r = co_await std::move(op_send);
    if (!r) co_return r.error();
    if (r->status != 200) co_return s3_error(*r, "HeadObject " + key);
    Attr a{FileType::file, 0, 0, kFileMode, unquote(r->header("ETag"))};
    const std::string_view length = r->header("Content-Length");
    const auto parsed = std::from_chars(length.data(), length.data() + length.size(), a.size);
    const auto mtime = parse_http_date(r->header("Last-Modified"));
    if (parsed.ec != std::errc() || parsed.ptr != length.data() + length.size() || !mtime || a.version.empty())
      co_return failure(Errc::protocol, "HeadObject " + key + ": no Content-Length, Last-Modified or ETag");
    a.mtime_ns = *mtime;
    co_return a;
  }

  // Whether any key lies below "path/".
  asio::awaitable<Result<bool>> is_prefix(std::string path) {
    const std::string prefix = dir_prefix(path), no_token;
    auto op_list_page = list_page(prefix, no_token, 1);
    auto page = co_await std::move(op_list_page);
    if (!page) co_return page.error();
    co_return page->marker || !page->entries.empty();
  }

  asio::awaitable<Status> delete_key(std::string key) {
    S3Call call{"DELETE", key, {}, {}, {}};
    auto op_send = send(std::move(call));
    auto r = co_await std::move(op_send);
    if (!r) co_return r.error();
    if (r->status != 204 && r->status != 200) co_return s3_error(*r, "DeleteObject " + key);
    co_return Status();
  }

  asio::awaitable<Result<Page>> list_page(std::string prefix, std::string token, int max_keys) {
    S3Call call{"GET", "", {{"list-type", "2"}, {"delimiter", "/"}, {"encoding-type", "url"}, {"prefix", prefix},
                          {"max-keys", std::to_string(max_keys)}}, {}, {}};
    if (!token.empty()) call.query.emplace_back("continuation-token", token);
    auto op_send = send(std::move(call));
    auto r = co_await std::move(op_send);
    if (!r) co_return r.error();
    const std::string what = "ListObjectsV2 " + o_.bucket + "/" + prefix;
    if (r->status != 200) co_return s3_error(*r, what);
    if (r->body.size() > kListBodyLimit) co_return failure(Errc::protocol, what + ": an oversized page");
    pugi::xml_document doc;
    if (!doc.load_buffer(r->body.data(), r->body.size())) co_return failure(Errc::protocol, what + ": malformed XML");
    const auto root = doc.child("ListBucketResult");
    if (!root) co_return failure(Errc::protocol, what + ": no ListBucketResult");
    const bool encoded = std::string_view(root.child_value("EncodingType")) == "url";
    auto decode = [&](const char* v) -> std::optional<std::string> { return encoded ? url_decode(v) : std::string(v); };
    Page page;
    page.truncated = std::string_view(root.child_value("IsTruncated")) == "true";
    page.next_token = root.child_value("NextContinuationToken");
    for (auto c : root.children("Contents")) {
      const auto key = decode(c.child_value("Key"));
      if (!key || !key->starts_with(prefix)) co_return failure(Errc::protocol, what + ": a key outside the prefix");
      std::string name = key->substr(prefix.size());
      if (name.empty()) {
        page.marker = true;
        continue;
      }
      const auto mtime = parse_iso8601(c.child_value("LastModified"));
      const std::string_view size_text = c.child_value("Size");
      Attr a{FileType::file, 0, mtime.value_or(0), kFileMode, unquote(c.child_value("ETag"))};
      const auto parsed = std::from_chars(size_text.data(), size_text.data() + size_text.size(), a.size);
      if (!mtime || parsed.ec != std::errc() || a.version.empty())
        co_return failure(Errc::protocol, what + ": an entry without LastModified, Size or ETag");
      page.entries.push_back({std::move(name), std::move(a)});
    }
    for (auto p : root.children("CommonPrefixes")) {
      const auto sub = decode(p.child_value("Prefix"));
      if (!sub || !sub->starts_with(prefix) || sub->size() < prefix.size() + 2 || !sub->ends_with('/'))
        co_return failure(Errc::protocol, what + ": a malformed common prefix");
      page.entries.push_back({sub->substr(prefix.size(), sub->size() - prefix.size() - 1), dir_attr()});
    }
    co_return page;
  }

  std::unique_ptr<S3Client> s3_;
  const S3Options o_;
};

}  // namespace

Result<std::shared_ptr<Source>> make_s3_source(asio::any_io_executor executor, S3Options options) {
  if (auto s = check_path(options.prefix); !s) return failure(Errc::invalid, "prefix: " + s.error().message);
  if (options.http.body_limit < kListBodyLimit) options.http.body_limit = kListBodyLimit;
  auto s3 = S3Client::create(std::move(executor), {options.http, options.bucket, options.credentials, options.sign_payload});
  if (!s3) return s3.error();
  return std::shared_ptr<Source>(std::make_shared<S3Source>(std::move(*s3), std::move(options)));
}

}  // namespace weft::connectors
