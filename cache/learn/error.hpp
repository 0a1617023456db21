// Errors of the learning cache's offline tools: one message that names the
// input and what is wrong with it (e.g. "trace.csv:17: length: must be a
// positive integer, got \"0\""), returned as a value.
#pragma once

#include <boost/system/result.hpp>

#include <string>

namespace weft::cache::learn {

struct Error {
  std::string message;
};
// Found by argument-dependent lookup when result<T, Error>::value() fails.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

template <class T>
using Result = boost::system::result<T, Error>;

}  // namespace weft::cache::learn
