// Writing an object: the one path every operation that creates object
// content takes (PutObject, CopyObject, CompleteMultipartUpload). The new
// content is staged, invisible, and replaces the key atomically only after
// the source reported its end with every check passed; the metadata xattr
// follows. Any failure discards the staged file and leaves the previous
// version intact.
#pragma once

#include "protocols/s3/meta.hpp"
#include "protocols/s3/paths.hpp"
#include "protocols/s3/payload.hpp"
#include "protocols/s3/request.hpp"
#include "protocols/s3/service.hpp"

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <span>

namespace weft::s3 {

// Bytes of a new object, in order; read() returns 0 at the end, and only
// once the content is known to be right (signatures, digests).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual boost::asio::awaitable<Found<std::size_t>> read(std::span<std::byte> out) = 0;
};

struct NewObject {
  ns::Ino bucket = 0;
  const KeyPath* key = nullptr;
  // Called after the source ended: the metadata to store (its version is set here).
  std::function<ObjectMeta()> meta;
};

// The object's stored metadata; defaults for a file without any (written
// by another protocol). AccessDenied when the caller may not read the file.
boost::asio::awaitable<Found<MetaRef>> load_meta(Service& s, const ns::OpContext& ctx, ns::Ino ino);

// Stores each block of `source` with `store` (given its offset), in order,
// while the next block is received; returns the bytes stored, or the first
// error of either side.
using StoreBlock =
    std::function<boost::asio::awaitable<Found<std::size_t>>(std::uint64_t offset, std::span<const std::byte> block)>;
boost::asio::awaitable<Found<std::uint64_t>> store_blocks(ByteSource& source, const StoreBlock& store);

// Returns the committed file's attributes.
boost::asio::awaitable<Found<ns::Attr>> write_object(Service& s, Request& r, const NewObject& obj,
                                                     ByteSource& source);

// x-amz-copy-source: "bucket/key" or "/bucket/key", URL-encoded, with an
// optional "?versionId=" (only "null" exists).
struct SourceRef {
  std::string bucket;
  std::string key;
};
Found<SourceRef> parse_copy_source(const std::string& header);

// A request's verified payload (PutObject, UploadPart).
class PayloadSource final : public ByteSource {
 public:
  explicit PayloadSource(PayloadReader& body) : body_(body) {}
  boost::asio::awaitable<Found<std::size_t>> read(std::span<std::byte> out) override;

 private:
  PayloadReader& body_;
};

// Reads a byte range of a namespace file through an open handle, with the
// MD5 of what it read (CopyObject, UploadPartCopy). Its end is reported
// only if the file is still the version `source` describes, so a copy
// never mixes two versions.
class FileSource final : public ByteSource {
 public:
  FileSource(ns::Namespace& ns, const ns::OpContext& ctx, ns::Handle h, const ns::Attr& source,
             std::uint64_t offset, std::uint64_t length)
      : ns_(ns), ctx_(ctx), h_(h), source_(source), offset_(offset), left_(length) {}
  boost::asio::awaitable<Found<std::size_t>> read(std::span<std::byte> out) override;
  std::string md5_hex() { return md5_.finish_hex(); }

 private:
  ns::Namespace& ns_;
  const ns::OpContext& ctx_;
  ns::Handle h_;
  ns::Attr source_;
  std::uint64_t offset_;
  std::uint64_t left_;
  Digest md5_{Digest::Kind::md5};
};

}  // namespace weft::s3
