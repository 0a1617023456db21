#include "protocols/s3/store.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <exception>
#include <memory>

namespace weft::s3 {

namespace asio = boost::asio;
using ns::Errc;

namespace {

// Large enough that the namespace sees few writes, small enough that a
// thousand concurrent uploads stay within memory.
constexpr std::size_t kBlock = 1 << 20;

bool is(const std::error_code& ec, Errc e) { return ec == ns::make_error_code(e); }

// Fills `block` from `source`: short only where the body ends.
asio::awaitable<Found<std::size_t>> fill_block(ByteSource& source, std::span<std::byte> block) {
  std::size_t fill = 0;
  while (fill < block.size()) {
    auto n = co_await source.read(block.subspan(fill));
    if (!n) co_return n.error();
    if (*n == 0) break;
    fill += *n;
  }
  co_return fill;
}

}  // namespace

asio::awaitable<Found<MetaRef>> load_meta(Service& s, const ns::OpContext& ctx, ns::Ino ino) {
  static const MetaRef none = std::make_shared<const ObjectMeta>();
  auto text = co_await s.ns.getxattr(ctx, ino, kMetaXattr);
  if (!text) {
    if (is(text.error(), Errc::no_attr)) co_return none;
    co_return from_ns(text.error(), Subject::key);
  }
  auto m = s.meta_memo.decode(ino, *text);
  co_return m ? std::move(m) : none;
}

asio::awaitable<Found<std::uint64_t>> store_blocks(ByteSource& source, const StoreBlock& store) {
  // Two blocks: the next one is received (its digests taken on the way)
  // while the last one is stored (a page cache copy, and for the namespace
  // chunking and hashing, on a blocking pool), so an upload keeps two cores
  // busy.
  std::array<std::unique_ptr<std::byte[]>, 2> blocks{std::make_unique_for_overwrite<std::byte[]>(kBlock),
                                                     std::make_unique_for_overwrite<std::byte[]>(kBlock)};
  auto ex = co_await asio::this_coro::executor;
  auto got = co_await fill_block(source, std::span<std::byte>(blocks[0].get(), kBlock));
  if (!got) co_return got.error();
  std::uint64_t offset = 0;
  for (std::size_t cur = 0; *got > 0; cur ^= 1) {
    const std::span<const std::byte> block(blocks[cur].get(), *got);
    auto write = asio::co_spawn(ex, store(offset, block), asio::deferred);
    auto next = asio::co_spawn(ex, fill_block(source, std::span<std::byte>(blocks[cur ^ 1].get(), kBlock)),
                               asio::deferred);
    auto both = asio::experimental::make_parallel_group(std::move(write), std::move(next))
                    .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
    auto [order, write_error, written, fill_error, filled] = co_await std::move(both);
    if (write_error) std::rethrow_exception(write_error);
    if (fill_error) std::rethrow_exception(fill_error);
    if (!written) co_return written.error();
    if (!filled) co_return filled.error();
    offset += block.size();
    got = std::move(filled);
  }
  co_return offset;
}

asio::awaitable<Found<ns::Attr>> write_object(Service& s, Request& r, const NewObject& obj,
                                              ByteSource& source) {
  ns::Namespace& ns = s.ns;
  const ns::OpContext& ctx = r.ctx;
  std::optional<ns::Handle> h;
  // A directory on the way may be pruned by a concurrent DELETE between
  // creating it and staging in it: walk again.
  for (int attempt = 0; attempt < 3 && !h; ++attempt) {
    auto dir = co_await key_dir(ns, ctx, obj.bucket, *obj.key, true);
    if (!dir) co_return dir.error();
    // Refuse before the body is read when the key names a directory.
    auto existing = co_await ns.lookup(ctx, dir->ino, obj.key->leaf);
    if (existing && existing->type == ns::FileType::directory)
      co_return from_ns(ns::make_error_code(Errc::is_dir), Subject::key);
    auto staged = co_await ns.stage(ctx, dir->ino, obj.key->leaf, 0644);
    if (staged) {
      h = *staged;
    } else if (!is(staged.error(), Errc::not_found) && !is(staged.error(), Errc::stale)) {
      co_return from_ns(staged.error(), Subject::key);
    }
  }
  if (!h) co_return Error(Code::OperationAborted, "The key's directory kept disappearing");

  auto fail = [&](Error e) -> asio::awaitable<Found<ns::Attr>> {
    co_await ns.release(ctx, *h);  // discards the staged file
    co_return e;
  };
  const StoreBlock write = [&](std::uint64_t offset, std::span<const std::byte> block)
      -> asio::awaitable<Found<std::size_t>> {
    auto op = ns.write(ctx, *h, offset, block);
    auto written = co_await std::move(op);
    if (!written) co_return from_ns(written.error(), Subject::key);
    co_return *written;
  };
  auto stream = store_blocks(source, write);
  auto stored = co_await std::move(stream);
  if (!stored) co_return co_await fail(stored.error());
  // The metadata names the version it describes, and lands in the same
  // transaction: a reader never sees the object without its ETag.
  ObjectMeta meta = obj.meta();
  auto attr = co_await ns.commit_and_release(ctx, *h, [&meta](const ns::Attr& committed) {
    meta.version = committed.version;
    return ns::Xattrs{{std::string(kMetaXattr), meta.encode()}};
  });
  if (!attr) co_return from_ns(attr.error(), Subject::key);
  co_return *attr;
}

Found<SourceRef> parse_copy_source(const std::string& header) {
  std::string_view text = header;
  std::size_t q = text.find('?');
  if (q != std::string_view::npos) {
    std::string_view query = text.substr(q + 1);
    text = text.substr(0, q);
    auto params = sigv4::parse_query(query);
    if (!params) return Error(Code::InvalidArgument, "x-amz-copy-source is malformed");
    for (const auto& p : *params)
      if (p.name == "versionId")
        if (p.value != "null") return Error(Code::NoSuchVersion);
  }
  auto decoded = sigv4::percent_decode(text, false);
  if (!decoded) return Error(Code::InvalidArgument, "x-amz-copy-source is malformed");
  std::string_view path = *decoded;
  if (path.starts_with('/')) path.remove_prefix(1);
  std::size_t slash = path.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == path.size())
    return Error(Code::InvalidArgument, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
  return SourceRef{std::string(path.substr(0, slash)), std::string(path.substr(slash + 1))};
}

asio::awaitable<Found<std::size_t>> PayloadSource::read(std::span<std::byte> out) {
  co_return co_await body_.read(out);
}

asio::awaitable<Found<std::size_t>> FileSource::read(std::span<std::byte> out) {
  if (left_ == 0) {
    auto now = co_await ns_.getattr(ctx_, source_.ino);
    if (!now || !same_content(*now, source_))
      co_return Error(Code::OperationAborted, "The source object changed while it was copied");
    co_return std::size_t{0};
  }
  std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), left_));
  auto n = co_await ns_.read(ctx_, h_, offset_, out.first(want));
  if (!n) co_return from_ns(n.error(), Subject::key);
  if (*n == 0) co_return Error(Code::InternalError, "The source object shrank while it was copied");
  md5_.update(as_bytes(std::span<const std::byte>(out.data(), *n)));
  offset_ += *n;
  left_ -= *n;
  co_return *n;
}

}  // namespace weft::s3
