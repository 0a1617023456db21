// The files the prefetcher reasons about: each has an id, a path, a size and
// a dataset — the directory that holds it — and each dataset has a listing in
// byte order of the paths (what a sampler's indices refer to, sampler.hpp).
// Offline it is built from a trace; online from the namespace's listings.
// Immutable once built, so experts may share one from several threads.
#pragma once

#include "cache/learn/types.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace weft::cache::learn {

class Catalog {
 public:
  class Builder {
   public:
    // The file's id (ids are given in the order paths are first added); a
    // path added again keeps its id and the larger of the two sizes.
    FileId add(std::string_view path, std::uint64_t size);
    Catalog build() &&;

   private:
    std::vector<std::string> paths_;
    std::vector<std::uint64_t> sizes_;
    std::unordered_map<std::string, FileId> ids_;
  };

  std::size_t files() const { return paths_.size(); }
  const std::string& path(FileId f) const { return paths_[f]; }
  std::uint64_t size(FileId f) const { return sizes_[f]; }
  DatasetId dataset_of(FileId f) const { return dataset_of_[f]; }
  // The dataset's files in byte order of their paths.
  std::span<const FileId> listing(DatasetId d) const { return listings_[d]; }
  std::optional<FileId> find(std::string_view path) const;
  std::optional<DatasetId> find_dataset(std::string_view directory) const;

  // The directory part of a path ("a/b/c" -> "a/b", "c" -> "").
  static std::string_view directory_of(std::string_view path);

 private:
  std::vector<std::string> paths_;
  std::vector<std::uint64_t> sizes_;
  std::vector<DatasetId> dataset_of_;
  std::vector<std::vector<FileId>> listings_;
  std::unordered_map<std::string, FileId> ids_;
  std::unordered_map<std::string, DatasetId> dataset_ids_;
};

}  // namespace weft::cache::learn
