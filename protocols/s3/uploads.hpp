// Multipart uploads in progress, kept outside the namespace, in
// DATA_DIR/s3-uploads/<upload-id>/:
//   upload.json        what CreateMultipartUpload was given (bucket, key,
//                      owner, metadata and tags)
//   <n>.<md5-hex>      part n, fsynced before UploadPart answers; its name
//                      carries its ETag, so CompleteMultipartUpload finds
//                      exactly the part the client names
//   tmp.<n>.<random>   a part being received
//
// Why outside the namespace: parts are protocol state, not files. Here no
// protocol can see them, no name of the namespace is reserved for them, and
// a part costs one plain file write and fsync instead of namespace
// chunk-hashing and a metadata commit, all of which would be paid again when
// the parts are joined. Completing writes the object through the namespace
// (stage, write, commit) with the caller's identity, so every namespace rule
// and permission applies at that point; abort and complete delete the
// upload's directory.
//
// Calls that fsync or remove trees block: run them on a blocking pool.
#pragma once

#include <boost/system/result.hpp>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::s3 {

struct Upload {
  std::string id;  // 32 lower-case hex digits
  std::string bucket;
  std::string key;
  std::string owner;  // user name
  std::int64_t initiated_ns = 0;
  std::string meta;  // ObjectMeta::encode() of the create request
};

struct Part {
  std::uint32_t number = 0;
  std::string etag;  // MD5 hex, without quotes
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::filesystem::path path;
};

// A part being received: write to fd, then publish_part() or discard_part().
struct PartFile {
  int fd = -1;
  std::uint32_t number = 0;
  std::filesystem::path dir;
  std::filesystem::path temp;
};

class Uploads {
 public:
  explicit Uploads(std::filesystem::path root);

  // Creates the root; removes parts left half-received by a crash.
  std::error_code init();
  // Assigns the id and makes the upload durable.
  boost::system::result<Upload> create(Upload u);
  // std::errc::no_such_file_or_directory for unknown (or malformed) ids.
  boost::system::result<Upload> find(std::string_view id) const;
  std::vector<Upload> all() const;

  boost::system::result<PartFile> new_part(const Upload& u, std::uint32_t number);
  // fsyncs the data, names it by its ETag (replacing an earlier upload of
  // the same part number) and fsyncs the directory. Closes the fd.
  std::error_code publish_part(PartFile& p, std::string_view md5_hex);
  void discard_part(PartFile& p);
  // The parts, by number, the latest upload of each.
  boost::system::result<std::vector<Part>> parts(std::string_view id) const;
  std::error_code remove(std::string_view id);
  // Aborts the uploads initiated before `cutoff_ns` (clients that neither
  // completed nor aborted them); returns how many were removed.
  std::size_t remove_stale(std::int64_t cutoff_ns);

 private:
  std::optional<std::filesystem::path> dir_of(std::string_view id) const;

  std::filesystem::path root_;
  std::mutex publish_mu_;  // publish: rename and removal of the replaced part together
};

}  // namespace weft::s3
