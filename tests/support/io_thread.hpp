// An io_context running on its own thread, for tests of coroutine APIs
// (clients, sources) called from a plain doctest case: wait() runs one
// coroutine there and returns its result.
#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <thread>

namespace weft::test {

struct IoThread {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~IoThread() {
    guard.reset();
    io.stop();
    thread.join();
  }
  template <class T>
  T wait(boost::asio::awaitable<T> a) {
    return boost::asio::co_spawn(io, std::move(a), boost::asio::use_future).get();
  }
};

}  // namespace weft::test
