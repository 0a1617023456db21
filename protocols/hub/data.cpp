// Data calls: which chunks the hub lacks, batched chunk reads of one
// version, and commits that stream a new version as chunk frames (bytes
// for chunks the hub lacks, references for those it holds) and seal it
// with compare-and-swap on the version the spoke started from; and what a
// spoke's cache holds, as it reports it.
#include "protocols/hub/hub.hpp"

#include "gateway/metrics/metrics.hpp"
#include "gateway/text/lists.hpp"

#include <cstring>
#include <algorithm>

namespace weft::hub {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kMaxDigests = 32768;              // per have request (1 MiB of digests)
constexpr std::size_t kMaxBatchChunks = 1024;           // per chunks request
constexpr std::uint64_t kMaxBatchBytes = 64ull << 20;   // logical bytes per chunks request
constexpr std::size_t kBodyPiece = 256 * 1024;
// A commit's chunks are written in blocks of about this much content: one
// trip to the blocking pool for the block's references and one to the
// file's write strand, not one of each per 64 KiB chunk.
constexpr std::size_t kCommitBlock = 1 << 20;
constexpr std::size_t kFrameHead = 42;  // a data frame's bytes besides the chunk's
// A dir_chunks body: 1024 hex digests and the names they belong to.
constexpr std::size_t kMaxNamesBody = 2 << 20;
// A Weft-Prefix: a few chunks, well inside the stream's 2 MiB window.
constexpr std::size_t kMaxPrefixChunks = 16;
constexpr std::size_t kMaxPrefixBytes = 1 << 20;

// A body of whole SHA-256 digests, read completely (it is small and bounded).
asio::awaitable<rest::Expected<std::vector<ns::Sha256>>> read_digests(Request& r, std::size_t max) {
  const auto& head = r.c.head;
  if (!head.content_length || *head.content_length % 32 != 0)
    co_return rest::bad_request("the body must be SHA-256 digests, 32 bytes each, with a Content-Length");
  if (*head.content_length > max * 32)
    co_return rest::too_large("at most " + std::to_string(max) + " digests per request");
  auto body = co_await read_body(r, max * 32);
  if (!body) co_return body.error();
  std::vector<ns::Sha256> out(body->size() / 32);
  for (std::size_t i = 0; i < out.size(); ++i) std::memcpy(out[i].data(), body->data() + 32 * i, 32);
  co_return out;
}

// `prefixed`: the body's zstd stream starts after the request's Weft-Prefix.
asio::awaitable<rest::Outcome> send_octets(Request& r, const std::string& body, bool prefixed = false) {
  std::vector<http::Header> headers = r.c.base_headers();
  headers.emplace_back("Content-Type", "application/octet-stream");
  if (prefixed) headers.emplace_back("Weft-Prefix", "applied");
  http::ResponseHead head(200, std::move(headers), body.size());
  auto ec = co_await r.c.ex.send(head, body);
  r.c.status = 200;
  if (ec) r.c.ex.close_after();
  co_return std::nullopt;
}

// What a commit has taken from its body and not yet written: the frames
// of whole chunks from `at` on, named by digests checked on arrival (the
// frame reader) or by the hub's own copy (chunk_bytes), so the seal does
// not hash them again. References are looked up when the block is written;
// those the hub does not hold go into `missing`, and once there are any
// nothing more is written (the commit fails).
struct CommitBlock {
  std::uint64_t at = 0;
  std::vector<wire::Frame> frames;
  std::size_t length = 0;  // of the frames' content
  std::string content;     // the frames' bytes in one write (kept for its capacity)
  std::vector<ns::ChunkInfo> chunks;

  asio::awaitable<rest::Outcome> write(Request& r, ns::Handle h, const std::string& display, nlohmann::json& missing) {
    std::vector<ns::Sha256> referred;
    for (const wire::Frame& f : frames)
      if (f.kind == wire::Kind::reference) referred.push_back(f.digest);
    if (!referred.empty()) {
      auto held = co_await r.s.ns.chunk_bytes(r.c.ctx, std::move(referred));
      if (!held) co_return rest::from_ns(held.error(), display);
      std::size_t next = 0;
      for (wire::Frame& f : frames) {
        if (f.kind != wire::Kind::reference) continue;
        std::optional<std::string>& bytes = (*held)[next++];
        if (bytes && bytes->size() == f.length)
          f.bytes = std::move(*bytes);
        else
          missing.push_back(wire::to_hex(f.digest));
      }
    }
    if (missing.empty()) {
      content.clear();
      chunks.clear();
      for (const wire::Frame& f : frames) {
        chunks.push_back({at + content.size(), f.length, f.digest});
        content += f.bytes;
      }
      auto w = co_await r.s.ns.write(r.c.ctx, h, at, std::as_bytes(std::span(content.data(), content.size())), chunks);
      if (!w) co_return rest::from_ns(w.error(), display);
    }
    at += length;
    length = 0;
    frames.clear();
    co_return std::nullopt;
  }
};

}  // namespace

Reply have(Request& r) {
  auto digests = co_await read_digests(r, kMaxDigests);
  if (!digests) co_return digests.error();
  auto held = co_await r.s.ns.have_chunks(r.c.ctx, *digests);
  if (!held) co_return rest::from_ns(held.error(), "chunks");
  nlohmann::json missing = nlohmann::json::array();
  for (std::size_t i = 0; i < digests->size(); ++i)
    if (!(*held)[i]) missing.push_back(wire::to_hex((*digests)[i]));
  const nlohmann::json out{{"missing", std::move(missing)}};
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

namespace {

// Appends the data frames of `wanted`, digests of version `version` of the
// file `ino` (named `display`), to `frames` in the order asked, and adds their
// logical size to `logical`: 404 for a digest the version lacks, 413 once
// `logical` would pass the request's limit (checked before reading).
asio::awaitable<rest::Outcome> append_chunks(Request& r, ns::Ino ino, const std::string& display, std::uint64_t version,
                                             const std::vector<ns::Sha256>& wanted, wire::FrameWriter& frames,
                                             std::uint64_t& logical) {
  auto manifest = co_await r.s.ns.chunks(r.c.ctx, ino, version);
  if (!manifest) co_return rest::from_ns(manifest.error(), display + " version " + std::to_string(version));
  // One pass over the manifest, looking each chunk up among the few wanted
  // (a large file's manifest holds tens of thousands; a request, a batch).
  std::vector<std::pair<ns::Sha256, std::size_t>> by_digest;  // (digest, position in the request)
  for (std::size_t i = 0; i < wanted.size(); ++i) by_digest.emplace_back(wanted[i], i);
  std::sort(by_digest.begin(), by_digest.end());
  std::vector<const ns::ChunkInfo*> plan(wanted.size(), nullptr);
  std::size_t found = 0;
  for (const auto& c : *manifest) {
    auto [from, to] = std::equal_range(by_digest.begin(), by_digest.end(), std::pair{c.sha256, std::size_t{0}},
                                       [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto it = from; it != to; ++it)
      if (!plan[it->second]) {
        plan[it->second] = &c;
        ++found;
      }
    if (found == wanted.size()) break;
  }
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    if (!plan[i])
      co_return rest::not_found("chunk " + wire::to_hex(wanted[i]) + " is not in " + display + " version " +
                                std::to_string(version));
    bytes += plan[i]->length;
  }
  logical += bytes;
  if (logical > kMaxBatchBytes)
    co_return rest::too_large("at most " + std::to_string(kMaxBatchBytes) + " chunk bytes per request");
  frames.reserve(bytes + plan.size() * kFrameHead);
  // Chunks adjacent in the file (a sequential reader's batch) are read in one go.
  std::string run;
  for (std::size_t i = 0; i < plan.size();) {
    std::size_t j = i + 1;
    std::uint64_t end = plan[i]->offset + plan[i]->length;
    while (j < plan.size() && plan[j]->offset == end) end += plan[j++]->length;
    run.resize(static_cast<std::size_t>(end - plan[i]->offset));
    std::size_t got = 0;
    while (got < run.size()) {
      auto n = co_await r.s.ns.read_version(r.c.ctx, ino, version, plan[i]->offset + got,
                                            std::as_writable_bytes(std::span(run.data() + got, run.size() - got)));
      if (!n) co_return rest::from_ns(n.error(), display);
      if (*n == 0) co_return rest::internal(display + " is shorter than its manifest");
      got += *n;
    }
    for (std::size_t k = i, at = 0; k < j; at += plan[k]->length, ++k)
      frames.data(plan[k]->sha256, std::as_bytes(std::span(run.data() + at, plan[k]->length)));
    i = j;
  }
  co_return std::nullopt;
}

asio::awaitable<rest::Outcome> send_chunks(Request& r, const std::string& body, std::uint64_t logical,
                                           bool prefixed) {
  r.c.content_bytes = logical;
  r.wire_bytes += body.size();
  r.sent_logical += logical;
  r.sent_wire += body.size();
  r.hub.logical_out->inc(logical);
  r.hub.wire_out->inc(body.size());
  co_return co_await send_octets(r, body, prefixed);
}

// The request's Weft-Prefix: chunks the spoke holds (hex digests, comma-
// separated), concatenated in order, for the answer's zstd stream to start
// after. Empty without the header, or when the hub holds one of them in no
// version: the answer then goes without, and says nothing. 400 for a
// malformed header, 413 past the limits.
asio::awaitable<rest::Expected<std::string>> stream_prefix(Request& r) {
  const std::string* header = r.c.header("weft-prefix");
  if (!header) co_return std::string();
  std::vector<ns::Sha256> digests;
  for (std::string_view item : text::split_list(*header)) {
    auto d = wire::from_hex(item);
    if (!d) co_return rest::bad_request("Weft-Prefix: SHA-256 digests in hex, comma-separated");
    if (digests.size() == kMaxPrefixChunks)
      co_return rest::too_large("Weft-Prefix: at most " + std::to_string(kMaxPrefixChunks) + " chunks");
    digests.push_back(*d);
  }
  auto held = co_await r.s.ns.chunk_bytes(r.c.ctx, std::move(digests));
  if (!held) co_return rest::from_ns(held.error(), "Weft-Prefix");
  std::string prefix;
  for (const std::optional<std::string>& bytes : *held) {
    if (!bytes) co_return std::string();
    if (prefix.size() + bytes->size() > kMaxPrefixBytes)
      co_return rest::too_large("Weft-Prefix: at most " + std::to_string(kMaxPrefixBytes) + " bytes of chunks");
    prefix += *bytes;
  }
  co_return prefix;
}

// One file of a dir_chunks body: {"name", "version", "chunks": [hex digests]}.
struct FileChunks {
  std::string name;
  std::uint64_t version = 0;
  std::vector<ns::Sha256> chunks;
};

rest::Expected<std::vector<FileChunks>> parse_dir_chunks(const nlohmann::json& j) {
  auto bad = [](std::string why) { return rest::bad_request("dir_chunks body: " + why); };
  if (j.size() != 1 || !j.contains("files") || !j["files"].is_array())
    return bad("expected {\"files\": [{\"name\", \"version\", \"chunks\"}]}");
  std::vector<FileChunks> out;
  std::size_t total = 0;
  for (const auto& f : j["files"]) {
    if (!f.is_object() || f.size() != 3 || !f.contains("name") || !f["name"].is_string() || !f.contains("version") ||
        !f["version"].is_number_unsigned() || !f.contains("chunks") || !f["chunks"].is_array())
      return bad("each file is {\"name\": string, \"version\": integer, \"chunks\": [hex digests]}");
    FileChunks fc;
    fc.name = f["name"].get<std::string>();
    if (auto why = rest::check_segment(fc.name)) return rest::bad_path(*why);
    fc.version = f["version"].get<std::uint64_t>();
    if (fc.version == 0) return bad("version 0 has no chunks");
    for (const auto& h : f["chunks"]) {
      auto d = h.is_string() ? wire::from_hex(h.get<std::string>()) : std::nullopt;
      if (!d) return bad("chunks are SHA-256 digests in hex");
      if (++total > kMaxBatchChunks) return rest::too_large("at most " + std::to_string(kMaxBatchChunks) + " chunks per request");
      fc.chunks.push_back(*d);
    }
    out.push_back(std::move(fc));
  }
  return out;
}

}  // namespace

Reply chunks(Request& r) {
  auto path = path_param(r, "path");
  if (!path) co_return path.error();
  auto version = rest::uint_param(r.c.target, "version", 0, 1, std::numeric_limits<std::uint64_t>::max());
  if (!version) co_return version.error();
  if (!r.c.query("version")) co_return rest::bad_parameter("query parameter version is required");
  auto wanted = co_await read_digests(r, kMaxBatchChunks);
  if (!wanted) co_return wanted.error();
  auto place = co_await locate(r, *path);
  if (!place) co_return place.error();
  auto a = co_await rest::stat_place(r.s.ns, r.c.ctx, *place);
  if (!a) co_return a.error();
  auto prefix = co_await stream_prefix(r);
  if (!prefix) co_return prefix.error();
  const bool prefixed = !prefix->empty();
  std::string body;
  wire::FrameWriter frames(body, std::move(*prefix));
  std::uint64_t logical = 0;
  if (auto failed = co_await append_chunks(r, a->ino, place->display, *version, *wanted, frames, logical))
    co_return failed;
  co_return co_await send_chunks(r, body, logical, prefixed);
}

Reply dir_chunks(Request& r) {
  auto path = path_param(r, "path");
  if (!path) co_return path.error();
  auto j = co_await read_json_body(r, kMaxNamesBody);
  if (!j) co_return j.error();
  auto files = parse_dir_chunks(*j);
  if (!files) co_return files.error();
  auto place = co_await locate(r, *path);
  if (!place) co_return place.error();
  auto dir = co_await rest::stat_place(r.s.ns, r.c.ctx, *place);
  if (!dir) co_return dir.error();
  if (dir->type != ns::FileType::directory)
    co_return rest::from_ns(ns::make_error_code(ns::Errc::not_dir), place->display);
  auto prefix = co_await stream_prefix(r);
  if (!prefix) co_return prefix.error();
  const bool prefixed = !prefix->empty();
  std::string body;
  wire::FrameWriter frames(body, std::move(*prefix));  // one stream: a file compresses against those before it
  std::uint64_t logical = 0;
  for (const FileChunks& f : *files) {
    const std::string display = place->display + "/" + f.name;
    if (!r.residency->allows(display, r.region))
      co_return rest::ApiError(403, "residency_denied", display + " may not leave the hub for region " + r.region);
    auto a = co_await r.s.ns.lookup(r.c.ctx, dir->ino, f.name);
    if (!a) co_return rest::from_ns(a.error(), display);
    if (auto failed = co_await append_chunks(r, a->ino, display, f.version, f.chunks, frames, logical)) co_return failed;
  }
  co_return co_await send_chunks(r, body, logical, prefixed);
}

Reply commit(Request& r) {
  auto path = path_param(r, "path");
  if (!path) co_return path.error();
  auto base_ino = rest::uint_param(r.c.target, "base_ino", 0, 0, std::numeric_limits<std::uint64_t>::max());
  if (!base_ino) co_return base_ino.error();
  auto base_version = rest::uint_param(r.c.target, "base_version", 0, 0, std::numeric_limits<std::uint64_t>::max());
  if (!base_version) co_return base_version.error();
  if (!r.c.query("base_ino") || !r.c.query("base_version"))
    co_return rest::bad_parameter("query parameters base_ino and base_version are required (0 and 0 for a new file)");
  auto mode = rest::uint_param(r.c.target, "mode", 0644, 0, 07777);
  if (!mode) co_return mode.error();
  auto place = co_await locate(r, *path);
  if (!place) co_return place.error();
  if (place->parent == 0) co_return rest::ApiError(409, "export_root", place->display + " is an export root");
  auto& ns = r.s.ns;
  auto staged = co_await ns.stage(r.c.ctx, place->parent, place->leaf, static_cast<std::uint32_t>(*mode));
  if (!staged) co_return rest::from_ns(staged.error(), place->display);
  const ns::Handle h = *staged;

  // The body is consumed to its end even once the commit is known to fail
  // (a missing reference), so the spoke reads one clear answer.
  wire::FrameReader reader;
  std::string piece(kBodyPiece, '\0');
  CommitBlock block;
  nlohmann::json missing = nlohmann::json::array();
  rest::Outcome failure;
  for (;;) {
    auto n = co_await r.c.ex.read_body(std::as_writable_bytes(std::span(piece)));
    if (!n) {
      failure = rest::bad_request("reading the commit body failed: " + n.error().message());
      break;
    }
    if (*n == 0) break;
    r.wire_bytes += *n;
    reader.append(std::string_view(piece.data(), *n));
    std::optional<wire::Error> error;
    while (auto frame = reader.next(&error)) {
      block.length += frame->length;
      block.frames.push_back(std::move(*frame));
      if (block.length >= kCommitBlock) {
        failure = co_await block.write(r, h, place->display, missing);
        if (failure) break;
      }
    }
    if (error) failure = rest::ApiError(400, "bad_frame", std::string(wire::message(*error)));
    if (failure) break;
  }
  if (!failure && !reader.empty()) failure = rest::ApiError(400, "bad_frame", "the commit body ends inside a chunk frame");
  if (!failure && !block.frames.empty()) failure = co_await block.write(r, h, place->display, missing);
  const std::uint64_t offset = block.at + block.length;  // the content the body carried
  r.c.content_bytes = offset;
  r.hub.wire_in->inc(r.wire_bytes);
  if (failure || !missing.empty()) {
    co_await ns.release(r.c.ctx, h);
    if (failure) co_return failure;
    nlohmann::json out{{"error", {{"code", "missing_chunks"},
                                  {"message", "the hub does not hold every chunk the commit refers to; send them as data"},
                                  {"request_id", r.c.request_id}}},
                       {"missing", std::move(missing)}};
    r.result = "missing_chunks";
    co_await r.c.send_json(422, out);
    co_return std::nullopt;
  }
  auto committed = co_await ns.commit_if(r.c.ctx, h, *base_ino, *base_version);
  co_await ns.release(r.c.ctx, h);
  if (!committed) {
    if (committed.error() != ns::make_error_code(ns::Errc::conflict))
      co_return rest::from_ns(committed.error(), place->display);
    // The spoke keeps its data under a conflict name; it learns what won.
    nlohmann::json out{{"error", {{"code", "conflict"},
                                  {"message", place->display + " changed since version " +
                                                  std::to_string(*base_version) + " of inode " +
                                                  std::to_string(*base_ino)},
                                  {"request_id", r.c.request_id}}}};
    auto now = co_await ns.lookup(r.c.ctx, place->parent, place->leaf);
    if (now) out["current"] = file_attr(*now);
    r.result = "conflict";
    co_await r.c.send_json(409, out);
    co_return std::nullopt;
  }
  r.hub.logical_in->inc(offset);
  auto seq = co_await log_position(r);
  if (!seq) co_return seq.error();
  const nlohmann::json out = attr_reply(*committed, *seq);
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

// The spoke's summary of its chunk cache, kept for the operator's view.
Reply cached(Request& r) {
  auto body = co_await read_body(r, wire::kMaxCacheSummary);
  if (!body) co_return body.error();
  auto summary = wire::CacheSummary::decode(*body);
  if (!summary) co_return rest::bad_request("the body is not a cache summary (backend/hub/PROTOCOL.md, PUT cached)");
  const std::uint64_t chunks = summary->chunks();
  r.hub.spokes_seen.cache_reported({r.c.user->name, r.region, r.c.head.remote},
                                   std::make_shared<const wire::CacheSummary>(std::move(*summary)));
  const nlohmann::json out{{"chunks", chunks}};
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

}  // namespace weft::hub
