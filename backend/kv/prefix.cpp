#include "backend/kv/kv.hpp"

namespace weft::kv {

std::string prefix_end(std::string_view prefix) {
  // Drop trailing 0xff bytes (they cannot be incremented) and increment the
  // last byte that can be; a prefix of only 0xff bytes has no upper bound.
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last != 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return end;
}

}  // namespace weft::kv
