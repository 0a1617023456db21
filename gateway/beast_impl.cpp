// Boost.Beast compiled once for the whole program (BOOST_BEAST_SEPARATE_COMPILATION
// is defined globally), instead of in every file that includes it.
#include <boost/beast/src.hpp>
