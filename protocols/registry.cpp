#include "protocols/registry.hpp"

#include "protocols/hub/server.hpp"
#include "protocols/nfs/front_end.hpp"
#include "protocols/rest/front_end.hpp"
#include "protocols/s3/front_end.hpp"
#include "protocols/sftp/front_end.hpp"
#include "protocols/smb/front_end.hpp"

#include <algorithm>
#include <stdexcept>

namespace weft::protocols {

FrontEnd::~FrontEnd() = default;

void Registry::add(std::string_view protocol, Factory factory) {
  if (std::find(kProtocols.begin(), kProtocols.end(), protocol) == kProtocols.end()) {
    throw std::invalid_argument("unknown protocol \"" + std::string(protocol) + "\"");
  }
  if (!factory) throw std::invalid_argument("empty factory for " + std::string(protocol));
  if (!factories_.emplace(std::string(protocol), std::move(factory)).second) {
    throw std::invalid_argument("protocol " + std::string(protocol) + " registered twice");
  }
}

const Factory* Registry::find(std::string_view protocol) const {
  auto it = factories_.find(protocol);
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string_view> Registry::available() const {
  std::vector<std::string_view> out;
  for (auto p : kProtocols) {
    if (factories_.contains(p)) out.push_back(p);
  }
  return out;
}

void register_all(Registry& registry) {
  // Each protocol's issue adds its factory here; a listener of a protocol
  // without one is reported as "not available in this build".
  registry.add("s3", s3::make_front_end);
  registry.add("rest", hub::make_rest_front_end);  // REST with the hub protocol mounted
  registry.add("nfs", nfs::make_front_end);
  registry.add("sftp", sftp::make_front_end);
  registry.add("smb", smb::make_front_end);
}

}  // namespace weft::protocols
