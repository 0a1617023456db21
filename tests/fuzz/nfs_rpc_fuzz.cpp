// libFuzzer target: the NFS front end's parsing of untrusted bytes, as a
// connection sees them. The input is cut into reads of varying size (the
// first byte picks the pattern), assembled into records by RecordReader,
// and each record goes through the RPC call header, the AUTH_SYS body, the
// arguments of the NFSv3 procedure it names (or of every procedure, when it
// names none) and the file-handle decoder.
#include "protocols/nfs/handles.hpp"
#include "protocols/nfs/nfs3_args.hpp"
#include "protocols/nfs/rpc.hpp"

#include <algorithm>
#include <cstring>

using namespace weft::nfs;

namespace {

void parse_record(const std::vector<std::uint8_t>& record, const HandleCodec& handles) {
  XdrReader in(record);
  CallHeader h;
  if (parse_call(in, h) != CallParse::ok) return;
  if (h.cred.flavor == rpc::kAuthSys) (void)parse_auth_sys(h.cred.body);
  const std::size_t args_at = record.size() - in.remaining();
  std::span<const std::uint8_t> args(record.data() + args_at, record.size() - args_at);
  const std::size_t first = h.proc < kProcs3 ? h.proc : 0;
  const std::size_t last = h.proc < kProcs3 ? h.proc + 1 : kProcs3;
  for (std::size_t p = first; p < last; ++p) {
    XdrReader a(args);
    Args3 out;
    if (!decode_args3(static_cast<Proc3>(p), a, out)) continue;
    (void)handles.decode(out.fh);
    (void)handles.decode(out.fh2);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const HandleCodec handles(HandleCodec::Key{7});
  if (size == 0) return 0;
  const std::size_t step = 1 + data[0] * 37;  // 1 .. 9436 bytes per read
  RecordReader reader(kMaxIo + 64 * 1024);
  std::size_t at = 1;
  while (at < size) {
    auto space = reader.space();
    const std::size_t n = std::min({space.size(), step, size - at});
    std::memcpy(space.data(), data + at, n);
    reader.received(n);
    at += n;
    for (;;) {
      std::vector<std::uint8_t> record;
      auto next = reader.next(record);
      if (next == RecordReader::Next::too_large) return 0;  // the connection would close
      if (next == RecordReader::Next::need_more) break;
      parse_record(record, handles);
    }
  }
  return 0;
}
