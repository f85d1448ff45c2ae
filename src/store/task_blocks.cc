#include "store/task_blocks.h"

#include <algorithm>
#include <charconv>

namespace berth::store::blocks {

namespace {

constexpr std::string_view kMagic = "B1;";

// FNV-1a: stable across builds and machines, as a block's id must be.
uint32_t Hash(std::string_view text) {
  uint32_t h = 2166136261u;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// Reads decimal digits up to `stop` from `text` at `*pos` into `*out`.
bool ReadNumber(std::string_view text, size_t* pos, char stop, uint64_t* out) {
  const char* begin = text.data() + *pos;
  const char* end = text.data() + text.size();
  const auto [next, error] = std::from_chars(begin, end, *out);
  if (error != std::errc() || next == begin || next == end || *next != stop) return false;
  *pos = static_cast<size_t>(next - text.data()) + 1;
  return true;
}

bool ReadBytes(std::string_view text, size_t* pos, uint64_t size, std::string* out) {
  if (size > text.size() - *pos) return false;
  out->assign(text.substr(*pos, size));
  *pos += size;
  return true;
}

}  // namespace

std::string BlockOf(std::string_view id) {
  const size_t dot = id.find('.');
  const std::string_view owner = id.substr(0, dot);
  const std::string_view rest = dot == std::string_view::npos ? "" : id.substr(dot + 1);
  std::string block(owner);
  block += '.';
  uint64_t slot = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), slot);
  if (error == std::errc() && end != rest.data())
    block += std::to_string(slot / kSlotsPerBlock);
  else  // not numbered, or a number past 64 bits
    block += 'h' + std::to_string(Hash(rest) % kHashBuckets);
  return block;
}

std::string_view BlockPrefix(std::string_view prefix) {
  const size_t dot = prefix.find('.');
  return dot == std::string_view::npos ? prefix : prefix.substr(0, dot + 1);
}

std::string Encode(const std::vector<Entry>& entries) {
  size_t size = kMagic.size();
  for (const Entry& e : entries) size += e.id.size() + e.body.size() + 48;
  std::string out;
  out.reserve(size);
  out += kMagic;
  for (const Entry& e : entries) {
    out += std::to_string(e.id.size());
    out += ':';
    out += e.id;
    out += std::to_string(e.revision);
    out += ',';
    out += e.deleted ? 'd' : 'l';
    out += std::to_string(e.body.size());
    out += ':';
    out += e.body;
  }
  return out;
}

Result<std::vector<Entry>> Decode(std::string_view value) {
  const auto bad = [](std::string_view why) {
    return Status::InvalidArgument("a task block is damaged: " + std::string(why));
  };
  if (!value.starts_with(kMagic)) return bad("it does not start with \"B1;\"");
  std::vector<Entry> entries;
  size_t pos = kMagic.size();
  while (pos < value.size()) {
    Entry e;
    uint64_t id_size = 0, revision = 0, body_size = 0;
    if (!ReadNumber(value, &pos, ':', &id_size) || !ReadBytes(value, &pos, id_size, &e.id))
      return bad("an entry's id");
    if (!ReadNumber(value, &pos, ',', &revision) || revision > INT64_MAX || pos >= value.size())
      return bad("an entry's revision");
    const char state = value[pos++];
    if (state != 'l' && state != 'd') return bad("an entry's state");
    if (!ReadNumber(value, &pos, ':', &body_size) || !ReadBytes(value, &pos, body_size, &e.body))
      return bad("an entry's body");
    e.revision = static_cast<int64_t>(revision);
    e.deleted = state == 'd';
    if (e.id.empty()) return bad("an empty id");
    if (e.deleted && (e.revision != 0 || !e.body.empty()))
      return bad("a tombstone of an earlier write");
    if (!entries.empty() && entries.back().id >= e.id) return bad("entries out of id order");
    entries.push_back(std::move(e));
  }
  return entries;
}

void Carry(std::vector<Entry>& entries, int64_t revision) {
  std::erase_if(entries, [](const Entry& e) { return e.deleted; });
  for (Entry& e : entries)
    if (e.revision == 0) e.revision = revision;
}

}  // namespace berth::store::blocks
