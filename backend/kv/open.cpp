#include "backend/kv/kv.hpp"

namespace weft::kv {

std::unique_ptr<Store> open_address(std::string_view address, RocksDbOptions rocksdb,
                                    std::size_t connections, Status* error) {
  if (address.starts_with("rocksdb:")) {
    rocksdb.path = std::string(address.substr(8));
    if (rocksdb.path.empty()) {
      *error = {Code::invalid, "rocksdb: needs a path"};
      return nullptr;
    }
    return open_rocksdb(rocksdb, error);
  }
  if (address.starts_with("postgres://") || address.starts_with("postgresql://"))
    return open_postgres({.conninfo = std::string(address), .connections = connections}, error);
  *error = {Code::invalid, "a metadata address is rocksdb:PATH or postgres://..., not '" +
                               std::string(address) + "'"};
  return nullptr;
}

}  // namespace weft::kv
