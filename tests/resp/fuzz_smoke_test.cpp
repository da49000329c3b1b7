// Short fuzz run for the normal (g++) suite: replays the libFuzzer seed corpus, then a few
// thousand deterministic mutations of it, through the same entry point and oracles as the
// libFuzzer target (fuzz/resp_fuzz_entry.hpp). An oracle failure aborts the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "generator.hpp"
#include "resp_fuzz_entry.hpp"

namespace lockwire::resp {
namespace {

std::vector<std::string> load_corpus() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(FUZZ_CORPUS_DIR)) {
    std::ifstream f(e.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return out;
}

void run(const std::string& s) {
  fuzz::run_one(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

TEST(FuzzSmoke, CorpusAndMutations) {
  const std::vector<std::string> corpus = load_corpus();
  ASSERT_GE(corpus.size(), 20u);
  for (const auto& s : corpus) run(s);

  test::Rng rng(20261129);
  constexpr int kMutations = 5000;
  for (int i = 0; i < kMutations; ++i) {
    std::string s = corpus[rng.below(corpus.size())];
    const auto edits = 1 + rng.below(4);
    for (std::uint64_t e = 0; e < edits && !s.empty(); ++e) {
      const std::size_t at = rng.below(s.size());
      switch (rng.below(6)) {
        case 0:
          s[at] = static_cast<char>(rng.below(256));
          break;
        case 1:
          s.insert(at, 1, "\r\n:$*%|~>.;?-_#,(!=+0123456789"[rng.below(30)]);
          break;
        case 2:
          s.erase(at, 1 + rng.below(4));
          break;
        case 3:
          s.insert(at, s.substr(at, rng.below(16)));
          break;  // duplicate a range
        case 4:
          s += corpus[rng.below(corpus.size())].substr(1);
          break;  // splice
        default:
          s[0] = static_cast<char>(rng.below(256));
          break;  // split size / limits
      }
    }
    run(s);
  }
  // Random valid streams too, under both limit profiles.
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    test::Generator g(seed);
    std::string s(1, static_cast<char>(g.rng().below(256)));
    std::string expected;
    for (int f = 0; f < 3; ++f) g.frame(s, expected);
    run(s);
  }
  SUCCEED();
}

}  // namespace
}  // namespace lockwire::resp
