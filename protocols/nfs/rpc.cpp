#include "protocols/nfs/rpc.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace weft::nfs {

namespace {
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kMaxAuthBody = 400;  // RFC 5531: opaque body<400>
constexpr std::size_t kMaxMachineName = 255;
constexpr std::size_t kMaxGids = 16;
}  // namespace

std::span<std::uint8_t> RecordReader::space() {
  direct_ = !dropping_ && in_fragment_ && fragment_left_ > 0 && start_ == end_;
  if (direct_) return {rec_.data() + rec_filled_, fragment_left_};
  if (start_ == end_) {
    start_ = end_ = 0;
  } else if (start_ > 0 && buf_.size() - end_ < kReadChunk / 2) {
    std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
    end_ -= start_;
    start_ = 0;
  }
  if (buf_.size() - end_ < kReadChunk / 2) buf_.resize(end_ + kReadChunk);
  return {buf_.data() + end_, buf_.size() - end_};
}

void RecordReader::received(std::size_t n) {
  if (direct_) {
    rec_filled_ += n;
    fragment_left_ -= n;
  } else {
    end_ += n;
  }
  direct_ = false;
}

RecordReader::Next RecordReader::next(std::vector<std::uint8_t>& out) {
  for (;;) {
    if (in_fragment_) {
      std::size_t take = std::min(fragment_left_, end_ - start_);
      if (dropping_) {
        const std::size_t keep = std::min(take, kOversizedHead - std::min(kOversizedHead, rec_.size()));
        rec_.insert(rec_.end(), buf_.data() + start_, buf_.data() + start_ + keep);
      } else if (take > 0) {  // an empty fragment leaves rec_ without storage
        std::memcpy(rec_.data() + rec_filled_, buf_.data() + start_, take);
        rec_filled_ += take;
      }
      start_ += take;
      fragment_left_ -= take;
      if (fragment_left_ > 0) return Next::need_more;
      in_fragment_ = false;
      if (last_fragment_) {
        if (!dropping_) rec_.resize(rec_filled_);
        out = std::move(rec_);
        rec_ = {};
        rec_filled_ = 0;
        const bool dropped = std::exchange(dropping_, false);
        return dropped ? Next::too_large : Next::record;
      }
      continue;
    }
    if (end_ - start_ < 4) return Next::need_more;
    const std::uint8_t* p = buf_.data() + start_;
    std::uint32_t mark = std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
    start_ += 4;
    last_fragment_ = (mark & 0x80000000u) != 0;
    fragment_left_ = mark & 0x7fffffffu;
    if (!dropping_ && rec_filled_ + fragment_left_ > max_record_) {
      dropping_ = true;
      rec_.resize(std::min(rec_filled_, kOversizedHead));
    }
    if (!dropping_) rec_.resize(rec_filled_ + fragment_left_);
    in_fragment_ = true;
  }
}

BulkPool::~BulkPool() {
  for (std::uint8_t* p : idle_) delete[] p;
}

BulkPool::Buffer BulkPool::take() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      std::uint8_t* p = idle_.back();
      idle_.pop_back();
      return Buffer(p, Release{this});
    }
  }
  return Buffer(new std::uint8_t[size_], Release{this});
}

void BulkPool::put(std::uint8_t* p) {
  {
    std::lock_guard lock(mu_);
    if (idle_.size() < keep_) {
      idle_.push_back(p);
      return;
    }
  }
  delete[] p;
}

namespace {
bool read_auth(XdrReader& in, OpaqueAuth& a) {
  a.flavor = in.u32();
  a.body = in.opaque(kMaxAuthBody);
  return in.ok();
}
}  // namespace

CallParse parse_call(XdrReader& in, CallHeader& out) {
  out.xid = in.u32();
  if (!in.ok()) return CallParse::no_reply;
  if (in.u32() != rpc::kCall || !in.ok()) return CallParse::no_reply;
  std::uint32_t version = in.u32();
  if (!in.ok()) return CallParse::no_reply;
  if (version != rpc::kVersion) return CallParse::rpc_mismatch;
  out.prog = in.u32();
  out.vers = in.u32();
  out.proc = in.u32();
  if (!read_auth(in, out.cred) || !read_auth(in, out.verf)) return CallParse::bad_cred;
  return CallParse::ok;
}

std::optional<AuthSys> parse_auth_sys(std::span<const std::uint8_t> body) {
  XdrReader in(body);
  AuthSys a;
  a.stamp = in.u32();
  a.machine = in.string(kMaxMachineName);
  a.uid = in.u32();
  a.gid = in.u32();
  std::uint32_t n = in.u32();
  if (n > kMaxGids) return std::nullopt;
  for (std::uint32_t i = 0; i < n && in.ok(); ++i) a.gids.push_back(in.u32());
  if (!in.done()) return std::nullopt;
  return a;
}

namespace {
void reply_head(std::string& out, std::uint32_t xid) {
  out.assign(4, '\0');
  XdrWriter w(out);
  w.u32(xid);
  w.u32(rpc::kReply);
}
}  // namespace

void begin_reply(std::string& out, std::uint32_t xid, rpc::Accept stat) {
  reply_head(out, xid);
  XdrWriter w(out);
  w.u32(0);  // MSG_ACCEPTED
  w.u32(rpc::kAuthNone);
  w.u32(0);  // empty verifier
  w.u32(static_cast<std::uint32_t>(stat));
}

void prog_mismatch_reply(std::string& out, std::uint32_t xid, std::uint32_t low, std::uint32_t high) {
  begin_reply(out, xid, rpc::Accept::prog_mismatch);
  XdrWriter w(out);
  w.u32(low);
  w.u32(high);
}

void rpc_mismatch_reply(std::string& out, std::uint32_t xid) {
  reply_head(out, xid);
  XdrWriter w(out);
  w.u32(1);  // MSG_DENIED
  w.u32(0);  // RPC_MISMATCH
  w.u32(rpc::kVersion);
  w.u32(rpc::kVersion);
}

void auth_error_reply(std::string& out, std::uint32_t xid, rpc::AuthStat stat) {
  reply_head(out, xid);
  XdrWriter w(out);
  w.u32(1);  // MSG_DENIED
  w.u32(1);  // AUTH_ERROR
  w.u32(static_cast<std::uint32_t>(stat));
}

void finish_record(Reply& reply) {
  std::string& out = reply.head;
  const std::size_t size = out.size() - 4 + reply.bulk_size + reply.bulk_padding();
  std::uint32_t mark = 0x80000000u | static_cast<std::uint32_t>(size);
  out[0] = static_cast<char>(mark >> 24);
  out[1] = static_cast<char>(mark >> 16);
  out[2] = static_cast<char>(mark >> 8);
  out[3] = static_cast<char>(mark);
}

}  // namespace weft::nfs
