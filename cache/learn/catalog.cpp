#include "cache/learn/catalog.hpp"

#include <algorithm>

namespace weft::cache::learn {

FileId Catalog::Builder::add(std::string_view path, std::uint64_t size) {
  auto [it, added] = ids_.try_emplace(std::string(path), static_cast<FileId>(paths_.size()));
  if (added) {
    paths_.emplace_back(path);
    sizes_.push_back(size);
  } else {
    sizes_[it->second] = std::max(sizes_[it->second], size);
  }
  return it->second;
}

Catalog Catalog::Builder::build() && {
  Catalog c;
  c.paths_ = std::move(paths_);
  c.sizes_ = std::move(sizes_);
  c.ids_ = std::move(ids_);
  c.dataset_of_.resize(c.paths_.size());
  for (FileId f = 0; f < c.paths_.size(); ++f) {
    std::string dir(directory_of(c.paths_[f]));
    auto [it, added] = c.dataset_ids_.try_emplace(dir, static_cast<DatasetId>(c.listings_.size()));
    if (added) c.listings_.emplace_back();
    c.dataset_of_[f] = it->second;
    c.listings_[it->second].push_back(f);
  }
  for (auto& listing : c.listings_) {
    // std::string compares as unsigned bytes: the order sampler.hpp documents.
    std::sort(listing.begin(), listing.end(), [&](FileId a, FileId b) { return c.paths_[a] < c.paths_[b]; });
  }
  return c;
}

std::optional<FileId> Catalog::find(std::string_view path) const {
  auto it = ids_.find(std::string(path));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<DatasetId> Catalog::find_dataset(std::string_view directory) const {
  auto it = dataset_ids_.find(std::string(directory));
  if (it == dataset_ids_.end()) return std::nullopt;
  return it->second;
}

std::string_view Catalog::directory_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view{} : path.substr(0, slash);
}

}  // namespace weft::cache::learn
