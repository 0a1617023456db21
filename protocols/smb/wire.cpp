#include "protocols/smb/wire.hpp"

#include <array>
#include <limits>

namespace weft::smb {

std::optional<ByteView> slice(ByteView msg, std::size_t offset, std::size_t length) {
  if (offset > msg.size() || msg.size() - offset < length) return std::nullopt;
  return msg.subspan(offset, length);
}

std::optional<std::string> from_utf16(ByteView in) {
  if (in.size() % 2) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 2);
  for (std::size_t i = 0; i < in.size(); i += 2) {
    std::uint32_t cp = in[i] | in[i + 1] << 8;
    if (cp >= 0xdc00 && cp < 0xe000) return std::nullopt;
    if (cp >= 0xd800 && cp < 0xdc00) {
      if (i + 3 >= in.size()) return std::nullopt;
      const std::uint32_t lo = in[i + 2] | in[i + 3] << 8;
      if (lo < 0xdc00 || lo >= 0xe000) return std::nullopt;
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      i += 2;
    }
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | cp >> 6));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | cp >> 12));
      out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | cp >> 18));
      out.push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  return out;
}

Bytes to_utf16(std::string_view in) {
  Bytes out;
  out.reserve(in.size() * 2);
  auto put = [&](std::uint32_t u) {
    out.push_back(static_cast<std::uint8_t>(u));
    out.push_back(static_cast<std::uint8_t>(u >> 8));
  };
  for (std::size_t i = 0; i < in.size();) {
    const auto c = static_cast<std::uint8_t>(in[i]);
    std::uint32_t cp = 0xfffd;
    std::size_t n = 1;
    if (c < 0x80) {
      cp = c;
    } else if ((c & 0xe0) == 0xc0) {
      n = 2;
    } else if ((c & 0xf0) == 0xe0) {
      n = 3;
    } else if ((c & 0xf8) == 0xf0) {
      n = 4;
    }
    if (n > 1) {
      if (i + n > in.size()) {
        n = 1;
      } else {
        cp = c & (0x7f >> n);
        for (std::size_t k = 1; k < n; ++k) {
          const auto cc = static_cast<std::uint8_t>(in[i + k]);
          if ((cc & 0xc0) != 0x80) {
            cp = 0xfffd;
            n = 1;
            break;
          }
          cp = cp << 6 | (cc & 0x3f);
        }
      }
    }
    i += n;
    if (cp >= 0x10000 && cp < 0x110000) {
      cp -= 0x10000;
      put(0xd800 + (cp >> 10));
      put(0xdc00 + (cp & 0x3ff));
    } else {
      put(cp < 0x110000 ? cp : 0xfffd);
    }
  }
  return out;
}

namespace {
constexpr std::int64_t kEpochDelta = 116444736000000000;  // 1601 -> 1970 in 100 ns
}

std::uint64_t filetime(std::int64_t ns) {
  const std::int64_t t = ns / 100 + kEpochDelta;
  return t < 0 ? 0 : static_cast<std::uint64_t>(t);
}

std::string upper_ascii(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

std::optional<std::int64_t> unix_ns(std::uint64_t ft) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  if (ft > static_cast<std::uint64_t>(kMax)) return std::nullopt;
  const std::int64_t t = static_cast<std::int64_t>(ft) - kEpochDelta;
  if (t > kMax / 100 || t < std::numeric_limits<std::int64_t>::min() / 100) return std::nullopt;
  return t * 100;
}

std::string_view command_name(Command c) {
  static constexpr std::array<std::string_view, static_cast<std::size_t>(Command::count_)> kNames{
      "negotiate", "session_setup", "logoff", "tree_connect", "tree_disconnect", "create", "close",
      "flush", "read", "write", "lock", "ioctl", "cancel", "echo", "query_directory",
      "change_notify", "query_info", "set_info", "oplock_break"};
  const auto i = static_cast<std::size_t>(c);
  return i < kNames.size() ? kNames[i] : "unknown";
}

std::optional<Header> parse_header(ByteView msg) {
  Reader r(msg);
  if (r.u32() != kProtocolSmb2 || r.u16() != kHeaderSize) return std::nullopt;
  Header h;
  h.credit_charge = r.u16();
  h.status = r.u32();
  h.command = static_cast<Command>(r.u16());
  h.credits = r.u16();
  h.flags = r.u32();
  h.next_command = r.u32();
  h.message_id = r.u64();
  if (h.flags & flags::async) {
    h.async_id = r.u64();
  } else {
    r.u32();
    h.tree_id = r.u32();
  }
  h.session_id = r.u64();
  ByteView sig = r.bytes(16);
  if (!r.ok()) return std::nullopt;
  std::copy(sig.begin(), sig.end(), h.signature.begin());
  return h;
}

void write_header(Writer& w, const Header& h) {
  w.u32(kProtocolSmb2);
  w.u16(kHeaderSize);
  w.u16(h.credit_charge);
  w.u32(h.status);
  w.u16(static_cast<std::uint16_t>(h.command));
  w.u16(h.credits);
  w.u32(h.flags);
  w.u32(h.next_command);
  w.u64(h.message_id);
  if (h.flags & flags::async) {
    w.u64(h.async_id);
  } else {
    w.u32(0xfeff);  // the process id Windows puts here
    w.u32(h.tree_id);
  }
  w.u64(h.session_id);
  w.bytes(h.signature);
}

}  // namespace weft::smb
