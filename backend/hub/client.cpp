#include "backend/hub/client.hpp"

#include "backend/hub/feed.hpp"
#include "backend/net/connect.hpp"
#include "backend/net/pool.hpp"
#include "gateway/text/percent.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <zstd.h>

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>

namespace weft::hub {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto kUse = asio::as_tuple(asio::use_awaitable);
// A chunks response: 64 MiB of chunks at most (the hub's limit) plus frame heads.
constexpr std::uint64_t kResponseLimit = 80ull << 20;
constexpr std::size_t kMaxBatchChunks = 1024;
// A chunk batch cut mid-way is asked for again (its missing part) up to
// this many times in all before the fetch fails.
constexpr int kBatchAttempts = 4;
constexpr std::string_view kOctets = "application/octet-stream";
constexpr std::string_view kJson = "application/json";
constexpr std::string_view kPrefixHeader = "Weft-Prefix";
constexpr std::size_t kMaxHaveDigests = 32768;  // the hub's limit per have request
// A commit's body goes out in pieces of about this many bytes of frames.
constexpr std::size_t kCommitPiece = 4 << 20;
// The chunks a fetch names as its Weft-Prefix (PROTOCOL.md): the last ones
// fetched, at most this many bytes and chunks (the hub's limits are 1 MiB
// and 16). A quarter MiB of a dataset's recent samples carries most of
// what the next samples share with them; more gains nothing measurable.
constexpr std::size_t kPrefixBytes = 256 << 10;
constexpr std::size_t kPrefixChunks = 16;

Error failure(Error::Kind kind, std::string message) {
  Error e;
  e.kind = kind;
  e.message = std::move(message);
  return e;
}

Error transport(const error_code& ec, std::string_view what) {
  if (ec == beast::error::timeout || ec == asio::error::timed_out)
    return failure(Error::Kind::timed_out, std::string(what) + ": no answer in time");
  return failure(Error::Kind::unavailable, std::string(what) + ": " + ec.message());
}

// An answer in the zstd content coding (JSON the client asked for so, see
// request()) decoded in place, up to kResponseLimit bytes; false if it is
// in another coding or does not decode.
bool decode_content(bhttp::response<bhttp::string_body>& res) {
  const auto coding = res.find(bhttp::field::content_encoding);
  if (coding == res.end()) return true;
  if (!beast::iequals(coding->value(), "zstd")) return false;
  const std::string& packed = res.body();
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kResponseLimit) return false;
  std::string text(static_cast<std::size_t>(size), '\0');
  const std::size_t n = ZSTD_decompress(text.data(), text.size(), packed.data(), packed.size());
  if (ZSTD_isError(n) || n != text.size()) return false;
  res.body() = std::move(text);
  res.erase(coding);
  return true;
}

std::string base64(std::string_view s) {
  std::string out(4 * ((s.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

Result<wire::FileAttr> parse_attr(const nlohmann::json& j) {
  try {
    return j.get<wire::FileAttr>();
  } catch (const nlohmann::json::exception& e) {
    return failure(Error::Kind::protocol, std::string("bad attributes from the hub: ") + e.what());
  }
}

Result<Attr> attr_answer(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("attr") || !j.contains("last_change"))
    return failure(Error::Kind::protocol, "the hub's answer lacks attr or last_change");
  auto a = parse_attr(j["attr"]);
  if (!a) return a.error();
  if (!j["last_change"].is_number_unsigned()) return failure(Error::Kind::protocol, "bad last_change");
  return Attr{*a, j["last_change"].get<std::uint64_t>()};
}

Result<std::uint64_t> last_change_answer(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("last_change") || !j["last_change"].is_number_unsigned())
    return failure(Error::Kind::protocol, "the hub's answer lacks last_change");
  return j["last_change"].get<std::uint64_t>();
}

// A JSON answer (wrapped: a json converts to anything, which confuses result<>).
struct Json {
  nlohmann::json value;
};

using net::Connection;

// A request written and its answer read on `stream`; the write's error,
// then the read's (not tried when the write failed).
template <class Stream>
asio::awaitable<std::pair<error_code, error_code>> exchange(Stream& stream, beast::flat_buffer& buffer,
                                                            bhttp::request<bhttp::string_body>& req,
                                                            bhttp::response_parser<bhttp::string_body>& parser) {
  auto [wec, wn] = co_await bhttp::async_write(stream, req, kUse);
  if (wec) co_return std::pair{wec, error_code{}};
  auto [rec, rn] = co_await bhttp::async_read(stream, buffer, parser, kUse);
  co_return std::pair{error_code{}, rec};
}

// A POST of `head` whose body is the frames of `source`, made and sent a
// piece at a time (chunked transfer coding), then its answer read into
// `parser`: (write error, read error), and whether the source failed. Each
// piece gets `timeout` to go out.
template <class Stream>
asio::awaitable<std::tuple<error_code, error_code, bool>> stream_frames(
    Stream& stream, beast::tcp_stream& tcp, std::chrono::milliseconds timeout, beast::flat_buffer& buffer,
    bhttp::request<bhttp::empty_body>& head, const CommitSource& source,
    bhttp::response_parser<bhttp::string_body>& parser, std::uint64_t& sent) {
  bhttp::request_serializer<bhttp::empty_body> serializer(head);
  tcp.expires_after(timeout);
  if (auto [ec, n] = co_await bhttp::async_write_header(stream, serializer, kUse); ec) co_return std::tuple{ec, error_code{}, false};
  std::string piece;
  wire::FrameWriter frames(piece);
  for (std::size_t i = 0; i <= source.chunks.size(); ++i) {
    const bool last = i == source.chunks.size();
    if (!last) {
      const auto& c = source.chunks[i];
      if (c.as_data) {
        const bool read = co_await source.read(
            i, [&](std::string_view bytes) { frames.data(c.digest, std::as_bytes(std::span(bytes.data(), bytes.size()))); });
        if (!read) co_return std::tuple{error_code{}, error_code{}, true};
      } else {
        frames.reference(c.digest, c.length);
      }
    }
    if (piece.size() >= kCommitPiece || (last && !piece.empty())) {
      tcp.expires_after(timeout);
      if (auto [ec, n] = co_await asio::async_write(stream, bhttp::make_chunk(asio::buffer(piece)), kUse); ec)
        co_return std::tuple{ec, error_code{}, false};
      sent += piece.size();
      piece.clear();
    }
  }
  tcp.expires_after(timeout);
  if (auto [ec, n] = co_await asio::async_write(stream, bhttp::make_chunk_last(), kUse); ec)
    co_return std::tuple{ec, error_code{}, false};
  auto [rec, rn] = co_await bhttp::async_read(stream, buffer, parser, kUse);
  co_return std::tuple{error_code{}, rec, false};
}

}  // namespace

void throw_exception_from_error(const Error& e, const boost::source_location&) {
  throw std::runtime_error("hub: " + e.message);
}

struct Client::Impl : std::enable_shared_from_this<Impl> {
  asio::any_io_executor ex;
  ClientOptions opt;
  net::Endpoint endpoint;
  std::string authorization;

  std::unique_ptr<net::ConnectionPool> pool;
  std::atomic<std::uint64_t> requests{0}, wire_in{0}, chunk_wire_in{0}, logical_in{0}, wire_out{0}, retried{0};

  // The chunks fetched last (whole ones, oldest first): the next fetch's
  // prefix, so that its answer's zstd stream starts with the vocabulary
  // of what the spoke has just read instead of learning it again.
  std::mutex recent_mu;
  std::deque<std::pair<wire::Digest, std::string>> recent;  // guarded by recent_mu
  std::size_t recent_bytes = 0;                             // guarded by recent_mu

  struct Prefix {
    std::string header;  // the Weft-Prefix value: hex digests, comma-separated
    std::string bytes;   // their content, in that order
  };
  Prefix prefix() {
    std::lock_guard lock(recent_mu);
    Prefix p;
    for (const auto& [digest, bytes] : recent) {
      if (!p.header.empty()) p.header += ',';
      p.header += wire::to_hex(digest);
      p.bytes += bytes;
    }
    return p;
  }
  // Keeps the last of `chunks` (with their bytes in `out`) as the next prefix.
  void remember(std::span<const wire::ChunkRef> chunks, std::span<const std::string> out) {
    std::size_t from = chunks.size(), bytes = 0;
    while (from > 0 && chunks.size() - from < kPrefixChunks && bytes + out[from - 1].size() <= kPrefixBytes)
      bytes += out[--from].size();
    std::lock_guard lock(recent_mu);
    for (std::size_t i = from; i < chunks.size(); ++i) {
      recent.emplace_back(chunks[i].digest, out[i]);
      recent_bytes += out[i].size();
    }
    while (!recent.empty() && (recent.size() > kPrefixChunks || recent_bytes > kPrefixBytes)) {
      recent_bytes -= recent.front().second.size();
      recent.pop_front();
    }
  }

  asio::awaitable<Result<std::unique_ptr<Connection>>> connect() {
    auto s = co_await endpoint.connect(ex, opt.timeout);
    if (!s) co_return failure(s.error().kind == net::Error::Kind::timed_out ? Error::Kind::timed_out : Error::Kind::unavailable,
                              s.error().message);
    co_return std::make_unique<Connection>(std::move(*s));
  }

  // The fields every request carries.
  template <class Body>
  void set_head(bhttp::request<Body>& req) const {
    req.set(bhttp::field::host, endpoint.url().host_header);
    req.set(bhttp::field::authorization, authorization);
    req.set("Weft-Region", opt.region);
    req.set("Weft-Feed", opt.feed_id);
    req.set(bhttp::field::user_agent, "weft-spoke");
    req.set(bhttp::field::accept_encoding, "zstd");  // the hub compresses JSON answers (listings, manifests)
  }

  // A POST to `target` whose body is the frames of `source` (stream_frames),
  // answered with JSON. A kept-alive connection that the hub closed
  // meanwhile fails on a write, before the hub had the whole body (it then
  // commits nothing): the request is made once more on a fresh connection.
  // Not after a failed read: the hub may have committed.
  asio::awaitable<Result<Json>> frames_call(std::string_view target, const CommitSource& source) {
    for (int attempt = 0;; ++attempt) {
      auto taken = co_await connection(attempt);
      if (!taken) co_return taken.error();
      auto [c, reused] = std::move(*taken);
      bhttp::request<bhttp::empty_body> head(bhttp::verb::post, beast::string_view(target.data(), target.size()), 11);
      set_head(head);
      head.set(bhttp::field::content_type, beast::string_view(kOctets.data(), kOctets.size()));
      head.chunked(true);
      head.keep_alive(true);
      bhttp::response_parser<bhttp::string_body> parser;
      parser.body_limit(kResponseLimit);
      std::uint64_t sent = 0;
      auto op = std::visit([&](auto& stream) {
        return stream_frames(stream, net::tcp_of(c->stream), opt.timeout, c->buffer, head, source, parser, sent);
      }, c->stream);
      const auto [wec, rec, aborted] = co_await std::move(op);
      wire_out += sent;
      if (aborted) co_return failure(Error::Kind::aborted, "the commit's source could not read a chunk");
      const error_code ec = wec ? wec : rec;
      if (ec) {
        if (reused && wec && attempt == 0) continue;
        co_return transport(ec, "POST " + std::string(target.substr(0, 120)));
      }
      auto res = answered(std::move(c), parser);
      if (!res) co_return res.error();
      co_return json_answer(*res);
    }
  }

  // One request on a pooled connection. A kept-alive connection that the
  // hub closed meanwhile fails before the hub saw the request; idempotent
  // requests are then sent once more on a fresh connection. With
  // `partial`: an answer (2xx) cut short fails, and what arrived of it
  // (its head, part of its body) is left there (the caller asks for the
  // rest itself). `prefix`: the request's Weft-Prefix, if any.
  asio::awaitable<Result<bhttp::response<bhttp::string_body>>> request(
      bhttp::verb verb, std::string_view target, std::string_view body, bool idempotent,
      std::string_view content_type = kOctets, bhttp::response<bhttp::string_body>* partial = nullptr,
      std::string_view prefix = {}) {
    for (int attempt = 0;; ++attempt) {
      auto taken = co_await connection(attempt);
      if (!taken) co_return taken.error();
      auto [c, reused] = std::move(*taken);
      bhttp::request<bhttp::string_body> req(verb, beast::string_view(target.data(), target.size()), 11);
      set_head(req);
      if (!body.empty()) req.set(bhttp::field::content_type, beast::string_view(content_type.data(), content_type.size()));
      if (!prefix.empty()) req.set(kPrefixHeader, beast::string_view(prefix.data(), prefix.size()));
      req.body().assign(body);
      req.prepare_payload();
      req.keep_alive(true);
      // A large body gets time for its transfer too, at 1 MB/s.
      net::tcp_of(c->stream).expires_after(opt.timeout + std::chrono::milliseconds(body.size() / 1000));
      bhttp::response_parser<bhttp::string_body> parser;
      parser.body_limit(kResponseLimit);
      auto op = std::visit([&](auto& stream) { return exchange(stream, c->buffer, req, parser); }, c->stream);
      const auto [wec, rec] = co_await std::move(op);
      const error_code ec = wec ? wec : rec;
      if (ec && partial && parser.is_header_done() && parser.get().result_int() < 300) {
        *partial = parser.release();
        wire_in += partial->body().size();
        co_return transport(ec, std::string(bhttp::to_string(verb)) + " " + std::string(target.substr(0, 120)));
      }
      if (ec) {
        const bool stale = reused && (wec || net::closed_by_peer(rec));
        if (stale && (idempotent || wec) && attempt == 0) continue;
        co_return transport(ec, std::string(bhttp::to_string(verb)) + " " + std::string(target.substr(0, 120)));
      }
      wire_out += body.size();
      co_return answered(std::move(c), parser);
    }
  }

  // A pooled connection on a first attempt, else a fresh one (a retry
  // connects afresh: the other idle connections are as old as the one that
  // turned out closed); and whether it was pooled.
  asio::awaitable<Result<std::pair<std::unique_ptr<Connection>, bool>>> connection(int attempt) {
    if (attempt == 0)
      if (auto c = pool->take()) co_return std::pair{std::move(c), true};
    auto fresh = co_await connect();
    if (!fresh) co_return fresh.error();
    co_return std::pair{std::move(*fresh), false};
  }

  // The answer `parser` read whole from c: counted, c pooled again when the
  // hub keeps it alive, its content decoded.
  Result<bhttp::response<bhttp::string_body>> answered(std::unique_ptr<Connection> c,
                                                       bhttp::response_parser<bhttp::string_body>& parser) {
    requests++;
    auto res = parser.release();
    wire_in += res.body().size();
    if (res.keep_alive()) pool->give_back(std::move(c));
    if (!decode_content(res)) return failure(Error::Kind::protocol, "the hub's answer is in a coding not asked for, or corrupt");
    return res;
  }

  // An answer's JSON; a hub error becomes Error::refused.
  static Result<Json> json_answer(const bhttp::response<bhttp::string_body>& res) {
    auto j = nlohmann::json::parse(res.body(), nullptr, false);
    if (res.result_int() >= 400) return refusal(res, j);
    if (j.is_discarded()) return failure(Error::Kind::protocol, "the hub answered with malformed JSON");
    Json out;
    out.value = std::move(j);
    return out;
  }

  // A call answered with JSON; a hub error becomes Error::refused.
  asio::awaitable<Result<Json>> json_call(bhttp::verb verb, std::string_view target,
                                                    std::string_view body = {}, std::string_view content_type = kOctets,
                                                    bool idempotent = false) {
    idempotent = idempotent || verb == bhttp::verb::get;
    auto res = co_await request(verb, target, body, idempotent, content_type);
    if (!res) co_return res.error();
    co_return json_answer(*res);
  }

  static Error refusal(const bhttp::response<bhttp::string_body>& res, const nlohmann::json& j) {
    Error e = failure(Error::Kind::refused, "HTTP " + std::to_string(res.result_int()));
    e.status = res.result_int();
    e.body = res.body();
    if (j.is_object() && j.contains("error") && j["error"].is_object()) {
      const auto& err = j["error"];
      if (err.contains("code") && err["code"].is_string()) e.code = err["code"].get<std::string>();
      if (err.contains("message") && err["message"].is_string()) e.message = err["message"].get<std::string>();
    }
    return e;
  }

  std::string target(std::string_view call, std::string_view query) const {
    std::string t = "/hub/v1/";
    t += call;
    if (!query.empty()) {
      t += '?';
      t += query;
    }
    return t;
  }

  // The request (target, body) that asks for chunks [first, last) of a fetch.
  using BatchRequest = std::function<std::pair<std::string, std::string>(std::size_t first, std::size_t last)>;

  // One batch: chunks [first, last) of `chunks`, asked for with
  // make_request, decoded and checked into `out`. A connection that fails
  // mid-answer keeps the chunks that arrived whole; the rest is asked for
  // again on a fresh connection, kBatchAttempts times in all. A refusal or
  // a bad frame is not retried.
  asio::awaitable<std::optional<Error>> fetch_batch(const BatchRequest& make_request, std::size_t first, std::size_t last,
                                                   std::span<const wire::ChunkRef> chunks, std::span<std::string> out) {
    for (int attempt = 1;; ++attempt) {
      const auto [call_target, body] = make_request(first, last);
      Prefix prefix = this->prefix();
      bhttp::response<bhttp::string_body> cut;  // an answer cut short: what arrived of it
      auto res = co_await request(bhttp::verb::post, call_target, body, true, kOctets, &cut, prefix.header);
      if (res && res->result_int() >= 400) co_return refusal(*res, nlohmann::json::parse(res->body(), nullptr, false));
      auto& answer = res ? *res : cut;
      // A hub that did not start the stream after the prefix says nothing.
      const bool prefixed = answer[kPrefixHeader] == "applied";
      std::string arrived = std::move(answer.body());
      chunk_wire_in += arrived.size();
      wire::FrameReader reader(prefixed ? std::move(prefix.bytes) : std::string());
      reader.append(std::move(arrived));
      const std::size_t began = first;
      std::optional<wire::Error> error;
      for (; first < last; ++first) {
        auto frame = reader.next(&error);
        if (!frame) break;
        if (frame->kind != wire::Kind::data || frame->digest != chunks[first].digest ||
            frame->length != chunks[first].length)
          co_return failure(Error::Kind::protocol, "the hub sent another chunk than asked");
        logical_in += frame->length;
        out[first] = std::move(frame->bytes);
      }
      if (error) co_return failure(Error::Kind::protocol, std::string(wire::message(*error)));
      remember(chunks.subspan(began, first - began), out.subspan(began, first - began));
      if (res) {
        if (first < last) co_return failure(Error::Kind::protocol, "the hub sent fewer chunks than asked");
        if (!reader.empty()) co_return failure(Error::Kind::protocol, "the hub sent more than asked");
        co_return std::nullopt;
      }
      if (first == last) co_return std::nullopt;  // cut after the last frame
      if (res.error().kind != Error::Kind::unavailable || attempt == kBatchAttempts) co_return res.error();
      retried++;
    }
  }

  // The bytes of `chunks`, in batches of about batch_bytes taken by up to
  // `connections` workers.
  asio::awaitable<Result<std::vector<std::string>>> fetch_batches(std::span<const wire::ChunkRef> chunks,
                                                                  const BatchRequest& make_request) {
    std::vector<std::pair<std::size_t, std::size_t>> batches;  // [first, last)
    for (std::size_t i = 0; i < chunks.size();) {
      std::size_t j = i;
      std::uint64_t bytes = 0;
      while (j < chunks.size() && j - i < kMaxBatchChunks && (j == i || bytes + chunks[j].length <= opt.batch_bytes))
        bytes += chunks[j++].length;
      batches.emplace_back(i, j);
      i = j;
    }
    std::vector<std::string> out(chunks.size());
    if (batches.empty()) co_return out;
    const std::size_t workers = std::min(opt.connections, batches.size());
    // What the workers share; it lives here while this coroutine waits for them.
    struct Shared {
      std::atomic<std::size_t> next{0};
      std::mutex error_mu;
      std::optional<Error> first_error;
    } shared;
    asio::experimental::concurrent_channel<void(error_code)> done(ex, workers);
    // A coroutine lambda keeps its captures in the lambda object, which would
    // die before the coroutine: everything is passed as parameters instead,
    // which the coroutine frame owns.
    auto worker = [](std::shared_ptr<Impl> impl, const BatchRequest& make_request,
                     const std::vector<std::pair<std::size_t, std::size_t>>& batches,
                     std::span<const wire::ChunkRef> chunks, std::span<std::string> out,
                     Shared& shared) -> asio::awaitable<void> {
      for (;;) {
        const std::size_t b = shared.next.fetch_add(1);
        if (b >= batches.size()) break;
        {
          std::lock_guard lock(shared.error_mu);
          if (shared.first_error) break;
        }
        auto [first, last] = batches[b];
        auto err = co_await impl->fetch_batch(make_request, first, last, chunks, out);
        if (err) {
          std::lock_guard lock(shared.error_mu);
          if (!shared.first_error) shared.first_error = std::move(*err);
          break;
        }
      }
    };
    for (std::size_t w = 0; w < workers; ++w) {
      asio::co_spawn(ex, worker(shared_from_this(), make_request, batches, chunks, out, shared),
                     [&done](std::exception_ptr) { done.try_send(error_code{}); });
    }
    for (std::size_t w = 0; w < workers; ++w) co_await done.async_receive(kUse);
    if (shared.first_error) co_return *shared.first_error;
    co_return out;
  }
};

Result<std::unique_ptr<Client>> Client::create(asio::any_io_executor executor, ClientOptions options) {
  auto endpoint = net::Endpoint::create(options.url, options.ca_file);
  if (!endpoint) return failure(Error::Kind::protocol, "hub " + endpoint.error().message);
  if (options.connections == 0) options.connections = 1;
  auto impl = std::make_shared<Impl>();
  impl->pool = std::make_unique<net::ConnectionPool>(options.connections);
  impl->ex = std::move(executor);
  impl->endpoint = std::move(*endpoint);
  impl->authorization = options.token.empty() ? "Basic " + base64(options.user + ":" + options.password)
                                              : "Bearer " + options.token;
  if (options.feed_id.empty()) {
    unsigned char id[8];
    if (RAND_bytes(id, sizeof id) != 1) return failure(Error::Kind::protocol, "no random bytes for the feed id");
    static constexpr char kHex[] = "0123456789abcdef";
    for (unsigned char b : id) options.feed_id += {kHex[b >> 4], kHex[b & 15]};
  }
  impl->opt = std::move(options);
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const ClientOptions& Client::options() const { return impl_->opt; }

void Client::close() { impl_->pool->close(); }

Stats Client::stats() const {
  return {impl_->requests.load(), impl_->wire_in.load(), impl_->chunk_wire_in.load(), impl_->logical_in.load(),
          impl_->wire_out.load(), impl_->retried.load()};
}

asio::awaitable<Result<std::uint64_t>> Client::last_change() {
  const std::string call_target = impl_->target("info", "");
  auto j = co_await impl_->json_call(bhttp::verb::get, call_target);
  if (!j) co_return j.error();
  co_return last_change_answer(j->value);
}

asio::awaitable<Result<Attr>> Client::attr(std::string path) {
  const std::string query = "path=" + text::uri_encode(path, false);
  const std::string call_target = impl_->target("attr", query);
  auto j = co_await impl_->json_call(bhttp::verb::get, call_target);
  if (!j) co_return j.error();
  co_return attr_answer(j->value);
}

asio::awaitable<Result<Listing>> Client::list(std::string path, std::uint64_t cookie, std::size_t limit) {
  const std::string query = "path=" + text::uri_encode(path, false) + "&cookie=" + std::to_string(cookie) +
                            "&limit=" + std::to_string(limit);
  const std::string call_target = impl_->target("list", query);
  auto j = co_await impl_->json_call(bhttp::verb::get, call_target);
  if (!j) co_return j.error();
  Listing out;
  try {
    for (const auto& e : j->value.at("entries")) out.entries.emplace_back(e.at("name").get<std::string>(), e.at("attr").get<wire::FileAttr>());
    out.cookie = j->value.at("cookie").get<std::uint64_t>();
    out.eof = j->value.at("eof").get<bool>();
    out.last_change = j->value.at("last_change").get<std::uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    co_return failure(Error::Kind::protocol, std::string("bad listing from the hub: ") + e.what());
  }
  co_return out;
}

asio::awaitable<Result<wire::Manifest>> Client::manifest(std::string path, std::uint64_t version) {
  const std::string query = "path=" + text::uri_encode(path, false) + "&version=" + std::to_string(version);
  const std::string call_target = impl_->target("manifest", query);
  auto j = co_await impl_->json_call(bhttp::verb::get, call_target);
  if (!j) co_return j.error();
  try {
    co_return j->value.get<wire::Manifest>();
  } catch (const nlohmann::json::exception& e) {
    co_return failure(Error::Kind::protocol, std::string("bad manifest from the hub: ") + e.what());
  }
}

asio::awaitable<Result<Manifests>> Client::manifests(std::string dir, std::vector<std::string> names) {
  if (names.empty() || names.size() > kMaxManifests)
    co_return failure(Error::Kind::protocol, "manifests: 1 to " + std::to_string(kMaxManifests) + " names");
  const std::string body = nlohmann::json{{"names", names}}.dump();
  const std::string call_target = impl_->target("manifests", "path=" + text::uri_encode(dir, false));
  auto j = co_await impl_->json_call(bhttp::verb::post, call_target, body, kJson, true);
  if (!j) co_return j.error();
  Manifests out;
  try {
    for (const auto& e : j->value.at("entries")) {
      NamedManifest m;
      m.name = e.at("name").get<std::string>();
      if (e.contains("error")) {
        Error err = failure(Error::Kind::refused, e["error"].at("message").get<std::string>());
        err.code = e["error"].at("code").get<std::string>();
        m.error = std::move(err);
      } else {
        m.attr = e.at("attr").get<wire::FileAttr>();
        m.manifest = e.at("manifest").get<wire::Manifest>();
      }
      out.entries.push_back(std::move(m));
    }
    out.last_change = j->value.at("last_change").get<std::uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    co_return failure(Error::Kind::protocol, std::string("bad manifests from the hub: ") + e.what());
  }
  if (out.entries.size() != names.size()) co_return failure(Error::Kind::protocol, "the hub answered other names than asked");
  for (std::size_t i = 0; i < names.size(); ++i)
    if (out.entries[i].name != names[i]) co_return failure(Error::Kind::protocol, "the hub answered other names than asked");
  co_return out;
}

asio::awaitable<Result<std::vector<std::string>>> Client::fetch(std::string path, std::uint64_t version,
                                                                std::vector<wire::ChunkRef> chunks) {
  const std::string call_target =
      impl_->target("chunks", "path=" + text::uri_encode(path, false) + "&version=" + std::to_string(version));
  const Impl::BatchRequest make_request = [&](std::size_t first, std::size_t last) {
    std::string body;
    body.reserve((last - first) * 32);
    for (std::size_t i = first; i < last; ++i)
      body.append(reinterpret_cast<const char*>(chunks[i].digest.data()), chunks[i].digest.size());
    return std::pair{call_target, std::move(body)};
  };
  co_return co_await impl_->fetch_batches(chunks, make_request);
}

asio::awaitable<Result<std::vector<std::string>>> Client::fetch_files(std::string dir, std::vector<FileChunks> files) {
  // The chunks in one list, each with the file it belongs to.
  std::vector<wire::ChunkRef> chunks;
  std::vector<std::size_t> file_of;
  for (std::size_t f = 0; f < files.size(); ++f)
    for (const auto& c : files[f].chunks) {
      chunks.push_back(c);
      file_of.push_back(f);
    }
  const std::string call_target = impl_->target("dir_chunks", "path=" + text::uri_encode(dir, false));
  const Impl::BatchRequest make_request = [&](std::size_t first, std::size_t last) {
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t i = first; i < last; ++i) {
      const FileChunks& f = files[file_of[i]];
      if (i == first || file_of[i] != file_of[i - 1])
        list.push_back({{"name", f.name}, {"version", f.version}, {"chunks", nlohmann::json::array()}});
      list.back()["chunks"].push_back(wire::to_hex(chunks[i].digest));
    }
    return std::pair{call_target, nlohmann::json{{"files", std::move(list)}}.dump()};
  };
  co_return co_await impl_->fetch_batches(chunks, make_request);
}

asio::awaitable<Result<std::vector<bool>>> Client::missing(std::vector<wire::Digest> digests) {
  std::vector<bool> out(digests.size(), false);
  const std::string call_target = impl_->target("have", "");
  for (std::size_t first = 0; first < digests.size(); first += kMaxHaveDigests) {
    const std::size_t last = std::min(digests.size(), first + kMaxHaveDigests);
    std::string body;
    for (std::size_t i = first; i < last; ++i) body.append(reinterpret_cast<const char*>(digests[i].data()), digests[i].size());
    auto j = co_await impl_->json_call(bhttp::verb::post, call_target, body);
    if (!j) co_return j.error();
    try {
      std::vector<wire::Digest> lacking;
      for (const auto& h : j->value.at("missing")) {
        auto d = wire::from_hex(h.get<std::string>());
        if (!d) co_return failure(Error::Kind::protocol, "the hub named a malformed digest");
        lacking.push_back(*d);
      }
      std::sort(lacking.begin(), lacking.end());
      for (std::size_t i = first; i < last; ++i) out[i] = std::binary_search(lacking.begin(), lacking.end(), digests[i]);
    } catch (const nlohmann::json::exception& e) {
      co_return failure(Error::Kind::protocol, std::string("bad have answer from the hub: ") + e.what());
    }
  }
  co_return out;
}

asio::awaitable<Result<std::uint64_t>> Client::report_cache(std::string summary) {
  const std::string call_target = impl_->target("cached", "");
  // Idempotent: a summary sent twice says the same.
  auto j = co_await impl_->json_call(bhttp::verb::put, call_target, summary, kOctets, true);
  if (!j) co_return j.error();
  const auto chunks = j->value.find("chunks");
  if (chunks == j->value.end() || !chunks->is_number_unsigned())
    co_return failure(Error::Kind::protocol, "bad cached answer from the hub: no chunks");
  co_return chunks->get<std::uint64_t>();
}

asio::awaitable<Result<Attr>> Client::commit(std::string path, std::uint64_t base_ino, std::uint64_t base_version,
                                             std::uint32_t mode, const CommitSource& source) {
  const std::string query = "path=" + text::uri_encode(path, false) + "&base_ino=" + std::to_string(base_ino) +
                            "&base_version=" + std::to_string(base_version) + "&mode=" + std::to_string(mode);
  const std::string call_target = impl_->target("commit", query);
  auto j = co_await impl_->frames_call(call_target, source);
  if (!j) co_return j.error();
  co_return attr_answer(j->value);
}

asio::awaitable<Result<Attr>> Client::mkdir(std::string path, std::uint32_t mode) {
  const std::string query = "path=" + text::uri_encode(path, false) + "&mode=" + std::to_string(mode);
  const std::string call_target = impl_->target("mkdir", query);
  auto j = co_await impl_->json_call(bhttp::verb::post, call_target);
  if (!j) co_return j.error();
  co_return attr_answer(j->value);
}

asio::awaitable<Result<Attr>> Client::create(std::string path, std::uint32_t mode, bool exclusive) {
  const std::string query = "path=" + text::uri_encode(path, false) + "&mode=" + std::to_string(mode) +
                            "&exclusive=" + (exclusive ? "true" : "false");
  const std::string call_target = impl_->target("create", query);
  auto j = co_await impl_->json_call(bhttp::verb::post, call_target);
  if (!j) co_return j.error();
  co_return attr_answer(j->value);
}

asio::awaitable<Result<std::uint64_t>> Client::remove(std::string path) {
  const std::string query = "path=" + text::uri_encode(path, false);
  const std::string call_target = impl_->target("remove", query);
  auto j = co_await impl_->json_call(bhttp::verb::post, call_target);
  if (!j) co_return j.error();
  co_return last_change_answer(j->value);
}

asio::awaitable<Result<std::uint64_t>> Client::rmdir(std::string path) {
  const std::string query = "path=" + text::uri_encode(path, false);
  const std::string call_target = impl_->target("rmdir", query);
  auto j = co_await impl_->json_call(bhttp::verb::post, call_target);
  if (!j) co_return j.error();
  co_return last_change_answer(j->value);
}

asio::awaitable<Result<Attr>> Client::rename(std::string from, std::string to, bool no_replace) {
  const std::string query = "from=" + text::uri_encode(from, false) + "&to=" + text::uri_encode(to, false) +
                            "&no_replace=" + (no_replace ? "true" : "false");
  const std::string call_target = impl_->target("rename", query);
  auto j = co_await impl_->json_call(bhttp::verb::post, call_target);
  if (!j) co_return j.error();
  co_return attr_answer(j->value);
}

asio::awaitable<Result<Attr>> Client::symlink(std::string path, std::string target) {
  const std::string query = "path=" + text::uri_encode(path, false) + "&target=" + text::uri_encode(target, false);
  const std::string call_target = impl_->target("symlink", query);
  auto j = co_await impl_->json_call(bhttp::verb::post, call_target);
  if (!j) co_return j.error();
  co_return attr_answer(j->value);
}

asio::awaitable<Result<Attr>> Client::setattr(std::string path, SetAttrs changes) {
  std::string query = "path=" + text::uri_encode(path, false);
  auto add = [&query](std::string_view name, const auto& value) {
    if (value) query += "&" + std::string(name) + "=" + std::to_string(*value);
  };
  add("mode", changes.mode);
  add("uid", changes.uid);
  add("gid", changes.gid);
  add("size", changes.size);
  add("mtime_ns", changes.mtime_ns);
  add("atime_ns", changes.atime_ns);
  const std::string call_target = impl_->target("setattr", query);
  auto j = co_await impl_->json_call(bhttp::verb::post, call_target);
  if (!j) co_return j.error();
  co_return attr_answer(j->value);
}

asio::awaitable<Result<std::pair<std::string, Attr>>> Client::readlink(std::string path) {
  const std::string query = "path=" + text::uri_encode(path, false);
  const std::string call_target = impl_->target("readlink", query);
  auto j = co_await impl_->json_call(bhttp::verb::get, call_target);
  if (!j) co_return j.error();
  auto a = attr_answer(j->value);
  if (!a) co_return a.error();
  if (!j->value.contains("target") || !j->value["target"].is_string())
    co_return failure(Error::Kind::protocol, "the hub's readlink answer lacks target");
  co_return std::pair{j->value["target"].get<std::string>(), *a};
}

Result<std::shared_ptr<ChangeFeed>> Client::subscribe(asio::any_io_executor executor, std::uint64_t after,
                                                      OnChanges on_changes, OnState on_state) {
  FeedOptions fo;
  fo.client = impl_->opt;
  fo.after = after;
  fo.on_changes = std::move(on_changes);
  fo.on_state = std::move(on_state);
  auto feed = Feed::start(std::move(executor), std::move(fo));
  if (!feed) return feed.error();
  return std::shared_ptr<ChangeFeed>(std::move(*feed));
}

}  // namespace weft::hub
