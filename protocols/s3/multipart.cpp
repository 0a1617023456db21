// Multipart uploads: parts are received into files outside the namespace
// (uploads.hpp says why) and joined into the object through write_object()
// on completion, on the blocking pool so that a long join does not hold a
// network thread.
#include "gateway/ns/offload.hpp"
#include "protocols/s3/conditions.hpp"
#include "protocols/s3/dates.hpp"
#include "protocols/s3/handlers.hpp"
#include "protocols/s3/payload.hpp"
#include "protocols/s3/store.hpp"
#include "protocols/s3/xml.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <chrono>

namespace weft::s3 {

namespace asio = boost::asio;

namespace {

constexpr std::uint32_t kMaxParts = 10000;
constexpr std::size_t kMaxCompleteBody = 4 << 20;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <class T>
std::optional<T> integer(const std::string* text) {
  if (!text) return std::nullopt;
  T v{};
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || end != text->data() + text->size() || text->empty()) return std::nullopt;
  return v;
}

// The upload named by ?uploadId=, if it is for this bucket and key and the
// caller started it (or administers the gateway).
Found<Upload> own_upload(Service& s, const Request& r) {
  const std::string* id = r.param("uploadId");
  if (!id) return Code::NoSuchUpload;
  auto u = s.uploads.find(*id);
  if (!u || u->bucket != r.bucket || u->key != r.key) return Code::NoSuchUpload;
  if (u->owner != r.ctx.principal.user && !r.ctx.principal.admin) return Code::AccessDenied;
  return std::move(*u);
}

Found<std::uint32_t> part_number(const Request& r) {
  auto n = integer<std::uint32_t>(r.param("partNumber"));
  if (!n || *n < 1 || *n > kMaxParts)
    return Error(Code::InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive");
  return *n;
}

// Writes every block a source gives into a part file, then publishes it.
// Blocks are written on the blocking pool while the next one is received,
// and the disk starts on each as it is written, so that publishing (its
// fsync) waits for the part's tail only.
asio::awaitable<Found<std::string>> receive_part(Service& s, PartFile& part, ByteSource& source,
                                                 const std::function<std::string()>& md5_hex) {
  const StoreBlock write = [&](std::uint64_t offset, std::span<const std::byte> block)
      -> asio::awaitable<Found<std::size_t>> {
    const int e = co_await ns::offload(s.blocking, [&] {
      for (std::size_t done = 0; done < block.size();) {
        ssize_t w = ::pwrite(part.fd, block.data() + done, block.size() - done, static_cast<off_t>(offset + done));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        done += static_cast<std::size_t>(w);
      }
      ::sync_file_range(part.fd, static_cast<off_t>(offset), static_cast<off_t>(block.size()), SYNC_FILE_RANGE_WRITE);
      return 0;
    });
    if (e != 0) co_return Error(e == ENOSPC ? Code::InsufficientStorage : Code::InternalError);
    co_return block.size();
  };
  auto stream = store_blocks(source, write);
  auto stored = co_await std::move(stream);
  if (!stored) {
    s.uploads.discard_part(part);
    co_return stored.error();
  }
  std::string etag = md5_hex();
  auto ec = co_await ns::offload(s.blocking, [&] { return s.uploads.publish_part(part, etag); });
  if (ec) {
    s.uploads.discard_part(part);
    co_return Error(Code::InternalError, "Cannot store the part: " + ec.message());
  }
  co_return etag;
}

// The parts of an upload, one after the other, as the bytes of the object.
class PartsSource final : public ByteSource {
 public:
  explicit PartsSource(std::vector<Part> parts) : parts_(std::move(parts)) {}
  ~PartsSource() override {
    if (fd_ >= 0) ::close(fd_);
  }
  asio::awaitable<Found<std::size_t>> read(std::span<std::byte> out) override {
    while (next_ <= parts_.size()) {
      if (fd_ < 0) {
        if (next_ == parts_.size()) break;
        fd_ = ::open(parts_[next_].path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) co_return Error(Code::InvalidPart);
        ++next_;
      }
      ssize_t n = ::read(fd_, out.data(), out.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) co_return Error(Code::InternalError, "Cannot read a part");
      if (n > 0) co_return static_cast<std::size_t>(n);
      ::close(fd_);
      fd_ = -1;
    }
    co_return std::size_t{0};
  }

 private:
  std::vector<Part> parts_;
  std::size_t next_ = 0;
  int fd_ = -1;
};

Error too_small(const Part& p, std::uint64_t min) {
  Error e(Code::EntityTooSmall);
  e.extra = {{"ProposedSize", std::to_string(p.size)},
             {"MinSizeAllowed", std::to_string(min)},
             {"PartNumber", std::to_string(p.number)},
             {"ETag", p.etag}};
  return e;
}

void add_initiator(pugi::xml_node parent, const std::string& user) {
  for (const char* role : {"Initiator", "Owner"}) {
    auto node = parent.append_child(role);
    xml::add(node, "ID", user);
    xml::add(node, "DisplayName", user);
  }
}

}  // namespace

asio::awaitable<Outcome> create_multipart_upload(Service& s, Request& r) {
  auto key = key_path(r.key);
  if (!key) co_return key.error();
  if (key->marker()) co_return Error(Code::InvalidArgument, "An object key ending in '/' cannot be uploaded in parts");
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  auto meta = meta_from_headers(r.head.headers);
  if (!meta) co_return meta.error();
  Upload u;
  u.bucket = r.bucket;
  u.key = r.key;
  u.owner = r.ctx.principal.user;
  u.initiated_ns = now_ns();
  u.meta = meta->encode();
  auto made = co_await ns::offload(s.blocking, [&] { return s.uploads.create(u); });
  if (!made) co_return Error(Code::InternalError, "Cannot create the upload: " + made.error().message());
  pugi::xml_document doc;
  auto root = xml::start(doc, "InitiateMultipartUploadResult");
  xml::add(root, "Bucket", r.bucket);
  xml::add(root, "Key", r.key);
  xml::add(root, "UploadId", made->id);
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> upload_part(Service& s, Request& r) {
  auto upload = own_upload(s, r);
  if (!upload) co_return upload.error();
  auto number = part_number(r);
  if (!number) co_return number.error();
  PayloadReader body(r);
  if (auto e = body.start()) co_return e;
  auto part = s.uploads.new_part(*upload, *number);
  if (!part) co_return Error(Code::NoSuchUpload);
  PayloadSource source(body);
  auto etag = co_await receive_part(s, *part, source, [&] { return body.md5_hex(); });
  if (!etag) co_return etag.error();
  std::vector<http::Header> headers;
  headers.emplace_back("ETag", "\"" + *etag + "\"");
  if (const auto& sum = body.checksum())
    headers.push_back({std::string(checksum_header(sum->first)), sum->second});
  co_await r.send_empty(200, std::move(headers));
  co_return std::nullopt;
}

asio::awaitable<Outcome> upload_part_copy(Service& s, Request& r) {
  auto upload = own_upload(s, r);
  if (!upload) co_return upload.error();
  auto number = part_number(r);
  if (!number) co_return number.error();
  auto ref = parse_copy_source(*r.header("x-amz-copy-source"));
  if (!ref) co_return ref.error();
  auto src_key = key_path(ref->key);
  if (!src_key) co_return src_key.error();
  if (src_key->marker()) co_return Error(Code::NoSuchKey);
  auto src_bucket = co_await find_bucket(s.ns, r.ctx, ref->bucket);
  if (!src_bucket) co_return src_bucket.error();
  auto src = co_await find_object(s.ns, r.ctx, src_bucket->ino, *src_key);
  if (!src) co_return src.error();
  auto src_meta = co_await load_meta(s, r.ctx, src->ino);
  if (!src_meta) co_return src_meta.error();
  if (auto e = check_copy_conditions(r, etag_of(**src_meta, *src), src->mtime_ns / 1000000000)) co_return e;
  std::uint64_t offset = 0, length = src->size;
  if (const std::string* range = r.header("x-amz-copy-source-range")) {
    auto br = parse_range(*range, src->size);
    if (!br || !*br || range->find("=-") != std::string::npos)
      co_return Error(Code::InvalidArgument, "The x-amz-copy-source-range value must be of the form bytes=first-last");
    offset = (*br)->first;
    length = (*br)->second;
  }
  auto h = co_await s.ns.open(r.ctx, src->ino, ns::OpenFlags{});
  if (!h) co_return from_ns(h.error(), Subject::key);
  auto part = s.uploads.new_part(*upload, *number);
  if (!part) {
    co_await s.ns.release(r.ctx, *h);
    co_return Error(Code::NoSuchUpload);
  }
  FileSource source(s.ns, r.ctx, *h, *src, offset, length);
  auto etag = co_await receive_part(s, *part, source, [&] { return source.md5_hex(); });
  co_await s.ns.release(r.ctx, *h);
  if (!etag) co_return etag.error();
  pugi::xml_document doc;
  auto root = xml::start(doc, "CopyPartResult");
  xml::add(root, "LastModified", iso8601(now_ns()));
  xml::add(root, "ETag", "\"" + *etag + "\"");
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> complete_multipart_upload(Service& s, Request& r) {
  auto upload = own_upload(s, r);
  if (!upload) co_return upload.error();
  PayloadReader body(r);
  if (auto e = body.start()) co_return e;
  auto text = co_await body.read_all(kMaxCompleteBody);
  if (!text) co_return text.error();
  pugi::xml_document in;
  if (!xml::parse(in, *text) || !in.child("CompleteMultipartUpload")) co_return Error(Code::MalformedXML);
  auto stored = s.uploads.parts(upload->id);
  if (!stored) co_return Error(Code::NoSuchUpload);

  // The parts named, in ascending order, each present with its ETag and,
  // but for the last, at least the minimum part size.
  std::vector<Part> chosen;
  Digest md5s(Digest::Kind::md5);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> runs;
  for (auto p : in.child("CompleteMultipartUpload").children("Part")) {
    std::string num(xml::child_text(p, "PartNumber"));
    auto n = integer<std::uint32_t>(&num);
    std::string_view etag = xml::child_text(p, "ETag");
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
    if (!n) co_return Error(Code::MalformedXML);
    if (!chosen.empty() && *n <= chosen.back().number) co_return Error(Code::InvalidPartOrder);
    auto it = std::find_if(stored->begin(), stored->end(), [&](const Part& x) { return x.number == *n; });
    if (it == stored->end() || it->etag != etag) co_return Error(Code::InvalidPart);
    chosen.push_back(*it);
  }
  if (chosen.empty()) co_return Error(Code::MalformedXML, "You must specify at least one part");
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const Part& p = chosen[i];
    if (i + 1 < chosen.size() && p.size < s.min_part_size) {
      co_return too_small(p, s.min_part_size);
    }
    auto raw = std::string(p.etag.size() / 2, '\0');
    for (std::size_t k = 0; k < raw.size(); ++k)
      raw[k] = static_cast<char>(std::stoi(p.etag.substr(2 * k, 2), nullptr, 16));
    md5s.update(raw);
    if (!runs.empty() && runs.back().first == p.size) {
      ++runs.back().second;
    } else {
      runs.emplace_back(p.size, 1);
    }
  }
  const std::string etag = md5s.finish_hex() + "-" + std::to_string(chosen.size());

  auto key = key_path(r.key);
  if (!key) co_return key.error();
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  auto meta = ObjectMeta::decode(upload->meta);
  PartsSource source(chosen);
  NewObject obj{bucket->ino, &*key, [&] {
                  ObjectMeta m = meta ? std::move(*meta) : ObjectMeta{};
                  m.etag = etag;
                  m.checksum.reset();
                  m.parts = runs;
                  return m;
                }};
  auto attr = co_await asio::co_spawn(s.blocking, write_object(s, r, obj, source), asio::use_awaitable);
  if (!attr) co_return attr.error();
  co_await ns::offload(s.blocking, [&] { return s.uploads.remove(upload->id); });
  pugi::xml_document doc;
  auto root = xml::start(doc, "CompleteMultipartUploadResult");
  xml::add(root, "Location", "/" + r.bucket + "/" + r.key);
  xml::add(root, "Bucket", r.bucket);
  xml::add(root, "Key", r.key);
  xml::add(root, "ETag", "\"" + etag + "\"");
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> abort_multipart_upload(Service& s, Request& r) {
  auto upload = own_upload(s, r);
  if (!upload) co_return upload.error();
  auto ec = co_await ns::offload(s.blocking, [&] { return s.uploads.remove(upload->id); });
  if (ec) co_return Error(Code::NoSuchUpload);
  co_await r.send_empty(204, {});
  co_return std::nullopt;
}

asio::awaitable<Outcome> list_parts(Service& s, Request& r) {
  auto upload = own_upload(s, r);
  if (!upload) co_return upload.error();
  auto parts = s.uploads.parts(upload->id);
  if (!parts) co_return Error(Code::NoSuchUpload);
  std::uint32_t marker = integer<std::uint32_t>(r.param("part-number-marker")).value_or(0);
  std::size_t max = std::min<std::size_t>(integer<std::size_t>(r.param("max-parts")).value_or(1000), 1000);
  pugi::xml_document doc;
  auto root = xml::start(doc, "ListPartsResult");
  xml::add(root, "Bucket", r.bucket);
  xml::add(root, "Key", r.key);
  xml::add(root, "UploadId", upload->id);
  add_initiator(root, upload->owner);
  xml::add(root, "StorageClass", "STANDARD");
  xml::add(root, "PartNumberMarker", std::to_string(marker));
  std::vector<const Part*> shown;
  bool truncated = false;
  for (const auto& p : *parts) {
    if (p.number <= marker) continue;
    if (shown.size() == max) {
      truncated = true;
      break;
    }
    shown.push_back(&p);
  }
  if (!shown.empty()) xml::add(root, "NextPartNumberMarker", std::to_string(shown.back()->number));
  xml::add(root, "MaxParts", std::to_string(max));
  xml::add(root, "IsTruncated", truncated ? "true" : "false");
  for (const Part* p : shown) {
    auto node = root.append_child("Part");
    xml::add(node, "PartNumber", std::to_string(p->number));
    xml::add(node, "LastModified", iso8601(p->mtime_ns));
    xml::add(node, "ETag", "\"" + p->etag + "\"");
    xml::add(node, "Size", std::to_string(p->size));
  }
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> list_multipart_uploads(Service& s, Request& r) {
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  std::string prefix = r.param("prefix") ? *r.param("prefix") : std::string();
  std::string key_marker = r.param("key-marker") ? *r.param("key-marker") : std::string();
  std::string id_marker = r.param("upload-id-marker") ? *r.param("upload-id-marker") : std::string();
  std::size_t max = std::min<std::size_t>(integer<std::size_t>(r.param("max-uploads")).value_or(1000), 1000);
  auto all = co_await ns::offload(s.blocking, [&] { return s.uploads.all(); });
  std::erase_if(all, [&](const Upload& u) {
    if (u.bucket != r.bucket || !u.key.starts_with(prefix)) return true;
    if (u.owner != r.ctx.principal.user && !r.ctx.principal.admin) return true;
    if (key_marker.empty()) return false;
    return u.key < key_marker || (u.key == key_marker && (id_marker.empty() || u.id <= id_marker));
  });
  std::sort(all.begin(), all.end(), [](const Upload& a, const Upload& b) {
    return std::tie(a.key, a.initiated_ns, a.id) < std::tie(b.key, b.initiated_ns, b.id);
  });
  bool truncated = all.size() > max;
  if (truncated) all.resize(max);
  pugi::xml_document doc;
  auto root = xml::start(doc, "ListMultipartUploadsResult");
  xml::add(root, "Bucket", r.bucket);
  xml::add(root, "KeyMarker", key_marker);
  xml::add(root, "UploadIdMarker", id_marker);
  if (truncated) {
    xml::add(root, "NextKeyMarker", all.back().key);
    xml::add(root, "NextUploadIdMarker", all.back().id);
  }
  xml::add(root, "Prefix", prefix);
  xml::add(root, "MaxUploads", std::to_string(max));
  xml::add(root, "IsTruncated", truncated ? "true" : "false");
  for (const auto& u : all) {
    auto node = root.append_child("Upload");
    xml::add(node, "Key", u.key);
    xml::add(node, "UploadId", u.id);
    add_initiator(node, u.owner);
    xml::add(node, "StorageClass", "STANDARD");
    xml::add(node, "Initiated", iso8601(u.initiated_ns));
  }
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

}  // namespace weft::s3
