// The one translation unit that compiles Asio's implementation
// (BOOST_ASIO_SEPARATE_COMPILATION is set for the whole project).
#include <boost/asio/impl/src.hpp>
// Asio's TLS streams (OpenSSL), for the HTTP server's TLS listeners.
#include <boost/asio/ssl/impl/src.hpp>
