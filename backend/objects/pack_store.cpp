#include "backend/objects/pack_store.hpp"

#include "backend/connectors/s3_client.hpp"
#include "backend/data/full_io.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <pugixml.hpp>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>
#include <vector>

namespace weft::objects {

namespace asio = boost::asio;
using connectors::Errc;
using connectors::Error;
using connectors::failure;
using connectors::HttpResponse;
using connectors::Result;
using connectors::S3Call;
using connectors::Status;

namespace {

constexpr std::size_t kListBodyLimit = 16u << 20;

Error io_failure(std::string_view what, int error) {
  return failure(Errc::io, std::string(what) + ": " + std::strerror(error));
}

// The bytes of [offset, offset + length) of `fd`.
Result<std::string> read_range(int fd, std::uint64_t offset, std::uint64_t length) {
  std::string bytes(length, '\0');
  const ssize_t n = data::pread_fully(fd, std::as_writable_bytes(std::span(bytes)), offset);
  if (n < 0) return io_failure("reading a data file", static_cast<int>(-n));
  if (static_cast<std::uint64_t>(n) < length) return failure(Errc::io, "reading a data file: shorter than its size");
  return bytes;
}

Status write_range(int fd, std::uint64_t offset, std::string_view bytes) {
  if (const int e = data::pwrite_fully(fd, std::as_bytes(std::span(bytes.data(), bytes.size())), offset); e != 0)
    return io_failure("writing a data file", e);
  return {};
}

// "bytes FIRST-LAST/TOTAL" -> TOTAL.
std::optional<std::uint64_t> total_of(std::string_view content_range) {
  auto slash = content_range.rfind('/');
  if (!content_range.starts_with("bytes ") || slash == content_range.npos) return std::nullopt;
  std::uint64_t total = 0;
  auto digits = content_range.substr(slash + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), total);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return total;
}

// An XML response body's root element (`root`, or any when null), or an
// error naming `what`.
Result<pugi::xml_node> xml_root(pugi::xml_document& doc, const HttpResponse& r, const char* root, std::string_view what) {
  if (!doc.load_buffer(r.body.data(), r.body.size())) return failure(Errc::protocol, std::string(what) + ": malformed XML");
  if (doc.child("Error")) {
    HttpResponse failed = r;
    failed.status = 500;  // an error in a 200 (CompleteMultipartUpload may send one late)
    return connectors::s3_error(failed, what);
  }
  auto node = root ? doc.child(root) : doc.document_element();
  if (!node) return failure(Errc::protocol, std::string(what) + ": no " + (root ? root : "XML element"));
  return node;
}

}  // namespace

struct PackStore::Impl {
  ObjectStoreOptions o;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;
  std::unique_ptr<connectors::S3Client> s3;

  ~Impl() {
    work.reset();
    if (s3) s3->close();
    if (thread.joinable()) thread.join();
  }

  // Runs `task` on the I/O thread and waits for it.
  template <class T>
  T run(asio::awaitable<T> task) {
    return asio::co_spawn(io, std::move(task), asio::use_future).get();
  }

  asio::awaitable<Result<HttpResponse>> send(S3Call call) {
    auto op = s3->send(std::move(call));
    co_return co_await std::move(op);
  }

  // Where the packs lie: "PREFIX/packs/".
  std::string packs_prefix() const { return (o.prefix.empty() ? std::string() : o.prefix + "/") + "packs/"; }
  std::string key_of(std::uint64_t fid) const {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fid));
    return packs_prefix() + hex;
  }

  // Runs `part(i)` for i in [first, count) with o.parallel of them in
  // flight; the first error stops the rest.
  template <class Part>
  Status parts(std::uint64_t first, std::uint64_t count, Part part) {
    std::atomic<std::uint64_t> next{first};
    std::mutex mu;
    std::optional<Error> error;
    auto worker = [&]() -> asio::awaitable<void> {
      for (std::uint64_t i; (i = next.fetch_add(1)) < count;) {
        {
          std::lock_guard lock(mu);
          if (error) co_return;
        }
        auto op = part(i);
        Status s = co_await std::move(op);
        if (!s) {
          std::lock_guard lock(mu);
          if (!error) error = s.error();
          co_return;
        }
      }
    };
    std::vector<std::future<void>> running;
    for (unsigned w = 0; w < std::max(1u, o.parallel); ++w) running.push_back(asio::co_spawn(io, worker(), asio::use_future));
    for (auto& f : running) f.get();
    if (error) return *error;
    return {};
  }

  Status put_multipart(const std::string& key, int fd, std::uint64_t size) {
    S3Call start{"POST", key, {{"uploads", ""}}, {{"Content-Type", "application/octet-stream"}}, {}};
    auto started = run(send(std::move(start)));
    if (!started) return started.error();
    if (started->status != 200) return connectors::s3_error(*started, "CreateMultipartUpload " + key);
    pugi::xml_document doc;
    auto root = xml_root(doc, *started, "InitiateMultipartUploadResult", "CreateMultipartUpload " + key);
    if (!root) return root.error();
    const std::string upload = root->child_value("UploadId");
    if (upload.empty()) return failure(Errc::protocol, "CreateMultipartUpload " + key + ": no UploadId");

    const std::uint64_t count = (size + o.part_bytes - 1) / o.part_bytes;
    std::vector<std::string> etags(count);
    Status sent = parts(0, count, [&](std::uint64_t i) -> asio::awaitable<Status> {
      const std::uint64_t offset = i * o.part_bytes;
      auto bytes = read_range(fd, offset, std::min(o.part_bytes, size - offset));
      if (!bytes) co_return bytes.error();
      S3Call call{"PUT", key, {{"partNumber", std::to_string(i + 1)}, {"uploadId", upload}}, {}, std::move(*bytes)};
      auto op = send(std::move(call));
      auto r = co_await std::move(op);
      if (!r) co_return r.error();
      if (r->status != 200) co_return connectors::s3_error(*r, "UploadPart " + key);
      etags[i] = std::string(r->header("ETag"));
      if (etags[i].empty()) co_return failure(Errc::protocol, "UploadPart " + key + ": no ETag");
      co_return Status();
    });
    if (sent) {
      std::string body = "<CompleteMultipartUpload>";
      for (std::uint64_t i = 0; i < count; ++i)
        body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags[i] + "</ETag></Part>";
      body += "</CompleteMultipartUpload>";
      S3Call complete{"POST", key, {{"uploadId", upload}}, {{"Content-Type", "application/xml"}}, std::move(body)};
      auto done = run(send(std::move(complete)));
      if (!done) {
        sent = done.error();
      } else if (done->status != 200) {
        sent = connectors::s3_error(*done, "CompleteMultipartUpload " + key);
      } else {
        pugi::xml_document result;
        // Only an <Error> matters: services name the result element differently.
        if (auto r = xml_root(result, *done, nullptr, "CompleteMultipartUpload " + key); !r)
          sent = r.error();
      }
    }
    if (!sent) run(send(S3Call{"DELETE", key, {{"uploadId", upload}}, {}, {}}));  // best effort: a failed upload's parts
    return sent;
  }
};

PackStore::PackStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PackStore::~PackStore() = default;

Result<std::unique_ptr<PackStore>> PackStore::open(ObjectStoreOptions options) {
  if (auto s = connectors::check_path(options.prefix); !s) return failure(Errc::invalid, "prefix: " + s.error().message);
  if (options.part_bytes < (5u << 20)) return failure(Errc::invalid, "part_bytes: at least 5 MiB (S3's smallest part)");
  auto impl = std::make_unique<Impl>();
  connectors::S3ClientOptions client{
      .http = {.url = options.endpoint, .ca_file = options.ca_file, .connections = std::max(8u, 2 * options.parallel),
               .timeout = options.timeout, .body_limit = std::max<std::uint64_t>(options.part_bytes, kListBodyLimit) + (1u << 20)},
      .bucket = options.bucket,
      .credentials = {.access_key = options.access_key, .secret_key = options.secret_key, .region = options.region},
  };
  auto s3 = connectors::S3Client::create(impl->io.get_executor(), std::move(client));
  if (!s3) return s3.error();
  impl->s3 = std::move(*s3);
  impl->o = std::move(options);
  impl->thread = std::thread([io = &impl->io] { io->run(); });

  const std::string what = "bucket " + impl->o.bucket + " at " + impl->o.endpoint;
  auto head = impl->run(impl->send(S3Call{"HEAD", "", {}, {}, {}}));
  if (!head) return failure(head.error().code, what + ": " + head.error().message);
  if (head->status == 404) {
    auto made = impl->run(impl->send(S3Call{"PUT", "", {}, {}, {}}));
    if (!made) return failure(made.error().code, what + ": " + made.error().message);
    // 409: another node made it meanwhile.
    if (made->status != 200 && made->status != 409) return connectors::s3_error(*made, "CreateBucket " + what);
  } else if (head->status != 200) {
    return connectors::s3_error(*head, "HeadBucket " + what);
  }
  return std::unique_ptr<PackStore>(new PackStore(std::move(impl)));
}

std::string PackStore::key_of(std::uint64_t fid) const { return impl_->key_of(fid); }

Status PackStore::put(std::uint64_t fid, int fd, std::uint64_t size) {
  const std::string key = impl_->key_of(fid);
  if (size > impl_->o.part_bytes) return impl_->put_multipart(key, fd, size);
  auto bytes = read_range(fd, 0, size);
  if (!bytes) return bytes.error();
  S3Call call{"PUT", key, {}, {{"Content-Type", "application/octet-stream"}}, std::move(*bytes)};
  auto r = impl_->run(impl_->send(std::move(call)));
  if (!r) return r.error();
  if (r->status != 200) return connectors::s3_error(*r, "PutObject " + key);
  return {};
}

Result<std::uint64_t> PackStore::get(std::uint64_t fid, int fd) {
  const std::string key = impl_->key_of(fid);
  const std::uint64_t part = impl_->o.part_bytes;
  auto range = [](std::uint64_t first, std::uint64_t last) {
    return "bytes=" + std::to_string(first) + "-" + std::to_string(last);
  };
  // The first part tells the pack's size (Content-Range); the rest follow.
  auto first = impl_->run(impl_->send(S3Call{"GET", key, {}, {{"Range", range(0, part - 1)}}, {}}));
  if (!first) return first.error();
  if (first->status == 416) return std::uint64_t{0};  // an empty pack has no byte 0
  if (first->status == 200) {  // no range applied: the whole pack
    if (auto s = write_range(fd, 0, first->body); !s) return s.error();
    return first->body.size();
  }
  if (first->status != 206) return connectors::s3_error(*first, "GetObject " + key);
  auto total = total_of(first->header("Content-Range"));
  if (!total || first->body.size() != std::min(*total, part))
    return failure(Errc::protocol, "GetObject " + key + ": a part of another length than asked");
  if (auto s = write_range(fd, 0, first->body); !s) return s.error();
  const std::uint64_t size = *total;
  Status rest = impl_->parts(1, (size + part - 1) / part, [&](std::uint64_t i) -> asio::awaitable<Status> {
    const std::uint64_t offset = i * part, length = std::min(part, size - offset);
    S3Call call{"GET", key, {}, {{"Range", range(offset, offset + length - 1)}}, {}};
    auto op = impl_->send(std::move(call));
    auto r = co_await std::move(op);
    if (!r) co_return r.error();
    if (r->status != 206) co_return connectors::s3_error(*r, "GetObject " + key);
    if (r->body.size() != length) co_return failure(Errc::protocol, "GetObject " + key + ": a part of another length than asked");
    co_return write_range(fd, offset, r->body);
  });
  if (!rest) return rest.error();
  return size;
}

Status PackStore::remove(std::uint64_t fid) {
  const std::string key = impl_->key_of(fid);
  auto r = impl_->run(impl_->send(S3Call{"DELETE", key, {}, {}, {}}));
  if (!r) return r.error();
  if (r->status != 204 && r->status != 200 && r->status != 404) return connectors::s3_error(*r, "DeleteObject " + key);
  return {};
}

Result<bool> PackStore::holds(std::uint64_t fid) {
  const std::string key = impl_->key_of(fid);
  auto r = impl_->run(impl_->send(S3Call{"HEAD", key, {}, {}, {}}));
  if (!r) return r.error();
  if (r->status == 404) return false;
  if (r->status != 200) return connectors::s3_error(*r, "HeadObject " + key);
  return true;
}

Status PackStore::for_each(const std::function<void(std::uint64_t fid)>& fn) {
  const std::string prefix = impl_->packs_prefix();
  std::string token;
  do {
    S3Call call{"GET", "", {{"list-type", "2"}, {"prefix", prefix}, {"max-keys", "1000"}}, {}, {}};
    if (!token.empty()) call.query.emplace_back("continuation-token", token);
    auto r = impl_->run(impl_->send(std::move(call)));
    const std::string what = "ListObjectsV2 " + impl_->o.bucket + "/" + prefix;
    if (!r) return r.error();
    if (r->status != 200) return connectors::s3_error(*r, what);
    pugi::xml_document doc;
    auto root = xml_root(doc, *r, "ListBucketResult", what);
    if (!root) return root.error();
    for (auto c : root->children("Contents")) {
      std::string_view name = c.child_value("Key");
      if (!name.starts_with(prefix)) return failure(Errc::protocol, what + ": a key outside the prefix");
      name.remove_prefix(prefix.size());
      std::uint64_t fid = 0;
      auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), fid, 16);
      if (name.size() == 16 && ec == std::errc() && end == name.data() + name.size()) fn(fid);
    }
    token = std::string_view(root->child_value("IsTruncated")) == "true" ? root->child_value("NextContinuationToken") : "";
  } while (!token.empty());
  return {};
}

}  // namespace weft::objects
