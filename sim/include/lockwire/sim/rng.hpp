// The simulator's only source of randomness: xoshiro256** seeded through splitmix64.
//
// Why our own: std::*_distribution output differs across standard libraries, and a seed must
// replay the same run everywhere. Subsystems draw from forks (sub-seeds) so that adding a draw in
// one subsystem does not shift every other subsystem's choices.
#pragma once

#include <cstdint>
#include <string_view>

namespace lockwire::sim {

[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

[[nodiscard]] constexpr std::uint64_t fnv1a64(std::string_view s,
                                              std::uint64_t h = 0xcbf29ce484222325ull) noexcept {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) noexcept : seed_(seed) {
    std::uint64_t st = seed;
    for (auto& w : s_) w = splitmix64(st);
  }

  [[nodiscard]] std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n); n == 0 gives 0. Rejection sampling keeps it unbiased and portable.
  [[nodiscard]] std::uint64_t below(std::uint64_t n) noexcept {
    if (n <= 1) return 0;
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return x % n;
  }

  // Uniform in [lo, hi] (inclusive); lo > hi gives lo.
  [[nodiscard]] std::int64_t between(std::int64_t lo, std::int64_t hi) noexcept {
    if (hi <= lo) return lo;
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }

  // True with probability per_million / 1e6.
  [[nodiscard]] bool chance(std::uint32_t per_million) noexcept {
    return below(1000000) < per_million;
  }

  // An independent generator for a named subsystem, derived from this one's seed only.
  [[nodiscard]] Rng fork(std::string_view name) const noexcept {
    std::uint64_t st = seed_ ^ fnv1a64(name);
    return Rng(splitmix64(st));
  }

  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept {
    return (x << k) | (x >> (64 - k));
  }
  std::uint64_t seed_;
  std::uint64_t s_[4]{};
};

}  // namespace lockwire::sim
