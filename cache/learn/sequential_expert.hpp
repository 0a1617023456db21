// Expert 1: sequential and strided streams. Each client's recent files are
// streams; a read at the offset where the last one ended (or one stride on)
// confirms the stream and doubles its readahead window, up to a maximum;
// any other read shrinks it back. Confidence grows with the confirmations.
#pragma once

#include "cache/learn/catalog.hpp"
#include "cache/learn/expert.hpp"
#include "cache/learn/pace.hpp"

#include <unordered_map>

namespace weft::cache::learn {

struct SequentialOptions {
  std::uint64_t initial_window = 256 << 10;
  std::uint64_t max_window = 32 << 20;
  std::size_t streams_per_client = 8;
};

class SequentialExpert final : public Expert {
 public:
  explicit SequentialExpert(const Catalog& catalog, SequentialOptions options = {});
  std::string_view name() const override { return "sequential"; }
  void observe(const Read& read) override;
  void predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
               std::vector<Prediction>& out) override;
  Forecast forecast(FileId file, std::uint64_t offset, Time now) const override;

 private:
  struct Stream {
    FileId file = 0;
    std::uint64_t next = 0;         // where a sequential read would start
    std::uint64_t last_offset = 0;
    std::uint32_t last_bytes = 0;
    std::int64_t stride = 0;        // 0: sequential
    std::uint64_t window = 0;
    std::uint32_t hits = 0;         // confirmations in a row
  };
  struct Client {
    std::vector<Stream> streams;  // most recent first
    Pace pace;                    // per chunk read: the byte rate
  };
  static double confidence(const Stream& s) { return (s.hits + 1.0) / (s.hits + 2.0); }
  Time eta(const Client& c, std::uint64_t distance, Time now) const;

  const Catalog& catalog_;
  const SequentialOptions options_;
  std::unordered_map<ClientId, Client> clients_;
};

}  // namespace weft::cache::learn
