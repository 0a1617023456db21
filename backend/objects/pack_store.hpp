// The object-store data engine: sealed data files kept as objects in an
// S3-compatible bucket (Ceph RGW, MinIO, AWS S3, another weft), so that
// several gateway nodes on one shared metadata engine serve the same data.
//
// A sealed version's data file (backend/data/file_store.hpp, named by a fid
// that is never reused) is one object, its "pack": PREFIX/packs/<fid as 16
// hex digits>, holding the version's chunks in offset order (the version's
// manifest, in the metadata, says where each chunk lies). Packs are written
// once and never change, so a node's local data files are a cache of them:
// a node that lacks a sealed file fetches its pack.
//
// Contract:
//  - put() returns once the whole pack is stored: a single PutObject up to
//    part_bytes, a multipart upload above it (parts sent side by side; an
//    upload that fails is aborted). Putting a fid again replaces the object
//    with the same bytes.
//  - get() writes the whole pack into `fd` from offset 0 (ranged GETs of
//    part_bytes, side by side) and returns its size; Errc::not_found when
//    there is no such pack.
//  - remove() of a pack that is not there succeeds.
//  - holds() is false only when the bucket says there is no such pack.
//  - Calls block (they are for the namespace's blocking threads) and may
//    be made from many threads at once; the requests run on the store's
//    own I/O thread. Transport failures are Errc::unavailable or
//    Errc::timed_out, refusals Errc::permission, with a message for logs.
#pragma once

#include "backend/connectors/source.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace weft::objects {

struct ObjectStoreOptions {
  std::string endpoint;  // "http://HOST[:PORT]" or "https://..."
  std::string bucket;
  std::string prefix;  // "" or "a/b": the node group's root in the bucket
  std::string access_key, secret_key;
  std::string region = "us-east-1";
  std::string ca_file;  // https: PEM certificates to trust instead of the system's
  std::uint64_t part_bytes = 32ull << 20;
  unsigned parallel = 4;  // parts in flight per put() or get()
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

class PackStore {
 public:
  // Checks the options and that the bucket answers (creating it when it is
  // missing): a gateway must not start on a data engine it cannot reach.
  static connectors::Result<std::unique_ptr<PackStore>> open(ObjectStoreOptions options);
  ~PackStore();

  connectors::Status put(std::uint64_t fid, int fd, std::uint64_t size);
  connectors::Result<std::uint64_t> get(std::uint64_t fid, int fd);
  connectors::Status remove(std::uint64_t fid);
  // Whether the bucket holds fid's pack (a HEAD).
  connectors::Result<bool> holds(std::uint64_t fid);
  // Every pack's fid, in key order.
  connectors::Status for_each(const std::function<void(std::uint64_t fid)>& fn);

  // "PREFIX/packs/00000000000000ff": for logs and tests.
  std::string key_of(std::uint64_t fid) const;

  struct Impl;

 private:
  explicit PackStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::objects
