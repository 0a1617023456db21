// A Source over an S3-compatible bucket (path-style requests, SigV4 header
// authentication, HTTP or HTTPS). Keys map to paths below an optional
// prefix; directories are the '/'-delimited common prefixes of keys (and
// the empty "dir/" objects mkdir writes).
//
//  - stat: HeadObject, else a one-key listing of "path/" (a directory);
//    list: ListObjectsV2 with delimiter '/' and continuation; an object
//    and a prefix of one name list as the object.
//  - Version: the ETag. read: a ranged GetObject with If-Match, so a
//    reader never gets bytes of another version (Errc::changed).
//  - mtime: Last-Modified, whole seconds (what HeadObject says), so that
//    stat and list agree. Modes: 0644 files, 0755 directories.
//  - write: PutObject (payload signed, or UNSIGNED-PAYLOAD), unless a
//    prefix has the name (Errc::is_dir); S3 has no directories, so a file
//    needs no parent. remove: DeleteObject, or an
//    empty directory's marker. rename: CopyObject then DeleteObject, for
//    files only (a prefix: Errc::not_supported); not atomic.
#pragma once

#include "backend/connectors/http_client.hpp"
#include "backend/connectors/sigv4.hpp"

namespace weft::connectors {

struct S3Options {
  HttpOptions http;  // the endpoint: "http://HOST:PORT" (or https)
  std::string bucket;
  std::string prefix;  // the source's root inside the bucket: "" or "a/b"
  sigv4::Credentials credentials;
  bool sign_payload = true;  // else PUT bodies are sent as UNSIGNED-PAYLOAD
  bool read_only = false;
};

// Errors: a malformed endpoint, bucket or prefix (Errc::invalid).
Result<std::shared_ptr<Source>> make_s3_source(boost::asio::any_io_executor executor, S3Options options);

}  // namespace weft::connectors
