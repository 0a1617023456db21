// RFC 3339 times as the audit log and the REST API write and read them.
#include "gateway/audit/time.hpp"

#include <doctest/doctest.h>

using weft::audit::format_time;
using weft::audit::parse_time;

TEST_CASE("format_time writes UTC with microseconds") {
  CHECK(format_time(0) == "1970-01-01T00:00:00.000000Z");
  CHECK(format_time(1'700'000'000'123'456'789) == "2023-11-14T22:13:20.123456Z");
  CHECK(format_time(-1'000) == "1969-12-31T23:59:59.999999Z");
  // The same second again, and the next one (the date part is reused within a second).
  CHECK(format_time(1'700'000'000'000'001'000) == "2023-11-14T22:13:20.000001Z");
  CHECK(format_time(1'700'000'000'999'999'999) == "2023-11-14T22:13:20.999999Z");
  CHECK(format_time(1'700'000'001'000'000'000) == "2023-11-14T22:13:21.000000Z");
}

TEST_CASE("parse_time reads what format_time writes, offsets and Unix seconds") {
  CHECK(parse_time("2023-11-14T22:13:20.123456Z") == 1'700'000'000'123'456'000);
  CHECK(parse_time(format_time(1'234'567'890'000'000)) == 1'234'567'890'000'000);
  CHECK(parse_time("2023-11-14T22:13:20Z") == 1'700'000'000'000'000'000);
  CHECK(parse_time("2023-11-15T00:13:20+02:00") == 1'700'000'000'000'000'000);
  CHECK(parse_time("2023-11-14T21:13:20-01:00") == 1'700'000'000'000'000'000);
  CHECK(parse_time("1700000000") == 1'700'000'000'000'000'000);
  CHECK(parse_time("2023-11-14T22:13:20.5Z") == 1'700'000'000'500'000'000);
}

TEST_CASE("parse_time refuses what is not a time") {
  for (const char* bad : {"", "yesterday", "2023-11-14", "2023-11-14T22:13:20", "2023-13-01T00:00:00Z",
                          "2023-02-30T00:00:00Z", "2023-11-14T24:00:00Z", "2023-11-14T22:13:20.Z",
                          "2023-11-14T22:13:20+2:00", "-5", "99999999999999999999",
                          "2023-11-14T22:13:20Zjunk"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_time(bad).has_value());
  }
}
