// libFuzzer target: the hub protocol's chunk frame decoder (and the JSON
// forms of attributes and manifests) on arbitrary bytes. The decoder must
// never crash, never allocate past its limits, and return only frames whose
// bytes match their digest; what it returns must survive a re-encode
// (after a prefix).
#include "gateway/hub_wire/wire.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <span>

using namespace weft::hub::wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The first byte picks how the stream is split into arrivals.
  const std::size_t step = size ? (data[0] % 61) + 1 : 1;
  FrameReader reader;
  std::string reencoded;
  // Re-encoded after a prefix (the input's first bytes), as a hub answers a
  // spoke that names chunks it holds; read back with the same prefix.
  const std::string prefix(input.substr(0, 256));
  FrameWriter writer(reencoded, prefix);
  std::optional<Error> error;
  for (std::size_t at = 0; at < size && !error; at += step) {
    reader.append(input.substr(at, step));
    while (auto f = reader.next(&error)) {
      if (f->length > kMaxChunk) std::abort();
      if (f->kind == Kind::data) {
        const auto bytes = std::as_bytes(std::span(f->bytes.data(), f->bytes.size()));
        if (f->bytes.size() != f->length || sha256(bytes) != f->digest) std::abort();
        writer.data(f->digest, bytes);
      } else {
        writer.reference(f->digest, f->length);
      }
    }
  }
  FrameReader again(prefix);
  again.append(reencoded);
  std::optional<Error> again_error;
  while (again.next(&again_error)) {
  }
  if (again_error || !again.empty()) std::abort();

  auto j = nlohmann::json::parse(input, nullptr, false);
  if (!j.is_discarded()) {
    try {
      (void)j.get<FileAttr>();
    } catch (const nlohmann::json::exception&) {
    }
    try {
      (void)j.get<Manifest>();
    } catch (const nlohmann::json::exception&) {
    }
  }
  return 0;
}
