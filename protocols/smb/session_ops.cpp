// NEGOTIATE (also the SMB1 multi-protocol form), SESSION_SETUP, LOGOFF,
// TREE_CONNECT, TREE_DISCONNECT, ECHO and IOCTL.
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"
#include "protocols/smb/connection.hpp"
#include "protocols/smb/spnego.hpp"
#include "protocols/smb/status.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace weft::smb {

namespace asio = boost::asio;

namespace {

namespace caps {
inline constexpr std::uint32_t large_mtu = 0x4;
inline constexpr std::uint32_t encryption = 0x40;
}  // namespace caps

namespace context_type {
inline constexpr std::uint16_t preauth = 1;
inline constexpr std::uint16_t encryption = 2;
inline constexpr std::uint16_t signing = 8;
}  // namespace context_type

constexpr std::uint16_t kSha512 = 1;
constexpr std::uint32_t kValidateNegotiate = 0x00140204;
constexpr std::uint32_t kDfsReferrals = 0x00060194;
constexpr std::uint32_t kDfsReferralsEx = 0x000601B0;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

ByteView label(const char* s) { return {reinterpret_cast<const std::uint8_t*>(s), std::strlen(s) + 1}; }

void put_context(Writer& w, std::uint16_t type, ByteView data) {
  w.align(8);
  w.u16(type);
  w.u16(static_cast<std::uint16_t>(data.size()));
  w.u32(0);
  w.bytes(data);
}

}  // namespace

void Connection::write_negotiate(Writer& w, std::uint16_t chosen, ByteView contexts,
                                 std::uint16_t context_count) const {
  const Bytes blob = spnego_server_init();
  const std::uint32_t max_io = chosen >= dialect::smb210 ? server_->config.max_io : 65536;
  std::uint32_t capabilities = chosen >= dialect::smb210 ? caps::large_mtu : 0;
  if ((chosen == dialect::smb300 || chosen == dialect::smb302) && (client_capabilities_ & caps::encryption)) {
    capabilities |= caps::encryption;
  }
  const std::size_t body = w.size();
  w.u16(65);
  w.u16(server_->config.require_signing ? 3 : 1);
  w.u16(chosen);
  w.u16(0);  // negotiate context count, patched below
  w.bytes(server_->guid);
  w.u32(capabilities);
  w.u32(max_io);
  w.u32(max_io);
  w.u32(max_io);
  w.u64(filetime(now_ns()));
  w.u64(filetime(server_->start_ns));
  w.u16(static_cast<std::uint16_t>(w.size() + 8));  // the blob follows the fixed part
  w.u16(static_cast<std::uint16_t>(blob.size()));
  const std::size_t ctx_offset_at = w.size();
  w.u32(0);
  w.bytes(blob);
  if (!contexts.empty()) {
    w.align(8);
    w.set_u32(ctx_offset_at, static_cast<std::uint32_t>(w.size()));
    w.set_u16(body + 6, context_count);
    w.bytes(contexts);
  }
}

bool Connection::answer_smb1_negotiate(ByteView frame, Reply& reply) {
  // SMB1 header (32 bytes), command 0x72, then WordCount, ByteCount and
  // the dialect strings, each "\x02name\0".
  Reader r(frame, 4);
  if (r.u8() != 0x72) return false;
  r.skip(27);
  if (r.u8() != 0) return false;
  const std::uint16_t count = r.u16();
  ByteView dialects = r.bytes(count);
  if (!r.ok()) return false;
  bool smb2 = false, wildcard = false;
  for (std::size_t i = 0; i < dialects.size();) {
    if (dialects[i] != 0x02) return false;
    auto end = std::find(dialects.begin() + static_cast<std::ptrdiff_t>(i) + 1, dialects.end(), 0);
    if (end == dialects.end()) return false;
    const std::string name(dialects.begin() + static_cast<std::ptrdiff_t>(i) + 1, end);
    smb2 = smb2 || name == "SMB 2.002";
    wildcard = wildcard || name == "SMB 2.???";
    i = static_cast<std::size_t>(end - dialects.begin()) + 1;
  }
  if (!smb2 && !wildcard) return false;
  Header h;  // the SMB1 negotiate is message id 0
  if (!take_credits(h)) return false;
  const std::uint16_t chosen = wildcard ? dialect::wildcard : dialect::smb202;
  write_negotiate(reply.out, chosen, {}, 0);
  Header out;
  out.flags = flags::server_to_redir;
  out.credits = grant_credits(h);
  put_header(reply, out);
  if (!wildcard) {
    negotiated_ = true;
    dialect_ = dialect::smb202;
  }
  return true;
}

Connection::Task Connection::on_negotiate(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  const std::uint16_t dialect_count = b.u16();
  client_security_mode_ = b.u16();
  b.u16();
  client_capabilities_ = b.u32();
  ByteView guid = b.bytes(16);
  const std::uint32_t ctx_offset = b.u32();
  const std::uint16_t ctx_count = b.u16();
  b.u16();
  if (!b.ok() || size != 36 || dialect_count == 0) co_return error(status::invalid_parameter);
  std::memcpy(client_guid_.data(), guid.data(), 16);
  client_dialects_.clear();
  std::uint16_t chosen = 0;
  for (std::uint16_t i = 0; i < dialect_count; ++i) {
    const std::uint16_t d = b.u16();
    client_dialects_.push_back(d);
    if ((d == dialect::smb202 || d == dialect::smb210 || d == dialect::smb300 || d == dialect::smb302 ||
         d == dialect::smb311) && d > chosen) {
      chosen = d;
    }
  }
  if (!b.ok()) co_return error(status::invalid_parameter);
  if (chosen == 0) co_return error(status::not_supported);

  Writer contexts;
  std::uint16_t context_count = 0;
  if (chosen == dialect::smb311) {
    bool sha512_offered = false;
    std::optional<Cipher> cipher;
    std::optional<Signing> signing;
    bool signing_context = false, encryption_context = false;
    Reader c(r.msg, ctx_offset);
    for (std::uint16_t i = 0; i < ctx_count; ++i) {
      Reader align(r.msg, (c.pos() + 7) / 8 * 8);
      c = align;
      const std::uint16_t type = c.u16();
      const std::uint16_t len = c.u16();
      c.u32();
      ByteView data = c.bytes(len);
      if (!c.ok()) co_return error(status::invalid_parameter);
      Reader d(data);
      if (type == context_type::preauth) {
        const std::uint16_t n = d.u16();
        d.u16();
        for (std::uint16_t k = 0; k < n; ++k) sha512_offered = sha512_offered || d.u16() == kSha512;
      } else if (type == context_type::encryption) {
        encryption_context = true;
        const std::uint16_t n = d.u16();
        std::vector<std::uint16_t> offered;
        for (std::uint16_t k = 0; k < n; ++k) offered.push_back(d.u16());
        // The client's order is its preference; take the first we have.
        for (std::uint16_t id : offered) {
          if (id >= static_cast<std::uint16_t>(Cipher::aes128_ccm) && id <= static_cast<std::uint16_t>(Cipher::aes256_gcm)) {
            cipher = static_cast<Cipher>(id);
            break;
          }
        }
      } else if (type == context_type::signing) {
        signing_context = true;
        const std::uint16_t n = d.u16();
        // The client's order is its preference (GMAC first, where offered:
        // several times cheaper than CMAC); take the first we have.
        for (std::uint16_t k = 0; k < n; ++k) {
          const std::uint16_t id = d.u16();
          if (!signing && id <= static_cast<std::uint16_t>(Signing::aes_gmac)) signing = static_cast<Signing>(id);
        }
      }
      if (!d.ok()) co_return error(status::invalid_parameter);
    }
    if (!sha512_offered) co_return error(status::invalid_parameter);
    context_count = 1;
    Writer pre;
    pre.u16(1);
    pre.u16(32);
    pre.u16(kSha512);
    std::array<std::uint8_t, 32> salt;
    random_bytes(salt);
    pre.bytes(salt);
    put_context(contexts, context_type::preauth, pre.data());
    if (encryption_context) {
      Writer enc;
      enc.u16(1);
      enc.u16(cipher ? static_cast<std::uint16_t>(*cipher) : 0);  // 0: none in common
      put_context(contexts, context_type::encryption, enc.data());
      ++context_count;
      if (cipher) {
        cipher_ = *cipher;
        cipher_agreed_ = true;
      }
    }
    signing_ = Signing::aes_cmac;  // without a signing context, or none in common
    if (signing_context && signing) {
      signing_ = *signing;
      Writer sig;
      sig.u16(1);
      sig.u16(static_cast<std::uint16_t>(signing_));
      put_context(contexts, context_type::signing, sig.data());
      ++context_count;
    }
    static constexpr Hash512 kZero{};
    preauth_ = sha512({kZero, r.msg});
  } else {
    signing_ = chosen >= dialect::smb300 ? Signing::aes_cmac : Signing::hmac_sha256;
    if ((chosen == dialect::smb300 || chosen == dialect::smb302) && (client_capabilities_ & caps::encryption)) {
      cipher_ = Cipher::aes128_ccm;
      cipher_agreed_ = true;
    }
  }
  negotiated_ = true;
  dialect_ = chosen;
  max_io_ = chosen >= dialect::smb210 ? server_->config.max_io : 65536;
  Reply reply;
  write_negotiate(reply.out, chosen, contexts.data(), context_count);
  co_return reply;
}

Connection::Task Connection::on_session_setup(Request& r) {
  std::shared_ptr<Session> failed;
  std::uint64_t previous = 0;
  Reply reply = co_await authenticate(r, failed, previous);
  // A failed re-authentication ends the session, its trees and opens (as
  // Windows and Samba do; its answer is still signed with the session's
  // key). A client that reconnects names the session it had, which ends
  // too (only one of this connection: no session outlives its connection
  // here).
  if (failed) {
    while (!failed->trees.empty()) co_await drop_tree(*failed, failed->trees.begin()->first);
    logged_off_ = failed->id;
  }
  if (previous && reply.status == status::success && previous != reply.session_id) {
    auto old = sessions_.find(previous);
    if (old != sessions_.end() && old->second->valid &&
        old->second->principal.user == sessions_.at(reply.session_id)->principal.user) {
      co_await drop_session(previous);
    }
  }
  co_return reply;
}

Connection::Task Connection::authenticate(Request& r, std::shared_ptr<Session>& failed, std::uint64_t& previous) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  const std::uint8_t setup_flags = b.u8();
  const std::uint8_t security_mode = b.u8();
  b.u32();
  b.u32();
  const std::uint16_t blob_offset = b.u16();
  const std::uint16_t blob_length = b.u16();
  previous = b.u64();
  auto blob = slice(r.msg, blob_offset, blob_length);
  if (!b.ok() || size != 25 || !blob || blob->empty()) co_return error(status::invalid_parameter);
  if (setup_flags & 1) co_return error(status::not_supported);  // binding: one channel per session

  std::shared_ptr<Session> s = r.session;
  if (!s) {
    auto fresh = std::make_shared<Session>();
    // Random ids: a client that guesses or mistypes one does not land on
    // another session (smbtorture probes exactly that). 32 bits of them, as
    // Samba's: clients that keep the id in 32 bits (smbtorture's
    // smb2.session-id does) still name the session.
    std::uint32_t id = 0;
    do {
      random_bytes(std::span(reinterpret_cast<std::uint8_t*>(&id), sizeof id));
    } while (id == 0 || sessions_.contains(id));
    fresh->id = id;
    fresh->preauth = preauth_;
    s = fresh;
    sessions_.emplace(s->id, std::move(fresh));
  }
  Reply reply;
  reply.session_id = s->id;
  if (dialect_ == dialect::smb311) s->preauth = sha512({s->preauth, r.msg});

  auto fail = [&](std::uint32_t code) -> Reply {
    server_->auth_failures->inc();
    Reply e = error(code);
    e.session_id = s->id;
    if (s->valid) {
      failed = s;
    } else {
      sessions_.erase(s->id);
    }
    return e;
  };

  ByteView token;
  std::optional<NegToken> spnego;
  if (is_ntlmssp(*blob, 1) || is_ntlmssp(*blob, 3)) {
    s->raw_ntlmssp = true;
    token = *blob;
  } else {
    spnego = parse_spnego(*blob);
    if (!spnego) co_return fail(status::invalid_parameter);
    if (spnego->init) {
      if (!spnego->offers_ntlm) co_return fail(status::logon_failure);
      s->mech_types = spnego->mech_types;
    }
    token = spnego->mech_token;
  }

  auto answer = [&](ByteView out_blob, std::uint16_t session_flags) {
    reply.out.u16(9);
    reply.out.u16(session_flags);
    reply.out.u16(static_cast<std::uint16_t>(kHeaderSize + 8));
    reply.out.u16(static_cast<std::uint16_t>(out_blob.size()));
    reply.out.bytes(out_blob);
    if (out_blob.empty()) reply.out.u8(0);
  };

  if (is_ntlmssp(token, 1)) {
    auto challenge = s->ntlm.challenge(token, server_->config.server_name, now_ns());
    if (!challenge) co_return fail(status::invalid_parameter);
    reply.status = status::more_processing_required;
    if (s->raw_ntlmssp) {
      answer(*challenge, 0);
    } else {
      answer(spnego_response(NegState::accept_incomplete, true, *challenge, {}), 0);
    }
    co_return reply;
  }
  auto auth = parse_authenticate(token);
  if (!auth) co_return fail(status::invalid_parameter);
  if (auth->user.empty()) co_return fail(status::logon_failure);  // anonymous: no guest access
  std::string user_name = auth->user;
  auto hash = server_->ns.nt_hash(user_name);
  if (!hash) co_return fail(status::logon_failure);
  auto key = s->ntlm.authenticate(*auth, token, *hash);
  if (!key) co_return fail(status::logon_failure);
  Bytes mic;
  if (spnego && !spnego->mech_list_mic.empty()) {
    if (!s->ntlm.check_mech_list_mic(s->mech_types, spnego->mech_list_mic)) co_return fail(status::logon_failure);
    mic = s->ntlm.mech_list_mic(s->mech_types);
  }
  auto user = server_->ns.user(user_name);
  if (!user) co_return fail(status::logon_failure);
  s->principal = server_->ns.principal(*user);

  if (dialect_ >= dialect::smb300) {
    if (dialect_ == dialect::smb311) {
      s->signing_key = smb3_kdf(*key, label("SMBSigningKey"), s->preauth);
      // AES-256 keys are 256 bits of the KDF (MS-SMB2 3.3.5.5.3).
      const std::size_t n = key_length(cipher_);
      smb3_kdf(*key, label("SMBS2CCipherKey"), s->preauth, std::span(s->encryption_key).first(n));
      smb3_kdf(*key, label("SMBC2SCipherKey"), s->preauth, std::span(s->decryption_key).first(n));
    } else {
      s->signing_key = smb3_kdf(*key, label("SMB2AESCMAC"), label("SmbSign"));
      smb3_kdf(*key, label("SMB2AESCCM"), label("ServerOut"), std::span(s->encryption_key).first(16));
      smb3_kdf(*key, label("SMB2AESCCM"), label("ServerIn "), std::span(s->decryption_key).first(16));
    }
  } else {
    s->signing_key = *key;
  }
  s->valid = true;
  s->signing = server_->config.require_signing || (security_mode & 2);
  s->encrypt = server_->config.encrypt && cipher_agreed_;
  if (server_->config.encrypt && !cipher_agreed_) {
    // The share requires encryption and this client cannot: refuse, as Windows does.
    co_return fail(status::access_denied);
  }
  reply.audit_path = user_name;
  const std::uint16_t session_flags = s->encrypt ? 0x4 : 0;
  if (s->raw_ntlmssp) {
    answer({}, session_flags);
  } else {
    answer(spnego_response(NegState::accept_completed, false, {}, mic), session_flags);
  }
  co_return reply;
}

Connection::Task Connection::on_logoff(Request& r) {
  Reader b(r.msg, kHeaderSize);
  if (b.u16() != 4 || !b.ok()) co_return error(status::invalid_parameter);
  Session& s = *r.session;
  while (!s.trees.empty()) co_await drop_tree(s, s.trees.begin()->first);
  logged_off_ = s.id;
  co_return bare_success();
}

Connection::Task Connection::on_tree_connect(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  b.u16();
  const std::uint16_t path_offset = b.u16();
  const std::uint16_t path_length = b.u16();
  auto raw = slice(r.msg, path_offset, path_length);
  if (!b.ok() || size != 9 || !raw) co_return error(status::invalid_parameter);
  auto path = from_utf16(*raw);
  if (!path) co_return error(status::invalid_parameter);
  const auto cut = path->find_last_of('\\');
  const std::string share = cut == std::string::npos ? *path : path->substr(cut + 1);
  Session& s = *r.session;
  Tree t;
  t.ipc = same_name(share, "IPC$");
  std::uint32_t maximal = access::read_only_file;
  if (t.ipc) {
    t.share = "IPC$";
  } else {
    auto exports = server_->ns.exports();
    if (!exports) co_return error(to_status(exports.error()));
    auto it = std::find_if(exports->begin(), exports->end(), [&](const ns::Export& e) { return same_name(e.name, share); });
    if (it == exports->end()) co_return error(status::bad_network_name);
    auto granted = server_->ns.export_access(s.principal, it->name);
    if (!granted || granted->access == ns::Access::none) co_return error(status::access_denied);
    t.share = it->name;
    t.export_access = *granted;
    if (granted->access == ns::Access::read_write) maximal = access::all_file;
  }
  if (s.trees.size() >= 1024) co_return error(status::insufficient_resources);
  t.id = s.next_tree++;
  Reply reply;
  reply.tree_id = t.id;
  reply.audit_path = t.share;
  reply.out.u16(16);
  reply.out.u8(t.ipc ? 2 : 1);
  reply.out.u8(0);
  reply.out.u32(s.encrypt ? 0x8000 : 0);  // SMB2_SHAREFLAG_ENCRYPT_DATA
  reply.out.u32(0);
  reply.out.u32(maximal);
  const std::uint32_t id = t.id;
  s.trees.emplace(id, std::make_shared<Tree>(std::move(t)));
  co_return reply;
}

Connection::Task Connection::on_tree_disconnect(Request& r) {
  Reader b(r.msg, kHeaderSize);
  if (b.u16() != 4 || !b.ok()) co_return error(status::invalid_parameter);
  co_await drop_tree(*r.session, r.tree->id);
  co_return bare_success();
}

Connection::Task Connection::on_echo(Request& r) {
  Reader b(r.msg, kHeaderSize);
  if (b.u16() != 4 || !b.ok()) co_return error(status::invalid_parameter);
  co_return bare_success();
}

Connection::Task Connection::on_ioctl(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  b.u16();
  const std::uint32_t code = b.u32();
  ByteView file_id = b.bytes(16);
  const std::uint32_t in_offset = b.u32();
  const std::uint32_t in_count = b.u32();
  b.u32();
  b.u32();
  b.u32();
  const std::uint32_t max_out = b.u32();
  const std::uint32_t ioctl_flags = b.u32();
  auto input = slice(r.msg, in_offset, in_count);
  if (!b.ok() || size != 57 || !input) co_return error(status::invalid_parameter);
  if (!charge_covers(r.header, std::max(in_count, max_out))) co_return error(status::invalid_parameter);
  if (ioctl_flags != 1) co_return error(status::not_supported);  // only FSCTLs
  Writer output;
  if (code == kValidateNegotiate) {
    Reader in(*input);
    const std::uint32_t capabilities = in.u32();
    ByteView guid = in.bytes(16);
    const std::uint16_t security_mode = in.u16();
    const std::uint16_t count = in.u16();
    std::vector<std::uint16_t> dialects;
    for (std::uint16_t i = 0; i < count; ++i) dialects.push_back(in.u16());
    // A mismatch means someone rewrote the NEGOTIATE: drop the connection.
    if (!in.ok() || capabilities != client_capabilities_ || !std::equal(guid.begin(), guid.end(), client_guid_.begin()) ||
        security_mode != client_security_mode_ || dialects != client_dialects_) {
      drop_ = true;
      co_return error(status::access_denied);
    }
    if (max_out < 24) co_return error(status::invalid_parameter);
    std::uint32_t our_caps = dialect_ >= dialect::smb210 ? caps::large_mtu : 0;
    if ((dialect_ == dialect::smb300 || dialect_ == dialect::smb302) && (client_capabilities_ & caps::encryption)) {
      our_caps |= caps::encryption;
    }
    output.u32(our_caps);
    output.bytes(server_->guid);
    output.u16(server_->config.require_signing ? 3 : 1);
    output.u16(dialect_);
  } else if (code == kDfsReferrals || code == kDfsReferralsEx) {
    co_return error(status::fs_driver_required);  // no DFS here
  } else {
    // The other FSCTLs act on an open: a handle that names none is told
    // so before the control itself is refused.
    Reader id(file_id);
    co_return error(find_open(r, id) ? status::not_supported : status::file_closed);
  }
  Reply reply;
  reply.out.u16(49);
  reply.out.u16(0);
  reply.out.u32(code);
  reply.out.bytes(file_id);
  reply.out.u32(static_cast<std::uint32_t>(kHeaderSize + 48));
  reply.out.u32(0);
  reply.out.u32(static_cast<std::uint32_t>(kHeaderSize + 48));
  reply.out.u32(static_cast<std::uint32_t>(output.size()));
  reply.out.u32(0);
  reply.out.u32(0);
  reply.out.bytes(output.data());
  co_return reply;
}

asio::awaitable<void> Connection::drop_tree(Session& s, std::uint32_t tree_id) {
  const Tree* tree = nullptr;
  if (auto it = s.trees.find(tree_id); it != s.trees.end()) tree = it->second.get();
  const ns::OpContext ctx = context(s, tree);
  std::vector<std::uint64_t> ids;
  for (auto& [id, o] : opens_) {
    if (o.session == s.id && o.tree == tree_id) ids.push_back(id);
  }
  // Locks waiting on these opens end before any of their locks goes (as
  // Samba), not granted by a holder closed first.
  for (std::uint64_t id : ids) end_pending(id);
  for (std::uint64_t id : ids) {
    co_await close_open(ctx, opens_.at(id));
    opens_.erase(id);
  }
  s.trees.erase(tree_id);
}

asio::awaitable<void> Connection::drop_session(std::uint64_t id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) co_return;
  Session& s = *it->second;
  while (!s.trees.empty()) co_await drop_tree(s, s.trees.begin()->first);
  sessions_.erase(id);
}

}  // namespace weft::smb
