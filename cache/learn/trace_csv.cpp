// The CSV trace format (trace.hpp): time_ns,client,path,offset,length.
#include "cache/learn/trace.hpp"

#include <charconv>

namespace weft::cache::learn {

namespace {

constexpr std::string_view kColumns = "time_ns,client,path,offset,length";

// Splits one line into fields; a field may be double-quoted ("" inside
// stands for one quote). Returns an error message, or nothing.
std::optional<std::string> split(std::string_view line, std::vector<std::string>& fields) {
  fields.clear();
  std::size_t i = 0;
  while (true) {
    std::string field;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) return "unterminated quoted field " + std::to_string(fields.size() + 1);
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field.push_back(line[i++]);
      }
      if (i < line.size() && line[i] != ',')
        return "field " + std::to_string(fields.size() + 1) + ": text after its closing quote";
    } else {
      const std::size_t end = std::min(line.find(',', i), line.size());
      field.assign(line.substr(i, end - i));
      if (field.find('"') != std::string::npos)
        return "field " + std::to_string(fields.size() + 1) + ": a quote inside an unquoted field";
      i = end;
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) return std::nullopt;
    ++i;  // the comma
  }
}

std::optional<std::uint64_t> number(const std::string& s, std::uint64_t max) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

bool needs_quotes(std::string_view s) { return s.find_first_of(",\"") != std::string_view::npos || s.empty(); }

void append_field(std::string& out, std::string_view s) {
  if (!needs_quotes(s)) {
    out.append(s);
    return;
  }
  out.push_back('"');
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

}  // namespace

Result<Trace> parse_csv_trace(std::string_view text, std::string_view source) {
  Trace trace;
  std::vector<std::string> fields;
  std::size_t line_no = 0, pos = 0;
  bool seen_data = false;
  while (pos < text.size()) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty() || line.starts_with('#')) continue;
    const std::string where = std::string(source) + ":" + std::to_string(line_no) + ": ";
    if (!seen_data && line == kColumns) {
      seen_data = true;
      continue;
    }
    seen_data = true;
    if (auto bad = split(line, fields)) return Error{where + *bad};
    if (fields.size() != 5)
      return Error{where + "expected 5 fields (" + std::string(kColumns) + "), found " +
                   std::to_string(fields.size())};
    const auto time = number(fields[0], static_cast<std::uint64_t>(kNever));
    const auto offset = number(fields[3], UINT64_MAX);
    const auto length = number(fields[4], UINT32_MAX);
    if (!time) return Error{where + "time_ns: expected a non-negative integer, got \"" + fields[0] + "\""};
    if (fields[1].empty()) return Error{where + "client: empty"};
    if (fields[2].empty()) return Error{where + "path: empty"};
    if (!offset) return Error{where + "offset: expected a non-negative integer, got \"" + fields[3] + "\""};
    if (!length || *length == 0)
      return Error{where + "length: expected a positive integer below 2^32, got \"" + fields[4] + "\""};
    if (*offset > UINT64_MAX - *length) return Error{where + "offset + length overflows"};
    TraceAccess a;
    a.time = static_cast<Time>(*time);
    a.client = trace.names.intern(fields[1]);
    a.path = trace.names.intern(fields[2]);
    a.offset = *offset;
    a.bytes = static_cast<std::uint32_t>(*length);
    trace.accesses.push_back(a);
  }
  return trace;
}

Result<std::string> csv_of(const Trace& trace) {
  std::string out(kColumns);
  out.push_back('\n');
  for (const auto& a : trace.accesses) {
    const std::string& client = trace.names[a.client];
    const std::string& path = trace.names[a.path];
    if (client.find_first_of("\r\n") != std::string::npos || path.find_first_of("\r\n") != std::string::npos)
      return Error{"name \"" + (client.find_first_of("\r\n") != std::string::npos ? client : path) +
                   "\" has a line break, which a CSV trace cannot hold"};
    if (a.time < 0) return Error{"access at time " + std::to_string(a.time) + ": CSV times are not negative"};
    out.append(std::to_string(a.time));
    out.push_back(',');
    append_field(out, client);
    out.push_back(',');
    append_field(out, path);
    out.push_back(',');
    out.append(std::to_string(a.offset));
    out.push_back(',');
    out.append(std::to_string(a.bytes));
    out.push_back('\n');
  }
  return Result<std::string>(boost::system::in_place_value, std::move(out));
}

}  // namespace weft::cache::learn
