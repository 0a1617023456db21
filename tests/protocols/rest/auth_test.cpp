// Basic credentials are base64: what decodes, and what is refused.
#include "protocols/rest/auth.hpp"

#include <doctest/doctest.h>

using weft::rest::base64_decode;

TEST_CASE("base64 with padding decodes; anything else is refused") {
  CHECK(base64_decode("YWRtaW46c2VjcmV0") == "admin:secret");
  CHECK(base64_decode("YTpi") == "a:b");
  CHECK(base64_decode("YTpiYw==") == "a:bc");
  CHECK(base64_decode("YTpiY2Q=") == "a:bcd");
  CHECK(base64_decode("") == "");
  for (const char* bad : {"YTpi=", "YTp", "YT!i", "Y===", "YT=i", "YTpiYw=a", "YWRtaW46c2VjcmV0\n"}) {
    std::string text = bad;
    CAPTURE(text);
    CHECK_FALSE(base64_decode(text).has_value());
  }
}
