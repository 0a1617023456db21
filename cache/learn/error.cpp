#include "cache/learn/error.hpp"

#include <stdexcept>

namespace weft::cache::learn {

void throw_exception_from_error(const Error& e, const boost::source_location&) {
  throw std::runtime_error(e.message);
}

}  // namespace weft::cache::learn
