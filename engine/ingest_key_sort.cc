#include "engine/ingest_key_sort.h"

#include <algorithm>
#include <cstring>

namespace snapsink {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "words are read with native loads");

constexpr size_t kWord = 8;

struct Item {
  uint64_t word;  // the key's bytes [depth, depth + 8), big-endian, zeros past its end
  uint32_t len;   // how many of those bytes the key has, plus depth
  uint32_t at;    // its index in the input
};

uint64_t WordAt(std::string_view k, size_t depth) {
  uint64_t w = 0;
  if (k.size() >= depth + kWord) {
    std::memcpy(&w, k.data() + depth, kWord);
    return __builtin_bswap64(w);  // x86: bytes in memory order become the most significant first
  }
  unsigned char b[kWord] = {};
  if (k.size() > depth) std::memcpy(b, k.data() + depth, k.size() - depth);
  for (unsigned char c : b) w = (w << 8) | c;
  return w;
}

// Sorts [b, e), whose keys all share their first `depth` bytes. Within a
// run of the same word, a key that ends inside the word is a prefix of
// every longer key of the run (the bytes it has are theirs, the zeros past
// its end are theirs), so it sorts first, by its length; only keys that
// have all 8 bytes go on to the next word.
void SortFrom(const std::vector<std::pair<std::string_view, uint32_t>>& keys, Item* b, Item* e, size_t depth) {
  while (e - b > 1) {
    bool same = true;
    for (Item* i = b; i != e; ++i) {
      const std::string_view k = keys[i->at].first;
      i->word = WordAt(k, depth);
      i->len = static_cast<uint32_t>(std::min(k.size(), depth + kWord));
      same = same && i->word == b->word && i->len == b->len;
    }
    const uint32_t full = static_cast<uint32_t>(depth + kWord);
    if (same) {
      if (b->len != full) return;  // equal keys
      depth += kWord;  // a prefix they all share: no sort at this depth
      continue;
    }
    std::sort(b, e, [](const Item& x, const Item& y) { return x.word != y.word ? x.word < y.word : x.len < y.len; });
    for (Item* r = b; r != e;) {
      Item* q = r + 1;
      while (q != e && q->word == r->word && q->len == r->len) ++q;
      if (q - r > 1 && r->len == full) SortFrom(keys, r, q, depth + kWord);
      r = q;
    }
    return;
  }
}

}  // namespace

void SortByKey(std::vector<std::pair<std::string_view, uint32_t>>* keys) {
  std::vector<Item> items(keys->size());
  for (size_t i = 0; i < items.size(); ++i) items[i].at = static_cast<uint32_t>(i);
  SortFrom(*keys, items.data(), items.data() + items.size(), 0);
  std::vector<std::pair<std::string_view, uint32_t>> sorted;
  sorted.reserve(keys->size());
  for (const Item& i : items) sorted.push_back((*keys)[i.at]);
  keys->swap(sorted);
}

}  // namespace snapsink
