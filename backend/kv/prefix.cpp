// Key helpers shared by every engine and by the callers of the interface.
#include "backend/kv/kv.hpp"

namespace weft::kv {

std::string prefix_end(std::string_view prefix) {
  // Drop trailing 0xff bytes (they cannot be incremented) and increment the
  // last byte that can be; a prefix of only 0xff bytes has no upper bound.
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last != 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return end;
}

std::string log_key(std::string_view log, std::uint64_t seq) {
  std::string k(log);
  for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>((seq >> (i * 8)) & 0xff));
  return k;
}

std::uint64_t log_seq(std::string_view key) {
  std::uint64_t seq = 0;
  if (key.size() < 8) return 0;
  for (std::size_t i = key.size() - 8; i < key.size(); ++i)
    seq = (seq << 8) | static_cast<unsigned char>(key[i]);
  return seq;
}

Status log_head(Store& store, std::string_view log, std::uint64_t* seq) {
  std::string key, value;
  Status s = store.last(log, prefix_end(log), &key, &value);
  if (!s.ok() && !s.not_found()) return s;
  *seq = s.ok() ? log_seq(key) : 0;
  return Status::Ok();
}

}  // namespace weft::kv
