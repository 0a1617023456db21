#include "gateway/text/lists.hpp"

#include <doctest/doctest.h>

#include <string_view>
#include <vector>

using weft::text::split_list;
using weft::text::trim_ows;
using List = std::vector<std::string_view>;

TEST_CASE("trim_ows drops spaces and tabs around, nothing inside") {
  CHECK(trim_ows(" \t a b\t ") == "a b");
  CHECK(trim_ows("\t\t").empty());
  CHECK(trim_ows("x") == "x");
  CHECK(trim_ows("\r\nx\r\n") == "\r\nx\r\n");  // not OWS
}

TEST_CASE("split_list trims each element and keeps empty ones") {
  CHECK(split_list("gzip, zstd;q=0.5") == List{"gzip", "zstd;q=0.5"});
  CHECK(split_list("a,,b , ") == List{"a", "", "b", ""});
  CHECK(split_list("") == List{""});
  CHECK(split_list("  only\t") == List{"only"});
}

TEST_CASE("split_list takes another separator") {
  CHECK(split_list("seed=1; epoch=2 ;;", ';') == List{"seed=1", "epoch=2", "", ""});
  CHECK(split_list("a,b;c", ';') == List{"a,b", "c"});
}
