// libFuzzer target for the SFTP packet parser: the input is a channel byte
// stream, cut into packets by frame() and each parsed as the front end does;
// paths go through the jail's normalization. ASan and UBSan catch reads past
// the input; the checks below catch a parser that invents bytes.
#include "protocols/sftp/packet.hpp"
#include "protocols/sftp/paths.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace weft::sftp;
  std::string_view stream(reinterpret_cast<const char*>(data), size);
  const Components home{"data"};
  while (!stream.empty()) {
    auto n = frame(stream);
    if (!n || *n == 0) break;
    check(*n >= 5 && *n <= stream.size() && *n <= kMaxPacket + 4);
    std::string_view packet = stream.substr(4, *n - 4);
    auto parsed = parse(packet);
    if (auto* r = std::get_if<Request>(&parsed)) {
      check(inside(r->path, packet) && inside(r->path2, packet) && inside(r->handle, packet) &&
            inside(r->data, packet));
      check(r->path.size() <= kMaxPath && r->handle.size() <= kMaxHandle);
      for (auto path : {r->path, r->path2}) {
        for (const auto& c : normalize(path, home)) check(!c.empty() && c != "." && c != "..");
      }
      (void)type_name(r->type, r->extension);
    }
    stream.remove_prefix(*n);
  }
  return 0;
}
