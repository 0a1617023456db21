#include "gateway/io/continuation.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <tuple>

namespace asio = boost::asio;
using weft::io::as_continuation;

namespace {

// What an operation's initiation saw of the handler it was given.
struct Seen {
  bool continuation = false;
  std::optional<asio::any_io_executor> executor;
};

// Starts an operation of signature void(int) that completes with `value` at
// once, after noting what its handler says of itself.
template <class Token>
auto answer(int value, Seen& seen, Token&& token) {
  return asio::async_initiate<Token, void(int)>(
      [&seen](auto handler, int v) {
        seen.continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
        seen.executor = asio::get_associated_executor(handler, asio::system_executor());
        std::move(handler)(v);
      },
      token, value);
}

}  // namespace

TEST_CASE("as_continuation: the handler is a continuation and gets the result") {
  Seen seen;
  int got = 0;
  answer(7, seen, [&](int v) { got = v; });
  CHECK_FALSE(seen.continuation);
  CHECK(got == 7);
  answer(9, seen, as_continuation([&](int v) { got = v; }));
  CHECK(seen.continuation);
  CHECK(got == 9);
}

TEST_CASE("as_continuation: the wrapped handler keeps its associated executor") {
  asio::io_context io;
  auto strand = asio::make_strand(io);
  Seen seen;
  int got = 0;
  answer(3, seen, as_continuation(asio::bind_executor(strand, [&](int v) { got = v; })));
  CHECK(seen.continuation);
  REQUIRE(seen.executor);
  CHECK(*seen.executor == asio::any_io_executor(strand));
  CHECK(got == 3);
}

TEST_CASE("as_continuation: awaitable operations resume with their result") {
  asio::io_context io;
  std::optional<boost::system::error_code> result;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(io, std::chrono::milliseconds(1));
        auto [ec] = co_await timer.async_wait(weft::io::kAwaitNext);
        result = ec;
      },
      asio::detached);
  io.run();
  REQUIRE(result);
  CHECK(!*result);
}
